"""The reader for PowerPoint decks (.pptx, .pptm): each slide becomes one section and one place ("slide 4") of the
canonical text, with its speaker notes.

The archive is checked first (`archive.open_zip`: a zip, whole, without a password, no zip bomb), then its parts
are read with lxml (no entities, no network), each inflated once (`_Package.member`: zipfile's checks, a third of
the time zipfile's reading took): the main part (`ppt/presentation.xml`, found through the package's
relationships) gives the slides in the deck's order (`p:sldIdLst`), and each slide's relationships its layout,
notes slide and charts. python-pptx is no longer used for reading (it loads every part and looks each shape's
properties up anew: four times slower); only the tests and the example below make decks with it. Each slide
that holds any text is, inside `Canonical.place("slide N")`:

- a heading: the slide's title placeholder (python-pptx's `shapes.title`: the placeholder with idx 0), else
  "Slide N" (so a section's path is its slide's title);
- its shapes' text in reading order, top to bottom and then left to right (`reading_order`: shapes whose tops
  lie within a line's height of each other are one row, read left to right), one block per paragraph (`a:p`:
  its runs' and fields' text, `a:br` a line break) of a text box or placeholder; a group's shapes are read in
  their own reading order where the group stands; a table is a pipe table (its first row the header); a chart
  gives its title, from its chart part ("Chart: Sales by quarter");
- its speaker notes (the notes slide's body placeholder), as a block starting "Notes: ".

A shape's position is its own (`a:xfrm/a:off`); a slide's placeholder without one takes its layout's placeholder
of the same idx, and that one, without one either, its master's placeholder of the same kind (as PowerPoint and
python-pptx place it), looked up once per layout. A slide with a title and nothing else keeps its title as a
block too, so a divider slide ("Part 2: Results") can still be found. Hidden slides are read like the others.
The deck's title is its core properties' title (unless it is PowerPoint's "PowerPoint Presentation"), else the
first slide's title, else the file's name.

A macro-enabled deck (.pptm), a slide show (.ppsx) or a template (.potx) named .pptx is read the same way: its
main part's content type is not looked at, and its macros (vbaProject.bin) are never run or read.

What it does not do: run or read macros, read SmartArt, embedded objects, pictures' text (no OCR) or a chart's
data, keep formatting, or read the footer, date and slide-number placeholders (the same on every slide).

>>> import io
>>> from pptx import Presentation
>>> prs = Presentation(); slide = prs.slides.add_slide(prs.slide_layouts[1])
>>> slide.shapes.title.text = "Rent"; slide.placeholders[1].text = "Due on the 1st.\\nPaid by transfer."
>>> slide.notes_slide.notes_text_frame.text = "Mention the deposit."
>>> buf = io.BytesIO(); prs.save(buf)
>>> doc = read(buf.getvalue(), "flat.pptx", "pptx", Limits())
>>> print(doc.text)
Rent
<BLANKLINE>
Due on the 1st.
<BLANKLINE>
Paid by transfer.
<BLANKLINE>
Notes: Mention the deposit.
>>> doc.title, [s.path for s in doc.sections], doc.place_of(0, len(doc.text))
('Rent', [('Rent',)], 'slide 1')
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from pathlib import Path

from lxml import etree

from rag.reading.archive import open_zip, read_member
from rag.reading.canonical import Canonical, clean_block
from rag.reading.document import TITLE_MAX, ExtractionError, Extracted, Limits, clean_heading

# pptx-3: headings keep their words' underscores (document.clean_heading).
VERSIONS = {"pptx": "pptx-3"}

_WHAT = "a PowerPoint presentation (.pptx)"
_EMU_PER_PT = 12_700
# Shapes whose tops lie this close are one row, read left to right: a line of 12 pt type. Two boxes a person
# lines up side by side are rarely a few points apart; two stacked ones are a line or more apart.
_SAME_ROW = 12 * _EMU_PER_PT
_MAX_DEPTH = 32  # groups inside groups: deeper than any deck a person makes, and no recursion a file controls
_SLIDE_PART = re.compile(r"ppt/slides/slide\d+\.xml")
_DEFAULT_TITLES = {"powerpoint presentation", "presentation"}  # what PowerPoint and python-pptx write by default
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_SHAPES = {_P + t for t in ("sp", "grpSp", "graphicFrame", "cxnSp", "pic", "contentPart")}
_SP, _GRPSP, _FRAME, _TXBODY, _CSLD, _SPTREE, _NVPR, _PH = (
    _P + t for t in ("sp", "grpSp", "graphicFrame", "txBody", "cSld", "spTree", "nvPr", "ph"))
_AP, _AR, _AFLD, _AT, _ABR, _AXFRM, _AOFF = (_A + t for t in ("p", "r", "fld", "t", "br", "xfrm", "off"))
_SPPR, _GRPSPPR, _PXFRM, _CNVPR = (_P + t for t in ("spPr", "grpSpPr", "xfrm", "cNvPr"))
_FURNITURE = {"dt", "ftr", "sldNum"}  # date, footer, slide number: the same on every slide
_TABLE_URI = "http://schemas.openxmlformats.org/drawingml/2006/table"
_CHART_URI = "http://schemas.openxmlformats.org/drawingml/2006/chart"
# The master placeholder a layout placeholder takes its position from, by type (python-pptx's mapping).
_BASE_TYPE = {"body": "body", "chart": "body", "clipArt": "body", "ctrTitle": "title", "dgm": "body", "dt": "dt",
              "ftr": "ftr", "media": "body", "obj": "body", "pic": "body", "sldNum": "sldNum", "subTitle": "body",
              "tbl": "body", "title": "title"}


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    archive = open_zip(data, _WHAT)
    names = set(archive.namelist())
    _check_is_deck(archive, names)
    slide_parts = sum(1 for n in names if _SLIDE_PART.fullmatch(n))
    if slide_parts > limits.max_pages:  # before any slide is parsed
        raise _too_many(slide_parts, limits.max_pages)

    package = _Package(archive, names)
    try:
        main = package.target("", "officeDocument") or "ppt/presentation.xml"
        rels = package.rels(main)
        id_list = package.xml(main).find(_P + "sldIdLst")
        slide_names = [rels[s.get(_R_ID)][1] for s in (id_list if id_list is not None else ())]
        if len(slide_names) > limits.max_pages:
            raise _too_many(len(slide_names), limits.max_pages)
        slides = [(s, package.xml(s)) for s in slide_names]
    except ExtractionError:
        raise
    except Exception as exc:  # KeyError, XMLSyntaxError, a missing part: the deck's skeleton is broken
        raise ExtractionError(f"it is damaged: the presentation inside cannot be read ({_short(exc)})") from None
    if not slides:
        raise ExtractionError("the deck holds no text: it has no slides")

    canon = Canonical(name, max_chars=limits.max_chars)
    warnings: list[str] = []
    first_title = ""
    for n, (part, root) in enumerate(slides, 1):
        try:
            title, blocks = _slide_content(package, part, root, n, warnings)
        except ExtractionError:
            raise
        except Exception as exc:  # a slide that cannot be walked: the others are still worth reading
            warnings.append(f"slide {n} could not be read ({_short(exc)}) and was left out")
            continue
        if n == 1:
            first_title = title
        if not title and not blocks:
            continue  # an empty slide (or pictures only): no section
        if not blocks or len(title) > TITLE_MAX:
            blocks.insert(0, title)  # a title-only slide, or a title the heading cuts short: keep it in the text
        with canon.place(f"slide {n}"):
            canon.heading(title or f"Slide {n}", 1)
            for block in blocks:
                if isinstance(block, str):
                    canon.paragraph(block)
                else:
                    canon.table(block)
    if not canon.chars:
        raise ExtractionError(f"the deck holds no text: none of its {len(slides)} slide(s) has text, a table or "
                              "notes (pictures only?)")
    title = _core_title(package) or clean_heading(first_title) or Path(name).stem or Path(name).name
    return canon.build(kind="pptx", title=title, version=VERSIONS["pptx"], pages=len(slides), warnings=warnings)


# --- the archive -------------------------------------------------------------------------------------------------

def _check_is_deck(archive: zipfile.ZipFile, names: set[str]) -> None:
    """Refuse, with what it is, an archive that is another Office or OpenDocument file named .pptx."""
    if any(n.startswith("ppt/") for n in names):
        return
    others = [("word/", "a Word document", ".docx"), ("xl/", "an Excel workbook", ".xlsx")]
    for prefix, what, suffix in others:
        if any(n.startswith(prefix) for n in names):
            raise ExtractionError(f"its content is {what}, though its name says {_WHAT}: rename it to {suffix}")
    if "mimetype" in names:
        kind = read_member(archive, "mimetype")[:100].decode("ascii", "replace")
        if "opendocument" in kind:
            raise ExtractionError(f"its content is an OpenDocument file ({kind.rsplit('.', 1)[-1]}), though its "
                                  f"name says {_WHAT}")
        if "epub" in kind:
            raise ExtractionError(f"its content is an e-book, though its name says {_WHAT}: rename it to .epub")
    raise ExtractionError(f"it is a zip archive but not {_WHAT}: it holds no slides")


class _Package:
    """The deck's parts, each parsed once: XML by part name, relationships by part name (rId -> (type, target))."""

    def __init__(self, archive: zipfile.ZipFile, names: set[str]):
        self.archive, self.names = archive, names
        self._xml: dict[str, object] = {}
        self._rels: dict[str, dict[str, tuple[str, str]]] = {}
        self.placeholders: dict[str, dict] = {}  # layout part -> {idx: (top, left) or None}, made once
        self._targets: dict[tuple[str, str], str | None] = {}
        self._paths: dict[tuple[str, str], str] = {}  # (folder, relationship target) -> part name

    def xml(self, part: str):
        if part not in self._xml:
            self._xml[part] = etree.fromstring(self.member(part), _PARSER)
        return self._xml[part]

    def member(self, part: str) -> bytes:
        """A part's bytes, read by zipfile (`read_member`: a missing, damaged or oversized part gives its
        reason). Inflating the parts by hand from the file's bytes saved a fifth of a deck's time (about 3 ms of
        a 50-slide deck) and was taken out: a zip parser of our own is one more place for a hostile file to
        find a gap, and the deck reads at 1.6-1.9 times the PDF reader's pace without it."""
        return read_member(self.archive, part)

    def rels(self, part: str) -> dict[str, tuple[str, str]]:
        if part not in self._rels:
            folder, base = posixpath.split(part)
            rels_part = posixpath.join(folder, "_rels", base + ".rels")
            out: dict[str, tuple[str, str]] = {}
            if rels_part in self.names:
                for rel in self.xml(rels_part).iter(_REL):
                    target = rel.get("Target") or ""
                    if rel.get("TargetMode") == "External":
                        continue
                    key = (folder, target)  # the same for most parts of a kind: "../slideLayouts/slideLayout2.xml"
                    if key not in self._paths:
                        self._paths[key] = posixpath.normpath(target[1:] if target.startswith("/")
                                                              else posixpath.join(folder, target))
                    out[rel.get("Id")] = (rel.get("Type", "").rsplit("/", 1)[-1], self._paths[key])
            self._rels[part] = out
        return self._rels[part]

    def target(self, part: str, reltype: str) -> str | None:
        key = (part, reltype)
        if key not in self._targets:
            self._targets[key] = next((t for kind, t in self.rels(part).values() if kind == reltype), None)
        return self._targets[key]


def _too_many(count: int, limit: int) -> ExtractionError:
    return ExtractionError(f"the deck has {count:,} slides; the limit is {limit:,} (max_pages)")


def _short(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


# --- a slide -----------------------------------------------------------------------------------------------------

def _slide_content(package: _Package, part: str, root, n: int, warnings: list[str]) -> tuple[str, list]:
    """(the slide's title, "" when it has none; its blocks in reading order: paragraphs' text, or a table's
    rows), its notes last."""
    tree = _find(root, _CSLD, _SPTREE)
    shapes = [(s, _ph(s)) for s in _shape_elms(tree)]  # each shape with its placeholder element, or None
    title_shape = next((s for s, ph in shapes if _ph_idx(ph) == 0), None)  # python-pptx's `shapes.title`
    title, skip = "", set()
    if title_shape is not None:
        body = _find(title_shape, _TXBODY) if title_shape.tag == _SP else None
        title = _frame_text(body) if body is not None else ""
        skip = {_shape_id(title_shape)}
    blocks: list = []
    _shapes(package, part, shapes, skip, blocks, n, warnings, 0)
    notes_part = package.target(part, "notesSlide")
    if notes_part is not None:
        notes_tree = _find(package.xml(notes_part), _CSLD, _SPTREE)
        body = next((s for s in _shape_elms(notes_tree) if _ph_type(_ph(s)) == "body"), None)
        frame = _find(body, _TXBODY) if body is not None else None
        notes = _clean(_frame_text(frame)) if frame is not None else ""
        if notes:
            blocks.append("Notes: " + notes)
    return " ".join(title.split()), blocks


def _shapes(package: _Package, part: str, shapes: list, skip: set, blocks: list, n: int, warnings: list[str],
            depth: int) -> None:
    """Append the blocks of `shapes` (a slide's or a group's shape elements, each with its placeholder element
    or None) in reading order."""
    placed = [(_where(package, part, s, ph, depth), (s, ph)) for s, ph in shapes]
    for shape, ph in reading_order(placed):
        try:
            if depth == 0 and _shape_id(shape) in skip:
                continue
            if ph is not None and _ph_type(ph) in _FURNITURE:
                continue
            tag = shape.tag
            if tag == _GRPSP:
                if depth < _MAX_DEPTH:
                    _shapes(package, part, [(s, _ph(s)) for s in _shape_elms(shape)], skip, blocks, n, warnings,
                            depth + 1)
            elif tag == _FRAME:
                data = _find(shape, _A + "graphic", _A + "graphicData")
                uri = data.get("uri") if data is not None else None
                if uri == _TABLE_URI:
                    blocks.append([[_frame_text(_find(cell, _A + "txBody")) for cell in row.iter(_A + "tc")]
                                   for row in data.iter(_A + "tr")])
                elif uri == _CHART_URI:
                    title = _chart_title(package, part, _find(data, _C + "chart"))
                    if title:
                        blocks.append("Chart: " + title)
            elif tag == _SP:
                body = _find(shape, _TXBODY)
                if body is not None:
                    blocks.extend(t for t in map(_paragraph, body.iterchildren(_AP)) if t.strip())
        except ExtractionError:
            raise
        except Exception as exc:  # one odd shape: the slide's other text still counts
            warnings.append(f"a shape on slide {n} could not be read ({_short(exc)}) and was left out")


def _chart_title(package: _Package, part: str, chart) -> str:
    """A chart's title text ("" when it has none), from its chart part."""
    target = package.rels(part)[chart.get(_R_ID)][1]
    rich = _find(package.xml(target), _C + "chart", _C + "title", _C + "tx", _C + "rich")
    return " ".join(_frame_text(rich).split()) if rich is not None else ""


def _find(element, *tags: str):
    """`element.find("a/b/c")` for the path of child tags `tags` (the first match in document order), None for
    no element: lxml's `find` parses its path on each call, and `iterchildren(tag)` builds a matcher; a plain walk
    over the few children a part's elements have costs less."""
    if element is None:
        return None
    tag = tags[0]
    if len(tags) == 1:
        for child in element:
            if child.tag == tag:
                return child
        return None
    rest = tags[1:]
    for child in element:
        if child.tag == tag and (found := _find(child, *rest)) is not None:
            return found
    return None


def _shape_elms(tree) -> list:
    return [e for e in tree if e.tag in _SHAPES] if tree is not None else []


def _ph(shape):
    """The shape's p:nvPr/p:ph element (of its p:nv...Pr child, which comes first), or None."""
    if len(shape):
        for properties in shape[0]:
            if properties.tag == _NVPR:
                for ph in properties:
                    if ph.tag == _PH:
                        return ph
    return None


def _ph_idx(ph) -> int | None:
    return None if ph is None else int(ph.get("idx", "0"))


def _ph_type(ph) -> str | None:
    return None if ph is None else ph.get("type", "obj")


def _shape_id(shape) -> int | None:
    c_nv = _find(shape[0], _CNVPR) if len(shape) else None
    return int(c_nv.get("id")) if c_nv is not None and c_nv.get("id", "").isdigit() else None


def _offset(shape) -> tuple[int, int] | None:
    """(top, left) the shape sets itself, or None."""
    tag = shape.tag
    if tag == _FRAME or tag == _P + "contentPart":
        off = _find(shape, _PXFRM, _AOFF)
    else:
        off = _find(shape, _GRPSPPR if tag == _GRPSP else _SPPR, _AXFRM, _AOFF)
    return None if off is None else (int(off.get("y", 0)), int(off.get("x", 0)))


def _where(package: _Package, part: str, shape, ph, depth: int) -> tuple[int, int]:
    """(top, left) of a shape (`ph` its placeholder element, or None). A slide's placeholder (a text or picture
    one) with no position of its own takes its layout placeholder's (the same idx), which, with none of its own,
    takes its master's placeholder of the same kind: looked up once per layout."""
    own = _offset(shape)
    if own is not None:
        return own
    if depth or shape.tag not in (_SP, _P + "pic") or ph is None:
        return (0, 0)  # no position of its own or inherited: the top
    layout = package.target(part, "slideLayout")
    if layout is None:
        return (0, 0)
    if layout not in package.placeholders:
        package.placeholders[layout] = _layout_positions(package, layout)
    return package.placeholders[layout].get(_ph_idx(ph)) or (0, 0)


def _layout_positions(package: _Package, layout: str) -> dict:
    """{idx: (top, left) or None} of a layout's placeholders, the first of each idx, inherited from the master."""
    master_ph: dict[str, tuple[int, int] | None] | None = None
    out: dict = {}
    for shape in _shape_elms(_find(package.xml(layout), _CSLD, _SPTREE)):
        ph = _ph(shape)
        if ph is None or _ph_idx(ph) in out:
            continue
        where = _offset(shape)
        if where is None:
            if master_ph is None:
                master = package.target(layout, "slideMaster")
                master_ph = {}
                tree = _find(package.xml(master), _CSLD, _SPTREE) if master else None
                for m in _shape_elms(tree):
                    if (m_ph := _ph(m)) is not None:
                        master_ph.setdefault(_ph_type(m_ph), _offset(m))
            where = master_ph.get(_BASE_TYPE.get(_ph_type(ph), "body"))
        out[_ph_idx(ph)] = where
    return out


def _paragraph(p) -> str:
    """A paragraph's text: its runs' and fields' text, a line break as a line break."""
    out = []
    for child in p:
        tag = child.tag
        if tag == _AR or tag == _AFLD:
            for t in child:
                if t.tag == _AT:  # its first a:t
                    out.append(t.text or "")
                    break
        elif tag == _ABR:
            out.append("\n")
    return "".join(out)


def _clean(text: str) -> str:
    """`clean_block(text)`, without its work on text that is clean already (a slide's notes mostly are: the
    work was a twentieth of a deck's time, and is done again when the block is appended). What `clean_block`
    changes is an empty line, or in a line a character `isprintable` refuses (control characters, tabs, line
    and paragraph separators, every space but the ASCII one), two spaces, or a space at either end.

    >>> _clean("Mention the deposit."), _clean(" Two  spaces\\n\\nand a\\u00a0gap ")
    ('Mention the deposit.', 'Two spaces\\nand a gap')
    """
    for line in text.split("\n"):
        if not line or not line.isprintable() or "  " in line or line[0] == " " or line[-1] == " ":
            return clean_block(text)
    return text


def _frame_text(body) -> str:
    """The text of a text body (a:txBody, p:txBody or c:rich): its paragraphs, one a line."""
    return "" if body is None else "\n".join(map(_paragraph, body.iterchildren(_AP)))


def reading_order(placed: list[tuple[tuple[int, int], object]]) -> list:
    """The shapes of `placed`, ((top, left), shape) pairs, in reading order: top to bottom, and left to right
    among shapes whose tops lie within `_SAME_ROW` of the first of their row (two boxes side by side, one a
    little higher, are one row).

    >>> inch = 914_400  # EMU, python-pptx's unit
    >>> reading_order([((5 * inch, 0), "bottom"), ((inch, 0), "middle"), ((100_000, 6 * inch), "right"),
    ...                ((150_000, 0), "left, a little lower")])
    ['left, a little lower', 'right', 'middle', 'bottom']
    """
    ordered = sorted(placed, key=lambda p: p[0])
    out: list = []
    row: list[tuple[tuple[int, int], object]] = []
    for item in ordered:
        if row and item[0][0] - row[0][0][0] > _SAME_ROW:
            out += [shape for _, shape in sorted(row, key=lambda p: p[0][1])]
            row = []
        row.append(item)
    out += [shape for _, shape in sorted(row, key=lambda p: p[0][1])]
    return out


def _core_title(package: _Package) -> str:
    try:
        core = package.target("", "core-properties")
        if core is None or core not in package.names:
            return ""  # python-pptx would give its default, "PowerPoint Presentation": no title
        found = package.xml(core).find(_DC_TITLE)
        title = clean_heading(clean_block(found.text or "" if found is not None else ""))
    except Exception:  # damaged core properties: the title comes from the slides
        return ""
    return "" if title.lower() in _DEFAULT_TITLES else title

"""OpenDocument: text documents (.odt), presentations (.odp) and spreadsheets (.ods) become canonical text
through `rag.reading.canonical.Canonical`, in the order the file holds them.

Every file is checked before a library reads it: `archive.open_zip` (a zip, whole, no zip bomb), then the
package itself: its `mimetype` must be the kind its name says (an .odt that is a spreadsheet says so), and a
manifest with `encryption-data` means a password (ODF encrypts its parts, not the zip, so only the manifest
tells).

- odt (read with odfdo): headings (`text:h`, their outline level) are sections; paragraphs, list items and the
  text of frames and text boxes are blocks; tables are pipe tables (first row the header); footnotes and
  endnotes leave their paragraph and are blocks "[1] text" of a "Notes" section at the end. The title is the
  document's own (meta.xml `dc:title`), else its first heading, else the file's name.
- odp (read with odfdo): a section per slide, named by its title placeholder ("Slide N" without one), and a
  place "slide N" holding its text boxes, tables and speaker notes ("Notes: ...").
- ods (streamed with lxml: odfdo would hold the whole sheet in memory): a section per sheet; its first
  non-empty row is the header and every later row a `Canonical.row` with the cells as the sheet displays them
  (a cell's `text:p`, which carries its format: "12.5%", "€850.00"; a formula's cached result). Repeated rows
  and columns (`number-rows-repeated`) count towards row numbers and column letters but an empty run is never
  expanded, so a sheet's million trailing empty rows cost nothing; each row is cleared once read.

What it does not do: recalculate formulas, read comments, tracked deletions, tables of contents (they repeat
the headings), images or embedded objects (charts), or decrypt anything.

>>> import odfdo, io
>>> d = odfdo.Document("text"); d.body.clear(); d.body.append(odfdo.Header(1, "Rent"))
>>> d.body.append(odfdo.Paragraph("Due on the 1st.")); out = io.BytesIO(); d.save(out)
>>> doc = read(out.getvalue(), "lease.odt", "odt", Limits())
>>> doc.title, doc.text, [(s.path, doc.text[s.start:s.end]) for s in doc.sections]
('Rent', 'Rent\\n\\nDue on the 1st.', [(('Rent',), 'Due on the 1st.')])
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import odfdo
from lxml import etree

from rag.reading.archive import open_zip, read_member
from rag.reading.canonical import Canonical
from rag.reading.document import ExtractionError, Extracted, Limits

# ods-2: a sheet's passages keep their rows (rag.indexing.chunk.Chunk.rows), so a citation names the rows it quotes;
# odt-2, odp-2, ods-3: a heading keeps the underscores inside its words (rag.reading.document.clean_heading).
VERSIONS = {"odt": "odt-2", "odp": "odp-2", "ods": "ods-3"}

_ODF = "application/vnd.oasis.opendocument."
_BODY = {"odt": "text", "odp": "presentation"}  # office:body's child holding the document
# Each OpenDocument mimetype's family: what it is ("an OpenDocument ..."), and its suffix.
_TYPES = {"text": ("text document", "odt"), "text-master": ("master document", "odm"), "spreadsheet": ("spreadsheet",
          "ods"), "presentation": ("presentation", "odp"), "graphics": ("drawing", "odg"), "chart": ("chart", "odc"),
          "formula": ("formula", "odf"), "base": ("database", "odb"), "image": ("image", "odi")}
_WHAT = {kind: f"an OpenDocument {words} (.{kind})" for words, kind in _TYPES.values() if kind in VERSIONS}
_PASSWORD = "it is protected by a password: open it, save a copy without the password, and add that copy"

_NS = {"table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
       "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
       "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
       "manifest": "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0", "dc": "http://purl.org/dc/elements/1.1/"}
_T_TABLE, _T_ROW, _T_CELL, _T_COVERED, _ROWS_REPEATED, _COLS_REPEATED = (f"{{{_NS['table']}}}{name}" for name in (
    "table", "table-row", "table-cell", "covered-table-cell", "number-rows-repeated", "number-columns-repeated"))
_T_P, _T_H = f"{{{_NS['text']}}}p", f"{{{_NS['text']}}}h"

_MAX_COLS = 16384  # a sheet's most columns (LibreOffice's): a cell repeated a billion times costs nothing
_MAX_SPACES = 64  # a `text:s` run of spaces is one space in the text anyway

# Elements whose text is not the document's: generated indexes repeat the headings with page numbers,
# declarations and tracked deletions are no text read, comments are the reviewers'.
_SKIP = {"text:table-of-content", "text:alphabetical-index", "text:illustration-index", "text:table-index",
         "text:object-index", "text:user-index", "text:sequence-decls", "text:variable-decls",
         "text:user-field-decls", "text:dde-connection-decls", "text:tracked-changes", "office:forms",
         "office:annotation", "office:annotation-end", "table:table-column", "table:table-columns",
         "table:table-column-group", "table:table-header-columns", "text:note-citation", "office:event-listeners",
         "presentation:notes", "draw:page-thumbnail", "svg:title", "svg:desc", "#other"}
# Shapes that may hold text: a frame's text box or table, a custom shape's paragraphs, a group's shapes.
_SHAPES = {"draw:frame", "draw:custom-shape", "draw:rect", "draw:ellipse", "draw:circle", "draw:polygon",
           "draw:polyline", "draw:path", "draw:line", "draw:connector", "draw:caption", "draw:measure",
           "draw:regular-polygon", "draw:g", "draw:a", "draw:text-box"}
# Slide placeholders the master page fills in again on every slide.
_FURNITURE = {"footer", "header", "date-time", "page-number"}


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """The canonical text of an OpenDocument file of `kind` ("odt", "odp" or "ods")."""
    if kind not in VERSIONS:
        raise ValueError(f"not an OpenDocument kind: {kind!r}")
    archive = open_zip(data, _WHAT[kind])
    _check_package(archive, kind)
    meta_title = _meta_title(archive)
    canon = Canonical(name, max_chars=limits.max_chars)
    try:
        if kind == "ods":
            _read_ods(archive, canon)
            title = meta_title or _stem(name)
        else:
            # odfdo's Document would load every part, pictures included, and judge the zip again by its own
            # rules: parse the one part read here and walk it with odfdo's elements.
            root = _parse(read_member(archive, "content.xml"))
            found = root.find(f"{{{_NS['office']}}}body/{{{_NS['office']}}}{_BODY[kind]}")
            if found is None:
                raise ExtractionError(f"it is damaged: its content has no {_BODY[kind]}")
            body = odfdo.Element.from_tag(found)
            walker = _Walker(canon)
            if kind == "odt":
                walker.blocks(body)
                title = meta_title or canon.first_heading or _stem(name)
                walker.notes_section()
            else:
                first_title = _read_odp(body, walker, limits.max_pages)
                title = meta_title or first_title or _stem(name)
    except RecursionError:
        raise ExtractionError("its content is nested too deeply to read (a damaged or hostile file)") from None
    except (etree.Error, zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError, ValueError, TypeError,
            AttributeError, IndexError) as exc:
        # odfdo and lxml raise all of these on a damaged part; the person needs to know the file is damaged.
        raise ExtractionError(f"it is damaged: its content cannot be read ({type(exc).__name__}: {exc})") from None
    return canon.build(kind=kind, title=title, version=VERSIONS[kind])


# --- the package -----------------------------------------------------------------------------------------------


def _check_package(archive: zipfile.ZipFile, kind: str) -> None:
    """Refuses a zip that is not an OpenDocument file of `kind`, naming what it is, or one with a password."""
    names = set(archive.namelist())
    what = _WHAT[kind]
    if "mimetype" not in names:
        other = _other_zip(names)
        if other:
            raise ExtractionError(f"its content is {other[0]}, though its name says {what}: rename it to {other[1]}")
        raise ExtractionError(f"it is not {what}: it is a zip archive without the parts an OpenDocument file has")
    mimetype = read_member(archive, "mimetype")[:200].decode("ascii", "replace").strip()
    if mimetype == "application/epub+zip":
        raise ExtractionError(f"its content is an e-book (.epub), though its name says {what}: rename it to .epub")
    # A template (.ott, .ots, .otp) is read as the document it makes.
    family = mimetype[len(_ODF):].removesuffix("-template") if mimetype.startswith(_ODF) else ""
    if family not in _TYPES:
        raise ExtractionError(f"it is not {what}: its content is of another kind ({mimetype or 'no type'})")
    words, suffix = _TYPES[family]
    if ("odt" if suffix == "odm" else suffix) != kind:
        rename = f": rename it to .{suffix}" if suffix in VERSIONS else ""
        raise ExtractionError(f"its content is an OpenDocument {words}, though its name says {what}{rename}")
    if "META-INF/manifest.xml" in names and _encrypted(read_member(archive, "META-INF/manifest.xml")):
        raise ExtractionError(_PASSWORD)
    if "content.xml" not in names:
        raise ExtractionError("it is damaged: its part 'content.xml', which holds the text, is missing")


def _other_zip(names: set[str]) -> tuple[str, str] | None:
    """(what, suffix) of an Office Open XML file, whose zip has no `mimetype`."""
    ooxml = (("word/", "a Word document (.docx)", ".docx"), ("xl/", "an Excel workbook (.xlsx)", ".xlsx"),
             ("ppt/", "a PowerPoint presentation (.pptx)", ".pptx"))
    return next(((what, suffix) for prefix, what, suffix in ooxml if "[Content_Types].xml" in names
                 and any(n.startswith(prefix) for n in names)), None)


def _parse(data: bytes) -> etree._Element:
    # A small part parsed whole: no entities, no network, lxml's limits against bombs.
    return etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))


def _encrypted(manifest: bytes) -> bool:
    try:
        root = _parse(manifest)
    except etree.Error:  # a damaged manifest: its bytes still tell
        return b"encryption-data" in manifest
    return next(root.iter(f"{{{_NS['manifest']}}}encryption-data"), None) is not None


def _meta_title(archive: zipfile.ZipFile) -> str:
    """The title its author set (File > Properties), "" when none: a damaged meta.xml refuses nothing."""
    try:
        root = _parse(archive.read("meta.xml"))
    except (KeyError, etree.Error, zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError):
        return ""
    found = next(root.iter(f"{{{_NS['dc']}}}title"), None)
    return " ".join("".join(found.itertext()).split()) if found is not None else ""


def _stem(name: str) -> str:  # as title_from_first_line names a file
    return Path(name).stem.replace("_", " ").replace("-", " ").strip() or Path(name).name


def _int(value, default: int) -> int:
    if value is None:  # the usual case: no attribute
        return default
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


# --- text documents and slides (odfdo's elements) ---------------------------------------------------------


def _tag(el) -> str:
    """odfdo's tag ("text:p"); "#foreign" for a namespace odfdo does not know (its text is read), "#other" for
    a comment or processing instruction (skipped, its tail kept)."""
    try:
        return el.tag
    except ValueError:
        return "#foreign"
    except TypeError:
        return "#other"


class _Walker:
    """Walks odfdo elements in document order, telling `canon` the blocks it meets; notes wait in `notes`."""

    def __init__(self, canon: Canonical):
        self.canon = canon
        self.notes: list[str] = []

    def blocks(self, el, box: bool = False) -> None:
        for child in el.children:
            self.block(child, box)

    def block(self, el, box: bool = False) -> None:
        """One block-level element; inside a text box (`box`) a heading is a paragraph, not a section."""
        tag = _tag(el)
        if tag in _SKIP:
            return
        if tag in ("text:p", "text:h"):
            text, shapes = self.inline(el)
            if tag == "text:h" and not box:
                self.canon.heading(text, min(10, max(1, _int(el.get_attribute("text:outline-level"), 1))))
            else:
                self.canon.paragraph(text)
            for shape in shapes:  # frames anchored in the paragraph: their text follows it
                self.shape(shape)
        elif tag == "text:list":
            self.list(el, box)
        elif tag == "table:table":
            self.canon.table(self.table_rows(el))
        elif tag in _SHAPES:
            self.shape(el)
        else:  # sections, list headers, unknown containers: their blocks, in order
            self.blocks(el, box)

    def list(self, el, box: bool) -> None:
        """Each item a block: its paragraphs together, then its sub-list's items."""
        for item in el.children:
            if _tag(item) not in ("text:list-item", "text:list-header"):
                continue
            lines, shapes = [], []
            for child in item.children:
                tag = _tag(child)
                if tag == "text:p" or (tag == "text:h" and box):
                    text, found = self.inline(child)
                    lines.append(text)
                    shapes += found
                    continue
                self._item(lines, shapes)
                lines, shapes = [], []
                self.block(child, box)
            self._item(lines, shapes)

    def _item(self, lines: list[str], shapes: list) -> None:
        self.canon.paragraph("\n".join(lines))
        for shape in shapes:
            self.shape(shape)

    def shape(self, el) -> None:
        """A frame's or shape's text: its text box, its table, a group's shapes (images and objects have none)."""
        for child in el.children:
            tag = _tag(child)
            if tag == "draw:text-box":
                self.blocks(child, box=True)
            elif tag in ("text:p", "text:h", "text:list", "table:table"):
                self.block(child, box=True)
            elif tag in _SHAPES:
                self.shape(child)

    def inline(self, el) -> tuple[str, list]:
        """A paragraph's text, and the frames anchored in it (read after it). Notes go to `notes`."""
        parts = [el.text]
        shapes: list = []
        for child in el.children:
            tag = _tag(child)
            if tag == "text:s":
                parts.append(" " * min(_MAX_SPACES, max(1, _int(child.get_attribute("text:c"), 1))))
            elif tag == "text:tab":
                parts.append("\t")
            elif tag == "text:line-break":
                parts.append("\n")
            elif tag == "text:note":
                self.note(child)
            elif tag in _SHAPES:
                shapes.append(child)
            elif tag == "text:ruby":  # the base text; its annotation (reading aid) is not the sentence
                base = next((c for c in child.children if _tag(c) == "text:ruby-base"), None)
                if base is not None:
                    parts.append(self.inline(base)[0])
            elif tag not in _SKIP:
                text, found = self.inline(child)
                parts.append(text)
                shapes += found
            parts.append(child.tail or "")
        return "".join(parts), shapes

    def flat(self, el) -> list[str]:
        """Every paragraph's text inside `el` (a table cell, a note's body), in order, frames included."""
        out: list[str] = []
        for child in el.children:
            tag = _tag(child)
            if tag in _SKIP:
                continue
            if tag in ("text:p", "text:h"):
                text, shapes = self.inline(child)
                out.append(text)
                for shape in shapes:
                    out += self.flat(shape)
            else:
                out += self.flat(child)
        return [t for t in out if t.strip()]

    def peek(self, el) -> list[str]:
        """`flat` of what is read again later: a note met now is not counted twice."""
        keep = list(self.notes)
        try:
            return self.flat(el)
        finally:
            self.notes = keep

    def note(self, el) -> None:
        citation, body = "", []
        for child in el.children:
            tag = _tag(child)
            if tag == "text:note-citation":
                citation = " ".join(self.inline(child)[0].split())
            elif tag == "text:note-body":
                body = self.flat(child)
        if body:
            self.notes.append((f"[{citation}] " if citation else "") + "\n".join(body))

    def notes_section(self) -> None:
        """The footnotes and endnotes met so far, as blocks of a "Notes" section."""
        if self.notes:
            self.canon.heading("Notes", 1)
            for note in self.notes:
                self.canon.paragraph(note)
            self.notes = []

    def table_rows(self, el) -> list[list[str]]:
        """A table's rows of cell texts; a repeated row or cell is repeated (up to what the text may hold)."""
        rows: list[list[str]] = []
        size = 0
        for row in _iter_rows(el):
            cells = _spread((" ".join(self.flat(cell)), _int(cell.get_attribute("table:number-columns-repeated"), 1))
                            for cell in row.children
                            if _tag(cell) in ("table:table-cell", "table:covered-table-cell"))
            repeat = max(1, _int(row.get_attribute("table:number-rows-repeated"), 1)) if cells else 1
            for _ in range(repeat):
                rows.append(cells)
                size += sum(len(c) + 3 for c in cells)
                if size > self.canon.max_chars:  # more than the text may hold: Canonical stops with its reason
                    return rows
        return rows


def _iter_rows(el):
    """A table's rows, through header rows and row groups; a nested table is its cell's text."""
    for child in el.children:
        tag = _tag(child)
        if tag == "table:table-row":
            yield child
        elif tag not in ("table:table", "table:table-cell", "table:covered-table-cell") and tag not in _SKIP:
            yield from _iter_rows(child)


def _spread(runs) -> list[str]:
    """A row's cells, one per column, from its (text, repeat) runs, up to its last non-empty cell: an empty run
    only moves the column, however long it claims to be.

    >>> _spread([("Rent", 1), ("", 3), ("850", 2), ("", 1_000_000)])
    ['Rent', '', '', '', '850', '850']
    """
    cells: list[str] = []
    col = 0  # columns passed, empty runs included
    for text, repeat in runs:
        repeat = max(1, repeat)
        if text and col < _MAX_COLS:
            cells += [""] * (col - len(cells))
            cells += [text] * min(repeat, _MAX_COLS - col)
        col += repeat
    return cells


def _read_odp(body, walker: _Walker, max_pages: int) -> str:
    """The slides; returns the first slide title met ("" when none has one)."""
    slides = [el for el in body.children if _tag(el) == "draw:page"]
    if len(slides) > max_pages:
        raise ExtractionError(f"the presentation has {len(slides):,} slides; the limit is {max_pages:,} "
                              "(max_pages): reading stopped there")
    canon, first_title = walker.canon, ""
    for n, slide in enumerate(slides, 1):
        shapes = slide.children
        title_shape, title = next(((s, " ".join(lines)) for s in shapes
                                   if _class(s) == "title" and (lines := walker.peek(s))), (None, ""))
        if not title and not any(walker.peek(s) for s in shapes if _class(s) not in _FURNITURE
                                 and (_tag(s) in _SHAPES or _tag(s) == "presentation:notes")):
            continue  # a slide of pictures only: no "Slide N" line standing for nothing
        first_title = first_title or title
        canon.heading(title or f"Slide {n}", 1)
        with canon.place(f"slide {n}"):
            for shape in shapes:
                if shape is title_shape or _class(shape) in _FURNITURE:
                    continue
                if _tag(shape) in _SHAPES:
                    walker.shape(shape)
            for notes in (s for s in shapes if _tag(s) == "presentation:notes"):
                said = [t for s in notes.children if _tag(s) in _SHAPES for t in walker.flat(s)]
                if said:
                    canon.paragraph("Notes: " + "\n".join(said))
            for note in walker.notes:  # a footnote in a slide's text stays on its slide
                canon.paragraph(note)
            walker.notes = []
    return first_title


def _class(shape) -> str:
    try:
        return str(shape.get_attribute("presentation:class") or "")
    except (ValueError, TypeError, AttributeError):  # a comment, or an element odfdo cannot name
        return ""


# --- spreadsheets (streamed) --------------------------------------------------------------------------------


def _read_ods(archive: zipfile.ZipFile, canon: Canonical) -> None:
    """Each sheet's rows as `Canonical.row`s, streamed: a row is read, told, and cleared."""
    walker = _Walker(canon)  # reads a cell's paragraph when it has markup inside (spans, spaces, links)
    depth, sheet_no = 0, 0
    sheet, header, header_row, rows_told, row_no = "", None, 0, 0, 0
    with archive.open("content.xml") as part:
        for event, el in etree.iterparse(part, events=("start", "end"), tag=(_T_TABLE, _T_ROW),
                                         resolve_entities=False, no_network=True):
            if el.tag == _T_TABLE:
                depth += 1 if event == "start" else -1
                if event == "start" and depth == 1:
                    sheet_no += 1
                    sheet, header, header_row, rows_told, row_no = el.get(f"{{{_NS['table']}}}name") or \
                        f"Sheet{sheet_no}", None, 0, 0, 0
                elif event == "end" and depth == 0:
                    if header is not None and not rows_told:  # a sheet of one row: its text still counts
                        canon.row(sheet, header_row, [], header)
                    _forget(el)
                continue
            if event != "end" or depth != 1:
                continue
            repeat = max(1, _int(el.get(_ROWS_REPEATED), 1))
            cells = _row_cells(el, walker)
            _forget(el)
            if not cells:  # an empty run, however long, only moves the row number
                row_no += repeat
                continue
            for _ in range(repeat):
                row_no += 1
                if header is None:
                    header, header_row = cells, row_no
                    canon.heading(sheet, 1)
                else:
                    canon.row(sheet, row_no, header, cells)
                    rows_told += 1


def _forget(el: etree._Element) -> None:
    # What iterparse has built so far stays in memory unless cleared: the row, and the rows before it.
    el.clear(keep_tail=False)
    parent = el.getparent()
    if parent is not None:
        while el.getprevious() is not None:
            del parent[0]


def _row_cells(row: etree._Element, walker: _Walker) -> list[str]:
    """A row's cells as displayed, one per column, up to its last non-empty one ([] for an empty row)."""
    return _spread((_cell_text(cell, walker), _int(cell.get(_COLS_REPEATED), 1))
                   for cell in row if cell.tag in (_T_CELL, _T_COVERED))


def _cell_text(cell: etree._Element, walker: _Walker) -> str:
    """What the sheet shows in a cell: its paragraphs (formatted by the spreadsheet when it saved them), else
    its value as stored, for a file whose writer left the paragraphs out."""
    lines = []
    for p in cell:
        if p.tag == _T_P or p.tag == _T_H:
            # Most cells are one plain paragraph: read it directly; markup inside goes through odfdo's walk.
            line = (p.text or "") if len(p) == 0 else walker.inline(odfdo.Element.from_tag(p))[0]
            lines.append(line.strip())
    if lines:
        return "\n".join(line for line in lines if line)
    office = f"{{{_NS['office']}}}"
    if cell.get(office + "value-type") == "boolean":
        return "TRUE" if cell.get(office + "boolean-value") == "true" else "FALSE"
    values = (cell.get(office + attr) for attr in ("string-value", "date-value", "time-value", "value"))
    return next((v.strip() for v in values if v), "")

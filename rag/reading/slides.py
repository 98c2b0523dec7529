"""The reader for PowerPoint decks (.pptx, .pptm): each slide becomes one section and one place ("slide 4") of the
canonical text, with its speaker notes.

The archive is checked first (`archive.open_zip`: a zip, whole, without a password, no zip bomb), then
python-pptx reads the checked bytes. Each slide that holds any text is, inside `Canonical.place("slide N")`:

- a heading: the slide's title placeholder, else "Slide N" (so a section's path is its slide's title);
- its shapes' text in reading order, top to bottom and then left to right (`reading_order`: shapes whose tops
  lie within a line's height of each other are one row, read left to right), one block per paragraph of a
  text box or placeholder; a group's shapes are read in their own reading order where the group stands; a
  table is a pipe table (its first row the header); a chart gives its title ("Chart: Sales by quarter");
- its speaker notes, as a block starting "Notes: ".

A slide with a title and nothing else keeps its title as a block too, so a divider slide ("Part 2: Results")
can still be found. Hidden slides are read like the others. The deck's title is its core properties' title
(unless it is PowerPoint's "PowerPoint Presentation"), else the first slide's title, else the file's name.

A macro-enabled deck (.pptm) is data to read: its macros (vbaProject.bin) are never run, and the content type
of its main part is rewritten in memory to a plain deck's (`_plain_content_types`), so python-pptx reads it
whatever types its version accepts; a slide show (.ppsx) or template (.potx) renamed .pptx is read the same way.

What it does not do: run or read macros, read SmartArt, embedded objects, pictures' text (no OCR) or a chart's
data, keep formatting, or read the footer, date and slide-number placeholders (the same on every slide).

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

import io
import re
import zipfile
from pathlib import Path

from rag.reading.archive import open_zip, read_member
from rag.reading.canonical import Canonical, clean_block
from rag.reading.document import TITLE_MAX, ExtractionError, Extracted, Limits, clean_heading

VERSIONS = {"pptx": "pptx-1"}

_WHAT = "a PowerPoint presentation (.pptx)"
_EMU_PER_PT = 12_700
# Shapes whose tops lie this close are one row, read left to right: a line of 12 pt type. Two boxes a person
# lines up side by side are rarely a few points apart; two stacked ones are a line or more apart.
_SAME_ROW = 12 * _EMU_PER_PT
_MAX_DEPTH = 32  # groups inside groups: deeper than any deck a person makes, and no recursion a file controls
# The main part's content types python-pptx may refuse (its version decides), each read as a plain deck's.
_PLAIN_MAIN = b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"
_OTHER_MAINS = (
    b"application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
    b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml",
    b"application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml",
    b"application/vnd.openxmlformats-officedocument.presentationml.template.main+xml",
    b"application/vnd.ms-powerpoint.template.macroEnabled.main+xml",
)
_CONTENT_TYPES = "[Content_Types].xml"
_SLIDE_PART = re.compile(r"ppt/slides/slide\d+\.xml")
_DEFAULT_TITLES = {"powerpoint presentation", "presentation"}  # what PowerPoint and python-pptx write by default


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    archive = open_zip(data, _WHAT)
    names = set(archive.namelist())
    _check_is_deck(archive, names)
    slide_parts = sum(1 for n in names if _SLIDE_PART.fullmatch(n))
    if slide_parts > limits.max_pages:  # before python-pptx parses every slide
        raise _too_many(slide_parts, limits.max_pages)
    data = _plain_content_types(archive, data)

    from pptx import Presentation

    try:
        prs = Presentation(io.BytesIO(data))
        slides = list(prs.slides)
    except Exception as exc:  # KeyError, ValueError, XMLSyntaxError, BadZipFile: python-pptx names no error of its own
        raise ExtractionError(f"it is damaged: the presentation inside cannot be read ({_short(exc)})") from None
    if len(slides) > limits.max_pages:
        raise _too_many(len(slides), limits.max_pages)
    if not slides:
        raise ExtractionError("the deck holds no text: it has no slides")

    canon = Canonical(name, max_chars=limits.max_chars)
    warnings: list[str] = []
    first_title = ""
    for n, slide in enumerate(slides, 1):
        try:
            title, blocks = _slide_content(slide, n, warnings)
        except ExtractionError:
            raise
        except Exception as exc:  # a slide python-pptx cannot walk: the others are still worth reading
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
    title = _core_title(prs) or clean_heading(first_title) or Path(name).stem or Path(name).name
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


def _plain_content_types(archive: zipfile.ZipFile, data: bytes) -> bytes:
    """The archive's bytes, with a macro-enabled deck's, a slide show's or a template's main part typed as a
    plain deck's in [Content_Types].xml (the archive rewritten in memory, its members unchanged), so python-pptx
    reads it as a deck; `data` itself when nothing needs it. Only a type string changes: nothing is run."""
    if _CONTENT_TYPES not in archive.namelist():
        return data
    types = read_member(archive, _CONTENT_TYPES)
    if not any(t in types for t in _OTHER_MAINS):
        return data
    for t in _OTHER_MAINS:
        types = types.replace(b'"' + t + b'"', b'"' + _PLAIN_MAIN + b'"')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:  # stored: python-pptx unpacks it all at once anyway
        for info in archive.infolist():
            if info.is_dir():
                continue
            blob = types if info.filename == _CONTENT_TYPES else read_member(archive, info.filename)
            z.writestr(info.filename, blob)
    return out.getvalue()


def _too_many(count: int, limit: int) -> ExtractionError:
    return ExtractionError(f"the deck has {count:,} slides; the limit is {limit:,} (max_pages)")


def _short(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


# --- a slide -----------------------------------------------------------------------------------------------------

def _slide_content(slide, n: int, warnings: list[str]) -> tuple[str, list]:
    """(the slide's title, "" when it has none; its blocks in reading order: paragraphs' text, or a table's
    rows), its notes last."""
    title_shape = slide.shapes.title
    title = _text(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
    skip = {title_shape.shape_id} if title_shape is not None else set()
    blocks: list = []
    _shapes(slide.shapes, skip, blocks, n, warnings, 0)
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = clean_block(_text(frame.text)) if frame is not None else ""
        if notes:
            blocks.append("Notes: " + notes)
    return " ".join(title.split()), blocks


def _shapes(shapes, skip: set[int], blocks: list, n: int, warnings: list[str], depth: int) -> None:
    """Append the blocks of `shapes` (a slide's or a group's) in reading order."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

    furniture = (PP_PLACEHOLDER.DATE, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.SLIDE_NUMBER)
    placed = [((_position(s.top), _position(s.left)), s) for s in shapes]
    for shape in reading_order(placed):
        try:
            if shape.shape_id in skip and depth == 0:
                continue
            if shape.is_placeholder and shape.placeholder_format.type in furniture:
                continue
            if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
                if depth < _MAX_DEPTH:
                    _shapes(shape.shapes, skip, blocks, n, warnings, depth + 1)
            elif getattr(shape, "has_table", False) and shape.has_table:
                blocks.append([[_text(cell.text) for cell in row.cells] for row in shape.table.rows])
            elif getattr(shape, "has_chart", False) and shape.has_chart:
                chart = shape.chart
                if chart.has_title and chart.chart_title.has_text_frame:
                    title = " ".join(_text(chart.chart_title.text_frame.text).split())
                    if title:
                        blocks.append("Chart: " + title)
            elif shape.has_text_frame:
                blocks.extend(t for t in (_text(p.text) for p in shape.text_frame.paragraphs) if t.strip())
        except ExtractionError:
            raise
        except Exception as exc:  # one odd shape: the slide's other text still counts
            warnings.append(f"a shape on slide {n} could not be read ({_short(exc)}) and was left out")


def _position(value) -> int:
    return int(value) if value is not None else 0  # a shape with no position of its own or inherited: the top


def _text(text: str) -> str:
    # python-pptx gives a line break inside a paragraph as a vertical tab, which the canonical text drops as a
    # control character: it is a line break.
    return text.replace("\v", "\n")


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


def _core_title(prs) -> str:
    try:
        title = clean_heading(clean_block(prs.core_properties.title or ""))
    except Exception:  # damaged core properties: the title comes from the slides
        return ""
    return "" if title.lower() in _DEFAULT_TITLES else title

"""Viewer: where a citation's quote sits in its document, located exactly, never by searching for it.

A citation carries its chunk's character range [start, end) in the document's canonical text (the text
the extractor made, in which every offset of the engine lives). `locate()` turns that range back into
what a person can look at:

- Markdown and text: the canonical text is the file itself (line endings normalised), so the range is the
  quote; the section path comes from the headings.
- Formats with places of their own (`rag.reading.document.Place`): the passage's place ("Budget!A14:F16",
  "slide 4", a message); for a spreadsheet, the cited rows with the rows around them (`rows`, each with its cells
  as the sheet shows them, and the sheet's header), for the app to draw the sheet; for a slide or a message, its
  range in the text (`region`), for the app to show the whole slide with the passage marked in it.
- PDF: the file is read again block by block exactly as the extractor reads it, keeping each character's
  box on its page. The canonical text rebuilt that way must equal the extractor's, character for
  character; then the range maps to the boxes of exactly the quoted characters, merged into one rectangle
  per line, on each page the passage touches (both sides of a page break).

A file whose bytes no longer match the indexed ones (its hash differs) is reported as changed, and nothing
is marked: the offsets belong to the old text. So is a citation made from an earlier version of a file
indexed again since (its link's `version` is not the start of the record's hash): the offsets are the old
text's, and marking them in the new one would mark something else. When the PDF's text cannot be rebuilt
identically, the viewer says so rather than mark something else.

What it does not do: render HTML or images (the app does; `render_page()` gives a page as PNG), or take
a path from outside: the document is named by its path relative to the folder, and only a document the
library holds is opened (`ViewerError` otherwise).

>>> _lines([(1, (10, 100, 20, 112)), (1, (20, 100, 30, 112)), (1, (10, 120, 15, 132))])
[(1, (10, 100, 30, 112)), (1, (10, 120, 15, 132))]
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from rag.reading.document import Extracted, Place
from rag.reading.extract import extract_bytes
from rag.reading.pdf import (CELL_GAP, CONTROL, LINE_END_HYPHEN, compose, compounds, drop_furniture, is_row, join_continued,
                     line_end_hyphen, notes_after_columns, ocr_page, ocr_wanted, page_break, page_chars,
                     place_footnotes, reading_order, text_flags)

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in PDF points


class ViewerError(ValueError):
    """The request names no document of this folder, or a range outside its text."""


@dataclass
class Mark:
    page: int  # 1-based
    rects: list[Box]  # one per line of the quote on that page


@dataclass
class Located:
    path: str  # relative to the folder
    kind: str
    title: str
    start: int
    end: int
    quote: str = ""
    text: str = ""  # the canonical text (empty when it could not be read)
    section: str = ""
    changed: bool = False  # the file differs from the one indexed: nothing is marked
    outdated: bool = False  # the citation quoted an earlier version, indexed again since: nothing is marked
    problem: str = ""  # why the quote cannot be marked exactly ('' when it can)
    marks: list[Mark] = field(default_factory=list)  # PDFs
    pages: int = 0
    place: str = ""  # the passage's place in the format's own terms ("Budget!A14:F16", "slide 4"; "" if none)
    region: tuple[int, int] | None = None  # a slide's or a message's range in `text`, the passage inside it
    rows: list[Place] = field(default_factory=list)  # a sheet's rows around the cited ones (those overlap [start, end))
    places: int = 0  # how many places the document has (slides of a deck, messages of a mailbox)
    ocr: tuple[float, float] | None = None  # the quote's OCR confidence (mean, lowest), when its words came from OCR

    @property
    def first_page(self) -> int | None:
        return self.marks[0].page if self.marks else None

    @property
    def fragment(self) -> str:
        paged = self.kind in ("pdf", "image") and self.first_page
        return f"#page={self.first_page}" if paged else f"#char={self.start},{self.end}"


def locate(folder: Path, record, start: int, end: int, *, max_chars: int = 5_000_000, max_pages: int = 2000,
           version: str | None = None, ocr_cache: Path | None = None) -> Located:
    """Locate [start, end) of a library record's document (`rag.indexing.library.DocRecord`) in its file; `version`:
    the start of the content hash of the version the citation quoted (None: not known, not checked); `ocr_cache`:
    the folder where indexing kept the OCR'd pages' words (a scan is then not recognised again)."""
    folder = Path(folder).resolve()
    target = (folder / record.path).resolve()
    if folder not in target.parents:
        raise ViewerError(f"{record.path} is not inside the folder")
    out = Located(record.path, record.kind, record.title, start, end)
    if version and record.content_hash and not record.content_hash.startswith(version):
        out.outdated = True
        out.problem = ("the file changed since this answer quoted it, and was indexed again: the quoted "
                       "characters' place in the new text is not known")
        return out
    try:
        data = target.read_bytes()
    except OSError as exc:
        out.problem = f"the file cannot be read: {exc.strerror or exc}"
        return out
    if record.content_hash and hashlib.sha256(data).hexdigest() != record.content_hash:
        out.changed = True
        out.problem = "the file changed since it was indexed: the passage's place in it is not known any more"
        return out
    doc = extract_bytes(data, record.path.rsplit("/", 1)[-1], max_chars=max_chars, max_pages=max_pages,
                        ocr_cache=ocr_cache)
    if not (0 <= start < end <= len(doc.text)):
        raise ViewerError(f"characters {start}-{end} are not in {record.path} ({len(doc.text)} characters)")
    out.text, out.quote, out.pages, out.title = doc.text, doc.text[start:end], doc.pages, doc.title or out.title
    inside = [s for s in doc.sections if s.start <= start < max(s.end, s.start + 1)]
    out.section = " > ".join(inside[-1].path) if inside else ""
    if doc.places:
        _place(out, doc, start, end)
    out.ocr = doc.ocr_confidence(start, end)
    if doc.kind == "image":  # a scan or a photo: its recognised words' boxes, in the image's pixels
        out.marks = marks_for([(w.page, w.box) for w in doc.ocr_words if w.start < end and w.end > start])
        out.pages = max(1, len(doc.page_starts))
    if doc.kind == "pdf":
        text, boxes = pdf_layout(data, ocr_cache)
        if text != doc.text:
            out.problem = "the PDF's text could not be matched to its page layout, so the passage is not marked"
            return out
        out.marks = marks_for(boxes[start:end])
    return out


ROWS_AROUND = 8  # rows of a sheet shown above and below the cited ones


def _place(out: Located, doc: Extracted, start: int, end: int) -> None:
    """The passage's place, and what the app draws around it: a sheet's rows, or a slide's or message's range."""
    out.place = doc.place_of(start, end)
    hits = [i for i, p in enumerate(doc.places) if p.start < end and p.end > start]
    if not hits:
        return
    first, last = doc.places[hits[0]], doc.places[hits[-1]]
    if first.row:
        sheet = [i for i in range(max(0, hits[0] - ROWS_AROUND), min(len(doc.places), hits[-1] + ROWS_AROUND + 1))
                 if doc.places[i].row and doc.places[i].label == first.label]
        out.rows = [doc.places[i] for i in sheet]
    else:
        out.region = (first.start, last.end)
        out.places = len({p.label for p in doc.places})


def marks_for(boxes: Sequence[tuple[int, Box] | None]) -> list[Mark]:
    """Per page, one rectangle per line covering the given characters' boxes (None: a joining space)."""
    by_page: dict[int, list[tuple[int, Box]]] = {}
    for b in boxes:
        if b is not None:
            by_page.setdefault(b[0], []).append(b)
    return [Mark(page, [r for _, r in _lines(chars)]) for page, chars in sorted(by_page.items())]


def _lines(chars: list[tuple[int, Box]]) -> list[tuple[int, Box]]:
    """Merge character boxes that sit on the same line (their vertical centres within half a line)."""
    out: list[tuple[int, Box]] = []
    for page, (x0, y0, x1, y1) in chars:
        if out:
            p, (a0, b0, a1, b1) = out[-1]
            if p == page and abs((y0 + y1) / 2 - (b0 + b1) / 2) < max(y1 - y0, b1 - b0) / 2:
                out[-1] = (p, (min(a0, x0), min(b0, y0), max(a1, x1), max(b1, y1)))
                continue
        out.append((page, (x0, y0, x1, y1)))
    return out


def pdf_layout(data: bytes, ocr_cache: Path | None = None) -> tuple[str, list[tuple[int, Box] | None]]:
    """The PDF's canonical text, rebuilt as `rag.reading.extract` builds it, with each character's (page, box);
    None for characters the extractor adds (joining spaces, blank lines between blocks and pages). A page the
    extractor read by OCR is read the same way (`rag.reading.pdf.ocr_page`; from `ocr_cache`, the extractor's,
    without recognising it again), each recognised word's characters with the word's box."""
    import pymupdf

    from rag.reading import ocr

    pages: list[list[tuple]] = []
    tracked: dict[int, list[tuple[int, Box] | None]] = {}  # id of a block's triple -> its boxes
    read: list[tuple[float, list[tuple]]] = []  # per page: its height, its blocks as printed
    ocr_read: dict[int, list[tuple[tuple, list[tuple]]]] = {}  # page index -> its OCR'd blocks and their words
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        for pno, page in enumerate(doc, start=1):
            height = page.rect.height or 1.0
            raw: list[tuple] = []  # ((chars, their boxes), largest font size, bbox, the last line's text)
            found = page.get_text("rawdict", flags=text_flags(), sort=True)["blocks"]
            ordered = reading_order([b for b in found if b.get("type") == 0], page.rect.width)
            if ocr_wanted(page, page_chars(ordered)):
                read.append((height, []))
                if ocr.available() is None:
                    try:
                        ocr_read[pno - 1] = ocr_page(page, pno, ocr_cache)
                    except Exception:  # as the extractor: the page's text is missing
                        pass
                continue
            for b in ordered:
                chars: list[str] = []
                boxes: list[tuple[int, Box] | None] = []
                big = 0.0
                last = ""
                row = is_row(b)
                gap = CELL_GAP if row else "\n"  # as the extractor joins a block's lines
                for i, line in enumerate(b["lines"]):
                    if i:
                        chars.extend(gap)
                        boxes.extend([None] * len(gap))
                    last = "".join(c["c"] for span in line["spans"] for c in span["chars"])
                    for span in line["spans"]:
                        if "".join(c["c"] for c in span["chars"]).strip():
                            big = max(big, span["size"])
                        for c in span["chars"]:
                            chars.append(c["c"])
                            boxes.append((pno, tuple(c["bbox"])))
                if b["lines"]:
                    raw.append(((chars, boxes), big, tuple(b["bbox"]), "".join(chars) if row else last, row))
            # Lines of one sentence in blocks of their own are joined as rag.reading.extract joins them.
            raw = notes_after_columns(raw, lambda content: "".join(content[0]).split("\n", 1)[0])
            read.append((height, join_continued(raw, lambda a, b: (a[0] + ["\n"] + b[0], a[1] + [None] + b[1]))))
    # The document's own hyphenated words, from all its pages, as rag.reading.extract finds them.
    known = compounds(ln for _, joined in read for b in joined for ln in "".join(b[0][0]).split("\n"))
    for index, (height, joined) in enumerate(read):
        blocks = []
        for triple, words in ocr_read.get(index, ()):
            kept: list[tuple[int, Box] | None] = [None] * len(triple[0])
            for a, b, _, p, box in words:
                kept[a:b] = [(p, box)] * (b - a)
            tracked[id(triple)] = kept
            blocks.append(triple)
        for (chars, boxes), big, (x0, y0, _, y1), _, _ in joined:
            text, kept = _normalise_tracked("".join(chars), boxes, known)
            if text:
                triple = (text, big, y1 < 0.12 * height or y0 > 0.88 * height, x0)
                tracked[id(triple)] = kept
                blocks.append(triple)
        pages.append(blocks)
    out_text: list[str] = []
    out_boxes: list[tuple[int, Box] | None] = []
    last = None
    for blocks in place_footnotes(drop_furniture(pages)):
        if out_text:  # as rag.reading.extract: nothing before the first text, however many empty pages come first
            sep = page_break(last, blocks[0] if blocks else None)
            out_text.append(sep)
            out_boxes += [None] * len(sep)
        last = blocks[-1] if blocks else None
        for i, triple in enumerate(blocks):
            if i:
                out_text.append("\n\n")
                out_boxes += [None, None]
            out_text.append(triple[0])
            out_boxes += tracked[id(triple)]
    return "".join(out_text), out_boxes


def _normalise_tracked(text: str, boxes: list, known: frozenset[str] = frozenset()) -> tuple[str, list]:
    """`rag.reading.pdf._normalise_block` applied to text whose characters carry boxes, keeping them aligned."""
    text, boxes = compose(text, boxes)
    text, boxes = _sub(CONTROL, lambda m: "", text, boxes)
    # "exam-\nple" -> "example": the hyphen (unless it belongs to the word) and the line break go.
    text, boxes = _sub(LINE_END_HYPHEN, lambda m: line_end_hyphen(text, m, known), text, boxes, keep_ends=True)
    text, boxes = _sub(re.compile(r"\s*\n\s*"), lambda m: " ", text, boxes)
    left = len(text) - len(text.lstrip())
    right = len(text.rstrip())
    return text[left:right], boxes[left:right]


def _sub(pattern: re.Pattern, repl, text: str, boxes: list, keep_ends: bool = False) -> tuple[str, list]:
    """re.sub with the boxes carried along: replaced characters get None, except (with `keep_ends`) a
    match's first and last characters, which stay themselves (the de-hyphenation keeps its letters), and a
    kept hyphen between them."""
    out, out_boxes, pos = [], [], 0
    for m in pattern.finditer(text):
        out.append(text[pos:m.start()])
        out_boxes += boxes[pos:m.start()]
        new = repl(m)
        out.append(new)
        if keep_ends and len(new) == 2:
            out_boxes += [boxes[m.start()], boxes[m.end() - 1]]
        elif keep_ends and len(new) == 3:  # a hyphen kept ("R-CNN"): it keeps its box too
            out_boxes += [boxes[m.start()], boxes[m.start() + 1], boxes[m.end() - 1]]
        else:
            out_boxes += [None] * len(new)
        pos = m.end()
    out.append(text[pos:])
    out_boxes += boxes[pos:]
    return "".join(out), out_boxes


def render_image(data: bytes, page: int = 1) -> tuple[bytes, float, float]:
    """Page `page` (1-based: a TIFF's pages) of an image file as PNG bytes, upright as its EXIF says (as the OCR
    read it: the words' boxes are in these pixels), with its width and height in pixels."""
    import io

    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as im:
        frames = getattr(im, "n_frames", 1)
        if not 1 <= page <= frames:
            raise ViewerError(f"page {page} is not in this image ({frames} pages)")
        im.seek(page - 1)
        shown = ImageOps.exif_transpose(im).convert("RGB")
        out = io.BytesIO()
        shown.save(out, format="PNG")
        return out.getvalue(), float(shown.width), float(shown.height)


def render_page(data: bytes, page: int, zoom: float = 1.5) -> tuple[bytes, float, float]:
    """Page `page` (1-based) of a PDF as PNG bytes, with its width and height in points."""
    import pymupdf

    with pymupdf.open(stream=data, filetype="pdf") as doc:
        if not 1 <= page <= doc.page_count:
            raise ViewerError(f"page {page} is not in this PDF ({doc.page_count} pages)")
        p = doc[page - 1]
        pix = p.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        return pix.tobytes("png"), p.rect.width, p.rect.height

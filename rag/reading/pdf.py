"""PDF: a PDF's text blocks become `rag.reading.extract`'s canonical text, with its title, sections and pages.

pymupdf reads each page's text blocks in reading order. A block that goes on with the sentence of the one
above it (pymupdf puts each printed line of 1.5- or double-spaced text in a block of its own) is joined to
it with a space (`_continues`), and so is a sentence that goes on over a page break (`page_break`); other
blocks are joined by blank lines. Running headers and footers in the page margins that repeat on most
pages are dropped (`drop_furniture`). Sections come from the PDF's outline, else from heading fonts
(larger than the body's), else one per page; `page_starts` maps an offset back to its page. The viewer
(`rag.reading.viewer`) marks a citation's characters with the same joining rules, so its text and every offset
agree with this one.

A page with no text layer that shows something (a scan: an image, or drawings), or whose text is a few
characters over one image covering the page (a scanner's stamp), is read by OCR (`rag.reading.ocr`): rendered
at 300 dpi, its recognised paragraphs are its blocks, in the page's place in the text, and each recognised
word is in `Extracted.ocr_words` with its confidence and its box in the page's points. A page with a real text
layer is never OCR'd. Without Tesseract such a page stays empty and says why (`warnings`, or the reason of an
image-only PDF).

What it does not do: decide which reader a file gets (`rag.reading.extract.extract_bytes` does), or keep
formatting. A PDF that cannot be read raises `ExtractionError` with a reason a person understands.

>>> _furniture_key("Handbook  —  Page 12")
'handbook — page #'
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from pathlib import Path

from rag.reading.hyphens import LINE_END_HYPHEN, compounds, line_end_hyphen  # noqa: F401 (the viewer's too)
from rag.reading.document import (TITLE_MAX, ExtractionError, Extracted, Limits, OcrWord, Section, clean_heading,
                                  title_from_first_line)

# pdf-4: ligatures read as their letters, combining accents composed, columns one after the other; pdf-5: a
# document's language identified among every language the app reads (rag.text.languages); pdf-6: a column's
# footnotes after the columns, a table's rows apart, numbered headings found in the outline, a compound the
# document prints whole kept at a line-end hyphen (LaTeX papers); pdf-7: scanned pages read by OCR; pdf-8:
# headings keep their words' underscores (document.clean_heading).
VERSION = "pdf-8"
VERSIONS = {"pdf": VERSION}


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def text_flags() -> int:
    """pymupdf's flags for reading text: its defaults without TEXT_PRESERVE_LIGATURES, so a printed "ﬁ"
    comes out as "f" and "i" (the glyph's box on the "f"). A person types "classification": BM25 never
    matched "classiﬁcation", and MiniLM cuts the ligature into pieces of its own. The viewer reads with
    the same flags, so its characters are the extractor's. Nor TEXT_PRESERVE_IMAGES: only text blocks are
    read, and a scanned page's image in the page's dict cost 50 MB (a copy of the scan's bytes) for nothing."""
    import pymupdf

    return pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_LIGATURES & ~pymupdf.TEXT_PRESERVE_IMAGES


def compose(text: str, boxes: list | None = None) -> tuple[str, list | None]:
    """NFC, one base character and the combining marks after it at a time, with `boxes` (one per
    character, or None) carried along: the characters of a composed cluster all get its first box.
    Whole-text NFC could change the length in ways the viewer cannot follow (LaTeX sets accents as
    combining marks: "e" + U+0301 becomes "é"), so extractor and viewer both compose this way.

    >>> compose("cafe\u0301 ok", list(range(8)))
    ('café ok', [0, 1, 2, 3, 5, 6, 7])
    >>> compose("\u037e")[0]  # the Greek question mark is a semicolon
    ';'
    """
    if text.isascii():  # nothing to compose (and most blocks are): the loop below is the extractor's main cost
        return text, (list(boxes) if boxes is not None else None)
    out: list[str] = []
    kept: list = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and unicodedata.combining(text[j]):
            j += 1
        piece = unicodedata.normalize("NFC", text[i:j])
        out.append(piece)
        if boxes is not None:
            kept += [boxes[i]] * len(piece)
        i = j
    return "".join(out), (kept if boxes is not None else None)


def _normalise_block(text: str, known: frozenset[str] = frozenset()) -> str:
    # Lines inside a block are wrapped prose: join them, keeping words apart; undo "exam-\nple" (`known`:
    # the document's own hyphenated words, `compounds`).
    text = CONTROL.sub("", compose(text)[0])
    text = LINE_END_HYPHEN.sub(lambda m: line_end_hyphen(text, m, known), text)
    return re.sub(r"\s*\n\s*", " ", text).strip()


_SENTENCE_END = ".!?:;"
# A note mark printed right after a sentence's end ("… a graphics card.¹", LaTeX's superscript "1" read as a
# plain digit): the sentence still ends there. A letter before the stop, so "version 3.1" is not one.
_MARK_AFTER_END = re.compile(r"(?<=[^\W\d][.!?:;])(\d{1,3}|[*†‡§]|[¹²³⁴⁵⁶⁷⁸⁹⁰]+)$")


def ends_sentence(text: str) -> bool:
    """Whether `text` ends a sentence: with one of _SENTENCE_END, a note mark after it allowed.

    >>> ends_sentence("a graphics card.1"), ends_sentence("the version 3.1"), ends_sentence("as the")
    (True, False, False)
    """
    text = _MARK_AFTER_END.sub("", text.rstrip())
    return bool(text) and text[-1] in _SENTENCE_END


def _continues(prev: tuple[float, float, float, float], prev_size: float, prev_text: str,
               box: tuple[float, float, float, float], size: float) -> bool:
    """Whether the text block at `box` goes on with the sentence of the block at `prev` (the one before
    it on the page): some PDFs put every printed line in a block of its own, and joining their blocks
    with blank lines would cut sentences into paragraphs. It does when `prev` ends mid-sentence, the two
    share a font size, and `box` sits right under `prev` (less than a line's height between them: pymupdf
    splits lines set at 1.5 or double spacing into blocks of one line each),
    starting where it starts (within two ems) and reaching no more than six ems further right (ragged
    lines differ by a word or two; a heading, much shorter than the line under it, stays apart).

    >>> _continues((72, 60, 520, 74), 11, "documents do not", (72, 76, 300, 90), 11)
    True
    >>> _continues((72, 60, 520, 74), 11, "the end.", (72, 76, 300, 90), 11)  # a sentence ended
    False
    >>> _continues((72, 60, 200, 78), 14, "Cosine distance in brief", (72, 82, 520, 96), 11)  # a heading
    False

    A sentence also goes on from the foot of a column to the top of the next one (`reading_order` puts it
    next): `box` then starts well above `prev`, to the right of it.

    >>> _continues((72, 500, 290, 760), 10, "lifted out of the water before", (305, 140, 523, 200), 10)
    True
    """
    if not prev_text.rstrip() or ends_sentence(prev_text) or not size or abs(prev_size - size) > 0.5:
        return False
    if box[1] < prev[1] - 2 * size and box[0] >= prev[2] - 2 * size:
        return True  # the next column
    gap = box[1] - prev[3]
    return -0.2 * size <= gap < 1.2 * size and abs(box[0] - prev[0]) <= 2 * size and prev[2] >= box[2] - 6 * size


def page_break(last: tuple | None, first: tuple | None) -> str:
    """What joins two pages' text: a space when the next page's first block goes on with the sentence of
    the last block before it (a paragraph, longer than a title, with no sentence end; the same font size;
    the same left edge within two ems), else a blank line. Blocks: (text, largest font size, in a margin,
    left edge).

    >>> para = "A parcel that arrives damaged may be sent back within thirty days, and the refund is paid"
    >>> page_break((para, 11, False, 72), ("within five days.", 11, False, 72))
    ' '
    >>> page_break((para + ".", 11, False, 72), ("Exchanges", 11, False, 72))
    '\\n\\n'
    >>> page_break(("Returns and refunds", 11, False, 72), ("A parcel that...", 11, False, 72))  # a heading
    '\\n\\n'
    """
    if last is None or first is None or len(last[0]) <= TITLE_MAX or ends_sentence(last[0]):
        return "\n\n"
    same = first[1] and abs(last[1] - first[1]) <= 0.5 and abs(last[3] - first[3]) <= 2 * first[1]
    return " " if same else "\n\n"


def _union(a: tuple, b: tuple) -> tuple:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def join_continued(blocks, join) -> list[tuple]:
    """A page's blocks, (content, largest font size, bbox, last line's text, a table row?) in reading order,
    with each block that goes on with the sentence of the one before it (`_continues`) joined to it by
    `join(before, after)`; a table's row is never joined (each row stays a paragraph of its own). The
    extractor's content is the block's lines; the viewer's, its characters and their boxes: one rule for
    both, so their texts (and so every offset) agree.

    >>> join_continued([(["documents do not"], 11, (72, 60, 520, 74), "documents do not", False),
    ...                  (["support it."], 11, (72, 76, 300, 90), "support it.", False)], lambda a, b: a + b)
    [(['documents do not', 'support it.'], 11, (72, 60, 520, 90), 'support it.', False)]
    """
    out: list[tuple] = []
    for content, big, box, last, row in blocks:
        if out and not row and not out[-1][4] and _continues(out[-1][2], out[-1][1], out[-1][3], box, big):
            before, before_big, before_box, _, _ = out[-1]
            out[-1] = (join(before, content), max(before_big, big), _union(before_box, box), last, False)
        else:
            out.append((content, big, box, last, row))
    return out


def notes_after_columns(blocks: list[tuple], first_line) -> list[tuple]:
    """A page's blocks, (content, largest font size, bbox, …) in reading order, with the footnotes at the
    foot of a column moved to the page's end, before the footnotes already there. In two columns LaTeX sets
    a note at the foot of the column that cites it, so in reading order it stands between the column's last
    line and the next column's first, often inside a sentence that goes on there; moved, that sentence is
    joined whole (`join_continued`) and the note closes the page, where `footnotes` finds it. A column's
    note: a block in type a point or more smaller than the block before it, starting with a note mark
    (`_NOTE_MARK`), followed by a block that starts above it and to its right (the next column's top).
    `first_line(content)`: the block's first line's text (the extractor's and the viewer's content differ).

    >>> b = lambda t, size, box: ([t], size, box)
    >>> page = [b("the late models were the", 10, (72, 500, 290, 760)), b("1A card.", 8, (72, 770, 290, 780)),
    ...         b("last of their family.", 10, (305, 80, 523, 300))]
    >>> [x[0][0] for x in notes_after_columns(page, lambda c: c[0])]
    ['the late models were the', 'last of their family.', '1A card.']
    """
    def note(i: int) -> bool:
        return i > 0 and blocks[i][1] <= blocks[i - 1][1] - 1 and bool(_NOTE_MARK.match(first_line(blocks[i][0])))

    moved: set[int] = set()
    for i in range(1, len(blocks) - 1):
        if not note(i):
            continue
        j = i + 1  # several notes at one column's foot
        while j < len(blocks) and blocks[j][1] <= blocks[i][1] + 0.5 and _NOTE_MARK.match(first_line(blocks[j][0])):
            j += 1
        box, after = blocks[i][2], blocks[j][2] if j < len(blocks) else None
        if after is not None and after[1] < box[1] and after[0] >= box[2] - 2 * blocks[i][1]:
            moved.update(range(i, j))
    if not moved:
        return blocks
    rest = [b for i, b in enumerate(blocks) if i not in moved]
    k = len(rest)  # the page's own closing notes stay after the moved ones: notes keep their order
    size = max(blocks[i][1] for i in moved)
    while k > 1 and rest[k - 1][1] <= size + 0.5 and _NOTE_MARK.match(first_line(rest[k - 1][0])):
        k -= 1
    return rest[:k] + [blocks[i] for i in sorted(moved)] + rest[k:]


CELL_GAP = " | "  # between the cells of a table's row, where the lines of a prose block get a line break


def is_row(block: dict) -> bool:
    """Whether a pymupdf text block is a table's row: two lines or more side by side on one baseline (pymupdf
    gives each cell a line), a line's height apart or more (wider than any space between words of a
    justified line), rather than lines under each other. Its cells are then joined by CELL_GAP, not run
    together as words of one sentence ("Weight 1.3 kg Memory 141 GB").

    >>> line = lambda x0, x1, y=100: {"bbox": (x0, y, x1, y + 12)}
    >>> is_row({"lines": [line(76, 110), line(204, 240), line(324, 360)]})
    True
    >>> is_row({"lines": [line(72, 500), line(72, 300, 114)]})  # a paragraph's two lines
    False
    >>> is_row({"lines": [line(72, 300), line(304, 500)]})  # one line, split at a word gap
    False
    """
    lines = [ln["bbox"] for ln in block["lines"]]
    if len(lines) < 2:
        return False
    height = min(b[3] - b[1] for b in lines) or 1.0
    middle = (lines[0][1] + lines[0][3]) / 2
    return all(abs((b[1] + b[3]) / 2 - middle) < height / 2 for b in lines) and \
        all(b[0] - a[2] >= height for a, b in zip(lines, lines[1:]))


def reading_order(blocks: list[dict], width: float) -> list[dict]:
    """A page's text blocks (pymupdf's block dicts) in reading order: columns one after the other. `width`:
    the page's.

    Recursive XY-cut: the blocks are cut where no block spans, down the page (the left column, then the
    right) where that parts columns, else across it at the widest gap (a band above, then the one below);
    each part is cut again. A cut down the page must leave prose on both sides (a block of two lines or
    more) over at least a third of the part's height, so a table's cells stay in rows (as pymupdf sorts
    them) and a line's short pieces stay together. Without a cut, blocks go top to bottom, left to right.
    Text that does not run left to right comes last, and in the outer tenth of the page's width it is
    dropped: a side stamp ("arXiv:1504.08083v2 [cs.CV] 27 Sep 2015") is not part of the text, nor the
    section of the paper. A block that holds several rows of a table comes out a row at a time (`rows_apart`).

    >>> b = lambda x0, y0, x1, y1, n=3: {"bbox": (x0, y0, x1, y1),
    ...                                  "lines": [{"dir": (1, 0), "bbox": (x0, y0 + 12 * i, x1, y0 + 12 * i + 10)}
    ...                                            for i in range(n)]}
    >>> page = [b(72, 40, 520, 60, 1), b(72, 80, 290, 300), b(310, 80, 520, 300), b(72, 310, 290, 500)]
    >>> [p["bbox"][:2] for p in reading_order(page, 595)]  # title, left column (two blocks), right column
    [(72, 40), (72, 80), (72, 310), (310, 80)]
    """
    level = [b for b in blocks if all(abs(line.get("dir", (1, 0))[0]) > 0.99 for line in b["lines"])]
    turned = [b for b in blocks if b not in level and 0.1 * width < (b["bbox"][0] + b["bbox"][2]) / 2 < 0.9 * width]
    return [row for b in _cut(level) for row in rows_apart(b)] + turned


def rows_apart(block: dict) -> list[dict]:
    """A pymupdf block that holds several rows of a table (a booktabs table's body: one block, a line per
    cell) as one block per row, so each row is a paragraph of its own with its cells apart (`is_row`), not
    one run "Two-stage 41.2 910 Single-shot 35.7 140". Split only when every printed line of the block is
    a row; any other block comes back as it is.

    >>> line = lambda x0, x1, y: {"bbox": (x0, y, x1, y + 8)}
    >>> rows = rows_apart({"bbox": (93, 92, 256, 122), "lines": [line(93, 162, 92), line(180, 196, 92),
    ...     line(243, 256, 92), line(93, 111, 103), line(180, 196, 103), line(243, 256, 103)]})
    >>> [(r["bbox"], len(r["lines"])) for r in rows]
    [((93, 92, 256, 100), 3), ((93, 103, 256, 111), 3)]
    """
    lines = block["lines"]
    if len(lines) < 4 or not is_row({"lines": lines[:2]}):  # a prose block: its first two lines are no row
        return [block]
    groups: list[list[dict]] = []
    for ln in lines:
        box = ln["bbox"]
        if groups:
            first = groups[-1][0]["bbox"]
            if abs((box[1] + box[3]) / 2 - (first[1] + first[3]) / 2) < (first[3] - first[1]) / 2:
                groups[-1].append(ln)
                continue
        groups.append([ln])
    if len(groups) < 2:
        return [block]
    rows = [dict(block, lines=g, bbox=(min(ln["bbox"][0] for ln in g), min(ln["bbox"][1] for ln in g),
                                       max(ln["bbox"][2] for ln in g), max(ln["bbox"][3] for ln in g)))
            for g in groups]
    return rows if all(is_row(r) for r in rows) else [block]


def _cut(blocks: list[dict]) -> list[dict]:
    if len(blocks) <= 1:
        return list(blocks)
    # Columns first: a column shorter than the other leaves a wide gap across the page under it, and
    # cutting there would read the foot of the longer column after everything else.
    columns = [(gap, at) for gap, at in _gaps(blocks, 0) if _columns(blocks, at)]
    bands = _gaps(blocks, 1)
    if not columns and not bands:
        return sorted(blocks, key=lambda b: (b["bbox"][1], b["bbox"][0]))
    axis, (_, at) = (0, max(columns)) if columns else (1, max(bands))
    first = [b for b in blocks if b["bbox"][axis + 2] <= at]
    return _cut(first) + _cut([b for b in blocks if b["bbox"][axis + 2] > at])


def _gaps(blocks: list[dict], axis: int) -> list[tuple[float, float]]:
    """(width, where) of each gap along `axis` (1: y, 0: x) that no block spans; `where` is the gap's start."""
    spans = sorted((b["bbox"][axis], b["bbox"][axis + 2]) for b in blocks)
    out, reach = [], spans[0][1]
    for lo, hi in spans[1:]:
        if lo > reach:
            out.append((lo - reach, reach))
        reach = max(reach, hi)
    return out


def _columns(blocks: list[dict], at: float) -> bool:
    """Whether a cut down the page at x = `at` parts two columns of prose (not a table's cells)."""
    top = min(b["bbox"][1] for b in blocks)
    height = max(b["bbox"][3] for b in blocks) - top or 1.0
    for side in ([b for b in blocks if b["bbox"][2] <= at], [b for b in blocks if b["bbox"][2] > at]):
        if not any(len(b["lines"]) >= 2 for b in side):
            return False
        if max(b["bbox"][3] for b in side) - min(b["bbox"][1] for b in side) < height / 3:
            return False
    return True


def _furniture_key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.lower())).strip()


_HEADING_NUMBER = re.compile(r"^(\d+(\.\d+)*\.?|[IVXLC]+\.|[A-Z]\.)(\s*\|)?\s+(?=\w)")


def _heading_key(text: str) -> str:
    """A heading block's text as an outline entry names it: without its section number ("1 Introduction",
    "2.3. Data", "IV. RESULTS"; LaTeX's outline leaves it out) and without the cell gap that `is_row` puts
    between a number and a title set a quad apart ("1 | Introduction"). The extractor tries the text as it
    is too: "2024 budget" may be the outline's name for it.

    >>> _heading_key("1 | Introduction"), _heading_key("2.3. Data sets"), _heading_key("IV. RESULTS")
    ('introduction', 'data sets', 'results')
    """
    return _furniture_key(_HEADING_NUMBER.sub("", text, count=1))


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    return extract_pdf(data, name, limits.max_pages, ocr_cache=limits.ocr_cache)


OCR_DPI = 300
OCR_TEXT = 40  # characters: a page with fewer over one image that covers it is a scan (its text a stamp)


def page_chars(blocks: list[dict]) -> int:
    """The characters, spaces aside, of a page's pymupdf text blocks ("dict" or "rawdict": the extractor's and
    the viewer's count alike)."""
    return sum(1 for b in blocks for ln in b["lines"] for s in ln["spans"]
               for c in (s["text"] if "text" in s else "".join(ch["c"] for ch in s["chars"])) if not c.isspace())


def ocr_wanted(page, chars: int) -> bool:
    """Whether a page is read by OCR: it has no text (`chars`, `page_chars`) but shows an image or drawings (a
    blank page is not read), or a few characters of text over one image that covers most of it."""
    import pymupdf

    if chars >= OCR_TEXT:
        return False
    images = page.get_image_info()
    if chars == 0:
        return bool(images) or bool(page.get_drawings())
    area = abs(page.rect) or 1.0
    return any(abs(pymupdf.Rect(i["bbox"]) & page.rect) >= 0.8 * area for i in images)


def ocr_page(page, pno: int, cache: Path | None) -> list[tuple[tuple, list[tuple]]]:
    """Page `pno` (1-based) read by OCR: its blocks as the extractor's (text, font size, in a margin, left edge),
    each with its words (start, end in the block's text, confidence, page, box in the page's points). The
    font size is guessed from the lines' height (a line's box is about 1.15 times its type's size)."""
    import pymupdf
    from PIL import Image

    from rag.reading import ocr

    rect = page.rect
    dpi = max(36, min(OCR_DPI, int(ocr.MAX_SIDE * 72 / (max(rect.width, rect.height) or 1.0))))
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    sx, sy = rect.width / pix.width, rect.height / pix.height
    del pix
    # MuPDF keeps each page's decoded scan in its store (up to 256 MB): emptied, a 300-page scan costs a page's
    # memory, not 17 MB more per page.
    pymupdf.TOOLS.store_shrink(100)
    rec, _ = ocr.recognise_cached(image, ocr.DEFAULT_LANGS, cache)
    height = rect.height or 1.0
    out = []
    for para in ocr.paragraphs(rec):
        def points(box):
            return (rect.x0 + box[0] * sx, rect.y0 + box[1] * sy, rect.x0 + box[2] * sx, rect.y0 + box[3] * sy)

        x0, y0, _, y1 = points(para.box)
        size = round(para.line_height * sy / 1.15 * 2) / 2
        block = (para.text, size, y1 - rect.y0 < 0.12 * height or y0 - rect.y0 > 0.88 * height, x0)
        out.append((block, [(s, e, conf, pno, points(box)) for s, e, conf, box in para.words]))
    return out


def extract_pdf(data: bytes, name: str, max_pages: int, ocr_cache: Path | None = None) -> Extracted:
    import pymupdf

    from rag.reading import ocr

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise ExtractionError("the file is empty (0 bytes)") from None
    except Exception as exc:  # FileDataError and friends: the bytes are not a PDF pymupdf can repair
        raise ExtractionError(f"not a readable PDF (damaged, or not a PDF at all): {exc}") from None
    with doc:
        if not doc.is_pdf:
            raise ExtractionError("not a PDF: the file is another kind of document (an image?) named .pdf")
        if doc.needs_pass:
            raise ExtractionError("the PDF is encrypted with a password; open it, save an unprotected copy, retry")
        if doc.page_count > max_pages:
            raise ExtractionError(f"the PDF has {doc.page_count:,} pages; the limit is {max_pages:,} (max_pages)")
        if doc.page_count == 0:
            raise ExtractionError("the PDF has no pages")
        warnings = ["the PDF was damaged and has been repaired while reading; check its text"] if doc.is_repaired else []
        pages: list[list[tuple]] = []  # per page: (block text, largest font size, in a margin, left edge)
        sizes: Counter[float] = Counter()
        read: list[tuple[float, list[tuple]]] = []  # per page: its height, its blocks as printed
        ocr_read: dict[int, list[tuple[tuple, list[tuple]]]] = {}  # page index -> its OCR'd blocks and their words
        scanned = 0  # pages that OCR would read
        try:
            for pno, page in enumerate(doc, start=1):
                raw: list[tuple] = []  # (lines, largest font size, bbox, last line)
                height = page.rect.height or 1.0
                found = page.get_text("dict", flags=text_flags(), sort=True)["blocks"]
                ordered = reading_order([b for b in found if b.get("type") == 0], page.rect.width)
                if ocr_wanted(page, page_chars(ordered)):
                    scanned += 1
                    read.append((height, []))
                    if ocr.available() is None:
                        try:
                            ocr_read[pno - 1] = ocr_page(page, pno, ocr_cache)
                        except Exception as exc:  # a timeout, Tesseract failing on this page: the rest is read
                            why = getattr(exc, "reason", exc)
                            warnings.append(f"page {pno}: OCR failed ({why}); its text is missing")
                    continue
                for b in ordered:
                    lines = []
                    big = 0.0
                    for line in b["lines"]:
                        t = "".join(s["text"] for s in line["spans"])
                        for s in line["spans"]:
                            if s["text"].strip():
                                sizes[round(s["size"], 1)] += len(s["text"])
                                big = max(big, s["size"])
                        lines.append(t)
                    row = is_row(b)
                    if row:
                        lines = [CELL_GAP.join(lines)]
                    if lines:
                        raw.append((lines, big, tuple(b["bbox"]), lines[-1], row))
                raw = notes_after_columns(raw, lambda lines: lines[0])
                read.append((height, join_continued(raw, lambda a, b: a + b)))
            # The words the document prints with a hyphen, so that one broken at it stays whole (all pages
            # first: the word may be printed whole on a later page).
            known = compounds(ln for _, blocks in read for b in blocks for ln in b[0])
            for index, (height, joined) in enumerate(read):
                blocks = [block for block, _ in ocr_read.get(index, ())]
                for lines, big, (x0, y0, _, y1), _, _ in joined:
                    text = _normalise_block("\n".join(lines), known)
                    if text:
                        blocks.append((text, big, y1 < 0.12 * height or y0 > 0.88 * height, x0))
                pages.append(blocks)
            toc = doc.get_toc(simple=True)
            meta_title = clean_heading((doc.metadata or {}).get("title") or "")
        except Exception as exc:
            raise ExtractionError(f"the PDF could not be read: {exc}") from None

    pages = drop_furniture(pages)
    notes = footnotes(pages)
    pages = place_footnotes(pages, notes)
    empty = sum(1 for p in pages if not p)
    missing = ocr.available() if scanned else None
    if empty == len(pages):
        why = (f"a scanned or image-only PDF, and {missing}" if missing else
               "a scanned or image-only PDF, and OCR found no text on it" if scanned else "its pages are blank")
        raise ExtractionError(f"no extractable text on any of its {len(pages)} page(s): {why}")
    if missing:
        warnings.append(f"{scanned} scanned page(s) not read: {missing}")
    ocr_of = {id(block): words for found in ocr_read.values() for block, words in found}
    ocr_words: list[OcrWord] = []
    body_size = sizes.most_common(1)[0][0] if sizes else 0.0

    parts: list[str] = []
    page_starts: list[int] = []
    heads: list[tuple[int, int, int, str]] = []  # (block start, block end, level, text)
    note_spans: list[tuple[int, int]] = []  # footnotes: each a section of its own
    pos = 0
    toc_by_page: dict[int, list[tuple[int, str]]] = {}
    for lvl, title, pno in toc:
        toc_by_page.setdefault(pno, []).append((lvl, clean_heading(title)))
    last = None  # the last block written, for a sentence that goes on over the page break
    for pno, blocks in enumerate(pages, start=1):
        if parts:
            sep = page_break(last, blocks[0] if blocks else None)
            parts.append(sep)
            pos += len(sep)
        page_starts.append(pos)
        wanted = list(toc_by_page.get(pno, []))
        last = blocks[-1] if blocks else None
        for i, block in enumerate(blocks):
            text, big = block[0], block[1]
            if i:
                parts.append("\n\n")
                pos += 2
            if id(block) in notes:
                note_spans.append((pos, pos + len(text)))
            if toc:
                for w in wanted:
                    entry = _furniture_key(w[1])[:40]
                    if (_furniture_key(text).startswith(entry) or _heading_key(text).startswith(entry)) and \
                            len(text) <= len(w[1]) + 20:
                        heads.append((pos, pos + len(text), w[0], w[1]))
                        wanted.remove(w)
                        break
            elif body_size and big >= body_size * 1.15 and len(text) <= TITLE_MAX and not text.endswith("."):
                level = 1 if big >= body_size * 1.4 else 2
                heads.append((pos, pos + len(text), level, clean_heading(text.replace(CELL_GAP, " "))))
            parts.append(text)
            ocr_words += [OcrWord(pos + a, pos + b, conf, p, box) for a, b, conf, p, box in ocr_of.get(id(block), ())]
            pos += len(text)
        for lvl, t in wanted:  # an outline entry whose heading text was not found: section starts at the page
            heads.append((page_starts[-1], page_starts[-1], lvl, t))
    text = "".join(parts)
    heads.sort()

    # The title: the PDF's own, else a lone top-level outline entry or the one big-font heading, else the
    # largest type on the first page with text (a paper's title over headings as large as each other).
    tops = [h[3] for h in heads if h[2] == 1]
    title = meta_title or (tops[0] if len(tops) == 1 else "") or _first_page_title(pages, body_size) or \
        title_from_first_line("" if heads else text, name)[0]
    sections: list[Section] = []
    if heads:
        stack: list[tuple[int, str]] = []
        start, path = 0, ()
        for h in heads:
            if text[start:h[0]].strip():
                sections.append(Section(start, h[0], path))
            stack = [s for s in stack if s[0] < h[2]] + [(h[2], h[3])]
            path = tuple(t for lvl, t in stack if not (lvl == 1 and t == title))
            start = min(h[1] + (2 if h[1] > h[0] else 0), len(text))
        sections.append(Section(start, len(text), path))
    else:
        # No outline and no heading fonts: each page is its own section.
        for i, s in enumerate(page_starts):
            e = page_starts[i + 1] - 2 if i + 1 < len(page_starts) else len(text)
            sections.append(Section(s, e, (f"Page {i + 1}",)))
    sections = [s for s in _notes_apart(sections, note_spans) if text[s.start:s.end].strip()]
    return Extracted(name=name, kind="pdf", title=title, text=text, sections=sections,
                     version=VERSION, page_starts=page_starts, pages=len(pages),
                     empty_pages=empty, warnings=warnings, ocr_words=ocr_words, ocr_pages=len(ocr_read))


def _notes_apart(sections: list[Section], notes: list[tuple[int, int]]) -> list[Section]:
    """The sections with each footnote cut out as a section of its own (path: its section's, then "Footnote"),
    so that the chunker, which never crosses a section, keeps it out of the body's chunks.

    >>> _notes_apart([Section(0, 100, ("Rules",))], [(40, 60)])
    [Section(start=0, end=38, path=('Rules',)), Section(start=40, end=60, path=('Rules', 'Footnote')), \
Section(start=62, end=100, path=('Rules',))]
    """
    for a, b in notes:
        out = []
        for s in sections:
            if s.start <= a and b <= s.end and s.path[-1:] != ("Footnote",):
                out += [Section(s.start, max(s.start, a - 2), s.path), Section(a, b, s.path + ("Footnote",)),
                        Section(min(b + 2, s.end), s.end, s.path)]
            else:
                out.append(s)
        sections = out
    return [s for s in sections if s.end > s.start]


def _first_page_title(pages: list[list[tuple]], body_size: float) -> str:
    """The block in the largest type on the first page with text, when it is a heading's size (a fifth or
    more over the body's), a title's length, and larger than every other block of the document (a heading
    as large on the next page makes it the first of the sections, not the title); else ""."""
    first = next((blocks for blocks in pages if blocks), [])
    if not first or not body_size:
        return ""
    big = max(b[1] for b in first)
    top = [b for b in first if b[1] == big]
    others = [b[1] for blocks in pages for b in blocks if b is not top[0]]
    if len(top) != 1 or big < 1.2 * body_size or len(top[0][0]) > TITLE_MAX or top[0][0].endswith(".") or \
            others and max(others) >= big:
        return ""
    return clean_heading(top[0][0])


def drop_furniture(pages: list[list[tuple]]) -> list[list[tuple]]:
    """Drop running headers and footers: blocks in the top or bottom margin whose digit-blind text
    repeats on most pages ("Handbook — page 3" and "Handbook — page 4" are the same furniture), or on two
    pages or more with its number changing (a chapter's running header, "1. INTRODUCTION 4", "… 5", on that
    chapter's pages only).

    >>> page = lambda *blocks: [(t, 10, True, 72) for t in blocks]
    >>> drop_furniture([page("1. INTRODUCTION 4", "Body."), page("1. INTRODUCTION 5"), page("2. METHODS 6")])
    [[('Body.', 10, True, 72)], [], [('2. METHODS 6', 10, True, 72)]]
    """
    seen: Counter[str] = Counter()
    numbers: dict[str, set[str]] = {}
    for blocks in pages:
        for b in blocks:
            if b[2]:
                key = _furniture_key(b[0])
                numbers.setdefault(key, set()).add(" ".join(re.findall(r"\d+", b[0])))
        seen.update({_furniture_key(b[0]) for b in blocks if b[2]})
    limit = max(3, int(0.6 * len(pages)))
    furniture = {k for k, n in seen.items() if len(k) <= 120 and (
        n >= limit and len(pages) >= 3 or n >= 2 and "#" in k and len(numbers[k]) == n)}
    if not furniture:
        return pages
    return [[b for b in blocks if not (b[2] and _furniture_key(b[0]) in furniture)] for blocks in pages]


_NOTE_MARK = re.compile(r"^(\d{1,3}|[*†‡§]|[¹²³⁴⁵⁶⁷⁸⁹⁰]+)\s*[^\W\d]")  # "1 Article…", "*Ver…", "¹Art." (not "12")


def footnotes(pages: list[list[tuple]]) -> set[int]:
    """The ids of the blocks that are footnotes: those that close a page in a smaller type than the body's
    (by a point or more) and start with a note mark ("1", "*", "†", "¹") and a word. Blocks: (text, largest
    font size, in a margin, left edge), as `page_break` reads them; the body's size is the commonest, by
    characters."""
    sizes: Counter[float] = Counter()
    for blocks in pages:
        for b in blocks:
            sizes[b[1]] += len(b[0])
    if not sizes:
        return set()
    body = sizes.most_common(1)[0][0]
    out: set[int] = set()
    for blocks in pages:
        k = len(blocks)
        while k > 1 and blocks[k - 1][1] <= body - 1 and _NOTE_MARK.match(blocks[k - 1][0]):
            k -= 1
        out.update(id(b) for b in blocks[k:])
    return out


def place_footnotes(pages: list[list[tuple]], notes: set[int] | None = None) -> list[list[tuple]]:
    """Keep a sentence that runs over a page break whole when the page ends with footnotes (`notes`, by
    default `footnotes(pages)`): they are moved to just after the block that finishes the sentence on the
    next page. Elsewhere they stay where they are; the extractor makes each a section of its own, so no
    chunk mixes one with the body.

    >>> body = "The records kept by the office show that every parcel sent back before the deadline was"
    >>> pages = [[(body, 11, False, 72), ("1 Article 3 of the rules.", 8, True, 72)],
    ...          [("refunded within five days.", 11, False, 72), ("Next.", 11, False, 72)]]
    >>> [[b[0][:12] for b in p] for p in place_footnotes(pages)]
    [['The records '], ['refunded wit', '1 Article 3 ', 'Next.']]
    """
    notes = footnotes(pages) if notes is None else notes
    out = [list(blocks) for blocks in pages]
    for n in range(len(out) - 1):
        rest = [b for b in out[n] if id(b) not in notes]
        moved = [b for b in out[n] if id(b) in notes]
        if not moved or not rest or not out[n + 1] or page_break(rest[-1], out[n + 1][0]) != " ":
            continue
        out[n] = rest
        out[n + 1] = out[n + 1][:1] + moved + out[n + 1][1:]
    return out

"""The document every reader returns: one canonical text, its title, its sections and, for a paged format, where
each page begins.

Every offset elsewhere in the engine (chunk start/end, `#char=` fragments, the page of a chunk) is a position in
`Extracted.text`, so `text[start:end]` is exactly what a citation quotes. A file that cannot be read raises
`ExtractionError` with a reason a person understands.

>>> doc = Extracted(name="n.txt", kind="txt", title="Notes", text="Notes\\n\\nRent: 850.", sections=[Section(7, 17, ())],
...                 version="txt-3")
>>> doc.text[doc.sections[0].start:doc.sections[0].end], doc.page_at(8)
('Rent: 850.', None)

A format with places of its own (a slide, a spreadsheet's rows, an e-mail message) lists them as `Place`s, and
`place_of` names the place of a range in the format's own terms, as the citation shows it:

>>> rows = [Place(0, 9, "Budget", row=14, last_col=6), Place(11, 20, "Budget", row=15, last_col=6)]
>>> Extracted(name="b.xlsx", kind="xlsx", title="b", text="Rent: 850\\n\\nRent: 900", sections=[], version="x",
...           places=rows).place_of(0, 20)
'Budget!A14:F15'
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

TITLE_MAX = 80  # a first line longer than this is a paragraph, not a title


class ExtractionError(Exception):
    """A file that cannot become text; `reason` is shown to the person as it is."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Section:
    start: int  # body of the section in the canonical text, heading lines excluded
    end: int
    path: tuple[str, ...]  # headings below the title, outermost first; () for text before any heading


@dataclass(frozen=True)
class OcrWord:
    """A word the OCR recognised: its range in the canonical text, Tesseract's confidence in it (0-100), and
    where it stands on its page (1-based) or image, in the page's points (a PDF) or the image's pixels."""

    start: int
    end: int
    confidence: float
    page: int
    box: tuple[float, float, float, float]  # x0, y0, x1, y1


@dataclass(frozen=True)
class Limits:
    """How much of a file a reader may read: past these it stops with a reason, so a huge or hostile file costs
    bounded memory and time."""

    max_chars: int = 5_000_000  # characters of canonical text
    max_pages: int = 2000  # pages of a PDF, slides of a deck, messages of a mailbox
    ocr_cache: Path | None = None  # a folder where each OCR'd page's words are kept by the page image's hash


@dataclass(frozen=True)
class Place:
    """A range of the canonical text that is one place of the file in the format's own terms: a slide ("slide 4"),
    an e-mail message, a spreadsheet's row (`label` its sheet, `row` its 1-based number, `last_col` its last
    column's number, `cells` its cells as the sheet shows them, for the viewer to draw the sheet again)."""

    start: int
    end: int
    label: str
    row: int = 0
    last_col: int = 0
    cells: tuple[str, ...] = ()
    header: tuple[str, ...] = ()  # a row's: its sheet's header row, as shown (one tuple shared by the sheet's rows)


def column_letters(n: int) -> str:
    """A spreadsheet column's letters from its 1-based number: 1 -> A, 27 -> AA.

    >>> column_letters(1), column_letters(6), column_letters(27), column_letters(703)
    ('A', 'F', 'AA', 'AAA')
    """
    out = ""
    while n > 0:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out


def a1_range(sheet: str, first_row: int, last_row: int, last_col: int) -> str:
    """The A1 reference of rows `first_row`..`last_row`, columns A..`last_col`, of a sheet, quoted as the
    spreadsheet writes it when the sheet's name needs quotes.

    >>> a1_range("Budget", 14, 16, 6), a1_range("Q1 costs", 3, 3, 1), a1_range("it's", 2, 4, 2)
    ('Budget!A14:F16', "'Q1 costs'!A3", "'it''s'!A2:B4")
    """
    name = sheet if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", sheet) else "'" + sheet.replace("'", "''") + "'"
    return f"{name}!{_cells(first_row, last_row, last_col)}"


def _cells(first_row: int, last_row: int, last_col: int) -> str:
    end = f"{column_letters(max(1, last_col))}{last_row}"
    return f"A{first_row}" + ("" if end == f"A{first_row}" else f":{end}")


def rows_place(place: str, marks: str, start: int, end: int) -> str:
    """The A1 range of the rows that [start, end) touches, in a passage whose place is `place` (its sheet's A1
    range) and whose rows are `marks` (`Extracted.row_marks`, offsets from the passage's start): a quote of one
    row of `Budget!A1:C5` is `Budget!A3:C3`. It returns `place` as it is when `marks` is empty (a format whose
    places are not rows, or an index written before passages kept their rows) or the span touches none of them;
    it does not split a range: rows 2 and 5 quoted name rows 2 to 5.

    >>> marks = "0:1:3 16:2:3 43:3:2"
    >>> rows_place("Budget!A1:C3", marks, 18, 30), rows_place("Budget!A1:C3", marks, 5, 50)
    ('Budget!A2:C2', 'Budget!A1:C3')
    >>> rows_place("'Q1 costs'!A1:C3", marks, 45, 50), rows_place("slide 4", "", 0, 9)
    ("'Q1 costs'!A3:B3", 'slide 4')
    """
    sheet, bang, _ = place.rpartition("!")
    hit = _rows_hit(marks, start, end) if bang else []
    if not hit:
        return place
    return f"{sheet}!{_cells(hit[0][1], hit[-1][1], max(r[2] for r in hit))}"


def rows_span(marks: str, start: int, end: int, length: int) -> tuple[int, int] | None:
    """Where the rows that [start, end) touches lie in their passage (offsets from its start; `length`: the
    passage's): the same rows `rows_place` names, so a card quoting them quotes what its range says. None
    when `marks` is empty or the span touches no row.

    >>> text = "Month | Fee\\n\\nMonth: May | Fee: 12\\n\\nMonth: June | Fee: 14"
    >>> a, b = rows_span("0:1:2 13:2:2 35:3:2", 20, 25, len(text))
    >>> text[a:b]
    'Month: May | Fee: 12'
    """
    hit = _rows_hit(marks, start, end)
    if not hit:
        return None
    rows = [int(m.split(":")[0]) for m in marks.split()]
    after = [r for r in rows if r > hit[-1][0]]
    return hit[0][0], (after[0] - 2 if after else length)  # the blank line before the next row is not in it


def _rows_hit(marks: str, start: int, end: int) -> list[tuple[int, ...]]:
    """The rows (offset, row, last column) of `marks` that [start, end) touches."""
    if not marks:
        return []
    rows = [tuple(int(x) for x in m.split(":")) for m in marks.split()]
    # A row runs to where the next one starts: the blank line between two rows goes with the first.
    return [r for r, after in zip(rows, rows[1:] + [(end + 1, 0, 0)]) if r[0] < end and after[0] > start]


@dataclass
class Extracted:
    name: str
    kind: str  # the reader's kind: "md", "txt", "pdf", "docx", "xlsx", ... (rag.reading.extract.SUPPORTED)
    title: str
    text: str
    sections: list[Section]
    version: str
    page_starts: list[int] = field(default_factory=list)  # PDFs: offset where each page's text begins
    pages: int = 0
    empty_pages: int = 0  # PDF pages with no extractable text (scans)
    warnings: list[str] = field(default_factory=list)
    places: list[Place] = field(default_factory=list)  # in text order, not overlapping; [] for a format without
    ocr_words: list[OcrWord] = field(default_factory=list)  # in text order: the words that came from OCR
    ocr_pages: int = 0  # pages (or images) recognised by OCR, cached ones included

    def ocr_confidence(self, start: int, end: int) -> tuple[float, float] | None:
        """(mean, lowest) OCR confidence, 0-100, of the recognised words in [start, end); None when none is there."""
        if not self.ocr_words:
            return None
        i = bisect.bisect_left(self._ocr_ends, start + 1)
        found = []
        while i < len(self.ocr_words) and self.ocr_words[i].start < end:
            found.append(self.ocr_words[i].confidence)
            i += 1
        return (sum(found) / len(found), min(found)) if found else None

    @functools.cached_property
    def _ocr_ends(self) -> list[int]:
        return [w.end for w in self.ocr_words]

    def place_of(self, start: int, end: int) -> str:
        """Where [start, end) sits in the format's own terms: a sheet's A1 range, "slide 4", a message; "" when
        the format has no places of its own."""
        hits = self._places_in(start, end)
        rows = [p for p in hits if p.row]
        if rows:
            return a1_range(rows[0].label, rows[0].row, rows[-1].row, max(p.last_col for p in rows))
        labels = list(dict.fromkeys(p.label for p in hits))
        return labels[0] if len(labels) == 1 else f"{labels[0]} – {labels[-1]}" if labels else ""

    def row_marks(self, start: int, end: int) -> str:
        """The spreadsheet rows [start, end) touches, kept with a passage so that any part of it can be named
        later (`rows_place`): each row as "offset:row:last_col", its offset counted from `start` (0 for a row
        begun before it), space-separated, in text order. "" for a format whose places are not rows.

        >>> rows = [Place(0, 9, "Budget", row=14, last_col=6), Place(11, 20, "Budget", row=15, last_col=5)]
        >>> doc = Extracted(name="b.xlsx", kind="xlsx", title="b", text="Rent: 850\\n\\nRent: 900", sections=[],
        ...                 version="x", places=rows)
        >>> doc.row_marks(0, 20), doc.row_marks(11, 20)
        ('0:14:6 11:15:5', '0:15:5')
        """
        return " ".join(f"{max(0, p.start - start)}:{p.row}:{p.last_col}" for p in self._places_in(start, end) if p.row)

    def _places_in(self, start: int, end: int) -> list[Place]:
        if not self.places:
            return []
        i = max(0, bisect.bisect_right(self._place_starts, start) - 1)
        hits = []
        while i < len(self.places) and self.places[i].start < end:
            if self.places[i].end > start:
                hits.append(self.places[i])
            i += 1
        return hits

    @functools.cached_property
    def _place_starts(self) -> list[int]:
        return [p.start for p in self.places]

    def page_at(self, offset: int) -> int | None:
        """1-based page holding `offset`, or None for text documents."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))


def clean_heading(text: str) -> str:
    """A heading as a chunk's header holds it: short and free of Markdown decoration, but as the document writes
    its words. An underscore inside a word is part of it ("push_str"; a CSV named congressional_resignations.csv
    read as "congressionalresignations" on every card); at a word's edge it is emphasis.

    >>> clean_heading("Appending with `push_str` or *push*")
    'Appending with push_str or push'
    >>> clean_heading("_The_ __budget__ of congressional_resignations")
    'The budget of congressional_resignations'
    """
    text = re.sub(r"[*`]+", "", text)
    text = re.sub(r"(?<![^\W_])_+|_+(?![^\W_])", "", text)  # underscores at a word's edge, not inside one
    text = " ".join(text.split())  # a setext heading may span several lines
    return text[:TITLE_MAX].rstrip()


def title_from_first_line(text: str, name: str) -> tuple[str, int]:
    """(title, offset where the body starts). A title is a short first line; never a paragraph."""
    stripped = text.lstrip("\n")
    lead = len(text) - len(stripped)
    first, sep, rest = stripped.partition("\n")
    line = first.strip().lstrip("#").strip()
    # A short line standing alone (followed by a blank line, or the rest) reads as a title.
    if line and len(line) <= TITLE_MAX and sep and rest.strip() and (rest.startswith("\n") or len(line) <= 60) \
            and not line.endswith((".", ",", ";", ":")):
        return clean_heading(line), lead + len(first) + 1
    return Path(name).stem.replace("_", " ").replace("-", " ").strip() or Path(name).name, 0



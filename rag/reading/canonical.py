"""The canonical text of a structured format, laid out one way for every reader: headings, paragraphs, tables,
spreadsheet rows and places, appended in reading order.

A reader of a format with structure (Word, OpenDocument, a web page, an e-book, slides, a spreadsheet, e-mail)
walks its file and tells a `Canonical` what it meets; `build()` returns the `Extracted` the chunker, the
citations and the viewer rely on. The layout is the one the Markdown reader's files have, so the chunker treats
every format alike:

- a block (a paragraph, a list item, a footnote) is its text, with blank lines between blocks, so the chunker
  packs whole blocks into passages and never cuts one that fits;
- a heading is a line of its own that ends the section before it and names the next: a section's path is the
  headings above it, outermost first (`level` 1 is outermost); the heading's line is in the text but in no
  section, as in Markdown, so no passage quotes it and every passage's header names it;
- a table is a pipe table (`| a | b |`, its header row, a `| --- |` line, then its rows), which the chunker
  splits into rows, each carrying the header line, when the table is longer than a passage;
- a spreadsheet row is one line, each cell read with its column's header ("Month: March | Rent: 850"), and a
  block of its own, so no passage cuts a row; each row is a `Place` (its sheet, number and last column), so a
  passage's place is its sheet and A1 range (`Budget!A14:F16`);
- `place(label)` marks what is appended inside it as one place ("slide 4", an e-mail message).

Every offset is counted as the text is written, and `build()` checks the invariant the whole app rests on: every
section and place is a range of the text.

What it does not do: read any file (the readers do), or guess structure from the text (a reader says what it
met).

>>> c = Canonical("guide.docx", max_chars=10_000)
>>> c.heading("Garden guide", 1); c.paragraph("Tomatoes need sun.")
(14, 32)
>>> c.heading("Soil", 2); c.table([["Plant", "Soil"], ["Tomato", "loam"]])
(40, 88)
>>> doc = c.build(kind="docx", title="Garden", version="docx-1")
>>> print(doc.text)
Garden guide
<BLANKLINE>
Tomatoes need sun.
<BLANKLINE>
Soil
<BLANKLINE>
| Plant | Soil |
| --- | --- |
| Tomato | loam |
>>> [(s.path, doc.text[s.start:s.end]) for s in doc.sections]
[(('Garden guide',), 'Tomatoes need sun.'), (('Garden guide', 'Soil'), '| Plant | Soil |\\n| --- | --- |\\n| Tomato | loam |')]
>>> c = Canonical("b.xlsx", max_chars=10_000); c.heading("Budget", 1)
>>> spans = c.row("Budget", 2, ["Month", "Rent"], ["March", "850"]), c.row("Budget", 3, ["Month", "Rent"], ["April", ""])
>>> doc = c.build(kind="xlsx", title="b", version="xlsx-1")
>>> doc.text.split("\\n\\n")[1:], doc.place_of(0, len(doc.text))
(['Month: March | Rent: 850', 'Month: April'], 'Budget!A2:B3')
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator, Sequence

from rag.reading.document import ExtractionError, Extracted, Place, Section, clean_heading

# Characters no document means to show: C0 controls but tab and line feed, DEL, and the C1 controls.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BLANKS = re.compile(r"[ \t\u00a0]+")
_CELL = re.compile(r"\s+")


def clean_block(text: str) -> str:
    """A block's text as the canonical text holds it: no control characters, runs of spaces one space, lines
    trimmed, no blank line inside (a blank line ends a block).

    >>> clean_block("  Rent\\u00a0 is   due\\r\\n\\n\\n on the 1st. \\x0c")
    'Rent is due\\non the 1st.'
    """
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = (_BLANKS.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def clean_cell(text: str) -> str:
    """A table cell on one line, its pipes escaped as Markdown writes them (a cell's `|` is not a column)."""
    return _CELL.sub(" ", _CONTROL.sub("", str(text))).strip().replace("|", "\\|")


def sheet_table(text: str) -> tuple[list[str], list[list[str]]]:
    """Spreadsheet rows as `Canonical.row` wrote them ("Month: March | Rent: 850", one a block) read back as a
    table: (header, rows), the header the columns' names in the order first met, each row's cells under them
    ("" where a row left a cell empty). A block of bare cells ("Month | Rent", the sheet's header row: each cell
    is its own header) gives the header only. For showing a cited row under its header; the canonical text stays
    what is indexed and quoted.

    >>> sheet_table("Month | Rent\\n\\nMonth: March | Rent: 850 | Paid\\n\\nMonth: April | Note: late: 2 days")
    (['Month', 'Rent', 'Paid', 'Note'], [['March', '850', 'Paid', ''], ['April', '', '', 'late: 2 days']])
    """
    header: list[str] = []
    rows: list[dict[str, str]] = []
    for block in (b for b in text.split("\n\n") if b.strip()):
        cells = [part.partition(": ") for part in block.split(" | ")]
        pairs = [(head, value) if sep else (head, head) for head, sep, value in cells]
        header += [h for h, _ in pairs if h not in header]
        if any(sep for _, sep, _ in cells):  # a row of values, not the header row's bare names
            rows.append(dict(pairs))
    return header, [[r.get(h, "") for h in header] for r in rows]


class Canonical:
    """Builds one document's canonical text from a reader's walk through its file (see the module's doc)."""

    def __init__(self, name: str, *, max_chars: int):
        self.name = name
        self.max_chars = max_chars  # reading stops there, with a reason: a huge file costs bounded memory and time
        self._parts: list[str] = []
        self._len = 0
        self._sections: list[Section] = []
        self._places: list[Place] = []
        self._heads: list[tuple[int, str]] = []  # the open headings: (level, text), outermost first
        self._body = 0  # where the open section's body starts
        self._place: tuple[str, int] | None = None  # the open place: (label, where it starts)
        self._header: tuple[str, ...] = ()  # the last spreadsheet header seen, as shown
        self._header_given: object = None  # ... and as the reader gave it
        self.first_heading = ""

    # --- what a reader meets ---------------------------------------------------------------------------------

    def heading(self, text: str, level: int = 1) -> None:
        """A heading: the section before it ends, the next is named by it (and the open headings above it)."""
        text = clean_heading(clean_block(text))
        if not text:
            return
        self._close_section()
        self._append(text)
        self._heads = [h for h in self._heads if h[0] < level] + [(level, text)]
        self.first_heading = self.first_heading or text
        self._body = self._len

    def paragraph(self, text: str) -> tuple[int, int] | None:
        """A block of text; returns its range in the canonical text (None when it held nothing)."""
        return self._append(clean_block(text))

    def aside(self, text: str) -> tuple[int, int] | None:
        """A block in the text but in no section, so no passage quotes it: an e-mail's header lines, which the
        message's heading and place already name (an extractive answer would otherwise quote "Date: …")."""
        self._close_section()
        span = self._append(clean_block(text))
        self._body = self._len
        return span

    def table(self, rows: Sequence[Sequence[str]]) -> tuple[int, int] | None:
        """A table, its first row the header, as a pipe table; rows of a single cell are paragraphs."""
        rows = [[clean_cell(c) for c in r] for r in rows]
        rows = [r for r in rows if any(r)]
        if not rows:
            return None
        if max(len(r) for r in rows) == 1:
            spans = [self.paragraph(r[0]) for r in rows]
            spans = [s for s in spans if s]
            return (spans[0][0], spans[-1][1]) if spans else None
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "| " + " | ".join(["---"] * width) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return self._append("\n".join(lines))

    def row(self, sheet: str, number: int, header: Sequence[str], cells: Sequence[str]) -> tuple[int, int] | None:
        """A spreadsheet's row `number` (1-based) of sheet `sheet`, each cell with its column's header; empty
        cells are left out of the text (the row's place still spans all its columns)."""
        shown = [str(c).strip() for c in cells]
        while shown and not shown[-1]:
            shown.pop()
        if not any(shown):
            return None
        parts = []
        for i, value in enumerate(shown):
            if value:
                head = header[i].strip() if i < len(header) and header[i] else ""
                parts.append(f"{head}: {value}" if head and head != value else value)
        line = " | ".join(parts)
        if not line.isprintable() or "  " in line:  # rare; the regular expressions were a tenth of a sheet's time
            line = _CELL.sub(" ", _CONTROL.sub("", line))
        span = self._append(line)
        if span:
            if header is not self._header_given:  # one tuple for all of a sheet's rows: a 100,000-row sheet holds it once
                self._header_given, self._header = header, tuple(str(h).strip() for h in header)
            self._places.append(Place(span[0], span[1], sheet, row=number, last_col=len(shown), cells=tuple(shown),
                                      header=self._header))
        return span

    @contextlib.contextmanager
    def place(self, label: str) -> Iterator[None]:
        """What is appended inside is one place of the file ("slide 4", a message)."""
        self._place = (label, self._len)
        try:
            yield
        finally:
            label, start = self._place
            self._place = None
            if self._len > start:
                first = start + 2 if start else 0  # the blank line before the place's first block is not in it
                self._places.append(Place(first, self._len, label))

    @property
    def chars(self) -> int:
        return self._len

    # --- the document ----------------------------------------------------------------------------------------

    def build(self, *, kind: str, title: str, version: str, **extra) -> Extracted:
        """The document; `title` "" takes the first heading, else the file's name."""
        self._close_section()
        text = "".join(self._parts)
        sections = [s for s in self._sections if text[s.start:s.end].strip()]
        for s in sections:
            assert 0 <= s.start < s.end <= len(text), (s, len(text))
        title = clean_heading(title) or self.first_heading or self.name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        places = sorted(self._places, key=lambda p: p.start)
        return Extracted(name=self.name, kind=kind, title=title, text=text, sections=sections, version=version,
                         places=places, **extra)

    # --- the text --------------------------------------------------------------------------------------------

    def _append(self, block: str) -> tuple[int, int] | None:
        if not block:
            return None
        if self._len + len(block) + 2 > self.max_chars:
            raise ExtractionError(f"the document has more than {self.max_chars:,} characters of text; the limit is "
                                  f"{self.max_chars:,} (max_chars): reading stopped there")
        if self._len:
            self._parts.append("\n\n")
            self._len += 2
        start = self._len
        self._parts.append(block)
        self._len += len(block)
        return start, self._len

    def _close_section(self) -> None:
        if self._len > self._body:
            start = self._body + 2 if self._body else 0  # past the blank line after the heading
            if start < self._len:
                self._sections.append(Section(start, self._len, tuple(h[1] for h in self._heads)))
        self._body = self._len

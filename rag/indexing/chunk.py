"""Chunk: cut an extracted document into passages that each carry two texts.

`Chunk.content` is the document's own words, `extracted.text[start:end]` exactly: that is what a
citation quotes. `Chunk.text` is what gets embedded and indexed: a `[Title > Section]` header line
(the quote is the content alone: the header is not in the document at that spot), for a table row cut off from its table the table's header line, then the content.

The default strategy "E" cuts at boundaries: sections, then whole paragraphs packed up to the
budget (512 characters), and only a paragraph longer than the budget is split, at sentence ends (a table
into its rows, one chunk each, and a sentence longer than the budget at a space). The other strategies
exist to measure that choice: A blind 512-character cuts, B blind + 64 overlap, C boundaries, D boundaries
+ overlap, E boundaries + header, F boundaries + header + overlap.

Offsets are found, never accumulated (summing lengths drifts where whitespace was normalised): every span is a slice of the canonical text.

>>> from rag.reading.extract import extract_bytes
>>> doc = extract_bytes(b"# Guide\\n\\n## Limits\\n\\nUploads stop at 50 MB.\\n", "guide.md")
>>> [c.text for c in chunk_document(doc, "d1")]
['[Guide > Limits]\\nUploads stop at 50 MB.']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.reading.document import Extracted
from rag.text.words import every

# Not bumped when a chunk began keeping a sheet's rows (`Chunk.rows`): other formats' chunks did not change, and a
# bump would embed every document again; the sheet readers' versions were bumped instead (rag.reading.sheets).
CHUNKER_VERSION = "chunk-3"  # 2: no sentence end after "U.S.", "Dr.", an initial; 3: a long table's rows apart
HEADER_MAX = 120  # characters; a header is a signpost, not a paragraph


@dataclass(frozen=True)
class Strategy:
    name: str
    boundaries: bool = True
    header: bool = True
    overlap: int = 0
    budget: int = 512

    @property
    def version(self) -> str:
        return f"{CHUNKER_VERSION}/{self.name}/{self.budget}"


_STRATEGIES = {
    "A": dict(boundaries=False, header=False, overlap=0),
    "B": dict(boundaries=False, header=False, overlap=64),
    "C": dict(boundaries=True, header=False, overlap=0),
    "D": dict(boundaries=True, header=False, overlap=64),
    "E": dict(boundaries=True, header=True, overlap=0),
    "F": dict(boundaries=True, header=True, overlap=64),
}


def strategy(name: str = "E", budget: int = 512) -> Strategy:
    """The named strategy. `ValueError` lists the valid names."""
    if name not in _STRATEGIES:
        raise ValueError(f"unknown chunk strategy {name!r}; choose one of {', '.join(_STRATEGIES)}")
    return Strategy(name=name, budget=budget, **_STRATEGIES[name])


@dataclass(frozen=True)
class Chunk:
    id: str
    doc_id: str
    index: int
    text: str  # embedded: header line(s) + content
    content: str  # quoted: the document's own words
    start: int
    end: int
    section: str
    page: int | None = None
    page_end: int | None = None
    place: str = ""  # where it sits in the format's own terms: "Budget!A14:F16", "slide 4", a message ("" if none)
    # A sheet's passage: its rows, "offset:row:last_col" each, offsets from `start` (`Extracted.row_marks`), so a
    # citation can name the rows of the part it quotes (`rag.reading.document.rows_place`); "" for other formats.
    rows: str = ""
    ocr: tuple[float, float] | None = None  # (mean, lowest) confidence of its words that came from OCR; None: none did

    @property
    def header_len(self) -> int:
        return len(self.text) - len(self.content)


def header_for(title: str, path: tuple[str, ...]) -> str:
    """`[Title > Section > Sub]`, capped at HEADER_MAX characters by shortening the longest parts."""
    parts = [p for p in (title, *path) if p]
    while len(" > ".join(parts)) + 2 > HEADER_MAX:
        i = max(range(len(parts)), key=lambda k: len(parts[k]))
        if len(parts[i]) <= 8:
            break
        parts[i] = parts[i][: max(8, len(parts[i]) - 12)].rstrip() + "…"
    return "[" + " > ".join(parts) + "]"


def chunk_document(doc: Extracted, doc_id: str, how: Strategy | str = "E") -> list[Chunk]:
    how = strategy(how) if isinstance(how, str) else how
    spans = _blind_spans(doc, how) if not how.boundaries else _boundary_spans(doc, how)
    chunks = []
    # A slide's or a message's place is in the embedded header too ("slide 4", 'message "Rent" from Ana, 2024-05-03'):
    # a question may name the sender or the slide. A sheet's range is not: "Budget!A14:F16" is no words.
    named = bool(doc.places) and not doc.places[0].row
    for i, (start, end, path, table_head) in enumerate(spans):
        content = doc.text[start:end]
        place = doc.place_of(start, end)
        prefix = header_for(doc.title, path) + (f" {place}" if named and place else "") + "\n" if how.header else ""
        if table_head:
            prefix += table_head + "\n"
        chunks.append(Chunk(
            id=f"{doc_id}-{i:05d}", doc_id=doc_id, index=i, text=prefix + content, content=content,
            start=start, end=end, section=" > ".join(path),
            page=doc.page_at(start), page_end=doc.page_at(end - 1), place=place, rows=doc.row_marks(start, end),
            ocr=doc.ocr_confidence(start, end),
        ))
    return chunks


# --- spans --------------------------------------------------------------------------------------------

_Span = tuple[int, int, tuple[str, ...], str]  # start, end, section path, table header to repeat


def _section_at(doc: Extracted, offset: int) -> tuple[str, ...]:
    path: tuple[str, ...] = ()
    for s in doc.sections:
        if s.start <= offset:
            path = s.path
    return path


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _blind_spans(doc: Extracted, how: Strategy) -> list[_Span]:
    out: list[_Span] = []
    text, step = doc.text, how.budget
    for cut in range(0, len(text), step):
        start = max(0, cut - how.overlap)
        s, e = _trim(text, start, min(len(text), cut + step))
        if s < e:
            out.append((s, e, _section_at(doc, s), ""))
    return out


_PARA_BREAK = re.compile(r"\n[ \t]*\n")
# A sentence ends at . ! ? or … (plus closing quotes/brackets) before white space; lines end units too.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*[ \t]+|\n")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}")


def _split(pattern: re.Pattern, text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Trimmed, non-blank spans of text[start:end] between the pattern's matches."""
    out, pos = [], start
    for m in pattern.finditer(text, start, end):
        s, e = _trim(text, pos, m.end())  # the separator is white space (and closing marks) that trimming drops
        if s < e:
            out.append((s, e))
        pos = m.end()
    s, e = _trim(text, pos, end)
    if s < e:
        out.append((s, e))
    return out


def paragraphs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Non-blank paragraph spans of text[start:end], trimmed."""
    return _split(_PARA_BREAK, text, start, end)


def sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence (or line) spans of text[start:end], trimmed. A full stop after an abbreviation or an
    initial, or before a word in lower case, does not end a sentence ("eight U.S. presidents", "Dr. Smith").

    >>> t = "One. Two? Three"
    >>> [t[s:e] for s, e in sentences(t)]
    ['One.', 'Two?', 'Three']
    >>> t = 'He said "stop." Then left.'
    >>> [t[s:e] for s, e in sentences(t)]
    ['He said "stop."', 'Then left.']
    """
    spans = _split(_SENTENCE_END, text, start, len(text) if end is None else end)
    return _joined(spans, lambda a, b: _false_end(text, a, b))


def _joined(spans: list[tuple[int, int]], join) -> list[tuple[int, int]]:
    """`spans` with each one merged into the one before when `join(end of that one, its start)` holds."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and join(out[-1][1], s):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


# Words that end with a full stop without ending the sentence, folded ("Dr. Smith", "U.S. Army", "Sra. Lima").
_ABBREVIATIONS = frozenset(every("abbreviations"))
_LAST_WORD = re.compile(r"(\w+(?:\.\w+)*)\.$")


def _false_end(text: str, end: int, start: int) -> bool:
    """Whether the full stop that closes text[:end] does not end a sentence, the next one starting at
    `start` on the same line: the next word starts in lower case ("eight U.S. presidents"), or the word
    before the stop is a known abbreviation ("Dr. Smith") or an initial before a name ("John F. Kennedy").

    >>> t = "Alumni include eight U.S. presidents. Dr. Smith met John F. Kennedy. It rained."
    >>> [t[s:e] for s, e in sentences(t)]
    ['Alumni include eight U.S. presidents.', 'Dr. Smith met John F. Kennedy.', 'It rained.']
    >>> t = "Take vitamin D. The dose is small."
    >>> [t[s:e] for s, e in sentences(t)]
    ['Take vitamin D.', 'The dose is small.']
    """
    if text[end - 1:end] != "." or "\n" in text[end:start] or start >= len(text):
        return False
    if text[start].islower():
        return True
    m = _LAST_WORD.search(text, max(0, end - 40), end)
    if not m:
        return False
    word = m.group(1)
    if word.lower() in _ABBREVIATIONS:
        return True
    # An initial follows a capitalised word and comes before one: "John F. Kennedy", not "vitamin D. The".
    before = text[max(0, m.start() - 40):m.start()].split()
    return (len(word) == 1 and word.isupper() and text[start].isupper()
            and bool(before) and before[-1][:1].isupper())


# A line break that only wraps a sentence: the line before does not end one, the next goes on in lower case.
# Blank lines count too: a PDF that draws each line as a block of its own comes out with a blank line between.
_WRAP = re.compile(r"(?<=[^.!?…:;\s])[ \t]*\n(?:[ \t]*\n)?[ \t]*(?=[a-zà-ÿ])")


def prose_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    r"""Like `sentences`, but a line that wraps a sentence does not end it: PDF text breaks lines where the
    page did (one blank line between, when the PDF draws each line as a block), and hard-wrapped Markdown
    where the editor did. A line break ends a sentence when the line
    before ends with . ! ? … : or ; or the next line starts otherwise than in lower case (a heading, a list
    item, a page footer). For quoting whole sentences; the chunker keeps `sentences`.

    >>> t = "Why it refuses\nWhen nothing is close, it does not write an answer\nfrom weaker material. It says so."
    >>> [t[s:e] for s, e in prose_sentences(t)]
    ['Why it refuses', 'When nothing is close, it does not write an answer\nfrom weaker material.', 'It says so.']
    >>> t = "a wrapped line\n\ngoes on. A paragraph\n\nNext paragraph."
    >>> [t[s:e] for s, e in prose_sentences(t)]
    ['a wrapped line\n\ngoes on.', 'A paragraph', 'Next paragraph.']
    """
    def wrapped(a: int, b: int) -> bool:  # the gap between two sentences is only a wrap
        m = _WRAP.match(text, a)
        return m is not None and m.end() == b

    return _joined(sentences(text, start, end), wrapped)


def unwrap(text: str) -> str:
    r"""`text` with each line break that only wraps a sentence (as `prose_sentences` finds them) made one space,
    for showing a passage as prose; other line breaks (headings, list items, paragraphs) stay.

    >>> unwrap("Why it refuses\n\nWhen nothing is close, it does not write an answer\n\nfrom weaker material.")
    'Why it refuses\n\nWhen nothing is close, it does not write an answer from weaker material.'
    """
    return _WRAP.sub(" ", text)


def _hard_cuts(text: str, s: int, e: int, budget: int) -> list[tuple[int, int]]:
    out = []
    while e - s > budget:
        cut = text.rfind(" ", s + budget // 2, s + budget)
        cut = cut if cut > s else s + budget
        a, b = _trim(text, s, cut)
        if a < b:
            out.append((a, b))
        s, _ = _trim(text, cut, e)
    if s < e:
        out.append((s, e))
    return out


def _table_rows(text: str, s: int, e: int) -> tuple[list[tuple[int, int]], str] | None:
    lines, pos = [], s
    for line in text[s:e].split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    if len(lines) < 3 or not all(text[a:b].lstrip().startswith("|") for a, b in lines):
        return None
    if not _TABLE_SEP.match(text[lines[1][0]:lines[1][1]]):
        return None
    head = text[lines[0][0]:lines[1][1]]
    rows = [(lines[0][0], lines[2][1])] + lines[3:]  # the header goes with the first row
    return rows, head


def _boundary_spans(doc: Extracted, how: Strategy) -> list[_Span]:
    text, budget = doc.text, how.budget
    out: list[_Span] = []
    for sec in doc.sections:
        # Units: a whole paragraph when it fits, else its pieces (rows, sentences, hard cuts).
        units: list[tuple[int, int, object, str]] = []  # start, end, paragraph (-1: whole; (no., row)), table head
        for p, (ps, pe) in enumerate(paragraphs(text, sec.start, sec.end)):
            if pe - ps <= budget:
                units.append((ps, pe, -1, ""))
                continue
            table = _table_rows(text, ps, pe)
            if table:
                rows, head = table
                # A row of a table too long for one chunk is a record of its own: one chunk per row, each
                # embedding the table's header line (the first holds it). Packed four to a chunk, the rows
                # of an error-code table put "What does ERR-4017 mean?" at 0.843 from its row; alone, 0.693.
                units.extend((a, b, (p, i), head if i else "") for i, (a, b) in enumerate(rows))
                continue
            for a, b in sentences(text, ps, pe):
                units.extend((x, y, p, "") for x, y in _hard_cuts(text, a, b, budget))
        sec_spans: list[_Span] = []
        cur: list[tuple[int, int, object, str]] = []
        for u in units:
            if cur and u[1] - cur[0][0] <= budget and (u[2] == cur[-1][2]):
                cur.append(u)
                continue
            if cur:
                sec_spans.append(_pack(cur, sec.path))
            cur = [u]
        if cur:
            sec_spans.append(_pack(cur, sec.path))
        if how.overlap:
            sec_spans = _with_overlap(text, sec_spans, how.overlap)
        out.extend(sec_spans)
    return out


def _pack(units: list[tuple[int, int, object, str]], path: tuple[str, ...]) -> _Span:
    # A table row cut off from its header carries the header line in its embedded text.
    return units[0][0], units[-1][1], path, units[0][3]


def _with_overlap(text: str, spans: list[_Span], overlap: int) -> list[_Span]:
    out = spans[:1]
    for prev, (s, e, path, head) in zip(spans, spans[1:]):
        start = max(prev[0], prev[1] - overlap)
        # Start the overlap on a word, not in the middle of one.
        while start < s and not text[start - 1].isspace():
            start += 1
        start, _ = _trim(text, start, e)
        out.append((min(start, s), e, path, head))
    return out

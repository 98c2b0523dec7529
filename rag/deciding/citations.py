"""Citations, and the citation check: how a kept passage is cited, and whether an answer cites only the
sources it was given, and every claim.

`cite(kept)` numbers the passages the gate kept 1..k. Each `Citation` quotes the chunk's own content (never
its embedded header) and points into the file (`fragment`): `#char=start,end` for text, `#page=N` for
PDFs; `locator` says where the passage sits in words.

An answer (extractive or written by an LLM) ends each claim with a marker such as `[1]`, `[2, 4]` or
`[1][3]`. `check_citations(text, given)` reads the answer's sentences (`answer_sentences`) and the
numbers they cite (`cited_numbers`), and returns a `CitationCheck`: numbers outside the given sources
(they must get no link), sentences that cite nothing, links the generator wrote itself, and whether
the answer is the fixed no-answer sentence (`is_no_answer`), which makes it a refusal.

>>> check = check_citations("Uploads may be 50 MB [1]. PDFs may have 2,000 pages [7]. Bigger is fine.", [1, 2])
>>> check.cited, check.out_of_range, check.uncited
((1,), (7,), ('Bigger is fine.',))
>>> check.flags[0]
'[7] is not one of the sources (1\u20132): it has no link'
>>> check_citations("The documents do not contain the answer.", [1, 2]).refusal
True

What it does not do: decide which passages are evidence (rag.deciding.gate), write or change an answer, retrieve,
or render it (turning markers into links is
the app's job; `MARKER` is the pattern it needs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence
from urllib.parse import quote as urlquote

from rag.reading.document import rows_place
from rag.searching.search import Candidate
from rag.text.lexical import fold

# The one sentence an LLM must reply with when the sources do not hold the answer.
NO_ANSWER_SENTENCE = "The documents do not contain the answer."

_NUMS = r"\d+(?:\s*,\s*\d+)*"
MARKER = re.compile(rf"\[\s*({_NUMS})\s*\]")  # a citation marker; group 1: its numbers, "2, 4"
# A sentence ends at . ! ? or … (with any closing quote or emphasis), taking the markers written after it.
_SENT_END = re.compile(rf"[.!?…][\"'”’)*_]*(?:\s*\[\s*{_NUMS}\s*\])*(?=\s|$)")
# What a generator should never write: Markdown links, bare URLs, the app's own fragments.
_LINK = re.compile(r"\]\([^)]*\)|\bhttps?://\S+|\bwww\.\S+|#(?:char|page)=\d", re.IGNORECASE)
_HAS_WORD = re.compile(r"[^\W_]", re.UNICODE)


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: str
    doc_id: str
    doc_name: str
    title: str
    locator: str
    fragment: str
    link: str
    quote: str
    distance: float
    start: int
    end: int
    page: int | None
    section: str = ""  # the heading the passage sits under ("" when none)
    place: str = ""  # its place in the format's own terms ("Budget!A14:F16", "slide 4"; "" when the format has none)
    ocr_confidence: float | None = None  # its words' mean OCR confidence, 0-100, when they came from OCR (a scan)
    ocr_lowest: float | None = None  # the least confident of them
    version: str = ""  # the content hash of the document version quoted (the viewer checks it)
    # A passage in another language than the question's: its multilingual distance, which judged it (None else).
    multilingual_distance: float | None = None
    rows: str = ""  # a sheet's passage: its rows, to name those of a part of it (`quoted_place`); "" else


def locator(c: Candidate) -> str:
    """Where a passage sits, for its citation: pages and section for a PDF; the format's own place (a sheet's A1
    range, a slide, a message) and the section when the place does not name it already; else the section (or title).
    A PDF with no headings has a section per page, named "Page N" (rag.reading.pdf): said once, not twice.

    >>> row = Candidate("c1", "d1", "b.xlsx", "", "Budget", "Rent: 850", 0, 9, None, None, "xlsx", 1, 0.1, 0.5, 1, 1, 1.0)
    >>> locator(replace(row, place="Budget!A14:F16")), locator(replace(row, place="slide 4", section="Results"))
    ('Budget!A14:F16', 'slide 4 · Results')
    """
    if c.place:
        return f"{c.place} · {c.section}" if c.section and c.section not in c.place else c.place
    if c.page is not None:
        pages = f"p. {c.page}" if c.page_end in (None, c.page) else f"pp. {c.page}–{c.page_end}"
        own = c.section and c.section != f"Page {c.page}"
        return f"{pages} · {c.section}" if own else pages
    return c.section or (c.title or "start of file")


def fragment(c: Candidate) -> str:
    return f"#page={c.page}" if c.page is not None else f"#char={c.start},{c.end}"


def cite(kept: Sequence[Candidate]) -> list[Citation]:
    """The kept passages as citations, numbered 1..k in the order kept."""
    return [Citation(n=i, chunk_id=c.chunk_id, doc_id=c.doc_id, doc_name=c.doc_name, title=c.title,
                     locator=locator(c), fragment=fragment(c), link=urlquote(c.doc_name) + fragment(c),
                     quote=c.content, distance=c.distance, start=c.start, end=c.end, page=c.page,
                     section="" if c.section == f"Page {c.page}" else c.section, place=c.place, version=c.version,
                     ocr_confidence=c.ocr_confidence, ocr_lowest=c.ocr_lowest,
                     multilingual_distance=c.side_distance if c.across else None, rows=c.rows)
            for i, c in enumerate(kept, start=1)]


def quoted_place(c: Candidate | Citation, start: int, end: int) -> str:
    """The place of the part [start, end) of a passage's content (offsets in `content`, or a citation's `quote`):
    for a sheet's passage, the A1 range of only the rows that part touches; for any other passage, and one
    indexed before passages kept their rows, the passage's own place (`rag.reading.document.rows_place`).

    >>> row = Candidate("c1", "d1", "b.xlsx", "", "Budget", "Month | Fee\\n\\nMonth: May | Fee: 12", 0, 33, None,
    ...                 None, "xlsx", 1, 0.1, 0.5, 1, 1, 1.0, place="Budget!A1:B2", rows="0:1:2 13:2:2")
    >>> quoted_place(row, 13, 33), quoted_place(replace(row, rows=""), 13, 33)
    ('Budget!A2:B2', 'Budget!A1:B2')
    """
    return rows_place(c.place, c.rows, start, end)


def as_quoted(citations: Sequence[Citation], quoted: Sequence[tuple[int, int, int]]) -> list[Citation]:
    """The citations, each one whose quoted parts are known (`quoted`: (n, start, end), offsets in citation
    n's quote) placed at only the rows those parts touch: its `place` and `locator` name them ("Budget!A3:C3"
    in a passage of "Budget!A1:C5"). Its quote, offsets and link stay the whole passage's. A citation with no
    part quoted, or whose place is not a sheet's rows, is returned as it is.

    >>> c = cite([Candidate("c1", "d1", "b.xlsx", "", "Budget", "Month | Fee\\n\\nMonth: May | Fee: 12", 0, 33,
    ...                     None, None, "xlsx", 1, 0.1, 0.5, 1, 1, 1.0, place="Budget!A1:B2", rows="0:1:2 13:2:2")])
    >>> [(q.place, q.locator) for q in as_quoted(c, [(1, 13, 33)])]
    [('Budget!A2:B2', 'Budget!A2:B2')]
    """
    out = []
    for c in citations:
        spans = [(s, e) for n, s, e in quoted if n == c.n]
        place = quoted_place(c, min(s for s, _ in spans), max(e for _, e in spans)) if spans else c.place
        if place != c.place and c.locator.startswith(c.place):
            # The locator is the place and, where the place does not name it, the section after it.
            c = replace(c, place=place, locator=place + c.locator[len(c.place):])
        out.append(c)
    return out


@dataclass(frozen=True)
class CitationCheck:
    """What the citation check found in one answer."""

    given: tuple[int, ...]  # source numbers the generator was given
    cited: tuple[int, ...]  # valid numbers the answer cites, in order of first use
    out_of_range: tuple[int, ...]  # numbers cited that are not sources: no link
    uncited: tuple[str, ...]  # sentences that cite nothing
    refusal: bool  # the answer is the fixed no-answer sentence
    mixed_refusal: bool = False  # the no-answer sentence next to other text
    links: int = 0  # links or URLs the generator wrote itself (it should write only [n]; the app adds links)

    @property
    def ok(self) -> bool:
        return not self.flags

    @property
    def flags(self) -> list[str]:
        """One line a person can read per problem, shown beside the answer."""
        out = []
        span = numbers_text(self.given)
        for n in self.out_of_range:
            out.append(f"[{n}] is not one of the sources ({span}): it has no link")
        for s in self.uncited:
            out.append(f"no citation: \u201c{_short(s)}\u201d")
        if self.mixed_refusal:
            out.append("the no-answer sentence stands next to other text")
        if self.links:
            out.append(f"{self.links} link(s) written by the generator; only citations carry links")
        return out


def answer_sentences(text: str) -> list[str]:
    """The sentences of an answer, each keeping the markers written right after its full stop; markers
    alone (on a line of their own, say) join the sentence before them.

    >>> answer_sentences("One [1]. Two. [2] Three")
    ['One [1].', 'Two. [2]', 'Three']
    >>> answer_sentences("Uploads are copied.\\n[1]")
    ['Uploads are copied. [1]']
    """
    out: list[str] = []
    for line in text.splitlines():
        pos = 0
        pieces = []
        for m in _SENT_END.finditer(line):
            pieces.append(line[pos:m.end()])
            pos = m.end()
        pieces.append(line[pos:])
        for p in pieces:
            p = p.strip()
            if not p:
                continue
            if not _HAS_WORD.search(MARKER.sub("", p)) and out:
                out[-1] += " " + p
            else:
                out.append(p)
    return out


def cited_numbers(text: str) -> list[int]:
    """Every number the markers cite, in order, repeats included.

    >>> cited_numbers("Both [2, 4]. Again [2][ 3 ]. Not a marker: [a].")
    [2, 4, 2, 3]
    """
    return [int(x) for m in MARKER.finditer(text) for x in m.group(1).split(",")]


def is_no_answer(text: str) -> bool:
    """The fixed no-answer sentence, give or take case, quotes, emphasis, spacing and markers.

    >>> is_no_answer('  "the documents do not contain the answer" [1]')
    True
    >>> is_no_answer("The documents do not contain the answer about PDFs.")
    False
    """
    return _norm(MARKER.sub("", text)) == _norm(NO_ANSWER_SENTENCE)


def check_citations(text: str, given: Sequence[int], quoted: Sequence[tuple[int, int]] = ()) -> CitationCheck:
    """Flag numbers outside the given sources and sentences that cite nothing; recognise the refusal.

    `quoted`: spans of the text that are verbatim quotes (the extractive answer's sentences); what is
    inside them is the document's, so brackets or links there are not the generator's. Exempt from
    "no citation": the no-answer sentence, Markdown headings, lines that only introduce a list (ending
    in ':'), and pieces without a word (rules, bullets).
    """
    valid = set(given)
    given_t = tuple(sorted(valid))
    if is_no_answer(text):
        return CitationCheck(given_t, (), (), (), refusal=True)
    text = _mask(text, quoted)
    cited, bad = [], []
    for n in cited_numbers(text):
        target = cited if n in valid else bad
        if n not in target:
            target.append(n)
    uncited, mixed = [], False
    for s in answer_sentences(text):
        if is_no_answer(s):
            mixed = True
            continue
        bare = MARKER.sub("", s).strip()
        if MARKER.search(s) or not _HAS_WORD.search(bare) or bare.startswith("#") or bare.endswith(":"):
            continue
        uncited.append(s)
    return CitationCheck(given_t, tuple(cited), tuple(bad), tuple(uncited), refusal=False, mixed_refusal=mixed,
                         links=len(_LINK.findall(text)))


def numbers_text(ns: Sequence[int]) -> str:
    """Source numbers for a message: a run as "1–4", anything else listed.

    >>> numbers_text([3, 1, 2]), numbers_text([1, 3]), numbers_text([2]), numbers_text([])
    ('1\u20133', '1, 3', '2', 'none')
    """
    ns = sorted(ns)
    if not ns:
        return "none"
    if ns == list(range(ns[0], ns[-1] + 1)) and len(ns) > 1:
        return f"{ns[0]}\u2013{ns[-1]}"
    return ", ".join(str(n) for n in ns)


# A quote is replaced by a short sentence of plain words: brackets or links inside it are the document's,
# not the generator's, and the marker written after the quote still ends the same sentence.
_QUOTE_STANDIN = "Quoted."


def _mask(text: str, quoted: Sequence[tuple[int, int]]) -> str:
    out, pos = [], 0
    for s, e in sorted(quoted):
        out += [text[pos:s], _QUOTE_STANDIN]
        pos = e
    return "".join(out) + text[pos:]


def _norm(text: str) -> str:
    t = fold(text).strip().strip("\"'“”‘’*_ `").rstrip(".").strip()
    return " ".join(t.split())


def _short(s: str, n: int = 90) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "\u2026"

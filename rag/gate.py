"""Gate and cite: which candidates may be used as evidence, and how each is cited.

The gate is the only part of the engine that can say no (DESIGN.md rule 8). It keeps, in fused order,
at most `max_chunks` candidates whose cosine distance is at or under the threshold; when none passes,
the result is a refusal that names the threshold and the question, and carries the closest candidate
so the person can see how far off it was. It never searches: moving the threshold re-gates the same
candidates.

Citations number the kept chunks 1..k. Each quotes the chunk's own content (never its embedded header)
and points into the file: `#char=start,end` for text, `#page=N` for PDFs (rule 9).

>>> refusal_text(0.675, "What is the capital of Peru?")
'NO ANSWER: nothing under cosine distance 0.675 for "What is the capital of Peru?"'
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote as urlquote

from rag.search import Candidate, SearchResult
from rag.settings import REFUSAL_PREFIX

KEPT = "kept"
CAPPED = "under threshold, over cap"
OVER = "over threshold"


def refusal_text(threshold: float, question: str) -> str:
    return f'{REFUSAL_PREFIX}: nothing under cosine distance {threshold:.3f} for "{question}"'


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


@dataclass
class Gated:
    question: str
    threshold: float
    max_chunks: int
    candidates: list[Candidate]
    verdicts: list[str]  # one per candidate, in fused order
    citations: list[Citation]
    refusal: str | None
    closest: Candidate | None

    @property
    def kept(self) -> list[Candidate]:
        return [c for c, v in zip(self.candidates, self.verdicts) if v == KEPT]

    @property
    def needed_threshold(self) -> float | None:
        """The smallest threshold that would let the closest candidate through."""
        return self.closest.distance if self.closest else None


def gate(result: SearchResult, threshold: float, max_chunks: int = 4) -> Gated:
    verdicts, kept = [], []
    for c in result.candidates:
        if c.distance > threshold:
            verdicts.append(OVER)
        elif len(kept) < max_chunks:
            verdicts.append(KEPT)
            kept.append(c)
        else:
            verdicts.append(CAPPED)
    closest = min(result.candidates, key=lambda c: c.distance, default=None)
    return Gated(question=result.question, threshold=threshold, max_chunks=max_chunks,
                 candidates=result.candidates, verdicts=verdicts, citations=cite(kept),
                 refusal=None if kept else refusal_text(threshold, result.question), closest=closest)


def locator(c: Candidate) -> str:
    if c.page is not None:
        pages = f"p. {c.page}" if c.page_end in (None, c.page) else f"pp. {c.page}–{c.page_end}"
        return f"{pages} · {c.section}" if c.section else pages
    return c.section or (c.title or "start of file")


def fragment(c: Candidate) -> str:
    return f"#page={c.page}" if c.page is not None else f"#char={c.start},{c.end}"


def cite(kept: list[Candidate]) -> list[Citation]:
    return [Citation(n=i, chunk_id=c.chunk_id, doc_id=c.doc_id, doc_name=c.doc_name, title=c.title,
                     locator=locator(c), fragment=fragment(c), link=urlquote(c.doc_name) + fragment(c),
                     quote=c.content, distance=c.distance, start=c.start, end=c.end, page=c.page)
            for i, c in enumerate(kept, start=1)]

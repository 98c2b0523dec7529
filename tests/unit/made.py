"""Hand-made search results for the fast tier: candidates with only what a test sets, no model, no folder.

>>> row(2, 0.4, support=0.5).doc_name, result(row(1, 0.2), question="Why?").candidates[0].fused_rank
('doc2.md', 1)
"""

from __future__ import annotations

from rag.searching.search import Candidate, SearchResult


def row(n: int, distance: float, **fields) -> Candidate:
    """The n-th candidate (fused, dense and BM25 rank n) of its own document, at `distance`."""
    return Candidate(f"c{n}", f"d{n}", f"doc{n}.md", "", f"Section {n}", f"passage {n}", 0, 10, None, None,
                     "text", n, 1.0 / n, distance, n, n, 1.0, **fields)


def result(*rows: Candidate, question: str = "q", **fields) -> SearchResult:
    """A search for `question` that found `rows`, in that order."""
    return SearchResult(question, fields.pop("query", question), list(rows), {}, **fields)

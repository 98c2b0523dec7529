"""The one interface every way of writing an answer implements: `generate(question, citations)` yields the
answer's text in pieces, citing the numbered passages as [n]. The extractive writer (`answer`) and the local
model server's (`prompt`) are the two there are.
"""

from __future__ import annotations

from typing import Iterator, Protocol

from rag.deciding.citations import Citation


class Generator(Protocol):
    name: str

    def generate(self, question: str, citations: list[Citation]) -> Iterator[str]: ...

"""Answer: turn the gate's citations into an answer whose every claim ends with its [n].

One small interface, `Generator.generate(question, citations)`, yields the answer's text in pieces (a
streaming backend yields as it receives). `answer()` is the only caller, and it never calls a generator
for a refusal: when the gate kept nothing, the refusal text is the answer (DESIGN.md rule 8).

The default, `ExtractiveGenerator`, writes nothing of its own: it scores every sentence of the kept
chunks against the question with the same embedding model, keeps the best few (no duplicates), and
prints them in citation order, and in document order within a chunk, each followed by its [n]. Every
character of its answer, apart from the markers and the joining spaces, is a character of a quote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Protocol

import numpy as np

from rag.chunk import sentences
from rag.embed import Embedder
from rag.gate import Citation, Gated
from rag.lexical import fold


@dataclass(frozen=True)
class ChosenSentence:
    n: int
    text: str
    score: float  # cosine similarity to the question
    start: int  # offsets in the citation's quote
    end: int


@dataclass
class Answer:
    text: str
    refused: bool
    mode: str
    chosen: list[ChosenSentence] = field(default_factory=list)
    note: str = ""  # e.g. why a fallback answered


class Generator(Protocol):
    name: str

    def generate(self, question: str, citations: list[Citation]) -> Iterator[str]: ...


class ExtractiveGenerator:
    name = "extractive"

    def __init__(self, embedder: Embedder, max_sentences: int = 3, min_words: int = 3):
        self.embedder = embedder
        self.max_sentences = max_sentences
        self.min_words = min_words
        self.last_chosen: list[ChosenSentence] = []

    def choose(self, question: str, citations: list[Citation]) -> list[ChosenSentence]:
        pool: list[tuple[int, int, int, str]] = []
        seen: set[str] = set()
        for c in citations:
            for s, e in sentences(c.quote):
                text = c.quote[s:e]
                key = " ".join(fold(text).split())
                if key in seen or len(text.split()) < self.min_words and len(sentences(c.quote)) > 1:
                    continue
                seen.add(key)
                pool.append((c.n, s, e, text))
        if not pool:
            return []
        vecs = self.embedder.embed_batch([question] + [p[3] for p in pool])
        sims = vecs[1:] @ vecs[0]
        chosen: list[ChosenSentence] = []
        keys: list[str] = []
        for i in np.argsort(-sims, kind="stable"):
            key = " ".join(fold(pool[i][3]).split())
            # The same words twice (a PDF and its source, a sentence cut by a page break) say nothing new.
            if any(key in k or k in key for k in keys):
                continue
            keys.append(key)
            chosen.append(ChosenSentence(pool[i][0], pool[i][3], float(sims[i]), pool[i][1], pool[i][2]))
            if len(chosen) == self.max_sentences:
                break
        return sorted(chosen, key=lambda c: (c.n, c.start))

    def generate(self, question: str, citations: list[Citation]) -> Iterator[str]:
        self.last_chosen = self.choose(question, citations)
        for i, c in enumerate(self.last_chosen):
            yield ("" if i == 0 else " ") + f"{c.text} [{c.n}]"


def answer(gated: Gated, generator: Generator) -> Answer:
    """The answer for a gated search; a refusal never reaches the generator."""
    if gated.refusal is not None:
        return Answer(text=gated.refusal, refused=True, mode="refusal")
    text = "".join(generator.generate(gated.question, gated.citations))
    return Answer(text=text, refused=False, mode=generator.name, chosen=list(getattr(generator, "last_chosen", [])))

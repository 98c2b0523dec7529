"""The snapshot: what one search reads, built by the indexer whenever a document is published.

The chunks of documents that were completely indexed when it was built, with their texts, offsets, vectors
(each dense side's) and BM25 index. The engine swaps a snapshot whole on publish, and one search takes one
reference, so the quote, offsets, distance and BM25 score of every candidate describe one state. A snapshot
built to read the store (`search_reads = "store"`, rag.indexing.served) holds ids and BM25 only.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from rag.indexing.bm25 import LexicalIndex
from rag.indexing.served import StoredRows
from rag.indexing.store import StoredChunk
from rag.indexing.vectors import Cover, Graph, Graphs
from rag.settings import Settings
from rag.text.lexical import analyze


@dataclass
class Snapshot:
    """The searchable state at one moment: visible chunks, their vectors, BM25 index and documents."""

    chunks: Sequence[StoredChunk]  # a list, or the store's rows read on demand (rag.indexing.served.StoredRows)
    lexical: LexicalIndex
    docs: dict[str, tuple[str, str, str]]  # doc_id -> (path, title, kind)
    pos: dict[str, int] = field(default_factory=dict)
    doc_of: np.ndarray | None = None
    vectors: np.ndarray | None = None  # row i is chunks[i]'s stored vector: distances without a round trip
    side_vectors: np.ndarray | None = None  # row i is chunks[i]'s multilingual vector (None: the side is off)
    tokens: list[list[str]] | None = None  # row i is chunks[i]'s analysed text, as BM25 indexed it (feedback)
    versions: dict[str, str] = field(default_factory=dict)  # doc_id -> content hash of the indexed version
    graphs: Graphs | None = None  # each dense side's graph in a large folder (rag.indexing.vectors), shared by snapshots
    ids: list[str] = field(default_factory=list)  # row i is chunks[i].id
    langs: list[str] = field(default_factory=list)  # row i is chunks[i]'s language ("" when unclear)
    _covers: dict[str, tuple[Graph, Cover]] = field(default_factory=dict, repr=False)

    def graph_for(self, side: str) -> tuple[Graph | None, Cover | None]:
        """The side's current graph and how it covers this snapshot's rows (computed once per graph), or
        (None, None) while the side has none: then it is scanned."""
        graph = self.graphs.current.get(side) if self.graphs is not None else None
        if graph is None:
            return None, None
        got = self._covers.get(side)
        if got is None or got[0] is not graph:
            got = self._covers[side] = (graph, Cover.of(graph, self.chunks, self.pos))
        return got

    def scanned(self) -> "Snapshot":
        """This snapshot searched without its graphs: every row scanned, exactly (the calibration's searches,
        rag.engine). The same passages, vectors and BM25 index; nothing is copied."""
        return self if self.graphs is None else dataclasses.replace(self, graphs=None, _covers={})

    @functools.cached_property
    def languages(self) -> tuple[str, ...]:
        """The languages the folder's passages are written in ('en', 'pt'; unclear ones left out): a short
        question is taken to be in one of them, and a refusal hints that a question in one language does not
        find the words of documents in another."""
        return tuple(sorted(set(self.langs) - {""}))

    @functools.cached_property
    def language_shares(self) -> dict[str, int]:
        """Passages per language (unclear ones left out): a short question's language is weighed by them
        (rag.text.languages.question_language)."""
        return dict(Counter(lang for lang in self.langs if lang))

    @property
    def reads_store(self) -> bool:
        """Whether this snapshot reads the store at query time (`search_reads = "store"`, rag.indexing.served): its
        passages' texts and each side's vectors and nearest rows come from there."""
        return isinstance(self.chunks, StoredRows)

    def passages(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        """The passages at `rows`, by row: all of them from memory; read from the store (rag.indexing.served) when the
        snapshot does not hold its texts, less any gone or being rewritten since the snapshot was built."""
        if self.reads_store:
            return {r: c for r, c in zip(rows, self.chunks.fetch(rows)) if c is not None}
        return {r: self.chunks[r] for r in rows}

    @classmethod
    def build(cls, chunks: list[StoredChunk], docs: dict[str, tuple[str, str, str]], settings: Settings,
              tokens: Sequence[list[str]] | None = None, versions: dict[str, str] | None = None,
              vectors: np.ndarray | None = None, side_vectors: np.ndarray | None = None,
              graphs: Graphs | None = None) -> "Snapshot":
        """`vectors`, `side_vectors`: each side's matrix, row i chunks[i]'s (the indexer's, so each vector is
        held once); by default stacked from the chunks' own `vector` and `side`. `chunks` may be the store's
        rows (rag.indexing.served.StoredRows, with `tokens` and each side's StoredVectors): then texts stay there."""
        if isinstance(chunks, StoredRows):
            ids, langs, doc_of = chunks.ids, chunks.langs, chunks.doc_ids
        else:
            ids, langs, doc_of = [c.id for c in chunks], [c.meta.get("lang", "") for c in chunks], [c.doc_id for c in chunks]
        if tokens is None:
            tokens = [analyze(c.text, lang) for c, lang in zip(chunks, langs)]
        lexical = LexicalIndex.build(None, langs, k1=settings.tuning.bm25_k1, b=settings.tuning.bm25_b, tokens=tokens)
        if vectors is None:
            vectors = np.stack([c.vector for c in chunks]) if chunks else np.zeros((0, 0), dtype=np.float32)
        if side_vectors is None and chunks and all(c.side is not None for c in chunks):
            side_vectors = np.stack([c.side for c in chunks])
        return cls(chunks, lexical, docs, {cid: i for i, cid in enumerate(ids)}, np.array(doc_of, dtype=object),
                   vectors, side_vectors if len(chunks) else None, list(tokens), dict(versions or {}), graphs,
                   list(ids), list(langs))


def pool_depth(settings: Settings) -> int:
    """How far each side's list runs: the candidates, and with feedback reading a pool
    (`settings.tuning.feedback_pool`), the pool's."""
    return settings.candidates * (settings.tuning.feedback_pool if settings.tuning.feedback and settings.tuning.feedback_pool else 1)



"""Served: a search that reads the store, not memory (`search_reads = "store"`), for a shared Chroma server.

By default every app process holds the whole folder in its snapshot (`rag.searching.search`): each passage's text,
metadata and vectors, so a search never waits on the store. With a Chroma server several app processes can
share one index instead: each dense side's nearest passages come from the server's HNSW index
(`ChunkStore.query`), and a passage's text, metadata and vectors are read from the server only when a
search needs them (its twenty candidates, feedback's lenders), then kept in a small cache. What each
process still holds: every passage's id, document and language (to map the server's answers to rows and
mask by document) and BM25, which scores every passage, with the tokens it is rebuilt from at each publish.

Distances stay exact (Chroma computes 1 - dot with the stored unit vector, as the scan does); the nearest
rows are its graph's, whose recall against an exact scan `bench/bench_large.py --server` measures.

A passage being rewritten (a document indexed again under the same chunk ids) may hold its new text in the
store while this process's snapshot still shows the old version. Each chunk is written with its document's
version; a row whose stored version is not the snapshot's, or which is gone, is left out of that search,
so no quote is shown with another text's scores (the memory path gets the same from its snapshot).

What it does not do: hold anything of the server in memory beyond the cache, or decide what is visible
(the library's statuses, through the snapshot, still do).

>>> rows = StoredRows(["a:0", "a:1"], ["a", "a"], ["en", "en"], store=None)
>>> len(rows), rows.ids[1], rows.langs[0]
(2, 'a:1', 'en')
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterator, Sequence

import numpy as np

from rag.indexing.store import ChunkStore, StoredChunk

# Passages and vectors kept after a search read them: a calibration's 800 questions and a person's follow-ups
# come back to the same few hundred.
CACHE = 4096
# How many more of the store's nearest a search asks for than it needs: the store also holds passages this
# snapshot does not show (a document being written, one another process indexed since this one started).
SPARE = 2


class _Cache(OrderedDict):
    def __init__(self, size: int = CACHE):
        super().__init__()
        self.size = size

    def put(self, key, value) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class StoredRows(Sequence[StoredChunk]):
    """The snapshot's passages, in row order, as the store holds them: ids, documents and languages in
    memory, each passage's text and metadata read when asked for (`fetch`: many in one call)."""

    def __init__(self, ids: Sequence[str], doc_ids: Sequence[str], langs: Sequence[str], store: ChunkStore | None,
                 versions: dict[str, str] | None = None):
        self.ids, self.doc_ids, self.langs = list(ids), list(doc_ids), list(langs)
        self.store, self.versions = store, versions or {}
        self._cache = _Cache()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, row):
        if isinstance(row, slice):
            return [c for c in self.fetch(range(len(self))[row]) if c is not None]
        got = self.fetch([row])[0]
        if got is None:
            raise KeyError(f"passage {self.ids[row]} is no longer in the store as this snapshot shows it")
        return got

    def __eq__(self, other) -> bool:  # as a list of the passages would compare (read from the store)
        return list(self) == list(other) if isinstance(other, (list, StoredRows)) else NotImplemented

    __hash__ = None

    def __iter__(self) -> Iterator[StoredChunk]:
        for at in range(0, len(self), 1000):
            yield from (c for c in self.fetch(range(at, min(at + 1000, len(self)))) if c is not None)

    def fetch(self, rows: Sequence[int]) -> list[StoredChunk | None]:
        """The passages at `rows`, read in one call where not cached; None for one gone from the store or
        holding another version of its document than the snapshot's (being rewritten)."""
        rows = [int(r) for r in rows]
        wanted = [self.ids[r] for r in rows if self.ids[r] not in self._cache]
        if wanted:
            for cid, chunk in self.store.chunks(wanted).items():
                self._cache.put(cid, chunk)
        out = []
        for r in rows:
            chunk = self._cache.get(self.ids[r])
            if chunk is not None and not self._current(chunk):
                chunk = None
            out.append(chunk)
        return out

    def _current(self, chunk: StoredChunk) -> bool:
        stored = chunk.meta.get("version")
        return stored is None or stored == self.versions.get(chunk.doc_id, stored)


class StoredVectors:
    """One dense side's vectors, in the snapshot's row order, read from its store when indexed (one row, or
    many in one call); a row the store no longer holds reads as zeros (distance 1), and its passage is left
    out by `StoredRows.fetch`."""

    def __init__(self, store: ChunkStore, ids: Sequence[str], dimension: int):
        self.store, self.ids, self.dimension = store, ids, dimension
        self._cache = _Cache()

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.ids), self.dimension

    def __getitem__(self, rows):
        if np.ndim(rows) == 0:
            return self[[int(rows)]][0]
        rows = [int(r) for r in rows]
        wanted = [self.ids[r] for r in rows if self.ids[r] not in self._cache]
        if wanted:
            for cid, v in self.store.vectors(wanted).items():
                self._cache.put(cid, v)
        zero = np.zeros(self.dimension, dtype=np.float32)
        return np.stack([self._cache.get(self.ids[r], zero) for r in rows]) if rows else \
            np.zeros((0, self.dimension), dtype=np.float32)

    def whole(self) -> np.ndarray:
        """Every row's vector, read from the store a page at a time and not kept (a diagnosis ranks them all)."""
        stored = self.store.all_vectors()
        zero = np.zeros(self.dimension, dtype=np.float32)
        return np.stack([stored.get(cid, zero) for cid in self.ids]) if self.ids else \
            np.zeros((0, self.dimension), dtype=np.float32)

    def nearest(self, q: np.ndarray, n: int, pos: dict[str, int],
                doc_ids: Sequence[str] | None = None) -> list[tuple[int, float]]:
        """The store's `n` nearest rows that this snapshot shows (`pos`: chunk id -> row), as (row, distance),
        closest first, equal distances in row order; `doc_ids`: only these documents' passages."""
        got = self.store.query(np.asarray(q, dtype=np.float32), n * SPARE, doc_ids)
        shown = sorted(((pos[cid], float(d)) for cid, d in got if cid in pos), key=lambda rd: (rd[1], rd[0]))
        return shown[:n]

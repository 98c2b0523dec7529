"""Vectors: each dense side's nearest passages, by an exact scan or, in a large folder, through a graph.

The snapshot's matrix (one unit float32 row per passage) is the truth: every distance the app shows is
1 - dot with that row. Up to `graph_above` passages (a setting) the nearest rows are found by scanning them
all: under a millisecond at 10,000 passages here, and exact. Above it, a HNSW graph (faiss, its copy of the
vectors in 8 bits a dimension) proposes the rows near the question and the matrix re-ranks them exactly, so
a distance is the same whichever way its row was found; rows the graph does not cover (passages written
since it was built) are scanned exactly beside it. A scan over 100,000 rows costs 7-9 ms a side here, and a
search scans four times (two sides, and feedback's second search), which is what the graph saves.

A graph is built from one snapshot's matrix in a background thread (`Graphs.offer`, called at each publish)
and never changes after: searches read it without locks. It covers passages by chunk id and text (a CRC-32
of it), so a passage re-indexed with other text since is treated as new. Each graph is saved in the index
folder under its side's model name, so the next start reads it (a second or so at 100,000 passages) rather
than building it again (minutes). A new graph is built when a fifth of the
snapshot's rows are not covered, or a fifth of the graph's rows are gone; until the first is ready, every
search scans, exactly, as below the threshold. Each new graph is checked against the scan (`Graph.tuned`, on
probe questions the engine gives: the opening words of the folder's own sentences); the calibration's
searches never use a graph (rag.engine), so a graph's misses can only make a question look farther.

What it does not do: filtered searches through the graph. A search kept to some documents scans their rows
(`mask`), exactly, at any size: a filter keeps few rows, and the graph cannot skip the others cheaply.

>>> m = np.eye(3, dtype=np.float32)
>>> rows, dist = nearest(m, np.array([0.6, 0.8, 0], dtype=np.float32), 2)
>>> rows, round(float(dist[1]), 3), round(float(dist[2]), 3)
([1, 0], 0.2, 1.0)
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

# Graph parameters: links per node, the build's and the search's breadth, and how many proposals per row
# asked; chosen on the 100,000-passage benchmark for recall@20 >= 0.99 of the exact scan (bench/bench_large.py:
# its passages share one small vocabulary, so their vectors crowd together, a hard case for a graph: breadth
# 128 gave 0.93, 256 with a build breadth of 40 0.98, with 160 0.99).
GRAPH_LINKS = 32
GRAPH_BUILD_BREADTH = 160
GRAPH_BREADTH = 256
GRAPH_PROPOSALS = 3
# Each built graph is checked against the exact scan on probe questions and searched at the smallest of these
# breadths that finds GRAPH_RECALL of the scan's top 20; at none, the side is scanned (a folder whose vectors a
# graph cannot navigate: measured on one made of random bags of words). The probes are the first
# GRAPH_PROBE_WORDS words of GRAPH_PROBES of the folder's own sentences (rag.engine: the questions a graph
# must serve are short and on the folder's subject; whole sentences were easier than real questions for the
# multilingual side's graph, their openings as hard or harder for both sides: bench/graph_probes.py).
GRAPH_BREADTHS = (GRAPH_BREADTH, 512, 768, 1024)
GRAPH_RECALL = 0.99
GRAPH_PROBES = 100
GRAPH_PROBE_WORDS = 8
# A new graph when this share of the snapshot's rows is not covered, or of the graph's is gone. Not tuned: a
# guess between scanning many uncovered rows beside the graph and building often while a folder is indexed.
REBUILD_SHARE = 0.2


class Distances:
    """The cosine distance of any row to the question: the whole scan's array when every row was scanned,
    else computed per row on demand (1 - dot with the matrix row, as the scan does)."""

    def __init__(self, matrix: np.ndarray, q: np.ndarray, full: np.ndarray | None = None,
                 known: dict[int, float] | None = None):
        self._matrix, self._q, self._full, self._known = matrix, q, full, known or {}

    def __getitem__(self, row) -> float:
        if self._full is not None:
            return self._full[row]
        row = int(row)
        if row not in self._known:
            self._known[row] = float(1.0 - self._matrix[row] @ self._q)
        return self._known[row]

    def need(self, rows: Sequence[int]) -> None:
        """Compute these rows' distances together (one read of a matrix the store holds, `rag.indexing.served`)."""
        if self._full is None:
            missing = sorted({int(r) for r in rows} - self._known.keys())
            if missing:
                self._known.update(zip(missing, (1.0 - self._matrix[missing] @ self._q).tolist()))


def nearest(matrix: np.ndarray, q: np.ndarray, n: int, mask: np.ndarray | None = None,
            graph: "Graph | None" = None, cover: "Cover | None" = None,
            depth: int = 0) -> tuple[list[int], Distances]:
    """The `n` rows of `matrix` closest to `q` (closest first, equal distances in row order) among those
    `mask` keeps (> 0), and every row's distance. With a `graph` and its `cover` of this matrix and no mask,
    the graph proposes and the matrix re-ranks (see the module docstring); else every kept row is scanned.
    `depth` (> n): the list goes on to that many rows, the best the scan or the graph's proposals hold
    beyond the first `n` (feedback's pool, rag.searching.search); the graph is then asked for at least that many rows,
    so its first `n` are at least as close as those asked for alone."""
    q = np.asarray(q, dtype=matrix.dtype)
    depth = max(depth, n)
    if graph is None or cover is None or mask is not None or not graph.breadth:
        dist = 1.0 - matrix @ q
        keep = np.arange(len(dist)) if mask is None else np.flatnonzero(np.asarray(mask) > 0)
        if depth < keep.size:  # only rows at most the depth-th distance can place; all of them, so ties stay in order
            kth = np.partition(dist[keep], depth - 1)[depth - 1]
            keep = keep[dist[keep] <= kth]
        rows = keep[np.argsort(dist[keep], kind="stable")][:depth]
        return [int(i) for i in rows], Distances(matrix, q, full=dist)
    proposed = cover.rows_of(graph.propose(q, proposals(n, depth)))
    return among(matrix, q, np.union1d(proposed, cover.uncovered), depth)  # sorted: row order breaks ties


def proposals(n: int, depth: int = 0) -> int:
    """How many rows a graph is asked for, for a search's best `n` and a list `depth` rows long: enough
    beyond `n` that re-ranking them exactly finds the true best `n` (GRAPH_PROPOSALS times), and the list."""
    return max(n * GRAPH_PROPOSALS, n + 10, depth)


def among(matrix: np.ndarray, q: np.ndarray, rows: Sequence[int], n: int) -> tuple[list[int], Distances]:
    """`nearest` within `rows` only (positions, ascending): the `n` of them closest to `q`, closest first,
    equal distances in row order, each computed exactly; other rows' distances on demand.

    >>> m = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    >>> among(m, np.array([0.0, 1.0]), [0, 2], 1)[0]
    [2]
    """
    q = np.asarray(q, dtype=matrix.dtype)
    rows = np.asarray(rows, dtype=np.int64)
    dist = 1.0 - matrix[rows] @ q if rows.size else np.zeros(0, dtype=matrix.dtype)
    order = np.argsort(dist, kind="stable")[:n]
    return [int(rows[i]) for i in order], Distances(matrix, q, known=dict(zip(rows.tolist(), dist.tolist())))


@dataclass(frozen=True)
class Graph:
    """A HNSW graph over the rows of one matrix, immutable once built; rows are known by chunk id and text."""

    index: object  # faiss.IndexHNSWSQ, inner product (None: found not worth using, `tuned`)
    ids: tuple[str, ...]  # label -> chunk id
    hashes: np.ndarray  # label -> CRC-32 of the chunk's text
    breadth: int = GRAPH_BREADTH  # the search's breadth (`tuned`); 0: the graph misses too much, scan instead
    recall: float | None = None  # its recall@20 of the exact scan on the probes, when tuned
    depth: int = 0  # how deep the lists it was checked for run (`tuned`)

    @classmethod
    def build(cls, matrix: np.ndarray, ids: Sequence[str], texts: Sequence[str]) -> "Graph":
        import faiss

        index = faiss.IndexHNSWSQ(matrix.shape[1], faiss.ScalarQuantizer.QT_8bit, GRAPH_LINKS,
                                  faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = GRAPH_BUILD_BREADTH
        index.train(matrix)
        index.add(matrix)
        return cls(index, tuple(ids), np.array([text_hash(t) for t in texts], dtype=np.int64))

    def tuned(self, matrix: np.ndarray, probes: np.ndarray, n: int = 20, depth: int = 0) -> "Graph":
        """This graph searched at the smallest breadth of `GRAPH_BREADTHS` whose proposals hold `GRAPH_RECALL`
        of the exact top `n` for the probe vectors (breadth 0 when none does), asked as searches ask it
        (`nearest`: `depth`, the rows a search's list runs on to)."""
        exact = [set(np.argsort(1.0 - matrix @ q, kind="stable")[:n].tolist()) for q in probes]
        recall = 0.0
        for breadth in GRAPH_BREADTHS:
            graph = dataclasses.replace(self, breadth=breadth)
            found = 0
            for q, best in zip(probes, exact):
                dist = 1.0 - matrix[proposed := graph.propose(q, proposals(n, depth))] @ q
                found += len(best & set(proposed[np.argsort(dist, kind="stable")[:n]].tolist()))
            recall = found / max(sum(len(best) for best in exact), 1)  # (a folder of fewer than n rows: all)
            if recall >= GRAPH_RECALL:
                return dataclasses.replace(graph, recall=recall, depth=depth)
        # Kept as a record, not in memory.
        return dataclasses.replace(self, index=None, breadth=0, recall=recall, depth=depth)

    def save(self, path: Path) -> None:
        """Write the graph and its rows' keys beside each other, each through a temporary file: a crash
        leaves the previous pair or none, never half of one."""
        import faiss

        path.parent.mkdir(parents=True, exist_ok=True)
        keys = path.with_suffix(".keys.npz")
        if self.index is None:  # a graph found not worth using: its record alone, so no start builds it again
            faiss.write_index(faiss.IndexFlatIP(1), str(path) + ".tmp")
        else:
            faiss.write_index(self.index, str(path) + ".tmp")
        with open(str(keys) + ".tmp", "wb") as f:
            np.savez(f, ids=np.array(self.ids, dtype=str), hashes=self.hashes,
                     breadth=np.array([self.breadth, -1.0 if self.recall is None else self.recall, self.depth]))
        os.replace(str(keys) + ".tmp", keys)
        os.replace(str(path) + ".tmp", path)

    @classmethod
    def load(cls, path: Path) -> "Graph | None":
        """The graph saved at `path`, or None when there is none or it cannot be read (it is then rebuilt)."""
        import faiss

        keys = path.with_suffix(".keys.npz")
        try:
            index = faiss.read_index(str(path))
            with np.load(keys) as got:
                ids, hashes, (breadth, recall, depth) = tuple(got["ids"].tolist()), got["hashes"], got["breadth"]
        except (OSError, RuntimeError, ValueError, KeyError):
            return None  # (a graph saved before its depth was: built again)
        recall = None if recall < 0 else float(recall)
        if not breadth:
            return cls(None, ids, hashes, 0, recall, int(depth))
        if not index.ntotal == len(ids) == len(hashes):
            return None
        return cls(index, ids, hashes, int(breadth), recall, int(depth))

    def propose(self, q: np.ndarray, k: int) -> np.ndarray:
        import faiss

        _, labels = self.index.search(q.reshape(1, -1), min(k, len(self.ids)),
                                      params=faiss.SearchParametersHNSW(efSearch=max(self.breadth, k)))
        return labels[0][labels[0] >= 0]


@dataclass(frozen=True)
class Cover:
    """How one graph covers one snapshot's rows: each graph label's row (-1: gone or changed) and the rows
    no label covers (to scan beside the graph)."""

    label_row: np.ndarray
    uncovered: np.ndarray

    @classmethod
    def of(cls, graph: Graph, chunks: Sequence, pos: dict[str, int]) -> "Cover":
        """`chunks`: the snapshot's (each with `id` and `text`), `pos`: chunk id -> row."""
        label_row = np.full(len(graph.ids), -1, dtype=np.int64)
        covered = np.zeros(len(chunks), dtype=bool)
        for label, (cid, h) in enumerate(zip(graph.ids, graph.hashes.tolist())):
            row = pos.get(cid)
            if row is not None and text_hash(chunks[row].text) == h:
                label_row[label] = row
                covered[row] = True
        return cls(label_row, np.flatnonzero(~covered))

    def rows_of(self, labels: np.ndarray) -> np.ndarray:
        rows = self.label_row[labels]
        return rows[rows >= 0]

    def stale(self, rows: int) -> bool:
        """Whether a new graph is due: too many rows uncovered, or too many of the graph's gone."""
        gone = int(np.count_nonzero(self.label_row < 0))
        return len(self.uncovered) > REBUILD_SHARE * rows or gone > REBUILD_SHARE * max(len(self.label_row), 1)


def text_hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


@dataclass
class Graphs:
    """The current graph of each side (None until one is built), and the background builds.

    `offer` is called with each new snapshot; it starts a build when the side has more than `above` rows and
    no graph covers it well, one build at a time per side. `folder`: where each side's graph is saved, as
    `<side>-<model>.faiss` (`models`: side -> model name), and read from at start. `wait` (tests, benchmarks)
    joins the builds."""

    above: int
    current: dict[str, Graph] = field(default_factory=dict)
    folder: Path | None = None
    models: dict[str, str] = field(default_factory=dict)
    # (side, the snapshot's passages) -> probe question vectors for `Graph.tuned` (rag.engine: the folder's own
    # sentences), read when a build ends; None: the default breadth, untested.
    probes: Callable[[str, Sequence], np.ndarray | None] | None = None
    depth: int = 0  # how far searches' lists run (rag.indexing.snapshot.pool_depth): each graph is checked asked as deep
    _threads: dict[str, threading.Thread] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def offer(self, side: str, matrix: np.ndarray | None, chunks: Sequence, cover: "Cover | None") -> None:
        """`matrix`, `chunks`: one snapshot's side and passages (each with `id` and `text`); `cover`: how the
        side's current graph covers them (None: no graph yet)."""
        if matrix is None or self.above <= 0 or len(matrix) <= self.above:
            return
        if side in self.current and cover is not None and not cover.stale(len(matrix)):
            return
        with self._lock:
            running = self._threads.get(side)
            if running is not None and running.is_alive():
                return  # the next publish offers again
            thread = threading.Thread(target=self._build, args=(side, matrix, chunks),
                                      name=f"graph-{side}", daemon=True)
            self._threads[side] = thread
            thread.start()

    def _path(self, side: str) -> Path | None:
        if self.folder is None:
            return None
        slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", self.models.get(side, "")).strip("-.") or "model"
        return self.folder / f"{side}-{slug}.faiss"

    def load(self) -> None:
        """Read each side's saved graph, if any (before the first snapshot: its cover says what it lacks)."""
        for side in self.models if self.above > 0 else ():
            path = self._path(side)
            graph = Graph.load(path) if path is not None and path.is_file() else None
            # A graph checked for lists of another depth (feedback_pool changed since) is checked again: built anew.
            if graph is not None and graph.depth == self.depth:
                self.current[side] = graph

    def _build(self, side: str, matrix: np.ndarray, chunks: Sequence) -> None:
        graph = Graph.build(matrix, [c.id for c in chunks], [c.text for c in chunks])
        probes = self.probes(side, chunks) if self.probes is not None else None
        if probes is not None and len(probes):
            graph = graph.tuned(matrix, probes, depth=self.depth)
        self.current[side] = graph
        path = self._path(side)
        if path is not None:
            try:
                graph.save(path)
            except OSError:
                pass  # a read-only index: built again at the next start

    def wait(self) -> None:
        for thread in list(self._threads.values()):
            thread.join()

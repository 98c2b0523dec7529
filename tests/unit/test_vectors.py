"""rag.indexing.vectors: the exact scan, the graph that replaces it in a large folder, and when a graph is built.

Vectors here are made, not embedded (the fast tier loads no model): passages on a few topics, each the unit
mean of its topic's direction and noise, so neighbours are structured as a real model's are."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from rag.indexing.vectors import Cover, Graph, Graphs, among, nearest


@dataclass(frozen=True)
class Row:
    id: str
    text: str


def topical(n: int, dim: int = 64, topics: int = 20, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim))
    m = centres[rng.integers(topics, size=n)] + 0.8 * rng.standard_normal((n, dim))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def rows_of(n: int) -> list[Row]:
    return [Row(f"doc-{i // 10}:{i % 10}", f"passage {i}") for i in range(n)]


def exact(m: np.ndarray, q: np.ndarray, n: int) -> list[int]:
    d = 1.0 - m @ q
    return sorted(range(len(m)), key=lambda i: (d[i], i))[:n]


@pytest.fixture(scope="module")
def built():
    m = topical(3000)
    rows = rows_of(3000)
    return m, rows, Graph.build(m, [r.id for r in rows], [r.text for r in rows])


def test_the_graph_finds_what_the_scan_finds_and_every_distance_is_the_matrixs(built):
    m, rows, graph = built
    cover = Cover.of(graph, rows, {r.id: i for i, r in enumerate(rows)})
    assert len(cover.uncovered) == 0
    qs = topical(50, seed=1)
    hits = 0
    for q in qs:
        got, dist = nearest(m, q, 10, graph=graph, cover=cover)
        hits += len(set(got) & set(exact(m, q, 10)))
        for r in got + [0, 2999]:  # a row the graph did not return has its exact distance too
            assert dist[r] == pytest.approx(1.0 - float(m[r] @ q), abs=1e-6)
        assert [dist[r] for r in got] == sorted(dist[r] for r in got)
    assert hits / (10 * len(qs)) >= 0.98


def test_rows_written_since_the_graph_was_built_are_scanned_beside_it(built):
    m, rows, graph = built
    extra = topical(200, seed=2)
    bigger = np.concatenate([m, extra])
    more = rows + [Row(f"new:{i}", f"new passage {i}") for i in range(200)]
    cover = Cover.of(graph, more, {r.id: i for i, r in enumerate(more)})
    assert list(cover.uncovered) == list(range(3000, 3200))
    got, dist = nearest(bigger, extra[123], 5, graph=graph, cover=cover)
    assert got[0] == 3123 and dist[3123] == pytest.approx(0.0, abs=1e-6)


def test_a_passage_whose_text_changed_or_that_is_gone_is_not_taken_from_the_graph(built):
    m, rows, graph = built
    changed = list(rows)
    changed[7] = Row(rows[7].id, "the same id, re-indexed with other text")
    kept = changed[:2000]  # the rest gone
    cover = Cover.of(graph, kept, {r.id: i for i, r in enumerate(kept)})
    assert list(cover.uncovered) == [7]
    assert cover.label_row[7] == -1 and cover.label_row[2500] == -1 and cover.label_row[8] == 8
    got, _ = nearest(m[:2000], m[2500], 20, graph=graph, cover=cover)
    assert all(r < 2000 for r in got)
    assert cover.stale(len(kept))  # a third of the graph's rows are gone


def test_a_mask_scans_the_rows_it_keeps_even_with_a_graph(built):
    m, rows, graph = built
    cover = Cover.of(graph, rows, {r.id: i for i, r in enumerate(rows)})
    mask = np.zeros(len(m), dtype=np.float32)
    mask[100:110] = 1
    got, _ = nearest(m, m[5], 3, mask=mask, graph=graph, cover=cover)
    assert got == [100 + i for i in exact(m[100:110], m[5], 3)]


@pytest.mark.parametrize("pick", [slice(None), slice(None, None, 7), slice(5, 6), slice(0, 0)])
def test_among_ranks_the_rows_given_as_a_mask_would(built, pick):
    # Feedback's second dense search (rag.searching.search.dense_among): the pool's rows ranked exactly, ties in row
    # order, each distance the matrix's.
    m = built[0]
    m = np.vstack([m, m[:50]])  # duplicated rows: equal distances, which row order breaks
    rows = np.arange(len(m))[pick]
    mask = np.zeros(len(m), dtype=np.float32)
    mask[rows] = 1
    want, _ = nearest(m, m[7], 10, mask=mask)
    got, dist = among(m, m[7], rows, 10)
    assert got == want
    assert all(abs(dist[r] - (1.0 - float(m[r] @ m[7]))) < 1e-6 for r in got)


@pytest.mark.parametrize("above, rows, built_one", [(0, 500, False), (1000, 500, False), (100, 500, True)])
def test_a_graph_is_built_only_above_the_threshold(above, rows, built_one):
    graphs = Graphs(above)
    graphs.offer("dense", topical(rows), rows_of(rows), None)
    graphs.wait()
    assert ("dense" in graphs.current) == built_one


def test_a_new_graph_once_a_fifth_of_the_rows_are_new(built):
    m, rows, graph = built
    graphs = Graphs(100, current={"dense": graph})
    few = rows + [Row(f"new:{i}", "x") for i in range(100)]  # 3% new: the graph still serves
    graphs.offer("dense", np.concatenate([m, topical(100, seed=3)]), few,
                 Cover.of(graph, few, {r.id: i for i, r in enumerate(few)}))
    graphs.wait()
    assert graphs.current["dense"] is graph
    many = rows + [Row(f"new:{i}", "x") for i in range(1000)]
    graphs.offer("dense", np.concatenate([m, topical(1000, seed=4)]), many,
                 Cover.of(graph, many, {r.id: i for i, r in enumerate(many)}))
    graphs.wait()
    assert graphs.current["dense"] is not graph and len(graphs.current["dense"].ids) == 4000


def test_a_saved_graph_is_read_back_and_a_broken_one_is_rebuilt(built, tmp_path):
    m, rows, graph = built
    graphs = Graphs(100, folder=tmp_path / "graphs", models={"dense": "all-MiniLM-L6-v2"})
    graphs.offer("dense", m, rows, None)
    graphs.wait()
    saved = sorted(p.name for p in (tmp_path / "graphs").iterdir())
    assert saved == ["dense-all-MiniLM-L6-v2.faiss", "dense-all-MiniLM-L6-v2.keys.npz"]
    again = Graphs(100, folder=tmp_path / "graphs", models={"dense": "all-MiniLM-L6-v2"})
    again.load()
    read = again.current["dense"]
    assert read.ids == graphs.current["dense"].ids and list(read.hashes) == list(graphs.current["dense"].hashes)
    cover = Cover.of(read, rows, {r.id: i for i, r in enumerate(rows)})
    assert len(cover.uncovered) == 0
    got, _ = nearest(m, m[42], 1, graph=read, cover=cover)
    assert got == [42]
    other = Graphs(100, folder=tmp_path / "graphs", models={"dense": "another-model"})
    other.load()
    assert other.current == {}  # a graph of another model's vectors is never read
    (tmp_path / "graphs" / "dense-all-MiniLM-L6-v2.faiss").write_bytes(b"not a graph")
    broken = Graphs(100, folder=tmp_path / "graphs", models={"dense": "all-MiniLM-L6-v2"})
    broken.load()
    assert broken.current == {}


def test_a_new_graph_is_checked_on_the_snapshots_probes_and_not_read_back_for_lists_of_another_depth(built, tmp_path):
    m, rows, _ = built
    asked = []

    def probes(side, chunks):
        asked.append((side, [c.id for c in chunks]))
        return m[:: len(m) // 20][:20]  # questions on the folder's subject: its own rows

    folder, models = tmp_path / "graphs", {"dense": "all-MiniLM-L6-v2"}
    graphs = Graphs(100, folder=folder, models=models, probes=probes, depth=60)
    graphs.offer("dense", m, rows, None)
    graphs.wait()
    assert asked == [("dense", [r.id for r in rows])]
    made = graphs.current["dense"]
    assert made.breadth and made.recall >= 0.99 and made.depth == 60
    same = Graphs(100, folder=folder, models=models, depth=60)
    same.load()
    assert same.current["dense"].depth == 60 and same.current["dense"].breadth == made.breadth
    other = Graphs(100, folder=folder, models=models, depth=0)  # feedback_pool changed since: checked again
    other.load()
    assert other.current == {}


def test_a_graph_is_checked_against_the_scan_and_one_that_misses_too_much_is_not_used(built, monkeypatch, tmp_path):
    import rag.indexing.vectors as vectors

    m, rows, graph = built
    probes = topical(30, seed=5)
    good = graph.tuned(m, probes)
    assert good.breadth == vectors.GRAPH_BREADTHS[0] and good.recall >= vectors.GRAPH_RECALL
    monkeypatch.setattr(vectors, "GRAPH_RECALL", 1.01)  # no breadth can reach it
    bad = graph.tuned(m, probes)
    assert bad.breadth == 0 and bad.recall is not None and bad.index is None  # nothing of it held
    cover = Cover.of(bad, rows, {r.id: i for i, r in enumerate(rows)})
    got, _ = nearest(m, probes[0], 10, graph=bad, cover=cover)
    assert got == exact(m, probes[0], 10)  # scanned
    bad.save(tmp_path / "g.faiss")
    read = Graph.load(tmp_path / "g.faiss")
    assert read.breadth == 0 and read.ids == graph.ids  # still not used after a restart, nor built again

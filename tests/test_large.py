"""A large folder's search path on real parts (MiniLM, the multilingual side, Chroma on disk): each dense side
through its graph (rag.indexing.vectors) answers as the exact scan does, a passage written after the graph was built
is found, and the store is let go of while idle and opened again for the next write.

`graph_above = 1` makes a small folder take the path a folder of more than 50,000 passages takes."""

from __future__ import annotations

import numpy as np
import pytest

QUESTIONS = ["How long should the bread dough rise?", "When is the rent due each month?",
             "Which port does the backup server listen on?", "Quando abre a biblioteca ao sábado?"]


def write_notes(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bread.md").write_text(
        "# Bread\n\nLet the dough rise for two hours in a warm kitchen, covered with a damp cloth.\n\n"
        "## Baking\n\nBake at 220 degrees for thirty-five minutes, until the crust sounds hollow.\n", encoding="utf-8")
    (folder / "lease.md").write_text(
        "# Lease\n\nThe rent of 950 euros is due on the first working day of each month.\n\n"
        "## Pets\n\nOne cat or one small dog may live in the flat with the landlord's written consent.\n",
        encoding="utf-8")
    (folder / "servers.md").write_text(
        "# Servers\n\nThe backup server listens on port 8443 and keeps thirty daily snapshots.\n\n"
        "## Restore\n\nA restore takes about twenty minutes for a full home folder.\n", encoding="utf-8")
    (folder / "biblioteca.md").write_text(
        "# Biblioteca\n\nA biblioteca municipal abre ao sábado das dez às treze horas.\n\n"
        "## Empréstimos\n\nCada leitor pode levar até cinco livros durante três semanas.\n", encoding="utf-8")


def ranked(result):
    return [(c.chunk_id, round(c.distance, 5), c.side_rank, c.dense_rank) for c in result.candidates]


@pytest.fixture()
def pair(make_engine, tmp_path):
    folder = tmp_path / "notes"
    write_notes(folder)
    graphed, scanned = make_engine(folder, graph_above=1), make_engine(folder, graph_above=0)
    for e in (graphed, scanned):
        e.sync()
    graphed.indexer.graphs.wait()
    return graphed, scanned, folder


def test_each_side_searched_through_its_graph_ranks_as_the_exact_scan(pair):
    graphed, scanned, _ = pair
    assert set(graphed.indexer.graphs.current) == {"dense", "multilingual"}
    assert all(graphed.snapshot.graph_for(side)[0].breadth for side in ("dense", "multilingual"))  # in use
    assert scanned.snapshot.graph_for("dense") == (None, None)
    for q in QUESTIONS:
        assert ranked(graphed.search(q)) == ranked(scanned.search(q)), q


def test_the_calibration_scans_every_row_whatever_the_graphs_find(pair, monkeypatch):
    """A graph's misses must not reach the threshold: it is chosen on the exact distances (rag.engine)."""
    from rag.indexing.vectors import Graph

    graphed, scanned, _ = pair
    monkeypatch.setattr(Graph, "propose", lambda self, q, k: np.zeros(0, dtype=np.int64))  # a graph that finds nothing
    assert ranked(graphed.search(QUESTIONS[0])) != ranked(scanned.search(QUESTIONS[0]))  # questions go through it
    before = graphed.calibrations
    graphed.calibration = scanned.calibration = None  # computed again, now
    ours, exact = graphed.calibrated(), scanned.calibrated()
    assert graphed.calibrations == before + 1
    assert graphed.snapshot.graph_for("dense")[0] is not None
    assert ours.languages == exact.languages and ours.points == exact.points


def test_a_passage_written_after_the_graph_is_found(pair):
    graphed, scanned, folder = pair
    built = graphed.indexer.graphs.current["dense"]
    (folder / "garden.md").write_text("# Garden\n\nWater the tomato plants every second evening in July.\n",
                                      encoding="utf-8")
    graphed.sync()
    scanned.sync()
    question = "How often should I water the tomatoes?"
    top = graphed.search(question).candidates[0]
    assert top.doc_name == "garden.md"
    graphed.indexer.graphs.wait()
    # Either the old graph with the new rows scanned beside it, or a new graph: the same ranking as a scan.
    assert ranked(graphed.search(question)) == ranked(scanned.search(question))
    assert built is graphed.indexer.graphs.current["dense"] or len(graphed.indexer.graphs.current["dense"].ids) > len(built.ids)


def test_the_store_is_let_go_of_while_idle_and_opened_again_to_write(pair):
    graphed, _, folder = pair
    assert graphed.store._client is None  # released after the sync: search does not read Chroma
    count = graphed.store.count()  # opened again on demand
    assert count == len(graphed.snapshot.chunks)
    graphed.store.release()
    (folder / "notes-2.md").write_text("# More\n\nThe boiler is serviced every October by the landlord.\n",
                                       encoding="utf-8")
    report = graphed.sync()
    assert report.count("indexed") == 1 and report.count("failed") == 0
    assert graphed.store.count() == len(graphed.snapshot.chunks) == count + 1
    assert set(graphed.indexer.side_store.all_vectors()) == {c.id for c in graphed.snapshot.chunks}
    assert graphed.search("When is the boiler serviced?").candidates[0].doc_name == "notes-2.md"


def test_a_restart_reads_the_saved_graphs_rather_than_building_them(pair, make_engine):
    graphed, _, folder = pair
    built = {side: g.ids for side, g in graphed.indexer.graphs.current.items()}
    index = graphed.settings.index_path
    graphed.close()
    again = make_engine(folder, graph_above=1, index_dir=index)
    assert {side: g.ids for side, g in again.indexer.graphs.current.items()} == built
    assert not again.indexer.graphs._threads  # nothing was built: each read graph covers every passage
    assert again.search(QUESTIONS[1]).candidates[0].doc_name == "lease.md"


@pytest.mark.parametrize("where", ["embedded", pytest.param("server", marks=pytest.mark.server)])
def test_a_whole_collection_read_page_by_page_by_ids_is_every_row_once_in_the_stores_order(where, request, tmp_path):
    """Whole-collection reads (the snapshot's start, a sync's counts) ask each page for by its ids, not by
    offset (which a server reads in time that grows with the offset): across page and id-page boundaries
    every row comes once, with its own text, metadata and vector, in the order the store lists its rows."""
    from rag import load_settings
    from rag.indexing.chunk import Chunk
    from rag.indexing.store import ChunkStore

    more = {}
    if where == "server":
        srv = request.getfixturevalue("chroma_server")
        more = dict(chroma_host=srv["host"], chroma_port=srv["port"], collection_prefix="p" + tmp_path.name[-8:])
    settings = load_settings(env={}, folder=tmp_path / "docs", index_dir=tmp_path / "index", **more)
    store = ChunkStore(settings, "paging-test", 4)
    rng = np.random.default_rng(5)
    docs = {f"d{d:03d}": int(rng.integers(1, 9)) for d in range(500)}  # about 2,000 chunks, uneven documents
    chunks = [Chunk(f"{d}-{i:05d}", d, i, f"{d} passage {i}", f"passage {i}", 0, 9, "S") for d, n in docs.items()
              for i in range(n)]
    vectors = rng.standard_normal((len(chunks), 4)).astype(np.float32)
    store.add(chunks, vectors, {"lang": "en"})
    store.delete_doc("d007")
    listed = store._call("get", include=[], limit=len(chunks) + 10, offset=0)["ids"]  # the store's own order
    kept = [c for c in chunks if c.doc_id != "d007"]
    assert sorted(listed) == sorted(c.id for c in kept)

    read = list(store.all_chunks(page=300, vectors=True))
    assert [c.id for c in read] == listed
    by_id = {c.id: (c, v) for c, v in zip(chunks, vectors)}
    for c in read:
        chunk, vector = by_id[c.id]
        assert (c.doc_id, c.text, c.meta["chunk_index"]) == (chunk.doc_id, chunk.text, chunk.index)
        assert np.allclose(c.vector, vector, atol=1e-6)
    assert store.chunk_counts(page=300) == {d: n for d, n in docs.items() if d != "d007"}
    assert store.doc_ids(page=700) == set(docs) - {"d007"}
    assert store._ordered_ids(page=250) == listed and store.ids() == set(listed)
    assert set(store.all_vectors(page=999)) == set(listed)

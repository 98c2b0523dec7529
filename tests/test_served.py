"""Search reading the store (`search_reads = "store"`, rag.indexing.served) against a real `chroma run` server on
loopback: the real MiniLM and multilingual models, the sample folder.

The store's HNSW index proposes each dense side's nearest passages and texts are read for the candidates only,
so a process holds no passage text and no vector; on a folder this small the graph is exact, so the results
must be the memory path's, row for row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from rag.indexing.served import StoredRows, StoredVectors

pytestmark = pytest.mark.server

QUESTIONS = [json.loads(line) for line in (Path(__file__).parent.parent / "bench" / "sample_needles.jsonl")
             .read_text().splitlines()[:12]]


@pytest.fixture
def served(chroma_server, make_engine, sample_folder, tmp_path):
    """(memory engine, store engine, settings shared) on one server collection, indexed once."""
    prefix = "s" + uuid.uuid4().hex[:10]
    common = dict(chroma_host=chroma_server["host"], chroma_port=chroma_server["port"], collection_prefix=prefix,
                  index_dir=tmp_path / "index")
    memory = make_engine(sample_folder, **common)
    report = memory.sync()
    assert report.count("failed") == 0
    store = make_engine(sample_folder, search_reads="store", **common)
    return memory, store, common


def test_store_reading_search_ranks_as_memory_and_holds_no_text(served):
    memory, store, _ = served
    snap = store.snapshot
    assert isinstance(snap.chunks, StoredRows) and isinstance(snap.vectors, StoredVectors)
    assert len(snap.chunks) == len(memory.snapshot.chunks) > 50
    # Its calibration is its own: the store's index may miss a passage the memory path finds.
    assert store.calibration_fingerprint() != memory.calibration_fingerprint()
    # What the process holds of each passage: its id and language, no text, no vector.
    held = [c for h in store.indexer._chunks_by_doc.values() for c in h.chunks]
    assert held and all(c.text == "" and c.vector is None for c in held)
    assert all(h.vectors is None and h.sides is None for h in store.indexer._chunks_by_doc.values())
    for q in QUESTIONS:
        a, b = memory.ask(q["question"]), store.ask(q["question"])
        # The store's HNSW is approximate: multilingual-e5-small's vectors crowd together (cosines 0.7-0.9), so a
        # row deep in its list may differ from the exact scan's. What the gate reads, the first rows, may not.
        ids_a, ids_b = [c.chunk_id for c in a.gated.candidates], [c.chunk_id for c in b.gated.candidates]
        assert ids_b[:8] == ids_a[:8] and len(set(ids_a) & set(ids_b)) >= 0.9 * len(ids_a), q
        same = {c.chunk_id: c for c in a.gated.candidates}
        for y in b.gated.candidates:
            if (x := same.get(y.chunk_id)) is not None:
                assert y.distance == pytest.approx(x.distance, abs=1e-4)
                assert y.content == x.content and (y.start, y.end) == (x.start, x.end)
                assert (y.side_distance is None) == (x.side_distance is None)
        assert b.gated.verdicts[:8] == a.gated.verdicts[:8] and b.answer.text == a.answer.text, q
    # Kept to one document: the store is asked with a filter; the same rows as the memory path's mask.
    doc = memory.snapshot.chunks[0].doc_id
    a, b = memory.search(QUESTIONS[0]["question"], doc_ids=[doc]), store.search(QUESTIONS[0]["question"], doc_ids=[doc])
    assert {c.doc_id for c in b.candidates} == {doc}
    assert [c.chunk_id for c in b.candidates] == [c.chunk_id for c in a.candidates]


def test_a_passage_rewritten_in_the_store_since_the_snapshot_is_left_out(served):
    _, store, _ = served
    q = QUESTIONS[0]["question"]
    first = store.search(q).candidates[0]
    # Another process re-indexes the document: the same chunk id now holds another version's text.
    stored = store.indexer.store.chunks([first.chunk_id])[first.chunk_id]
    store.indexer.store._call("upsert", ids=[first.chunk_id], documents=["Something else entirely."],
                              metadatas=[dict(stored.meta, version="another")],
                              embeddings=[store.snapshot.vectors[store.snapshot.pos[first.chunk_id]]])
    store.snapshot.chunks._cache.clear()
    again = store.search(q)
    assert first.chunk_id not in [c.chunk_id for c in again.candidates]
    assert all("Something else" not in c.content for c in again.candidates)


def test_two_app_processes_answer_from_one_server(served, sample_folder):
    memory, _, common = served
    memory.close()  # the index is built; two other processes now share it
    env = dict(os.environ, RAG_CHROMA_HOST=common["chroma_host"], RAG_CHROMA_PORT=str(common["chroma_port"]),
               RAG_COLLECTION_PREFIX=common["collection_prefix"], RAG_SEARCH_READS="store",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", RAG_CONFIG=str(common["index_dir"] / "none.toml"))
    q = next(x for x in QUESTIONS if x["document"] == "getting-started.md" and "commands" in x["question"])
    rag = Path(sys.executable).parent / "rag"
    args = [str(rag), "--folder", str(sample_folder), "--index-dir", str(common["index_dir"]), "ask", q["question"],
            "--json"]
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        outs.append(json.loads(out))
    for got in outs:
        assert not got["refused"], got["answer"]
        assert got["citations"] and got["citations"][0]["doc_name"] == "getting-started.md"
        assert "two commands" in " ".join(c["quote"] for c in got["citations"]).lower()
    assert [c["chunk_id"] for c in outs[0]["candidates"]] == [c["chunk_id"] for c in outs[1]["candidates"]]


def test_why_not_found_ranks_the_whole_folder_from_the_store(served):
    from rag.deciding.diagnosis import RANKS, why_not_found
    from rag.deciding.gate import gate

    memory, store, _ = served
    q = QUESTIONS[1]["question"]
    got = {}
    for name, engine in (("memory", memory), ("store", store)):
        result = engine.search(q)
        shown = {c.chunk_id for c in result.candidates}
        # A passage no candidate row shows: the diagnosis must rank it over every passage of the folder.
        far = next(c for c in memory.snapshot.chunks if c.id not in shown and len(c.content) > 200)
        got[name] = why_not_found(engine, result, gate(result, 0.675, 4), far.content[40:160])
    assert got["memory"].verdict == RANKS and got["store"].verdict == RANKS
    assert got["store"].chunk_id == got["memory"].chunk_id
    assert (got["store"].dense_rank, got["store"].bm25_rank, got["store"].fused_rank) == \
        (got["memory"].dense_rank, got["memory"].bm25_rank, got["memory"].fused_rank)


def test_a_process_that_reads_the_store_indexes_and_answers_from_what_it_wrote(chroma_server, make_engine, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "lease.md").write_text("# Lease\n\nThe monthly rent of the flat is 850 euros, due on the first day.\n\n"
                                     "## Pets\n\nA cat is allowed; dogs need the landlord's written consent.\n")
    (folder / "garden.md").write_text("# Garden\n\nThe tools are kept in the green shed behind the house.\n")
    engine = make_engine(folder, chroma_host=chroma_server["host"], chroma_port=chroma_server["port"],
                         collection_prefix="w" + uuid.uuid4().hex[:10], search_reads="store")
    engine.sync()
    turn = engine.ask("How much is the monthly rent of the flat?")
    assert not turn.answer.refused and "850" in turn.gated.citations[0].quote
    # The document changes: its chunks are written again under the same ids, and the new text is what is quoted.
    (folder / "lease.md").write_text("# Lease\n\nThe monthly rent of the flat is 910 euros from March.\n")
    engine.sync()
    turn = engine.ask("How much is the monthly rent of the flat?")
    assert not turn.answer.refused and "910" in turn.gated.citations[0].quote
    assert all("850" not in c.content for c in turn.gated.candidates)
    assert engine.ask("How long should I boil an egg?").answer.refused


def test_a_changed_search_breadth_is_written_to_the_existing_collection(chroma_server, make_engine, tmp_path):
    from rag.settings import load_settings
    from rag.indexing.store import ChunkStore

    common = dict(chroma_host=chroma_server["host"], chroma_port=chroma_server["port"],
                  collection_prefix="e" + uuid.uuid4().hex[:10])
    made = ChunkStore(load_settings(env={}, config=tmp_path / "none.toml", **common), "m", 3)
    assert made.collection.configuration["hnsw"]["ef_search"] == 400
    again = ChunkStore(load_settings(env={}, config=tmp_path / "none.toml", hnsw_ef_search=900, **common), "m", 3)
    assert again.collection.configuration["hnsw"]["ef_search"] == 900
    assert ChunkStore(load_settings(env={}, config=tmp_path / "none.toml", **common), "m", 3) \
        .collection.configuration["hnsw"]["ef_search"] == 400

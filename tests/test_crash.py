"""Crash safety and rebuild: real indexer processes killed with SIGKILL at named points, then restarted.

Each step is a fresh process, as a person restarting the app would start one: it reports what the last
step left (the library's records and Chroma's chunks, read before anything repairs them), opens the engine
(which finishes or undoes what the crash left) and reports what the library, Chroma and the BM25 snapshot
hold, then syncs and dies by SIGKILL exactly where the test says. The kill is put in place by wrapping the
indexer's and the store's own methods inside that child process (no test hook in the code), and the test
checks both that the process died by SIGKILL and that the index held what that point means. Runs against
the embedded store and against a real `chroma run` server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

STEP = r"""
import json, os, signal, sqlite3, sys
from collections import Counter
from pathlib import Path

import rag.engine
from rag.indexing.embed import load_embedder
from rag.engine import Engine
from rag.indexing.indexer import Indexer
from rag.settings import load_settings
from rag.indexing.store import ChunkStore

spec = json.loads(sys.argv[1])
rag.engine.EMBED_GROUP = spec["group"]  # read when the engine opens: small write groups
settings = load_settings(env={}, folder=spec["folder"], index_dir=spec["index"], **spec["store"])
embedder = load_embedder(settings.tuning.model, settings.tuning.embed_batch_size, settings.tuning.model_languages)


def state(engine):
    records = {r.doc_id: r for r in engine.documents()}
    answer = engine.ask("Which valve code is in document 17?", threshold=2.0)
    return {
        "records": {d: [r.status, r.chunks, r.path] for d, r in records.items()},
        "store_ids": [c.id for c in engine.store.all_chunks()],
        "store_docs": Counter(c.doc_id for c in engine.store.all_chunks()),
        "snapshot_ids": [c.id for c in engine.snapshot.chunks],
        "snapshot_docs": Counter(c.doc_id for c in engine.snapshot.chunks),
        "lexical_size": engine.snapshot.lexical.size,
        "answer_docs": [c.doc_name for c in answer.gated.citations],
    }


found = {}
db = Path(spec["index"]) / "library.sqlite"
if db.exists():  # what the last step left, read before start-up repairs anything
    conn = sqlite3.connect(db)
    rows = [json.loads(r) for (r,) in conn.execute("SELECT record FROM documents")]
    conn.close()
    found["raw_records"] = {r["doc_id"]: [r["status"], r["chunks"], r["path"]] for r in rows}
    found["raw_store_docs"] = Counter(c.doc_id for c in ChunkStore(settings, embedder.name, embedder.dimension).all_chunks())
engine = Engine(settings, embedder=embedder)
found.update(state(engine))
print("FOUND " + json.dumps(found), flush=True)


def die():
    os.kill(os.getpid(), signal.SIGKILL)


kill = spec["kill"]
if kill and "after" in kill:  # die right after the n-th call of a method returns
    owner, name, n = {"ChunkStore": ChunkStore, "Indexer": Indexer}[kill["after"][0]], kill["after"][1], kill["after"][2]
    real, calls = getattr(owner, name), []

    def after(self, *a, real=real, **kw):
        result = real(self, *a, **kw)
        calls.append(1)
        if len(calls) == n:
            die()
        return result

    setattr(owner, name, after)
if kill and "before_chunk_delete_in" in kill:  # die when that indexer method is about to delete chunks
    inside, method = [], getattr(Indexer, kill["before_chunk_delete_in"])

    def wrapped(self, *a, **kw):
        inside.append(1)
        try:
            return method(self, *a, **kw)
        finally:
            inside.pop()

    setattr(Indexer, kill["before_chunk_delete_in"], wrapped)
    for name in ("delete_doc", "delete_docs"):
        def delete(self, *a, real=getattr(ChunkStore, name), **kw):
            if inside:
                die()
            return real(self, *a, **kw)

        setattr(ChunkStore, name, delete)
report = engine.sync()
print("SYNCED " + json.dumps({"indexed": sorted(o.path for o in report.outcomes if o.status == "indexed"),
                              "embedded": report.embedded}), flush=True)
print("FOUND " + json.dumps(state(engine)), flush=True)
"""

def check(folder: Path, index: Path, embedder) -> dict:
    """What an engine opened on the index finds: records, Chroma's chunks, the BM25 snapshot, an answer. Opened in
    this process (on the session's model) and closed again, so that the next `rag` process can write the index."""
    from collections import Counter

    from rag import Engine, load_settings

    engine = Engine(load_settings(env={}, folder=folder, index_dir=index), embedder=embedder)
    try:
        records = {r.doc_id: r for r in engine.documents()}
        stored = engine.store.all_chunks()
        answer = engine.ask("Which valve code is in document 17?", threshold=2.0)
        return {
            "records": {d: [r.status, r.chunks, r.path] for d, r in records.items()},
            "store_ids": [c.id for c in stored],
            "store_docs": Counter(c.doc_id for c in stored),
            "snapshot_ids": [c.id for c in engine.snapshot.chunks],
            "snapshot_docs": Counter(c.doc_id for c in engine.snapshot.chunks),
            "lexical_size": engine.snapshot.lexical.size,
            "answer_docs": [c.doc_name for c in answer.gated.citations],
        }
    finally:
        engine.close()


N_DOCS = 60  # 80 chunks: with GROUP, five write groups of 12 documents (16 chunks) and a rest
GROUP = 16  # chunks per write group in the crash test's indexers (rag.engine.EMBED_GROUP, set in the child)


def doc_text(i: int) -> str:
    body = "\n\n".join(f"Paragraph {p} of document {i}: valve code V-{i:03d}-{p} controls pump {i % 7}. " * 3
                       for p in range(1 + i % 3))
    return f"# Document {i}\n\n## Part\n\n{body}\n"


def write_folder(folder: Path) -> None:
    folder.mkdir(parents=True)
    for i in range(N_DOCS):
        (folder / f"doc-{i:03d}.md").write_text(doc_text(i), encoding="utf-8")


def step(folder: Path, index: Path, store: dict, kill: dict | None) -> tuple[int, list[dict], dict | None]:
    """One indexer process (STEP): (its return code, what it found: [before its sync, after it], its sync)."""
    spec = {"folder": str(folder), "index": str(index), "store": store, "kill": kill, "group": GROUP}
    out = subprocess.run([sys.executable, "-c", STEP, json.dumps(spec)], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    lines = out.stdout.splitlines()
    found = [json.loads(x.split(" ", 1)[1]) for x in lines if x.startswith("FOUND ")]
    synced = [json.loads(x.split(" ", 1)[1]) for x in lines if x.startswith("SYNCED ")]
    assert found, out.stderr[-3000:]
    return out.returncode, found, synced[0] if synced else None


def write_groups(chunks: dict[str, int], todo: list[str]) -> list[list[str]]:
    """The write groups `Indexer._index` makes of these files, in order: a group closes at GROUP chunks."""
    groups, current, n = [], [], 0
    for path in todo:
        current.append(path)
        n += chunks[path]
        if n >= GROUP:
            groups.append(current)
            current, n = [], 0
    return groups + ([current] if current else [])


def statuses(records: dict) -> dict[str, set[str]]:
    """{status: {paths}} of a records dict as the steps report it."""
    out: dict[str, set[str]] = {}
    for status, _, path in records.values():
        out.setdefault(status, set()).add(path)
    return out


def assert_consistent(state: dict, complete: bool) -> None:
    records = state["records"]
    # Chroma and the BM25 snapshot hold the same chunk ids, each once.
    assert len(state["store_ids"]) == len(set(state["store_ids"]))
    assert sorted(state["store_ids"]) == sorted(state["snapshot_ids"])
    assert state["lexical_size"] == len(state["snapshot_ids"])
    # All of a document's chunks, or none; counts written by the indexer match the store.
    for doc_id, n in state["store_docs"].items():
        assert doc_id in records, "orphan chunks in the store"
        status, chunks, _ = records[doc_id]
        assert status == "indexed" and n == chunks, (doc_id, status, n, chunks)
    for doc_id, (status, chunks, path) in records.items():
        if status == "indexed":
            assert state["store_docs"].get(doc_id) == chunks and state["snapshot_docs"].get(doc_id) == chunks
        else:
            assert status in ("pending", "failed") and doc_id not in state["store_docs"], (path, status)
    if complete:
        assert len(records) == N_DOCS and all(r[0] == "indexed" for r in records.values())
        assert "doc-017.md" in state["answer_docs"]


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def store_args(request):
    if request.param == "embedded":
        return []
    server = request.getfixturevalue("chroma_server")
    import uuid

    return [server["host"], str(server["port"]), "crash" + uuid.uuid4().hex[:8]]


@pytest.mark.slow
def test_sigkill_mid_indexing_at_several_points_loses_nothing(tmp_path, store_args):
    from rag.indexing.chunk import chunk_document
    from rag.indexing.indexer import doc_id_for
    from rag.reading.extract import extract

    folder, index = tmp_path / "docs", tmp_path / "index"
    write_folder(folder)
    store = dict(zip(("chroma_host", "chroma_port", "collection_prefix"), store_args))
    if store:
        store["chroma_port"] = int(store["chroma_port"])
    chunks = {p.name: len(chunk_document(extract(p, p.name), doc_id_for(p.name))) for p in sorted(folder.iterdir())}
    groups = write_groups(chunks, sorted(chunks))
    assert len(groups) >= 4 and len(set(chunks.values())) > 1  # several groups, documents of several sizes
    doc = {path: doc_id_for(path) for path in chunks}

    # Each step first reports what the step before it left (`left`), then dies where its comment says.
    # 1. Inside the first write group: after its one store write, before its records say indexed.
    rc, found, _ = step(folder, index, store, {"after": ["ChunkStore", "add", 1]})
    assert rc == -signal.SIGKILL and "raw_records" not in found[0]  # nothing there before it
    # 2. After exactly two write groups are committed.
    rc, found, _ = step(folder, index, store, {"after": ["Indexer", "_write_group", 2]})
    assert rc == -signal.SIGKILL
    left = found[0]  # step 1's kill: 0 committed, the first group pending
    assert statuses(left["raw_records"]) == {"pending": set(groups[0])}
    assert left["raw_store_docs"] == {doc[p]: chunks[p] for p in groups[0]}  # its store write had finished
    assert_consistent(left, complete=False)  # start-up undid it
    assert not left["store_ids"]
    # 3. In _forget (doc-000.md deleted from the folder), between its record update and its chunk delete.
    committed = set(groups[0] + groups[1])
    (folder / "doc-000.md").unlink()
    rc, found, _ = step(folder, index, store, {"before_chunk_delete_in": "_forget"})
    assert rc == -signal.SIGKILL
    left = found[0]  # step 2's kill: exactly the two groups committed, nothing else
    assert statuses(left["raw_records"]) == {"indexed": committed}
    assert_consistent(left, complete=False)
    # 4. In _write_failed (doc-001.md emptied: it fails), between its record update and its chunk delete.
    (folder / "doc-001.md").write_bytes(b"")
    rc, found, _ = step(folder, index, store, {"before_chunk_delete_in": "_write_failed"})
    assert rc == -signal.SIGKILL
    left = found[0]  # step 3's kill: doc-000's record is gone...
    assert statuses(left["raw_records"]) == {"indexed": committed - {"doc-000.md"}}
    assert left["raw_store_docs"][doc["doc-000.md"]] == chunks["doc-000.md"]  # ...its chunks were not yet
    assert_consistent(left, complete=False)  # start-up deleted them
    # 5. Both files back; a sync that runs to the end indexes each document not yet committed, once.
    for name in ("doc-000.md", "doc-001.md"):
        (folder / name).write_text(doc_text(int(name[4:7])), encoding="utf-8")
    rc, found, synced = step(folder, index, store, None)
    assert rc == 0
    left, final = found  # step 4's kill: doc-001 recorded failed, its chunks not yet deleted
    assert statuses(left["raw_records"]) == {"indexed": committed - {"doc-000.md", "doc-001.md"},
                                             "failed": {"doc-001.md"}}
    assert left["raw_store_docs"][doc["doc-001.md"]] == chunks["doc-001.md"]
    assert_consistent(left, complete=False)
    again = set(chunks) - committed | {"doc-000.md", "doc-001.md"}
    assert set(synced["indexed"]) == again and synced["embedded"] == sum(chunks[p] for p in again)
    assert_consistent(final, complete=True)
    # Deterministic chunk ids: the chunks are exactly those of one clean pass.
    expected = [c.id for p in sorted(folder.iterdir())
                for c in chunk_document(extract(p, p.name), doc_id_for(p.name))]
    assert sorted(final["store_ids"]) == sorted(expected)


@pytest.mark.slow
def test_rebuild_from_the_folder_restores_ids_statuses_and_answers(tmp_path, embedder):
    folder, index = tmp_path / "docs", tmp_path / "index"
    write_folder(folder)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    env = dict(os.environ, RAG_FOLDER=str(folder), RAG_INDEX_DIR=str(index))
    rag = [sys.executable, "-m", "rag.cli"]
    subprocess.run(rag + ["index"], env=env, check=True, capture_output=True, cwd=ROOT, timeout=600)
    assert (index / "RAG_INDEX").is_file()  # what lets --rebuild delete it
    before = check(folder, index, embedder)
    ask = subprocess.run(rag + ["ask", "Which valve code is in document 17?", "--json"], env=env, check=True,
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    out = subprocess.run(rag + ["index", "--rebuild"], env=env, check=True, capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert "indexed" in out.stdout
    after = check(folder, index, embedder)
    assert sorted(before["store_ids"]) == sorted(after["store_ids"])
    assert before["records"] == after["records"]
    assert any(r[0] == "failed" and r[2] == "broken.pdf" for r in after["records"].values())
    ask2 = subprocess.run(rag + ["ask", "Which valve code is in document 17?", "--json"], env=env, check=True,
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    a, b = json.loads(ask.stdout), json.loads(ask2.stdout)
    assert a["answer"] == b["answer"]
    assert [c["chunk_id"] for c in a["candidates"]] == [c["chunk_id"] for c in b["candidates"]]

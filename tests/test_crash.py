"""Crash safety and rebuild: a real indexer process killed with SIGKILL mid-way, then restarted.

Every check runs in a fresh process, as a person restarting the app would: it opens the engine (which
finishes or undoes what the crash left) and reports what the library, Chroma and the BM25 snapshot hold.
Runs against the embedded store and against a real `chroma run` server.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

INDEXER = """
import sys
from rag import Engine, load_settings
extra = dict(chroma_host=sys.argv[3], chroma_port=int(sys.argv[4]), collection_prefix=sys.argv[5]) if len(sys.argv) > 3 else {}
engine = Engine(load_settings(env={}, folder=sys.argv[1], index_dir=sys.argv[2], **extra))
report = engine.sync()
print(json.dumps({"embedded": report.embedded}))
"""

CHECKER = """
import json, sys
from collections import Counter
from rag import Engine, load_settings
argv = [a for a in sys.argv[1:] if a != "--sync"]
extra = dict(chroma_host=argv[2], chroma_port=int(argv[3]), collection_prefix=argv[4]) if len(argv) > 2 else {}
engine = Engine(load_settings(env={}, folder=argv[0], index_dir=argv[1], **extra))
if "--sync" in sys.argv:
    engine.sync()
records = {r.doc_id: r for r in engine.documents()}
store_ids = [c.id for c in engine.store.all_chunks()]
store_docs = Counter(c.doc_id for c in engine.store.all_chunks())
snap = Counter(c.doc_id for c in engine.snapshot.chunks)
answer = engine.ask("Which valve code is in document 17?", threshold=2.0)
print(json.dumps({
    "records": {d: [r.status, r.chunks, r.path] for d, r in records.items()},
    "store_ids": store_ids,
    "store_docs": store_docs,
    "snapshot_ids": [c.id for c in engine.snapshot.chunks],
    "snapshot_docs": snap,
    "lexical_size": engine.snapshot.lexical.size,
    "answer_docs": [c.doc_name for c in answer.gated.citations],
}))
"""

N_DOCS = 200


def write_folder(folder: Path) -> None:
    folder.mkdir(parents=True)
    for i in range(N_DOCS):
        body = "\n\n".join(f"Paragraph {p} of document {i}: valve code V-{i:03d}-{p} controls pump {i % 7}. " * 3
                           for p in range(1 + i % 3))
        (folder / f"doc-{i:03d}.md").write_text(f"# Document {i}\n\n## Part\n\n{body}\n", encoding="utf-8")


def run(script: str, *args: str, timeout: int = 600) -> dict:
    out = subprocess.run([sys.executable, "-c", "import json\n" + script, *args], capture_output=True, text=True,
                         timeout=timeout, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def count_status(db: Path, status: str) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            rows = conn.execute("SELECT record FROM documents").fetchall()
    except sqlite3.Error:
        return 0
    return sum(1 for (r,) in rows if json.loads(r)["status"] == status)


def kill_when(args: list[str], db: Path, indexed_at_least: int, pending: bool = False) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import json\n" + INDEXER, *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    try:
        while proc.poll() is None and time.time() < deadline:
            if pending and count_status(db, "pending") > 0 or not pending and count_status(db, "indexed") >= indexed_at_least:
                break
            time.sleep(0.005)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


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
            assert status == "pending" and doc_id not in state["store_docs"], (path, status)
    if complete:
        assert len(records) == N_DOCS and all(r[0] == "indexed" for r in records.values())
        assert "doc-017.md" in state["answer_docs"]


@pytest.fixture(params=["embedded", "server"])
def store_args(request):
    if request.param == "embedded":
        return []
    server = request.getfixturevalue("chroma_server")
    import uuid

    return [server["host"], str(server["port"]), "crash" + uuid.uuid4().hex[:8]]


@pytest.mark.slow
def test_sigkill_mid_indexing_at_several_points_loses_nothing(tmp_path, store_args):
    folder, index = tmp_path / "docs", tmp_path / "index"
    write_folder(folder)
    args = [str(folder), str(index), *store_args]
    db = index / "library.sqlite"
    # 1: killed while the first document is half written; 2 and 3: further along, after restarts.
    kill_when(args, db, 0, pending=True)
    assert_consistent(run(CHECKER, *args), complete=False)
    for at_least in (40, 120):
        kill_when(args, db, at_least)
        assert_consistent(run(CHECKER, *args), complete=False)
    final = run(CHECKER, *args, "--sync")
    assert_consistent(final, complete=True)
    # Deterministic chunk ids: the chunks are exactly those of one clean pass.
    from rag.chunk import chunk_document
    from rag.engine import doc_id_for
    from rag.extract import extract

    expected = [c.id for p in sorted(folder.iterdir())
                for c in chunk_document(extract(p, p.name), doc_id_for(p.name))]
    assert sorted(final["store_ids"]) == sorted(expected)


@pytest.mark.slow
def test_rebuild_from_the_folder_restores_ids_statuses_and_answers(tmp_path):
    folder, index = tmp_path / "docs", tmp_path / "index"
    write_folder(folder)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    env = dict(os.environ, RAG_FOLDER=str(folder), RAG_INDEX_DIR=str(index))
    rag = [sys.executable, "-m", "rag.cli"]
    subprocess.run(rag + ["index"], env=env, check=True, capture_output=True, cwd=ROOT, timeout=600)
    before = run(CHECKER, str(folder), str(index))
    ask = subprocess.run(rag + ["ask", "Which valve code is in document 17?", "--json"], env=env, check=True,
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    out = subprocess.run(rag + ["index", "--rebuild"], env=env, check=True, capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert "indexed" in out.stdout
    after = run(CHECKER, str(folder), str(index))
    assert sorted(before["store_ids"]) == sorted(after["store_ids"])
    assert before["records"] == after["records"]
    assert any(r[0] == "failed" and r[2] == "broken.pdf" for r in after["records"].values())
    ask2 = subprocess.run(rag + ["ask", "Which valve code is in document 17?", "--json"], env=env, check=True,
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    a, b = json.loads(ask.stdout), json.loads(ask2.stdout)
    assert a["answer"] == b["answer"]
    assert [c["chunk_id"] for c in a["candidates"]] == [c["chunk_id"] for c in b["candidates"]]

"""Hardening: concurrency, fuzzed bad input, loopback-only network use, and the Chroma server going away.

All with real parts: the MiniLM model, Chroma on disk or a real `chroma run` server on 127.0.0.1; the
concurrency tests run against both.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import unicodedata
from collections import Counter
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rag
from rag import UploadError
from rag.indexing.chunk import chunk_document
from rag.reading.extract import extract_bytes
from rag.reading.document import ExtractionError
from rag.indexing.store import StoreError
from rag.indexing.uploads import safe_name

ROOT = Path(__file__).resolve().parent.parent


def doc_text(i: int) -> str:
    return f"# Report {i}\n\n## Findings\n\nInspection {i} found the relief valve R-{i:03d} stuck.\n\n## Fix\n\nReplace the seal.\n"


# --- concurrency ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_two_uploaders_and_an_asker_at_once(store_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "base.md").write_text(doc_text(0))
    engine = store_engine(folder)
    engine.sync()
    errors: list[BaseException] = []
    answers: list[int] = []
    stop = threading.Event()

    def uploader(offset: int) -> None:
        try:
            for i in range(offset, offset + 6):
                rel = engine.save_upload(f"report-{i}.md", doc_text(i).encode())
                report = engine.index_files([rel])
                assert report.outcomes[0].status == "indexed", report.outcomes
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised in the main thread
            errors.append(exc)

    def asker() -> None:
        try:
            while not stop.is_set():
                snap = engine.snapshot
                result = engine.search("Which relief valve was stuck?")
                per_doc = Counter(c.doc_id for c in snap.chunks)
                for c in result.candidates:
                    # never half a document: the snapshot holds all of its chunks or none
                    assert per_doc[c.doc_id] in (0, engine.library.get(c.doc_id).chunks)
                answers.append(len(result.candidates))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=uploader, args=(1,)), threading.Thread(target=uploader, args=(101,)),
               threading.Thread(target=asker)]
    for t in threads:
        t.start()
    for t in threads[:2]:
        t.join(timeout=600)
    stop.set()
    threads[2].join(timeout=60)
    assert not errors, errors
    assert answers and min(answers) >= 1  # questions during indexing answered from what was indexed
    records = engine.documents()
    assert len(records) == 13 and all(r.status == "indexed" for r in records)
    assert sorted(p.name for p in folder.glob("*.md")) == sorted(r.path for r in records)
    assert len({c.id for c in engine.snapshot.chunks}) == len(engine.snapshot.chunks) == engine.store.count()


@pytest.mark.slow
def test_one_writer_at_a_time_across_processes_and_a_reader_in_another(store_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"r{i}.md").write_text(doc_text(i))
    engine = store_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    env = dict(os.environ, RAG_FOLDER=str(folder), RAG_INDEX_DIR=str(tmp_path / "idx"),
               RAG_COLLECTION_PREFIX=engine.settings.server.collection_prefix)
    if engine.settings.server.chroma_host:  # the other processes use the same server
        env.update(RAG_CHROMA_HOST=engine.settings.server.chroma_host, RAG_CHROMA_PORT=str(engine.settings.server.chroma_port))
    (folder / "new.md").write_text(doc_text(50))
    engine.lock.acquire()
    try:
        writer = subprocess.Popen([sys.executable, "-m", "rag.cli", "index"], env=env, cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # A reader in another process is not blocked by the writer lock.
        reader = subprocess.run([sys.executable, "-m", "rag.cli", "ask", "Which relief valve was stuck?", "--json"],
                                env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert reader.returncode == 0, reader.stderr[-2000:]
        assert json.loads(reader.stdout)["candidates"]
        time.sleep(1.0)
        assert writer.poll() is None  # still waiting for the lock we hold
    finally:
        engine.lock.release()
    out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err[-2000:]
    assert "indexed   new.md" in out


@pytest.mark.slow
def test_index_progress_into_a_pipe_is_whole_lines(tmp_path, capsys):
    # A log file of `rag index 2> log` held "\r[....] 0/2" glued to the next state: a terminal's redraw.
    from rag.cli import main

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in (1, 2):
        (folder / f"valves-{i}.md").write_text(doc_text(i))
    assert main(["--config", str(tmp_path / "none.toml"), "--folder", str(folder), "--index-dir",
                 str(tmp_path / "idx"), "index"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    bars = [line for line in err.splitlines() if line.startswith("[")]
    assert len(bars) == 2 and bars[0].startswith("[" + "." * 30 + "] 0/2") and bars[1].startswith("[" + "#" * 30 + "] 2/2")


def test_ask_names_the_files_it_could_not_read_or_has_not_indexed_and_a_closed_pipe_is_no_error(make_engine, tmp_path,
                                                                                                 capsys):
    from rag.cli import main

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "valves.md").write_text(doc_text(1))
    (folder / "warranty-scan.pdf").write_bytes(b"a scan that was saved as text, not a PDF")
    make_engine(folder, index_dir=tmp_path / "idx").sync()
    args = ["--config", str(tmp_path / "none.toml"), "--folder", str(folder), "--index-dir", str(tmp_path / "idx"),
            "ask", "Which relief valve was stuck?"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Not searched: 1 file could not be read (warranty-scan.pdf); `rag status` says why." in out
    assert "Not indexed yet" not in out  # the failed file is indexed as failed: nothing is pending
    # `rag ask` does not index (the app may be doing it); a file added or changed since is named, not lost.
    (folder / "valves.md").write_text(doc_text(1) + "\nThe relief valve was replaced in May.\n")
    (folder / "pumps.md").write_text(doc_text(2))
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [d["path"] for d in out["failed_documents"]] == ["warranty-scan.pdf"]
    assert "PDF" in out["failed_documents"][0]["reason"] and out["pending_files"] == ["pumps.md", "valves.md"]
    assert main(args) == 0
    assert "Not indexed yet: 2 files added, changed or removed since the last `rag index` (pumps.md, valves.md)" in \
        capsys.readouterr().out
    assert main(args[:-2] + ["status"]) == 0
    status = capsys.readouterr().out
    assert "pending  pumps.md" in status and "pending  valves.md" in status and "; 2 files pending" in status
    # `rag ask ... | head`: the reader goes away before the answer is written. That is not an error.
    p = subprocess.Popen([sys.executable, "-m", "rag.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=300) == 0, err[-2000:]
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-2000:]


def test_library_reads_do_not_wait_for_a_writer(tmp_path):
    from rag.indexing.library import DocRecord, Library

    lib = Library(tmp_path / "library.sqlite")
    lib.put(DocRecord(doc_id="a", path="a.md", kind="md", status="indexed", chunks=2))
    writer = sqlite3.connect(tmp_path / "library.sqlite", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a write transaction
    writer.execute("UPDATE documents SET record = replace(record, '\"indexed\"', '\"pending\"')")
    seen: list[object] = []
    try:
        reader = threading.Thread(target=lambda: seen.extend([lib.all(), lib.get("a")]), daemon=True)
        reader.start()
        reader.join(timeout=3)
        assert not reader.is_alive(), "Library reads waited for another connection's write lock"
        # They see the last commit, not the writer's uncommitted change.
        assert [r.status for r in seen[0]] == ["indexed"] and seen[1].status == "indexed"
    finally:
        writer.execute("COMMIT")
        writer.close()
    assert lib.get("a").status == "pending" and [r.status for r in lib.all()] == ["pending"]
    lib.put(DocRecord(doc_id="b", path="b.md", kind="md", status="failed", reason="empty"))  # writes still work
    assert [r.path for r in lib.all()] == ["a.md", "b.md"]
    lib.close()


def test_embed_cached_from_several_threads_gives_the_sequential_vectors(embedder):
    import random

    import numpy as np

    # A fresh cache (and model lock) over the session's model: other tests' entries play no part.
    fresh = rag.indexing.embed.Embedder(name=embedder.name, path=embedder.path, dimension=embedder.dimension,
                               max_tokens=embedder.max_tokens, languages=embedder.languages,
                               batch_size=embedder.batch_size, _model=embedder._model)
    pool = [f"Inspection {i} found the relief valve R-{i:03d} stuck in position {i % 4}." for i in range(24)]
    expected = {t: fresh.embed_cached([t])[0] for t in pool}  # one at a time, sequentially
    fresh._cache.clear()
    errors: list[BaseException] = []
    mismatches: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(15):
                texts = rng.sample(pool, rng.randint(2, 6)) + [rng.choice(pool)]  # a repeat inside one call too
                got = fresh.embed_cached(texts, limit=6)  # a small cache: threads evict each other's entries
                assert got.shape == (len(texts), fresh.dimension)
                mismatches.extend(t for t, v in zip(texts, got) if not np.allclose(v, expected[t], atol=1e-5))
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[0]
    assert not mismatches, mismatches[:3]
    assert len(fresh._cache) <= 6


# --- rebuild only what is an index ------------------------------------------------------------------

def test_rebuild_refuses_a_folder_that_is_not_an_index_and_deletes_nothing(make_engine, tmp_path, capsys):
    from rag.cli import main
    from rag.indexing.library import INDEX_MARKER, is_index_dir

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(doc_text(1))
    notes = tmp_path / "notes"  # someone's folder, named by mistake as the index folder
    (notes / "sub").mkdir(parents=True)
    (notes / "diary.txt").write_text("Dear diary")
    (notes / "sub" / "plan.md").write_text("# Plan")

    def tree(p: Path) -> list[str]:
        return sorted(str(x.relative_to(p)) for x in p.rglob("*"))

    before = tree(notes)
    config = str(tmp_path / "none.toml")
    code = main(["--config", config, "--folder", str(docs), "--index-dir", str(notes), "index", "--rebuild"])
    err = capsys.readouterr().err
    assert code == 2 and str(notes) in err and "nothing was deleted" in err
    assert tree(notes) == before  # nothing deleted, nothing created
    # An engine once opened on that folder writes its library there, but no marker: still not deletable.
    make_engine(docs, index_dir=notes).close()
    assert (notes / "library.sqlite").is_file() and not (notes / INDEX_MARKER).exists()
    assert main(["--config", config, "--folder", str(docs), "--index-dir", str(notes), "index", "--rebuild"]) == 2
    assert (notes / "diary.txt").read_text() == "Dear diary" and (notes / "sub" / "plan.md").is_file()
    # A real index: marked when made; one from before the marker (library.sqlite and the index's own
    # files only) counts too, and is marked when next opened.
    engine = make_engine(docs, index_dir=tmp_path / "idx")
    engine.sync()
    engine.close()
    assert (tmp_path / "idx" / INDEX_MARKER).is_file() and is_index_dir(tmp_path / "idx")
    (tmp_path / "idx" / INDEX_MARKER).unlink()
    assert is_index_dir(tmp_path / "idx")
    make_engine(docs, index_dir=tmp_path / "idx").close()
    assert (tmp_path / "idx" / INDEX_MARKER).is_file()
    assert not is_index_dir(tmp_path / "nowhere") and not is_index_dir(notes / "diary.txt")


# --- bad input, fuzzed ----------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4000), st.sampled_from([".md", ".txt", ".pdf", ".markdown"]))
def test_random_bytes_under_every_extension_end_in_text_or_a_reason(data, ext):
    try:
        doc = extract_bytes(data, "fuzz" + ext)
    except ExtractionError as exc:
        assert exc.reason and len(exc.reason) < 300
        return
    chunks = chunk_document(doc, "f")
    for c in chunks:
        assert doc.text[c.start:c.end] == c.content


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=400))
def test_safe_names_are_only_names(name):
    clean = safe_name(name)
    assert clean and "/" not in clean and "\\" not in clean and "\x00" not in clean
    assert not clean.startswith(".") and len(clean) <= 131
    assert all(ch.isprintable() for ch in clean)


NASTY_NAMES = ["../escape.md", "../../etc/passwd.txt", "/etc/absolute.md", "C:\\Windows\\win.md", "nul\x00byte.md",
               "bell\x07ctrl\x1b.txt", "x" * 600 + ".md", ".hidden.md", "sub/dir/name.md", "..", "",
               "tab\tname.md", "ok name (1).md"]


@pytest.mark.parametrize("name", NASTY_NAMES, ids=range(len(NASTY_NAMES)))
def test_upload_names_never_write_outside_the_folder(make_engine, tmp_path, name):
    folder = tmp_path / "docs"
    engine = make_engine(folder)
    before = sorted(p for p in tmp_path.rglob("*") if folder not in p.parents and p != folder and "index" not in str(p))
    try:
        rel = engine.save_upload(name, b"# T\n\n## S\n\nSome text that is fine.\n")
    except UploadError as exc:
        assert str(exc)
    else:
        saved = folder / rel
        assert saved.is_file() and saved.parent == folder and "/" not in rel
        report = engine.index_files([rel])
        assert report.outcomes[0].status in ("indexed", "failed")
    after = sorted(p for p in tmp_path.rglob("*") if folder not in p.parents and p != folder and "index" not in str(p))
    assert before == after  # nothing written anywhere else


def test_names_equal_up_to_case_or_normalisation_ask_before_overwriting(make_engine, tmp_path):
    engine = make_engine(tmp_path / "docs")
    nfc = unicodedata.normalize("NFC", "Café.md")
    nfd = unicodedata.normalize("NFD", "Café.md")
    assert engine.save_upload(nfc, b"first") == nfc
    for variant in (nfd, "CAFÉ.md", "café.MD"):
        with pytest.raises(UploadError, match="already in the folder"):
            engine.save_upload(variant, b"second")
    assert len(list((tmp_path / "docs").iterdir())) == 1


@pytest.mark.slow
def test_huge_line_nested_markdown_and_page_limits(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "oneline.txt").write_bytes(b"a" * (50 * 1024 * 1024))
    nested = "# Top\n\n" + "".join(f"{'#' * (1 + d % 6)} Level {d}\n\n{'> ' * (d % 40)}{'  ' * d}- item {d}\n\n" for d in range(400))
    (folder / "nested.md").write_text(nested)
    blank = pymupdf.open()
    for _ in range(2100):
        blank.new_page()
    blank.save(folder / "many-pages.pdf")
    blank2 = pymupdf.open()
    for _ in range(1500):
        blank2.new_page()
    blank2.save(folder / "empty-pages.pdf")
    (folder / "good.md").write_text(doc_text(7))
    engine = make_engine(folder)
    report = engine.sync()
    status = {o.path: (o.status, o.reason) for o in report.outcomes}
    assert status["oneline.txt"][0] == "failed" and "limit is 5,000,000" in status["oneline.txt"][1]
    assert status["many-pages.pdf"][0] == "failed" and "2,100 pages; the limit is 2,000" in status["many-pages.pdf"][1]
    assert status["empty-pages.pdf"][0] == "failed" and "no extractable text" in status["empty-pages.pdf"][1]
    assert status["nested.md"][0] == "indexed"
    assert status["good.md"][0] == "indexed"
    assert engine.search("relief valve R-007").candidates[0].doc_name == "good.md"


# --- local only -------------------------------------------------------------------------------------

def test_nothing_connects_beyond_loopback_during_index_and_ask(tmp_path, monkeypatch, embedder):
    seen: list[object] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def record(addr):
        seen.append(addr)

    monkeypatch.setattr(socket.socket, "connect", lambda self, addr: (record(addr), real_connect(self, addr))[1])
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, addr: (record(addr), real_connect_ex(self, addr))[1])
    real_getaddrinfo = socket.getaddrinfo
    looked_up: list[str] = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, *a, **k: (looked_up.append(host), real_getaddrinfo(host, *a, **k))[1])

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(doc_text(1))
    # A fresh engine, model load included: the path a first start takes.
    rag.indexing.embed.load_embedder.cache_clear()
    try:
        engine = rag.Engine(rag.load_settings(env={}, folder=folder, index_dir=tmp_path / "idx"))
        engine.sync()
        turn = engine.ask("Which relief valve was stuck?")
        assert turn.gated.candidates
    finally:
        rag.indexing.embed.load_embedder.cache_clear()
    for addr in seen:
        host = addr[0] if isinstance(addr, tuple) else addr
        assert isinstance(addr, (str, bytes)) or host in ("127.0.0.1", "::1", "localhost"), addr
    assert all(h in ("127.0.0.1", "::1", "localhost") for h in looked_up), looked_up


def test_api_key_is_never_in_the_settings_repr():
    s = rag.load_settings(env={"RAG_LLM_API_KEY": "sk-secret-123"})
    assert s.llm_api_key == "sk-secret-123" and "sk-secret-123" not in repr(s)


# --- the Chroma server going away ----------------------------------------------------------------------

def start_server(path: Path, port: int) -> subprocess.Popen:
    import urllib.request

    proc = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(path), "--host",
                             "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
    deadline = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc
        except OSError:
            assert proc.poll() is None and time.time() < deadline, "chroma run did not start"
            time.sleep(0.3)


def test_server_killed_mid_session_gives_a_clear_error_and_recovers(make_engine, tmp_path):
    from tests.conftest import free_port

    port = free_port()
    proc = start_server(tmp_path / "chroma-db", port)
    try:
        folder = tmp_path / "docs"
        folder.mkdir()
        (folder / "a.md").write_text(doc_text(3))
        engine = make_engine(folder, chroma_host="127.0.0.1", chroma_port=port)
        engine.sync()
        assert engine.search("relief valve").candidates
        proc.kill()
        proc.wait()
        # Questions keep being answered from the engine's snapshot (search does not read the store);
        # writing needs the server, and says so plainly.
        assert engine.search("relief valve R-003").candidates[0].doc_name == "a.md"
        (folder / "b.md").write_text(doc_text(4))
        with pytest.raises(StoreError, match=f"Chroma server at 127.0.0.1:{port}.*chroma run"):
            engine.index_files(["b.md"])
        proc = start_server(tmp_path / "chroma-db", port)
        engine.index_files(["b.md"])  # same engine, same data, once the server is back
        assert {d.path: d.status for d in engine.documents()} == {"a.md": "indexed", "b.md": "indexed"}
    finally:
        proc.kill()
        proc.wait()

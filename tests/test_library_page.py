"""The Library page while files are being indexed: it shows the last calibration and never recomputes it.

A calibration searches 800 unrelated questions. While the queue indexes files the folder changes every few
seconds, so the page (like the chat) shows the calibration it has and leaves the new one to the queue,
which calibrates once when it empties. Opened while the queue is idle and the calibration out of date, the
page does calibrate.

Everything is real: the real MiniLM model, a real Chroma index in a temporary folder, the page run by
Streamlit's AppTest through the same `ui.open_workspace` cache as the app. The queue is held busy the way
another writer holds it: this test takes the index's writer lock (`rag.indexing.library.WriterLock`, a file lock
across processes), so the queue's worker embeds its file and then waits to write it, for as long as the
test holds the lock.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import rag
from app import ui
from rag.indexing.library import WriterLock

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = str(ROOT / "app" / "pages" / "library.py")
TIMEOUT = 180  # the first run loads the model and opens the index; AppTest's default is 3 s

NOTES = {
    "kiln.md": "# Kiln log\n\nThe glaze on the top shelf fired at cone six and came out glossy with a green cast.\n",
    "ferry.md": "# Ferry\n\nThe ferry to Cacilhas leaves Cais do Sodre every twenty minutes on weekdays.\n",
}
ADDED = ("heron.md", "# Herons\n\nThe Zanzibar heron migrates every October to the salt lakes of Quarnelia.\n")
QUEUED = ("moths.md", "# Moths\n\nThe lunar moth of Quarnelia only flies under a full moon, never in rain.\n")


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    monkeypatch.setenv("RAG_FOLDER", str(docs))
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("RAG_CONFIG", str(tmp_path / "none.toml"))  # no rag.toml of the working tree leaks in
    monkeypatch.setenv("RAG_WATCH_FOLDER", "false")  # only the test decides what is queued, and when
    return docs


def calibrated_lines(at) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**Calibrated threshold**")]


def test_library_opened_while_indexing_keeps_the_last_calibration_and_calibrates_once_idle(folder, embedder):
    # An index whose stored calibration is older than its content: calibrated on two notes, then a third
    # indexed. (The engine calibrates after each change; the stored file is put back as it was before it.)
    settings = rag.load_settings()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    before = rag.Engine(settings, embedder=embedder)
    before.sync()
    stored = settings.index_path / "calibration.json"
    old = stored.read_bytes()
    (folder / ADDED[0]).write_text(ADDED[1], encoding="utf-8")
    before.index_files([ADDED[0]])
    before.close()
    stored.write_bytes(old)

    # Another writer holds the index: the app's queue takes the new file, embeds it and waits to write it.
    (folder / QUEUED[0]).write_text(QUEUED[1], encoding="utf-8")
    other_writer = WriterLock(settings.index_path / "writer.lock")
    assert other_writer.acquire(timeout=0)
    try:
        lib = AppTest.from_file(LIBRARY, default_timeout=TIMEOUT).run()  # opens the engine; its queue starts
        assert not lib.exception, lib.exception
        engine = ui.open_workspace(ui.engine_key(settings), settings).engine
        assert engine.calibrations == 0, "the Library page recalibrated while files were being indexed"
        assert engine.queue.busy() and engine.queue.get(QUEUED[0]).active
        assert engine.calibration is not None
        assert engine.calibration.fingerprint != engine.calibration_fingerprint()  # out of date: heron.md
        assert calibrated_lines(lib)  # the last calibration is shown meanwhile
        lib.run()
        assert engine.calibrations == 0
    finally:
        other_writer.release()

    try:
        # The queue writes its file and, once empty, calibrates: once, for what the folder now holds.
        assert engine.queue.wait_idle(300)
        assert engine.queue.get(QUEUED[0]).state == "indexed"
        assert engine.calibrations == 1
        assert engine.calibration.fingerprint == engine.calibration_fingerprint()
        lib.run()
        assert not lib.exception, lib.exception
        assert engine.calibrations == 1 and calibrated_lines(lib)

        # With the queue idle, a change leaves the calibration out of date and opening the page calibrates.
        engine.remove(next(d.doc_id for d in engine.documents() if d.path == QUEUED[0]))
        assert not engine.queue.busy()
        assert engine.calibration.fingerprint != engine.calibration_fingerprint()
        again = AppTest.from_file(LIBRARY, default_timeout=TIMEOUT).run()
        assert not again.exception, again.exception
        assert engine.calibrations == 2
        assert engine.calibration.fingerprint == engine.calibration_fingerprint()
    finally:
        engine.stop()  # the worker of this test's engine, not left running for the rest of the session

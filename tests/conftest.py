"""Shared fixtures: the real MiniLM model (loaded once per test session), real Chroma stores on disk.

Every engine here is a real one over a temporary folder; nothing is mocked. `make_engine` builds one
over any folder with settings overrides; `sample_engine` is the sample folder (data/) indexed once
for the whole session, for tests that only read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import rag
from rag import Engine, load_settings

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


# The files that take longest (real servers, browsers, killed processes, many model loads), longest first. `make test`
# runs the suite on two workers, a file to a worker (`-n 2 --dist loadfile --no-loadscope-reorder`), handing out the
# files in collection order: these first, so that the last ones handed out are short and both workers end together.
# Without xdist the order changes nothing: every file still runs whole, its module fixtures once.
LONGEST_FIRST = ["test_refusals.py", "test_engine.py", "test_hardening.py", "test_browser.py", "test_answer.py",
                 "test_crash.py", "test_app.py", "test_served.py", "test_queue.py", "test_viewer.py", "test_judge.py",
                 "test_large.py", "test_consistency.py", "test_formats.py", "test_viewer_browser.py",
                 "test_multilingual.py", "test_formats_browser.py"]


def pytest_collection_modifyitems(session, config, items):
    tests = Path(__file__).resolve().parent
    rank = {tests / name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.path)), len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def embedder():
    return rag.load_embedder()


@pytest.fixture
def make_engine(tmp_path, embedder):
    """make_engine(folder=None, **settings) -> a real Engine; the folder defaults to tmp_path/'docs'. On the
    session's model its calibrations embed nothing again (the engine keeps the unrelated questions' embeddings
    once per process and model)."""
    made = []

    def make(folder: Path | None = None, **overrides) -> Engine:
        folder = Path(folder) if folder else tmp_path / "docs"
        folder.mkdir(parents=True, exist_ok=True)
        overrides.setdefault("index_dir", tmp_path / f"index-{len(made)}")
        settings = load_settings(config=tmp_path / "none.toml", env={}, folder=folder, **overrides)
        engine = Engine(settings, embedder=embedder if settings.tuning.model == rag.settings.DEFAULT_MODEL else None)
        made.append(engine)
        return engine

    yield make
    for e in made:
        e.close()


@pytest.fixture(scope="session")
def sample_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sample") / "data"
    shutil.copytree(DATA, folder, ignore=shutil.ignore_patterns(".rag-index"))
    return folder


@pytest.fixture(scope="session")
def sample_engine(sample_folder, embedder, tmp_path_factory) -> Engine:
    settings = load_settings(config=sample_folder / "none.toml", env={}, folder=sample_folder,
                             index_dir=tmp_path_factory.mktemp("sample-index"))
    engine = Engine(settings, embedder=embedder)
    report = engine.sync()
    assert report.count("failed") == 0, report.outcomes
    return engine


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingGenerator:
    """A generator that counts its calls: proves that a refusal never reaches one."""

    name = "counting"

    def __init__(self):
        self.calls = 0

    def generate(self, question, citations):
        self.calls += 1
        yield f"Counted. [{citations[0].n}]"


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real `chroma run` server on 127.0.0.1, for the scale-out path; stopped with SIGTERM."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    port = free_port()
    chroma = Path(sys.executable).parent / "chroma"
    log = tmp_path_factory.mktemp("chroma-server") / "server.log"
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(chroma), "run", "--path", str(log.parent / "db"), "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"chroma run did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)
    yield {"host": "127.0.0.1", "port": port, "proc": proc}
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def store_engine(request, make_engine):
    """make_engine, once with the embedded store and once against a real `chroma run` server."""
    if request.param == "embedded":
        return make_engine
    server = request.getfixturevalue("chroma_server")
    import uuid

    prefix = "t" + uuid.uuid4().hex[:10]  # one server for the session: keep each test's collections apart

    def make(folder=None, **overrides):
        overrides.setdefault("collection_prefix", prefix)
        return make_engine(folder, chroma_host=server["host"], chroma_port=server["port"], **overrides)

    return make


def threshold_slider(at):
    """The chat's threshold slider in an AppTest run. Its key changes with the value it starts from (the
    calibrated one, or the person's), so it is found by its label."""
    return next(s for s in at.sidebar.slider if s.label.startswith("Threshold"))

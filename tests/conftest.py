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


@pytest.fixture(scope="session")
def embedder():
    return rag.load_embedder()


@pytest.fixture
def make_engine(tmp_path, embedder):
    """make_engine(folder=None, **settings) -> a real Engine; the folder defaults to tmp_path/'docs'."""
    made = []

    def make(folder: Path | None = None, **overrides) -> Engine:
        folder = Path(folder) if folder else tmp_path / "docs"
        folder.mkdir(parents=True, exist_ok=True)
        overrides.setdefault("index_dir", tmp_path / f"index-{len(made)}")
        settings = load_settings(config=tmp_path / "none.toml", env={}, folder=folder, **overrides)
        engine = Engine(settings, embedder=embedder if settings.model == rag.settings.DEFAULT_MODEL else None)
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

"""The fast tier's guard (tests/unit/no_model.py): each way of loading a model fails the test."""

from __future__ import annotations

import sys

import pytest

import rag
import rag.engine
import rag.deciding.judge
import rag.indexing.multilingual
from tests.unit.no_model import ModelLoaded


@pytest.mark.parametrize("load, name", [
    (lambda: rag.load_embedder(), "rag.indexing.embed.load_embedder"),
    (lambda: rag.indexing.embed.load_embedder("all-MiniLM-L6-v2"), "rag.indexing.embed.load_embedder"),
    (lambda: rag.engine.load_embedder(), "rag.indexing.embed.load_embedder"),
    (lambda: rag.deciding.judge.load_judge(), "rag.deciding.judge.load_judge"),
    (lambda: rag.engine.load_judge("anywhere"), "rag.deciding.judge.load_judge"),
    (lambda: rag.deciding.judge.Judge(), "rag.deciding.judge.Judge.__init__"),
    (lambda: rag.indexing.multilingual.load_multilingual(), "rag.indexing.multilingual.load_multilingual"),
    (lambda: rag.engine.load_multilingual(), "rag.indexing.multilingual.load_multilingual"),
])
def test_every_name_of_a_loader_refuses(no_model, load, name):
    with pytest.raises(ModelLoaded, match="loads no model"):
        load()
    assert no_model.loads == [name]
    no_model.loads.clear()  # this test loads on purpose; the guard would fail it at teardown


def test_an_engine_without_a_given_embedder_is_refused(no_model, tmp_path):
    settings = rag.load_settings(config=tmp_path / "none.toml", env={}, folder=tmp_path, index_dir=tmp_path / "i")
    with pytest.raises(ModelLoaded):
        rag.Engine(settings)
    assert no_model.loads == ["rag.indexing.embed.load_embedder"]
    no_model.loads.clear()


@pytest.fixture
def fake_library(tmp_path, monkeypatch):
    """A module on disk, not imported yet, with a model class and a loader function under two names."""
    (tmp_path / "fake_models_lib.py").write_text(
        "class Model:\n    def __init__(self, path):\n        self.path = path\n\n"
        "def load(path):\n    return Model(path)\n", encoding="utf-8")
    (tmp_path / "fake_models_user.py").write_text("from fake_models_lib import load\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "fake_models_lib"
    for name in ("fake_models_lib", "fake_models_user"):
        sys.modules.pop(name, None)


def test_a_library_imported_during_the_test_is_guarded_once_imported(no_model, fake_library):
    no_model.protect(fake_library, "Model.__init__")
    assert fake_library not in sys.modules
    import fake_models_lib

    with pytest.raises(ModelLoaded):
        fake_models_lib.Model("weights")
    assert no_model.loads == ["fake_models_lib.Model.__init__"]
    no_model.loads.clear()


def test_a_function_is_guarded_under_the_names_it_was_imported_as(no_model, fake_library):
    import fake_models_lib  # noqa: F401
    import fake_models_user

    no_model.protect(fake_library, "load")
    with pytest.raises(ModelLoaded):
        fake_models_user.load("weights")
    assert no_model.loads == ["fake_models_lib.load"]
    no_model.loads.clear()


def test_nothing_is_left_patched_after_the_guard(fake_library):
    """The guard undoes its patches: the full suite loads the real model in the same process."""
    import fake_models_lib

    with pytest.MonkeyPatch.context() as patch:
        from tests.unit.no_model import Guard

        guard = Guard(patch)
        guard.protect(fake_library, "Model.__init__")
        with pytest.raises(ModelLoaded):
            fake_models_lib.Model("weights")
    assert fake_models_lib.Model("weights").path == "weights"

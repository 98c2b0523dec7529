"""The fast tier's guard: a test that loads a model fails, loudly.

`make check` runs tests/unit and the doctests of rag/ and lab/ in under two minutes on two cores because
none of them loads the MiniLM embedder or the judge. This plugin makes that a rule rather than a hope:
while a guarded test runs, every way the code loads a model (`LOADERS`) raises `ModelLoaded`, and the
test fails at teardown even when the code under test caught the error.

A loader is patched when the test starts if its module is already imported, else the moment the test
imports it. A function of rag's is also replaced under every name another module imported it as
(`from rag.indexing.embed import load_embedder` in rag.engine). Everything is put back when the test ends.

tests/unit/conftest.py applies the guard to tests/unit; `make check` also loads this module as a plugin
(`-p tests.unit.no_model`) so that the doctests of rag/ and lab/ run under it too. What it does not do:
stop a test from importing torch (slow, not forbidden), or guard the full suite, whose tests load the real
model on purpose.
"""

from __future__ import annotations

import importlib.machinery
import sys

import pytest

# (module, attribute) of each way a model gets loaded: rag's own loaders, and the libraries' under them.
LOADERS = (
    ("rag.indexing.embed", "load_embedder"),
    ("rag.deciding.judge", "load_judge"),
    ("rag.deciding.judge", "Judge.__init__"),
    ("rag.indexing.multilingual", "load_multilingual"),
    ("rag.indexing.e5", "load"),  # multilingual-e5-small from its file (the multilingual side, an e5 judge)
    ("sentence_transformers", "SentenceTransformer.__init__"),
    ("sentence_transformers", "CrossEncoder.__init__"),
    ("transformers.modeling_utils", "PreTrainedModel.from_pretrained"),
)


class ModelLoaded(RuntimeError):
    """A guarded test tried to load a model."""


class Guard:
    """Patches loaders for one test and remembers every call to one (`loads`, as "module.attribute")."""

    def __init__(self, patch: pytest.MonkeyPatch):
        self._patch = patch
        self._waiting: dict[str, list[str]] = {}  # module not imported yet -> attributes to patch on import
        self._watching = False  # whether this guard's finder is on sys.meta_path
        self.loads: list[str] = []

    def protect(self, module: str, attribute: str) -> None:
        """Make `module.attribute` raise `ModelLoaded` for the rest of the test, now or on import."""
        if module in sys.modules:
            self._replace(sys.modules[module], module, attribute)
            return
        if not self._watching:
            self._patch.setattr(sys, "meta_path", [_OnImport(self), *sys.meta_path])
            self._watching = True
        self._waiting.setdefault(module, []).append(attribute)

    def _imported(self, module: str) -> None:
        for attribute in self._waiting.pop(module, []):
            self._replace(sys.modules[module], module, attribute)

    def _replace(self, mod, module: str, attribute: str) -> None:
        owner_name, _, name = attribute.rpartition(".")
        owner = getattr(mod, owner_name) if owner_name else mod
        original = vars(owner).get(name)
        refuse = self._refusal(f"{module}.{attribute}")
        self._patch.setattr(owner, name, classmethod(refuse) if isinstance(original, classmethod) else refuse)
        if owner_name or original is None:
            return  # a method is replaced on its class, which every name of the class shares
        for other in list(sys.modules.values()):  # vars(), never getattr: a lazy module imports on getattr
            if other is not mod and vars(other).get(name) is original:
                self._patch.setattr(other, name, refuse)

    def _refusal(self, what: str):
        def refuse(*args, **kwargs):
            self.loads.append(what)
            raise ModelLoaded(f"{what} was called, but the fast tier (tests/unit, make check) loads no model: "
                              "build the test on hand-made inputs, or put it in tests/ with the full suite")
        return refuse


_FILE_LOADERS = (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader,
                 importlib.machinery.ExtensionFileLoader)


class _OnImport:
    """A meta path finder that lets the usual finders find a waiting module, then patches it once loaded.
    Only modules read from a file are waited for (their loader is the spec's own, safe to wrap)."""

    def __init__(self, guard: Guard):
        self._guard = guard

    def find_spec(self, name, path, target=None):
        if name not in self._guard._waiting:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if isinstance(loader, _FILE_LOADERS):
            run = loader.exec_module

            def exec_module(module):
                run(module)
                self._guard._imported(name)

            loader.exec_module = exec_module
        return spec


@pytest.fixture(autouse=True)
def no_model():
    """Every test under this guard: no model is loaded, or the test fails."""
    with pytest.MonkeyPatch.context() as patch:
        guard = Guard(patch)
        for module, attribute in LOADERS:
            guard.protect(module, attribute)
        yield guard
    if guard.loads:
        pytest.fail(f"loaded a model in the fast tier: {', '.join(dict.fromkeys(guard.loads))}", pytrace=False)

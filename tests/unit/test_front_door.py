"""The front door: importing rag loads nothing of the lab and changes nothing but the environment the app
needs; `rag eval` without the lab says so in one line.

Imports are checked in a fresh interpreter: this test session has imported the lab already (its doctests
run under pytest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Imports rag, notes what it changed in the environment, then imports every module of the package.
_PROBE = """
import importlib, json, os, pkgutil, sys
before = dict(os.environ)
import rag
changed = sorted(k for k in os.environ if before.get(k) != os.environ[k])
modules = [m.name for m in pkgutil.walk_packages(rag.__path__, "rag.")]
for name in modules:
    importlib.import_module(name)
print(json.dumps({"changed": changed, "modules": modules, "environment": sorted(rag._ENVIRONMENT),
                  "rag": rag.__file__, "lab": sorted(n for n in sys.modules if n.split(".")[0] == "lab")}))
"""


@pytest.fixture(scope="module")
def probe() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_rag_and_every_module_of_it_leaves_the_lab_unloaded(probe):
    assert Path(probe["rag"]).parent == ROOT / "rag"
    # The modules the app and the CLI run, including those that moved out of the lab's way.
    assert {"rag.cli", "rag.engine", "rag.deciding.diagnosis", "rag.deciding.needles", "rag.deciding.sweep"} <= set(probe["modules"])
    assert not {"evaluate", "beir", "metrics"} & {m.rpartition(".")[2] for m in probe["modules"]}
    assert probe["lab"] == []


def test_importing_rag_sets_only_the_environment_the_app_needs(probe):
    # Cleared before the probe ran, so importing rag must set them again.
    assert {"HF_HUB_OFFLINE", "OMP_WAIT_POLICY"} <= set(probe["changed"])
    assert set(probe["changed"]) <= set(probe["environment"])


@pytest.mark.parametrize("argv", [["eval", "needles", "set.jsonl"], ["eval", "sweep", "in.jsonl", "out.json"],
                                  ["eval", "beir", "nfcorpus"]])
def test_rag_eval_without_the_lab_says_so_in_one_line(argv, monkeypatch, capsys):
    from rag.cli import main

    # As in an installation without the lab: `import lab` fails.
    for name in [n for n in sys.modules if n.startswith("lab.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "lab", None)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("rag: `rag eval` needs the project's lab") and err.count("\n") == 1

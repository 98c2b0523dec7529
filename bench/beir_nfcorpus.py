"""Run `rag eval beir` on BEIR NFCorpus with the vector cache in bench/out/: the app's chunker and search.

The first run embeds the corpus (minutes of CPU) and saves the vectors as .npy keyed by the chunk texts
and model; later runs only redo the cheap parts. `--set KEY=VALUE` overrides a setting (repeatable), e.g.
the fusion before it was chosen from measurements:

    .venv/bin/python bench/beir_nfcorpus.py [--split test|dev] [--strategy E] [--candidates 1000]
    .venv/bin/python bench/beir_nfcorpus.py --set fusion=rrf --set dense_weight=1 --set bm25_weight=1
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from lab.beir import run_beir  # noqa: E402
from rag.settings import load_settings  # noqa: E402

NFCORPUS = Path("/work/shared/eval/nfcorpus")
OUT = ROOT / "bench" / "out"

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default=str(NFCORPUS))
    p.add_argument("--split", default="test")
    p.add_argument("--strategy", default="E")
    p.add_argument("--candidates", type=int, default=1000)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting")
    a = p.parse_args()
    overrides = dict(kv.split("=", 1) for kv in a.set)
    settings = load_settings(config=OUT / "none.toml", env={f"RAG_{k.upper()}": v for k, v in overrides.items()})
    run = run_beir(a.dir, rag.load_embedder(), settings, split=a.split, strategy=a.strategy,
                   candidates=a.candidates, cache=OUT)
    print(run.table())
    label = "-".join(f"{k}={v}" for k, v in sorted(overrides.items())) or "defaults"
    out = OUT / f"beir-{run.dataset}-{a.split}-{a.strategy}-{label}.json"
    out.write_text(json.dumps({k: v for k, v in vars(run).items() if k != "per_query"}, indent=1))

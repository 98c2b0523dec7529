"""Run `rag eval beir` on the development set (BEIR NFCorpus) with the vector cache in bench/out/.

The first run embeds the corpus (a few minutes of CPU) and saves the vectors as .npy keyed by the chunk
texts and model; later runs (BM25 and fusion tuning) only redo the cheap parts.

    .venv/bin/python bench/beir_nfcorpus.py [--split test|dev] [--strategy E] [--candidates 1000] [--fusion chunk]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from rag.evaluate import run_beir  # noqa: E402
from rag.settings import load_settings  # noqa: E402

NFCORPUS = Path("/work/shared/eval/nfcorpus")
OUT = ROOT / "bench" / "out"

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default=str(NFCORPUS))
    p.add_argument("--split", default="test")
    p.add_argument("--strategy", default="E")
    p.add_argument("--candidates", type=int, default=1000)
    p.add_argument("--fusion", default="chunk")
    a = p.parse_args()
    settings = load_settings(config=OUT / "none.toml", env={})
    run = run_beir(a.dir, rag.load_embedder(), settings, split=a.split, strategy=a.strategy,
                   candidates=a.candidates, fusion=a.fusion, cache=OUT)
    print(run.table())
    out = OUT / f"beir-{run.dataset}-{a.split}-{a.strategy}-{a.fusion}.json"
    out.write_text(json.dumps({k: v for k, v in vars(run).items() if k != "per_query"}, indent=1))

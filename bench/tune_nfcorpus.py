"""Tune BM25 (k1, b) and fusion (weights, RRF k, candidates, chunk vs document fusion) on NFCorpus's dev
split with the cached vectors, then report the chosen settings on the test split.

Needs the vector cache that bench/beir_nfcorpus.py writes to bench/out/ (run that first, once).

    .venv/bin/python bench/tune_nfcorpus.py [--split dev] [--grid bm25|fusion|all]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from rag.indexing.chunk import strategy  # noqa: E402
from lab.beir import beir_chunks, load_beir, run_beir  # noqa: E402
from rag.indexing.bm25 import LexicalIndex  # noqa: E402
from rag.settings import load_settings  # noqa: E402

NFCORPUS = Path("/work/shared/eval/nfcorpus")
OUT = ROOT / "bench" / "out"


def line(name, run) -> str:
    m = run.metrics
    t = run.tests
    return (f"{name:<44} dense {m['dense']['ndcg@10']:.4f}  bm25 {m['bm25']['ndcg@10']:.4f}  hybrid "
            f"{m['hybrid']['ndcg@10']:.4f}  R@100 h {m['hybrid']['recall@100']:.4f}  "
            f"vs dense +{t['hybrid vs dense']['wins']}/-{t['hybrid vs dense']['losses']} p={t['hybrid vs dense']['p']:.2g}  "
            f"vs bm25 +{t['hybrid vs bm25']['wins']}/-{t['hybrid vs bm25']['losses']} p={t['hybrid vs bm25']['p']:.2g}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--split", default="dev")
    p.add_argument("--grid", default="all")
    p.add_argument("--strategy", default="E")
    a = p.parse_args()
    emb = rag.load_embedder()
    base = load_settings(config=OUT / "none.toml", env={})
    data = load_beir(NFCORPUS, a.split)
    ch = beir_chunks(data, strategy(a.strategy))
    results = []

    def run(name, settings, lexical=None, **kw):
        r = run_beir(NFCORPUS, emb, settings, split=a.split, strategy=a.strategy, cache=OUT, data=data,
                     lexical=lexical, **kw)
        print(line(name, r), flush=True)
        results.append({"name": name, "metrics": r.metrics, "tests": r.tests, "settings": r.settings})
        return r

    lex_cache = {}

    def lex(k1, b):
        if (k1, b) not in lex_cache:
            lex_cache[(k1, b)] = LexicalIndex.build(ch.texts, ["en"] * len(ch.texts), k1=k1, b=b)
        return lex_cache[(k1, b)]

    if a.grid in ("bm25", "all"):
        for k1, b in itertools.product((0.9, 1.2, 1.5), (0.4, 0.75)):
            run(f"k1={k1} b={b}", base.replace(bm25_k1=k1, bm25_b=b), lex(k1, b))
    if a.grid in ("fusion", "all"):
        k1, b = base.tuning.bm25_k1, base.tuning.bm25_b
        # Reciprocal rank fusion, as tuned before bench/fusion.py chose normalised scores (document-level
        # fusion, once a row here, is gone: the app never ran it).
        rrf = base.replace(fusion="rrf")
        for cand in (20, 100, 1000):
            run(f"rrf candidates={cand}", rrf, lex(k1, b), candidates=cand)
        for dw, bw, k in ((1, 1, 10), (1, 1, 30), (1, 1.5, 60), (1.5, 1, 60), (1, 2, 60), (2, 1, 60)):
            run(f"rrf w=({dw},{bw}) k={k}", rrf.replace(dense_weight=dw, bm25_weight=bw, rrf_k=k), lex(k1, b))
    (OUT / f"tune-nfcorpus-{a.split}-{a.grid}-{int(time.time())}.json").write_text(json.dumps(results, indent=1))

"""BM25 analyzer experiments on NFCorpus (dev split by default): which tokenisation choices help.

BM25 only (no vectors needed). Variants patch `rag.text.lexical.analyze` for the run:
- current: fold accents, keep joined codes whole and in parts, stopwords, Snowball stemming;
- no-joined: parts only (`omega-3` -> `omega`, `3`), no `omega-3` token;
- no-stop: no stopword removal; no-stem: no stemming;
- doc-level: the current analyzer over whole documents (title + text) instead of best chunk, for reference.

    .venv/bin/python bench/bm25_analyzer_nfcorpus.py [--split dev]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag.text.lexical as lx  # noqa: E402
from rag.text.languages import LANGUAGES  # noqa: E402
from rag.indexing.chunk import strategy  # noqa: E402
from lab.beir import beir_chunks, load_beir  # noqa: E402
from lab.metrics import ndcg_at, recall_at  # noqa: E402

NFCORPUS = Path("/work/shared/eval/nfcorpus")
ORIGINAL = lx.analyze


def variant(joined=True, stop=True, stem=True):
    def analyze(text, lang):
        lang = lang if lang in LANGUAGES else "en"
        sw = lx.stop_words(lang) if stop else frozenset()
        out = []
        for m in lx.TOKEN.finditer(lx.fold(text)):
            tok = m.group()
            parts = lx.WORD_PART.findall(tok)
            if joined and len(parts) > 1:
                out.append(tok)
            out.extend((lx._stem(p, lang) if stem else p) for p in parts if p not in sw)
        return out
    return analyze


def evaluate(data, texts, starts, doc_ids, k1=1.2, b=0.75):
    lex = lx.LexicalIndex.build(texts, ["en"] * len(texts), k1=k1, b=b)
    nd, r100 = [], []
    for qid, q in data.queries.items():
        s = lex.scores(q)
        d = np.maximum.reduceat(s, starts) if starts is not None else s
        top = np.argsort(-d, kind="stable")[:100]
        ranked = [doc_ids[i] for i in top if d[i] > 0]
        rel = data.qrels[qid]
        nd.append(ndcg_at(ranked, rel, 10))
        r100.append(recall_at(ranked, [x for x, g in rel.items() if g > 0], 100))
    return float(np.mean(nd)), float(np.mean(r100))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--split", default="dev")
    a = p.parse_args()
    data = load_beir(NFCORPUS, a.split)
    ch = beir_chunks(data, strategy("E"))
    whole = [f"{t}\n{x}" for t, x in data.corpus.values()]
    ids = list(data.corpus)
    runs = {"current": variant(), "no-joined": variant(joined=False), "no-stop": variant(stop=False),
            "no-stem": variant(stem=False)}
    for name, fn in runs.items():
        lx.analyze = fn
        lx._stem.cache_clear()
        for k1, b in ((1.2, 0.75), (0.9, 0.4)):
            nd, r = evaluate(data, ch.texts, ch.starts, ch.doc_ids, k1, b)
            print(f"{a.split} {name:<10} chunks k1={k1} b={b}: nDCG@10 {nd:.4f} R@100 {r:.4f}", flush=True)
    lx.analyze = ORIGINAL
    for k1, b in ((1.2, 0.75), (0.9, 0.4)):
        nd, r = evaluate(data, whole, None, ids, k1, b)
        print(f"{a.split} current    whole documents k1={k1} b={b}: nDCG@10 {nd:.4f} R@100 {r:.4f}", flush=True)

"""How well a graph (rag.indexing.vectors) finds the exact top 20 for five kinds of question, on an index
bench/bench_large.py built: the calibration's unrelated questions (every tenth; the calibration now scans
them exactly), NFCorpus's queries (questions on the folder's subject, for `--corpus real`), passages of the
folder asked as questions, the folder's own sentences (`rag.deciding.calibration.folder_sentences`), and their first
eight words (what a new graph is checked with, rag.engine). Per breadth: recall@20 of the exact scan, the
share found within the exact 20th distance (near ties), the largest gap between the 20th distance found and
the exact one, and ms a search.

    .venv/bin/python bench/graph_probes.py [bench/out/large-real-78000] [--side dense|multilingual] [--proposals 60]

Reads every vector of the index once (Chroma on disk) and builds the side's graph again (15-30 s at
100,000). Nothing is asserted: docs/benchmarks.md "Real text: the graph checked on the folder's own
sentences".
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from rag import load_settings  # noqa: E402
from rag.deciding.calibration import CALIBRATED_LANGUAGES, folder_sentences, unrelated_questions  # noqa: E402
from rag.indexing.store import ChunkStore  # noqa: E402
from rag.indexing.multilingual import load_multilingual  # noqa: E402
from rag.indexing.vectors import GRAPH_BREADTHS, GRAPH_PROBE_WORDS, GRAPH_PROBES, Graph, proposals  # noqa: E402

from bench_large import NFCORPUS, nfcorpus_queries  # noqa: E402  (bench/ is the script's own folder)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=str(ROOT / "bench" / "out" / "large-real-78000"))
    ap.add_argument("--proposals", type=int, default=proposals(20),
                    help="rows the graph is asked for, re-ranked exactly (default: as a search asks)")
    ap.add_argument("--side", choices=("dense", "multilingual"), default="dense")
    args = ap.parse_args()
    root = Path(args.root)
    settings = load_settings(env={}, folder=root / "docs", index_dir=root / "index")
    model = rag.load_embedder()
    chunks = sorted(ChunkStore(settings, model.name, model.dimension).all_chunks(vectors=True), key=lambda c: c.id)
    ids = [c.id for c in chunks]
    m = np.stack([c.vector for c in chunks]).astype(np.float32)
    if args.side == "multilingual":
        model = load_multilingual()
        side = ChunkStore(settings, model.name, model.dimension).all_vectors()
        m = np.stack([side[i] for i in ids]).astype(np.float32)
    sentences = [t for _, t in folder_sentences(chunks, n=GRAPH_PROBES)]
    t = time.perf_counter()
    graph = Graph.build(m, ids, [""] * len(ids))
    print(f"{len(ids):,} passages, {args.side} side; graph built in {time.perf_counter() - t:.0f} s; "
          f"{args.proposals} proposals\n")
    probes = {"unrelated questions":
              model.embed_batch([q for lang in CALIBRATED_LANGUAGES for _, q in unrelated_questions(lang)])[::10],
              "the folder's passages": m[np.random.default_rng(0).choice(len(m), 80, replace=False)],
              "the folder's own sentences": model.embed_batch(sentences),
              "their first eight words (the graph check's)":
              model.embed_batch([" ".join(t.split()[:GRAPH_PROBE_WORDS]) for t in sentences])}
    if (NFCORPUS / "queries.jsonl").is_file():
        probes["NFCorpus queries"] = model.embed_batch(nfcorpus_queries()[:400:4])
    print("| questions | breadth | recall@20 | within the 20th distance | largest gap at the 20th | ms |\n|---|---:|---:|---:|---:|---:|")
    for name, qs in probes.items():
        for breadth in GRAPH_BREADTHS:
            g = dataclasses.replace(graph, breadth=breadth)
            found = near = 0
            gap, spent = 0.0, 0.0
            for q in qs:
                d = 1.0 - m @ q
                exact = np.argsort(d, kind="stable")[:20]
                t = time.perf_counter()
                proposed = g.propose(q, args.proposals)
                spent += time.perf_counter() - t
                got = proposed[np.argsort(1.0 - m[proposed] @ q, kind="stable")[:20]]
                found += len(set(exact.tolist()) & set(got.tolist()))
                near += int(np.sum(d[got] <= d[exact[-1]] + 1e-6))
                gap = max(gap, float(d[got].max() - d[exact[-1]]))
            n = 20 * len(qs)
            print(f"| {name} ({len(qs)}) | {breadth} | {found / n:.4f} | {near / n:.4f} | {gap:.4f} | {spent / len(qs) * 1000:.2f} |")


if __name__ == "__main__":
    main()

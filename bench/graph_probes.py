"""How well a graph (rag.vectors, MiniLM's side) finds the exact top 20 for three kinds of question, on an index
bench/bench_large.py built: the calibration's unrelated questions (every tenth, what the graph check probes
with), NFCorpus's queries (questions on the folder's subject, for `--corpus real`), and passages of the folder
asked as questions. Per breadth: recall@20 of the exact scan, the share found within the exact 20th distance
(near ties), the largest gap between the 20th distance found and the exact one, and ms a search.

    .venv/bin/python bench/graph_probes.py [bench/out/large-real-78000] [--proposals 400]

Reads every vector of the index once (Chroma on disk) and builds the graph again (about 30 s at 100,000).
Nothing is asserted: docs/benchmarks.md "Feedback on a pool, and real text with the real models".
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
from rag.calibration import LANGUAGES, folder_sentences, unrelated_questions  # noqa: E402
from rag.store import ChunkStore  # noqa: E402
from rag.vectors import GRAPH_BREADTHS, Graph  # noqa: E402

from bench_large import NFCORPUS, nfcorpus_queries  # noqa: E402  (bench/ is the script's own folder)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=str(ROOT / "bench" / "out" / "large-real-78000"))
    ap.add_argument("--proposals", type=int, default=400, help="rows the graph is asked for, re-ranked exactly")
    args = ap.parse_args()
    root = Path(args.root)
    settings = load_settings(env={}, folder=root / "docs", index_dir=root / "index")
    model = rag.load_embedder()
    chunks = sorted(ChunkStore(settings, model.name, model.dimension).all_chunks(vectors=True), key=lambda c: c.id)
    ids = [c.id for c in chunks]
    m = np.stack([c.vector for c in chunks]).astype(np.float32)
    t = time.perf_counter()
    graph = Graph.build(m, ids, [""] * len(ids))
    print(f"{len(ids):,} passages; graph built in {time.perf_counter() - t:.0f} s; {args.proposals} proposals\n")
    probes = {"unrelated questions (the graph check's)":
              model.embed_batch([q for lang in LANGUAGES for _, q in unrelated_questions(lang)])[::10],
              "the folder's passages": m[np.random.default_rng(0).choice(len(m), 80, replace=False)],
              "the folder's own sentences (rag.calibration.folder_sentences)":
              model.embed_batch([t for _, t in folder_sentences(chunks, n=80)])}
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

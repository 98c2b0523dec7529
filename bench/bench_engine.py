"""Benchmark the engine at 1k and 10k chunks: indexing cost against the bare models (MiniLM, and the
multilingual side's when it is on), per-stage
query latency (the dense stage is an exact scan of the search snapshot's vectors, so its recall is 1.0
by construction), and, for reference, Chroma's HNSW recall@20 against an exact scan of the vectors
Chroma holds (Chroma is the store of truth, not read at query time).

    .venv/bin/python bench/bench_engine.py            # 1k and 10k chunks
    .venv/bin/python bench/bench_engine.py --sizes 1000 --queries 100
    .venv/bin/python bench/bench_engine.py --sizes 100000 --no-baseline   # about 40 minutes here
    .venv/bin/python bench/bench_engine.py --sizes 1000 10000 --multilingual both   # the side off, then on

Synthetic Markdown documents (10 sections, one ~480-character paragraph each, so one chunk per
paragraph) are written to bench/out/, indexed by a real Engine (MiniLM, Chroma on disk, bm25s), and
queried with questions drawn from the same vocabulary. Figures print as a Markdown table; nothing is
asserted (shared machines are noisy: read the ratios, which are measured in one run).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import rag  # noqa: E402
from rag import Engine, gate, load_settings  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
WORDS = ("index folder chunk question answer threshold distance citation quote page section upload file "
         "model vector search keyword fusion rank table library status failed reason stamp embed token "
         "window header paragraph sentence boundary overlap budget store server lock crash restart memory "
         "battery pump valve sensor garden river winter harvest ledger invoice contract warranty policy "
         "engine turbine bridge harbour signal network planet orbit fossil glacier desert forest canyon").split()


def paragraph(rng: random.Random, n_chars: int = 480) -> str:
    out, size = [], 0
    while size < n_chars:
        sent = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
        out.append(sent)
        size += len(sent) + 1
    return " ".join(out)[:n_chars].rsplit(" ", 1)[0] + "."


def write_corpus(folder: Path, chunks: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    for d in range(chunks // 10):
        parts = [f"# Document {d}\n"]
        for s in range(10):
            parts.append(f"## Section {s}\n\n{paragraph(rng)}\n")
        (folder / f"doc-{d:05d}.md").write_text("\n".join(parts), encoding="utf-8")


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(size: int, queries: int, baseline: bool = True, multilingual: bool = True) -> dict:
    root = OUT / f"engine-{size}"
    shutil.rmtree(root, ignore_errors=True)
    write_corpus(root / "docs", size)
    settings = load_settings(env={}, folder=root / "docs", index_dir=root / "index", multilingual=multilingual)
    engine = Engine(settings)
    t = time.perf_counter()
    report = engine.sync()
    index_s = time.perf_counter() - t
    n = len(engine.snapshot.chunks)
    texts = [c.text for c in engine.snapshot.chunks]
    t = time.perf_counter()
    if baseline:  # the bare models on the same chunk texts, in the same run (both, when the side is on)
        engine.embedder.embed_batch(texts)
        if engine.side is not None:
            engine.side.embed_batch(texts)
    encode_s = time.perf_counter() - t if baseline else float("nan")
    t = time.perf_counter()
    again = engine.sync()
    resync_s = time.perf_counter() - t
    # Query as the app does after a start: a fresh engine over the finished index.
    engine.close()
    engine = Engine(settings, embedder=engine.embedder)

    rng = random.Random(11)
    qs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + "?" for _ in range(queries)]
    for q in qs[:5]:
        engine.search(q)  # warm-up
    # The multilingual side (when on): its query embedding is an embedding, its scan is beyond it.
    stages: dict[str, list[float]] = {"embed": [], "multilingual embed": [], "bm25": [], "dense": [],
                                      "multilingual": [], "fusion": [], "feedback": [], "support": [], "gate": []}
    for q in qs:
        r = engine.search(q)
        t = time.perf_counter()
        gate(r, 0.675, 4)
        stages["gate"].append((time.perf_counter() - t) * 1000)
        for k in ("embed", "multilingual embed", "bm25", "dense", "multilingual", "fusion", "feedback", "support"):
            stages[k].append(r.timings_ms.get(k, 0.0))
    beyond = [sum(parts) for parts in zip(*(stages[k] for k in stages if k not in ("embed", "multilingual embed")))]
    # Questions that write names (capitalised mid-sentence): one the folder uses, which each passage lacking it
    # looks up in the index's vocabulary (its one-letter-off forms), and one it never mentions ("Falcon").
    named = [f"What does the {rng.choice(WORDS).capitalize()} say about " +
             " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) +
             (" for Project Falcon?" if i % 2 else "?") for i in range(queries)]
    stages["support_named"] = [engine.search(q).timings_ms["support"] for q in named]

    # For reference only (search no longer asks Chroma; its dense side is the exact scan timed as
    # "dense" above): Chroma's HNSW recall@20 against an exact scan of the very vectors Chroma holds.
    got = engine.store.collection.get(include=["embeddings"], limit=n + 10)
    ids = np.array(got["ids"])
    mat = np.asarray(got["embeddings"], dtype=np.float32)
    qv = engine.embedder.embed_batch(qs)
    hits = 0
    for v in qv:
        exact = set(ids[np.argsort(-(mat @ v))[:20]])
        approx = {cid for cid, _ in engine.store.query(v, 20)}
        hits += len(exact & approx)
    recall = hits / (20 * len(qv))
    rss = rss_mb()
    # Let go of the index (Chroma keeps one system per path in the process): the next size or mode deletes
    # and rebuilds this folder, and a new client handed the old system would write to deleted files.
    engine.close()
    return {
        "multilingual": multilingual,
        "rss_mb": rss,
        "chunks": n, "index_s": index_s, "index_ms_per_chunk": index_s / n * 1000,
        "encode_ms_per_chunk": encode_s / n * 1000, "index_over_encode": index_s / encode_s,
        "resync_s": resync_s, "resync_embedded": again.embedded, "first_embedded": report.embedded,
        **{f"{k}_median_ms": statistics.median(v) for k, v in stages.items()},
        **{f"{k}_p95_ms": pct(v, 95) for k, v in stages.items()},
        "beyond_embed_median_ms": statistics.median(beyond), "beyond_embed_p95_ms": pct(beyond, 95),
        "dense_recall_at_20": 1.0,  # the exact scan, by construction
        "chroma_hnsw_recall_at_20": recall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-baseline", action="store_true", help="skip the bare-model encode (for 100k chunks)")
    ap.add_argument("--multilingual", choices=("on", "off", "both"), default="on",
                    help="the multilingual side (both: off, then on, each size in the same run)")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    import torch

    machine = f"{platform.machine()}, {torch.get_num_threads()} torch threads, Python {platform.python_version()}"
    sides = {"on": [True], "off": [False], "both": [False, True]}[args.multilingual]
    rows = [run(s, args.queries, not args.no_baseline, m) for s in args.sizes for m in sides]
    (OUT / f"bench_engine-{'-'.join(map(str, args.sizes))}.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2))
    print(f"machine: {machine}; rag {rag.__name__}; {args.queries} queries per size\n")
    print("| chunks | multilingual side | index ms/chunk | bare encode ms/chunk | index / encode | re-sync (embedded) | "
          "embed ms med/p95 | multilingual embed | BM25 | dense (exact scan) | multilingual scan | fusion | feedback | support | support, questions naming things | gate | "
          "beyond embed med/p95 | "
          "Chroma HNSW recall@20 (not used by search) | RSS MB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        st = lambda k: f"{r[k + '_median_ms']:.2f}/{r[k + '_p95_ms']:.2f}"  # noqa: E731
        print(f"| {r['chunks']:,} | {'on' if r['multilingual'] else 'off'} | {r['index_ms_per_chunk']:.1f} | "
              f"{r['encode_ms_per_chunk']:.1f} | "
              f"{r['index_over_encode']:.2f} | {r['resync_s']:.1f} s ({r['resync_embedded']}) | {st('embed')} | "
              f"{st('multilingual embed')} | {st('bm25')} | {st('dense')} | {st('multilingual')} | {st('fusion')} | {st('feedback')} | {st('support')} | {st('support_named')} | {st('gate')} | "
              f"{r['beyond_embed_median_ms']:.2f}/{r['beyond_embed_p95_ms']:.2f} | {r['chroma_hnsw_recall_at_20']:.3f} | "
              f"{r['rss_mb']:.0f} |")


if __name__ == "__main__":
    main()

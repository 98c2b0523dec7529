"""What the judge costs: loading it, and reading N candidates per question, on this machine.

Indexes the sample folder (data/) into a temporary index, asks the questions of bench/sample_needles.jsonl
with the judge off and on (in one run, alternating, so the machine's noise falls on both), and reports:

- the judge stage alone (scoring and reordering the first N candidates): p50 / p95 ms, for N = 20 (every
  row of the table), 8 (the default `judge_top`) and the other Ns asked;
- the whole search (embedding, both sides, fusion, feedback, judge) with and without it;
- the judge's load time (cold, in this process) and the calibration's time with and without it;
- fp32 against int8 (the shipped default) for N = 20;
- each pair read alone (the shipped reading) against the 20 read as one padded batch (the reading before),
  and how far a pair's int8 score moves between the two (int8 sets its scale per input).

    .venv/bin/python bench/bench_judge.py [--n 20,8,5] [--questions 60]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from rag import load_settings  # noqa: E402
from rag.deciding.judge import JUDGE_DIR, Judge, passage_text, rerank  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def batch_scores(judge: Judge, question: str, passages: list[str]) -> list[float]:
    """The pairs read as one padded batch, as `Judge.score` read them before it read each alone."""
    import torch

    enc = judge.tokenizer([question] * len(passages), passages, truncation="only_second",
                          max_length=judge.max_length, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return judge.model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).float().tolist()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default="20,8,5")
    ap.add_argument("--questions", type=int, default=60)
    args = ap.parse_args(argv)
    questions = [json.loads(x)["question"] for x in (ROOT / "bench" / "sample_needles.jsonl").read_text().splitlines()
                 if x.strip()][:args.questions]
    embedder = rag.load_embedder()
    t0 = time.perf_counter()
    int8 = Judge(JUDGE_DIR)
    load_ms = (time.perf_counter() - t0) * 1000
    fp32 = Judge(JUDGE_DIR, quantize=False)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(config=Path(tmp) / "none.toml", env={}, folder=ROOT / "data", index_dir=Path(tmp) / "i",
                                 judge=False)
        engine = rag.Engine(settings, embedder=embedder)
        engine.sync()
        cal = {}
        for name, on in (("without", False), ("with", True)):
            engine.settings = settings.replace(judge=on)
            engine.judge = int8 if on else None
            engine.calibration = None
            int8.forget()
            t = time.perf_counter()
            engine.calibrated()
            cal[name] = time.perf_counter() - t
        engine.settings = settings
        results = [engine.search(q) for q in questions]  # judge off: retrieval alone
        stage = {n: [] for n in map(int, args.n.split(","))}
        stage_fp32, search_off, search_on, batched, moved = [], [], [], [], []
        for q, r in zip(questions, results):
            texts = [passage_text(c) for c in r.candidates[:20]]
            t = time.perf_counter()
            together = batch_scores(int8, r.query or q, texts)
            batched.append((time.perf_counter() - t) * 1000)
            int8.forget()
            moved += [abs(a - b) for a, b in zip(together, int8.score(r.query or q, texts))]
            for n in stage:
                int8.forget()
                t = time.perf_counter()
                rerank(r, int8, n)
                stage[n].append((time.perf_counter() - t) * 1000)
            fp32.forget()
            t = time.perf_counter()
            rerank(r, fp32, 20)
            stage_fp32.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            engine.search(q)
            search_off.append((time.perf_counter() - t) * 1000)
            int8.forget()
            t = time.perf_counter()
            rerank(engine.search(q), int8, settings.tuning.judge_top)
            search_on.append((time.perf_counter() - t) * 1000)
        engine.close()
    print(f"machine: {platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores; "
          f"{len(questions)} questions of bench/sample_needles.jsonl on data/")
    print(f"judge load (int8, cold in this process): {load_ms:.0f} ms")
    for n, xs in stage.items():
        print(f"judge stage, N = {n:>2} (int8): p50 {pct(xs, .5):.0f} ms, p95 {pct(xs, .95):.0f} ms")
    print(f"N = 20 read as one batch (before; scoring only): p50 {pct(batched, .5):.0f} ms, p95 {pct(batched, .95):.0f} ms;"
          f" a pair's score there against alone: median {pct(moved, .5):.2f}, largest {max(moved):.2f} logits apart")
    print(f"judge stage, N = 20 (fp32): p50 {pct(stage_fp32, .5):.0f} ms, p95 {pct(stage_fp32, .95):.0f} ms")
    print(f"whole search without the judge: p50 {pct(search_off, .5):.0f} ms, p95 {pct(search_off, .95):.0f} ms")
    print(f"whole search with the judge (N = {settings.tuning.judge_top}, the default): p50 {pct(search_on, .5):.0f} ms, p95 {pct(search_on, .95):.0f} ms")
    print(f"calibration (800 unrelated questions): {cal['without']:.1f} s without the judge, {cal['with']:.1f} s with")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

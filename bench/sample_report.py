"""The sample folder's evaluation as Markdown tables for bench/RESULTS.md and the README.

Runs what `rag eval needles` and `rag eval sweep` run, on data/ with bench/sample_needles.jsonl, into
temporary indexes, and writes bench/out/sample-report.md and .json:

- strategies A-F x dense / BM25 / hybrid: Recall@1/4/8/20 with Wilson 95% intervals, MRR, destroyed answers;
- the paired sign tests E vs A, E vs C (hybrid), hybrid vs dense, hybrid vs BM25 (strategy E), at R@4 and R@20;
- dense / BM25 / hybrid by question language, plus weighted-RRF variants (dense weight : BM25 weight);
- the threshold sweep, overall and by language, with the suggested threshold for a 10% bluff budget.

    .venv/bin/python bench/sample_report.py [--variants 1:1,1:2,0.5:1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from lab import evaluate as ev  # noqa: E402
from rag.deciding.needles import load_questions  # noqa: E402
from rag.settings import load_settings  # noqa: E402
from rag.deciding.sweep import sweep  # noqa: E402

OUT = ROOT / "bench" / "out"


def cell(r) -> str:
    return f"{r['rate']:.2f} [{r['low']:.2f}–{r['high']:.2f}]"


def strategy_table(run: ev.NeedleRun, configs, idx=None) -> list[str]:
    lines = ["| config | R@1 | R@4 | R@8 | R@20 | MRR | destroyed |", "|---|---|---|---|---|---:|---:|"]
    for c in configs:
        s = run.summary(c, idx)
        lines.append(f"| {c} | " + " | ".join(cell(s[f'recall@{k}']) for k in ev.KS)
                     + f" | {s['mrr']:.3f} | {s['destroyed']['k']}/{s['destroyed']['n']} |")
    return lines


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--set", default=str(ROOT / "bench" / "sample_needles.jsonl"))
    p.add_argument("--folder", default=str(ROOT / "data"))
    p.add_argument("--variants", default="1:2,1:3,0.5:1")
    a = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    settings = load_settings(config=OUT / "none.toml", env={}, folder=a.folder)
    emb = rag.load_embedder()
    questions = load_questions(a.set)
    problems = ev.check_needles(questions, Path(a.folder))
    assert not problems, problems
    variants = [f"E/hybrid:{v}" for v in a.variants.split(",") if v]
    configs = [f"{s}/{m}" for s in ev.STRATEGIES for m in ev.MODES] + variants
    run = ev.evaluate_needles(questions, Path(a.folder), emb, settings, configs)
    pairs = [("E/hybrid", "A/hybrid"), ("E/hybrid", "C/hybrid"), ("E/hybrid", "E/dense"), ("E/hybrid", "E/bm25")]
    pairs += [(v, "E/bm25") for v in variants] + [(v, "E/hybrid") for v in variants]
    md = [f"Sample folder `{a.folder}`, needle set `{Path(a.set).name}`: {len(run.questions)} answerable questions; "
          f"chunks per strategy: " + ", ".join(f"{s} {n}" for s, n in run.chunks.items()) + ".", ""]
    md += ["### Strategies A–F × dense / BM25 / hybrid (all answerable questions; Wilson 95% intervals)", ""]
    md += strategy_table(run, [f"{s}/{m}" for s in ev.STRATEGIES for m in ev.MODES]) + [""]
    for group, idx in run.groups().items():
        md += [f"### Paired sign tests ({group}, {len(idx)} questions): wins/losses on discordant questions", "",
               "| pair | at R@4 | at R@20 |", "|---|---|---|"]
        for x, y in pairs:
            md.append(f"| {x} vs {y} | {run.compare(x, y, 4, idx)} | {run.compare(x, y, 20, idx)} |")
        md.append("")
    for group, idx in run.groups().items():
        if group == "all":
            continue
        md += [f"### Strategy E by mode, questions in {group} ({len(idx)})", ""]
        md += strategy_table(run, ["E/dense", "E/bm25", "E/hybrid"] + variants, idx) + [""]
    md += ["Fusion weights used: " + ", ".join(f"{c} {w}" for c, w in run.weights.items() if c.startswith('E/')), ""]

    with tempfile.TemporaryDirectory(prefix="rag-sweep-") as tmp:
        engine, _ = ev.open_engine(Path(a.folder), Path(tmp), emb, settings)
        try:
            sw = sweep(engine, questions, budget=0.1)
        finally:
            engine.close()
    for group, rows in sw.rows.items():
        r0 = rows[0]
        md += [f"### Threshold sweep, {group}: {r0.answerable} answerable, {r0.refusable} should refuse "
               f"(suggested for ≤10% bluffs: {ev._f(sw.suggested[group])}; default {sw.current})", "",
               "| threshold | right chunk kept | answerable refused | wrong chunk kept | bluffs |", "|---:|---|---|---:|---|"]
        for r in rows:
            if r.threshold < 0.3 or r.threshold > 0.95:
                continue
            mark = " **(default)**" if abs(r.threshold - sw.current) < 1e-9 else ""
            mark += " **(suggested)**" if sw.suggested[group] is not None and abs(r.threshold - sw.suggested[group]) < 1e-9 else ""
            md.append(f"| {r.threshold:.3f}{mark} | {cell(ev.rate(r.right, r.answerable))} | "
                      f"{cell(ev.rate(r.refused, r.answerable))} | {r.wrong} | {cell(ev.rate(r.bluffs, r.refusable))} |")
        md.append("")
    import numpy as np
    md += ["### Nearest-candidate distance, median (min–max)", "", "| group | answerable | should refuse |", "|---|---|---|"]
    d = sw.distances()
    for lang in ["all"] + sorted({x["lang"] for x in d}):
        def stat(kind):
            v = [x["nearest"] for x in d if x["kind"] == kind and (lang == "all" or x["lang"] == lang)]
            return f"{np.median(v):.3f} ({min(v):.3f}–{max(v):.3f}), n={len(v)}" if v else "–"
        md.append(f"| {lang} | {stat('answerable')} | {stat('refusable')} |")
    (OUT / "sample-report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (OUT / "sample-report.json").write_text(json.dumps({"needles": run.to_json(pairs), "sweep": sw.to_json()},
                                                       ensure_ascii=False, indent=1))
    print("\n".join(md))

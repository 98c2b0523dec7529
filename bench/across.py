"""Questions in one language about notes in another (issue 35), through the app's own search, calibration and
gate: retrieval R@1 / R@4, the right passage kept, and off-folder and near-miss questions answered, for
English questions on the Portuguese SQuAD folder and the reverse (the same SQuAD ids: the needle is the
other language's sentence).

Every question, and the 800 unrelated questions the calibration asks, is searched once; the gate is then
applied under each `--ceilings` value of `across_ceiling` (the most a passage in another language may be
from the question, in multilingual distance), the calibration chosen again from the same searches. The
ceiling is chosen on the articles outside the `test` split (`lab.judge_data.SPLITS`; the `dev` split alone
holds 9 such questions a pair): with off-folder questions answered at most 5%, the most right passages kept
beyond the near misses answered (right kept minus near-miss answered); reported on `test`. `--off` also runs the app with the
multilingual side off, the before.

    .venv/bin/python bench/across.py [--pairs en>pt,pt>en] [--ceilings 0.5,0.55,0.6,0.65,0.7,0.8] [--off]

What it does not do: change the app, or measure questions in the folder's own language (bench/judge_eval.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from lab.judge_data import split_of  # noqa: E402
from lab.metrics import fmt_rate, rate, sign_test  # noqa: E402
from rag.deciding.gate import gate  # noqa: E402
from rag.deciding.needles import contains  # noqa: E402
from rag.settings import load_settings  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from judge_eval import SQUAD, article_of_ids  # noqa: E402


def searched(qlang: str, flang: str, out: Path, multilingual: bool,
             overrides: dict | None = None) -> tuple[rag.Engine, list[dict], list, dict]:
    """The engine over `flang`'s folder, `qlang`'s questions with their needles in `flang`, each question's
    search, and each unrelated question's search (for calibrating again under other settings)."""
    settings = load_settings(config=out / "none.toml", env={}, folder=SQUAD / flang / "docs",
                             index_dir=out / f"idx-across-{flang}-{int(multilingual)}", multilingual=multilingual,
                             **(overrides or {}))
    engine = rag.Engine(settings)
    engine.sync()
    needles = {q["id"]: q["needle"] for q in map(json.loads, (SQUAD / flang / "questions.jsonl").open(encoding="utf-8"))
               if q["kind"] == "answerable"}
    qs = [json.loads(x) for x in (SQUAD / qlang / "questions.jsonl").open(encoding="utf-8")]
    qs = [{**q, "needle": needles.get(q["id"])} for q in qs if q["kind"] != "answerable" or q["id"] in needles]
    t0 = time.perf_counter()
    results = [engine.search(q["question"]) for q in qs]
    print(f"{qlang}>{flang}: {len(engine.snapshot.chunks)} chunks, {len(qs)} questions searched in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    unrelated: dict = {}
    search = engine.calibration_search()

    def remember(question, vector):
        unrelated[question] = search(question, vector)
        return unrelated[question]

    engine.calibrate_with(remember, settings)
    return engine, qs, results, unrelated


def rows_for(engine, qs, results, unrelated, ceiling: float, ids: dict[str, str]) -> tuple[list[dict], object]:
    s = engine.settings.replace(across_ceiling=ceiling)
    calibration = engine.calibrate_with(lambda q, v: unrelated[q], s)
    rows = []
    for q, result in zip(qs, results):
        lang = result.language or q["lang"]
        rule = calibration.rule(lang, s.tuning.min_support, s.tuning.close_support, s.tuning.ramp_support)
        kept = gate(result, calibration.threshold(lang), s.max_chunks, rule).kept
        needle = q.get("needle")
        rows.append({"kind": q["kind"], "split": split_of(ids[q["id"]]), "answered": bool(kept),
                     "right": bool(needle) and any(contains(c.content, needle) for c in kept),
                     "r1": bool(needle) and bool(result.candidates) and contains(result.candidates[0].content, needle),
                     "r4": bool(needle) and any(contains(c.content, needle) for c in result.candidates[:4])})
    return rows, calibration


def answer_sentences(engine, qs, results, unrelated, ceiling: float) -> dict:
    """For the answerable questions answered from a passage in another language: does the extractive answer quote
    the needle when MiniLM ranks the kept passages' sentences (before) and when the multilingual model does (the
    app since issue 62: rag.answering.answer.ExtractiveGenerator's `side`)? Both from the same gate."""
    from rag.answering.answer import AnswerRule, ExtractiveGenerator

    s = engine.settings.replace(across_ceiling=ceiling)
    _, calibration = rows_for(engine, qs, results, unrelated, ceiling, article_of_ids())
    kw = dict(max_sentences=s.tuning.answer_sentences, rule=AnswerRule.of(s.tuning))
    ways = {"MiniLM": ExtractiveGenerator(engine.embedder, **kw), "multilingual": ExtractiveGenerator(engine.embedder, side=engine.side, **kw)}
    got = {name: [] for name in ways}
    for q, result in zip(qs, results):
        if q["kind"] != "answerable" or not q.get("needle"):
            continue
        lang = result.language or q["lang"]
        rule = calibration.rule(lang, s.tuning.min_support, s.tuning.close_support, s.tuning.ramp_support)
        g = gate(result, calibration.threshold(lang), s.max_chunks, rule)
        if not any(c.across for c in g.kept):
            continue
        for name, gen in ways.items():
            chosen = gen.choose(q["question"], g.citations)
            got[name].append(any(contains(c.text, q["needle"]) or contains(q["needle"], c.text) for c in chosen))
    return got


def summary(rows: list[dict], split: str) -> dict:
    mine = [r for r in rows if split == "all" or r["split"] == split]
    ans = [r for r in mine if r["kind"] == "answerable"]
    out = {"n": len(ans), "R@1": rate(sum(r["r1"] for r in ans), len(ans)), "R@4": rate(sum(r["r4"] for r in ans), len(ans)),
           "right kept": rate(sum(r["right"] for r in ans), len(ans))}
    for kind in ("off-folder", "near-miss"):
        k = [r for r in mine if r["kind"] == kind]
        out[f"{kind} answered"] = rate(sum(r["answered"] for r in k), len(k))
    return out


def show(label: str, s: dict) -> str:
    return f"{label} (n={s['n']}): " + "  ".join(f"{k} {fmt_rate(v)}" for k, v in s.items() if k != "n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", default="en>pt,pt>en")
    ap.add_argument("--ceilings", default="0.5,0.55,0.6,0.65,0.7,0.8")
    ap.add_argument("--off", action="store_true", help="also measure with the multilingual side off (before)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for the searches")
    args = ap.parse_args(argv)
    overrides = dict(kv.split("=", 1) for kv in args.set)
    args.out.mkdir(parents=True, exist_ok=True)
    ids = article_of_ids()
    ceilings = [float(x) for x in args.ceilings.split(",")]
    runs = {}
    for pair in args.pairs.split(","):
        qlang, flang = pair.split(">")
        runs[pair] = searched(qlang, flang, args.out, True, overrides)
    by_ceiling = {c: {p: rows_for(*runs[p], c, ids) for p in runs} for c in ceilings}
    for c in ceilings:
        for p, (rows, calibration) in by_ceiling[c].items():
            qlang = p.split(">")[0]
            cut = calibration.rule(qlang, 0.5, 0.2).across_cut
            mine = [r for r in rows if r["split"] != "test"]
            print(f"ceiling {c:g} {p} (cut {cut}): " + show("not test", summary(mine, "all")))
            print(f"    " + show("test", summary(rows, "test")))
    dev = {c: [r for p in runs for r in by_ceiling[c][p][0] if r["split"] != "test"] for c in ceilings}

    def score(c: float) -> tuple:
        s = summary(dev[c], "all")
        return (s["off-folder answered"]["rate"] <= 0.05,
                round(s["right kept"]["rate"] - s["near-miss answered"]["rate"], 6), -c)

    chosen = max(ceilings, key=score)
    print(f"\nceiling chosen on the articles outside the test split: {chosen:g}")
    for p in runs:
        rows, calibration = by_ceiling[chosen][p]
        print(f"{p}, cut {calibration.rule(p.split('>')[0], 0.5, 0.2).across_cut}")
        for split in ("dev", "test", "all"):
            print("  " + show(split, summary(rows, split)))
    for p in runs:
        engine, qs, results, unrelated = runs[p]
        got = answer_sentences(engine, qs, results, unrelated, chosen)
        before, after = got["MiniLM"], got["multilingual"]
        t = sign_test([float(x) for x in after], [float(x) for x in before])
        print(f"{p}: answered from a passage in another language, the needle quoted: MiniLM ranking the sentences "
              f"{fmt_rate(rate(sum(before), len(before)))}, the multilingual model {fmt_rate(rate(sum(after), len(after)))} "
              f"({t}; all splits: no value was chosen on them)")
    if args.off:
        for pair in args.pairs.split(","):
            qlang, flang = pair.split(">")
            rows, _ = rows_for(*searched(qlang, flang, args.out, False, overrides), 0.8, ids)
            print(f"{pair}, multilingual side off (before)")
            for split in ("dev", "test", "all"):
                print("  " + show(split, summary(rows, split)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

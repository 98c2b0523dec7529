"""The judge on SQuAD 2.0, by article: reranking (R@1) and refusals at default settings, with and without it.

For each language (English, Portuguese, Spanish) this indexes `../shared/eval/squad2/<lang>/docs` with the
default settings, searches every question once with the judge reading the candidates, and searches the
shipped unrelated questions once as the calibration does. Everything after that is re-gated from those
searches, without searching again, for each configuration asked (`--configs`):

- `words`: the gate without the judge or the support model (fused order, the word tests, calibrated as before);
- `model`: the support model deciding for the languages it reads (rag.deciding.support_model), the words elsewhere;
- `rerank`: the judge's order (its ranks fused with retrieval's), the word tests deciding; `rerank:weight=2`: its ranks
  weigh twice retrieval's in that fusion;
- `judge`: the judge's order and score, with the word tests in `judge_rules` beside it;
- `judge-<rule>`: the same without one of those rules (to retire what the judge makes redundant);
- `judge:budget=0.05` etc.: one setting changed (`judge:top=5`: as if the judge read only the first 5 rows).

Questions are split by article (`lab.judge_data.SPLITS`): the judge was trained on `train`; settings are
chosen on `dev`; `test` is reported. Off-folder questions belong to the article they were written for.
Rates carry Wilson 95% intervals; R@1 of the judge's order against the fused order gets a paired sign test.

    .venv/bin/python bench/judge_eval.py [--langs en,pt,es] [--configs words,judge] [--splits dev,test]
                                         [--judge-languages en,pt,es] [--out bench/out] [--json FILE]
                                         [--heldout [six|first10]] [--set judge=false]

`--heldout` measures the held-out folder of `lab.heldout` instead (six other articles as the folder, the
twelve's questions as off-folder ones). Two of its articles (Yuan dynasty, IPCC) and four of the twelve are
the judge's training articles, Rhine and two more are dev: its rows are split `heldout` (questions of test
articles: nothing trained or chosen on them) and `heldout-seen` (the rest, reported apart, never as held-out);
`--heldout first10` measures the folder of the ten labelled SQuAD training articles (`lab.heldout.build_first10`),
held out from every judge and every choice, split `heldout10`. `--set judge=false` searches without the judge (the `words` configuration alone, three times faster).
`--json` keeps every question's row too, for paired tests between two runs (`bench/paired.py`). Searches
are cached in `--out` by language, folder and judge, not by the code that searched: after a change to
search or the word rules, measure into a new `--out` (or delete its `.pkl` files).

The judge is on for these runs whatever the app's default (`judge = false`); `--judge-languages` lets it
decide for languages its card does not list (docs/judge.md measured Portuguese that way).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from rag import load_settings  # noqa: E402
from rag.deciding.gate import gate  # noqa: E402
from rag.deciding.judge import judged_order  # noqa: E402
from rag.deciding.needles import contains  # noqa: E402
from lab.heldout import first10_articles, row_split  # noqa: E402
from lab.judge_data import TRAIN_DIR, split_of  # noqa: E402
from lab.metrics import fmt_rate, rate, sign_test  # noqa: E402

SQUAD = ROOT.parent / "shared" / "eval" / "squad2"


def article_of_ids() -> dict[str, str]:
    """SQuAD question id -> the article it was written for (English title)."""
    data = json.load(gzip.open(TRAIN_DIR / "squad2-dev-even-en.json.gz"))["data"] + first10_articles()
    return {q["id"]: a["title"] for a in data for p in a["paragraphs"] for q in p["qas"]}


def engine_for(lang: str, out: Path, embedder, judge: dict, folder: Path | None = None) -> "rag.Engine":
    """An engine over the SQuAD folder of `lang` (or over `folder`: the held-out one), its index in `out`."""
    name = folder.name if folder else "squad"
    folder = folder or SQUAD / lang
    settings = load_settings(config=out / "none.toml", env={}, folder=folder / "docs",
                             index_dir=out / f"idx-{name}-{lang}", **{"judge": True, "support_model": True, **judge})
    return rag.Engine(settings, embedder=embedder)


def collect(lang: str, out: Path, engine, limit: int = 0, questions: Path | None = None) -> dict:
    """Search every question and every unrelated question once (cached in `out`, per judge and folder)."""
    top = engine.settings.tuning.judge_top
    stamp = engine.judge.stamp if engine.judge else "nojudge"
    questions = questions or SQUAD / lang / "questions.jsonl"
    where = "" if questions.parent.parent == SQUAD else f"-{questions.parent.name}"
    cache = out / f"judge-eval-{lang}{where}-{stamp}-{top}{f'-{limit}' if limit else ''}.pkl"
    if cache.is_file():
        return pickle.loads(cache.read_bytes())
    settings = engine.settings
    engine.sync()
    raw = [json.loads(x) for x in questions.read_text(encoding="utf-8").splitlines() if x]
    raw = raw[:limit] if limit else raw
    t0 = time.perf_counter()
    results = [engine.search(q["question"]) for q in raw]
    searched = time.perf_counter() - t0
    unrelated: dict[str, object] = {}
    search = engine.calibration_search()

    def remember(question, vector):
        unrelated[question] = search(question, vector)
        return unrelated[question]

    engine.calibrate_with(remember, settings)
    data = {"questions": raw, "results": results, "unrelated": unrelated, "seconds": searched}
    cache.write_bytes(pickle.dumps(data))
    return data


def configured(base, name: str):
    """(settings, ordered, judged) for a configuration name: whether the rows are in the judge's order, and
    whether it decides (`rerank`: its order, the word tests deciding). Only `model` lets the support model
    decide (for the languages it reads)."""
    if name == "words":
        return base.replace(judge=False, support_model=False), False, False
    if name.startswith("model"):  # "model:floor=0.6": its floor changed
        floor = name.partition("floor=")[2]
        return base.replace(judge=False, support_model=True, **({"model_floor": floor} if floor else {})), False, False
    if name.startswith("rerank"):  # "rerank:weight=2": the judge's ranks weigh twice retrieval's in the fusion
        return base.replace(judge=False, support_model=False), True, False
    s = base.replace(support_model=False)
    head, _, changes = name.partition(":")
    if head.startswith("judge-"):
        dropped = head[len("judge-"):]
        s = s.replace(judge_rules=tuple(r for r in s.tuning.judge_rules if r != dropped))
    for kv in filter(None, changes.split(",")):
        k, v = kv.split("=", 1)
        s = s.replace(**{k if k.startswith("judge_") else f"judge_{k}": v})
    return s, True, True


def fused_order(result):
    """The result as retrieval alone ranked it (the judge's scores dropped)."""
    cands = sorted(result.candidates, key=lambda c: c.fused_rank)
    return dataclasses.replace(result, candidates=[dataclasses.replace(c, judge=None, judge_rank=None, supported=None)
                                                       for c in cands],
                               judged=0)


def shipped_order(result, top: int | None = None, order: str = "fused", weight: float = 1.0):
    """The judged rows in the order the engine ships (searches cached before an order change stay usable).
    `top`: as if the judge had read only the first `top` rows of the fused order (`judge_top`; the cache's
    searches read 20), the others following unscored in fused order."""
    read = sorted((c for c in result.candidates if c.judge is not None), key=lambda c: c.fused_rank)
    unread = []
    if top is not None and top < len(read):
        # The judge's ranks among the rows it would have read, as `rerank` gives them (not among all 20).
        read, unread = read[:top], [dataclasses.replace(c, judge=None, judge_rank=None) for c in read[top:]]
        by_score = sorted(range(len(read)), key=lambda i: (-read[i].judge, i))
        rank = {i: r for r, i in enumerate(by_score, start=1)}
        read = [dataclasses.replace(c, judge_rank=rank[i]) for i, c in enumerate(read)]
    rest = unread + [c for c in result.candidates if c.judge is None]
    return dataclasses.replace(result, candidates=judged_order(read, order=order, weight=weight) + rest)


def run(lang: str, data: dict, engine, config: str, ids: dict[str, str], heldout: str | None = None) -> list[dict]:
    """Each question's row under one configuration, split by its article (`lab.heldout.row_split` on the
    held-out folder)."""
    s, ordered, judged = configured(engine.settings, config)
    weight = float(config.partition("weight=")[2] or 1.0) if config.startswith("rerank") else 1.0

    model = engine.support_model if s.tuning.support_model else None

    def order(r):
        r = shipped_order(r, s.tuning.judge_top, s.tuning.judge_order, weight) if ordered else fused_order(r)
        # Weighed here, not when searched: the cached searches serve every model (its inputs are on the rows).
        return model.scored(r) if model is not None else r

    unrelated = {q: order(r) for q, r in data["unrelated"].items()}
    saved, engine.settings = engine.settings, s
    if not judged:
        judge, engine.judge = engine.judge, None
    try:
        calibration = engine.calibrate_with(lambda q, v: unrelated[q], s)
    finally:
        engine.settings = saved
        if not judged:
            engine.judge = judge
    rows = []
    for q, result in zip(data["questions"], data["results"]):
        result = order(result)
        qlang = q.get("lang") or lang
        rule = calibration.rule(qlang, s.tuning.min_support, s.tuning.close_support, s.tuning.ramp_support,
                                s.tuning.judge_rules if judged else ())
        kept = gate(result, calibration.threshold(qlang), s.max_chunks, rule).kept
        needle = q.get("needle")
        article = ids[q["id"]]
        rows.append({"lang": lang, "kind": q["kind"], "split": _split(article, heldout),
                     "answered": bool(kept),
                     "right": bool(needle) and any(contains(c.content, needle) for c in kept),
                     "r1": bool(needle) and bool(result.candidates) and contains(result.candidates[0].content, needle),
                     "r4": bool(needle) and any(contains(c.content, needle) for c in result.candidates[:4])})
    return rows, calibration


def _split(article: str, heldout: str | None) -> str:
    """The row's split: by article on the eval folder; `lab.heldout.row_split` on the six; all of the ten
    (held out from everything) `heldout10`; an off-folder question there is of a test article."""
    if heldout == "first10":
        return "heldout10"
    return row_split(article) if heldout else split_of(article)


def summary(rows: list[dict], lang: str, split: str) -> dict:
    mine = [r for r in rows if r["lang"] == lang and r["split"] == split]
    ans = [r for r in mine if r["kind"] == "answerable"]
    out = {"right kept": rate(sum(r["right"] for r in ans), len(ans)),
           "R@1": rate(sum(r["r1"] for r in ans), len(ans)), "R@4": rate(sum(r["r4"] for r in ans), len(ans))}
    for kind in ("off-folder", "near-miss"):
        k = [r for r in mine if r["kind"] == kind]
        out[f"{kind} answered"] = rate(sum(r["answered"] for r in k), len(k))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default="en,pt,es")
    ap.add_argument("--configs", default="words,judge")
    ap.add_argument("--splits", default="dev,test")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--set", action="append", default=[], help="a setting for the searches, e.g. judge_top=10")
    ap.add_argument("--limit", type=int, default=0, help="the first N questions only (a smoke run)")
    ap.add_argument("--judge", default="", help="a judge model folder (default: the shipped one)")
    ap.add_argument("--judge-languages", default="", help="trust it for these (default: its model card's)")
    ap.add_argument("--heldout", nargs="?", const="six", choices=("six", "first10"), default=None,
                    help="a held-out folder instead (lab.heldout): 'six', the six other-topic articles, splits "
                         "'heldout' (test articles' questions) and 'heldout-seen'; 'first10', the ten labelled "
                         "SQuAD training articles (English), split 'heldout10'")
    args = ap.parse_args(argv)
    if args.heldout == "six":
        from lab.heldout import build
        args.splits = "heldout,heldout-seen"
    elif args.heldout == "first10":
        from lab.heldout import build_first10

        def build(lang, folder):
            return build_first10(folder)
        args.splits = "heldout10"
    judge = {k: v for k, v in (("judge_path", args.judge), ("judge_languages", args.judge_languages)) if v}
    judge.update(kv.split("=", 1) for kv in args.set)
    args.out.mkdir(parents=True, exist_ok=True)
    ids = article_of_ids()
    embedder = rag.load_embedder()
    report, every_row = {}, {}
    for lang in args.langs.split(","):
        folder = args.out / f"heldout{'10' if args.heldout == 'first10' else ''}-{lang}" if args.heldout else None
        questions = build(lang, folder) if folder else None
        engine = engine_for(lang, args.out, embedder, judge, folder)
        data = collect(lang, args.out, engine, args.limit, questions)
        n = len(data["questions"])
        print(f"\n{lang}: {n} questions searched in {data['seconds']:.0f} s ({1000 * data['seconds'] / n:.0f} ms each)")
        by_config = {}
        for config in args.configs.split(","):
            rows, calibration = run(lang, data, engine, config, ids, args.heldout)
            by_config[config] = rows
            every_row[f"{lang}|{config}"] = rows
            cut = calibration.languages[lang].judge_cut if lang in calibration.languages else None
            print(f"  {config}: threshold {calibration.threshold(lang):.3f} ({calibration.describe(lang)}), judge cut {cut}")
            for split in args.splits.split(","):
                sm = summary(rows, lang, split)
                report[(lang, config, split)] = sm
                print(f"    {split:<5} " + "  ".join(f"{k} {fmt_rate(v)} ({v['k']}/{v['n']})" for k, v in sm.items()))
        if "words" in by_config and "judge" in by_config:
            for split in args.splits.split(","):
                a = [r["r1"] for r in by_config["judge"] if r["split"] == split and r["kind"] == "answerable"]
                b = [r["r1"] for r in by_config["words"] if r["split"] == split and r["kind"] == "answerable"]
                t = sign_test([float(x) for x in a], [float(x) for x in b])
                print(f"    R@1 judge vs fused, {split}: {t}")
        engine.close()
    if args.json:
        args.json.write_text(json.dumps({"summary": {"|".join(k): v for k, v in report.items()}, "rows": every_row},
                                        indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

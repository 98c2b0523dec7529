"""Refusals at default settings: bluffs and answers by language and kind of question, on public data.

For each folder (the SQuAD 2.0 folder in English and in Portuguese from ../shared/eval/squad2, and the
sample folder data/ with bench/sample_needles.jsonl) this indexes the folder with the default settings,
lets the engine calibrate itself (no question written by a person), asks every question once as the
engine would (`Engine.threshold_choice`: each question at its language's calibrated threshold, with the
support test) and counts, by language and kind:

- bluffs: should-refuse questions (off-folder, near-miss, the sample's own) that still got an answer;
- right kept: answerable questions whose right passage hybrid search ranks in its top 4, and that the
  gate keeps (a kept passage holds the needle sentence);
- follow-ups: the sample's should-refuse questions asked as a second turn after an answerable one
  (searched with it, as the chat does), against the same questions asked alone.

Every set is split in two halves by a hash (md5) of each question's id, or of its text when it has no id
(the sample set): `dev`, where the settings were chosen (min_support, close_support, the shipped
unrelated question sets), and `test`, measured once with them and reported. Rates carry Wilson 95%
intervals. `--markdown` prints the rows of the README's table.

The sample set's test half was looked at while rules were chosen, so two more sets for the sample folder
(bench/sample_heldout.jsonl, bench/sample_heldout2.jsonl) were written by sessions that saw only data/:
set 1 joined development, set 2 is reported as "held-out" (the whole set is test).

    .venv/bin/python bench/refusals.py [--sets squad,sample,heldout,heldout2] [--set close_support=0.15]
                                       [--squad ../shared/eval/squad2] [--out bench/out] [--json FILE] [--markdown]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the lab beside rag/, wherever the script is run from

import rag  # noqa: E402
from rag import gate, load_settings  # noqa: E402
from lab.metrics import fmt_rate, rate  # noqa: E402
from rag.deciding.needles import contains, load_questions  # noqa: E402


def half(qid: str) -> str:
    """'dev' or 'test', by the parity of the md5 of a question's id (or text).

    >>> half("56ddde6b9a695914005b9629"), half("Does the app need internet access to work?")
    ('test', 'dev')
    """
    return "dev" if int(hashlib.md5(qid.encode()).hexdigest(), 16) % 2 == 0 else "test"


def run_folder(name: str, folder: Path, questions_path: Path, out: Path, embedder, overrides: dict | None = None,
               split=half) -> dict:
    raw = [json.loads(line) for line in questions_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = load_questions(questions_path)
    # Passed in code, as an evaluation must: the tuned ones (judge, close_support, ...) are refused from the
    # environment (rag.settings).
    settings = load_settings(config=out / "none.toml", env={}, folder=folder, index_dir=out / f"idx-{name}",
                             **(overrides or {}))
    engine = rag.Engine(settings, embedder=embedder)
    t0 = time.perf_counter()
    engine.sync()
    calibration = engine.calibrated()
    rows = []
    for q, d in zip(questions, raw):
        result = engine.search(q.question)
        choice = engine.threshold_choice(q.question, lang=q.lang or None)
        kept = gate(result, choice.value, settings.max_chunks, choice.rule).kept
        kind = q.kind or ("should-refuse" if q.refuse else "answerable")
        top4 = (not q.refuse) and any(c.fused_rank <= 4 and contains(c.content, q.needle) for c in result.candidates)
        rows.append({"lang": q.lang, "kind": kind, "split": split(d.get("id") or q.question),
                     "answered": bool(kept), "top4": top4,
                     "right": (not q.refuse) and any(contains(c.content, q.needle) for c in kept)})
    followups = []
    if name.startswith("sample"):
        answerable = [q for q in questions if q.answerable]
        for i, q in enumerate(x for x in questions if x.refuse):
            first = next(a for a in answerable[i % len(answerable):] + answerable if a.lang == q.lang)
            history = [engine.search(first.question).query]
            alone = bool(engine.ask(q.question).gated.kept)
            second = engine.ask(q.question, history=history)
            followups.append({"lang": q.lang, "alone": alone, "second": bool(second.gated.kept),
                              "searched_as": second.result.query})
    engine.close()
    return {"name": name, "rows": rows, "followups": followups, "seconds": time.perf_counter() - t0,
            "calibration": {k: v.describe() for k, v in calibration.languages.items()},
            "thresholds": {k: v.threshold for k, v in calibration.languages.items()},
            "close": {k: v.close for k, v in calibration.languages.items()}}


def summarise(run: dict) -> list[dict]:
    out = []
    rows = run["rows"]
    for split in sorted({r["split"] for r in rows}):
        for lang in sorted({r["lang"] for r in rows}):
            mine = [r for r in rows if r["split"] == split and r["lang"] == lang]
            top4 = [r for r in mine if r["kind"] == "answerable" and r["top4"]]
            out.append({"set": run["name"], "split": split, "lang": lang, "what": "right kept (of top-4 answerable)",
                        **rate(sum(r["right"] for r in top4), len(top4))})
            for kind in sorted({r["kind"] for r in mine} - {"answerable"}):
                ref = [r for r in mine if r["kind"] == kind]
                out.append({"set": run["name"], "split": split, "lang": lang, "what": f"bluffs ({kind})",
                            **rate(sum(r["answered"] for r in ref), len(ref))})
    for lang in sorted({f["lang"] for f in run["followups"]}):
        fs = [f for f in run["followups"] if f["lang"] == lang]
        out.append({"set": run["name"], "split": "all", "lang": lang, "what": "bluffs asked alone",
                    **rate(sum(f["alone"] for f in fs), len(fs))})
        out.append({"set": run["name"], "split": "all", "lang": lang, "what": "bluffs as a second turn",
                    **rate(sum(f["second"] for f in fs), len(fs))})
    return out


NAMES = {"squad-en": "SQuAD, English", "squad-pt": "SQuAD, Portuguese", "sample": "sample",
         "sample-heldout": "sample, held-out set 1", "sample-heldout2": "sample, held-out set 2"}
SETS = ("squad", "sample", "heldout", "heldout2")
LANG_NAMES = {"en": "English", "pt": "Portuguese"}


def markdown_rows(runs: list[dict], summary: list[dict]) -> list[str]:
    """`| folder | questions | right kept | off-folder bluffs | near-miss bluffs |` rows, test halves first."""
    out = []
    for split in ("held-out", "test", "dev"):
        for run in runs:
            for lang in sorted({s["lang"] for s in summary if s["set"] == run["name"] and s["split"] == split}):
                mine = {s["what"]: s for s in summary if s["set"] == run["name"] and s["split"] == split and s["lang"] == lang}
                right = mine.get("right kept (of top-4 answerable)")
                off = mine.get("bluffs (off-folder)") or mine.get("bluffs (should-refuse)")
                near = mine.get("bluffs (near-miss)")
                name = NAMES.get(run["name"], run["name"])
                if run["name"].startswith("sample"):
                    name += f", {LANG_NAMES.get(lang, lang)}"
                counts = ", ".join(str(x["n"]) for x in (right, off, near) if x)
                cell = lambda x: f"{fmt_rate(x)} ({x['k']}/{x['n']})" if x else "–"
                part = "whole set, held out" if split == "held-out" else f"{split} half"
                out.append(f"| {name} ({part}) | {counts} | {cell(right)} | {cell(off)} | {cell(near)} |")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--squad", default=str(ROOT.parent / "shared" / "eval" / "squad2"))
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    p.add_argument("--json", help="write every row and summary here")
    p.add_argument("--markdown", action="store_true", help="also print the README table's rows")
    p.add_argument("--sets", default=",".join(SETS), help=f"which folders, comma-separated: {', '.join(SETS)}")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting")
    args = p.parse_args(argv)
    sets = args.sets.split(",")
    if unknown := set(sets) - set(SETS):
        p.error(f"unknown set(s) {', '.join(sorted(unknown))}; choose from {', '.join(SETS)}")
    overrides = dict(kv.split("=", 1) for kv in args.set)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    embedder = rag.load_embedder()
    squad = Path(args.squad)
    runs = [run_folder(f"squad-{lang}", squad / lang / "docs", squad / lang / "questions.jsonl", out, embedder,
                       overrides) for lang in ("en", "pt") if "squad" in sets and (squad / lang).is_dir()]
    if "sample" in sets:
        runs.append(run_folder("sample", ROOT / "data", ROOT / "bench" / "sample_needles.jsonl", out, embedder,
                               overrides))
    # Written by sessions that saw only data/, never the gate or another set. Set 1 chose close_support with
    # the sample set; set 2 was first run with the settings already chosen.
    for key, name, file in (("heldout", "sample-heldout", "sample_heldout.jsonl"),
                            ("heldout2", "sample-heldout2", "sample_heldout2.jsonl")):
        if key in sets:
            runs.append(run_folder(name, ROOT / "data", ROOT / "bench" / file, out, embedder, overrides,
                                   split=lambda _: "held-out"))
    summary = [s for r in runs for s in summarise(r)]
    for r in runs:
        print(f"{r['name']}: " + "; ".join(r["calibration"].values()))
    print(f"\n{'set':<9} {'split':<5} {'lang':<4} {'what':<36} rate [95% CI] (k/n)")
    for s in summary:
        print(f"{s['set']:<9} {s['split']:<5} {s['lang']:<4} {s['what']:<36} {fmt_rate(s)} ({s['k']}/{s['n']})")
    if args.markdown:
        print("\n" + "\n".join(markdown_rows(runs, summary)))
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, "summary": summary}, ensure_ascii=False, indent=1),
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

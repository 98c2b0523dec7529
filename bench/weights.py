"""The fusion weights for a language MiniLM does not read, chosen through the app's own search (issues 33, 35).

A Portuguese or Spanish question ranks its language's passages by three sides: BM25 (weight `bm25_weight`),
MiniLM (`dense_weight_unread`: it reads these languages poorly) and the multilingual side
(`multilingual_weight`). This searches every answerable question of the SQuAD folders
(`../shared/eval/squad2/{pt,es}`) and of the held-out folder (`lab.heldout`, six other articles) once per pair
of weights in the grid, through `Engine.search` (fusion, feedback and all), and BM25 alone
(`lab.evaluate.mode_ranking`), and keeps each question's R@1 and R@4.

The pair is chosen on the SQuAD folders' questions outside the `test` articles (`lab.judge_data.SPLITS`:
`train` and `dev`; nothing of the judge is involved here), Portuguese and Spanish together, by the most
right passages first plus in the first four (R@1 + R@4 hits); a tie goes to the pair nearer the defaults.
It is reported on the `test` articles and on the held-out folder against the defaults, the side off
(`multilingual_weight` 0, the hybrid before issue 35) and BM25 alone, with paired sign tests.

    .venv/bin/python bench/weights.py [--langs pt,es] [--multilingual 0,0.1,0.15,0.2,0.3,0.4]
                                      [--dense 0.05,0.1,0.2] [--out bench/out/weights] [--json FILE]

What it does not do: change a default (that is a one-line edit of `rag/settings.py` after reading this), or
measure English (MiniLM reads it: `dense_weight` and `multilingual_weight_read` apply there).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from lab import heldout  # noqa: E402
from lab.evaluate import mode_ranking, needle_rank  # noqa: E402
from lab.judge_data import split_of  # noqa: E402
from lab.metrics import sign_test  # noqa: E402
from rag import load_settings  # noqa: E402

SQUAD = ROOT.parent / "shared" / "eval" / "squad2"


def _questions(path: Path) -> list[dict]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]
    return [r for r in rows if r["kind"] == "answerable" and r.get("needle")]


def folders(lang: str, out: Path) -> list[tuple[str, Path, list[dict]]]:
    """(name, docs folder, answerable questions each with its `split`) for the SQuAD and held-out folders."""
    ids = _article_of_ids()
    squad = [dict(q, split=split_of(ids[q["id"]])) for q in _questions(SQUAD / lang / "questions.jsonl")]
    held = out / f"heldout-{lang}"
    if not (held / "questions.jsonl").is_file():
        heldout.build(lang, held)
    return [("squad", SQUAD / lang / "docs", squad),
            ("heldout", held / "docs", [dict(q, split="heldout") for q in _questions(held / "questions.jsonl")])]


def _article_of_ids() -> dict[str, str]:
    from bench.judge_eval import article_of_ids
    return article_of_ids()


def measure(engine, questions: list[dict], grid: list[tuple[float, float]]) -> dict[str, list[int | None]]:
    """Each question's needle rank (None: not in the first 20) by BM25 alone and under each pair of weights."""
    base = engine.settings
    ranks: dict[str, list[int | None]] = {"bm25": []}
    for q in questions:
        ranks["bm25"].append(needle_rank(engine, mode_ranking(engine, q["question"], "bm25", 20), q["needle"]))
    for ml, dense in grid:
        engine.settings = base.replace(multilingual_weight=ml, dense_weight_unread=dense)
        ranks[_name(ml, dense)] = [needle_rank(engine, mode_ranking(engine, q["question"], "hybrid"), q["needle"])
                                   for q in questions]
    engine.settings = base
    return ranks


def _name(ml: float, dense: float) -> str:
    return f"multilingual {ml:g}, dense {dense:g}"


def _hits(ranks: list[int | None], k: int) -> list[int]:
    return [int(r is not None and r <= k) for r in ranks]


def choose(runs: list[dict], grid: list[tuple[float, float]], default: tuple[float, float]) -> tuple[float, float]:
    """The pair with the most R@1 + R@4 hits over the choosing questions (a tie: the one nearer `default`)."""
    def score(pair):
        name = _name(*pair)
        hits = sum(sum(_hits(_pick(run, name, "choose"), 1)) + sum(_hits(_pick(run, name, "choose"), 4))
                   for run in runs if run["folder"] == "squad")
        return hits, -abs(pair[0] - default[0]) - abs(pair[1] - default[1])
    return max(grid, key=score)


def _pick(run: dict, name: str, part: str) -> list[int | None]:
    """One configuration's ranks over a part: `choose` (train and dev articles), `test`, or `heldout`."""
    wanted = {"choose": ("train", "dev"), "test": ("test",), "heldout": ("heldout",)}[part]
    return [r for r, s in zip(run["ranks"][name], run["splits"]) if s in wanted]


def report(runs: list[dict], chosen: tuple[float, float], default: tuple[float, float]) -> str:
    off = (0.0, default[1])
    lines = ["| folder | language | n | BM25 R@1 / R@4 | side off R@1 / R@4 | defaults R@1 / R@4 | chosen R@1 / R@4 "
             "| chosen vs side off, R@4 | chosen vs defaults, R@1; R@4 | chosen vs BM25, R@1 |",
             "|---|---|---:|---|---|---|---|---|---|---|"]
    for run in runs:
        part = "test" if run["folder"] == "squad" else "heldout"
        col = {k: _pick(run, k, part) for k in ("bm25", _name(*off), _name(*default), _name(*chosen))}
        n = len(col["bm25"])

        def rr(k):
            return f"{sum(_hits(col[k], 1)) / n:.3f} / {sum(_hits(col[k], 4)) / n:.3f}"
        c, d, o, b = (col[_name(*chosen)], col[_name(*default)], col[_name(*off)], col["bm25"])
        lines.append(f"| {run['folder']} {part} | {run['lang']} | {n} | {rr('bm25')} | {rr(_name(*off))} | "
                     f"{rr(_name(*default))} | {rr(_name(*chosen))} | {sign_test(_hits(c, 4), _hits(o, 4))} | "
                     f"{sign_test(_hits(c, 1), _hits(d, 1))}; {sign_test(_hits(c, 4), _hits(d, 4))} | "
                     f"{sign_test(_hits(c, 1), _hits(b, 1))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default="pt,es")
    ap.add_argument("--multilingual", default="0,0.1,0.15,0.2,0.3,0.4")
    ap.add_argument("--dense", default="0.05,0.1,0.2")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "weights")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    grid = list(itertools.product(*(tuple(float(x) for x in v.split(",")) for v in (args.multilingual, args.dense))))
    defaults = load_settings(config=args.out / "none.toml", env={}, folder=SQUAD / "pt" / "docs")
    default = (defaults.tuning.multilingual_weight, defaults.tuning.dense_weight_unread)
    if default not in grid or (0.0, default[1]) not in grid:
        grid += [p for p in (default, (0.0, default[1])) if p not in grid]
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for lang in args.langs.split(","):
        for name, docs, questions in folders(lang, args.out):
            settings = load_settings(config=args.out / "none.toml", env={}, folder=docs,
                                     index_dir=args.out / f"idx-{name}-{lang}")
            engine = rag.Engine(settings)
            engine.sync()
            t0 = time.perf_counter()
            ranks = measure(engine, questions, grid)
            print(f"{lang} {name}: {len(questions)} questions x {len(grid) + 1} in {time.perf_counter() - t0:.0f} s",
                  flush=True)
            runs.append({"lang": lang, "folder": name, "ids": [q["id"] for q in questions],
                         "splits": [q["split"] for q in questions], "ranks": ranks})
    chosen = choose(runs, grid, default)
    print(f"chosen on the SQuAD folders outside the test articles: multilingual_weight {chosen[0]:g}, "
          f"dense_weight_unread {chosen[1]:g} (defaults {default[0]:g}, {default[1]:g})")
    for pair in grid:
        name = _name(*pair)
        hits = [(sum(_hits(_pick(r, name, 'choose'), 1)), sum(_hits(_pick(r, name, 'choose'), 4)))
                for r in runs if r["folder"] == "squad"]
        print(f"  {name}: choosing R@1, R@4 hits by language {hits}")
    print(report(runs, chosen, default))
    if args.json:
        args.json.write_text(json.dumps({"grid": grid, "chosen": chosen, "default": default, "runs": runs}) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

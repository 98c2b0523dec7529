"""Should the judge read whole chunks or sentence windows? Measured on the dev articles' pairs.

For each (question, passage) pair of `lab.judge_data.pairs("dev")` the judge scores the whole chunk (what the
app reads today: its `[Title > Section]` header and up to 512 characters), and every window of `w`
consecutive sentences of it with the same header in front; a window reading gives the chunk its best
window's score. Reported per language: the AUC of answers against each kind of negative (near miss, another
chunk of the same article, another article) for each reading, the word-pieces read and the time per pair.

Dev articles only (lab.judge_data.SPLITS): nothing here is chosen on test articles.

    .venv/bin/python bench/judge_windows.py [--judge rag/deciding/judge_model] [--langs en,pt] [--windows 1,2] [--pairs 600]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.judge_data import pairs  # noqa: E402
from lab.train_judge import auc  # noqa: E402
from rag.indexing.chunk import sentences  # noqa: E402
from rag.deciding.judge import JUDGE_DIR, Judge  # noqa: E402

KINDS = ("near-miss", "same-article", "far")


def windows(passage: str, width: int) -> list[str]:
    """The passage's windows of `width` consecutive sentences, each under the passage's header line.

    >>> windows("[A > B]\\nOne is here. Two is there. Three.", 2)
    ['[A > B]\\nOne is here. Two is there.', '[A > B]\\nTwo is there. Three.']
    """
    head, _, body = passage.partition("\n") if passage.startswith("[") else ("", "", passage)
    spans = sentences(body)
    if len(spans) <= width:
        return [passage]
    out = []
    for i in range(len(spans) - width + 1):
        text = body[spans[i][0]:spans[i + width - 1][1]]
        out.append(f"{head}\n{text}" if head else text)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--judge", type=Path, default=JUDGE_DIR)
    ap.add_argument("--langs", default="en,pt")
    ap.add_argument("--windows", default="1,2", help="window widths in sentences (the chunk is always read)")
    ap.add_argument("--pairs", type=int, default=600, help="dev pairs per language (the first of the shuffled set)")
    args = ap.parse_args(argv)
    judge = Judge(args.judge, languages=())
    widths = [int(w) for w in args.windows.split(",") if w]
    report: dict = {"machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "judge": judge.stamp}
    for lang in args.langs.split(","):
        items = pairs("dev", (lang,))[:args.pairs]
        rows: dict[str, list[float]] = {}
        cost: dict[str, dict] = {}
        for name, split in [("chunk", lambda p: [p])] + [(f"window {w}", lambda p, w=w: windows(p, w)) for w in widths]:
            t0, pieces, best = time.perf_counter(), 0, []
            for it in items:
                parts = split(it.passage)
                pieces += sum(len(judge.tokenizer(it.question, x, truncation="only_second",
                                                  max_length=judge.max_length)["input_ids"]) for x in parts)
                best.append(max(judge.score(it.question, parts)))
            rows[name] = best
            cost[name] = {"ms_per_pair": round(1000 * (time.perf_counter() - t0) / len(items), 1),
                          "pieces_per_pair": round(pieces / len(items), 1)}
        out = {}
        for name, scores in rows.items():
            by = defaultdict(list)
            for it, s in zip(items, scores):
                by[it.kind].append(s)
            out[name] = {k: round(auc(by["answer"], by[k]), 3) for k in KINDS} | cost[name]
        report[lang] = {"pairs": len(items), **out}
        print(lang, json.dumps(out), flush=True)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

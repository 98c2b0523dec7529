"""Two runs of `bench/judge_eval.py --json`, question by question: what changed, with paired sign tests.

For each language, configuration and split both runs hold: the right passage kept and R@1 / R@4 of the
answerable questions, and answered off-folder and near-miss questions, before -> after, with the number
of questions that went each way and the sign test's two-sided p (`lab.metrics.sign_test`). The runs must
have asked the same questions in the same order (the same question file).

    .venv/bin/python bench/paired.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.metrics import sign_test  # noqa: E402

MEASURES = (("answerable", "right"), ("answerable", "r1"), ("answerable", "r4"), ("off-folder", "answered"),
            ("near-miss", "answered"))


def compare(before: dict, after: dict) -> list[str]:
    lines = []
    for key in sorted(set(before["rows"]) & set(after["rows"])):
        a, b = before["rows"][key], after["rows"][key]
        if len(a) != len(b) or any(x["kind"] != y["kind"] for x, y in zip(a, b)):
            lines.append(f"{key}: the runs asked different questions")
            continue
        for split in sorted({r["split"] for r in a}):
            for kind, field in MEASURES:
                pairs = [(x[field], y[field]) for x, y in zip(a, b) if x["split"] == split and x["kind"] == kind]
                if not pairs:
                    continue
                n = len(pairs)
                was, now = sum(x for x, _ in pairs), sum(y for _, y in pairs)
                test = sign_test([float(y) for _, y in pairs], [float(x) for x, _ in pairs])
                lines.append(f"{key} {split:<7} {kind:<10} {field:<8} {was}/{n} -> {now}/{n}  {test}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    load = lambda p: json.loads(p.read_text(encoding="utf-8"))  # noqa: E731
    print("\n".join(compare(load(args.before), load(args.after))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

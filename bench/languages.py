"""Which language the app takes each question to be in (`rag.text.languages.question_language`), on the SQuAD
question sets: English, Portuguese and Spanish, each asked of a folder in its own language and of a folder
in English and Portuguese (a question too short to tell falls back to the folder's languages), with the
share of questions py3langid alone was sure of (probability ≥ `CLEAR`).

    .venv/bin/python bench/languages.py [--squad ../shared/eval/squad2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.metrics import fmt_rate, rate  # noqa: E402
from rag.text.languages import CLEAR, question_language, ranked  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--squad", type=Path, default=ROOT.parent / "shared" / "eval" / "squad2")
    args = ap.parse_args(argv)
    for lang in ("en", "pt", "es"):
        questions = [json.loads(x)["question"] for x in (args.squad / lang / "questions.jsonl").open(encoding="utf-8")]
        t0 = time.perf_counter()
        sure = sum(1 for q in questions if ranked(q)[0][1] >= CLEAR)
        ms = 1000 * (time.perf_counter() - t0) / len(questions)
        own = sum(question_language(q, (lang,)) == lang for q in questions)
        mixed = sum(question_language(q, ("en", "pt")) == lang for q in questions)
        print(f"{lang}: {len(questions)} questions, sure alone {fmt_rate(rate(sure, len(questions)))}; right, folder "
              f"in {lang}: {fmt_rate(rate(own, len(questions)))}; right, folder in en+pt: "
              f"{fmt_rate(rate(mixed, len(questions)))}; {ms:.2f} ms a question")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

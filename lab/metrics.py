"""Metrics and statistics for retrieval measurements: the numbers, not the runs that produce them.

- Rankings: Recall@k, reciprocal rank, first correct rank, nDCG@k with graded linear gains (as trec_eval
  and BEIR compute it).
- Uncertainty: Wilson 95% intervals for a rate, and the exact paired sign test (two-sided binomial on the
  discordant pairs) for two configurations asked the same questions.

What it does not do: search, index or read files (lab.evaluate and lab.beir run the measurements), or
decide whether a passage holds an expected sentence (the product's own rule, `rag.deciding.needles.contains`).

>>> round(ndcg_at(["a", "b", "c"], {"b": 2, "c": 1}, k=3), 4)
0.6697
>>> [round(x, 3) for x in wilson(5, 10)]
[0.237, 0.763]
>>> sign_test([1, 1, 1, 0], [0, 0, 0, 0])
SignTest(wins=3, losses=0, ties=1, p=0.25)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

Z95 = 1.959963984540054


def dcg(gains: Sequence[float]) -> float:
    # Linear gains, log2(rank + 1) discount: trec_eval's ndcg_cut and BEIR (pytrec_eval) alike.
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of a ranking against graded judgments (gain = the judged grade; 0 or absent = not relevant)."""
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([max(qrels.get(d, 0), 0) for d in ranked[:k]]) / ideal


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    rel = set(relevant)
    return len(rel.intersection(ranked[:k])) / len(rel) if rel else 0.0


def reciprocal_rank(rank: int | None, k: int | None = None) -> float:
    """1/rank of the first correct result (1-based), 0 when there is none within k."""
    if rank is None or (k is not None and rank > k):
        return 0.0
    return 1.0 / rank


def first_rank(ranked: Sequence[str], relevant: Iterable[str]) -> int | None:
    rel = set(relevant)
    return next((i for i, d in enumerate(ranked, start=1) if d in rel), None)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion (95% by default); (0, 1) when there is nothing to measure."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class SignTest:
    wins: int  # pairs where the first configuration did better
    losses: int
    ties: int
    p: float  # exact two-sided binomial p-value on wins + losses pairs at 1/2

    def __str__(self) -> str:
        return f"+{self.wins}/−{self.losses} (ties {self.ties}), p = {self.p:.3g}"


def sign_test(a: Sequence[float], b: Sequence[float]) -> SignTest:
    """Exact paired sign test: per item, does `a` beat `b`? Ties are dropped; p is two-sided."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    wins = sum(1 for x, y in zip(a, b) if x > y)
    losses = sum(1 for x, y in zip(a, b) if x < y)
    n, m = wins + losses, min(wins, losses)
    if n == 0:
        return SignTest(0, 0, len(a), 1.0)
    tail = sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n
    return SignTest(wins, losses, len(a) - n, min(1.0, 2 * tail))


def rate(successes: int, n: int) -> dict:
    lo, hi = wilson(successes, n)
    return {"k": successes, "n": n, "rate": successes / n if n else 0.0, "low": lo, "high": hi}


def fmt_rate(r: Mapping) -> str:
    return f"{r['rate']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"

"""Fusion: the dense and BM25 sides' candidates in one ranking, with the weights for each question.

Fusion (`fuse`, chosen by measurement in bench/fusion.py): by default a convex combination of the two
sides' z-score normalised scores, (w_dense * dense + w_bm25 * bm25) / (w_dense + w_bm25), each side
normalised over its own top N; reciprocal rank fusion and min-max normalisation stay available as
settings. The weights are per question (`question_weights`): the dense side weighs less for a question
in a language the embedding model does not read, asked of a folder that holds that language.

What it does not do: search, or decide what is good enough (`rag.searching.search` ranks with it; the gate judges).

>>> rrf({"dense": ["a", "b"], "bm25": ["b", "c"]}, k=60)
{'b': 0.03252247488101534, 'a': 0.01639344262295082, 'c': 0.016129032258064516}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

import numpy as np

from rag.settings import Settings

FUSIONS = ("rrf", "minmax", "zscore")


def rrf(rankings: Mapping[str, Sequence[str]], k: int = 60, weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Weighted reciprocal rank fusion: score(d) = sum over sides of w / (k + rank). Best first."""
    scores: dict[str, float] = {}
    for side, ids in rankings.items():
        w = 1.0 if weights is None else weights.get(side, 1.0)
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
    return dict(sorted(scores.items(), key=lambda kv: -kv[1]))


def normalise(scores: Sequence[float], how: str = "minmax") -> list[float]:
    """One side's scores on a common scale: "minmax" maps the side's best to 1 and its last to 0 (all
    equal: all 1, they are the best the side found); "zscore" subtracts the mean and divides by the
    standard deviation (all equal: all 0).

    >>> normalise([3.0, 2.0, 1.0])
    [1.0, 0.5, 0.0]
    >>> normalise([2.0, 2.0]), normalise([2.0, 2.0], "zscore")
    ([1.0, 1.0], [0.0, 0.0])
    """
    if not scores:
        return []
    x = np.asarray(scores, dtype=np.float64)
    if how == "minmax":
        lo, hi = float(x.min()), float(x.max())
        return [1.0] * len(x) if hi - lo <= 1e-12 else [float(v) for v in (x - lo) / (hi - lo)]
    if how == "zscore":
        sd = float(x.std())
        return [0.0] * len(x) if sd <= 1e-12 else [float(v) for v in (x - x.mean()) / sd]
    raise ValueError(f"unknown normalisation {how!r}; choose minmax or zscore")


def _floor(side: Sequence[tuple[str, float]], normalised: Mapping[str, float]) -> float:
    """What a side gives a candidate it did not return: its lowest normalised value, and one below it when
    all of its scores are equal (then its lowest is also its best, which a candidate it missed is not)."""
    if not normalised:
        return 0.0
    spread = max(s for _, s in side) - min(s for _, s in side) > 1e-12
    return min(normalised.values()) - (0.0 if spread else 1.0)


@dataclass(frozen=True)
class Fused:
    """One candidate's fused score, and each side's normalised score that went into it (None under RRF,
    which reads ranks only, and for a side that was not searched). A side that did not return the candidate
    gives it that side's floor: its lowest value (or one below it when all its scores are equal)."""

    score: float
    dense: float | None = None
    bm25: float | None = None
    multilingual: float | None = None


SIDES = ("dense", "bm25", "multilingual")


def fuse(dense: Sequence[tuple[str, float]], bm25: Sequence[tuple[str, float]], *, method: str = "zscore",
         weights: Mapping[str, float] | None = None, k: int = 60,
         multilingual: Sequence[tuple[str, float]] = (), across: Collection[str] = (),
         across_weight: float = 1.0) -> dict[str, Fused]:
    """Fuse the sides' candidates, each given best first as (id, score) with higher = better (dense and
    multilingual: cosine similarity; BM25: its score). Returns every candidate, best first; equal scores
    keep the order the candidates were first met in (dense's list, then BM25's, then the multilingual
    side's), the caller breaks them further.

    - "rrf": weighted reciprocal rank fusion, w / (k + rank) summed over sides (scores are not read).
    - "minmax" / "zscore": a convex combination of the sides' normalised scores,
      (w_dense * dense + w_bm25 * bm25 + w_multilingual * multilingual) / (the weights' sum), each side
      normalised over its own list. A side not searched (an empty list) takes no part.

    `across`: candidates in another language than the question's. When the multilingual side was searched,
    it weighs `across_weight` for them instead of its weight in `weights` (MiniLM and BM25 hardly read across
    languages: the multilingual side is what finds such a passage). Their other sides keep their weights,
    so a passage in another language outranks one in the question's language only when the multilingual side
    prefers it clearly (alone, one side's z-score would outrank the mean of three in a mixed folder).

    >>> f = fuse([("a", 0.9), ("b", 0.5)], [("b", 7.0), ("c", 3.0)], method="minmax", weights={"dense": 1, "bm25": 1})
    >>> [(cid, round(x.score, 3)) for cid, x in f.items()]
    [('a', 0.5), ('b', 0.5), ('c', 0.0)]
    >>> f = fuse([("a", 0.9), ("b", 0.5)], [("b", 7.0), ("c", 3.0)], weights={"dense": 3, "bm25": 1})
    >>> [(cid, round(x.score, 3), round(x.dense, 3), round(x.bm25, 3)) for cid, x in f.items()]
    [('a', 0.5, 1.0, -1.0), ('b', -0.5, -1.0, 1.0), ('c', -1.0, -1.0, -1.0)]
    >>> f = fuse([("a", 0.9), ("b", 0.5)], [("a", 7.0), ("b", 3.0)], multilingual=[("x", 0.7), ("a", 0.6)],
    ...          weights={"dense": 1, "bm25": 1, "multilingual": 0}, across={"x"}, across_weight=2)
    >>> [(cid, round(x.score, 3)) for cid, x in f.items()]  # "x", in another language: (2 * 1 - 1 - 1) / 4
    [('a', 1.0), ('x', 0.0), ('b', -1.0)]
    """
    w = {"dense": 1.0, "bm25": 1.0, "multilingual": 1.0, **(weights or {})}
    lists = {"dense": dense, "bm25": bm25, "multilingual": multilingual}
    searched = [side for side in SIDES if side != "multilingual" or multilingual]
    if method == "rrf":
        fused = rrf({side: [c for c, _ in lists[side]] for side in searched}, k=k, weights=w)
        if multilingual and across:
            lists_of = {side: [c for c, _ in lists[side]] for side in searched}
            moved = rrf(lists_of, k=k, weights={**w, "multilingual": across_weight})
            fused = {cid: moved[cid] if cid in across else s for cid, s in fused.items()}
            fused = dict(sorted(fused.items(), key=lambda kv: -kv[1]))
        return {cid: Fused(s) for cid, s in fused.items()}
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}")
    normed = {side: dict(zip((c for c, _ in lists[side]), normalise([s for _, s in lists[side]], method)))
              for side in searched}
    floors = {side: _floor(lists[side], normed[side]) for side in searched}
    moved = {**w, "multilingual": across_weight}
    out = {}
    for cid in dict.fromkeys(c for side in searched for c in normed[side]):
        values = {side: normed[side].get(cid, floors[side]) for side in searched}
        mine = moved if multilingual and cid in across else w
        total = sum(mine.get(side, 0.0) for side in searched)
        score = sum(mine.get(side, 0.0) * values[side] for side in searched) / total if total > 0 else 0.0
        out[cid] = Fused(score, values["dense"], values["bm25"], values.get("multilingual"))
    return dict(sorted(out.items(), key=lambda kv: -kv[1].score))


def fused_order(dense: Sequence[tuple[str, float]], bm25: Sequence[tuple[str, float]], distances: Mapping[str, float],
                *, n: int, method: str = "zscore", weights: Mapping[str, float] | None = None,
                k: int = 60, multilingual: Sequence[tuple[str, float]] = (),
                across: Collection[str] = (), across_weight: float = 1.0) -> list[tuple[str, Fused]]:
    """The search's ranking step: `dense` (and `multilingual`) as (id, cosine distance) closest first, `bm25`
    as (id, score) best first, `distances` the MiniLM distance of every candidate of any side. The best `n`
    by `fuse`, equal fused scores closer chunk first. Evaluation calls this too, so a measured rule is the
    app's rule."""
    fused = fuse([(cid, 1.0 - d) for cid, d in dense], bm25, method=method, weights=weights, k=k,
                 multilingual=[(cid, 1.0 - d) for cid, d in multilingual], across=across, across_weight=across_weight)
    return sorted(fused.items(), key=lambda kv: (-kv[1].score, distances[kv[0]]))[:n]


def question_weights(settings: Settings, language: str, model_languages: Sequence[str],
                     folder_languages: Sequence[str] = ()) -> dict[str, float]:
    """The fusion weights for one question. The dense side weighs `dense_weight_unread` when the model
    does not read the question's language and the folder has text in it (BM25 matches the question's
    words there, while the model's similarities for a language it never learnt rank poorly), else
    `dense_weight`; BM25 weighs `bm25_weight` either way. A question in a language the folder does not
    hold (a cross-language question) shares few words with it, so both sides keep their usual weights.
    The multilingual side weighs `multilingual_weight` for a question in a language MiniLM does not read,
    `multilingual_weight_read` for one it reads (it ranks a passage in another language alone: `fuse`).
    `language`: the question's, or the folder's main language when the question's is unclear.

    >>> from rag.settings import Settings
    >>> s = Settings().replace(dense_weight=0.6, dense_weight_unread=0.1, bm25_weight=0.4, multilingual_weight=0.6,
    ...                        multilingual_weight_read=1.0)
    >>> question_weights(s, "pt", ("en",), ("en", "pt")), question_weights(s, "en", ("en",), ("en", "pt"))
    ({'dense': 0.1, 'bm25': 0.4, 'multilingual': 0.6}, {'dense': 0.6, 'bm25': 0.4, 'multilingual': 1.0})
    >>> question_weights(s, "pt", ("en",), ("en",))  # a Portuguese question about English notes
    {'dense': 0.6, 'bm25': 0.4, 'multilingual': 0.6}
    """
    unread = language not in model_languages and language in folder_languages
    read = language in model_languages
    return {"dense": settings.tuning.dense_weight_unread if unread else settings.tuning.dense_weight, "bm25": settings.tuning.bm25_weight,
            "multilingual": settings.tuning.multilingual_weight_read if read else settings.tuning.multilingual_weight}

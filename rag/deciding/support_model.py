"""The support model: how likely a passage answers a question, from the signals search and weighing already
computed, for the languages whose words MiniLM and the judge do not read (Portuguese, Spanish).

In those languages the word share alone decided, and it fails both ways: a paraphrase that changed one word
("termo" for "prazo") is refused, and a near miss, which shares the passage's words, is answered. The
multilingual side (USE) reads these languages; BM25 reads their words with its own analyzer; MiniLM's distance
still says something. A logistic model weighs those signals together (`FEATURES`: each passage's own, and
each against the best of its question's rows), trained on labelled Portuguese and Spanish questions
(`lab/train_support.py`; data, recipe and figures in `support_model.json` and docs/support.md). Its
probability is written on each candidate (`Candidate.supported`); the gate compares it with a cut
calibrated per folder and language on the shipped unrelated questions, as it does the judge's score
(rag.deciding.calibration, rag.deciding.rule.SupportRule.model_cut).

What it does not do: read the text again (every input is already on the candidates: 0.34 ms a question of 20 rows here, a
cached search timed), search, reorder, or decide.

>>> from rag.searching.search import Candidate, SearchResult
>>> def row(rank, dist, side, bm25, support):
...     return Candidate(f"c{rank}", "d", "x.md", "", "", "texto", 0, 5, None, None, "text", rank, 0.1, dist,
...                      rank, rank, bm25, support=support, side_distance=side, side_rank=rank, lang="pt")
>>> result = SearchResult("Quando?", "Quando?", [row(1, 0.5, 0.4, 9.0, 1.0), row(2, 0.7, 0.8, 2.0, 0.2)], {},
...                       terms=("quando",), language="pt")
>>> m = features(result)
>>> m.shape == (2, len(FEATURES)), [round(float(x), 2) for x in m[:, FEATURES.index("side gap")]]
(True, [0.0, 0.4])
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.searching.search import SearchResult

MODEL_PATH = Path(__file__).resolve().parent / "support_model.json"
_RANKS = 21.0  # a side that did not list the passage: as if it came just after its last row (20 rows)

# Each passage's own signals, then each against the best row of its question (a passage far behind the
# best is seldom the answer, whatever its own figures), then the question's.
FEATURES = ("distance", "side distance", "bm25", "bm25 share", "log bm25 rank", "log dense rank",
            "log side rank", "log fused rank", "support", "lacks a name", "distance gap", "side gap",
            "support gap", "absent name", "wordless", "holds a code", "log terms")


def features(result: SearchResult) -> np.ndarray:
    """One row of `FEATURES` per candidate of `result`, in its order."""
    cands = result.candidates
    if not cands:
        return np.zeros((0, len(FEATURES)))
    dist = np.array([c.distance for c in cands])
    side = np.array([1.0 if c.side_distance is None else c.side_distance for c in cands])
    bm25 = np.array([c.bm25_score or 0.0 for c in cands])
    support = np.array([c.support for c in cands])
    top = bm25.max() if bm25.max() > 0 else 1.0

    def rank(r):
        return math.log(r if r else _RANKS)

    rows = []
    for i, c in enumerate(cands):
        rows.append((dist[i], side[i], math.log1p(bm25[i]), bm25[i] / top, rank(c.bm25_rank), rank(c.dense_rank),
                     rank(c.side_rank), rank(c.fused_rank), support[i], float(bool(c.lacks_names)),
                     dist[i] - dist.min(), side[i] - side.min(), support.max() - support[i],
                     float(bool(c.absent_names)), float(c.wordless), float(bool(c.codes)),
                     math.log1p(len(result.terms))))
    return np.asarray(rows, dtype=float)


@dataclass(frozen=True)
class SupportModel:
    """A logistic model over `FEATURES`, standardised: p = sigmoid(((x - mean) / scale) . coef + intercept)."""

    languages: tuple[str, ...]  # the question languages it was trained and measured on
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    stamp: str  # identifies the weights: part of the calibration's fingerprint
    card: dict = dataclasses.field(default_factory=dict, compare=False)  # data, recipe, figures

    def reads(self, lang: str) -> bool:
        return lang in self.languages

    def scores(self, result: SearchResult) -> np.ndarray:
        """The probability that each candidate answers, in order."""
        return self.scores_rows(features(result))

    def scores_rows(self, x: np.ndarray) -> np.ndarray:
        """The probability for each row of `FEATURES` values."""
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return 1.0 / (1.0 + np.exp(-(z @ np.asarray(self.coef) + self.intercept)))

    def scored(self, result: SearchResult) -> SearchResult:
        """`result` with each candidate's `supported` written, when the model reads the question's language
        (else unchanged: the word share decides)."""
        if not self.reads(result.language) or not result.candidates:
            return result
        p = self.scores(result)
        return dataclasses.replace(result, candidates=[dataclasses.replace(c, supported=float(s))
                                                       for c, s in zip(result.candidates, p)])

    def to_json(self) -> dict:
        return {"features": list(FEATURES), "languages": list(self.languages), "mean": list(self.mean),
                "scale": list(self.scale), "coef": list(self.coef), "intercept": self.intercept,
                "stamp": self.stamp, "card": self.card}


def load_support_model(path: Path = MODEL_PATH) -> SupportModel:
    """The model saved at `path`; a `ValueError` when its features are not this module's."""
    d = json.loads(Path(path).read_text(encoding="utf-8"))
    if tuple(d["features"]) != FEATURES:
        raise ValueError(f"{path}: trained on features {d['features']}, this code computes {list(FEATURES)}")
    return SupportModel(tuple(d["languages"]), tuple(d["mean"]), tuple(d["scale"]), tuple(d["coef"]),
                        float(d["intercept"]), d["stamp"], d.get("card", {}))

"""The threshold sweep: what every threshold would do with a set of questions, and the one to suggest.

Each question is searched once; the same candidates are gated at every threshold with the gate's full
evidence test (distance and the support rule of the question's language), and once as the engine would
gate them (each question at its own language's threshold). A question with a needle is answered right
when a kept passage holds the needle (`rag.deciding.needles.contains`), wrong when only other passages are kept;
a question to refuse bluffs when anything is kept. The calibration page draws this; `rag eval sweep`
(the lab's `lab.evaluate.sweep_table`) prints it.

What it does not do: index, write anything, or choose the engine's threshold (`rag.deciding.calibration` does).

>>> rows = [SweepRow(0.4, 2, 0, 8, 0, 10, 10), SweepRow(0.5, 6, 1, 3, 1, 10, 10), SweepRow(0.6, 8, 1, 1, 3, 10, 10)]
>>> suggest_threshold(rows, budget=0.1), suggest_threshold(rows, budget=0.3)
(0.5, 0.6)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Sequence

from rag.deciding.calibration import evidence_distance
from rag.deciding.gate import gate
from rag.deciding.needles import Question, contains
from rag.searching.search import SearchResult


@dataclass(frozen=True)
class SweepRow:
    threshold: float
    right: int  # answerable, and a kept chunk holds the needle
    wrong: int  # answerable, something kept, but not the needle
    refused: int  # answerable, nothing passed
    bluffs: int  # should refuse, yet something passed
    answerable: int
    refusable: int


@dataclass
class Sweep:
    questions: list[Question]
    nearest: list[float]  # nearest candidate's cosine distance, per question
    current: float  # the threshold the engine gives a question of the group's language (first group: all)
    budget: float  # the bluff rate allowed when suggesting a threshold
    rows: dict[str, list[SweepRow]]  # group ("all", "en", "en:off-folder", ...) -> one row per threshold
    suggested: dict[str, float | None]
    evidence: list[float] = field(default_factory=list)  # per question: the smallest threshold that answers it
    currents: dict[str, float] = field(default_factory=dict)  # group -> the engine's threshold for it
    at_current: dict[str, SweepRow] = field(default_factory=dict)  # group -> outcome at that threshold

    def at(self, group: str, threshold: float) -> SweepRow:
        return min(self.rows[group], key=lambda r: abs(r.threshold - threshold))

    def distances(self) -> list[dict]:
        ev = self.evidence or [math.nan] * len(self.questions)
        return [{"question": q.question, "lang": q.lang or "?", "kind": "refusable" if q.refuse else "answerable",
                 "set_kind": q.kind, "nearest": d, "evidence": None if not math.isfinite(e) else e}
                for q, d, e in zip(self.questions, self.nearest, ev)]

    def to_json(self) -> dict:
        return {"current": self.current, "budget": self.budget, "suggested": self.suggested,
                "currents": self.currents, "at_current": {g: dataclasses.asdict(r) for g, r in self.at_current.items()},
                "distances": self.distances(),
                "rows": {g: [dataclasses.asdict(r) for r in rows] for g, rows in self.rows.items()}}


def default_thresholds(current: float) -> list[float]:
    grid = {round(0.2 + 0.025 * i, 3) for i in range(37)}  # 0.200 .. 1.100
    return sorted(grid | {round(current, 3)})


def suggest_threshold(rows: Sequence[SweepRow], budget: float) -> float | None:
    """The threshold that keeps the right chunk for the most answerable questions while the bluff rate
    stays within budget; the smallest such threshold on a tie. None without both kinds of question."""
    if not rows or rows[0].answerable == 0 or rows[0].refusable == 0:
        return None
    ok = [r for r in rows if r.bluffs <= budget * r.refusable + 1e-9]
    if not ok:
        return None
    return max(ok, key=lambda r: (r.right, -r.threshold)).threshold


def _outcome(q: Question, kept: Sequence) -> str:
    if q.refuse:
        return "bluff" if kept else "refused"
    if not kept:
        return "refused"
    return "right" if any(contains(c.content, q.needle) for c in kept) else "wrong"


def _row(t: float, idx: Sequence[int], questions: Sequence[Question], outcome: Sequence[str]) -> SweepRow:
    ans = [i for i in idx if questions[i].answerable]
    ref = [i for i in idx if questions[i].refuse]
    return SweepRow(t, sum(outcome[i] == "right" for i in ans), sum(outcome[i] == "wrong" for i in ans),
                    sum(outcome[i] == "refused" for i in ans), sum(outcome[i] == "bluff" for i in ref), len(ans), len(ref))


def sweep(engine, questions: Sequence[Question], *, budget: float = 0.1, thresholds: Sequence[float] | None = None,
          results: Sequence[SearchResult] | None = None) -> Sweep:
    """Search each question once; gate the same candidates at every threshold, with the full evidence test
    (distance and the support test for the question's language), and once as the engine would (each
    question at its own language's threshold). Groups: all, each language, and each language by kind
    of question to refuse (its answerable questions beside them)."""
    results = list(results) if results is not None else [engine.search(q.question) for q in questions]
    cap = engine.settings.max_chunks
    choices = [engine.threshold_choice(q.question, lang=q.lang or None) for q in questions]
    current = engine.threshold_choice("").value
    thresholds = list(thresholds or default_thresholds(current))
    nearest = [min((c.distance for c in r.candidates), default=float("nan")) for r in results]
    evidence = [evidence_distance(r, ch.rule) for r, ch in zip(results, choices)]
    groups = {"all": list(range(len(questions)))}
    for lang in sorted({q.lang for q in questions if q.lang}):
        mine = [i for i, q in enumerate(questions) if q.lang == lang]
        groups[lang] = mine
        kinds = sorted({questions[i].kind for i in mine if questions[i].refuse and questions[i].kind})
        for kind in kinds if len(kinds) > 1 else ():
            groups[f"{lang}:{kind}"] = [i for i in mine if questions[i].answerable or questions[i].kind == kind]
    rows: dict[str, list[SweepRow]] = {g: [] for g in groups}
    for t in thresholds:
        outcome = [_outcome(q, gate(r, t, cap, ch.rule).kept) for q, r, ch in zip(questions, results, choices)]
        for g, idx in groups.items():
            rows[g].append(_row(t, idx, questions, outcome))
    as_asked = [_outcome(q, gate(r, ch.value, cap, ch.rule).kept) for q, r, ch in zip(questions, results, choices)]
    at_current = {g: _row(math.nan, idx, questions, as_asked) for g, idx in groups.items()}
    currents = {g: (choices[idx[0]].value if g != "all" and idx else current) for g, idx in groups.items()}
    suggested = {g: suggest_threshold(rs, budget) for g, rs in rows.items()}
    return Sweep(list(questions), nearest, current, budget, rows, suggested, evidence, currents, at_current)

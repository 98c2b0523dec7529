"""Calibration: the threshold this folder needs, measured on questions it should refuse.

MiniLM's cosine distances depend on the language as much as on the topic: unrelated Portuguese
questions sit closer to Portuguese notes than related English questions sit to English ones. So the
default threshold is not a constant: for each question language, it is the distance at which at most
`budget` (default 5%) of a fixed set of unrelated questions would get an answer through the gate's full
evidence test (distance and support). The same questions set the support test's `close` distance: just
under the nearest any of them comes to the folder (or, with `close_percentile`, under the distance all but
that share of them stay beyond). A passage that close may answer in its own words (it needs less of the
question's words); further out it must use the question's.

The sets ship with the package, written for this project, in two kinds (`KINDS`): everyday questions
(`rag/deciding/questions/unrelated_*.tsv`: 260 each in English and Portuguese over 26 topics such as cooking,
sport, travel, money) and general-knowledge questions (`rag/deciding/questions/general_*.tsv`: 140 each over 14
topics such as ancient history, literature, physics, famous people). The budget holds for each kind
separately: the threshold is the strictest of the two. General-knowledge questions sit closer to an
encyclopedic folder than everyday ones (on a Portuguese folder of Wikipedia articles, 16 of the 140
passed at the threshold the everyday questions alone gave, three times the budget), and they are what a
person asks such a folder about things it does not hold.

Robust to a folder about one of those topics: a topic whose questions the folder clearly answers (at
least 70% of them would pass at the threshold computed without that topic) is the folder's subject,
not an unrelated one, so it is left out and named (`LanguageCalibration.excluded_topics`). A folder of
recipes keeps answering recipe questions.

The threshold stays within [floor, ceiling]: under the floor even near-copies of the folder's own
sentences would be refused; over the ceiling passages that merely share the question's words pass.

What it does not do: search (it is given a search function), or decide which threshold a question gets
(the engine does: a person's setting first, then the calibration, then the default).

>>> choose_threshold([0.2, 0.5, 0.6, 0.7, float("inf")], ["a", "b", "b", "c", "c"], budget=0.2, floor=0.1, ceiling=0.9)
(0.499, 1, (), '')
>>> [kind for kind, _ in KINDS], len(unrelated_questions("en")) == len(question_kinds("en"))
(['everyday', 'general knowledge'], True)
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rag.deciding.rule import SupportRule
from rag.text.lexical import LANGUAGE_NAMES
from rag.text.words import WORDLIST_LANGUAGES
from rag.searching.search import SearchResult
from rag.settings import Tuning

QUESTIONS_DIR = Path(__file__).resolve().parent / "questions"
CALIBRATED_LANGUAGES = ("en", "pt")
# The kinds of unrelated question and their files (one per language: `{prefix}_{lang}.tsv`).
KINDS = (("everyday", "unrelated"), ("general knowledge", "general"))


def unrelated_questions(lang: str) -> list[tuple[str, str]]:
    """(topic, question) pairs of the shipped unrelated sets for a language, every kind, in `KINDS` order."""
    return [(t, q) for _, t, q in _read_questions(lang)]


def question_kinds(lang: str) -> list[str]:
    """The kind (`KINDS`) of each of `unrelated_questions(lang)`, in the same order."""
    return [k for k, _, _ in _read_questions(lang)]


# The sets ship with the package and do not change while it runs: read each file once per process.
@functools.lru_cache(maxsize=None)
def _read_questions(lang: str) -> tuple[tuple[str, str, str], ...]:
    if lang not in CALIBRATED_LANGUAGES:
        raise ValueError(f"no unrelated questions for {lang!r}; choose one of {', '.join(CALIBRATED_LANGUAGES)}")
    out = []
    for kind, prefix in KINDS:
        with (QUESTIONS_DIR / f"{prefix}_{lang}.tsv").open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh, delimiter="\t"))
        out += [(kind, t, q) for t, q in rows[1:] if q.strip()]
    return tuple(out)


@functools.lru_cache(maxsize=None)
def questions_digest() -> str:
    """Identifies the shipped question sets: a change to them recalibrates."""
    h = hashlib.sha1()
    for lang in CALIBRATED_LANGUAGES:
        for _, prefix in KINDS:
            h.update((QUESTIONS_DIR / f"{prefix}_{lang}.tsv").read_bytes())
    return h.hexdigest()[:16]


def evidence_distance(result: SearchResult, rule: SupportRule) -> float:
    """The smallest threshold at which this question gets an answer: the cosine distance of the nearest
    candidate that passes the support test (infinity when none does, at any threshold). A passage in another
    language, which the threshold does not judge (`SupportRule.reads_across`), is not counted."""
    return min((c.distance for c in result.candidates if rule.passes(c) and not rule.reads_across(c)),
               default=math.inf)


def across_distance(result: SearchResult) -> float:
    """The smallest multilingual distance at which this question gets an answer from a passage in another
    language than its own (names and words tests as the gate applies them; infinity when it has none)."""
    probe = SupportRule(across_cut=math.inf)
    return min((c.side_distance for c in result.candidates if probe.reads_across(c) and probe.across_passes(c)),
               default=math.inf)


def _just_under(x: float) -> float:
    return math.floor((x - 1e-6) * 1000) / 1000


def close_distance(nearest: Sequence[float], percentile: float = 0.0) -> float:
    """Just under the nearest distance of the unrelated questions, or under the one that all but
    `percentile` of them stay beyond: the nearest is a single question, and one that happens to touch the
    folder ("Who improved the steam engine?" beside an article on it) takes the relaxation from every other.

    >>> close_distance([0.333] + [0.6] * 99), close_distance([0.333] + [0.6] * 99, 0.02)
    (0.332, 0.599)
    >>> close_distance([])  # no unrelated question: no passage is that close
    -0.001
    """
    ordered = sorted(nearest)
    return _just_under(ordered[int(percentile * len(ordered))] if ordered else 0.0)


def rise_distance(nearest: Sequence[float], percentile: float, ceiling: float) -> float | None:
    """Where the support test's share starts rising: the distance under which `percentile` of the unrelated
    questions find their nearest passage, kept under the ceiling; None when it never rises (percentile 1,
    no question, or none that near).

    >>> rise_distance([0.5, 0.6, 0.7, 0.9] * 5, 0.05, 0.8), rise_distance([0.5, 0.6], 1.0, 0.8)
    (0.5, None)
    >>> rise_distance([0.9] * 20, 0.05, 0.8)  # every unrelated question is farther than the ceiling
    """
    ordered = sorted(d for d in nearest if math.isfinite(d))
    if percentile >= 1.0 or not ordered:
        return None
    at = ordered[min(int(percentile * len(ordered)), len(ordered) - 1)]
    return at if at < ceiling else None


def judge_cut(best: Sequence[float], budget: float, floor: float) -> float:
    """The judge score that at most `budget` of the unrelated questions reach with their best passage,
    rounded up to a hundredth, and never under `floor`.

    >>> judge_cut([-3.0, -1.0, 0.2, 1.234] + [-5.0] * 96, budget=0.02, floor=-2.0)  # two of 100 may pass
    -0.99
    >>> judge_cut([-3.0] * 100, budget=0.02, floor=0.0)  # none comes near: the floor
    0.0
    """
    ordered = sorted((b for b in best), reverse=True)
    k = int(math.floor(budget * len(ordered) + 1e-9))
    if k >= len(ordered) or not math.isfinite(ordered[k]):
        return floor
    return max(floor, math.ceil((ordered[k] + 1e-6) * 100) / 100)


def choose_threshold(values: Sequence[float], topics: Sequence[str], budget: float, floor: float,
                     ceiling: float, exclude: Sequence[str] | None = None, subject_share: float = Tuning.subject_share,
                     min_topic: int = Tuning.min_topic) -> tuple[float, int, tuple[str, ...], str]:
    """(threshold, how many questions pass at it, topics left out, "floor"/"ceiling"/"" when clamped).

    The threshold is just under the distance of the (k+1)-th nearest unrelated question, k = budget x n,
    rounded down to 0.001; topics the folder answers are left out first (see the module's docstring: a topic
    of at least `min_topic` questions, `subject_share` of which pass at the others' threshold), or the topics
    in `exclude` when given.
    """
    values = np.asarray(values, dtype=float)
    topics = np.asarray(topics, dtype=object)

    def quantile(mask: np.ndarray) -> float:
        v = np.sort(values[mask])
        if not v.size:
            return ceiling
        k = int(math.floor(budget * v.size + 1e-9))
        return ceiling if k >= v.size or not math.isfinite(v[k]) else _just_under(v[k])

    keep = np.ones(values.size, dtype=bool)
    excluded = list(exclude or ())
    for topic in excluded:
        keep &= topics != topic
    for topic in sorted(set(topics.tolist())) if exclude is None else ():
        mine = topics == topic
        if mine.sum() < min_topic:
            continue
        others = quantile(~mine & keep)
        if (values[mine] <= others).mean() >= subject_share:
            excluded.append(topic)
            keep &= ~mine
    t = quantile(keep)
    # At the ceiling also when it was reached because too few questions pass at any distance (the support
    # test refuses the rest): the screen must not present a cap as a measured value.
    bound = "floor" if t < floor else "ceiling" if t >= ceiling else ""
    t = min(max(t, floor), ceiling)
    return t, int((values[keep] <= t).sum()), tuple(excluded), bound


@dataclass(frozen=True)
class LanguageCalibration:
    lang: str
    threshold: float
    close: float  # the support test's close distance: just under the nearest unrelated question(s)
    budget: float
    questions: int  # unrelated questions measured (after leaving out the folder's own topics)
    passing: int  # of them, how many get an answer at `threshold`
    excluded_topics: tuple[str, ...] = ()
    bound: str = ""  # "floor" or "ceiling" when the measured value was outside them
    # Past `rise_from` (under which `rise_percentile` of the unrelated questions find their nearest passage)
    # the support test's share rises to every word at `rise_to` (the ceiling). None: it never rises.
    rise_from: float | None = None
    rise_to: float | None = None
    # The judge's cut for this language (None: the judge does not decide for it): the score at most
    # `judge_budget` of the unrelated questions reach with their best judged passage, never under the floor.
    judge_cut: float | None = None
    judge_passing: int = 0  # unrelated questions whose best passage reaches the cut
    # The multilingual distance a passage in another language must be at or under (None: no unrelated question
    # of this language met a passage in another, so the folder holds none: the strictest of the others applies).
    across_cut: float | None = None
    across_passing: int = 0  # unrelated questions a passage in another language would answer at that cut
    # The support model's cut for this language (None: it does not decide for it), chosen as the judge's is.
    model_cut: float | None = None
    model_passing: int = 0

    def describe(self) -> str:
        """One line for the screen: what the calibrated value means."""
        name = LANGUAGE_NAMES.get(self.lang, self.lang)
        # The count, not only the share: 2 of 400 is "0%" when rounded, and the Calibration page draws them.
        out = (f"calibrated for {name}: {self.threshold:.3f}, where {self.passing} of {self.questions} unrelated "
               f"questions would pass (budget {self.budget:.0%} for each kind: everyday, general knowledge)")
        if self.bound == "ceiling":
            out += ("; that is the highest value allowed: fewer unrelated questions than the budget would pass at "
                    f"any distance ({'the judge refuses' if self.judge_cut is not None else 'the support model refuses' if self.model_cut is not None else 'the word tests refuse'} "
                    "the others), so the distance decides little here")
        elif self.bound:
            out += f"; held at the {self.bound}"
        if self.excluded_topics:
            out += f"; left out as this folder's own subject: {', '.join(self.excluded_topics)}"
        if self.judge_cut is not None:
            out += (f"; judge cut {self.judge_cut:.2f}, which {self.judge_passing} of {self.questions} unrelated "
                    "questions' best passages reach")
        elif self.model_cut is not None:
            out += (f"; support model cut {self.model_cut:.2f}, which {self.model_passing} of {self.questions} "
                    "unrelated questions' best passages reach")
        if self.across_cut is not None:
            out += (f"; a passage in another language is judged by its multilingual distance, at most "
                    f"{self.across_cut:.3f}, where {self.across_passing} of {self.questions} would pass")
        return out


@dataclass
class Calibration:
    fingerprint: str
    min_support: float
    languages: dict[str, LanguageCalibration]
    points: list[dict] = field(default_factory=list)  # per unrelated question: lang, topic, question, evidence
    computed_at: float = 0.0
    seconds: float = 0.0

    def rule(self, lang: str, min_support: float, close_support: float,
             ramp_support: float | None = None, judge_rules: tuple[str, ...] = ()) -> SupportRule:
        """The support test for a question language (an unclear one: the smallest close distance and the
        highest judge cut)."""
        rule = self._word_rule(lang, min_support, close_support, ramp_support)
        mine = self.languages.get(lang)
        cuts = [c.judge_cut for c in self.languages.values() if c.judge_cut is not None]
        cut = mine.judge_cut if mine is not None else max(cuts, default=None)
        rule = dataclasses.replace(rule, across_cut=self.across_cut(lang))
        if cut is not None:
            return dataclasses.replace(rule, judge_cut=cut, judge_rules=tuple(judge_rules), judge_lang=lang)
        models = [c.model_cut for c in self.languages.values() if c.model_cut is not None]
        model = mine.model_cut if mine is not None else max(models, default=None)
        if model is None:
            return rule
        return dataclasses.replace(rule, model_cut=model, judge_rules=tuple(judge_rules), model_lang=lang)

    def across_cut(self, lang: str) -> float | None:
        """The multilingual cut for a question language's passages in other languages; for a language without
        one of its own (unclear, uncalibrated, or none of its questions met another language), the strictest."""
        mine = self.languages.get(lang)
        if mine is not None and mine.across_cut is not None:
            return mine.across_cut
        return min((c.across_cut for c in self.languages.values() if c.across_cut is not None), default=None)

    def _word_rule(self, lang: str, min_support: float, close_support: float,
                   ramp_support: float | None = None) -> SupportRule:
        closes = [c.close for c in self.languages.values()]
        close = self.languages[lang].close if lang in self.languages else min(closes, default=-1.0)
        mine = self.languages.get(lang)
        if mine is not None:
            rise = (mine.rise_from, mine.rise_to) if mine.rise_from is not None else None
        else:  # an unclear language: the earliest rise of any, the strictest
            rise = min(((c.rise_from, c.rise_to) for c in self.languages.values() if c.rise_from is not None),
                       default=None)
        if rise is None:
            return SupportRule(min_support, close, close_support)
        return SupportRule(min_support, close, close_support, rise[0], rise[1], ramp_support)

    def threshold(self, lang: str) -> float | None:
        """The calibrated threshold for a question language; for an unclear one, or one without unrelated
        questions of its own (`describe` says which), the strictest of all."""
        if lang in self.languages:
            return self.languages[lang].threshold
        values = [c.threshold for c in self.languages.values()]
        return min(values) if values else None

    def describe(self, lang: str | None) -> str:
        """What the value used for a question language means (None: before any question)."""
        if lang in self.languages:
            return self.languages[lang].describe()
        if not self.languages:
            return "not calibrated: nothing is indexed"
        strict = min(self.languages.values(), key=lambda c: c.threshold)
        # A language the shipped unrelated questions are not written in (Spanish, German…) is judged like an
        # unclear one, by the strictest value: MiniLM's distances differ by language, so another language's
        # questions do not measure it, and the strictest is the one that answers least wrongly.
        head = ("no question yet" if lang is None else "language unclear" if not lang else
                f"{LANGUAGE_NAMES.get(lang, lang)} has no unrelated questions of its own to calibrate on, and the "
                f"word rules (written for {' and '.join(LANGUAGE_NAMES[x] for x in WORDLIST_LANGUAGES)}) stand down")
        if len(self.languages) == 1:
            return f"{head}; {strict.describe()}"
        if len({c.threshold for c in self.languages.values()}) == 1:
            names = " and ".join(LANGUAGE_NAMES.get(x, x) for x in sorted(self.languages))
            return f"{head}; {names} are calibrated alike: {strict.threshold:.3f}"
        return f"{head}, so the strictest calibrated value: {strict.describe()}"

    def to_json(self) -> dict:
        return {"fingerprint": self.fingerprint, "min_support": self.min_support, "computed_at": self.computed_at,
                "seconds": self.seconds, "languages": {k: asdict(v) for k, v in self.languages.items()},
                "points": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in p.items()}
                           for p in self.points]}

    @classmethod
    def from_json(cls, d: dict) -> "Calibration":
        langs = {k: LanguageCalibration(**{**v, "excluded_topics": tuple(v.get("excluded_topics", ()))})
                 for k, v in d["languages"].items()}
        points = [{k: (math.inf if v is None and k in ("evidence", "nearest") else v) for k, v in p.items()}
                  for p in d.get("points", [])]
        return cls(d["fingerprint"], d["min_support"], langs, points, d.get("computed_at", 0.0), d.get("seconds", 0.0))

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(json.dumps(self.to_json(), ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # never a half-written calibration

    @classmethod
    def load(cls, path: Path) -> "Calibration | None":
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or unreadable: computed again


Search = Callable[[str, np.ndarray], SearchResult]  # (question, its vector) -> the engine's hybrid search


def calibrate(search: Search, vectors: dict[str, np.ndarray], *, fingerprint: str, min_support: float,
              close_support: float, budget: float, floor: float, ceiling: float,
              close_percentile: float = 0.0, rise_percentile: float = 1.0,
              ramp_support: float | None = None, judge_langs: Sequence[str] = (), judge_budget: float = 0.05,
              judge_floor: float = 0.0, judge_rules: Sequence[str] = (), model_langs: Sequence[str] = (),
              model_floor: float = 0.0,
              across_ceiling: float = 0.8, subject_share: float = Tuning.subject_share,
              min_topic: int = Tuning.min_topic) -> Calibration:
    """Search every unrelated question of every language once and choose each language's threshold and
    close distance. `vectors[lang]` holds the embeddings of `unrelated_questions(lang)`, in order.

    Three steps per language: the folder's own topics are found with the plain support test, on every
    kind together; the close distance is set just under the nearest that any remaining question comes
    (`close_distance`), and the distance past which the share needed rises at `rise_percentile` of them
    (`rise_distance`);
    the threshold is chosen with the full test (close distance included) for each kind's remaining
    questions, and the strictest is kept, so that neither kind passes more often than the budget. Before the
    threshold, the multilingual cut for passages in other languages is chosen the same way on their
    multilingual distances (`across_distance`, at most `across_ceiling`), when any question met one."""
    t0 = time.perf_counter()
    languages, points = {}, []
    for lang in CALIBRATED_LANGUAGES:
        qs = unrelated_questions(lang)
        kinds = question_kinds(lang)
        topics = [t for t, _ in qs]
        results = [search(q, v) for (_, q), v in zip(qs, vectors[lang])]
        plain = SupportRule(min_support)
        _, _, excluded, _ = choose_threshold([evidence_distance(r, plain) for r in results], topics, budget,
                                             floor, ceiling, subject_share=subject_share, min_topic=min_topic)
        nearest = [min((c.distance for c in r.candidates), default=math.inf) for r in results]
        own = [d for d, t in zip(nearest, topics) if t not in excluded]
        close = close_distance(own, close_percentile)
        rise = rise_distance(own, rise_percentile, ceiling)
        rule = (SupportRule(min_support, close, close_support) if rise is None
                else SupportRule(min_support, close, close_support, rise, ceiling, ramp_support))
        cut, judge_passing = None, 0
        if lang in judge_langs:
            best = [max((c.judge for c in r.candidates if c.judge is not None), default=-math.inf)
                    for r, t in zip(results, topics) if t not in excluded]
            cut = judge_cut(best, judge_budget, judge_floor)
            judge_passing = sum(1 for b in best if b + 1e-9 >= cut)
            rule = dataclasses.replace(rule, judge_cut=cut, judge_rules=tuple(judge_rules), judge_lang=lang)
        model, model_passing = None, 0
        if lang in model_langs and cut is None:  # the support model decides where the judge does not
            # As the threshold: the budget holds for each kind of question, and the strictest cut is kept.
            best = [max((c.supported for c in r.candidates if c.supported is not None), default=-math.inf)
                    for r, t in zip(results, topics) if t not in excluded]
            of_kind = [k for k, t in zip(kinds, topics) if t not in excluded]
            model = max(judge_cut([b for b, k in zip(best, of_kind) if k == kind], judge_budget, model_floor)
                        for kind in dict.fromkeys(of_kind))
            model_passing = sum(1 for b in best if b + 1e-9 >= model)
            rule = dataclasses.replace(rule, model_cut=model, judge_rules=tuple(judge_rules), model_lang=lang)
        across, across_passing = None, 0
        reach = [across_distance(r) for r in results]
        if any(math.isfinite(x) for x, t in zip(reach, topics) if t not in excluded):
            # As the threshold: the strictest of the kinds' values under the budget (a cut of its own scale).
            across = min(choose_threshold([reach[i] for i, k in enumerate(kinds) if k == kind],
                                          [topics[i] for i, k in enumerate(kinds) if k == kind], budget, 0.0,
                                          across_ceiling, exclude=excluded)[0]
                         for kind, _ in KINDS if kind in kinds)
            across_passing = sum(1 for x, t in zip(reach, topics) if t not in excluded and x <= across)
            rule = dataclasses.replace(rule, across_cut=across)
        values = [evidence_distance(r, rule) for r in results]
        by_kind = []
        for kind, _ in KINDS:
            mine = [i for i, k in enumerate(kinds) if k == kind]
            if mine:
                t, _, _, bound = choose_threshold([values[i] for i in mine], [topics[i] for i in mine], budget,
                                                  floor, ceiling, exclude=excluded)
                by_kind.append((t, bound))
        t, bound = min(by_kind, default=(ceiling, "ceiling"))
        measured = [i for i, topic in enumerate(topics) if topic not in excluded]
        passing = sum(1 for i in measured if values[i] <= t)
        languages[lang] = LanguageCalibration(lang, t, close, budget, len(measured), passing, excluded, bound,
                                              rise, None if rise is None else ceiling, cut, judge_passing,
                                              across, across_passing, model, model_passing)
        points += [{"lang": lang, "kind": kind, "topic": topic, "question": q, "evidence": v, "nearest": n}
                   for kind, (topic, q), v, n in zip(kinds, qs, values, nearest)]
    return Calibration(fingerprint, min_support, languages, points, time.time(), time.perf_counter() - t0)


def folder_sentences(chunks: Sequence, n: int = 40, min_words: int = 6) -> list[tuple[str, str]]:
    """(language, sentence) pairs: up to `n` sentences of the folder's own chunks, spread evenly over them
    (the first sentence of at least `min_words` words in each chosen chunk). Asked as questions, they show
    where answers in the folder's own words fall, next to the unrelated questions, with no question
    written by a person. `chunks`: the snapshot's StoredChunk list."""
    from rag.indexing.chunk import sentences

    if not chunks:
        return []
    step = max(1, len(chunks) // n)
    out: list[tuple[str, str]] = []
    for c in chunks[::step]:
        for s, e in sentences(c.content):
            text = " ".join(c.content[s:e].split())
            if len(text.split()) >= min_words:
                out.append((c.meta.get("lang", "") or "", text))
                break
        if len(out) == n:
            break
    return out

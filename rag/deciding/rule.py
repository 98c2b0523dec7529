"""The rule the gate applies: each candidate's possible verdicts, the names of the tests a refusal can fail, and
`SupportRule`, the evidence tests with the numbers calibration chose for a folder and a language.

Data and tests only: `rag.deciding.gate` applies them to a search's candidates, `rag.deciding.explain` words
them (the rule itself too: `evidence_rule`, which prints every share it needs rounded up). See the gate's
docstring for what each test asks of a passage.

>>> from rag.searching.search import Candidate
>>> row = Candidate("c1", "d1", "x.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.5, 1, 1, 1.0, support=0.4)
>>> SupportRule(0.5).passes(row), SupportRule(0.4).passes(row)
(False, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from rag.searching.search import Candidate
from rag.settings import JUDGE_RULES

KEPT = "kept"


CAPPED = "under threshold, over cap"


OVER = "over threshold"


UNSUPPORTED = "lacks the question's words"


OFF_SUBJECT = "lacks the earlier question's subject"


JUDGED_OUT = "judged not to answer"


WEIGHED_OUT = "unlikely to answer"  # the support model's probability under its cut


# Names the version of the tests below: a change to them recalibrates every folder (part of the calibration's
# fingerprint), since the calibrated threshold is chosen with them.
GATE_RULES = ("support-11: the support model decides for the languages it reads and the judge does not, as the judge does; "
              "the judge decides for the languages it reads, with the word tests in judge_rules "
              "beside it; between the close distance and the rise the share needed grows; far out the share "
              "needed rises to every word; a measure word is held by a value of it; a follow-up's subject may "
              "be held by the passage's document; a name the folder never mentions fails every passage (an "
              "acronym: no close relaxation); a passage lacking a name the folder uses fails; a number written "
              "as a name is one; a question with no word of its own fails every passage; a held code passes "
              "the support test")


# Which test a refusal failed (`Gated.failed`).
EMPTY, DISTANCE, SUPPORT = "empty", "distance", "support"


# Within the support test, which of its rules the refusal names (`Gated.because`), in the order checked.
WORDLESS, ABSENT, ELSEWHERE, UNNAMED, WORDS = "wordless", "absent name", "off subject", "lacks a name", "words"


JUDGE = "judge"


MODEL = "support model"


ACROSS = "another language"  # DISTANCE: every candidate is in another language, and none is close enough


def lacked_by_all(rows: Sequence[Candidate], order: Sequence[str]) -> tuple[str, ...]:
    """The words of `order` that none of `rows` holds (each row's `missing`), in that order.

    >>> a = Candidate("a", "d", "x.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.4, 1, 1, 1.0, missing=("k1", "b"))
    >>> b = Candidate("b", "d", "x.md", "", "", "", 0, 0, None, None, "text", 2, 0.2, 0.4, 2, 2, 1.0, missing=("b",))
    >>> lacked_by_all([a, b], ("bm25", "k1", "b")), lacked_by_all([], ("b",))
    (('b',), ())
    """
    if not rows:
        return ()
    lacking = set.intersection(*(set(c.missing) for c in rows))
    return tuple(w for w in order if w in lacking)


@dataclass(frozen=True)
class SupportRule:
    """The support test: the share of the question's words a passage must hold, by its distance.

    >>> rule = SupportRule(min_support=0.5, close=0.4, close_support=0.15)
    >>> rule.needed(0.35), rule.needed(0.6), rule.needed(0.35, unknown_names=("youtube",))
    (0.15, 0.5, 0.5)

    Far out, from `rise_from` to `rise_to`, the share needed rises to every word: a passage that far
    holding half the question's words is as likely a near miss as an answer.

    >>> rule = SupportRule(0.5, 0.4, 0.2, rise_from=0.6, rise_to=0.8)
    >>> [round(rule.needed(d), 3) for d in (0.6, 0.7, 0.8, 0.9)]
    [0.5, 0.75, 1.0, 1.0]

    Between the close distance and `rise_from` the share grows from `ramp_support` to `min_support` (with
    no ramp, `ramp_support` None, it steps from `close_support` to `min_support`); a question naming
    something the folder never uses gets neither relaxation.

    >>> rule = SupportRule(0.5, 0.4, 0.2, rise_from=0.6, rise_to=0.8, ramp_support=0.3)
    >>> [round(rule.needed(d), 3) for d in (0.4, 0.41, 0.5, 0.6, 0.7)], rule.needed(0.5, ("youtube",))
    ([0.2, 0.31, 0.4, 0.5, 0.75], 0.5)
    """

    min_support: float = 0.0
    close: float = -1.0  # at or under this distance, `close_support` is enough (-1: never)
    close_support: float = 0.0
    rise_from: float = math.inf  # past this distance the share needed rises, reaching 1.0 at `rise_to`
    rise_to: float = math.inf
    # Just past `close`, the share needed; it grows to `min_support` at `rise_from` (None: no such ramp).
    ramp_support: float | None = None
    # When set, the judge decides instead of the word share: a passage passes when its judge score is at or
    # over this cut (calibrated per folder and language) and the word tests named in `judge_rules` hold.
    # None: the judge does not decide for this question's language (or is off), the word share does.
    judge_cut: float | None = None
    judge_rules: tuple[str, ...] = JUDGE_RULES
    judge_lang: str = ""
    # When set and the judge does not decide: the support model (rag.deciding.support_model) decides instead
    # of the word share, for a language it reads: a passage passes when its probability is at or over this
    # cut (calibrated per folder and language) and the word tests named in `judge_rules` hold.
    model_cut: float | None = None
    model_lang: str = ""
    # The multilingual distance a passage in another language than the question's must be at or under (None:
    # such a passage is judged as any other: the multilingual side is off, or nothing calibrated it).
    across_cut: float | None = None

    def reads_across(self, c: Candidate) -> bool:
        """Whether `c` is judged by its multilingual distance (it is in another language than the question's)."""
        return c.across and self.across_cut is not None and c.side_distance is not None

    def across_passes(self, c: Candidate, threshold: float = math.inf) -> bool:
        """A passage in another language: close enough in meaning (at or under the cut and the threshold), and
        the names the question writes hold."""
        if c.absent_names or c.lacks_names or (c.wordless and not c.codes):
            return False
        return c.side_distance is not None and c.side_distance <= min(self.across_cut, threshold) + 1e-9

    @property
    def judging(self) -> bool:
        """Whether the judge's score decides (else the share of the question's words does)."""
        return self.judge_cut is not None

    def judge_passes(self, c: Candidate) -> bool:
        return c.judge is not None and self.judge_cut is not None and c.judge + 1e-9 >= self.judge_cut

    @property
    def modelling(self) -> bool:
        """Whether the support model's probability decides (the judge does not, and it reads the language)."""
        return self.model_cut is not None and not self.judging

    def model_passes(self, c: Candidate) -> bool:
        return c.supported is not None and self.model_cut is not None and c.supported + 1e-9 >= self.model_cut

    @property
    def scoring(self) -> bool:
        """Whether a model's score decides (the judge's or the support model's), with the word tests of
        `judge_rules` beside it, instead of the word share."""
        return self.judging or self.modelling

    @property
    def relaxes(self) -> bool:
        """Whether a close passage needs less (`close_support`): not before any calibration (`close` -1)."""
        return self.close >= 0

    @property
    def ramping(self) -> bool:
        """Whether the share needed grows between the close distance and `rise_from`."""
        return (self.ramp_support is not None and self.ramp_start < self.min_support
                and 0 <= self.close < self.rise_from < math.inf)

    @property
    def ramp_start(self) -> float:
        """The share needed just past the close distance, where it starts growing to `min_support`."""
        # Held between the two shares it joins: a person lowering min_support under it gets no odd bump.
        return min(max(self.ramp_support or 0.0, self.close_support), self.min_support)

    @property
    def rises(self) -> bool:
        """Whether, far out, the share needed rises to every word (from `rise_from` to `rise_to`).

        >>> SupportRule(0.5, 0.628, 0.2, 0.7, 0.8).rises, SupportRule(0.5, 0.628, 0.2).rises
        (True, False)
        """
        return self.rise_from < self.rise_to < math.inf

    def needed(self, distance: float, unknown_names: Sequence[str] = ()) -> float:
        if distance <= self.close and not unknown_names:
            return self.close_support
        if self.ramping and not unknown_names and self.close < distance < self.rise_from:
            grown = (distance - self.close) / (self.rise_from - self.close)
            return self.ramp_start + (self.min_support - self.ramp_start) * grown
        if distance > self.rise_from and self.min_support > 0:
            share = min(1.0, (distance - self.rise_from) / max(self.rise_to - self.rise_from, 1e-9))
            return self.min_support + (1.0 - self.min_support) * share
        return self.min_support

    def needed_by(self, c: Candidate) -> float:
        return self.needed(c.distance, c.unknown_names)

    def needed_distance(self, c: Candidate) -> float:
        """The threshold at which `c` passes: its cosine distance, or for a passage in another language that
        passes the multilingual test, its multilingual distance (the threshold bounds its cut)."""
        return c.side_distance if self.reads_across(c) and self.across_passes(c) else c.distance

    def passes(self, c: Candidate) -> bool:
        """The support test; a passage in another language also passes when the multilingual test does."""
        return (self.reads_across(c) and self.across_passes(c)) or self.words_pass(c)

    def words_pass(self, c: Candidate) -> bool:
        """The support test proper (the question's words, or the judge), whatever the passage's language."""
        if self.scoring:
            scored = self.judge_passes(c) if self.judging else self.model_passes(c)
            return self.words_hold(c) and (scored or ("codes" in self.judge_rules and bool(c.codes)))
        # Both are part of the support test: with none (min_support 0, `NO_SUPPORT_TEST`) neither applies.
        if self.min_support > 0 and (c.absent_names or c.lacks_names or self.off_subject(c)):
            return False
        if self.min_support > 0 and c.wordless and not c.codes:
            return False
        return bool(c.codes) or c.support + 1e-9 >= self.needed_by(c)

    def words_hold(self, c: Candidate) -> bool:
        """Under the judge: the word tests it keeps (`judge_rules`) hold for this passage: "names" (a name the
        folder never mentions, or one this passage lacks), "wordless" (a question with no word of its own),
        "subject" (a follow-up's passage off the earlier question's subject); "codes" lets a passage holding a
        code the question names pass the judge too (`passes`)."""
        rules = self.judge_rules
        if "names" in rules and (c.absent_names or c.lacks_names):
            return False
        if "subject" in rules and self.off_subject(c):
            return False
        return not ("wordless" in rules and c.wordless and not c.codes)

    @staticmethod
    def off_subject(c: Candidate) -> bool:
        """A follow-up's passage that holds none of the words of the question it follows (and no code the
        follow-up refers to), in a document that holds none of them either: it is about something else,
        however well it holds the follow-up's own words ("At what temperature?" after a cake question, and a
        fridge manual's "temperature"). Another passage of the same document may ("E a renda?" after "Quanto
        é a caução?": the lease's rent clause does not say "caução", its deposit clause does)."""
        return (c.subject_support is not None and c.subject_support <= 0 and not c.codes
                and not c.subject_in_document)

    def holds_in_full(self, c: Candidate) -> bool:
        """It holds the full share of the question's words (or a code it names), not only a close
        paraphrase's."""
        if self.scoring or (self.reads_across(c) and self.across_passes(c)):
            return self.passes(c)  # a model (or the multilingual side) weighed it whole: no paraphrase caution
        return bool(c.codes) or c.support + 1e-9 >= self.min_support


NO_SUPPORT_TEST = SupportRule()



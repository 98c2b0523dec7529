"""Gate: which candidates may be used as evidence, and a structured verdict when none may.

The gate is the only part of the engine that can say no. A candidate is evidence when it passes two tests,
in this order:

1. distance: its cosine distance to the question is at or under the threshold (the slider);
2. support (`SupportRule`): it holds enough of the question's own content words, IDF-weighted
   (`Candidate.support`, weighed by rag.evidence; a measure word such as "temperature" is held by a value
   of it). The share needed is `min_support` (half); a passage closer than any unrelated question comes to
   this folder (`close`, from the calibration) needs only `close_support` (a close paraphrase may use its
   own words); between the two the share grows from `ramp_support`; past `rise_from` it rises to every word
   at `rise_to` (out there half the words is as likely a near miss as an answer). When the judge decides
   for the question's language (`judge_cut`), its score replaces the word share, with the word tests of
   `judge_rules` beside it.

Within the support test a candidate also fails when:

- the question names something the folder never mentions (`absent_names`: "Falcon" in "When does Project
  Falcon go live?"; an acronym only loses the close relaxation, `unknown_names`), or a number written as a
  name the folder never writes ("the 2025 regatta");
- it lacks a name (or a number written as a name) the question writes and the folder uses (`lacks_names`:
  "Lantern", missing from Project Heron's section);
- a follow-up's passage holds none of the earlier question's subject, nor does its document
  (`subject_support`, `subject_in_document`): its verdict is `OFF_SUBJECT`;
- the question has no word of its own ("What is it?": `wordless`), unless the passage holds a code it
  refers to.

A passage that holds a code the question names (`codes`: "ERR-4017") passes the support test whatever else
it lacks; it still needs the distance test.

A passage in another language than the question's (`Candidate.across`, found by the multilingual side)
is hardly served by either test: MiniLM's distance across languages and the share of the question's words say
little of it. So it is also evidence (besides passing both, as a code it holds may make it) when its
multilingual distance is at or under `SupportRule.across_cut`
(calibrated per folder and question language on the unrelated questions, as the threshold is) and under
the threshold too (the slider stays the one control of strictness: set under the cut, it lowers it; at 0
nothing passes), and the name tests hold (a name is written alike in every language).

The gate keeps, in fused order, at most `max_chunks` candidates that pass both. When none does, `Gated`
says which test failed (`failed`: EMPTY, DISTANCE, SUPPORT), which rule of the support test it names
(`because`: WORDLESS, ABSENT, UNNAMED, ELSEWHERE, JUDGE, WORDS) and the data its words need; rag.explain
renders it (`Gated.refusal` is its sentence). It keeps the closest candidate and the closest that passes
the support test, whose distance is the smallest threshold that would let it through. It never searches:
moving the threshold re-gates the same candidates. Citations of the kept passages: rag.citations.

>>> from rag.search import SearchResult
>>> far = Candidate("c1", "d1", "uploads.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.9, 1, 1, 1.0)
>>> g = gate(SearchResult("What is the capital of Peru?", "", [far], {}), 0.675)
>>> g.verdicts, g.failed, g.refusal
(['over threshold'], 'distance', 'NO ANSWER: nothing under cosine distance 0.675 for "What is the capital of Peru?"')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from rag.citations import Citation, cite
from rag.search import Candidate, SearchResult
from rag.settings import JUDGE_RULES

KEPT = "kept"
CAPPED = "under threshold, over cap"
OVER = "over threshold"
UNSUPPORTED = "lacks the question's words"
OFF_SUBJECT = "lacks the earlier question's subject"
JUDGED_OUT = "judged not to answer"

# Names the version of the tests below: a change to them recalibrates every folder (part of the calibration's
# fingerprint), since the calibrated threshold is chosen with them.
GATE_RULES = ("support-10: the judge decides for the languages it reads, with the word tests in judge_rules "
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
    def relaxation(self) -> str:
        """The close relaxation in words, for the screen ("" when there is none: before any calibration).

        >>> SupportRule(0.5, 0.628, 0.2).relaxation, SupportRule(0.5).relaxation
        ('20% for a passage at distance ≤ 0.628', '')
        """
        if self.close < 0:
            return ""
        return f"{self.close_support:.0%} for a passage at distance ≤ {self.close:.3f}"

    @property
    def ramping(self) -> bool:
        """Whether the share needed grows between the close distance and `rise_from`."""
        return (self.ramp_support is not None and self._ramp_start < self.min_support
                and 0 <= self.close < self.rise_from < math.inf)

    @property
    def _ramp_start(self) -> float:
        # Held between the two shares it joins: a person lowering min_support under it gets no odd bump.
        return min(max(self.ramp_support or 0.0, self.close_support), self.min_support)

    @property
    def ramp(self) -> str:
        """The growing share in words, for the screen ("" when there is none).

        >>> SupportRule(0.5, 0.4, 0.2, 0.6, 0.8, ramp_support=0.35).ramp, SupportRule(0.5, 0.4, 0.2, 0.6, 0.8).ramp
        ('from 35% past 0.400 growing to 50% at 0.600', '')
        """
        if not self.ramping:
            return ""
        return (f"from {self._ramp_start:.0%} past {self.close:.3f} growing to {self.min_support:.0%} "
                f"at {self.rise_from:.3f}")

    @property
    def rising(self) -> str:
        """The far rise in words, for the screen ("" when the share never rises).

        >>> SupportRule(0.5, 0.628, 0.2, 0.7, 0.8).rising, SupportRule(0.5, 0.628, 0.2).rising
        ('rising from 50% past 0.700 to every word at 0.800', '')
        """
        if not self.rise_from < self.rise_to < math.inf:
            return ""
        return f"rising from {self.min_support:.0%} past {self.rise_from:.3f} to every word at {self.rise_to:.3f}"

    def needed(self, distance: float, unknown_names: Sequence[str] = ()) -> float:
        if distance <= self.close and not unknown_names:
            return self.close_support
        if self.ramping and not unknown_names and self.close < distance < self.rise_from:
            grown = (distance - self.close) / (self.rise_from - self.close)
            return self._ramp_start + (self.min_support - self._ramp_start) * grown
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
        if self.judging:
            return self.words_hold(c) and (self.judge_passes(c) or ("codes" in self.judge_rules and bool(c.codes)))
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
        if self.judging or (self.reads_across(c) and self.across_passes(c)):
            return self.passes(c)  # the judge (or the multilingual side) read it whole: no paraphrase caution
        return bool(c.codes) or c.support + 1e-9 >= self.min_support


NO_SUPPORT_TEST = SupportRule()


@dataclass
class Gated:
    question: str
    threshold: float
    max_chunks: int
    candidates: list[Candidate]
    verdicts: list[str]  # one per candidate, in fused order
    citations: list[Citation]
    closest: Candidate | None  # the nearest candidate by cosine distance, whatever its verdict
    rule: SupportRule = NO_SUPPORT_TEST
    failed: str | None = None  # the test a refusal failed: EMPTY, DISTANCE or SUPPORT; None when kept
    # For SUPPORT: the question's words no passage under the threshold holds. For an answer kept only as
    # close paraphrases (`paraphrase_note`): the words no kept passage holds.
    missing: tuple[str, ...] = ()
    closest_supported: Candidate | None = None  # the nearest candidate that passes the support test
    query: str = ""  # what was searched: a follow-up joined to the question before it
    # For SUPPORT: the rule the refusal names (WORDLESS, ABSENT, ELSEWHERE, UNNAMED, JUDGE, WORDS); for
    # DISTANCE: ABSENT when the question also names something the folder never mentions, else "".
    because: str = ""
    # What the refusal's words need (rag.explain), by `because`. ABSENT: the names the folder never mentions;
    # UNNAMED: the names the close passages lack, `earlier` when only the question before it writes them.
    names: tuple[str, ...] = ()
    earlier: bool = False
    subject: tuple[str, ...] = ()  # ELSEWHERE: the earlier question's words
    # WORDS: the best support among the close passages and the share it needed; the question's language, the
    # close passages' and the folder's (a hint to ask in the documents' language).
    best_support: float | None = None
    needed_support: float | None = None
    language: str = ""
    near_languages: tuple[str, ...] = ()
    folder_languages: tuple[str, ...] = ()
    judge_best: float = -math.inf  # JUDGE: the best score among the passages judged out (-inf: none read)
    across_best: float = math.inf  # ACROSS: the smallest multilingual distance among the passages

    @property
    def across_cut(self) -> float | None:
        """The multilingual distance a passage in another language needed here: the calibrated cut, or the
        threshold when that is lower (None: no such cut)."""
        return None if self.rule.across_cut is None else min(self.rule.across_cut, self.threshold)

    @property
    def refusal(self) -> str | None:
        """The refusal sentence (None when answered), worded by rag.explain."""
        from rag.explain import refusal_sentence  # rag.explain renders this class: imported when used

        return refusal_sentence(self)

    @property
    def kept(self) -> list[Candidate]:
        return [c for c, v in zip(self.candidates, self.verdicts) if v == KEPT]

    @property
    def reason(self) -> str:
        """A refusal's cause in a few words, for its header ("" when answered)."""
        from rag.explain import header

        return header(self)

    @property
    def paraphrase_only(self) -> bool:
        """Answered, but every kept passage holds less than the full support (each was kept as a close
        paraphrase, by `SupportRule.close_support` or the growing share past it): the answer carries
        `paraphrase_note`."""
        kept = self.kept
        return bool(kept) and not any(self.rule.holds_in_full(c) for c in kept)

    @property
    def paraphrase_note(self) -> str | None:
        if not self.paraphrase_only:
            return None
        from rag.explain import paraphrase_text

        return paraphrase_text(max(c.support for c in self.kept), self.rule.min_support, self.missing)

    @property
    def unsaid(self) -> tuple[str, ...]:
        """The question's words that no kept passage holds, in the question's order (() when refused, or when
        some passage holds them all)."""
        # Passages in another language never hold the question's words: only the others say what is unsaid.
        kept = [c for c in self.kept if not self.rule.reads_across(c)]  # none when refused
        return lacked_by_all(kept, kept[0].missing) if kept else ()

    @property
    def unsaid_note(self) -> str | None:
        """A caution beside an answer whose passages all lack some of the question's words (rag.explain)."""
        from rag.explain import unsaid_note

        return unsaid_note(self)

    @property
    def split_note(self) -> str | None:
        """A caution beside an answer whose passages, from different documents, each lack words the other
        holds (rag.explain)."""
        from rag.explain import split_note

        return split_note(self)

    @property
    def kept_for_codes(self) -> list[Candidate]:
        """Kept passages that hold a code the question names and would have failed the support test
        without it (the screen says so beside the table)."""
        return [c for c in self.kept if c.codes and c.support + 1e-9 < self.rule.needed_by(c)]

    @property
    def codes_note(self) -> str | None:
        """What the screen says beside the table when a passage was kept for a code the question names."""
        from rag.explain import codes_note

        return codes_note(self)

    @property
    def needed_threshold(self) -> float | None:
        """The smallest threshold that would let a candidate through, as a distance (None: no threshold
        would, since no candidate passes the support test); printed, it is rounded up
        (`rag.explain.passing_threshold`)."""
        c = self.closest_supported
        return None if c is None else self.rule.needed_distance(c)


def gate(result: SearchResult, threshold: float, max_chunks: int = 4, rule: SupportRule = NO_SUPPORT_TEST) -> Gated:
    """Each candidate's verdict, the passages kept, and when none is, the test failed and the rule it names
    with the data rag.explain words it with."""
    verdicts, kept = [], []
    for c in result.candidates:
        # A passage in another language is evidence when its multilingual distance passes (under the cut and
        # the threshold); if it does not, the tests every passage gets still may (a code it holds).
        across = rule.reads_across(c) and rule.across_passes(c, threshold)
        if not across and c.distance > threshold:
            verdicts.append(OVER)
        elif not across and not rule.words_pass(c):
            if rule.judging:
                off = "subject" in rule.judge_rules and rule.off_subject(c)
                verdicts.append(JUDGED_OUT if rule.words_hold(c) else OFF_SUBJECT if off else UNSUPPORTED)
                continue
            # Lacking its own words says more than lacking the subject: the verdict names that first.
            own = c.support + 1e-9 >= rule.needed_by(c) or bool(c.codes)
            verdicts.append(OFF_SUBJECT if own and rule.off_subject(c) else UNSUPPORTED)
        elif len(kept) < max_chunks:
            verdicts.append(KEPT)
            kept.append(c)
        else:
            verdicts.append(CAPPED)
    closest = min(result.candidates, key=lambda c: c.distance, default=None)
    # The passage the lowest threshold would let through (one in another language: at its multilingual
    # distance, under its cut).
    supported = [c for c in result.candidates if rule.passes(c)]
    closest_supported = min(supported, key=rule.needed_distance, default=None)
    failed, missing, because, data = None, (), "", {}
    if not kept:
        near = [c for c, v in zip(result.candidates, verdicts) if v in (UNSUPPORTED, OFF_SUBJECT, JUDGED_OUT)]
        judged_out = [c for c, v in zip(result.candidates, verdicts) if v == JUDGED_OUT]
        elsewhere = [c for c, v in zip(result.candidates, verdicts) if v == OFF_SUBJECT]
        if closest is None:
            failed = EMPTY
        elif not near:
            failed = DISTANCE
            if result.absent_names:  # nor would any threshold let a passage through
                because, data = ABSENT, {"names": result.absent_names}  # the header says so too
            elif all(rule.reads_across(c) for c in result.candidates) and not any(
                    rule.words_pass(c) for c in result.candidates):
                because, data = ACROSS, {"across_best": min(c.side_distance for c in result.candidates),
                                         "language": result.language,
                                         "near_languages": tuple(c.lang for c in result.candidates)}
        else:
            failed = SUPPORT
            # Words that none of the close passages holds, in the question's order.
            missing = lacked_by_all(near, result.terms)
            if all(c.wordless for c in near):
                because = WORDLESS
            elif result.absent_names:
                because, data = ABSENT, {"names": result.absent_names}
            elif rule.judging and judged_out:
                because = JUDGE
                data = {"judge_best": max((c.judge for c in judged_out if c.judge is not None), default=-math.inf)}
            elif unnamed := [c for c in near if c.lacks_names and (rule.judging or c.support + 1e-9 >= rule.needed_by(c))]:
                # Some held enough of the question's words, but not the name it asks about (or, for a
                # follow-up, the earlier question's number: "And for juniors?" after Level 2's price, and
                # the Level 1 passage, which is on the subject).
                names = tuple(dict.fromkeys(n for c in unnamed for n in c.lacks_names))
                because, data = UNNAMED, {"names": names, "earlier": not set(names) & set(result.terms)}
            elif elsewhere:
                because, data = ELSEWHERE, {"subject": result.subject}
            else:
                because, best = WORDS, max(near, key=lambda c: c.support)
                data = {"best_support": best.support, "needed_support": rule.needed_by(best),
                        "language": result.language, "near_languages": tuple(c.lang for c in near),
                        "folder_languages": tuple(result.folder_languages)}
    elif not any(rule.holds_in_full(c) for c in kept):  # kept as close paraphrases only
        missing = lacked_by_all(kept, result.terms)
    return Gated(question=result.question, threshold=threshold, max_chunks=max_chunks,
                 candidates=result.candidates, verdicts=verdicts, citations=cite(kept), closest=closest,
                 rule=rule, failed=failed, missing=missing, closest_supported=closest_supported,
                 query=result.query, because=because, **data)

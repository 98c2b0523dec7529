"""Gate: which candidates may be used as evidence, and a structured verdict when none may.

The gate is the only part of the engine that can say no. A candidate is evidence when it passes two tests,
in this order:

1. distance: its cosine distance to the question is at or under the threshold (the slider);
2. support (`SupportRule`): it holds enough of the question's own content words, IDF-weighted
   (`Candidate.support`, weighed by rag.deciding.evidence; a measure word such as "temperature" is held by a value
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
(`because`: WORDLESS, ABSENT, UNNAMED, ELSEWHERE, JUDGE, WORDS) and the data its words need; rag.deciding.explain
words it (`explain.refusal_sentence`: `Gated` holds data only). It keeps the closest candidate and the closest that passes
the support test, whose distance is the smallest threshold that would let it through. It never searches:
moving the threshold re-gates the same candidates. Citations of the kept passages: rag.deciding.citations.

>>> from rag.searching.search import SearchResult
>>> far = Candidate("c1", "d1", "uploads.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.9, 1, 1, 1.0)
>>> g = gate(SearchResult("What is the capital of Peru?", "", [far], {}), 0.675)
>>> from rag.deciding.explain import refusal_sentence
>>> g.verdicts, g.failed, refusal_sentence(g)
(['over threshold'], 'distance', 'NO ANSWER: nothing under cosine distance 0.675 for "What is the capital of Peru?"')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rag.deciding.citations import Citation, cite
from rag.deciding.rule import (ABSENT, ACROSS, CAPPED, DISTANCE, ELSEWHERE, EMPTY, JUDGE, JUDGED_OUT, KEPT, MODEL,
                               NO_SUPPORT_TEST, OFF_SUBJECT, OVER, SUPPORT, UNNAMED, UNSUPPORTED, WEIGHED_OUT,
                               WORDLESS, WORDS, SupportRule, lacked_by_all)
from rag.searching.search import Candidate, SearchResult


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
    # What the refusal's words need (rag.deciding.explain), by `because`. ABSENT: the names the folder never mentions;
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
    model_best: float = -math.inf  # MODEL: the support model's best probability among the passages weighed out
    across_best: float = math.inf  # ACROSS: the smallest multilingual distance among the passages

    @property
    def across_cut(self) -> float | None:
        """The multilingual distance a passage in another language needed here: the calibrated cut, or the
        threshold when that is lower (None: no such cut)."""
        return None if self.rule.across_cut is None else min(self.rule.across_cut, self.threshold)

    @property
    def kept(self) -> list[Candidate]:
        return [c for c, v in zip(self.candidates, self.verdicts) if v == KEPT]

    @property
    def paraphrase_only(self) -> bool:
        """Answered, but every kept passage holds less than the full support (each was kept as a close
        paraphrase, by `SupportRule.close_support` or the growing share past it): the answer carries
        `paraphrase_note`."""
        kept = self.kept
        return bool(kept) and not any(self.rule.holds_in_full(c) for c in kept)

    @property
    def unsaid(self) -> tuple[str, ...]:
        """The question's words that no kept passage holds, in the question's order (() when refused, or when
        some passage holds them all)."""
        # Passages in another language never hold the question's words: only the others say what is unsaid.
        kept = [c for c in self.kept if not self.rule.reads_across(c)]  # none when refused
        return lacked_by_all(kept, kept[0].missing) if kept else ()

    @property
    def kept_for_codes(self) -> list[Candidate]:
        """Kept passages that hold a code the question names and would have failed the support test
        without it (the screen says so beside the table)."""
        return [c for c in self.kept if c.codes and c.support + 1e-9 < self.rule.needed_by(c)]

    @property
    def needed_threshold(self) -> float | None:
        """The smallest threshold that would let a candidate through, as a distance (None: no threshold
        would, since no candidate passes the support test); printed, it is rounded up
        (`rag.deciding.explain.passing_threshold`)."""
        c = self.closest_supported
        return None if c is None else self.rule.needed_distance(c)


def gate(result: SearchResult, threshold: float, max_chunks: int = 4, rule: SupportRule = NO_SUPPORT_TEST) -> Gated:
    """Each candidate's verdict, the passages kept, and when none is, the test failed and the rule it names
    with the data rag.deciding.explain words it with."""
    verdicts, kept = [], []
    for c in result.candidates:
        # A passage in another language is evidence when its multilingual distance passes (under the cut and
        # the threshold); if it does not, the tests every passage gets still may (a code it holds).
        across = rule.reads_across(c) and rule.across_passes(c, threshold)
        if not across and c.distance > threshold:
            verdicts.append(OVER)
        elif not across and not rule.words_pass(c):
            if rule.scoring:
                off = "subject" in rule.judge_rules and rule.off_subject(c)
                out = JUDGED_OUT if rule.judging else WEIGHED_OUT
                verdicts.append(out if rule.words_hold(c) else OFF_SUBJECT if off else UNSUPPORTED)
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
        near = [c for c, v in zip(result.candidates, verdicts)
                if v in (UNSUPPORTED, OFF_SUBJECT, JUDGED_OUT, WEIGHED_OUT)]
        judged_out = [c for c, v in zip(result.candidates, verdicts) if v == JUDGED_OUT]
        weighed_out = [c for c, v in zip(result.candidates, verdicts) if v == WEIGHED_OUT]
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
            elif rule.modelling and weighed_out:
                because = MODEL
                data = {"model_best": max((c.supported for c in weighed_out if c.supported is not None),
                                          default=-math.inf), "language": result.language}
            elif unnamed := [c for c in near if c.lacks_names and (rule.scoring or c.support + 1e-9 >= rule.needed_by(c))]:
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

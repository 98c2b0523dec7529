"""Explain: a gate verdict in words, the same for every surface (the chat, `rag ask`, its --json and "Why
wasn't it found?").

The gate (rag.deciding.gate) returns a structured verdict: which test a refusal failed (`Gated.failed`), the rule
it names (`Gated.because`) and the data its words need (the names, the words missing, the best support
and the share it needed, the judge's best score). `explain(gated)` renders it once into an `Explanation`:
at a glance, the header's reason, the refusal sentence (one sentence of why) and its best candidate, the
search's own first row (not the nearest by distance), with what it lacked and what would let it through; one
click away, the closest row by distance, the threshold that would let the nearest passing passage through
(rounded up to the thousandth, so that gating at the printed value keeps it) or why no threshold would, and
the hint to ask in the folder's other language; and what an empty or still-indexing folder says. Every row of
the retrieval table says its verdict in the same one line (`verdict_line`). `explain(gated, passage=c)` also says
why one candidate was kept or not (`Explanation.passage`).

The text builders are here too: the refusal sentences (`refusal_text`, `unsupported_text`, `absent_text`,
`wordless_text`, `unnamed_text`, `off_subject_text`, `judged_text`, `weighed_text`, `other_language_hint`), the caution
beside an answer kept as close paraphrases (`paraphrase_text`), the evidence rule in words
(`evidence_rule`, with its parts `relaxation_text`, `ramp_text`, `rising_text`; which test decides:
`evidence_summary`) and the number formats they share (`quoted`, `floored`, `ceiled`, and `percent`, through
which every share is printed: a share held rounded down, a share needed rounded up).

What it does not do: decide. Every verdict and number here comes from the gate; a surface adds only its
markup (the chat bolds and escapes, the CLI prints lines).

>>> refusal_text(0.675, "What is the capital of Peru?")
'NO ANSWER: nothing under cosine distance 0.675 for "What is the capital of Peru?"'
>>> unsupported_text(0.675, "Qual é a receita do bolo?", ("bolo", "receita"))
'NO ANSWER: the passages under cosine distance 0.675 never mention "bolo" or "receita" (words of "Qual é a receita do bolo?")'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from rag.deciding.citations import locator
from rag.deciding.gate import Gated
from rag.deciding.rule import (ABSENT, ACROSS, CAPPED, DISTANCE, ELSEWHERE, EMPTY, JUDGE, JUDGED_OUT, KEPT, MODEL,
                               OFF_SUBJECT, UNNAMED, UNSUPPORTED, WEIGHED_OUT, WORDLESS, WORDS, SupportRule)
from rag.searching.search import Candidate
from rag.settings import REFUSAL_PREFIX
from rag.text.lexical import LANGUAGE_NAMES


# A refusal's cause in a few words, for its header, by the rule it names (`Gated.because`).
_REASONS = {WORDLESS: "the question has no word of its own to look for",
            ABSENT: "the question names something the folder never mentions",
            ELSEWHERE: "the passages close enough are not about the earlier question's subject",
            UNNAMED: "the passages close enough do not mention the name the question asks about",
            WORDS: "the passages close enough never mention the question's words",
            JUDGE: "the judge read the closest passages and none answers it",
            MODEL: "the passages close enough do not support it",
            ACROSS: "no passage is close enough in meaning (they are in another language)"}
_NO_PASSAGE = "nothing passed the threshold"  # the header when no candidate was under the threshold

# What each word test kept beside the judge asks, in words (settings.JUDGE_RULES).
_JUDGE_RULE_TEXT = {"names": "the passage holds the names the question writes",
                    "wordless": "the question has a word of its own",
                    "subject": "a follow-up's passage is on the earlier question's subject",
                    "codes": "a passage holding a code the question names passes"}

# The chat's tool that finds where an expected sentence was lost; a surface without it passes lost_hint="".
WHY_NOT_FOUND = "Why wasn't it found?"
LOST_HINT = f"{WHY_NOT_FOUND} below tells where a sentence you expected was lost"
# What to do about an empty folder, where the app takes documents; the CLI names its own command.
ADD_HINT = "add documents in the sidebar"


@dataclass(frozen=True)
class Markup:
    """How a surface marks what a refusal's lines quote: `value` for what comes from a document or the
    question (a file name, a section, a word), `strong` for what the person should look at (the closest
    document, a distance, a threshold), `tool` for the name of a tool of the surface. Plain text (the CLI,
    --json) marks nothing; the chat escapes values for Markdown and bolds the strong ones."""

    value: Callable[[str], str] = str
    strong: Callable[[str], str] = str
    tool: Callable[[str], str] = str


PLAIN = Markup()


@dataclass(frozen=True)
class Explanation:
    """Everything a surface shows about a gate verdict, as plain text ("" for what does not apply). At a
    glance (`lines`): the refusal's one sentence of why and its best candidate, the search's first row, with
    what it lacked and what would let it through; one click away (`details`): the closest row by distance,
    the threshold that would let the nearest passing passage through, the hint to ask in another language."""

    refused: bool
    reason: str = ""  # the refusal's header: its cause in a few words
    refusal: str = ""  # the refusal sentence ("NO ANSWER: ..."): why, in one sentence
    best: str = ""  # the search's first row (every row failed), what it lacked and what would let it through
    closest: str = ""  # the closest row by distance, when it is not the best one
    needed_threshold: float | None = None  # the smallest printed threshold that lets a passage through
    threshold: str = ""  # that threshold in a sentence, or why no threshold would let a passage through
    hint: str = ""  # the passages close enough are in another language than the question's: ask in theirs
    empty: str = ""  # nothing was searched: the folder is empty, or still being indexed
    passage: str = ""  # explain(..., passage=c): why that candidate was kept or not

    @property
    def lines(self) -> tuple[str, ...]:
        """The refusal at a glance, in the order the chat shows it (the header apart): its sentence, then its
        best candidate (or what an empty folder says)."""
        return tuple(x for x in (self.refusal, self.best, self.empty) if x)

    @property
    def details(self) -> tuple[str, ...]:
        """What the refusal says one click away: the closest row, the threshold, the language hint."""
        return tuple(x for x in (self.closest, self.threshold, self.hint) if x)


def explain(gated: Gated, *, indexing: int = 0, lost_hint: str = LOST_HINT, add_hint: str = ADD_HINT,
            passage: Candidate | None = None, markup: Markup = PLAIN) -> Explanation:
    """The gate's verdict in words. `indexing`: how many files are still being indexed (said when nothing
    was searched); `lost_hint`: where the surface tells a person to look for a sentence they expected ("":
    it has no such tool); `add_hint`: what to do about an empty folder on this surface; `passage`: a candidate of `gated` whose own verdict to explain; `markup`: how the
    surface marks the values the closest and threshold lines quote (`Markup`; plain text by default).

    >>> from rag.deciding.gate import gate
    >>> from rag.searching.search import SearchResult
    >>> row = Candidate("c1", "d1", "heron.md", "", "Dates", "...", 0, 9, None, None, "text", 1, 0.1, 0.8434,
    ...                 1, 1, 1.0, support=1.0)
    >>> e = explain(gate(SearchResult("When does Heron go live?", "", [row], {}), 0.8, 4, SupportRule(0.5)))
    >>> e.reason, e.needed_threshold
    ('nothing passed the threshold', 0.844)
    >>> print("\\n".join(e.lines))
    NO ANSWER: nothing under cosine distance 0.800 for "When does Heron go live?"
    Best candidate, the search's first row: heron.md · Dates: over threshold at distance 0.843; a threshold of 0.844 would let it through.
    >>> print("\\n".join(e.details))
    A threshold of 0.844 would let heron.md through (the nearest passage that holds the question's words).
    """
    line = passage_text(gated, passage) if passage is not None else ""
    if gated.failed is None:
        return Explanation(refused=False, passage=line)
    best = closest = threshold = hint = empty = ""
    needed = None
    c = gated.closest
    if c is not None:
        m = markup
        first = gated.candidates[0]  # the search's own first row: every row failed
        best = (f"Best candidate, the search's first row: {m.strong(first.doc_name)} · {m.value(locator(first))}: "
                f"{verdict_line(gated, first, markup=m)}.")
        if c.chunk_id != first.chunk_id:
            closest = (f"Closest by distance: {m.strong(c.doc_name)} · {m.value(locator(c))} at cosine distance "
                       f"{m.strong(f'{c.distance:.3f}')} (row {gated.candidates.index(c) + 1} of the search).")
        s = gated.closest_supported
        if s is not None:
            needed = passing_threshold(gated.needed_threshold)
            threshold = (f"A threshold of {m.strong(f'{needed:.3f}')} would let {m.strong(s.doc_name)} through "
                         + ("(the nearest passage the judge says answers)." if gated.rule.judging else
                            "(the nearest passage the support model says answers)." if gated.rule.modelling else
                            "(the nearest passage that holds the question's words)."))
        else:
            threshold = "No threshold would let a passage through: " + _no_threshold(gated, lost_hint, markup)
        hint = language_hint(gated)
    elif indexing:  # at start-up the folder is still being read: say so, not "empty"
        empty = (f"Nothing is indexed yet: {indexing} file(s) are still being indexed (see the sidebar). "
                 "Ask again once they are.")
    else:
        empty = f"The folder has nothing indexed yet: {add_hint}."
    return Explanation(refused=True, reason=header(gated), refusal=refusal_sentence(gated), best=best,
                       closest=closest, needed_threshold=needed, threshold=threshold, hint=hint, empty=empty,
                       passage=line)


def verdict_line(gated: Gated, c: Candidate, verdict: str | None = None, markup: Markup = PLAIN) -> str:
    """One row's verdict in one line: the gate's verdict (`rag.deciding.rule`'s label) first, then
    what the row lacked and what would let it through (a threshold, words), or how it was used. The retrieval
    table shows it on every row; a refusal says it of its best candidate. `verdict`: the row's own (found in
    `gated` when None).

    >>> from rag.deciding.gate import gate
    >>> from rag.searching.search import SearchResult
    >>> far = Candidate("c1", "d1", "a.md", "", "", "", 0, 9, None, None, "text", 1, 0.1, 0.9, 1, 1, 1.0,
    ...                 support=0.2, missing=("bake", "cake"))
    >>> verdict_line(gate(SearchResult("q", "", [far], {}), 0.8, 4, SupportRule(0.5)), far)
    'over threshold at distance 0.900, and lacks "bake", "cake" (holds 20% of the words, needs 50%)'
    >>> print(verdict_line(gate(SearchResult("q", "", [far], {}), 0.95, 4, SupportRule(0.5)), far))
    lacks the question's words: "bake", "cake" (holds 20% of the words, needs 50%)
    """
    if verdict is None:
        verdict = next(v for x, v in zip(gated.candidates, gated.verdicts) if x.chunk_id == c.chunk_id)
    detail = _verdict_detail(gated, c, verdict, markup)
    if not detail:
        return verdict
    if detail.startswith("at "):
        return f"{verdict} {detail}"
    if verdict == UNSUPPORTED and detail.startswith("lacks "):
        return f"{verdict}: {detail[len('lacks '):]}"  # "lacks the question's words: "bake" ..."
    return f"{verdict}: {detail}"


def _verdict_detail(gated: Gated, c: Candidate, verdict: str, markup: Markup) -> str:
    """`verdict_line`'s part after the verdict."""
    rule, m = gated.rule, markup
    if verdict == KEPT:
        n = next((x.n for x in gated.citations if x.chunk_id == c.chunk_id), None)
        return f"cited as [{n}]" if n is not None else ""
    if verdict == CAPPED:
        return f"passes, after the {gated.max_chunks} kept"
    if verdict == JUDGED_OUT:
        score = "not read by the judge" if c.judge is None else f"judge score {c.judge:.2f}"
        return f"{score}, needs {rule.judge_cut:.2f}"
    if verdict == WEIGHED_OUT:
        score = "not weighed" if c.supported is None else f"likely {c.supported:.2f}"
        return f"{score}, needs {rule.model_cut:.2f}"
    if verdict in (UNSUPPORTED, OFF_SUBJECT):
        return _lacks(gated, c, m)
    # Over the threshold: what the distance needs, and whether the words would hold once it passes.
    if rule.reads_across(c) and rule.across_passes(c):
        need = passing_threshold(c.side_distance)
        return (f"at multilingual distance {c.side_distance:.3f}; a threshold of {m.strong(f'{need:.3f}')} "
                "would let it through")
    need = passing_threshold(c.distance)
    if rule.words_pass(c):
        return f"at distance {c.distance:.3f}; a threshold of {m.strong(f'{need:.3f}')} would let it through"
    return f"at distance {c.distance:.3f}, and {_lacks(gated, c, m)}"


def _lacks(gated: Gated, c: Candidate, m: Markup = PLAIN) -> str:
    """What a row lacks for the support test, in a few words (the support test's order: names first)."""
    rule = gated.rule
    if c.absent_names:
        return f"the folder never mentions {m.value(_listed(c.absent_names))}"
    if c.wordless and not c.codes:
        return "the question has no word of its own to look for"
    if c.lacks_names:
        return f"lacks {m.value(_listed(c.lacks_names))}, which the question names"
    if rule.off_subject(c):
        subject = f" ({m.value(_listed(gated.subject[:4]))})" if gated.subject else ""
        return f"holds none of the earlier question's subject{subject}"
    if rule.scoring:
        return "not judged to answer"
    share = (f"holds {percent(c.support)} of the words, needs {percent(rule.needed_by(c), needed=True)}")
    return f"lacks {m.value(_listed(c.missing[:4]))} ({share})" if c.missing else share


def _listed(words: Sequence[str]) -> str:
    """Words a row lacks, quoted and listed.

    >>> _listed(("bake", "cake"))
    '"bake", "cake"'
    """
    return ", ".join(f'"{w}"' for w in words)


def _no_threshold(gated: Gated, lost_hint: str, markup: Markup = PLAIN) -> str:
    """Why no threshold would let a passage through (no candidate passes the support test)."""
    hint = lost_hint.replace(WHY_NOT_FOUND, markup.tool(WHY_NOT_FOUND))
    advice = "If your documents say it in other words, ask again with their words" + (
        f"; {hint}." if lost_hint else ".")
    if any(c.wordless for c in gated.candidates):
        return "the question has no word of its own that a passage could hold."
    if gated.because == ABSENT:
        return f"the folder never mentions {markup.value(quoted(gated.names))}."
    if gated.because == ACROSS:
        return (f"every candidate is in another language than the question's, and is judged by its "
                f"multilingual distance (the calibrated cut, or the threshold where it is lower): the closest is "
                f"{markup.strong(f'{gated.across_best:.3f}')}, over the calibrated "
                f"{markup.strong(f'{gated.across_cut:.3f}')}.")
    if gated.rule.judging:
        return f"the judge, which reads the question with each passage, found none that answers it. {advice}"
    if gated.rule.modelling:
        return (f"the support model, which weighs each passage's closeness in meaning and its words, found none "
                f"likely to answer it. {advice}")
    # Not a dead end: the likeliest cause is a paraphrase, which the person can mend.
    return ("none of the candidates holds enough of the question's words (and the names it writes, and a "
            f"follow-up's subject). {advice}")


def passing_threshold(distance: float) -> float:
    """The smallest threshold printed to the thousandth that keeps a passage at `distance`: rounded up, since
    rounded to the nearest (0.843 for 0.8434) the printed value would still refuse it.

    >>> passing_threshold(0.8434), passing_threshold(0.843), passing_threshold(0.1)
    (0.844, 0.843, 0.1)
    """
    up = math.ceil(distance * 1000) / 1000
    return up if up >= distance else round(up + 0.001, 3)  # a product rounded down past a whole thousandth


def header(gated: Gated) -> str:
    """A refusal's cause in a few words, for its header ("" when answered)."""
    if gated.failed is None:
        return ""
    return _REASONS.get(gated.because, _NO_PASSAGE)


def refusal_sentence(gated: Gated) -> str | None:
    """The refusal sentence for a gate verdict (None when answered): what every surface says."""
    if gated.failed is None:
        return None
    t, q, because = gated.threshold, gated.question, gated.because
    if gated.failed == DISTANCE and because == ACROSS:
        return across_text(q, gated.across_best, gated.across_cut, gated.language, gated.near_languages)
    if gated.failed in (EMPTY, DISTANCE):
        text = refusal_text(t, q)
        if gated.failed == DISTANCE and because == ABSENT:  # nor would any threshold let a passage through
            text += f"; the folder never mentions {quoted(gated.names)}, which it names"
        return text
    if because == WORDLESS:
        return wordless_text(q)
    if because == ABSENT:
        return absent_text(q, gated.names)
    if because == JUDGE:
        return judged_text(t, q, gated.judge_best, gated.rule.judge_cut, gated.rule.judge_lang)
    if because == MODEL:
        return weighed_text(t, q, gated.model_best, gated.rule.model_cut, gated.rule.model_lang)
    if because == UNNAMED:
        return unnamed_text(t, q, gated.names, earlier=gated.earlier)
    if because == ELSEWHERE:
        return off_subject_text(t, q, gated.subject[:4])
    return unsupported_text(t, q, gated.missing[:4], gated.best_support, gated.needed_support)


def language_hint(gated: Gated) -> str:
    """For a refusal on words, the hint to ask in the language of the folder's other passages, as a sentence
    of its own ("" when it does not apply: see `other_language_hint`). A detail, not the refusal's reason: the
    hint is conditional ("if the answer is there"), and said in the refusal itself it read as advice to ask
    an English question in Portuguese."""
    if gated.failed is None or gated.because != WORDS:
        return ""
    text = other_language_hint(gated.language, gated.near_languages, gated.folder_languages)
    return f"{text[2:]}." if text else ""


def passage_text(gated: Gated, c: Candidate) -> str:
    """Why one candidate of `gated` was kept or not, in a sentence ("Why wasn't it found?")."""
    verdict = next(v for x, v in zip(gated.candidates, gated.verdicts) if x.chunk_id == c.chunk_id)
    close = f"Its chunk is close enough (distance {c.distance:.3f} ≤ {gated.threshold:.3f})"
    if verdict == KEPT:
        cit = next((x.n for x in gated.citations if x.chunk_id == c.chunk_id), None)
        return f"It was found and cited as [{cit}] ({c.doc_name}, fused rank {c.fused_rank}, distance {c.distance:.3f})."
    if verdict == CAPPED:
        ahead = sum(1 for v in gated.verdicts if v == KEPT)
        return (f"Its chunk passed the threshold (distance {c.distance:.3f} ≤ {gated.threshold:.3f}) but came at "
                f"fused rank {c.fused_rank}, after the {ahead} chunks the cap of {gated.max_chunks} allows.")
    if verdict == JUDGED_OUT:
        score = "it did not read it" if c.judge is None else f"its score is {c.judge:.2f}"
        return (f"{close}, but the judge, which reads the question and the passage together, found it does not "
                f"answer: {score}, under the cut of {gated.rule.judge_cut:.2f}.")
    if verdict == WEIGHED_OUT:
        score = "it did not weigh it" if c.supported is None else f"its probability is {c.supported:.2f}"
        return (f"{close}, but the support model, which weighs its closeness in meaning and its words, found it "
                f"unlikely to answer: {score}, under the cut of {gated.rule.model_cut:.2f}.")
    if verdict == UNSUPPORTED and c.absent_names:
        return (f"{close}, but the question names {', '.join(c.absent_names)}, which the folder never mentions: "
                "no passage is evidence for it.")
    if verdict == UNSUPPORTED and c.wordless:
        return (f"{close}, but the question has no word of its own to look for in it (only question words and "
                "words such as \"the\"): ask with the words of what you want to know.")
    if verdict == UNSUPPORTED and c.lacks_names:
        return (f"{close}, but it does not mention {', '.join(c.lacks_names)}, which the question names: it is "
                "taken to be about something else.")
    if verdict == OFF_SUBJECT:
        return (f"{close} and holds the question's words, but none of the question before it, which this "
                "follow-up was searched with: it is taken to be about something else.")
    if verdict == UNSUPPORTED:
        need = gated.rule.needed_by(c)
        lacks = f": it does not mention {', '.join(c.missing)}" if c.missing else ""
        return (f"{close} but holds {percent(c.support)} of the question's words, under the "
                f"{percent(need, needed=True)} the support test asks{lacks}. Asking with the document's own words "
                "would find it.")
    return (f"Its chunk was a candidate (fused rank {c.fused_rank}) but its distance {c.distance:.3f} is over "
            f"the threshold {gated.threshold:.3f}; a threshold of {passing_threshold(c.distance):.3f} would let "
            "it through.")


def floored(share: float) -> float:
    """A share rounded down to whole percents: a passage holding 49.9% of the question's words, refused
    for holding under 50%, must not read "50%" beside that verdict. The support test's tolerance (1e-9)
    still counts: 0.29999... is 0.30.

    >>> floored(0.499), floored(0.2999999999), floored(1.0)
    (0.49, 0.3, 1.0)
    """
    return math.floor(share * 100 + 1e-7) / 100


def ceiled(share: float) -> float:
    """A needed share rounded up to whole percents: a passage needing 66.7% must not read "66%" beside a
    support of 66% that fails it.

    >>> ceiled(0.6667), ceiled(0.5000000001), ceiled(0.9956)
    (0.67, 0.5, 1.0)
    """
    return math.ceil(share * 100 - 1e-7) / 100


def percent(share: float, *, needed: bool = False) -> str:
    """A share of the question's words in whole percents, rounded the safe way: every surface prints a share
    through this one function (the refusal, the diagnosis, the evidence rule, the CLI's table; the chat's
    table holds the same `floored` and `ceiled` numbers). A share a passage holds is rounded down
    (`floored`): it never reads higher than it is, so 49.9%, refused for holding under 50%, reads "49%". A
    share needed (`needed=True`: the support test's, at a passage's distance or in the rule) is rounded up
    (`ceiled`): it never reads lower than it is, so a need of 24.5% reads "25%" beside a support of 24%
    that fails it, in the table as in the refusal.

    >>> percent(0.499), percent(0.5), percent(0.2999999999), percent(1.0)
    ('49%', '50%', '30%', '100%')
    >>> percent(0.245, needed=True), percent(0.5, needed=True), percent(0.5000000001, needed=True)
    ('25%', '50%', '50%')
    """
    return f"{round((ceiled if needed else floored)(share) * 100):d}%"


def ocr_note(mean: float, lowest: float, bar: float) -> str:
    """What a quote read by OCR says of itself: how sure Tesseract was of its words (0-100), and, under the
    measured bar (`Tuning.ocr_low`), that the page itself should be read.

    >>> ocr_note(91.4, 62.0, 80.0)
    'OCR, 91% confident'
    >>> ocr_note(71.2, 12.0, 80.0)
    'OCR, 71% confident (one word 12%): under the 80% bar, read the page itself before trusting the quote'
    """
    note = f"OCR, {mean:.0f}% confident"
    if mean < bar:
        note += f" (one word {lowest:.0f}%): under the {bar:.0f}% bar, read the page itself before trusting the quote"
    return note


def quoted(words: Sequence[str]) -> str:
    """Words as a refusal names them.

    >>> quoted(("bolo", "chocolate"))
    '"bolo" or "chocolate"'
    """
    return " or ".join(f'"{w}"' for w in words)


def refusal_text(threshold: float, question: str) -> str:
    return f'{REFUSAL_PREFIX}: nothing under cosine distance {threshold:.3f} for "{question}"'


def unsupported_text(threshold: float, question: str, missing: Sequence[str], best: float | None = None,
                     min_support: float | None = None) -> str:
    """The refusal when passages are close enough but never name what the question asks about."""
    if missing:
        words = quoted(missing)
        return (f'{REFUSAL_PREFIX}: the passages under cosine distance {threshold:.3f} never mention {words} '
                f'(words of "{question}")')
    share = ("" if best is None or min_support is None else
             f" (the best holds {percent(best)}; {percent(min_support, needed=True)} needed)")
    return (f'{REFUSAL_PREFIX}: no passage under cosine distance {threshold:.3f} mentions enough of the words of '
            f'"{question}"{share}')


def absent_text(question: str, names: Sequence[str]) -> str:
    """The refusal when the question names something the folder never mentions.

    >>> absent_text("When does Project Falcon go live?", ("falcon",))
    'NO ANSWER: the folder never mentions "falcon", which "When does Project Falcon go live?" names'
    """
    words = quoted(names)
    return f'{REFUSAL_PREFIX}: the folder never mentions {words}, which "{question}" names'


def wordless_text(question: str) -> str:
    """The refusal when the question has no word of its own to look for.

    >>> print(wordless_text("E então?"))  # doctest: +NORMALIZE_WHITESPACE
    NO ANSWER: "E então?" has no word of its own to look for (each is a question word or a word such as
    "the"): ask with the words of what you want to know
    """
    return (f'{REFUSAL_PREFIX}: "{question}" has no word of its own to look for (each is a question word or a '
            f'word such as "the"): ask with the words of what you want to know')


def unnamed_text(threshold: float, question: str, names: Sequence[str], earlier: bool = False) -> str:
    """The refusal when the passages that hold a question's words are about another named thing (`earlier`:
    named by the question a follow-up was joined to, "Level 2" before "And for juniors?").

    >>> print(unnamed_text(0.8, "What is the deadline of Project Lantern?", ("lantern",)))  # doctest: +NORMALIZE_WHITESPACE
    NO ANSWER: the passages under cosine distance 0.800 that hold the words of "What is the deadline of
    Project Lantern?" never mention "lantern", which it names
    """
    words = quoted(names)
    who = "the question before it" if earlier else "it"
    return (f'{REFUSAL_PREFIX}: the passages under cosine distance {threshold:.3f} that hold the words of '
            f'"{question}" never mention {words}, which {who} names')


def off_subject_text(threshold: float, question: str, subject: Sequence[str]) -> str:
    """The refusal when a follow-up's words are only held by passages about something else.

    >>> print(off_subject_text(0.8, "At what temperature?", ("bake", "chocolate", "cake")))  # doctest: +NORMALIZE_WHITESPACE
    NO ANSWER: the passages under cosine distance 0.800 that hold the words of "At what temperature?" never
    mention "bake" or "chocolate" or "cake", the subject of the question before it
    """
    words = quoted(subject)
    return (f'{REFUSAL_PREFIX}: the passages under cosine distance {threshold:.3f} that hold the words of '
            f'"{question}" never mention {words}, the subject of the question before it')


def other_language_hint(question_lang: str, passage_langs: Sequence[str],
                        folder_langs: Sequence[str] = ()) -> str:
    """A sentence for a refusal on words when the folder holds passages in another language
    than the question's: the support test looks for the question's own words, which a translation does not
    hold, and MiniLM matches across languages poorly (an English question about a Portuguese lease often
    does not even find it). Stronger when every close passage (`passage_langs`) is in that language. ""
    when the question's language is unclear or the folder holds no other.

    >>> print(other_language_hint("en", ["pt", "pt"]))  # doctest: +NORMALIZE_WHITESPACE
    . The passages under the threshold are in Portuguese and the question in English: if the answer is in
    them, ask in Portuguese (the search looks for the question's own words)
    >>> print(other_language_hint("en", ["en"], ["en", "pt"]))  # doctest: +NORMALIZE_WHITESPACE
    . The folder also holds passages in Portuguese: if the answer is there, ask in Portuguese (the search looks
    for the question's own words)
    >>> other_language_hint("en", ["pt", "en"]), other_language_hint("", ["pt"]), other_language_hint("pt", [""], ["pt"])
    ('', '', '')
    """
    langs = set(passage_langs)
    if not question_lang:
        return ""
    asked = LANGUAGE_NAMES.get(question_lang, question_lang)
    if langs and question_lang not in langs and "" not in langs:
        names = " and ".join(LANGUAGE_NAMES.get(x, x) for x in sorted(langs))
        # Conditional: an off-folder English question meets only Portuguese passages under the threshold too
        # (they sit nearer everything), and "ask in Portuguese" alone read as "the answer is there".
        return (f". The passages under the threshold are in {names} and the question in {asked}: if the answer "
                f"is in them, ask in {names} (the search looks for the question's own words)")
    others = [x for x in folder_langs if x and x != question_lang]
    if not others:
        return ""
    names = " and ".join(LANGUAGE_NAMES.get(x, x) for x in sorted(others))
    return (f". The folder also holds passages in {names}: if the answer is there, ask in {names} (the search "
            f"looks for the question's own words)")


def across_text(question: str, best: float, cut: float, lang: str, near: Sequence[str]) -> str:
    """The refusal when every candidate is in another language than the question's (`near`: their languages)
    and none is close enough.

    >>> print(across_text("How many branches are there?", 0.6212, 0.55, "en", ("pt",)))
    NO ANSWER: the closest passages are in Portuguese, and none is close enough in meaning to "How many branches are there?" (best multilingual distance 0.621; English questions need 0.550 or less)
    """
    names = " and ".join(LANGUAGE_NAMES.get(x, x) for x in sorted(set(near) - {lang, ""})) or "another language"
    asked = LANGUAGE_NAMES.get(lang, lang) or "these"
    return (f"{REFUSAL_PREFIX}: the closest passages are in {names}, and none is close enough in meaning to "
            f'"{question}" (best multilingual distance {best:.3f}; {asked} questions need {cut:.3f} or less)')


def judged_text(threshold: float, question: str, best: float, cut: float, lang: str) -> str:
    """The refusal when passages were close enough but the judge found none that answers.

    >>> judged_text(0.7, "How old was Rollo?", -2.314, 0.5, "en")
    'NO ANSWER: the judge read the passages under cosine distance 0.700 and none answers "How old was Rollo?" (best judge score -2.31; English needs 0.50 or more)'
    """
    name = LANGUAGE_NAMES.get(lang, lang) or "this question's language"
    score = f"best judge score {best:.2f}" if math.isfinite(best) else "it read none of them"
    return (f'{REFUSAL_PREFIX}: the judge read the passages under cosine distance {threshold:.3f} and none answers '
            f'"{question}" ({score}; {name} needs {cut:.2f} or more)')


def weighed_text(threshold: float, question: str, best: float, cut: float, lang: str) -> str:
    """The refusal when passages were close enough but the support model found none likely to answer.

    >>> weighed_text(0.8, "Quem fundou Fresno?", 0.314, 0.45, "pt")
    'NO ANSWER: the passages under cosine distance 0.800 do not support "Quem fundou Fresno?" (best 0.31 against 0.45 in Portuguese)'
    """
    name = LANGUAGE_NAMES.get(lang, lang) or "this question's language"
    best_text = f"best {best:.2f}" if math.isfinite(best) else "none weighed"
    return (f'{REFUSAL_PREFIX}: the passages under cosine distance {threshold:.3f} do not support "{question}" '
            f"({best_text} against {cut:.2f} in {name})")


def evidence_rule(rule: SupportRule) -> str:
    """What a passage under the threshold needs besides its distance, in words, for the screen and the CLI.

    >>> evidence_rule(SupportRule(0.5, judge_cut=0.42, judge_rules=("names",), judge_lang="en"))
    'the judge decides: a score of 0.42 or more (the cut calibrated for English), and the passage holds the names the question writes'
    >>> evidence_rule(SupportRule(0.5, 0.628, 0.2))
    'support at least 50%, 20% for a passage at distance ≤ 0.628'

    Every share in it is a share needed, rounded up (`percent`): a close share of 24.5% reads "25%".

    >>> evidence_rule(SupportRule(0.5, 0.4, 0.245, rise_from=0.7, rise_to=0.8))
    'support at least 50%, 25% for a passage at distance ≤ 0.400, rising from 50% past 0.700 to every word at 0.800'
    """
    across = (f"; a passage in another language: multilingual distance ≤ {rule.across_cut:.3f} and the names the "
              "question writes" if rule.across_cut is not None else "")
    if rule.scoring:  # a model's score decides: the judge's, or the support model's
        lang, cut = (rule.judge_lang, rule.judge_cut) if rule.judging else (rule.model_lang, rule.model_cut)
        name = LANGUAGE_NAMES.get(lang, "")
        where = f" (the cut calibrated for {name})" if name else " (the strictest calibrated cut: language unclear)"
        beside = [_JUDGE_RULE_TEXT[r] for r in rule.judge_rules if r in _JUDGE_RULE_TEXT]
        also = (", and " + "; ".join(beside)) if beside else ""
        what = "the judge decides: a score" if rule.judging else "the support model decides: a probability"
        return f"{what} of {cut:.2f} or more{where}{also}{across}"
    close = "".join(f", {x}" for x in (relaxation_text(rule), ramp_text(rule), rising_text(rule)) if x)
    return f"support at least {percent(rule.min_support, needed=True)}{close}{across}"


def relaxation_text(rule: SupportRule) -> str:
    """The close relaxation in words, for `evidence_rule` ("" when there is none: before any calibration).

    >>> relaxation_text(SupportRule(0.5, 0.628, 0.2)), relaxation_text(SupportRule(0.5))
    ('20% for a passage at distance ≤ 0.628', '')
    """
    if not rule.relaxes:
        return ""
    return f"{percent(rule.close_support, needed=True)} for a passage at distance ≤ {rule.close:.3f}"


def ramp_text(rule: SupportRule) -> str:
    """The growing share in words, for `evidence_rule` ("" when there is none).

    >>> ramp_text(SupportRule(0.5, 0.4, 0.2, 0.6, 0.8, ramp_support=0.35)), ramp_text(SupportRule(0.5, 0.4, 0.2))
    ('from 35% past 0.400 growing to 50% at 0.600', '')
    """
    if not rule.ramping:
        return ""
    return (f"from {percent(rule.ramp_start, needed=True)} past {rule.close:.3f} growing to "
            f"{percent(rule.min_support, needed=True)} at {rule.rise_from:.3f}")


def rising_text(rule: SupportRule) -> str:
    """The far rise in words, for `evidence_rule` ("" when the share never rises).

    >>> rising_text(SupportRule(0.5, 0.628, 0.2, 0.7, 0.8)), rising_text(SupportRule(0.5, 0.628, 0.2))
    ('rising from 50% past 0.700 to every word at 0.800', '')
    """
    if not rule.rises:
        return ""
    return (f"rising from {percent(rule.min_support, needed=True)} past {rule.rise_from:.3f} to every word at "
            f"{rule.rise_to:.3f}")


def evidence_summary(rules: Mapping[str, SupportRule]) -> str:
    """Which test decides, besides the distance, under the rules in force (`rules`: each question language's,
    by its code): the judge only for the languages whose rule it decides, else the support test. For a page
    that gives each language's rule in full beside it (`evidence_rule`).

    >>> words, judged = SupportRule(0.5, 0.6, 0.2), SupportRule(0.5, judge_cut=0.4, judge_lang="en")
    >>> print(evidence_summary({"en": words, "pt": words}))
    it holds enough of the question's own words (the support test)
    >>> print(evidence_summary({"en": judged}))
    the judge, which reads the question and the passage together, finds that it answers
    >>> print(evidence_summary({"en": judged, "pt": words}))  # doctest: +NORMALIZE_WHITESPACE
    for English questions, the judge, which reads the question and the passage together, finds that it answers;
    for Portuguese questions, it holds enough of the question's own words (the support test)
    """
    tests = {"judge": "the judge, which reads the question and the passage together, finds that it answers",
             "model": "the support model, which weighs its closeness in meaning and its words, finds it likely to "
                      "answer",
             "words": "it holds enough of the question's own words (the support test)"}
    by_test: dict[str, list[str]] = {}
    for lang, rule in rules.items():
        by_test.setdefault("judge" if rule.judging else "model" if rule.modelling else "words", []).append(lang)
    if len(by_test) <= 1:
        return tests[next(iter(by_test), "words")]

    def named(langs: Sequence[str]) -> str:
        return " and ".join(LANGUAGE_NAMES.get(x, x) for x in langs)

    return "; ".join(f"for {named(langs)} questions, {tests[t]}" for t, langs in by_test.items())


def paraphrase_text(best: float, min_support: float, missing: Sequence[str]) -> str:
    """The caution beside an answer whose every passage was kept as a close paraphrase: near in meaning,
    holding less than the full share of the question's words. Such a passage may answer in its own words,
    or be about the question's subject without giving what it asks (a near miss): the reader judges.

    >>> print(paraphrase_text(0.29, 0.5, ("k1", "b")))  # doctest: +NORMALIZE_WHITESPACE
    Kept as close paraphrases: the passages hold at most 29% of the question's words (50% otherwise),
    and none mentions "k1" or "b". Check that they answer what you asked.
    """
    words = quoted(missing[:4])
    lacking = f", and none mentions {words}" if words else ""
    return (f"Kept as close paraphrases: the passages hold at most {percent(best)} of the question's words "
            f"({percent(min_support, needed=True)} otherwise){lacking}. Check that they answer what you asked.")


def paraphrase_note(gated: Gated) -> str | None:
    """`paraphrase_text` for an answer whose every kept passage is a close paraphrase (`Gated.paraphrase_only`),
    else None."""
    if not gated.paraphrase_only:
        return None
    return paraphrase_text(max(c.support for c in gated.kept), gated.rule.min_support, gated.missing)


def unsaid_note(gated: Gated) -> str | None:
    """A caution beside an answer whose passages all lack some of the question's words: a near miss is
    answered from a passage on the question's subject that does not give what it asks ("How much does the
    Level 3 course cost for juniors?" and the adults' prices; "When was the treasurer elected?" and the
    list of officers: two trials' most common bluff). Only said, not gated: right answers use their own
    words about as often (SQuAD: half of the right answers lack a word of the question, against two
    thirds of the near misses answered), so the reader judges, with the words to look for. None when
    nothing is missing, and when the close-paraphrase caution, which names them, is said instead.

    >>> from rag.searching.search import Candidate
    >>> from rag.deciding.gate import Gated
    >>> row = Candidate("c1", "d1", "courses.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.4, 1, 1,
    ...                 1.0, support=0.8, missing=("juniors",))
    >>> unsaid_note(Gated("q", 0.8, 4, [row], [KEPT], [], row, SupportRule(0.5)))
    'The quoted passages never mention "juniors": check that they answer what you asked.'
    """
    words = gated.unsaid
    if not words or gated.paraphrase_only or gated.rule.judging:
        return None  # the judge read question and passage together: a missing word is no sign of a miss
    return f"The quoted passages never mention {quoted(words[:4])}: check that they answer what you asked."


def names_note(unknown: Sequence[str], absent: Sequence[str], markup: Markup = PLAIN) -> str:
    """Beside the retrieval table, when the question names something the folder never mentions ("" when it
    does not): with a name written as a word (`absent`) no passage is evidence; with only acronyms
    (`unknown`), the close relaxation is off.

    >>> names_note(("ppp",), ())
    'The question names "ppp", which the folder never mentions: every passage needs the full support, however close'
    """
    if not unknown:
        return ""
    names = markup.value(", ".join(f'"{n}"' for n in unknown))
    what = "no passage is evidence for it" if absent else "every passage needs the full support, however close"
    return f"The question names {names}, which the folder never mentions: {what}"


def split_note(gated: Gated) -> str | None:
    """A caution beside an answer whose kept passages, from different documents, each lack words the
    other holds: no one passage holds the question, and the answer may join what two documents say about
    different things ("How much is the deposit for the tool shed key?": the garden's tool shed code and
    the bicycle room's key deposit; found by a user trial). None otherwise. Only said, not gated: as a
    rule it would have refused 8 right answers of the sample's development questions, whose documents
    share their subject."""
    kept = gated.kept  # none when refused
    if any(not c.missing for c in kept):
        return None  # one passage holds the whole question
    # What each document lacks: the words none of its kept passages holds ("membership.md lacks
    # "junior"" was said of a document whose other kept passage, the cited one, holds it).
    lacking: dict[str, tuple[str, list[str]]] = {}
    for c in kept:
        _, words = lacking.setdefault(c.doc_id, (c.doc_name, list(c.missing)))
        words[:] = [w for w in words if w in c.missing]
    docs = list(lacking.values())
    for i, (p_name, p_lacks) in enumerate(docs):
        for q_name, q_lacks in docs[i + 1:]:
            p_only = [w for w in p_lacks if w not in q_lacks]  # p lacks them, q holds them
            q_only = [w for w in q_lacks if w not in p_lacks]
            if p_only and q_only:
                lacks = [" and ".join(f'"{w}"' for w in words) for words in (p_only, q_only)]
                return (f"No passage holds the whole question: {p_name} lacks {lacks[0]}, which "
                        f"{q_name} holds, and {q_name} lacks {lacks[1]}. The answer may join "
                        f"what two documents say about different things: read the quotes.")
    return None


def codes_note(gated: Gated) -> str | None:
    """What the screen says beside the table when a passage was kept for a code the question names."""
    rows = gated.kept_for_codes
    if not rows:
        return None
    codes = dict.fromkeys(code for c in rows for code in c.codes)
    # The codes as the question writes them ("ERR-4017"), not as the support test folds them.
    written = [m.group() if (m := re.search(re.escape(code), gated.query or gated.question, re.IGNORECASE))
               else code for code in codes]
    where = ", ".join(f"{c.doc_name} at {c.distance:.3f}" for c in rows)
    named = " and ".join('"' + w + '"' for w in written)
    # A follow-up names a code through "it" when the code is only in the question it was joined to.
    how = "names" if all(code in gated.question.lower() for code in codes) else "refers to"
    return (f"Kept for holding {named}, which the question {how}: a passage that holds the exact code "
            f"passes the support test whatever other words it lacks ({where}).")

"""Gate and cite: which candidates may be used as evidence, and how each is cited.

The gate is the only part of the engine that can say no. A candidate is evidence when it passes two
tests, in this order:

1. distance: its cosine distance to the question is at or under the threshold (the slider);
2. support: it mentions enough of the question's own content words (a word asking for a measure, such as
   "temperature", "often" or "custa", counts as mentioned by a passage giving a value of it:
   `rag.lexical.holds_value`): the IDF-weighted share of them
   found in the passage (`Candidate.support`, computed by search) is at least `SupportRule.min_support`
   (half), or, for a passage closer than any unrelated question comes to this folder
   (`SupportRule.close`, from the calibration), at least `SupportRule.close_support`: a close paraphrase
   may use its own words, a far one may not. Between the two, where unrelated questions still rarely find
   their nearest passage, the share needed grows with the distance, from `SupportRule.ramp_support` just
   past the close distance to the full share at `rise_from` (a right passage in its own words sits there:
   "What is Norman art's most well known piece?" at 0.34 holding 36%). Farther than most unrelated
   questions' nearest passages (`SupportRule.rise_from`, from the calibration) the share needed rises, to
   every word at the calibration ceiling (`rise_to`): out there half the words is as likely a near miss
   ("What is the monthly condominium fee?" and an invoice policy's late fee) as an answer.

A question that names something the folder never mentions (`Candidate.absent_names`: "Falcon" in "When
does Project Falcon go live?", "YouTube", "Peru", written as names, with no word of the folder one letter
off) has no evidence here: a note on Project Heron's go-live date holds every other word, and a passage on
upload limits, however close, says nothing about YouTube's. Every candidate fails the support test, and
the refusal says which name. A name written as an acronym ("PPP", which the folder may spell out) only
loses the close relaxation (`Candidate.unknown_names`).

Likewise a passage that lacks a name the question writes and the folder does use (`Candidate.lacks_names`:
"Lantern" in "What is the deadline of Project Lantern?", missing from Project Heron's section, which holds
"deadline" and "project") is about something else. A name under three letters or with a stop ("Jr",
"U.S.") is exempt, and a form one letter off counts as the name ("Asia" for "Asian").

A number the question writes as a name ("the Level 4 course", "the 2025 regatta", "nível 2"; not a quantity
such as "a 60 MB file" or "over 5,000 euros": `rag.lexical.identifier_numbers`) is one, under both rules: a
folder that never writes 2025 has nothing on that year, and a passage on the Level 1 course, which holds
"level", "course" and a price, is about another level. A follow-up with no number of its own keeps the one of
the question it is joined to ("And for juniors?" after the Level 2 course's price).

A follow-up searched with the question before it (rag.followup) leans on that question's subject: a
passage that holds none of its words (`Candidate.subject_support` 0) is about something else, however well
it holds the follow-up's own ("At what temperature?" after "How long do I bake the chocolate cake?", and a
fridge manual that says "temperature"), and fails with its own verdict, `OFF_SUBJECT`, unless another
passage of its document holds them (`Candidate.subject_in_document`: "E a renda?" after "Quanto é a
caução?" is about the same lease, whose rent clause does not repeat "caução").

A question with no word of its own to look for ("What is it?", "E então?": question words and stopwords only)
has no evidence either: a passage close to it is close to nothing in particular, and a follow-up's passages
would only answer the question before it again. Every candidate fails the support test, unless it holds a
code the follow-up refers to ("What is it?" after a question naming ERR-4017).

A passage that holds a code the question names (`Candidate.codes`: "ERR-4017", "UTF-8"; letters and
digits joined) passes the support test whatever else it lacks: an identifier is as specific as a question
gets ("o erro ERR-3001 resolve-se como?" asked of an English table row holds none of the other words). It
still needs the distance test: the threshold keeps its meaning, and MiniLM, which reads codes as noise, may
put such a passage over it ("What does ERR-4017 mean?" sits at 0.843 from the line that explains it; the
refusal then names the threshold that would let it through). A code the folder never holds gives nothing.

MiniLM's distances depend on the language as much as on the topic (a chocolate-cake question in
Portuguese sits at 0.54 from Portuguese notes on privacy), so distance alone cannot decide; a passage
that never names what the question is about is not evidence for it, however close its vector.

The gate keeps, in fused order, at most `max_chunks` candidates that pass both. When none does, the
result is a refusal that names the test that failed: nothing under the threshold, or passages under it
that never mention the question's words (it names them). It carries the closest candidate, so the
person sees how far off it was, and the smallest threshold that would have let a supported candidate
through. It never searches: moving the threshold re-gates the same candidates.

Citations number the kept chunks 1..k. Each quotes the chunk's own content (never its embedded header)
and points into the file: `#char=start,end` for text, `#page=N` for PDFs.

>>> refusal_text(0.675, "What is the capital of Peru?")
'NO ANSWER: nothing under cosine distance 0.675 for "What is the capital of Peru?"'
>>> unsupported_text(0.675, "Qual é a receita do bolo?", ("bolo", "receita"))
'NO ANSWER: the passages under cosine distance 0.675 never mention "bolo" or "receita" (words of "Qual é a receita do bolo?")'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence
from urllib.parse import quote as urlquote

from rag.lexical import LANGUAGE_NAMES
from rag.search import Candidate, SearchResult
from rag.settings import JUDGE_RULES, REFUSAL_PREFIX

KEPT = "kept"
CAPPED = "under threshold, over cap"
OVER = "over threshold"
UNSUPPORTED = "lacks the question's words"
OFF_SUBJECT = "lacks the earlier question's subject"
JUDGED_OUT = "judged not to answer"

# Names the version of the tests below: a change to them recalibrates every folder (part of the calibration's
# fingerprint), since the calibrated threshold is chosen with them.
GATE_RULES = ("support-10: the judge decides for the languages it reads, with the word tests in judge_rules "
              "beside it; "
              "between the close distance and the rise the share needed grows; far out the share "
              "needed rises to every word; a measure word is held by a value of "
              "it; a follow-up's subject may be held by the passage's document; a name the folder never mentions "
              "fails every passage (an acronym: no close relaxation); "
              "a passage lacking a name the folder uses fails; a number written as a name is one; "
              "a question with no word of its own fails every "
              "passage; a held code passes the support test")

# Which test a refusal failed (`Gated.failed`).
EMPTY, DISTANCE, SUPPORT = "empty", "distance", "support"
# Within the support test, which of its rules the refusal names (`Gated.because`), in the order checked.
WORDLESS, ABSENT, ELSEWHERE, UNNAMED, WORDS = "wordless", "absent name", "off subject", "lacks a name", "words"
JUDGE = "judge"
_REASONS = {WORDLESS: "the question has no word of its own to look for",
            ABSENT: "the question names something the folder never mentions",
            ELSEWHERE: "the passages close enough are not about the earlier question's subject",
            UNNAMED: "the passages close enough do not mention the name the question asks about",
            WORDS: "the passages close enough never mention the question's words",
            JUDGE: "the judge read the closest passages and none answers it"}



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


def percent(share: float) -> str:
    """`floored` as text.

    >>> percent(0.499), percent(0.5), percent(0.2999999999), percent(1.0)
    ('49%', '50%', '30%', '100%')
    """
    return f"{round(floored(share) * 100):d}%"


def quoted(words: Sequence[str]) -> str:
    """Words as a refusal names them.

    >>> quoted(("bolo", "chocolate"))
    '"bolo" or "chocolate"'
    """
    return " or ".join(f'"{w}"' for w in words)


def lacked_by_all(rows: Sequence[Candidate], order: Sequence[str]) -> tuple[str, ...]:
    """The words of `order` that none of `rows` holds (each row's `missing`), in that order.

    >>> from rag.search import Candidate
    >>> a = Candidate("a", "d", "x.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.4, 1, 1, 1.0, missing=("k1", "b"))
    >>> b = Candidate("b", "d", "x.md", "", "", "", 0, 0, None, None, "text", 2, 0.2, 0.4, 2, 2, 1.0, missing=("b",))
    >>> lacked_by_all([a, b], ("bm25", "k1", "b")), lacked_by_all([], ("b",))
    (('b',), ())
    """
    if not rows:
        return ()
    lacking = set.intersection(*(set(c.missing) for c in rows))
    return tuple(w for w in order if w in lacking)


def refusal_text(threshold: float, question: str) -> str:
    return f'{REFUSAL_PREFIX}: nothing under cosine distance {threshold:.3f} for "{question}"'


def unsupported_text(threshold: float, question: str, missing: Sequence[str], best: float | None = None,
                     min_support: float | None = None) -> str:
    """The refusal when passages are close enough but never name what the question asks about."""
    if missing:
        words = quoted(missing)
        return (f'{REFUSAL_PREFIX}: the passages under cosine distance {threshold:.3f} never mention {words} '
                f'(words of "{question}")')
    share = "" if best is None or min_support is None else f" (the best holds {percent(best)}; {min_support:.0%} needed)"
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


def judged_text(threshold: float, question: str, best: float, cut: float, lang: str) -> str:
    """The refusal when passages were close enough but the judge found none that answers.

    >>> judged_text(0.7, "How old was Rollo?", -2.314, 0.5, "en")
    'NO ANSWER: the judge read the passages under cosine distance 0.700 and none answers "How old was Rollo?" (best judge score -2.31; English needs 0.50 or more)'
    """
    name = LANGUAGE_NAMES.get(lang, lang) or "this question's language"
    score = f"best judge score {best:.2f}" if math.isfinite(best) else "it read none of them"
    return (f'{REFUSAL_PREFIX}: the judge read the passages under cosine distance {threshold:.3f} and none answers '
            f'"{question}" ({score}; {name} needs {cut:.2f} or more)')


def evidence_rule(rule: "SupportRule") -> str:
    """What a passage under the threshold needs besides its distance, in words, for the screen and the CLI.

    >>> evidence_rule(SupportRule(0.5, judge_cut=0.42, judge_rules=("names",), judge_lang="en"))
    'the judge decides: a score of 0.42 or more (the cut calibrated for English), and the passage holds the names the question writes'
    >>> evidence_rule(SupportRule(0.5, 0.628, 0.2))
    'support at least 50%, 20% for a passage at distance ≤ 0.628'
    """
    if rule.judging:
        name = LANGUAGE_NAMES.get(rule.judge_lang, "")
        where = f" (the cut calibrated for {name})" if name else " (the strictest calibrated cut: language unclear)"
        beside = [_JUDGE_RULE_TEXT[r] for r in rule.judge_rules if r in _JUDGE_RULE_TEXT]
        also = (", and " + "; ".join(beside)) if beside else ""
        return f"the judge decides: a score of {rule.judge_cut:.2f} or more{where}{also}"
    close = "".join(f", {x}" for x in (rule.relaxation, rule.ramp, rule.rising) if x)
    return f"support at least {rule.min_support:.0%}{close}"


# What each word test kept beside the judge asks, in words (settings.JUDGE_RULES).
_JUDGE_RULE_TEXT = {"names": "the passage holds the names the question writes",
                    "wordless": "the question has a word of its own",
                    "subject": "a follow-up's passage is on the earlier question's subject",
                    "codes": "a passage holding a code the question names passes"}


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
            f"({min_support:.0%} otherwise){lacking}. Check that they answer what you asked.")


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

    def passes(self, c: Candidate) -> bool:
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
        if self.judging:
            return self.passes(c)  # the judge read it whole: no paraphrase caution
        return bool(c.codes) or c.support + 1e-9 >= self.min_support


NO_SUPPORT_TEST = SupportRule()


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: str
    doc_id: str
    doc_name: str
    title: str
    locator: str
    fragment: str
    link: str
    quote: str
    distance: float
    start: int
    end: int
    page: int | None
    section: str = ""  # the heading the passage sits under ("" when none)
    version: str = ""  # the content hash of the document version quoted (the viewer checks it)


@dataclass
class Gated:
    question: str
    threshold: float
    max_chunks: int
    candidates: list[Candidate]
    verdicts: list[str]  # one per candidate, in fused order
    citations: list[Citation]
    refusal: str | None
    closest: Candidate | None  # the nearest candidate by cosine distance, whatever its verdict
    rule: SupportRule = NO_SUPPORT_TEST
    failed: str | None = None  # the test a refusal failed: EMPTY, DISTANCE or SUPPORT; None when kept
    # For SUPPORT: the question's words no passage under the threshold holds. For an answer kept only as
    # close paraphrases (`paraphrase_note`): the words no kept passage holds.
    missing: tuple[str, ...] = ()
    closest_supported: Candidate | None = None  # the nearest candidate that passes the support test
    query: str = ""  # what was searched: a follow-up joined to the question before it
    # For SUPPORT: the rule the refusal names (WORDLESS, ABSENT, ELSEWHERE, UNNAMED, WORDS); for DISTANCE:
    # ABSENT when the question also names something the folder never mentions, else "".
    because: str = ""

    @property
    def kept(self) -> list[Candidate]:
        return [c for c, v in zip(self.candidates, self.verdicts) if v == KEPT]

    @property
    def reason(self) -> str:
        """A refusal's cause in a few words, for its header ("" when answered)."""
        if self.refusal is None:
            return ""
        return _REASONS.get(self.because, "nothing passed the threshold")

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
        return paraphrase_text(max(c.support for c in self.kept), self.rule.min_support, self.missing)

    @property
    def unsaid(self) -> tuple[str, ...]:
        """The question's words that no kept passage holds, in the question's order (() when refused, or when
        some passage holds them all)."""
        kept = self.kept if self.refusal is None else []
        return lacked_by_all(kept, kept[0].missing) if kept else ()

    @property
    def unsaid_note(self) -> str | None:
        """A caution beside an answer whose passages all lack some of the question's words: a near miss is
        answered from a passage on the question's subject that does not give what it asks ("How much does the
        Level 3 course cost for juniors?" and the adults' prices; "When was the treasurer elected?" and the
        list of officers: two trials' most common bluff). Only said, not gated: right answers use their own
        words about as often (SQuAD: half of the right answers lack a word of the question, against two
        thirds of the near misses answered), so the reader judges, with the words to look for. None when
        nothing is missing, and when the close-paraphrase caution, which names them, is said instead.

        >>> from rag.search import Candidate
        >>> row = Candidate("c1", "d1", "courses.md", "", "", "", 0, 0, None, None, "text", 1, 0.1, 0.4, 1, 1,
        ...                 1.0, support=0.8, missing=("juniors",))
        >>> Gated("q", 0.8, 4, [row], [KEPT], [], None, row, SupportRule(0.5)).unsaid_note
        'The quoted passages never mention "juniors": check that they answer what you asked.'
        """
        words = self.unsaid
        if not words or self.paraphrase_only or self.rule.judging:
            return None  # the judge read question and passage together: a missing word is no sign of a miss
        return f"The quoted passages never mention {quoted(words[:4])}: check that they answer what you asked."

    @property
    def split_note(self) -> str | None:
        """A caution beside an answer whose kept passages, from different documents, each lack words the
        other holds: no one passage holds the question, and the answer may join what two documents say about
        different things ("How much is the deposit for the tool shed key?": the garden's tool shed code and
        the bicycle room's key deposit; found by a user trial). None otherwise. Only said, not gated: as a
        rule it would have refused 8 right answers of the sample's development questions, whose documents
        share their subject."""
        kept = self.kept if self.refusal is None else []
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

    @property
    def kept_for_codes(self) -> list[Candidate]:
        """Kept passages that hold a code the question names and would have failed the support test
        without it (the screen says so beside the table)."""
        return [c for c in self.kept if c.codes and c.support + 1e-9 < self.rule.needed_by(c)]

    @property
    def codes_note(self) -> str | None:
        """What the screen says beside the table when a passage was kept for a code the question names."""
        rows = self.kept_for_codes
        if not rows:
            return None
        codes = dict.fromkeys(code for c in rows for code in c.codes)
        # The codes as the question writes them ("ERR-4017"), not as the support test folds them.
        written = [m.group() if (m := re.search(re.escape(code), self.query or self.question, re.IGNORECASE))
                   else code for code in codes]
        where = ", ".join(f"{c.doc_name} at {c.distance:.3f}" for c in rows)
        named = " and ".join('"' + w + '"' for w in written)
        # A follow-up names a code through "it" when the code is only in the question it was joined to.
        how = "names" if all(code in self.question.lower() for code in codes) else "refers to"
        return (f"Kept for holding {named}, which the question {how}: a passage that holds the exact code "
                f"passes the support test whatever other words it lacks ({where}).")

    @property
    def needed_threshold(self) -> float | None:
        """The smallest threshold that would let a candidate through (None: no threshold would, since
        no candidate passes the support test)."""
        return self.closest_supported.distance if self.closest_supported else None


def gate(result: SearchResult, threshold: float, max_chunks: int = 4, rule: SupportRule = NO_SUPPORT_TEST) -> Gated:
    verdicts, kept = [], []
    for c in result.candidates:
        if c.distance > threshold:
            verdicts.append(OVER)
        elif not rule.passes(c):
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
    supported = [c for c in result.candidates if rule.passes(c)]
    closest_supported = min(supported, key=lambda c: c.distance, default=None)
    failed, missing, refusal, because = None, (), None, ""
    if not kept:
        near = [c for c, v in zip(result.candidates, verdicts) if v in (UNSUPPORTED, OFF_SUBJECT, JUDGED_OUT)]
        judged_out = [c for c, v in zip(result.candidates, verdicts) if v == JUDGED_OUT]
        elsewhere = [c for c, v in zip(result.candidates, verdicts) if v == OFF_SUBJECT]
        if closest is None:
            failed, refusal = EMPTY, refusal_text(threshold, result.question)
        elif not near:
            failed, refusal = DISTANCE, refusal_text(threshold, result.question)
            if result.absent_names:  # nor would any threshold let a passage through
                refusal += f"; the folder never mentions {quoted(result.absent_names)}, which it names"
                because = ABSENT  # the header says so, as it does when a passage was close (the reason)
        else:
            failed = SUPPORT
            # Words that none of the close passages holds, in the question's order.
            missing = lacked_by_all(near, result.terms)
            best = max(near, key=lambda c: c.support)
            if all(c.wordless for c in near):
                because, refusal = WORDLESS, wordless_text(result.question)
            elif result.absent_names:
                because, refusal = ABSENT, absent_text(result.question, result.absent_names)
            elif rule.judging and judged_out:
                best_judge = max((c.judge for c in judged_out if c.judge is not None), default=-math.inf)
                because = JUDGE
                refusal = judged_text(threshold, result.question, best_judge, rule.judge_cut, rule.judge_lang)
            elif unnamed := [c for c in near if c.lacks_names and (rule.judging or c.support + 1e-9 >= rule.needed_by(c))]:
                # Some held enough of the question's words, but not the name it asks about (or, for a
                # follow-up, the earlier question's number: "And for juniors?" after Level 2's price, and
                # the Level 1 passage, which is on the subject).
                names = tuple(dict.fromkeys(n for c in unnamed for n in c.lacks_names))
                because, refusal = UNNAMED, unnamed_text(threshold, result.question, names,
                                                         earlier=not set(names) & set(result.terms))
            elif elsewhere:
                because, refusal = ELSEWHERE, off_subject_text(threshold, result.question, result.subject[:4])
            else:
                because = WORDS
                refusal = unsupported_text(threshold, result.question, missing[:4], best.support,
                                           rule.needed_by(best))
                refusal += other_language_hint(result.language, [c.lang for c in near], result.folder_languages)
    elif not any(rule.holds_in_full(c) for c in kept):  # kept as close paraphrases only
        missing = lacked_by_all(kept, result.terms)
    return Gated(question=result.question, threshold=threshold, max_chunks=max_chunks,
                 candidates=result.candidates, verdicts=verdicts, citations=cite(kept), refusal=refusal,
                 closest=closest, rule=rule, failed=failed, missing=missing,
                 closest_supported=closest_supported, query=result.query, because=because)


def locator(c: Candidate) -> str:
    """Where a passage sits, for its citation: pages and section for a PDF, else the section (or title).
    A PDF with no headings has a section per page, named "Page N" (rag.extract): said once, not twice."""
    if c.page is not None:
        pages = f"p. {c.page}" if c.page_end in (None, c.page) else f"pp. {c.page}–{c.page_end}"
        own = c.section and c.section != f"Page {c.page}"
        return f"{pages} · {c.section}" if own else pages
    return c.section or (c.title or "start of file")


def fragment(c: Candidate) -> str:
    return f"#page={c.page}" if c.page is not None else f"#char={c.start},{c.end}"


def cite(kept: list[Candidate]) -> list[Citation]:
    return [Citation(n=i, chunk_id=c.chunk_id, doc_id=c.doc_id, doc_name=c.doc_name, title=c.title,
                     locator=locator(c), fragment=fragment(c), link=urlquote(c.doc_name) + fragment(c),
                     quote=c.content, distance=c.distance, start=c.start, end=c.end, page=c.page,
                     section="" if c.section == f"Page {c.page}" else c.section, version=c.version)
            for i, c in enumerate(kept, start=1)]

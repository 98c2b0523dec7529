"""Evidence: what a question asks for, worked out once, and how much of it each passage holds.

`analyze_question` reads a question (and, for a follow-up, the query it was searched with) against the
folder's lexical index once, into a frozen `Asked`: its content words (the support test's terms), the
names it writes (those the folder never mentions, and those it does use), numbers it writes as names,
codes it names or a follow-up refers to, a follow-up's subject (the words of the question before it) and
its measure words. `weigh` then measures each candidate passage against it: the IDF-weighted share of
the question's words it holds (`Weight.support`), the words it lacks, the names it lacks, the codes it
holds, how much of a follow-up's subject it (or its document) holds, and whether the question has any word
of its own. These are the gate's inputs (rag.deciding.gate decides on them): `weighed` writes them onto a
search's candidates, the first step of deciding (`Engine.search` weighs what the search stage ranked).

What it does not do: search, rank or decide. A passage's weight says what it holds, never whether that is
enough.

>>> from rag.indexing.bm25 import LexicalIndex
>>> class Folder:  # what weighing reads of a snapshot: its chunks, its lexical index, each chunk's document
...     chunks = ["Project Heron goes live on 3 March.", "The kiln is fired every Thursday."]
...     lexical = LexicalIndex.build(chunks, ["en", "en"])
...     language_shares = {"en": 2}
...     doc_of = None
>>> asked = analyze_question("When does Project Falcon go live?", "When does Project Falcon go live?", Folder)
>>> asked.terms, asked.absent_names
(('project', 'falcon', 'go', 'live'), ('falcon',))
>>> w = weigh(asked, Folder, [(0, "Project Heron goes live on 3 March.", "en", "heron.md")])[0]
>>> round(w.support, 2), w.missing, w.wordless
(0.28, ('falcon', 'go'), False)
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rag.indexing.snapshot import Snapshot
from rag.searching.followup import refers_back
from rag.searching.search import SearchResult
from rag.searching.terms import (MEASURES, acronyms, holds_value, identifier_numbers, number_tokens, question_names,
                                 question_terms)
from rag.text.languages import question_language
from rag.text.lexical import is_code


@dataclass(frozen=True)
class Asked:
    """What one question asks for, against one folder: computed once per question (`analyze_question`)."""

    question: str  # as the person asked it
    query: str  # what was searched (a follow-up joined to the question before it)
    terms: tuple[str, ...]  # the content words the support test looks for
    unknown_names: tuple[str, ...] = ()  # names (and numbers written as names) the folder never uses
    absent_names: tuple[str, ...] = ()  # of those, the ones not written as acronyms
    named: tuple[str, ...] = ()  # names the folder does use: a passage lacking one is about something else
    numbers: tuple[str, ...] = ()  # numbers written as names ("4" of "the Level 4 course")
    number_forms: tuple[tuple[str, ...], ...] = ()  # per number of `numbers`, the index tokens that write it
    codes: tuple[str, ...] = ()  # codes the question names ("err-4017")
    referred: tuple[str, ...] = ()  # codes a follow-up names through "it" (the question before it names them)
    subject: tuple[str, ...] = ()  # a follow-up's subject: the words of the question before it
    measures: tuple[str, ...] = ()  # words asking for a measure ("temperature"), held by a value of it
    lang: str = ""  # the question's language ("" when unclear): its words are also read with its analyzer

    @property
    def wordless(self) -> bool:
        """The question has no word of its own to look for ("What is it?", "E então?")."""
        return not self.terms


@dataclass(frozen=True)
class Weight:
    """How much of a question one passage holds (the fields of the same name on `rag.searching.search.Candidate`)."""

    support: float
    missing: tuple[str, ...]
    lacks_names: tuple[str, ...]
    codes: tuple[str, ...]
    subject_support: float | None
    subject_in_document: bool | None
    wordless: bool


def analyze_question(question: str, query: str, snapshot: Snapshot, lang: str | None = None) -> Asked:
    """The question's analysis against the folder of `snapshot` (its `chunks` and `lexical` index).

    Support is judged on the question as asked, not on `query`: a follow-up searched together with the
    previous question must still find its own words in the passage ("Capital of Peru?" after a question
    about uploads is not supported by a passage about uploads). A follow-up an LLM rewrote into a
    standalone question ("And where are they kept?" -> "Where are backup copies kept?") is judged on the
    rewrite's words."""
    lexical, has_chunks = snapshot.lexical, bool(snapshot.chunks)
    rewritten = query != question and not query.endswith(question)
    own = query if rewritten else question
    joined = not rewritten and query != question  # searched together with the question before it
    earlier_text = query[:-len(question)] if joined else ""
    # Its own words only: a follow-up with none ("Why?", "Há ou à?") is not supported by the passages that
    # hold the question before it (they would answer that question again, not this one).
    lang = question_language(own, snapshot.language_shares if has_chunks else ()) if lang is None else lang
    terms = tuple(question_terms(own, lang=lang))
    # Only a folder with something in it can be said never to mention a name; one a letter off a word it
    # uses may be a misspelling of it.
    # A unit written with a capital ("in degrees Celsius") is a measure, not a name: a passage giving "°C"
    # answers it, and a folder that never writes the word does not make the question about something absent.
    names, caps = [n for n in question_names(own) if n in terms and n not in MEASURES], acronyms(own)
    unknown = tuple(n for n in names if has_chunks and lexical.unused(n, lang) and not lexical.spelled_near(n, lang))
    absent = tuple(n for n in unknown if n not in caps)
    # Names the folder does use ("lantern" in "What is the deadline of Project Lantern?"): a passage that
    # lacks one is about something else ("Project Heron ... Deadline: 30 November"). Not acronyms.
    # A name under three letters or with a stop in it ("Jr", "U.S.") is an abbreviation the passage may
    # write out; a form one letter off counts as the name ("Asia" for "Asian").
    named = tuple(n for n in names if n not in caps and len(n) >= 3 and "." not in n
                  and has_chunks and not lexical.unused(n, lang))
    # A number written as a name ("the Level 4 course", "the 2025 regatta") is one: a folder that never writes
    # it has nothing on that level or year (2025 is not a misspelling of 2026), and a passage without it is
    # about another ("Level 1 costs 260 euros"; found by a user trial). A follow-up with no number of its own
    # keeps the one of the question it is joined to ("And for juniors?" after the Level 2 course's price).
    numbers, said = [n for n in identifier_numbers(own) if n in terms], own
    earlier = not numbers and joined
    if earlier:
        said = earlier_text
        numbers = identifier_numbers(said)
    forms = tuple(number_tokens(n, said) for n in numbers)
    if has_chunks and not earlier:  # one of its own the folder never writes is absent, like a name
        never = tuple(n for n, f in zip(numbers, forms) if not any(lexical.known(t) for t in f))
        unknown, absent = unknown + never, absent + never
    codes = tuple(t for t in terms if is_code(t))
    # A follow-up joined to the question it refers to ("And how do I fix it?" after "What does ERR-4017
    # mean?") names that question's codes through "it": a passage holding one passes the support test by
    # the code rule, as it would for "How do I fix ERR-4017?". The support share stays its own words'.
    referred: tuple[str, ...] = ()
    if joined and refers_back(question):
        referred = tuple(t for t in question_terms(earlier_text) if is_code(t) and t not in codes)
    # A follow-up joined to the question before it is about that question's subject: its words (those the
    # follow-up does not say itself) are what a passage must also hold to be about the same thing.
    subject: tuple[str, ...] = ()
    if joined:
        subject = tuple(t for t in question_terms(earlier_text, measures=False) if t not in terms)
    # Words asking for a measure ("At what temperature?", "How often…?", "Quanto custa…?"): held by a passage
    # that gives a value of it ("165 degrees Celsius", "every 7 months", "1.385 euros"), which seldom repeats
    # the word itself.
    measures = tuple(t for t in terms if t in MEASURES)
    return Asked(question=question, query=query, terms=terms, unknown_names=unknown, absent_names=absent,
                 named=named, numbers=tuple(numbers), number_forms=forms, codes=codes, referred=referred,
                 subject=subject, measures=measures, lang=lang or "")


def weighed(result: SearchResult, snapshot: Snapshot) -> SearchResult:
    """`result` with what the gate reads written onto it: the question analysed once (`analyze_question`:
    its terms, its names) and each candidate's weight (`weigh`: support, the words and names it lacks, the
    codes it holds, a follow-up's subject). Support is judged on the question as asked, not on the query it
    was searched with. `snapshot`: the one the search read."""
    t0 = time.perf_counter()
    asked = analyze_question(result.question, result.query, snapshot, result.language)
    weights = weigh(asked, snapshot, [(snapshot.pos[c.chunk_id], c.content, c.lang, c.doc_id)
                                      for c in result.candidates])
    candidates = [dataclasses.replace(
        c, support=w.support, missing=w.missing, unknown_names=asked.unknown_names, absent_names=asked.absent_names,
        lacks_names=w.lacks_names, codes=w.codes, subject_support=w.subject_support, wordless=w.wordless,
        subject_in_document=w.subject_in_document) for c, w in zip(result.candidates, weights)]
    timings = {**result.timings_ms, "support": (time.perf_counter() - t0) * 1000}
    return dataclasses.replace(result, candidates=candidates, terms=asked.terms, unknown_names=asked.unknown_names,
                               absent_names=asked.absent_names, subject=asked.subject, timings_ms=timings)


def weigh(asked: Asked, snapshot: Snapshot, passages: Sequence[tuple[int, str, str, Any]]) -> list[Weight]:
    """Each passage's `Weight` against the question, in order. A passage is (its position in the snapshot,
    its content, its language, its document's id). The name and subject lookups are shared across the
    passages of one question."""
    weigher = _Weigher(asked, snapshot)
    return [weigher.weight(*p) for p in passages]


class _Weigher:
    """One question's weighing, with the lookups its passages share: a name's forms one letter off (a
    vocabulary scan, only when a passage lacks the name) and whether a document holds the subject."""

    def __init__(self, asked: Asked, snapshot: Snapshot):
        self.asked, self.lexical, self.doc_of = asked, snapshot.lexical, snapshot.doc_of
        self._near: dict[str, tuple[str, ...]] = {}
        self._in_document: dict[tuple[Any, str], bool] = {}  # (doc_id, lang) -> a chunk of it holds the subject

    def weight(self, position: int, content: str, lang: str, doc_id: Any) -> Weight:
        a, lex = self.asked, self.lexical
        valued = [t for t in a.measures if holds_value(t, content)]
        support, missing = lex.support(position, a.terms, lang, valued)
        held_referred: tuple[str, ...] = ()
        if a.referred:
            _, lacking = lex.support(position, a.referred, lang)
            held_referred = tuple(t for t in a.referred if t not in lacking)
        on_subject = lex.support(position, a.subject, lang)[0] if a.subject else None
        return Weight(support=support, missing=missing, lacks_names=self._lacks(position, missing),
                      codes=tuple(t for t in a.codes if t not in missing) + held_referred,
                      subject_support=on_subject,
                      subject_in_document=None if on_subject is None
                      else on_subject > 0 or self._subject_in_document(doc_id, lang),
                      wordless=a.wordless)

    def _lacks(self, position: int, missing: tuple[str, ...]) -> tuple[str, ...]:
        a, lex = self.asked, self.lexical
        out = []
        for n in a.named:
            if n in missing:
                if n not in self._near:
                    self._near[n] = lex.near_tokens(n, a.lang)
                if not lex.holds_any(position, self._near[n]):
                    out.append(n)
        # Only the passage itself: counting a number held elsewhere in its section too (a year said once at
        # a section's start) answered 4 more near misses of the development sets and kept no more right ones.
        out += [n for n, forms in zip(a.numbers, a.number_forms)
                if n not in a.absent_names and not lex.holds_any(position, forms)]
        return tuple(out)

    def _subject_in_document(self, doc_id: Any, lang: str) -> bool:
        # The chunks holding a subject word (posting lists, under the candidate's language), then their
        # documents: no scan of the document's chunks, which a long PDF has by the thousand.
        key = (doc_id, lang)
        if key not in self._in_document:
            subject = self.asked.subject
            rows = np.concatenate([self.lexical.holders(t, lang) for t in subject]) if subject else ()
            self._in_document[key] = bool(len(rows)) and self.doc_of is not None \
                and bool(np.any(self.doc_of[rows] == doc_id))
        return self._in_document[key]

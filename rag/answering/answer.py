"""Answer: turn the gate's citations into an answer whose every claim ends with its [n], and check it.

One small interface, `Generator.generate(question, citations)`, yields the answer's text in pieces (a
streaming backend yields as it receives). `answer()` is the only caller, and it never calls a generator
for a refusal: when the gate kept nothing, the refusal text is the answer.

Two generators:

- `ExtractiveGenerator` (the default, offline) writes nothing of its own: it scores every sentence of
  the kept chunks, read under its section's heading, against the question with the same embedding
  model, keeps the best one and, up to
  `max_sentences`, the others that support the question about as well (`AnswerRule`: close to the best
  one's similarity and holding enough of the question's content words), no duplicates, and prints them
  in citation order, and in document order within a chunk, each followed by its [n]. Every character of
  its answer, apart from the markers and the joining spaces, is a character of a quote. `last_chosen`
  says which sentences it chose, their scores and their lexical support.
- `LLMGenerator` (`rag.answering.prompt`) asks an OpenAI-compatible server the user runs, with numbered, delimited
  sources and a prompt capped at `context_tokens`. When the server cannot be reached, `answer()` shows
  the extractive answer and says why in the note.

After every answer, `answer()` runs the citation check (`rag.deciding.citations.check_citations`): its flags go
beside the answer, and the fixed no-answer sentence makes the answer a refusal.

What it does not do: retrieve or gate (the engine and `rag.deciding.gate` do), check citations (`rag.deciding.citations`),
handle follow-ups (`rag.searching.followup`), or render anything: the app writes an answer's Markdown with its
links (`ui.linkify`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from rag.indexing.chunk import prose_sentences
from rag.deciding.citations import (NO_ANSWER_SENTENCE, Citation, CitationCheck, as_quoted, check_citations,
                                    numbers_text)
from rag.indexing.embed import Embedder
from rag.indexing.multilingual import MultilingualEmbedder
from rag.searching.followup import referred_words
from rag.deciding.gate import Gated
from rag.text.lexical import analyze, fold, term_tokens
from rag.text.languages import LANGUAGES
from rag.answering.llm import LLMError
from rag.answering.generator import Generator
from rag.answering.prompt import LLMGenerator, Prompt, llm_client
from rag.searching.terms import holds_value, identifier_numbers, question_terms
from rag.settings import Tuning
from rag.text.words import alternation, every
from rag.deciding.explain import refusal_sentence


@dataclass(frozen=True)
class ChosenSentence:
    n: int
    text: str
    score: float  # cosine similarity to the question
    start: int  # offsets in the citation's quote
    end: int
    support: float = 1.0  # share of the question's content words the sentence holds (`sentence_support`)
    words: tuple[str, ...] = ()  # those words (`question_words_held`)
    scrap: bool = False  # a table's row that holds none of the question's words itself (`_is_scrap`)


@dataclass
class Answer:
    text: str
    refused: bool
    mode: str  # "refusal" (the gate said no), "extractive", or "llm"
    chosen: list[ChosenSentence] = field(default_factory=list)
    note: str = ""  # why a fallback answered, which sources were left out, ...
    flags: list[str] = field(default_factory=list)  # citation problems, shown beside the answer
    prompt_tokens: int | None = None  # tiktoken count of the LLM prompt that produced this answer
    check: CitationCheck | None = None
    standalone_question: str | None = None  # what a follow-up was answered (and searched) as
    quoted: list[tuple[int, int]] = field(default_factory=list)  # spans of text quoted verbatim (extractive)
    # The citations as this answer quotes them: the gate's, each placed at the rows of a sheet its chosen sentences
    # quote (`rag.deciding.citations.as_quoted`; an LLM's answer quotes nothing known: the gate's as they are).
    # [] for a refusal by the gate.
    citations: list[Citation] = field(default_factory=list)


# --- extractive -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AnswerRule:
    """Which sentences besides the best one an extractive answer keeps. The best sentence (closest to the
    question) is always kept; another is kept when it

    - is within `margin` of the best sentence's cosine similarity to the question,
    - holds at least `min_support` of the question's content words (`sentence_support`), and
    - supports the question about as well as the best-supported sentence chosen so far: its support is at
      most `support_margin` below that one's, or (`new_words`) it holds a question word that no sentence
      chosen so far holds (the other half of a two-part question).

    None turns a test off; `EVERY_SENTENCE` is the earlier rule: the best `max_sentences`,
    whatever they say. The parameters were chosen on the dev half of the SQuAD 2.0 questions (English and
    Portuguese) and are reported on the test half and the sample folder: bench/answer_quality.py.
    """

    margin: float | None = Tuning.answer_margin
    min_support: float | None = Tuning.answer_min_support
    support_margin: float | None = Tuning.answer_support_margin
    new_words: bool = Tuning.answer_new_words

    @classmethod
    def of(cls, tuning: Tuning) -> "AnswerRule":
        """The rule a tuning holds (`Tuning.answer_*`)."""
        return cls(tuning.answer_margin, tuning.answer_min_support, tuning.answer_support_margin, tuning.answer_new_words)

    def keeps(self, best: ChosenSentence, c: ChosenSentence, covered: set[str] | frozenset[str] = frozenset(),
              support: float | None = None) -> bool:
        """Whether `c` may join an answer whose best sentence is `best`; `covered`: the question words
        the sentences chosen so far hold; `support`: the highest support among them (default: the best's).
        Measured against the best-supported one, not the closest: "Who leads Project Heron?" read Heron's
        description first (2 of 3 words), then "Lead: Tomasz Vierling." (3 of 3), and "Budget: 18,400
        euros." (2 of 3, as many as the description) padded the answer."""
        if self.margin is not None and c.score < best.score - self.margin - 1e-9:
            return False
        if self.min_support is not None and c.support + 1e-9 < self.min_support:
            return False
        bar = best.support if support is None else support
        if self.support_margin is None or c.support + 1e-9 >= bar - self.support_margin:
            return True
        return self.new_words and any(w not in covered for w in c.words)


ANSWER_RULE = AnswerRule.of(Tuning())  # the shipped rule
EVERY_SENTENCE = AnswerRule(None, None, None, False)  # the earlier rule: the best few, however far off


def question_words_held(terms: Sequence[str], text: str) -> tuple[str, ...]:
    """The question's content words (`question_terms`) a sentence holds, in the question's order: a word
    counts when all its index tokens are among the sentence's tokens under the English or the Portuguese
    analyzer (the sentence's language is not known here; a word found under either counts).

    >>> terms = question_terms("At what time does the Ponta Azul lighthouse keeper log the tide?")
    >>> question_words_held(terms, "The lighthouse keeper of Ponta Azul logs the tide at 04:40 every morning.")
    ('time', 'ponta', 'azul', 'lighthouse', 'keeper', 'log', 'tide')
    >>> question_words_held(terms, "The harbour office opens at nine.")
    ()
    >>> question_words_held(question_terms("How big are the plots?"), "Plots measure 3 by 6 metres.")
    ('big', 'plots')
    """
    found: set[str] = set()
    for lang in LANGUAGES:
        tokens = set(analyze(text, lang))
        found.update(t for t in terms if t not in found and all(x in tokens for x in term_tokens(t, lang)))
    # A word asking for a measure is held by a value of it, as in the support test ("How big?": "3 by 6 m").
    found.update(t for t in terms if t not in found and holds_value(t, text))
    return tuple(t for t in terms if t in found)


def sentence_support(terms: Sequence[str], text: str) -> float:
    """The share of a question's content words a sentence holds (`question_words_held`); no terms: 1.0.

    >>> sentence_support(["lighthouse", "tide", "time"], "The lighthouse keeper logs the tide.")
    0.6666666666666666
    """
    return len(question_words_held(terms, text)) / len(terms) if terms else 1.0


class ExtractiveGenerator:
    name = "extractive"
    # A follow-up's sentences are picked by the question as asked first, by its own words, and only then by
    # its searched form (the earlier question joined to it; `ranked`): the search already brought the
    # context's passages, the gate judged them on the follow-up's own words, and the joined form alone would
    # pick the earlier question's answer again ("And how many birds are in the colony?" after "Where does the
    # heron migrate?" answered with the migration). `answer()` passes it the searched form as `searched`.
    answers_as_asked = True

    def __init__(self, embedder: Embedder, max_sentences: int = 3, min_words: int = 3,
                 rule: AnswerRule = ANSWER_RULE, side: MultilingualEmbedder | None = None):
        """`side`: the multilingual model, which ranks the sentences when a kept passage is in another language
        than the question's (MiniLM's similarity across languages says next to nothing)."""
        self.embedder = embedder
        self.side = side
        self.max_sentences = max_sentences
        self.min_words = min_words
        self.rule = rule
        self.last_chosen: list[ChosenSentence] = []

    def ranked(self, question: str, citations: list[Citation], searched: str | None = None) -> list[ChosenSentence]:
        """Every sentence of the kept chunks (the same words once; very short ones left out when their
        chunk has others), best cosine similarity first, each with its lexical support.

        `searched`: a follow-up's searched form (the earlier question joined to it). Its sentences are then
        ranked by how many of the follow-up's own words they hold first, and by closeness to the searched
        form among equals: closeness to the follow-up alone ("And under that amount?") reads no subject and
        found the late fee "on the outstanding amount" beside the approval rule asked about; closeness to
        the searched form alone finds the earlier answer again. A word the follow-up only points back with
        ("that amount": `rag.searching.followup.referred_words`) is not one of its own."""
        pool: list[tuple[int, int, int, str]] = []
        heads: list[str] = []
        seen: set[str] = set()
        for c in citations:
            spans = _leaning_joined(c.quote, [_without_row_pipes(c.quote, s, e) for s, e in prose_sentences(c.quote)])
            # A heading inside the passage (a PDF's title line, which its fonts did not mark as one) names
            # what the passage is about and answers nothing: a trial got "Regatta Rules 2026 [1]" quoted as
            # the answer to "Who won the 2025 regatta?" and to most questions on that PDF.
            headings = {fold(h) for h in (c.title, *c.section.split(" > ")) if h}
            for s, e in spans:
                # One line in the answer: a sentence wrapped over lines (or PDF blocks) keeps its words, not
                # its line breaks, which Markdown would show as a new paragraph. `start`/`end` keep its place.
                text = " ".join(c.quote[s:e].split())
                key = fold(text)
                short = len(text.split()) < self.min_words or key.rstrip(".:") in headings
                if key in seen or short and len(spans) > 1:
                    continue
                seen.add(key)
                pool.append((c.n, s, e, text))
                heads.append(c.section)
        if not pool:
            return []
        # Each sentence is read under its heading, as a reader would: "Lead: Tomasz Vierling." answers "Who
        # leads Project Heron?" under "Project Heron", and alone it names no project at all.
        read = [f"{h}: {p[3]}" if h else p[3] for h, p in zip(heads, pool)]
        if self.side is not None and any(c.multilingual_distance is not None for c in citations):
            # A passage in another language: "Qual é o tamanho máximo de um arquivo enviado?" was answered from
            # the English upload notes with the sentence after "A single upload may be at most 50 MB." by MiniLM.
            sims = self.side.embed_batch(read) @ self.side.embed_queries([searched or question])[0]
        else:
            vecs = self.embedder.embed_cached([searched or question] + read)
            sims = vecs[1:] @ vecs[0]
        terms = question_terms(question)
        if searched:
            pointing = referred_words(question)
            terms = [t for t in terms if fold(t) not in pointing]
        out = []
        for i in np.argsort(-sims, kind="stable"):
            held = question_words_held(terms, read[i])
            if own := identifier_numbers(pool[i][3]):
                # A sentence naming its own number is not held by its heading's: "Level 3 costs 350 euros"
                # under "Level 2 and Level 3" does not answer "How much does the Level 2 course cost?".
                held = tuple(t for t in held if not t.isdigit() or t in own)
            out.append(ChosenSentence(pool[i][0], pool[i][3], float(sims[i]), pool[i][1], pool[i][2],
                                      len(held) / len(terms) if terms else 1.0, held,
                                      _is_scrap(pool[i][3], terms)))
        if searched:
            out.sort(key=lambda c: -c.support)  # stable: closeness among equals
        # A table's row that holds none of the question's words goes after every sentence that is not one: a
        # trial's answer about a slide opened with two rows of numbers ("1 | 580 | 105 [1] 17 | 750 | 130 [1]"),
        # near in meaning under the slide's title, before the sentence that answered.
        out.sort(key=lambda c: c.scrap)  # stable
        return out

    def select(self, ranked: Sequence[ChosenSentence], rule: AnswerRule | None = None) -> list[ChosenSentence]:
        """From `ranked` (best first): the best sentence, then those `rule` keeps, up to `max_sentences`,
        in citation order and document order within a chunk."""
        rule = self.rule if rule is None else rule
        if ranked and rule.support_margin is not None:
            # After the closest sentence, the others are weighed by how many of the question's words they
            # hold, then by closeness, each against the best-supported chosen so far: "Who leads Project
            # Heron?" is nearest "Deadline: 30 November 2024." under Heron's heading (MiniLM reads the
            # heading's words), then "Budget: 18,400 euros.", and only then "Lead: Tomasz Vierling.", the one
            # holding "leads" too; taken in closeness order, all three were quoted.
            ranked = [ranked[0]] + sorted(ranked[1:], key=lambda c: -c.support)  # stable: closeness among equals
        chosen: list[ChosenSentence] = []
        keys: list[str] = []
        covered: set[str] = set()
        for c in ranked:
            if chosen and not rule.keeps(chosen[0], c, covered, max(x.support for x in chosen)):
                continue
            if chosen and c.scrap and not chosen[0].scrap:
                continue  # a scrap of a table beside a sentence that answers adds only noise
            key = " ".join(fold(c.text).split())
            # The same words twice (a PDF and its source, a sentence cut by a page break) say nothing new.
            if any(key in k or k in key for k in keys):
                continue
            keys.append(key)
            chosen.append(c)
            covered.update(c.words)
            if len(chosen) == self.max_sentences:
                break
        return sorted(chosen, key=lambda c: (c.n, c.start))

    def choose(self, question: str, citations: list[Citation], searched: str | None = None) -> list[ChosenSentence]:
        return self.select(self.ranked(question, citations, searched))

    def generate(self, question: str, citations: list[Citation], searched: str | None = None) -> Iterator[str]:
        self.last_chosen = self.choose(question, citations, searched)
        for i, c in enumerate(self.last_chosen):
            yield ("" if i == 0 else " ") + f"{c.text} [{c.n}]"


# The pronouns that lean on the sentence before (the word files' `leaning`).
_LEANING = re.compile(alternation(every("leaning")), re.IGNORECASE)


def _leaning_joined(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    r"""Sentences that open with a pronoun joined to the sentence before them in the same paragraph: quoted
    alone, "She answers email at secretary@…" read as the bosun's address under "Bosun: Teresa Lindqvist."
    (a user trial), and "It costs 260 euros" named no course. Not across a blank line or a list item.

    >>> t = "- Bosun: Teresa.\n- Secretary: Ana. She answers email. It is read daily.\n\nIt closes at 5."
    >>> [t[s:e] for s, e in _leaning_joined(t, prose_sentences(t))]
    ['- Bosun: Teresa.', '- Secretary: Ana. She answers email. It is read daily.', 'It closes at 5.']
    """
    out: list[tuple[int, int]] = []
    for s, e in spans:
        gap = text[out[-1][1]:s] if out else "\n\n"
        if _LEANING.match(text, s) and "\n\n" not in gap and not re.search(r"\n\s*([-*•]|\d+[.)])", gap):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _is_scrap(text: str, terms: Sequence[str]) -> bool:
    """A row of a table (cells parted by " | ": a document's table, a slide's, a sheet's row) that holds none of
    the question's words itself, its heading apart (under a slide's title any row reads as on the subject).

    >>> terms = question_terms("How much of the records should be put aside for testing?")
    >>> _is_scrap("1 | 580 | 105", terms), _is_scrap("Typically put aside 20 to 30% of your records for testing.", terms)
    (True, False)
    >>> _is_scrap("Split: testing | Share: 20%", terms)
    False
    """
    return " | " in text and not question_words_held(terms, text)


def _without_row_pipes(text: str, start: int, end: int) -> tuple[int, int]:
    """A Markdown table row's span without its outer pipes, which read as noise in a sentence of an answer;
    what is left is still a piece of the quote. Other spans as they are.

    >>> t = "| ERR-3004 | A PDF is protected | Remove the password |"
    >>> t[slice(*_without_row_pipes(t, 0, len(t)))]
    'ERR-3004 | A PDF is protected | Remove the password'
    """
    if not text[start:end].lstrip().startswith("|"):
        return start, end
    while start < end and text[start] in "| \t":
        start += 1
    while end > start and text[end - 1] in "| \t":
        end -= 1
    return start, end


def make_generator(settings, embedder: Embedder, side: MultilingualEmbedder | None = None) -> Generator:
    """The generator the settings ask for: extractive, or an LLM with the extractive as its fallback. `side`: the
    multilingual model, for answers from passages in another language than the question's."""
    extractive = ExtractiveGenerator(embedder, max_sentences=settings.tuning.answer_sentences,
                                     rule=AnswerRule.of(settings.tuning), side=side)
    if settings.answer_mode != "llm":
        return extractive
    if not settings.llm_base_url:
        return _Unconfigured(extractive)
    return LLMGenerator(llm_client(settings), settings.tuning.llm_context_tokens, fallback=extractive)


class _Unconfigured:
    """answer_mode = "llm" without a URL: say so, and answer extractively."""

    name = "llm"

    def __init__(self, fallback: Generator):
        self.fallback = fallback

    def generate(self, question: str, citations: list[Citation]) -> Iterator[str]:
        raise LLMError("answer_mode is \"llm\" but llm_base_url is not set")
        yield ""  # pragma: no cover  (makes this a generator)


# --- the answer -----------------------------------------------------------------------------------

def answer(gated: Gated, generator: Generator, *, standalone: str | None = None,
           on_text: Callable[[str], None] | None = None) -> Answer:
    """The answer for a gated search; a refusal never reaches the generator.

    `standalone`: the question as it was searched, when it differs from the one asked (a follow-up);
    the answer shows it, and an LLM answers it (the extractive answer picks its sentences by the question
    as asked, the searched form breaking ties: `ExtractiveGenerator.answers_as_asked`). `on_text(piece)`
    sees each piece as it streams; if the stream fails and a fallback answers, the final `Answer.text`
    replaces what was shown.
    """
    shown = standalone if standalone and standalone != gated.question else None
    if refusal_sentence(gated) is not None:
        return Answer(text=refusal_sentence(gated), refused=True, mode="refusal", standalone_question=shown)
    def run(g: Generator) -> Iterator[str]:
        if getattr(g, "answers_as_asked", False):
            return g.generate(gated.question, gated.citations, searched=shown)
        return g.generate(shown or gated.question, gated.citations)

    used, note, pieces = generator, "", []
    try:
        for piece in run(generator):
            pieces.append(piece)
            if on_text:
                on_text(piece)
        if not "".join(pieces).strip() and getattr(generator, "fallback", None) is not None:
            raise LLMError("the LLM server returned an empty answer")
    except LLMError as exc:
        fallback = getattr(generator, "fallback", None)
        if fallback is None:
            raise
        used, note = fallback, f"{exc}; showing the extractive answer"
        pieces = list(run(fallback))
    text = "".join(pieces).strip()
    prompt: Prompt | None = getattr(used, "last_prompt", None)
    given = prompt.given if prompt else [c.n for c in gated.citations]
    if prompt and prompt.note:
        note = prompt.note
    chosen = list(getattr(used, "last_chosen", []))
    quoted = _quoted_spans(text, chosen)
    check = check_citations(text, given, quoted)
    out = Answer(text=text, refused=False, mode=used.name, chosen=chosen, note=note, flags=check.flags,
                 prompt_tokens=prompt.tokens if prompt else None, check=check, standalone_question=shown,
                 quoted=quoted, citations=as_quoted(gated.citations, [(c.n, c.start, c.end) for c in chosen]))
    if check.refusal:
        out.text, out.refused = NO_ANSWER_SENTENCE, True
        read = numbers_text(given)
        out.note = "; ".join(x for x in (f"the LLM read sources {read} and found no answer in them", out.note) if x)
    return out


def _quoted_spans(text: str, chosen: Sequence[ChosenSentence]) -> list[tuple[int, int]]:
    """Where the extractive answer's quotes sit in its text: brackets inside a quote (a document that
    writes "[1]") are the document's words, not citations."""
    spans, pos = [], 0
    for i, c in enumerate(chosen):
        pos += 1 if i else 0
        if text[pos:pos + len(c.text)] != c.text:
            return []
        spans.append((pos, pos + len(c.text)))
        pos += len(c.text) + len(f" [{c.n}]")
    return spans if pos == len(text) else []


# --- rendering (the app's; kept here until it moves) ---------------------------------------------

"""Terms: the question's words, as the support test, the evidence and the extractive answer read them.

Its content words (`question_terms`), names and numbers written as names, acronyms, the measure words and
what holds a value of each (`holds_value`). Their words are data, read from rag/text/wordlists/ (`rag.text.words`);
the patterns are built from those lists below.

What it does not do: analyse or index passages. The analyzer, the tokens a word becomes under it
(`term_tokens`), codes (`is_code`) and the BM25 index are `rag.text.lexical`'s, which this module reads.

>>> question_terms("Which Level 2 course costs 45 euros?"), identifier_numbers("Which Level 2 course costs 45 euros?")
(['level', '2', 'course', 'costs', '45', 'euros'], ['2'])
"""

from __future__ import annotations

import functools
import re
import unicodedata

from rag.settings import Tuning
from rag.text.languages import nouns_capitalised, question_language
from rag.text.lexical import TOKEN, WORD_PART, fold, question_stop_words, stop_words, term_tokens
from rag.text.words import WORDLIST_LANGUAGES, alternation, every, groups
from rag.text.words import words as word_list


# Words of asking rather than of the subject: a question's content words are what is left without them and
# without the stopwords of English, Portuguese and the question's own language ("What does the app do with
# PDFs?" -> app, pdfs; "¿Cuál es la receta del pastel?" -> receta, pastel). The English
# stopword list BM25 uses is short (33 words), so the usual function words are listed in the word files:
# the function words (which the follow-up rules read too) and the other words of asking, folded.
FUNCTION_WORDS = frozenset(fold(w) for w in every("function_words"))
QUESTION_FILLER = FUNCTION_WORDS | frozenset(fold(w) for w in every("asking_words"))


@functools.lru_cache(maxsize=None)
def _not_content(lang: str = "") -> frozenset[str]:
    """What is never a question's own word: the stopwords of the languages with word lists and their words
    of asking; for a question in another language (`lang`), the stopwords its analyzer drops (no passage
    holds them as words) and its longer stopwords-iso list, which holds its words of asking ("cuántos",
    "wie viele"), since no word list of it does."""
    own = stop_words(lang) | question_stop_words(lang) if lang and lang not in WORDLIST_LANGUAGES else frozenset()
    return frozenset().union(*(stop_words(x) for x in WORDLIST_LANGUAGES)) | QUESTION_FILLER | own


def question_terms(question: str, measures: bool = True, lang: str | None = None) -> list[str]:
    """The question's own content words, lowercased, in order, once each: every word that is neither a
    stopword (`_not_content`) nor a word of asking. Codes stay whole (`err-4017`). `lang`: the question's
    language when the caller knows it (else identified here).

    >>> question_terms("Qual é a receita do bolo de chocolate?")
    ['receita', 'bolo', 'chocolate']
    >>> question_terms("¿Cuál es la receta del pastel de chocolate?"), question_terms("Wie hoch ist die Miete?")
    (['receta', 'pastel', 'chocolate'], ['miete'])
    >>> question_terms("What does ERR-4017 mean?")
    ['err-4017']
    >>> question_terms("What value of k does it use?")
    ['value', 'k']

    `measures=False` leaves out the word after "how", which asks for a measure ("how long", "how big"):
    the answer gives the measure ("35 minutes", "50 MB"), seldom the word, so it says nothing of what the
    question is about (`rag.searching.search`, a follow-up's subject). The support test keeps it: left out there too
    (with "quanto custa" and "valor" alike), the sample's figures did not move and SQuAD English's
    calibrated threshold fell (0.723 -> 0.703), two dev right passages fewer (bench/RESULTS.md).

    >>> question_terms("How long do I bake the cake? How big can an upload be?", measures=False)
    ['bake', 'cake', 'upload']
    """
    stop = _not_content(question_language(question) if lang is None else lang)
    out: dict[str, None] = {}
    previous = ""
    for m in TOKEN.finditer(unicodedata.normalize("NFC", question.lower())):
        tok = m.group()
        after_how, previous = previous == "how", tok
        if after_how and not measures:
            continue
        whole = WORD_PART.findall(tok)
        parts = [p for p in whole if fold(p) not in stop]
        if len(whole) > 1 and parts:
            out.setdefault(tok, None)
        elif parts:
            out.setdefault(parts[0], None)
    return list(out)


# A word is written as a name when it holds a capital and does not open a sentence ("Peru", "YouTube", "PhD",
# "APA"); the question's first word, and one after . ? or !, are capitalised by grammar, not by meaning. In a
# language that capitalises every noun (German: "Miete", "Wohnung") a first capital marks no name: there
# only a capital after the first letter does ("YouTube", "PhD", "APA").
_SENTENCE_START = re.compile(r"(?:^|[.?!]\s+)[\"'“‘(¿¡]*$")


def question_names(question: str) -> list[str]:
    """The question's content words (`question_terms`, in their form) that it writes as names: with a
    capital letter, not at the start of a sentence.

    >>> question_names("What is the upload limit for videos on YouTube?")
    ['youtube']
    >>> question_names("Qual é a capital do Peru? E do Chile?")
    ['peru', 'chile']
    >>> question_names("Where are backups kept?")
    []
    >>> question_names("Wie hoch ist die Miete für die Wohnung bei YouTube?")
    ['youtube']
    """
    text = unicodedata.normalize("NFC", question)
    lang = question_language(text)
    terms = set(question_terms(text, lang=lang))
    # Where every noun has a capital, only one after the word's first letter marks a name.
    first = 1 if nouns_capitalised(lang) else 0
    out: dict[str, None] = {}
    for m in TOKEN.finditer(text):
        word = m.group()
        if word.lower() in terms and any(ch.isupper() for ch in word[first:]) and not _SENTENCE_START.search(
                text[:m.start()]):
            out.setdefault(word.lower(), None)
    return list(out)


def acronyms(question: str) -> set[str]:
    """The question's words written in capitals only, two to five letters ("PPP", "PC", "EUA"), folded: an
    acronym the folder never uses may still be what it spells out in full.

    >>> sorted(acronyms("Is the PC version of PPP on AWS? And OneDrive, YouTube, I?"))
    ['aws', 'pc', 'ppp']
    """
    return {m.group().lower() for m in TOKEN.finditer(unicodedata.normalize("NFC", question))
            if 2 <= len(m.group()) <= 5 and m.group().isalpha() and m.group().isupper()}


# A question word that asks for a measure, and how a passage writes a value of it: "At what temperature?"
# is answered by "Preheat the oven to 165 degrees Celsius", which never says "temperature". Such a word
# counts as held by a passage that holds a value of its kind (`holds_value`). The words and units are in
# the word files; each kind's pattern is built here from them.
MEASURES = {w: kind for kind in groups("measures") for w in every(f"measures.{kind}")}
# "How long is the lease?" asks for a duration, "How long is the bench?" for a size: either holds it.
_ALSO = {w: every(f"also.{w}") for w in groups("also")}


def _units(*kinds: str) -> tuple[str, ...]:
    return tuple(w for kind in kinds for w in every(f"units.{kind}"))


_NUMBER = r"\d[\d.,]*\s*"
_PERIOD = alternation(_units("duration", "period"))
# A currency sign (not a word) may stand before the figure too: "€5", "£ 20".
_CURRENCY_SIGNS = tuple(t for t in _units("currency") if not re.search(r"\w", t))
_VALUES = {
    "temperature": _NUMBER + alternation(_units("temperature")),
    # "free of charge" gives a price too: "How much does it cost to hire a Laser dinghy?" and "Members may book
    # them free of charge" (a trial's answer quoted the sentence before it, which holds the boat's name).
    "cost": "(" + _NUMBER + alternation(_units("currency")) + "|" + alternation(_CURRENCY_SIGNS) + r"\s*\d|\b"
            + alternation(every("free_of_charge")) + ")",
    "time": r"\b\d{1,2}\s*([:h]\d{2}\b|[ap]\.?m\b)",
    "duration": _NUMBER + alternation(_units("duration")),
    # "every 7 months", "each week", "twice a year", "cada 6 meses", "todos os anos": not "each exit door".
    "frequency": r"\b(" + alternation(every("frequency_each")) + r"\s+(\d+\s+|" + alternation(every("frequency_between"))
                 + r"\s+)?" + _PERIOD + "|" + alternation(every("frequency_all")) + r"\s+" + _PERIOD + "|"
                 + alternation(every("frequency_words")) + ")",
    # "3 by 6 metres", "1.2 x 2.4 m", "40 m²", "2 hectares", "12 metros quadrados".
    "size": r"(\b\d[\d.,]*\s*" + alternation(every("size_between"), bounded=False) + r"\s*\d|" + _NUMBER
            + alternation(_units("length", "area")) + ")",
}

# A number the question writes as a name ("the Level 4 course", "the 2025 regatta", "nível 2", "in 1066"), not
# as a quantity: not followed by a unit of any kind, a currency or a percent sign ("a 60 MB file", "3 days",
# "20%"), not one of a grouped or decimal figure or a time ("5,000 euros", "2.5", "10:30"), not after a
# currency sign.
_QUANTITY_AFTER = re.compile(r"\s*" + alternation(_units(*groups("units")) + every("quantity_after")
                                                  + every("size_between")), re.IGNORECASE)
_CURRENCY_BEFORE = re.compile(alternation(_CURRENCY_SIGNS) + r"\s*$")
_NUMBER_RUN = re.compile(r"(?<![\w.,:/-])\d+(?![\w]|[.,:/-]\d)")
# ... nor after words that make it a quantity: "more than 2000 pages", "até 3 pessoas", "about 40".
_QUANTITY_BEFORE = re.compile(r"\b" + alternation(every("quantity_before"), bounded=False) + r"\s*$", re.IGNORECASE)
# ... nor a count: a number below `Tuning.count_below` that counts the word after it, with a word of asking or
# nothing before it ("Can 4 people share a berth?", "Podem 3 pessoas...?"). A label has its own word before
# it ("Level 4", "sala 12"), and a year has four figures and is a name wherever it stands ("the 2025
# regatta"). The word rules take no settings: they read the shipped tuning's value.
_COUNT_BELOW = Tuning.count_below
# A small number the passage may write as a word: "three boats" holds the 3 of "3 boats".
NUMBER_WORDS = {lang: list(word_list(lang, "number_words")) for lang in WORDLIST_LANGUAGES}


def word_rules() -> str:
    """The word lists and patterns the support test reads (measure words and their values, words of asking,
    what makes a number a quantity), as one text: part of the calibration's fingerprint, so that adding a
    measure word recalibrates a stored folder as a new gate rule does (`rag.deciding.rule.GATE_RULES`)."""
    return repr((sorted(MEASURES.items()), sorted(_VALUES.items()), sorted(_ALSO.items()), sorted(QUESTION_FILLER),
                 _QUANTITY_AFTER.pattern, _QUANTITY_BEFORE.pattern, sorted(NUMBER_WORDS.items()),
                 ("count below", _COUNT_BELOW)))


def identifier_numbers(question: str) -> list[str]:
    """The numbers a question writes as names, in order, once each (see above): a passage without the
    number is about another level, year or room, however much else of the question it holds.

    >>> identifier_numbers("What is the Level 4 course price? Who won the 2025 regatta?")
    ['4', '2025']
    >>> identifier_numbers("Can I upload a 60 MB file, over 5,000 euros, at 10:30, 2.5 times or for 3 days?")
    []
    >>> identifier_numbers("Qual é o preço do nível 2 na sala 12? E ERR-4017, UTF-8, 20% ou €5?")
    ['2', '12']
    >>> identifier_numbers("Um PDF com mais de 2000 páginas, a 60 Hz, for about 40 people?")
    []
    >>> identifier_numbers("Can 4 people share a berth?"), identifier_numbers("Podem 3 pessoas dormir no barco 7?")
    ([], ['7'])
    """
    text = unicodedata.normalize("NFC", question)
    out: dict[str, None] = {}
    for m in _NUMBER_RUN.finditer(text):
        before = text[max(0, m.start() - 20):m.start()]
        if (_QUANTITY_AFTER.match(text, m.end()) or _CURRENCY_BEFORE.search(before)
                or _QUANTITY_BEFORE.search(before) or _counts(text, m, before)):
            continue
        out.setdefault(m.group(), None)
    return list(out)


def _counts(text: str, number: re.Match, before: str) -> bool:
    """Whether the number counts the word after it (see `_COUNT_BELOW`): small, a word right after it, and
    before it a word of asking, a stopword or nothing."""
    word_before = re.search(r"([^\W\d_]+)\W*$", before)
    return (int(number.group()) < _COUNT_BELOW and re.match(r"\s+[^\W\d_]", text[number.end():]) is not None
            and (word_before is None or fold(word_before.group(1)) in _not_content()))


def number_tokens(number: str, question: str = "") -> tuple[str, ...]:
    """The index tokens that write a number: its digits, and for a small one its words in both languages,
    unless `question` writes it as a label after a word ("Level 2", "sala 3"): "two weekends" is not Level 2.

    >>> number_tokens("3"), number_tokens("2025"), number_tokens("2", "How much is Level 2?")
    (('3', 'three', 'tres'), ('2025',), ('2',))
    >>> number_tokens("2", "What are the 2 types of rock?")
    ('2', 'two', 'dois')
    """
    out = {number: None}
    stop = _not_content()
    label = any(fold(m.group(1)) not in stop for m in re.finditer(
        r"([^\W\d_]+)\s+" + re.escape(number) + r"(?!\d)", unicodedata.normalize("NFC", question.lower())))
    if not label and number.isdigit() and 1 <= int(number) <= 12 and number == str(int(number)):
        for lang, words in NUMBER_WORDS.items():
            out.update((t, None) for t in term_tokens(words[int(number) - 1], lang))
    return tuple(out)


def holds_value(term: str, text: str) -> bool:
    """Whether `text` holds a value of the measure `term` asks for (False for a word that asks for none).

    >>> holds_value("temperature", "Preheat the oven to 165 degrees Celsius."), holds_value("custa", "São 45 euros.")
    (True, True)
    >>> holds_value("valor", "Uma caução de 4.155 euros."), holds_value("dura", "O contrato dura 5 anos.")
    (True, True)
    >>> holds_value("temperature", "Keep it in the fridge."), holds_value("weather", "It is 20 degrees.")
    (False, False)
    >>> holds_value("often", "Inspected every 7 months."), holds_value("often", "One beside each exit door.")
    (True, False)
    >>> holds_value("size", "Standard plots measure 3 by 6 metres."), holds_value("long", "The bench is 2 m long.")
    (True, True)
    >>> holds_value("size", "There are 42 plots."), holds_value("large", "It is 5 minutes away.")
    (False, False)
    >>> holds_value("cost", "Members may book them free of charge."), holds_value("custa", "A inscrição é gratuita.")
    (True, True)
    >>> holds_value("cost", "Free time after lunch."), holds_value("price", "Feel free to ask.")
    (False, False)
    """
    kinds = (MEASURES[term],) + _ALSO.get(term, ()) if term in MEASURES else ()
    return any(re.search(_VALUES[kind], text, re.IGNORECASE) is not None for kind in kinds)

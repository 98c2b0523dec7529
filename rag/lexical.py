"""Lexical: the BM25 side of search (bm25s), with a language-aware analyzer.

The analyzer lowercases, splits on Unicode word characters (so `devolução` is one word), keeps
joined codes whole as well as in parts (`ERR-4017` gives `err-4017`, `err`, `4017`), drops the
document language's stopwords, stems with that language's Snowball stemmer (PyStemmer: English and
Portuguese here) and folds accents, alike for documents and queries. A query is analysed for every
language present in the folder, since a question may be in either.

The question's word rules live here too: its content words (`question_terms`), names and numbers written as
names, the measure words and what holds a value of each (`holds_value`). Their words are data, read from
rag/wordlists/ (`rag.words`); the patterns are built from those lists below.

`LexicalIndex` is built in memory from the store's chunk texts and rebuilt after every change: the
store is the truth, this is derived. BM25 with k1 = 1.2, b = 0.75.

>>> analyze("As devoluções são aceites", "pt") == analyze("devolucao aceite", "pt")
True
>>> analyze("Error ERR-4017 appears", "en")
['error', 'err-4017', 'err', '4017', 'appear']
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

import numpy as np

from rag.words import LANGUAGES, alternation, every, groups, setting
from rag.words import words as word_list

LANGUAGE_NAMES = {lang: setting(lang, "name") for lang in LANGUAGES}
_STEMMER_NAMES = {lang: setting(lang, "stemmer") for lang in LANGUAGES}
_TOKEN = re.compile(r"\w+(?:[-_./:]\w+)*")
_PART = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lowercase without accents: 'Devolução' -> 'devolucao'."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@functools.lru_cache(maxsize=None)
def _stopwords(lang: str) -> frozenset[str]:
    from bm25s import stopwords

    return frozenset(fold(w) for w in getattr(stopwords, setting(lang, "stopwords")))


@functools.lru_cache(maxsize=None)
def _not_content() -> frozenset[str]:
    """Every supported language's stopwords and the words of asking: what is never a question's own word."""
    return frozenset().union(*(_stopwords(lang) for lang in LANGUAGES)) | QUESTION_FILLER


@functools.lru_cache(maxsize=None)
def _stemmer(lang: str):
    import Stemmer

    return Stemmer.Stemmer(_STEMMER_NAMES[lang])


# Folded endings put back as written (Portuguese plurals and nasal endings) so the stemmer sees the word it
# knows: the first that fits.
_ACCENTED_ENDINGS = {lang: [(re.compile(re.escape(fold(e)) + "$"), e) for e in word_list(lang, "accented_endings")]
                     for lang in LANGUAGES}


@functools.lru_cache(maxsize=200_000)
def _stem(word: str, lang: str) -> str:
    for pattern, accented in _ACCENTED_ENDINGS.get(lang, ()):
        if pattern.search(word):
            word = pattern.sub(accented, word)
            break
    return fold(_stemmer(lang).stemWord(word))


def detect_language(text: str) -> str:
    """'en' or 'pt' by stopword hits in the first 20,000 characters; '' when it cannot tell."""
    words = _PART.findall(fold(text[:20_000]))
    hits = {lang: sum(1 for w in words if w in _stopwords(lang)) for lang in LANGUAGES}
    # Words both lists share ("a", "e", "o", "no"...) count for each; ask for a clear margin.
    best = max(hits, key=hits.get)
    if hits[best] < 3:
        return ""
    other = min(hits.values())
    return best if hits[best] >= 1.2 * other else ""


_QUESTION_WORDS = {lang: frozenset(word_list(lang, "question_words")) for lang in LANGUAGES}
_AMBIGUOUS = frozenset(every("ambiguous"))
_LETTERS = {lang: re.compile("[" + "".join(map(re.escape, word_list(lang, "letters"))) + "]")
            for lang in LANGUAGES if word_list(lang, "letters")}


def question_language(text: str) -> str:
    """'en' or 'pt' for a short question, by function words (a word both write, "a", "e", counts for
    neither) and a language's own letters (a word holding one counts twice); '' if unclear.

    >>> question_language("What is the deposit?"), question_language("Qual é o depósito?"), question_language("")
    ('en', 'pt', '')
    """
    words = re.findall(r"[^\W\d_]+", text.lower())
    score = {lang: sum(1 for w in words if w in _QUESTION_WORDS[lang] and w not in _AMBIGUOUS)
             + 2 * sum(1 for w in words if lang in _LETTERS and _LETTERS[lang].search(w)) for lang in LANGUAGES}
    best = [lang for lang in LANGUAGES if score[lang] == max(score.values())]
    return best[0] if len(best) == 1 else ""


def analyze(text: str, lang: str) -> list[str]:
    lang = lang if lang in LANGUAGES else "en"
    stop = _stopwords(lang)
    out: list[str] = []
    for m in _TOKEN.finditer(fold(text)):
        tok = m.group()
        parts = _PART.findall(tok)
        if len(parts) > 1:
            out.append(tok)  # the code as written, for exact-string queries
        out.extend(_stem(p, lang) for p in parts if p not in stop)
    return out


# Words of asking rather than of the subject: a question's content words are what is left without them and
# without either language's stopwords ("What does the app do with PDFs?" -> app, pdfs). The English
# stopword list BM25 uses is short (33 words), so the usual function words are listed in the word files:
# the function words (which the follow-up rules read too) and the other words of asking, folded.
FUNCTION_WORDS = frozenset(fold(w) for w in every("function_words"))
QUESTION_FILLER = FUNCTION_WORDS | frozenset(fold(w) for w in every("asking_words"))


def question_terms(question: str, measures: bool = True) -> list[str]:
    """The question's own content words, lowercased, in order, once each: every word that is neither a
    stopword of a supported language nor a word of asking. Codes stay whole (`err-4017`).

    >>> question_terms("Qual é a receita do bolo de chocolate?")
    ['receita', 'bolo', 'chocolate']
    >>> question_terms("What does ERR-4017 mean?")
    ['err-4017']
    >>> question_terms("What value of k does it use?")
    ['value', 'k']

    `measures=False` leaves out the word after "how", which asks for a measure ("how long", "how big"):
    the answer gives the measure ("35 minutes", "50 MB"), seldom the word, so it says nothing of what the
    question is about (`rag.search`, a follow-up's subject). The support test keeps it: left out there too
    (with "quanto custa" and "valor" alike), the sample's figures did not move and SQuAD English's
    calibrated threshold fell (0.723 -> 0.703), two dev right passages fewer (bench/RESULTS.md).

    >>> question_terms("How long do I bake the cake? How big can an upload be?", measures=False)
    ['bake', 'cake', 'upload']
    """
    stop = _not_content()
    out: dict[str, None] = {}
    previous = ""
    for m in _TOKEN.finditer(unicodedata.normalize("NFC", question.lower())):
        tok = m.group()
        after_how, previous = previous == "how", tok
        if after_how and not measures:
            continue
        whole = _PART.findall(tok)
        parts = [p for p in whole if fold(p) not in stop]
        if len(whole) > 1 and parts:
            out.setdefault(tok, None)
        elif parts:
            out.setdefault(parts[0], None)
    return list(out)


def is_code(term: str) -> bool:
    """A content word that is an identifier: joined parts holding both letters and digits (`err-4017`,
    `iso-8601`, `utf-8`), not a number (`0.95`, `1.2.0`) and not a plain word or name (`bm25`, `wi-fi`).

    >>> [t for t in ("err-4017", "utf-8", "0.95", "bm25", "wi-fi", "v2.1") if is_code(t)]
    ['err-4017', 'utf-8', 'v2.1']
    """
    parts = _PART.findall(fold(term))
    return len(parts) > 1 and any(ch.isdigit() for ch in term) and any(ch.isalpha() for ch in term)


# A word is written as a name when it holds a capital and does not open a sentence ("Peru", "YouTube", "PhD",
# "APA"); the question's first word, and one after . ? or !, are capitalised by grammar, not by meaning.
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
    """
    text = unicodedata.normalize("NFC", question)
    terms = set(question_terms(text))
    out: dict[str, None] = {}
    for m in _TOKEN.finditer(text):
        word = m.group()
        if word.lower() in terms and any(ch.isupper() for ch in word) and not _SENTENCE_START.search(
                text[:m.start()]):
            out.setdefault(word.lower(), None)
    return list(out)


def acronyms(question: str) -> set[str]:
    """The question's words written in capitals only, two to five letters ("PPP", "PC", "EUA"), folded: an
    acronym the folder never uses may still be what it spells out in full.

    >>> sorted(acronyms("Is the PC version of PPP on AWS? And OneDrive, YouTube, I?"))
    ['aws', 'pc', 'ppp']
    """
    return {m.group().lower() for m in _TOKEN.finditer(unicodedata.normalize("NFC", question))
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
# ... nor a count: a number below this that counts the word after it, with a word of asking or nothing before
# it ("Can 4 people share a berth?", "Podem 3 pessoas...?"). A label has its own word before it ("Level 4",
# "sala 12"), and a year has four figures and is a name wherever it stands ("the 2025 regatta").
_COUNT_BELOW = 1000
# A small number the passage may write as a word: "three boats" holds the 3 of "3 boats".
NUMBER_WORDS = {lang: list(word_list(lang, "number_words")) for lang in LANGUAGES}


def word_rules() -> str:
    """The word lists and patterns the support test reads (measure words and their values, words of asking,
    what makes a number a quantity), as one text: part of the calibration's fingerprint, so that adding a
    measure word recalibrates a stored folder as a new gate rule does (`rag.gate.GATE_RULES`)."""
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


def term_tokens(term: str, lang: str) -> list[str]:
    """The index tokens one content word becomes under a language's analyzer (a code: itself whole)."""
    lang = lang if lang in LANGUAGES else "en"
    folded = fold(term)
    parts = _PART.findall(folded)
    return [folded] if len(parts) > 1 else [_stem(p, lang) for p in parts]


def analyze_query(question: str, languages: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for lang in languages or ("en",):
        for tok in analyze(question, lang):
            seen.setdefault(tok, None)
    return list(seen)


def _one_edit(a: str, b: str) -> bool:
    """a and b differ by one letter added, dropped or changed, or two neighbours swapped (not equal).

    >>> [_one_edit("krugmen", w) for w in ("krugman", "krugmens", "kurgmen", "krugmen", "krugmann")]
    [True, True, True, False, False]
    """
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i:i + 2][::-1])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return short[i:] == long_[i + 1:]


@dataclass
class LexicalIndex:
    """BM25 over a fixed list of chunk texts; positions refer to that list."""

    languages: tuple[str, ...]
    size: int
    _bm25: object = None

    @classmethod
    def build(cls, texts: Sequence[str], langs: Sequence[str], k1: float = 1.2, b: float = 0.75,
              tokens: Sequence[list[str]] | None = None) -> "LexicalIndex":
        """`tokens`: the texts already analysed (the engine keeps them between rebuilds)."""
        import bm25s

        present = tuple(sorted({l for l in langs if l in LANGUAGES})) or ("en",)
        if not texts:
            return cls(present, 0, None)
        # "lucene" ranks like the textbook BM25 (measured against method="atire", idf="lucene"); the empty token keeps empty chunks indexable.
        bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
        bm25.index(list(tokens) if tokens is not None else [analyze(t, l) for t, l in zip(texts, langs)],
                   show_progress=False)
        return cls(present, len(texts), bm25)

    def scores(self, question: str, mask: np.ndarray | None = None) -> np.ndarray:
        if self._bm25 is None:
            return np.zeros(self.size, dtype=np.float32)
        tokens = [t for t in analyze_query(question, self.languages) if t in self._bm25.vocab_dict]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)
        return scores * mask if mask is not None else scores

    def support(self, position: int, terms: Sequence[str], lang: str,
                held: Collection[str] = ()) -> tuple[float, tuple[str, ...]]:
        """How much of a question the chunk at `position` mentions: the IDF-weighted share of the question's
        content words (`question_terms`) found among the chunk's tokens under its own language's analyzer,
        and the words it lacks. A word the folder never uses weighs most (IDF with a document frequency of
        0), so a question about something absent scores low wherever it lands. No terms: 1.0 (nothing to
        check). Terms in `held` count as held whatever the tokens say (a measure the chunk gives a value of,
        `holds_value`).

        Reads bm25s's inverted index (a CSC matrix: per token, the chunks holding it), so it costs no
        memory beyond the index itself.
        """
        if not terms:
            return 1.0, ()
        total, found, missing = 0.0, 0.0, []
        for term in terms:
            tokens = term_tokens(term, lang)
            if not tokens:
                continue
            present = term in held or all(self._holds(position, t) for t in tokens)
            w = max(self.idf(t) for t in tokens)
            total += w
            if present:
                found += w
            else:
                missing.append(term)
        return (found / total if total else 1.0), tuple(missing)

    def unused(self, term: str) -> bool:
        """True when no chunk holds the term under any language's analyzer: the folder never uses the word."""
        for lang in LANGUAGES:
            tokens = term_tokens(term, lang)
            if tokens and all(self._df(t) > 0 for t in tokens):
                return False
        return True

    def near_tokens(self, term: str) -> tuple[str, ...]:
        """The folder's index tokens one letter off the term's (see `spelled_near`): "asia" for "asian"."""
        if self._bm25 is None or is_code(term):  # ERR-4017 is not a misspelling of ERR-4018
            return ()
        out: dict[str, None] = {}
        for lang in LANGUAGES:
            for token in term_tokens(term, lang):
                if len(token) >= 5:
                    out.update((v, None) for v in self._bm25.vocab_dict
                               if abs(len(v) - len(token)) <= 1 and _one_edit(token, v))
        return tuple(out)

    def holds_any(self, position: int, tokens: Sequence[str]) -> bool:
        """Whether the chunk at `position` holds one of these index tokens."""
        return any(self._holds(position, t) for t in tokens)

    def spelled_near(self, term: str) -> bool:
        """True when the folder holds a word one letter off the term (one added, dropped, changed, or two
        swapped; under any language's analyzer): the question may misspell a name the folder uses
        ("Krugmen" for Krugman, "Sunnside" for Sunnyside) or use its adjective ("Californian"), so the
        name is not said to be absent. Words under five letters have too many such neighbours to judge.

        Scans the vocabulary (`near_tokens`): only for a name of the question, and only when the folder
        never uses it or a passage lacks it, which is rare, so nothing is precomputed.
        """
        return bool(self.near_tokens(term))

    def known(self, token: str) -> bool:
        """True when some chunk holds this analysed token."""
        return self._df(token) > 0

    def idf(self, token: str) -> float:
        """BM25's idf, ln(1 + (N - df + 0.5) / (df + 0.5)); a token no chunk holds gets df = 0."""
        return float(np.log(1.0 + (self.size - self._df(token) + 0.5) / (self._df(token) + 0.5)))

    def _df(self, token: str) -> int:
        j = self._bm25.vocab_dict.get(token) if self._bm25 is not None else None
        if j is None:
            return 0
        indptr = self._bm25.scores["indptr"]
        return int(indptr[j + 1] - indptr[j])

    def holders(self, term: str, lang: str) -> np.ndarray:
        """The positions of the chunks holding a content word (every token it becomes under `lang`'s
        analyzer), read off the inverted index: one posting list per token, not one test per chunk.

        >>> LexicalIndex.build(["The rent is due.", "A deposit.", "Rent again."], ["en"] * 3).holders("rent", "en")
        array([0, 2])
        """
        tokens = term_tokens(term, lang)
        if not tokens or self._bm25 is None:
            return np.zeros(0, dtype=np.int64)
        sc, out = self._bm25.scores, None
        for t in tokens:
            j = self._bm25.vocab_dict.get(t)
            if j is None:
                return np.zeros(0, dtype=np.int64)
            rows = np.asarray(sc["indices"][sc["indptr"][j]:sc["indptr"][j + 1]], dtype=np.int64)
            out = rows if out is None else np.intersect1d(out, rows)
        return np.unique(out)

    def _holds(self, position: int, token: str) -> bool:
        j = self._bm25.vocab_dict.get(token) if self._bm25 is not None else None
        if j is None:
            return False
        sc = self._bm25.scores
        return bool(np.any(sc["indices"][sc["indptr"][j]:sc["indptr"][j + 1]] == position))

    def weighted_scores(self, weights: Mapping[str, float], mask: np.ndarray | None = None) -> np.ndarray:
        """BM25 of a weighted bag of analysed tokens: sum over tokens of weight * the token's BM25 score
        (`scores` is the case where every token of a question weighs 1). Unknown tokens add nothing."""
        out = np.zeros(self.size, dtype=np.float32)
        if self._bm25 is None:
            return out
        for token, w in weights.items():
            if w and token in self._bm25.vocab_dict:
                out += np.float32(w) * np.asarray(self._bm25.get_scores([token]), dtype=np.float32)
        return out * mask if mask is not None else out

    def top(self, question: str | Mapping[str, float], n: int,
            mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Best n positions with score > 0 (a query of unknown words matches nothing), best first; equal
        scores in index order, as the dense side orders equal distances, so every run ranks ties alike.
        `question`: its text, or a weighted bag of analysed tokens (`weighted_scores`)."""
        s = self.scores(question, mask) if isinstance(question, str) else self.weighted_scores(question, mask)
        if not s.size or n <= 0:
            return []
        n = min(n, s.size)
        # Every position scoring at least the n-th best, so ties at the cut are chosen by position too.
        kth = np.partition(s, s.size - n)[s.size - n]
        idx = np.flatnonzero(s >= kth)
        idx = idx[np.argsort(-s[idx], kind="stable")][:n]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0]

"""Lexical: the analyzer that turns text into BM25 terms, alike for documents and questions.

The analyzer lowercases, splits on Unicode word characters (so `devolução` is one word), keeps
joined codes whole as well as in parts (`ERR-4017` gives `err-4017`, `err`, `4017`), drops the
document language's stopwords, stems with that language's Snowball stemmer (PyStemmer: every language of
`rag.text.languages`) and folds accents, alike for documents and queries. A query is analysed for every
language present in the folder, since a question may be in any of them.

The question's word rules (content words, names, numbers written as names, measures) are `rag.searching.terms`'s.

The BM25 index that holds those terms is indexing's (`rag.indexing.bm25.LexicalIndex`).

>>> analyze("As devoluções são aceites", "pt") == analyze("devolucao aceite", "pt")
True
>>> analyze("Error ERR-4017 appears", "en")
['error', 'err-4017', 'err', '4017', 'appear']
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Sequence


from rag.text.languages import LANGUAGES, document_language, name, stemmer, stopword_list
from rag.text.words import WORDLIST_LANGUAGES
from rag.text.words import words as word_list

LANGUAGE_NAMES = {lang: name(lang) for lang in LANGUAGES}
TOKEN = re.compile(r"\w+(?:[-_./:]\w+)*")
WORD_PART = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lowercase without accents: 'Devolução' -> 'devolucao'."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@functools.lru_cache(maxsize=None)
def stop_words(lang: str) -> frozenset[str]:
    """The language's stopwords as BM25 drops them, folded: bm25s's short list, or for a language bm25s has
    none for, the stopwords-iso list (`question_stop_words`)."""
    from bm25s import stopwords

    listed = stopword_list(lang)
    return frozenset(fold(w) for w in getattr(stopwords, listed)) if listed else question_stop_words(lang)


@functools.lru_cache(maxsize=None)
def question_stop_words(lang: str) -> frozenset[str]:
    """The stopwords-iso list of a language (stopwordsiso), folded: longer than bm25s's, with the words of
    asking ("cuántos", "viele") a question's content words leave out; empty for a language it lacks."""
    import stopwordsiso

    return frozenset(fold(w) for w in stopwordsiso.stopwords(lang)) if stopwordsiso.has_lang(lang) else frozenset()


@functools.lru_cache(maxsize=None)
def _stemmer(lang: str):
    import Stemmer

    return Stemmer.Stemmer(stemmer(lang))


# Folded endings put back as written (Portuguese plurals and nasal endings) so the stemmer sees the word it
# knows: the first that fits.
_ACCENTED_ENDINGS = {lang: [(re.compile(re.escape(fold(e)) + "$"), e) for e in word_list(lang, "accented_endings")]
                     for lang in WORDLIST_LANGUAGES}


@functools.lru_cache(maxsize=200_000)
def _stem(word: str, lang: str) -> str:
    for pattern, accented in _ACCENTED_ENDINGS.get(lang, ()):
        if pattern.search(word):
            word = pattern.sub(accented, word)
            break
    return fold(_stemmer(lang).stemWord(word))


def detect_language(text: str) -> str:
    """A document's language (`rag.text.languages.document_language`): a code of `LANGUAGES`, '' when unclear."""
    return document_language(text)


def analyze(text: str, lang: str) -> list[str]:
    lang = lang if lang in LANGUAGES else "en"  # an unclear language is read as English, the model's own
    stop = stop_words(lang)
    out: list[str] = []
    for m in TOKEN.finditer(fold(text)):
        tok = m.group()
        parts = WORD_PART.findall(tok)
        if len(parts) > 1:
            out.append(tok)  # the code as written, for exact-string queries
        out.extend(_stem(p, lang) for p in parts if p not in stop)
    return out


def is_code(term: str) -> bool:
    """A content word that is an identifier: joined parts holding both letters and digits (`err-4017`,
    `iso-8601`, `utf-8`), not a number (`0.95`, `1.2.0`) and not a plain word or name (`bm25`, `wi-fi`).

    >>> [t for t in ("err-4017", "utf-8", "0.95", "bm25", "wi-fi", "v2.1") if is_code(t)]
    ['err-4017', 'utf-8', 'v2.1']
    """
    parts = WORD_PART.findall(fold(term))
    return len(parts) > 1 and any(ch.isdigit() for ch in term) and any(ch.isalpha() for ch in term)


@functools.lru_cache(maxsize=100_000)
def term_tokens(term: str, lang: str) -> tuple[str, ...]:
    """The index tokens one content word becomes under a language's analyzer (a code: itself whole)."""
    lang = lang if lang in LANGUAGES else "en"
    folded = fold(term)
    parts = WORD_PART.findall(folded)
    return (folded,) if len(parts) > 1 else tuple(_stem(p, lang) for p in parts)


def analyze_query(question: str, languages: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for lang in languages or ("en",):
        for tok in analyze(question, lang):
            seen.setdefault(tok, None)
    return list(seen)

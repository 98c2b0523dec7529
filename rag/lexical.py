"""Lexical: the BM25 side of search (bm25s), with a language-aware analyzer.

The analyzer lowercases, splits on Unicode word characters (so `devolução` is one word), keeps
joined codes whole as well as in parts (`ERR-4017` gives `err-4017`, `err`, `4017`), drops the
document language's stopwords, stems with that language's Snowball stemmer (PyStemmer: English and
Portuguese here) and folds accents, alike for documents and queries. A query is analysed for every
language present in the folder, since a question may be in either.

`LexicalIndex` is built in memory from the store's chunk texts and rebuilt after every change: the
store is the truth, this is derived. BM25 with k1 = 1.2, b = 0.75 (DESIGN.md rule 7).

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
from typing import Sequence

import numpy as np

LANGUAGES = ("en", "pt")
_STEMMER_NAMES = {"en": "english", "pt": "portuguese"}
_TOKEN = re.compile(r"\w+(?:[-_./:]\w+)*")
_PART = re.compile(r"[^\W_]+")
# Folded Portuguese plurals and nasal endings: put the accent back so the stemmer sees the word it knows.
_PT_ENDINGS = [(re.compile(r"coes$"), "ções"), (re.compile(r"cao$"), "ção"), (re.compile(r"oes$"), "ões"),
               (re.compile(r"aes$"), "ães"), (re.compile(r"ao$"), "ão")]


def fold(text: str) -> str:
    """Lowercase without accents: 'Devolução' -> 'devolucao'."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@functools.lru_cache(maxsize=None)
def _stopwords(lang: str) -> frozenset[str]:
    from bm25s import stopwords

    words = {"en": stopwords.STOPWORDS_EN, "pt": stopwords.STOPWORDS_PORTUGUESE}[lang]
    return frozenset(fold(w) for w in words)


@functools.lru_cache(maxsize=None)
def _stemmer(lang: str):
    import Stemmer

    return Stemmer.Stemmer(_STEMMER_NAMES[lang])


@functools.lru_cache(maxsize=200_000)
def _stem(word: str, lang: str) -> str:
    if lang == "pt":
        for pattern, accented in _PT_ENDINGS:
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


_QUESTION_WORDS = {
    "en": {"the", "what", "how", "does", "do", "is", "are", "can", "which", "why", "when", "where", "who", "of",
           "to", "my", "i", "a", "an", "it", "in", "for", "and", "should", "will"},
    "pt": {"o", "a", "os", "as", "que", "qual", "quais", "como", "quando", "onde", "quem", "porque", "por", "de",
           "do", "da", "dos", "das", "um", "uma", "e", "é", "sao", "são", "em", "no", "na", "para", "posso", "se",
           "eu", "meu", "minha", "há", "ha", "nao", "não", "quanto", "quantos", "ao", "com"},
}


def question_language(text: str) -> str:
    """'en' or 'pt' for a short question, by function words and Portuguese letters; '' if unclear."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    pt = sum(1 for w in words if w in _QUESTION_WORDS["pt"] and w not in ("a", "e")) + \
        2 * sum(1 for w in words if re.search(r"[ãõçáéíóúâêô]", w))
    en = sum(1 for w in words if w in _QUESTION_WORDS["en"] and w != "a")
    if pt == en:
        return ""
    return "pt" if pt > en else "en"


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


def analyze_query(question: str, languages: Sequence[str]) -> list[str]:
    seen: dict[str, None] = {}
    for lang in languages or ("en",):
        for tok in analyze(question, lang):
            seen.setdefault(tok, None)
    return list(seen)


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
        # "lucene" ranks like the textbook BM25 (STACK.md); the empty token keeps empty chunks indexable.
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

    def top(self, question: str, n: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Best n positions with score > 0 (a query of unknown words matches nothing), best first."""
        s = self.scores(question, mask)
        if not s.size:
            return []
        n = min(n, s.size)
        idx = np.argpartition(-s, n - 1)[:n]
        idx = idx[np.argsort(-s[idx], kind="stable")]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0]

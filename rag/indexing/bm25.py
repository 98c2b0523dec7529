"""BM25: the lexical side's index (bm25s), built in memory from the passages' analysed terms
(`rag.text.lexical.analyze`) and rebuilt after every change: the store is the truth, this is derived.
BM25 with k1 = 1.2, b = 0.75.

Besides a question's scores it answers what the support test and the follow-ups ask of the folder's words:
which passages hold a term (`holders`, `support`), whether a word is unknown to the folder (`unused`) or one
edit from a word it has (`spelled_near`), a word's IDF.

>>> index = LexicalIndex.build(["The rent is 850 euros a month.", "Bins go out on Monday."], ["en", "en"])
>>> [row for row, _ in index.top("How much is the rent?", 2)]
[0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Collection, Mapping, Sequence

import numpy as np

from rag.text.languages import LANGUAGES
from rag.text.lexical import analyze, analyze_query, is_code, term_tokens


# `_best` reads the maxima of blocks of this many scores first (see there).
_BLOCK = 256


def _best(s: np.ndarray, n: int) -> np.ndarray:
    """The positions of the `n` highest positive scores, best first, equal scores in position order (as the
    dense side orders equal distances, so every run ranks ties alike).

    Only positions that can place are selected among. When the scores fall in at least `n` blocks of
    `_BLOCK`, the n-th best of the blocks' maxima bounds the n-th best score from below (n distinct positions
    reach it), so only the positions at that bound or above are read: a few times n, where a folder whose
    every word is common scores nearly every position (1.2 -> 0.2 ms over 100,000). Otherwise the positive
    scores: that spares the selection the folder's many equal zeros, which made it twenty times slower (2.9
    against 0.13 ms for 20,000 scoring positions of 97,514).

    >>> _best(np.array([0.0, 2.0, 1.0, 2.0, 0.0], dtype=np.float32), 2).tolist()
    [1, 3]
    """
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    blocks = s.size // _BLOCK
    floor = 0.0
    if blocks >= n:
        maxima = s[:blocks * _BLOCK].reshape(blocks, _BLOCK).max(axis=1)
        floor = float(np.partition(maxima, blocks - n)[blocks - n])
    pick = np.flatnonzero(s >= floor) if floor > 0 else np.flatnonzero(s > 0)
    if not pick.size:
        return pick
    n = min(n, pick.size)
    # Every position scoring at least the n-th best, so ties at the cut are chosen by position too.
    kth = np.partition(s[pick], pick.size - n)[pick.size - n]
    idx = pick[s[pick] >= kth]
    return idx[np.argsort(-s[idx], kind="stable")][:n]


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


def _edits(word: str, letters: str) -> set[str]:
    """Every string one edit from `word` (a letter dropped, added, changed, or two neighbours swapped), as
    `_one_edit` defines it.

    >>> sorted(w for w in _edits("abc", "abc") if _one_edit("abc", w)) == sorted(_edits("abc", "abc"))
    True
    >>> sorted(_edits("abc", "ab"))[:8]
    ['aabc', 'aac', 'ab', 'aba', 'abac', 'abb', 'abbc', 'abca']
    """
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in letters}
    out |= {a + c + b for a, b in splits for c in letters}
    out.discard(word)
    return out


# A token held by more than this share of the passages is kept as one score per passage (a column) rather
# than a posting list: it is no larger (4 bytes a passage, against 8 a posting for more than half of them),
# and adding it to a question's scores is one vector add instead of a scatter of tens of thousands of
# postings. In a folder whose every word is common (bench/bench_large.py's synthetic one: 67 tokens each in
# 63% of its 100,000 passages) that scatter was most of BM25's time: feedback's query 1.9 -> 0.7 ms.
COLUMN_ABOVE = 0.5


@dataclass(frozen=True)
class _Postings:
    """bm25s's inverted index, read as arrays: per token (its column `j` in `vocab`), the positions of the
    passages holding it, ascending, and each one's BM25 score; a token held by more than `COLUMN_ABOVE` of
    the passages as a column of scores instead (zero where it is absent: a BM25 score is always above zero).

    >>> p = _Postings.of(4, {"a": 0, "b": 1, "c": 2}, np.array([0, 3, 5, 6]),
    ...                  np.array([0, 1, 2, 0, 3, 2]), np.array([.1, .2, .3, .4, .5, .6], dtype=np.float32))
    >>> sorted(p.columns), p.rows(0).tolist(), p.rows(1).tolist(), p.df.tolist()
    ([0], [0, 1, 2], [0, 3], [3, 2, 1])
    """

    vocab: dict[str, int]
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    df: np.ndarray  # passages holding each token, columns' included
    columns: dict[int, np.ndarray]

    @classmethod
    def of(cls, size: int, vocab: dict[str, int], indptr: np.ndarray, indices: np.ndarray,
           data: np.ndarray) -> "_Postings":
        """From bm25s's CSC arrays over `size` passages (not changed: the lists are copied when columns leave them)."""
        df = np.diff(indptr)
        wide = np.flatnonzero(df > size * COLUMN_ABOVE)
        columns = {}
        for j in wide:
            column = np.zeros(size, dtype=data.dtype)
            column[indices[indptr[j]:indptr[j + 1]]] = data[indptr[j]:indptr[j + 1]]
            columns[int(j)] = column
        if wide.size:  # their postings leave the lists: each token is held once
            listed = np.where(np.isin(np.arange(df.size), wide), 0, df)
            keep = np.repeat(listed > 0, df)
            indices, data = indices[keep], data[keep]
            indptr = np.concatenate([[0], np.cumsum(listed)]).astype(indptr.dtype)
        return cls(vocab, indptr, indices, data, df.astype(np.int64), columns)

    def rows(self, j: int) -> np.ndarray:
        """The positions holding token `j`, ascending (a column's are computed, a list's are a view)."""
        column = self.columns.get(j)
        if column is not None:
            return np.flatnonzero(column)
        return self.indices[self.indptr[j]:self.indptr[j + 1]]


@dataclass
class LexicalIndex:
    """BM25 over a fixed list of chunk texts; positions refer to that list."""

    languages: tuple[str, ...]
    size: int
    _index: _Postings | None = None
    # Each looked-up token's chunks (a view of the index's lists, sorted), kept: a question's words are read
    # against every candidate, and their neighbours' questions use many of the same words.
    _rows: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    # Each looked-up token's idf, kept: the support test reads every question word's against every candidate.
    _idfs: dict[str, float] = field(default_factory=dict, repr=False)
    _letters: str | None = field(default=None, repr=False)  # the characters the vocabulary uses (`near_tokens`)

    @classmethod
    def build(cls, texts: Sequence[str] | None, langs: Sequence[str], k1: float = 1.2, b: float = 0.75,
              tokens: Sequence[list[str]] | None = None) -> "LexicalIndex":
        """`tokens`: the texts already analysed (the engine keeps them between rebuilds; then `texts` may be
        None: a snapshot that reads its texts from the store, rag.indexing.served, does not hold them)."""
        import bm25s

        present = tuple(sorted({l for l in langs if l in LANGUAGES})) or ("en",)
        tokens = list(tokens) if tokens is not None else [analyze(t, l) for t, l in zip(texts, langs)]
        if not tokens:
            return cls(present, 0, None)
        # "lucene" ranks like the textbook BM25 (measured against method="atire", idf="lucene"); the empty token keeps empty chunks indexable.
        bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
        bm25.index(tokens, show_progress=False)
        sc = bm25.scores  # bm25s's CSC matrix: per token, its passages and their precomputed scores
        return cls(present, len(tokens), _Postings.of(len(tokens), bm25.vocab_dict, sc["indptr"], sc["indices"], sc["data"]))

    @property
    def vocabulary(self) -> dict[str, int]:
        """Every index token, to its column."""
        return self._index.vocab if self._index is not None else {}

    def scores(self, question: str, mask: np.ndarray | None = None) -> np.ndarray:
        tokens = analyze_query(question, self.languages) if self._index is not None else []
        return self.weighted_scores(dict.fromkeys(tokens, 1.0), mask)

    def support(self, position: int, terms: Sequence[str], lang: str,
                held: Collection[str] = ()) -> tuple[float, tuple[str, ...]]:
        """How much of a question the chunk at `position` mentions: the IDF-weighted share of the question's
        content words (`question_terms`) found among the chunk's tokens under its own language's analyzer,
        and the words it lacks. A word the folder never uses weighs most (IDF with a document frequency of
        0), so a question about something absent scores low wherever it lands. No terms: 1.0 (nothing to
        check). Terms in `held` count as held whatever the tokens say (a measure the chunk gives a value of,
        `holds_value`).

        Reads the inverted index (per token, the chunks holding it), so it costs no memory beyond the
        index itself.
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

    def _readings(self, lang: str) -> tuple[str, ...]:
        """The analyzers a question's word is read with against the folder: the folder's languages (how its
        passages would write it) and the question's own (`lang`: "Projeto" stems to "projet", one letter off
        an English folder's "project")."""
        return tuple(dict.fromkeys((*self.languages, lang) if lang else self.languages))

    def unused(self, term: str, lang: str = "") -> bool:
        """True when no chunk holds the term under the analyzers of the folder's languages or of the
        question's (`lang`): the folder never uses the word."""
        for lang in self._readings(lang):
            tokens = term_tokens(term, lang)
            if tokens and all(self._df(t) > 0 for t in tokens):
                return False
        return True

    def near_tokens(self, term: str, lang: str = "") -> tuple[str, ...]:
        """The folder's index tokens one letter off the term's (see `spelled_near`): "asia" for "asian".
        Looked up, not scanned for: every string one edit away (over the letters the vocabulary uses) is
        asked of the vocabulary, a few hundred look-ups whatever the folder's size."""
        if self._index is None or is_code(term):  # ERR-4017 is not a misspelling of ERR-4018
            return ()
        vocab, out = self.vocabulary, {}
        for lang in self._readings(lang):
            for token in term_tokens(term, lang):
                if len(token) >= 5:
                    out.update((v, vocab[v]) for v in _edits(token, self._alphabet()) if v in vocab)
        return tuple(sorted(out, key=out.get))  # in the vocabulary's order, as a scan would find them

    def _alphabet(self) -> str:
        if self._letters is None:
            self._letters = "".join(sorted(set().union(*self.vocabulary)))
        return self._letters

    def holds_any(self, position: int, tokens: Sequence[str]) -> bool:
        """Whether the chunk at `position` holds one of these index tokens."""
        return any(self._holds(position, t) for t in tokens)

    def spelled_near(self, term: str, lang: str = "") -> bool:
        """True when the folder holds a word one letter off the term (one added, dropped, changed, or two
        swapped; under any language's analyzer): the question may misspell a name the folder uses
        ("Krugmen" for Krugman, "Sunnside" for Sunnyside) or use its adjective ("Californian"), so the
        name is not said to be absent. Words under five letters have too many such neighbours to judge.

        Scans the vocabulary (`near_tokens`): only for a name of the question, and only when the folder
        never uses it or a passage lacks it, which is rare, so nothing is precomputed.
        """
        return bool(self.near_tokens(term, lang))

    def known(self, token: str) -> bool:
        """True when some chunk holds this analysed token."""
        return self._df(token) > 0

    def idf(self, token: str) -> float:
        """BM25's idf, ln(1 + (N - df + 0.5) / (df + 0.5)); a token no chunk holds gets df = 0."""
        got = self._idfs.get(token)
        if got is None:
            df = self._df(token)
            got = self._idfs[token] = math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))
        return got

    def _df(self, token: str) -> int:
        j = self.vocabulary.get(token)
        return 0 if j is None else int(self._index.df[j])

    def holders(self, term: str, lang: str) -> np.ndarray:
        """The positions of the chunks holding a content word (every token it becomes under `lang`'s
        analyzer), read off the inverted index: one posting list per token, not one test per chunk.

        >>> LexicalIndex.build(["The rent is due.", "A deposit.", "Rent again."], ["en"] * 3).holders("rent", "en")
        array([0, 2])
        """
        tokens = term_tokens(term, lang)
        if not tokens or self._index is None:
            return np.zeros(0, dtype=np.int64)
        out = None
        for t in tokens:
            j = self.vocabulary.get(t)
            if j is None:
                return np.zeros(0, dtype=np.int64)
            rows = np.asarray(self._index.rows(j), dtype=np.int64)
            out = rows if out is None else np.intersect1d(out, rows)
        return np.unique(out)

    def _postings(self, j: int) -> np.ndarray:
        """The positions of the chunks holding index token `j`, sorted (bm25s orders each token's chunks)."""
        rows = self._rows.get(j)
        if rows is None:
            rows = self._rows[j] = self._index.rows(j)
        return rows

    def _holds(self, position: int, token: str) -> bool:
        j = self.vocabulary.get(token)
        if j is None:
            return False
        column = self._index.columns.get(j)
        if column is not None:  # read in place: a column is one score per passage
            return bool(column[position] > 0)
        rows = self._postings(j)
        # The position in the postings' own integer type: a Python int makes numpy convert the whole list
        # first (10 us for 40,000 postings, against 1.5: a third of the support test at 100,000 passages).
        k = rows.searchsorted(rows.dtype.type(position))
        return k < rows.size and rows[k] == position

    def weighted_scores(self, weights: Mapping[str, float], mask: np.ndarray | None = None) -> np.ndarray:
        """BM25 of a weighted bag of analysed tokens: sum over tokens of weight * the token's BM25 score
        (`scores` is the case where every token of a question weighs 1). Unknown tokens add nothing.

        Read straight off the index (per token, the chunks holding it and their precomputed scores): one
        `bincount` over the listed tokens' postings and one add per column, not one pass over every chunk
        per token.
        """
        ids = self._bag(weights)
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        p = self._index
        listed = [(j, w) for j, w in ids if j not in p.columns]
        if listed:
            rows = np.concatenate([p.indices[p.indptr[j]:p.indptr[j + 1]] for j, _ in listed])
            vals = np.concatenate([p.data[p.indptr[j]:p.indptr[j + 1]] * np.float32(w) for j, w in listed])
            out = np.bincount(rows, weights=vals, minlength=self.size)
        else:
            out = np.zeros(self.size, dtype=np.float64)
        for j, w in ids:  # summed in float64 as bincount sums, each product in float32 like the listed tokens'
            column = p.columns.get(j)
            if column is not None:
                out += column * np.float32(w)
        out = out.astype(np.float32)
        return out * mask if mask is not None else out

    def _bag(self, weights: Mapping[str, float]) -> list[tuple[int, float]]:
        """A weighted bag of tokens as (the index's column, weight), leaving out unknown tokens and zero weights."""
        vocab = self.vocabulary
        return [(vocab[t], w) for t, w in weights.items() if w and t in vocab]

    def top_among(self, weights: Mapping[str, float], rows: np.ndarray, n: int) -> list[tuple[int, float]]:
        """`top` of a weighted bag of tokens among `rows` only (positions, ascending): each token's postings
        are searched for those rows rather than added up over the whole folder, so the cost follows the rows
        asked about, not how many passages use the words. Scores, order and ties are `top`'s for those rows.

        >>> lex = LexicalIndex.build(["rent due", "deposit", "rent rent", "pets"], ["en"] * 4)
        >>> [row for row, _ in lex.top_among({"rent": 1.0}, np.array([1, 2, 3]), 5)]
        [2]
        """
        ids = self._bag(weights)
        if not ids or n <= 0 or not len(rows):
            return []
        p = self._index
        indptr, indices, data = p.indptr, p.indices, p.data
        wanted = np.asarray(rows, dtype=indices.dtype)
        total = np.zeros(wanted.size, dtype=np.float64)
        # Summed in `weighted_scores`' order (the listed tokens, then the columns), so the scores are its own.
        for j, w in sorted(ids, key=lambda jw: jw[0] in p.columns):
            column = p.columns.get(j)
            if column is not None:
                total += column[wanted] * np.float32(w)
                continue
            postings = indices[indptr[j]:indptr[j + 1]]
            if not postings.size:
                continue
            at = np.minimum(postings.searchsorted(wanted), postings.size - 1)
            held = postings[at] == wanted
            total[held] += data[indptr[j]:indptr[j + 1]][at[held]] * np.float32(w)
        s = total.astype(np.float32)
        order = np.argsort(-s, kind="stable")[:n]
        return [(int(wanted[i]), float(s[i])) for i in order if s[i] > 0]

    def top(self, question: str | Mapping[str, float], n: int,
            mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Best n positions with score > 0 (a query of unknown words matches nothing), best first; equal
        scores in index order, as the dense side orders equal distances, so every run ranks ties alike.
        `question`: its text, or a weighted bag of analysed tokens (`weighted_scores`)."""
        s = self.scores(question, mask) if isinstance(question, str) else self.weighted_scores(question, mask)
        return [(int(i), float(s[i])) for i in _best(s, n)]



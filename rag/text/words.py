"""Words: the language data the word rules read, loaded from the data files shipped in rag/text/wordlists/.

One TOML file per language (`en.toml`, `pt.toml`: its name is the language's code) and `shared.toml` for
what every language writes alike (signs such as € and °, symbols such as km, Latin abbreviations). Each file
holds lists of words by kind: the words of asking, the connectives that open a follow-up, the pronouns an
answer's sentence may lean on, the measure words, the units a figure is written in, and so on; the comments
in the files say what each list is for. A table's lists are kinds with a dotted name (`measures.cost`,
`units.length`). A language's name, stemmer and stopwords are not here but in rag/text/languages.toml
(`rag.text.languages`), which lists every language the app reads; the word lists exist for two of them.

>>> WORDLIST_LANGUAGES
('en', 'pt')
>>> words("pt", "openers")[:3]
('e', 'e para', 'e quanto')
>>> every("number_words")[:3], words("en", "frequency_all")
(('one', 'two', 'three'), ())
>>> "units.currency" in kinds("shared")
True

Words come back as written, accents and capitals as in the file, in the file's order; `alternation` is the
one way a list becomes a regular expression. What this module does not do: fold, stem or match words, nor
decide what a list means (`rag.text.lexical`, `rag.searching.terms`, `rag.searching.followup`, `rag.answering.answer` and `rag.indexing.chunk` do, each
for the kinds it reads).
"""

from __future__ import annotations

import functools
import re
import tomllib
import unicodedata
from importlib import resources
from typing import Iterable

SHARED = "shared"
_DIR = "wordlists"
# Unicode categories of a token's last character that make it end like a word: letters with a case, digits.
# Not º (a letter without case), ² (a digit sign) nor € or °.
_WORDLIKE = ("Ll", "Lu", "Lt", "Nd")


def _files() -> dict[str, object]:
    return {f.name[:-len(".toml")]: f for f in resources.files("rag.text").joinpath(_DIR).iterdir()
            if f.name.endswith(".toml")}


WORDLIST_LANGUAGES: tuple[str, ...] = tuple(sorted(name for name in _files() if name != SHARED))


@functools.lru_cache(maxsize=None)
def _load(lang: str) -> dict[str, tuple[str, ...]]:
    """A file's lists by dotted kind."""
    if lang not in WORDLIST_LANGUAGES + (SHARED,):
        raise ValueError(f"no word lists for language {lang!r}: valid languages are "
                         f"{', '.join(WORDLIST_LANGUAGES + (SHARED,))}")
    data = tomllib.loads(_files()[lang].read_text(encoding="utf-8"))
    lists: dict[str, tuple[str, ...]] = {}

    def walk(table: dict, prefix: str) -> None:
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            elif isinstance(value, list) and all(isinstance(w, str) for w in value):
                lists[prefix + key] = tuple(value)
            else:
                raise ValueError(f"{_DIR}/{lang}.toml: {prefix + key} is not a list of words")

    walk(data, "")
    return lists


@functools.lru_cache(maxsize=None)
def _all_kinds() -> tuple[str, ...]:
    return tuple(sorted({k for lang in WORDLIST_LANGUAGES + (SHARED,) for k in _load(lang)}))


def kinds(lang: str) -> tuple[str, ...]:
    """The kinds of word list one file holds, sorted; `lang` is a language or "shared"."""
    return tuple(sorted(_load(lang)))


def words(lang: str, kind: str) -> tuple[str, ...]:
    """One language's (or the shared file's) list of a kind: () when that file has no such list, a
    ValueError listing the valid kinds when no file has one.

    >>> words("en", "measures.duration")
    ('long', 'duration', 'lasts')
    >>> words("en", "opener")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: no word list of kind 'opener': valid kinds are abbreviations, accented_endings, ...
    """
    lists = _load(lang)
    if kind not in _all_kinds():
        raise ValueError(f"no word list of kind {kind!r}: valid kinds are {', '.join(_all_kinds())}")
    return lists.get(kind, ())


def every(kind: str) -> tuple[str, ...]:
    """A kind's words in the shared file and every language, in that order, once each.

    >>> every("abbreviations")[:6]
    ('dr', 'prof', 'vs', 'cf', 'fig', 'mr')
    """
    out: dict[str, None] = {}
    for lang in (SHARED,) + WORDLIST_LANGUAGES:
        out.update((w, None) for w in words(lang, kind))
    return tuple(out)


def groups(prefix: str) -> tuple[str, ...]:
    """The names under a table in any file, sorted: `groups("measures")` gives the measure kinds.

    >>> groups("measures")
    ('cost', 'duration', 'frequency', 'size', 'temperature', 'time')
    """
    return tuple(sorted({k[len(prefix) + 1:] for k in _all_kinds() if k.startswith(prefix + ".")}))


def alternation(tokens: Iterable[str], bounded: bool = True) -> str:
    r"""A regular expression group matching any of the tokens as written (a phrase's words one space apart),
    longest first. With `bounded`, a token that ends in a cased letter or a digit needs a word boundary after
    it (`m` does not match the start of `more`); a sign never does (`€5`, `30°`, `180 ºC`, `40 m²`).

    >>> alternation(["m", "€", "up to"])
    '(up\\ to\\b|m\\b|€)'
    >>> bool(re.fullmatch(alternation(["m", "€"]) + "5", "€5")), bool(re.match(alternation(["m"]), "more"))
    (True, False)
    >>> bool(re.match(alternation(["º", "mês"]) + "C", "ºC")), bool(re.match(alternation(["mês"]), "mêsa"))
    (True, False)
    """
    ordered = sorted(set(tokens), key=lambda t: (-len(t), t))
    return "(" + "|".join(re.escape(t) + (r"\b" if bounded and unicodedata.category(t[-1]) in _WORDLIKE else "")
                          for t in ordered) + ")"

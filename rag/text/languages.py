"""Languages: which languages the app reads, and which of them a text or a question is written in.

The languages are data (rag/text/languages.toml): each one's name, its Snowball stemmer (PyStemmer) and the
bm25s stopword list its analyzer drops, and whether it writes every noun with a capital. Identification
is py3langid's (langid.py's model, shipped inside the package: nothing is downloaded), restricted to these
languages, so a text is never said to be in one the analyzer cannot read.

A document is long enough to tell (`document_language`); a question often is not ("Preço?"): when its
best guess is not clear, `question_language` takes the likeliest of the folder's own languages, each
weighed by its share of the folder's passages when the caller knows them (a prior: a folder of 97,299
English passages and 215 French or German ones took "Does Animal Protein Cause Osteoporosis?" and a fifth
of NFCorpus's queries for French or German when every language it holds counted alike).

What it does not do: analyse text (`rag.text.lexical`), or hold the word rules, which are written for English
and Portuguese only (`rag.text.words`); elsewhere those rules stand down.

>>> document_language("El pastel de chocolate se hornea durante cuarenta minutos en el horno caliente.")
'es'
>>> question_language("Wie hoch ist die Miete für die Wohnung?"), question_language("What is the deposit?")
('de', 'en')
>>> question_language("Preço?", folder=("pt", "en")), question_language("", folder=("pt",))
('pt', '')
>>> question_language("Harmane", folder=("en", "fr")), question_language("Harmane", folder={"en": 97299, "fr": 153})
('fr', 'en')
>>> name("de"), nouns_capitalised("de"), nouns_capitalised("en"), name("xx")
('German', True, False, 'xx')
"""

from __future__ import annotations

import functools
import re
import tomllib
from importlib import resources
from typing import Mapping, Sequence


@functools.lru_cache(maxsize=None)
def _table() -> dict[str, dict]:
    return tomllib.loads(resources.files("rag.text").joinpath("languages.toml").read_text(encoding="utf-8"))


LANGUAGES: tuple[str, ...] = tuple(_table())

# A guess at least this likely (py3langid's probability, normalised over LANGUAGES) is taken as it is; a
# weaker one is a question too short to tell. On the 2,098 SQuAD questions (bench/languages.py) no guess at
# 0.6 or more was wrong; 0.8 keeps a margin, and 93-97% of them reach it ("Can I keep a dog at home?": 0.88).
# The rest fall back to the folder's languages.
CLEAR = 0.8
# A document's guess must be at least this likely (a page of code, a table of figures is in no language).
DOCUMENT_CLEAR = 0.5
_LETTER = re.compile(r"[^\W\d_]")


def name(lang: str) -> str:
    """The language's name in English ("Spanish"); the code itself for one the app does not read."""
    return _table().get(lang, {}).get("name", lang)


def stemmer(lang: str) -> str | None:
    """PyStemmer's name for the language's stemmer; None for a language the app does not read."""
    return _table().get(lang, {}).get("stemmer")


def stopword_list(lang: str) -> str | None:
    """The name of the language's list in `bm25s.stopwords`; None where bm25s has none."""
    return _table().get(lang, {}).get("stopwords")


def nouns_capitalised(lang: str) -> bool:
    """Whether the language writes every noun with a capital (German): a capital then marks no name."""
    return bool(_table().get(lang, {}).get("nouns_capitalised", False))


@functools.lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGES))
    return identifier


def ranked(text: str) -> list[tuple[str, float]]:
    """Every language the app reads with the probability that `text` is in it, likeliest first; [] for a
    text with no letter."""
    if not _LETTER.search(text):
        return []
    return [(lang, float(p)) for lang, p in _identifier().rank(text)]


def document_language(text: str) -> str:
    """The language of a document, read from its first 20,000 characters; '' when it is in none clearly
    (code, figures, a language the app does not read)."""
    ranks = ranked(text[:20_000])
    return ranks[0][0] if ranks and ranks[0][1] >= DOCUMENT_CLEAR else ""


def question_language(text: str, folder: Sequence[str] | Mapping[str, float] = ()) -> str:
    """The language of a question: the likeliest when it is clear (`CLEAR`); otherwise the likeliest of
    the folder's languages (`folder`: the languages, or each with its passages or share, which then weighs its
    likelihood: Bayes' rule with the folder as the prior); '' when neither tells (no letter, no folder
    language). A clear question keeps its language whatever the folder holds (a question in English about
    Portuguese notes is English)."""
    ranks = ranked(text)
    if not ranks:
        return ""
    if ranks[0][1] >= CLEAR or not folder:
        return ranks[0][0] if ranks[0][1] >= CLEAR else ""
    prior = folder if isinstance(folder, Mapping) else dict.fromkeys(folder, 1.0)
    held = [(p * prior[lang], -i, lang) for i, (lang, p) in enumerate(ranks) if prior.get(lang, 0) > 0]
    return max(held)[2] if held else ""

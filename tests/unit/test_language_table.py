"""The languages the app reads (`rag.text.languages` over rag/text/languages.toml), no model: the table names a stemmer
and a stopword list that exist, identification picks among those languages only, and the analysis, content
words and names of a question follow its language (Spanish stopwords are no content words; German nouns,
all capitalised, are no names)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import Stemmer
from bm25s import stopwords

from rag.text import languages, lexical, words
from rag.searching.terms import question_names, question_terms


def test_every_language_names_a_stemmer_and_a_stopword_list_that_exist():
    assert set(words.WORDLIST_LANGUAGES) <= set(languages.LANGUAGES)  # the word rules' languages are read too
    for lang in languages.LANGUAGES:
        assert languages.stemmer(lang) in Stemmer.algorithms(), lang
        listed = languages.stopword_list(lang)
        assert listed is None or len(getattr(stopwords, listed)) > 20, lang
        assert languages.name(lang) != lang and lexical.LANGUAGE_NAMES[lang] == languages.name(lang)
    assert languages.nouns_capitalised("de") and not any(languages.nouns_capitalised(x) for x in ("en", "pt", "es"))


def test_the_table_ships_with_the_package():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "languages.toml" in pyproject["tool"]["setuptools"]["package-data"]["rag.text"]
    assert any(d.startswith("py3langid") for d in pyproject["project"]["dependencies"])


@pytest.mark.parametrize("text, lang", [
    ("The deposit is returned within thirty days of the end of the lease, less any repairs.", "en"),
    ("A caução é devolvida no prazo de trinta dias após o fim do contrato, descontadas as reparações.", "pt"),
    ("La fianza se devuelve en un plazo de treinta días tras el fin del contrato, menos las reparaciones.", "es"),
    ("Die Kaution wird innerhalb von dreißig Tagen nach Ende des Mietvertrags zurückgezahlt.", "de"),
    ("La caution est rendue dans les trente jours suivant la fin du bail, moins les réparations.", "fr"),
    ("Il deposito viene restituito entro trenta giorni dalla fine del contratto, meno le riparazioni.", "it"),
    ("def main():\n    return 0\n", ""),  # code is in no language the analyzer reads
    ("4017 2025 3.14", ""),
])
def test_a_document_language_is_one_the_analyzer_reads_or_none(text, lang):
    assert lexical.detect_language(text) == lang
    assert lang == "" or lang in languages.LANGUAGES


@pytest.mark.parametrize("lang, text, same", [
    # Stopwords dropped and inflections joined by the language's own stemmer: both sides give one list.
    ("es", "¿Cuál es la receta del pastel?", "recetas pasteles"),
    ("de", "Die Miete für die Wohnungen", "Mieten Wohnung"),
    ("fr", "Les appartements sont loués", "appartement loué"),
    ("it", "Gli appartamenti della città", "appartamento città"),
])
def test_each_language_is_analysed_with_its_own_stopwords_and_stemmer(lang, text, same):
    assert lexical.analyze(text, lang) == lexical.analyze(same, lang) and len(lexical.analyze(same, lang)) == 2
    # Under another language's analyzer the function words stay and the inflections part.
    assert lexical.analyze(text, "en") != lexical.analyze(same, "en")


def test_a_language_without_a_stopword_list_keeps_every_word_and_still_stems():
    assert languages.stopword_list("pl") is None
    assert lexical.analyze("mieszkania", "pl") == lexical.analyze("mieszkanie", "pl")


@pytest.mark.parametrize("question, terms", [
    ("¿Cuál es la receta del pastel de chocolate?", ["receta", "pastel", "chocolate"]),
    ("¿Cuántos estudiantes tiene la universidad?", ["estudiantes", "universidad"]),
    ("Wie viele Zimmer hat die Wohnung?", ["zimmer", "wohnung"]),
    # "siente" is in the list BM25 drops (bm25s's), not in stopwords-iso's: no passage could ever hold it.
    ("¿Qué siente Rajan ha creado profundas líneas?", ["rajan", "creado", "profundas", "líneas"]),
])
def test_the_question_language_stopwords_are_not_content_words(question, terms):
    assert question_terms(question) == terms


@pytest.mark.parametrize("question, names", [
    # German writes every noun with a capital: Miete and Wohnung are no names, YouTube and ETH are.
    ("Wie hoch ist die Miete für die Wohnung?", []),
    ("Wie viele Studenten hat die ETH in Zürich?", ["eth"]),
    ("Kann man Videos auf YouTube hochladen?", ["youtube"]),
    # Elsewhere a capital inside a sentence still marks one.
    ("¿Cuántos estudiantes tiene Harvard?", ["harvard"]),
    ("How many students does Harvard have?", ["harvard"]),
])
def test_names_by_capitals_only_where_a_capital_marks_a_name(question, names):
    assert question_names(question) == names

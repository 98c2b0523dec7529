"""The word lists (`rag.text.words` over rag/text/wordlists/) and what is built from them, no model: the loader's
API and errors, the files' shape, one copy of each word, and the lists reaching the rules that read them
(openers, measure words, units, number words) in both languages."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from rag.searching import terms
from rag.text import lexical, words
from rag.searching.followup import is_followup, referred_words
from rag.text.lexical import fold

LANGS = words.WORDLIST_LANGUAGES


def test_languages_are_the_data_files():
    names = {f.name for f in resources.files("rag.text").joinpath("wordlists").iterdir()}
    assert names == {"en.toml", "pt.toml", "shared.toml"}
    assert LANGS == ("en", "pt")


@pytest.mark.parametrize("lang", LANGS + ("shared",))
def test_every_list_is_a_list_of_lower_case_words_once_each(lang):
    for kind in words.kinds(lang):
        listed = words.words(lang, kind)
        assert listed and all(isinstance(w, str) and w == w.strip() and w for w in listed), kind
        assert len(set(listed)) == len(listed), f"{lang} {kind} repeats a word"
        assert all(w == w.lower() for w in listed), f"{lang} {kind} holds a capital"


def test_asking_words_do_not_repeat_the_function_words():
    # QUESTION_FILLER is the union of the two lists: a word in both would be a copy to drift.
    for lang in LANGS:
        assert not set(words.words(lang, "function_words")) & set(words.words(lang, "asking_words"))
    assert terms.FUNCTION_WORDS < terms.QUESTION_FILLER
    assert len(terms.QUESTION_FILLER) == 228


def test_a_unit_is_of_one_kind_only():
    seen: dict[str, str] = {}
    for lang in LANGS + ("shared",):
        for kind in words.kinds(lang):
            if kind.startswith("units."):
                for w in words.words(lang, kind):
                    assert seen.setdefault(w, kind) == kind, f"{w!r} is both {seen[w]} and {kind}"


@pytest.mark.parametrize("lang, kind", [("fr", "openers"), ("", "openers"), ("EN", "openers")])
def test_an_unknown_language_lists_the_valid_ones(lang, kind):
    with pytest.raises(ValueError, match="valid languages are en, pt, shared"):
        words.words(lang, kind)


@pytest.mark.parametrize("kind", ["opener", "", "measures", "units.furlongs"])
def test_an_unknown_kind_lists_the_valid_ones(kind):
    with pytest.raises(ValueError, match=r"valid kinds are .*openers.*units\.currency"):
        words.words("en", kind)


def test_a_kind_a_language_lacks_is_empty_and_every_joins_them_in_order():
    assert words.words("en", "accented_endings") == () and words.words("pt", "accented_endings")
    assert words.every("frequency_each") == ("every", "each", "per", "cada", "por")
    assert words.every("units.currency")[:3] == ("€", "$", "£")


@pytest.mark.parametrize("lang", LANGS)
def test_the_stopword_lists_named_exist(lang):
    assert len(lexical.stop_words(lang)) > 20


def test_the_files_are_shipped_with_the_package():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "wordlists/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["rag.text"]


@pytest.mark.parametrize("tokens, text, matched", [
    (["m"], "m", "m"), (["m"], "m.", "m"), (["m"], "more", None), (["€"], "€5", "€"), (["º"], "ºC", "º"),
    (["m²"], "m²", "m²"), (["mês", "meses"], "meses", "meses"), (["up to"], "up to", "up to"),
    (["up to"], "upto", None), (["A.B"], "a.b", "a.b"), (["x"], "xy", None),
])
def test_alternation_matches_tokens_whole_and_signs_touching(tokens, text, matched):
    m = re.match(words.alternation(tokens), text, re.IGNORECASE)
    assert (m.group() if m else None) == matched


@pytest.mark.parametrize("opener", words.every("openers"))
def test_each_opener_opens_a_followup_in_capitals_too(opener):
    question = f"{opener} the deposit paid by the tenant last year for the larger flat?"
    assert is_followup(question) and is_followup(question.upper())


@pytest.mark.parametrize("lang", LANGS)
def test_each_measure_word_asks_for_a_value_of_its_kind(lang):
    for kind in words.groups("measures"):
        for w in words.words(lang, f"measures.{kind}"):
            assert terms.MEASURES[w] == kind


@pytest.mark.parametrize("unit", words.every("units.currency"))
def test_each_currency_gives_a_price_and_a_quantity(unit):
    assert terms.holds_value("cost", f"It is 20 {unit}.")
    assert terms.identifier_numbers(f"Room 20 {unit}?") == []


@pytest.mark.parametrize("unit", words.every("units.length") + words.every("units.area"))
def test_each_length_or_area_gives_a_size_and_a_quantity(unit):
    assert terms.holds_value("size", f"It is 20 {unit}.")
    assert terms.identifier_numbers(f"Room 20 {unit}?") == []


@pytest.mark.parametrize("lang", LANGS)
def test_number_words_are_one_to_twelve(lang):
    assert len(words.words(lang, "number_words")) == 12
    assert terms.NUMBER_WORDS[lang] == list(words.words(lang, "number_words"))


def test_demonstratives_point_at_the_next_word_in_both_languages():
    for w in words.every("demonstratives"):
        assert referred_words(f"And {w} amount?") == {"amount"}, w
        assert referred_words(f"E {w.upper()} VALOR?") == {fold("valor")}, w

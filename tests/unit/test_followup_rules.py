"""Follow-up rules (`rag.searching.followup`) on hand-made questions, no model: the connectives that open a follow-up
in both languages, an accented word that folds to a connective, referring words and demonstratives, and
edge inputs (empty, punctuation only, capitals, accents dropped)."""

from __future__ import annotations

import pytest

from rag.searching.followup import is_followup, names_own_subject, referred_words, refers_back


@pytest.mark.parametrize("question", [
    "É possível pagar a renda em duas prestações?",
    "é possível pagar a renda em duas prestações?",
    "Ê possível pagar a renda em duas prestações?",  # a typo's circumflex is no connective either
])
def test_an_accented_e_is_not_the_connective_e(question):
    # "É" (is) folds to "e" (and); read as the connective it made a question that names its own subject a
    # follow-up, and the previous question was searched in front of it.
    assert not is_followup(question)
    assert not refers_back(question)


@pytest.mark.parametrize("question", [
    "E a renda?", "e a renda, quando se paga?", "E se eu sair antes do fim do contrato de arrendamento?",
    "Também para os ficheiros PDF da pasta partilhada?", "Tambem para os ficheiros PDF da pasta partilhada?",
    "TAMBÉM para os ficheiros PDF da pasta partilhada?", "Então e o depósito que paguei no início do ano?",
    "Entao e o depósito que paguei no início do ano?", "Quanto a prazos de pagamento das faturas mensais?",
    "And what does the slider change in the settings page?", "AND what does the slider change in the settings?",
    "What about the deposit that the tenant paid last year?", "So what about fees for the larger boats?",
])
def test_a_connective_opens_a_followup_with_or_without_its_accents(question):
    assert is_followup(question)


@pytest.mark.parametrize("question, followup", [
    ("", False), ("   ", False), ("?!...", False), ("Why?", True), ("Porquê?", True),
    ("What is SKU-88213?", False), ("Where is the index stored by default?", False),
    ("Onde fica guardado o índice por omissão?", False),
    ("ANDROID phones: how do I install the app there?", False),  # "and" inside a word is no connective
    ("Ouvir música no barco é permitido pelo regulamento?", False),  # nor "ou" inside "ouvir"
    ("How do I fix it?", True), ("Como resolvo isso?", True), ("O que faço com isso?", True),
])
def test_is_followup_on_edge_inputs_in_both_languages(question, followup):
    assert is_followup(question) is followup


@pytest.mark.parametrize("question, refers", [
    ("And how do I fix it?", True), ("Como resolvo isso?", True), ("IT crashed, what now?", True),
    ("Capital of Peru?", False), ("Qual é a capital do Peru?", False), ("", False),
])
def test_refers_back(question, refers):
    assert refers_back(question) is refers


@pytest.mark.parametrize("question, words", [
    ("And under that amount?", {"amount"}), ("E esse valor, quem o paga?", {"valor"}),
    ("E ESSA QUANTIA?", {"quantia"}), ("Is that so?", set()), ("", set()),
    ("And how many birds are in the colony?", set()),
])
def test_referred_words(question, words):
    assert referred_words(question) == words


@pytest.mark.parametrize("question, own", [
    ("And what does the slider change?", True), ("E o que muda o cursor deslizante?", True),
    ("How do I fix it?", False), ("Any limits?", False), ("", False),
])
def test_names_own_subject(question, own):
    assert names_own_subject(question) is own

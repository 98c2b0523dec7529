"""The question's word rules (`rag.searching.terms`; its language: `rag.text.lexical`) on hand-made questions and
passages, no model: which numbers a question writes as names, which words ask for a measure and what holds
a value of it, content words and language, in both languages and on edge inputs (empty, capitals, accents)."""

from __future__ import annotations

import numpy as np
import pytest

from rag.text.lexical import analyze
from rag.text.languages import question_language
from rag.indexing.bm25 import LexicalIndex
from rag.searching.terms import MEASURES, holds_value, identifier_numbers, number_tokens, question_terms


@pytest.mark.parametrize("question, names", [
    # A count of people or things after a word of asking is a quantity: "4" is not a name a passage must write.
    ("Can 4 people share a berth?", []),
    ("CAN 4 PEOPLE SHARE A BERTH?", []),
    ("4 people, one berth?", []),
    ("Podem 3 pessoas dormir no barco 7?", ["7"]),
    ("Quantas pessoas cabem em 2 barcos?", []),
    # ... a label has its noun before it, and a year is a name wherever it stands.
    ("What is the Level 4 course price?", ["4"]),
    ("Who won the 2025 regatta?", ["2025"]),
    ("Qual é o preço do nível 2?", ["2"]),
    ("Qual é o preço do NÍVEL 2 na sala 12?", ["2", "12"]),
    ("In 1066?", ["1066"]),
    # ... and a unit, a currency, a word of amount or a figure's form make it a quantity.
    ("Can I upload a 60 MB file?", []),
    ("Who approves invoices over 5,000 euros?", []),
    ("At 10:30, 2.5 times, for 3 days, 20% or €5?", []),
    ("Um PDF com mais de 2000 páginas?", []),
    ("", []),
])
def test_identifier_numbers(question, names):
    assert identifier_numbers(question) == names


@pytest.mark.parametrize("unit", ["euros", "EUR", "dollars", "USD", "reais", "pounds", "€", "$", "£"])
def test_cost_values_know_every_currency_a_quantity_knows(unit):
    # A currency that makes a number a quantity is a price too: the cost words must know it.
    text = f"The hire is 20 {unit} a day."
    assert identifier_numbers(f"Is it 20 {unit}?") == []
    assert holds_value("cost", text) and holds_value("preço", text)


@pytest.mark.parametrize("term, text, held", [
    ("temperature", "Preheat the oven to 165 degrees Celsius.", True),
    ("temperatura", "Forno a 180 ºC.", True),
    ("temperature", "Keep it in the fridge.", False),
    ("custa", "São 45 euros.", True),
    ("cost", "Members may book them free of charge.", True),
    ("custa", "A inscrição é GRATUITA.", True),
    ("price", "Feel free to ask.", False),
    ("dura", "O contrato dura 5 anos.", True),
    ("long", "The bench is 2 m long.", True),
    ("often", "Inspected every 7 months.", True),
    ("often", "One beside each exit door.", False),
    ("frequência", "Limpeza todas as semanas.", True),
    ("size", "Standard plots measure 3 by 6 metres.", True),
    ("tamanho", "Um lote de 12 metros quadrados.", True),
    ("size", "There are 42 plots.", False),
    ("horário", "Abre às 9h30.", True),
    ("weather", "It is 20 degrees.", False),  # not a measure word
    ("cost", "", False),
])
def test_holds_value(term, text, held):
    assert holds_value(term, text) is held


def test_measure_words_cover_both_languages():
    kinds = {"temperature", "cost", "time", "duration", "frequency", "size"}
    assert set(MEASURES.values()) == kinds
    assert {"cost", "custa", "preço", "preco"} <= set(MEASURES)


@pytest.mark.parametrize("question, terms", [
    ("Qual é a receita do bolo de chocolate?", ["receita", "bolo", "chocolate"]),
    ("QUAL É A RECEITA DO BOLO DE CHOCOLATE?", ["receita", "bolo", "chocolate"]),
    ("Qual e a receita do bolo?", ["receita", "bolo"]),  # accents dropped: still words of asking
    ("What does ERR-4017 mean?", ["err-4017"]),
    ("What does the app do with PDFs?", ["app", "pdfs"]),
    ("", []),
])
def test_question_terms(question, terms):
    assert question_terms(question) == terms


@pytest.mark.parametrize("question, folder, lang", [
    ("What is the deposit?", (), "en"), ("Qual é o depósito?", (), "pt"), ("QUAL É O DEPÓSITO?", (), "pt"),
    ("¿Cuál es la receta del pastel de chocolate?", ("en", "pt"), "es"),  # a clear guess stands alone
    ("Wie hoch ist die Miete für die Wohnung?", ("en",), "de"),
    ("Quelle est la caution pour l'appartement ?", (), "fr"),
    ("Quando é que abre a marina?", (), "pt"), ("Can I keep a dog at home?", ("pt",), "en"),
    # Too short to tell alone ("E para…" could be Spanish): the likeliest of the folder's languages.
    ("E para juniores?", (), ""), ("E para juniores?", ("es", "pt"), "pt"),
    ("And for juniors?", ("en", "pt"), "en"), ("E para juniores?", ("en", "pt"), "pt"),
    ("", ("en",), ""), ("ERR-4017?", (), ""),
])
def test_question_language(question, folder, lang):
    assert question_language(question, folder) == lang


NFCORPUS_MIX = {"en": 97299, "fr": 153, "de": 62}  # passages by detected language, the real 97,514-passage folder


@pytest.mark.parametrize("question, folder, lang", [
    # An unclear question weighs each language the folder holds by its passages: a few misread passages do not
    # make a short English question French or German (with every language counted alike they did).
    ("Does Animal Protein Cause Osteoporosis?", NFCORPUS_MIX, "en"), ("Harmane", NFCORPUS_MIX, "en"),
    ("Does Animal Protein Cause Osteoporosis?", tuple(NFCORPUS_MIX), "de"),
    # A clearly likelier minority language still wins, and a clear question keeps its own language.
    ("Preço?", {"en": 107, "pt": 18}, "pt"), ("Horário?", {"en": 107, "pt": 18}, "pt"),
    ("Wie hoch ist die Miete für die Wohnung?", {"en": 10}, "de"),
    ("E para juniores?", {"es": 0, "pt": 3}, "pt"), ("Wifi?", {}, ""),
])
def test_an_unclear_questions_language_is_weighed_by_the_folders_passages(question, folder, lang):
    assert question_language(question, folder) == lang


@pytest.mark.parametrize("number, question, tokens", [
    ("3", "", ("3", "three", "tres")),
    ("2", "How much is Level 2?", ("2",)),
    ("2", "What are the 2 types of rock?", ("2", "two", "dois")),
    ("12", "", ("12", "twelv", "doz")),  # stemmed, as the index writes them
    ("13", "", ("13",)),
])
def test_number_tokens(number, question, tokens):
    assert number_tokens(number, question) == tokens


WORDS = ["rent", "deposit", "kiln", "glaze", "pets", "boiler", "invoice", "marina", "ferry", "tide"]


def _texts(common: bool = False, n: int = 400, seed: int = 5) -> list[str]:
    """Random bags of ten words, some passages empty, many ties. `common`: "rent", "kiln" and "tide" are in
    about three passages of four, so the index holds them as columns (`COLUMN_ABOVE`)."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(0, 9))) for _ in range(n)]
    if common:
        texts = [t + "".join(f" {w}" for w in ("rent", "kiln", "tide") if rng.random() < 0.7) for t in texts]
    return texts


def _folder(common: bool = False) -> LexicalIndex:
    texts = _texts(common)
    return LexicalIndex.build(texts, ["en"] * len(texts))


FOLDERS = pytest.mark.parametrize("common", [False, True], ids=["listed", "columns"])
BAGS = [{"rent": 1.0}, {"rent": 0.5, "kiln": 0.3, "tide": 0.2}, {"ferry": 1.0, "zebra": 1.0}, {"zebra": 1.0},
        {"ferry": 0.4, "rent": 0.6, "glaze": 0.1}, {}]


@FOLDERS
def test_the_folder_shapes_are_what_the_tests_say(common):
    assert bool(_folder(common)._index.columns) == common


@FOLDERS
@pytest.mark.parametrize("words", [["rent"], ["rent", "kiln", "tide"], ["ferry", "rent", "glaze"], ["zebra"], []])
def test_scores_are_bm25s_own(common, words):
    # The index reads bm25s's arrays (and keeps the commonest words as columns): a question's scores are the
    # ones bm25s computes from the same tokens.
    import bm25s

    lex, texts = _folder(common), _texts(common)
    ref = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    ref.index([analyze(t, "en") for t in texts], show_progress=False)
    want = ref.get_scores([w for w in words if w in ref.vocab_dict]) if any(w in ref.vocab_dict for w in words) \
        else np.zeros(400)
    np.testing.assert_allclose(lex.weighted_scores(dict.fromkeys(words, 1.0)), want, rtol=1e-6)


@FOLDERS
@pytest.mark.parametrize("word", WORDS + ["zebra"])
def test_a_words_holders_and_support_agree_whether_listed_or_a_column(common, word):
    lex = _folder(common)
    token, = analyze(word, "en")  # "invoice" -> "invoic"
    holders = lex.holders(word, "en")
    s = lex.weighted_scores({token: 1.0})
    assert holders.tolist() == np.flatnonzero(s > 0).tolist()
    assert [lex._holds(i, token) for i in range(lex.size)] == [bool(x > 0) for x in s]
    assert lex.known(token) == bool(holders.size)


@FOLDERS
@pytest.mark.parametrize("bag", BAGS)
@pytest.mark.parametrize("pick, n", [(slice(None), 20), (slice(None, None, 3), 5), (slice(10, 12), 20), (slice(0, 0), 5)])
def test_top_among_ranks_those_rows_as_top_ranks_the_whole_folder(common, bag, pick, n):
    # Feedback's second BM25 search (rag.searching.search) reads only the first search's pool: the same scores, order
    # and ties as the whole folder's ranking, keeping the pool's rows.
    lex = _folder(common)
    rows = np.arange(lex.size)[pick]
    whole = [(r, s) for r, s in lex.top(bag, lex.size) if r in set(rows.tolist())][:n]
    assert lex.top_among(bag, rows, n) == whole


@FOLDERS
@pytest.mark.parametrize("bag", BAGS)
@pytest.mark.parametrize("n", [0, 1, 7, 20, 1000])
@pytest.mark.parametrize("masked", [False, True])
def test_top_is_the_best_n_scoring_positions_ties_in_position_order(common, bag, n, masked):
    # What `top` promises, against a plain sort of every score: positive scores only, best first, equal
    # scores in position order (the folder has many ties and many passages without the words).
    lex = _folder(common)
    mask = (np.arange(lex.size) % 2).astype(np.float32) if masked else None
    s = lex.weighted_scores(bag, mask)
    want = sorted(((i, float(s[i])) for i in range(lex.size) if s[i] > 0), key=lambda p: (-p[1], p[0]))[:n]
    assert lex.top(bag, n, mask) == want


@pytest.mark.parametrize("shape", ["continuous", "ties", "few scoring", "none scoring", "ties at every block's top"])
@pytest.mark.parametrize("size", [0, 1, 255, 256 * 30, 256 * 30 + 17])
@pytest.mark.parametrize("n", [0, 1, 20, 29, 30, 31, 500])
def test_the_best_positions_are_a_plain_sorts_whichever_way_they_are_selected(shape, size, n):
    # `_best` reads blocks' maxima first when the scores fall in at least n blocks, else every positive score:
    # both give a plain sort's first n positive scores, ties in position order.
    from rag.indexing.bm25 import _best

    rng = np.random.default_rng(size + n)
    s = {"continuous": lambda: rng.random(size),
         "ties": lambda: rng.integers(0, 4, size) / 2,
         "few scoring": lambda: (rng.random(size) < 0.01) * rng.random(size),
         "none scoring": lambda: np.zeros(size),
         "ties at every block's top": lambda: np.where(np.arange(size) % 256 == 7, 1.0, rng.random(size) * 0.5)}[shape]()
    s = s.astype(np.float32)
    want = sorted((i for i in range(size) if s[i] > 0), key=lambda i: (-s[i], i))[:n]
    assert _best(s, n).tolist() == want

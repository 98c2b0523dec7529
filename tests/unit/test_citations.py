"""rag/citations.py, the citation check, on hand-written answers."""

from __future__ import annotations

import pytest

from rag.citations import NO_ANSWER_SENTENCE, answer_sentences, check_citations, cited_numbers, numbers_text


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_an_empty_answer_has_nothing_to_flag(text):
    check = check_citations(text, [1, 2])
    assert check.ok and not check.refusal
    assert (check.cited, check.out_of_range, check.uncited) == ((), (), ())


def test_one_cited_sentence_is_fine():
    check = check_citations("Uploads stop at 50 MB [1].", [1])
    assert check.ok and check.cited == (1,)


def test_numbers_are_listed_once_in_order_of_first_use_and_sources_sorted():
    check = check_citations("A [3]. B [1, 3]. C [9][9]. D [2].", [3, 2, 1])
    assert (check.given, check.cited, check.out_of_range) == ((1, 2, 3), (3, 1, 2), (9,))
    assert check.flags == ["[9] is not one of the sources (1\u20133): it has no link"]


def test_an_answer_with_no_source_given_flags_every_number():
    check = check_citations("Something [1].", [])
    assert check.flags == ["[1] is not one of the sources (none): it has no link"]


@pytest.mark.parametrize("text", [
    NO_ANSWER_SENTENCE, NO_ANSWER_SENTENCE.upper(), f"*{NO_ANSWER_SENTENCE}*", f"  {NO_ANSWER_SENTENCE} [2] ",
])
def test_the_no_answer_sentence_is_a_refusal(text):
    check = check_citations(text, [1, 2])
    assert check.refusal and check.ok


def test_the_no_answer_sentence_beside_an_answer_is_flagged():
    check = check_citations(f"Uploads stop at 50 MB [1]. {NO_ANSWER_SENTENCE}", [1])
    assert not check.refusal and check.mixed_refusal
    assert check.flags == ["the no-answer sentence stands next to other text"]


@pytest.mark.parametrize("text", [
    "## Limits\nUploads stop at 50 MB [1].",  # a heading
    "What it keeps:\n- every page [1].",  # a line that introduces a list
    "Uploads stop at 50 MB [1].\n---",  # a rule
])
def test_headings_list_openers_and_rules_need_no_citation(text):
    assert check_citations(text, [1]).uncited == ()


def test_a_long_uncited_sentence_is_shortened_in_its_flag():
    sentence = "Ação " * 40 + "fim."
    (flag,) = check_citations(sentence, [1]).flags
    assert flag.startswith("no citation: \u201cAção Ação") and flag.endswith("\u2026\u201d")
    assert len(flag) < 120


@pytest.mark.parametrize("text, links", [
    ("See [the guide](guide.md) [1].", 1),
    ("See https://example.org/x [1].", 1),
    ("See guide.md#char=10,20 [1].", 1),
    ("No link here [1].", 0),
])
def test_links_the_generator_wrote_are_counted(text, links):
    check = check_citations(text, [1])
    assert check.links == links
    assert check.ok == (links == 0)


def test_what_a_quote_holds_is_the_documents_not_the_generators():
    quote = "Codes look like [7] and https://example.org/x."
    text = f"{quote} [1]"
    check = check_citations(text, [1], quoted=[(0, len(quote))])
    assert check.ok and check.cited == (1,) and check.links == 0
    assert not check_citations(text, [1]).ok  # without the span, [7] and the URL are the generator's


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("[1]", ["[1]"]),  # markers alone, with no sentence before them
    ("Olá. Tudo bem? [2]", ["Olá.", "Tudo bem? [2]"]),
    ("Version 2.5 ships [1].", ["Version 2.5 ships [1]."]),
])
def test_answer_sentences(text, expected):
    assert answer_sentences(text) == expected


@pytest.mark.parametrize("text, expected", [("", []), ("[ 12 ]", [12]), ("[1,2 , 3]", [1, 2, 3]), ("[1.5] [x]", [])])
def test_cited_numbers(text, expected):
    assert cited_numbers(text) == expected


@pytest.mark.parametrize("numbers, expected", [([], "none"), ([5], "5"), ([2, 1], "1\u20132"), ([1, 2, 4], "1, 2, 4")])
def test_numbers_text(numbers, expected):
    assert numbers_text(numbers) == expected

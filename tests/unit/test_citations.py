"""rag/deciding/citations.py, the citation check, on hand-written answers (its parts, sentence by sentence and marker
by marker: test_citation_marks.py)."""

from __future__ import annotations

import pytest

from rag.deciding.citations import NO_ANSWER_SENTENCE, check_citations


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

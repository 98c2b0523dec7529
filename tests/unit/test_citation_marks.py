"""The citation check (`rag.deciding.citations`) on edge inputs: empty answers, markers in odd places, quotes that
hold brackets, the no-answer sentence in disguise. Pure functions: no model, no index.
"""

from __future__ import annotations

import pytest

from rag.deciding.citations import (MARKER, NO_ANSWER_SENTENCE, answer_sentences, check_citations, cited_numbers,
                           is_no_answer, numbers_text)


@pytest.mark.parametrize("text, sentences", [
    ("", []),
    ("   \n\n ", []),
    ("No full stop at all", ["No full stop at all"]),
    ("One [1]. Two. [2] Three", ["One [1].", "Two. [2]", "Three"]),
    ("[1]", ["[1]"]),  # markers with nothing before them stay a piece of their own
    ("Claim.\n[1][2]\n", ["Claim. [1][2]"]),
    ("Version 2.5 is out [1]. Really?! Yes\u2026 [2]", ["Version 2.5 is out [1].", "Really?!", "Yes\u2026 [2]"]),
    ('He said "stop." [3] Then left.', ['He said "stop." [3]', "Then left."]),
    ("- first [1]\n- second [2]", ["- first [1]", "- second [2]"]),
    ("Olá. Tudo bem? [2]", ["Olá.", "Tudo bem? [2]"]),
])
def test_answer_sentences(text, sentences):
    assert answer_sentences(text) == sentences


@pytest.mark.parametrize("text, numbers", [
    ("", []),
    ("[1]", [1]),
    ("[ 1 , 2 ,3 ]", [1, 2, 3]),
    ("[1][1] [01]", [1, 1, 1]),
    ("[a] [1a] [] [-1] [1.5] (1) {2}", []),
    ("[[2]]", [2]),
    ("See [12345678901234567890].", [12345678901234567890]),
])
def test_cited_numbers(text, numbers):
    assert cited_numbers(text) == numbers


@pytest.mark.parametrize("text, refusal", [
    (NO_ANSWER_SENTENCE, True),
    (NO_ANSWER_SENTENCE.upper(), True),
    (NO_ANSWER_SENTENCE.rstrip("."), True),
    (f"**{NO_ANSWER_SENTENCE}**", True),
    (f"`{NO_ANSWER_SENTENCE}`", True),
    (f"\u201c{NO_ANSWER_SENTENCE}\u201d [1][2]", True),
    ("The   documents do not\ncontain the answer.", True),
    ("", False),
    ("The documents do not contain the answer, but see [1].", False),
    ("Documents do not contain the answer.", False),
])
def test_is_no_answer(text, refusal):
    assert is_no_answer(text) is refusal


@pytest.mark.parametrize("text, given, cited, out_of_range, uncited", [
    ("", [1], (), (), ()),
    ("Uploads may be 50 MB [1].", [], (), (1,), ()),  # no sources given: every number is out of range
    ("A [2]. B [1]. C [2].", [1, 2], (2, 1), (), ()),
    ("A [0]. B [3].", [1, 2], (), (0, 3), ()),
    ("## Limits\nThe limits are:\n- 50 MB [1]\n---", [1], (1,), (), ()),  # heading, list intro, rule exempt
    ("Fine [1]. Not cited. Also not", [1], (1,), (), ("Not cited.", "Also not")),
    ("Both say so [1, 2].", [1, 2], (1, 2), (), ()),
])
def test_check_citations_numbers_and_sentences(text, given, cited, out_of_range, uncited):
    c = check_citations(text, given)
    assert (c.cited, c.out_of_range, c.uncited) == (cited, out_of_range, uncited)
    assert c.ok is (not out_of_range and not uncited) and not c.refusal
    assert c.given == tuple(sorted(set(given)))


@pytest.mark.parametrize("text, links", [
    ("See [the file](notes.md) [1].", 1),
    ("At https://example.org/x and www.example.org [1].", 2),
    ("Open notes.md#char=10,20 [1].", 1),
    ("Nothing linked [1].", 0),
])
def test_links_written_by_the_generator_are_counted(text, links):
    c = check_citations(text, [1])
    assert c.links == links
    assert any("link(s) written by the generator" in f for f in c.flags) is bool(links)


def test_brackets_inside_a_quote_are_the_documents_not_citations():
    quote = "The spec says see [9] and https://example.org."
    text = f"{quote} [1]"
    plain = check_citations(text, [1])
    assert plain.out_of_range == (9,) and plain.links == 1  # read as the generator's own words
    masked = check_citations(text, [1], [(0, len(quote))])
    assert masked.ok and masked.cited == (1,) and masked.links == 0


def test_flags_read_as_sentences():
    c = check_citations(f"{NO_ANSWER_SENTENCE} But uploads may be 50 MB [4]. " + "word " * 40, [1, 2, 3])
    assert c.mixed_refusal and not c.refusal
    assert c.flags[0] == "[4] is not one of the sources (1\u20133): it has no link"
    assert c.flags[1].startswith("no citation: \u201cword word") and c.flags[1].endswith("\u2026\u201d")
    assert len(c.flags[1]) < 110  # a long sentence is shortened
    assert c.flags[2] == "the no-answer sentence stands next to other text"


@pytest.mark.parametrize("numbers, text", [
    ([], "none"), ([5], "5"), ([2, 1], "1\u20132"), ([1, 2, 4], "1, 2, 4"), ([3, 3], "3, 3"),
])
def test_numbers_text(numbers, text):
    assert numbers_text(numbers) == text


def test_marker_groups_the_numbers():
    assert [m.group(1) for m in MARKER.finditer("x [1] y [2, 3]")] == ["1", "2, 3"]

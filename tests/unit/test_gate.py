"""The gate's verdicts and structured refusals, on hand-made candidates (no model, no index)."""

from __future__ import annotations

import math

import pytest

from rag.deciding.explain import explain, header, paraphrase_note, refusal_sentence, unsaid_note
from rag.deciding.gate import gate
from rag.deciding.rule import ACROSS, ABSENT, DISTANCE, ELSEWHERE, EMPTY, JUDGE, JUDGED_OUT, KEPT, OFF_SUBJECT, OVER, SUPPORT, UNNAMED, UNSUPPORTED, WORDLESS, WORDS, SupportRule
from tests.unit.made import result, row

RULE = SupportRule(min_support=0.5, close=0.3, close_support=0.2)


def test_nothing_searched_is_an_empty_refusal():
    g = gate(result(), 0.8, 4, RULE)
    assert (g.failed, g.because, g.closest, g.citations) == (EMPTY, "", None, [])
    assert refusal_sentence(g) == 'NO ANSWER: nothing under cosine distance 0.800 for "q"'


def test_over_the_threshold_fails_the_distance_test_and_keeps_the_nearest_supported():
    g = gate(result(row(1, 0.9, support=0.1), row(2, 0.85, support=1.0)), 0.8, 4, RULE)
    assert g.verdicts == [OVER, OVER] and g.failed == DISTANCE and g.because == ""
    assert g.closest.chunk_id == "c2" and g.closest_supported.chunk_id == "c2" and g.needed_threshold == 0.85


def test_a_distance_refusal_also_names_an_absent_name():
    g = gate(result(row(1, 0.9, absent_names=("falcon",)), absent_names=("falcon",)), 0.8, 4, RULE)
    assert (g.failed, g.because, g.names) == (DISTANCE, ABSENT, ("falcon",))
    assert refusal_sentence(g).endswith('; the folder never mentions "falcon", which it names')


def test_kept_passages_are_cited_in_fused_order_up_to_the_cap():
    rows = [row(n, 0.5) for n in (1, 2, 3)]
    g = gate(result(*rows), 0.8, 2, RULE)
    assert g.verdicts == [KEPT, KEPT, "under threshold, over cap"] and refusal_sentence(g) is None and g.failed is None
    assert [(c.n, c.chunk_id, c.link) for c in g.citations] == [(1, "c1", "doc1.md#char=0,10"),
                                                                 (2, "c2", "doc2.md#char=0,10")]


def test_words_refusal_carries_the_best_support_and_the_share_it_needed():
    g = gate(result(row(1, 0.5, support=0.4, missing=("bake",)), row(2, 0.6, support=0.2, missing=("bake", "cake")),
                    terms=("bake", "cake", "oven"), language="en", folder_languages=("en", "pt")), 0.8, 4, RULE)
    assert g.verdicts == [UNSUPPORTED, UNSUPPORTED] and (g.failed, g.because) == (SUPPORT, WORDS)
    assert g.missing == ("bake",) and (g.best_support, g.needed_support) == (0.4, 0.5)
    assert g.near_languages == ("", "") and g.closest_supported is None and g.needed_threshold is None


def test_wordless_and_absent_name_refusals():
    wordless = gate(result(row(1, 0.5, wordless=True)), 0.8, 4, RULE)
    assert (wordless.failed, wordless.because) == (SUPPORT, WORDLESS)
    absent = gate(result(row(1, 0.5, absent_names=("falcon",), support=0.9), absent_names=("falcon",)), 0.8, 4, RULE)
    assert (absent.because, absent.names) == (ABSENT, ("falcon",))


def test_a_passage_lacking_a_name_names_it_and_whose_name_it_is():
    lantern = gate(result(row(1, 0.5, lacks_names=("lantern",)), terms=("deadline", "lantern")), 0.8, 4, RULE)
    assert (lantern.because, lantern.names, lantern.earlier) == (UNNAMED, ("lantern",), False)
    # A follow-up's number comes from the question before it ("And for juniors?" after Level 2).
    level = gate(result(row(1, 0.5, lacks_names=("2",)), terms=("juniors",)), 0.8, 4, RULE)
    assert (level.because, level.earlier) == (UNNAMED, True)


def test_a_follow_ups_passage_off_the_earlier_subject_has_its_own_verdict():
    off = row(1, 0.5, subject_support=0.0, subject_in_document=False)
    g = gate(result(off, question="At what temperature?", subject=("bake", "chocolate", "cake", "oven", "tray")),
             0.8, 4, RULE)
    assert g.verdicts == [OFF_SUBJECT] and (g.because, g.subject[:4]) == (ELSEWHERE, ("bake", "chocolate", "cake", "oven"))
    # Another passage of its document holds the subject: the same lease, the same subject.
    same_doc = row(1, 0.5, subject_support=0.0, subject_in_document=True)
    assert gate(result(same_doc), 0.8, 4, RULE).verdicts == [KEPT]
    # Lacking its own words says more than lacking the subject.
    both = row(1, 0.5, support=0.1, subject_support=0.0, subject_in_document=False)
    assert gate(result(both), 0.8, 4, RULE).verdicts == [UNSUPPORTED]


def test_a_held_code_passes_the_support_test_but_not_the_distance_test():
    coded = row(1, 0.5, support=0.0, codes=("err-4017",))
    assert gate(result(coded), 0.8, 4, RULE).verdicts == [KEPT]
    assert gate(result(row(1, 0.843, support=0.0, codes=("err-4017",))), 0.8, 4, RULE).verdicts == [OVER]


def test_the_judge_decides_with_its_cut_and_names_its_best_score():
    rule = SupportRule(0.5, judge_cut=0.5, judge_rules=("names",), judge_lang="en")
    rows = [row(1, 0.4, judge=-0.7), row(2, 0.5, judge=-2.3), row(3, 0.6, judge=None)]
    g = gate(result(*rows), 0.8, 4, rule)
    assert g.verdicts == [JUDGED_OUT] * 3 and (g.failed, g.because) == (SUPPORT, JUDGE)
    assert g.judge_best == -0.7 and g.closest_supported is None
    unread = gate(result(row(1, 0.4, judge=None)), 0.8, 4, rule)
    assert unread.because == JUDGE and unread.judge_best == -math.inf
    assert gate(result(row(1, 0.4, judge=0.5)), 0.8, 4, rule).verdicts == [KEPT]


def test_a_close_paraphrase_answer_names_the_words_no_kept_passage_holds():
    g = gate(result(row(1, 0.25, support=0.29, missing=("k1", "b")), terms=("bm25", "k1", "b")), 0.8, 4, RULE)
    assert g.kept and g.paraphrase_only and g.missing == ("k1", "b")
    assert paraphrase_note(g).startswith("Kept as close paraphrases: the passages hold at most 29%")
    assert g.unsaid == ("k1", "b") and unsaid_note(g) is None  # the paraphrase caution names them instead
    held = gate(result(row(1, 0.5, support=0.8, missing=("juniors",)), terms=("course", "juniors")), 0.8, 4, RULE)
    assert paraphrase_note(held) is None and held.unsaid == ("juniors",)
    assert unsaid_note(held) == 'The quoted passages never mention "juniors": check that they answer what you asked.'


# --- a passage in another language than the question's (the multilingual side) ---------------------------

ACROSS_RULE = SupportRule(min_support=0.5, close=0.3, close_support=0.2, across_cut=0.55)


def across(n: int, side: float, distance: float = 0.95, **fields):
    """A passage in another language: far by MiniLM, holding none of the question's words."""
    return row(n, distance, support=0.0, across=True, side_distance=side, lang="pt", **fields)


def test_a_passage_in_another_language_is_judged_by_its_multilingual_distance_alone():
    g = gate(result(across(1, 0.50), across(2, 0.60), row(3, 0.95, support=1.0)), 0.8, 4, ACROSS_RULE)
    # The first is kept though it is far by MiniLM and holds no word; the second is over the cut; the third, in
    # the question's language, is judged by the threshold as ever.
    assert g.verdicts == [KEPT, OVER, OVER]  # row 2: over the cut, and the threshold judges it as any other
    # The lowest threshold that lets a passage through is row 1's multilingual distance (it bounds the cut).
    assert g.closest_supported.chunk_id == "c1" and g.needed_threshold == 0.50
    refused = gate(result(across(1, 0.50), row(3, 0.95, support=1.0)), 0.3, 4, ACROSS_RULE)
    assert refused.failed == DISTANCE and refused.needed_threshold == 0.50
    assert "A threshold of 0.500 would let doc1.md through" in " ".join(explain(refused).details)
    assert explain(refused).best.endswith("over threshold at multilingual distance 0.500; a threshold of 0.500 would "
                                          "let it through.")


@pytest.mark.parametrize("fields", [{"lacks_names": ("heron",)}, {"absent_names": ("falcon",)},
                                    {"wordless": True}])
def test_across_languages_the_name_tests_still_hold(fields):
    g = gate(result(across(1, 0.40, **fields)), 0.8, 4, ACROSS_RULE)
    assert g.verdicts == [OVER] and g.failed


def test_a_threshold_under_the_multilingual_cut_lowers_it_and_at_zero_nothing_passes():
    rows = result(across(1, 0.50), across(2, 0.30))
    assert gate(rows, 0.8, 4, ACROSS_RULE).verdicts == [KEPT, KEPT]  # the calibrated cut, 0.55, decides
    low = gate(rows, 0.4, 4, ACROSS_RULE)
    assert low.verdicts == [OVER, KEPT] and low.across_cut == 0.4
    none = gate(rows, 0.0, 4, ACROSS_RULE)
    assert set(none.verdicts) == {OVER} and none.because == ACROSS and "need 0.000 or less" in refusal_sentence(none)


def test_a_passage_in_another_language_holding_a_code_passes_as_ever():
    # "o erro ERR-3001 resolve-se como?" of an English table row: the code, written alike in every language.
    g = gate(result(across(1, 0.70, distance=0.7, codes=("err-3001",))), 0.8, 4, ACROSS_RULE)
    assert g.verdicts == [KEPT]


def test_without_a_multilingual_cut_a_passage_in_another_language_is_judged_as_any_other():
    g = gate(result(across(1, 0.40)), 0.8, 4, RULE)
    assert g.verdicts == [OVER] and g.because == ""


def test_when_every_candidate_is_in_another_language_the_refusal_says_so():
    g = gate(result(across(1, 0.62), across(2, 0.70), language="en", folder_languages=("en", "pt")), 0.8, 4, ACROSS_RULE)
    assert (g.failed, g.because, g.across_best) == (DISTANCE, ACROSS, 0.62)
    assert refusal_sentence(g) == ('NO ANSWER: the closest passages are in Portuguese, and none is close enough in meaning '
                         'to "q" (best multilingual distance 0.620; English questions need 0.550 or less)')
    assert header(g) == "no passage is close enough in meaning (they are in another language)"

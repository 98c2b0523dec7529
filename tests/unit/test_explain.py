"""explain(): a gate verdict in words, on hand-made candidates (no model, no index)."""

from __future__ import annotations

import pytest

from rag.deciding.explain import (LOST_HINT, explain, paraphrase_note, passing_threshold, refusal_sentence,
                                  unsaid_note)
from rag.deciding.gate import gate
from rag.deciding.rule import KEPT, SupportRule
from tests.unit.made import result, row

RULE = SupportRule(min_support=0.5, close=0.3, close_support=0.2)
JUDGE_RULE = SupportRule(0.5, judge_cut=0.5, judge_rules=("names",), judge_lang="en")


def test_the_threshold_printed_really_lets_the_passage_through():
    # 0.8434 printed to the nearest thousandth is 0.843, and gating at 0.843 still refuses it.
    near = row(1, 0.8434, support=1.0)
    e = explain(gate(result(near, question="What does ERR-4017 mean?"), 0.8, 4, RULE))
    assert e.needed_threshold == 0.844
    assert e.threshold == ("A threshold of 0.844 would let doc1.md through (the nearest passage that holds the "
                           "question's words).")
    assert gate(result(near), e.needed_threshold, 4, RULE).verdicts == [KEPT]
    printed_nearest = float(f"{near.distance:.3f}")
    assert refusal_sentence(gate(result(near), printed_nearest, 4, RULE)) is not None


@pytest.mark.parametrize("distance", [0.1, 0.843, 0.8430000001, 0.6749999999, 0.9999, 1.2345])
def test_passing_threshold_is_never_under_the_distance_nor_a_thousandth_over(distance):
    t = passing_threshold(distance)
    assert distance <= t < distance + 0.001 + 1e-12 and float(f"{t:.3f}") == t


def test_a_distance_refusal_in_words():
    e = explain(gate(result(row(1, 0.9, support=0.1), row(2, 0.85, support=1.0), question="Where is it kept?"),
                     0.8, 4, RULE))
    assert (e.refused, e.reason) == (True, "nothing passed the threshold")
    assert e.refusal == 'NO ANSWER: nothing under cosine distance 0.800 for "Where is it kept?"'
    # The best candidate is the search's first row, not the nearest by distance (a trial's refusal named an
    # unrelated row of another sheet, nearer by distance, while the search's first row was the right one).
    assert e.best == ("Best candidate, the search's first row: doc1.md · Section 1: over threshold at distance 0.900, "
                      "and holds 10% of the words, needs 50%.")
    assert e.closest == "Closest by distance: doc2.md · Section 2 at cosine distance 0.850 (row 2 of the search)."
    # At a glance: one sentence of why and the best candidate; the rest one click away.
    assert e.lines == (e.refusal, e.best)
    assert e.details == (e.closest, e.threshold)


def test_the_best_candidate_line_says_what_it_lacks_and_what_would_let_it_through():
    g = gate(result(row(1, 0.5, support=0.2, missing=("bake", "cake")), terms=("bake", "cake", "oven")), 0.8, 4, RULE)
    e = explain(g)
    assert e.best.endswith(": lacks the question's words: \"bake\", \"cake\" (holds 20% of the words, needs 50%).")
    assert e.closest == ""  # the first row is the nearest too: said once
    over = explain(gate(result(row(1, 0.8434, support=1.0)), 0.8, 4, RULE))
    assert over.best.endswith("over threshold at distance 0.843; a threshold of 0.844 would let it through.")


def test_words_refusal_and_no_threshold_line():
    g = gate(result(row(1, 0.5, support=0.4, missing=()), row(2, 0.6, support=0.3, missing=()),
                    question="How do I bake?", terms=("bake",), language="en"), 0.8, 4, RULE)
    e = explain(g)
    assert e.reason == "the passages close enough never mention the question's words"
    assert e.refusal == ('NO ANSWER: no passage under cosine distance 0.800 mentions enough of the words of '
                         '"How do I bake?" (the best holds 40%; 50% needed)')
    assert e.needed_threshold is None
    assert e.threshold == ("No threshold would let a passage through: none of the candidates holds enough of the "
                           "question's words (and the names it writes, and a follow-up's subject). If your documents "
                           f"say it in other words, ask again with their words; {LOST_HINT}.")
    # A surface without "Why wasn't it found?" does not point at it.
    assert explain(g, lost_hint="").threshold.endswith("ask again with their words.")


def test_words_refusal_names_the_missing_words_and_the_other_language_one_click_away():
    g = gate(result(row(1, 0.5, support=0.2, missing=("bolo", "receita"), lang="en"),
                    question="Qual é a receita do bolo?", terms=("receita", "bolo"), language="pt"), 0.8, 4, RULE)
    e = explain(g)
    assert e.refusal == ('NO ANSWER: the passages under cosine distance 0.800 never mention "receita" or "bolo" '
                         '(words of "Qual é a receita do bolo?")')
    # The hint is conditional advice, not the reason: in the details, never in the sentence at a glance.
    assert e.hint == ("The passages under the threshold are in English and the question in Portuguese: if the answer "
                      "is in them, ask in English (the search looks for the question's own words).")
    assert e.hint in e.details and e.hint not in e.lines


def test_wordless_refusal_in_words():
    e = explain(gate(result(row(1, 0.5, wordless=True), question="E então?"), 0.8, 4, RULE))
    assert e.reason == "the question has no word of its own to look for"
    assert e.refusal.startswith('NO ANSWER: "E então?" has no word of its own to look for')
    assert e.threshold == ("No threshold would let a passage through: the question has no word of its own that a "
                           "passage could hold.")


def test_absent_name_refusal_in_words():
    e = explain(gate(result(row(1, 0.5, absent_names=("falcon",), support=0.9), absent_names=("falcon",),
                            question="When does Project Falcon go live?"), 0.8, 4, RULE))
    assert e.reason == "the question names something the folder never mentions"
    assert e.refusal == 'NO ANSWER: the folder never mentions "falcon", which "When does Project Falcon go live?" names'
    assert e.threshold == 'No threshold would let a passage through: the folder never mentions "falcon".'


def test_unnamed_refusal_in_words_its_own_name_and_the_earlier_questions():
    e = explain(gate(result(row(1, 0.5, lacks_names=("lantern",)), question="What is the deadline of Project Lantern?",
                            terms=("deadline", "project", "lantern")), 0.8, 4, RULE))
    assert e.reason == "the passages close enough do not mention the name the question asks about"
    assert e.refusal.endswith('never mention "lantern", which it names')
    earlier = explain(gate(result(row(1, 0.5, lacks_names=("2",)), question="And for juniors?", terms=("juniors",)),
                           0.8, 4, RULE))
    assert earlier.refusal.endswith('never mention "2", which the question before it names')


def test_a_follow_ups_off_subject_refusal_in_words():
    off = row(1, 0.5, subject_support=0.0, subject_in_document=False)
    e = explain(gate(result(off, question="At what temperature?", subject=("bake", "chocolate", "cake")), 0.8, 4, RULE))
    assert e.reason == "the passages close enough are not about the earlier question's subject"
    assert e.refusal == ('NO ANSWER: the passages under cosine distance 0.800 that hold the words of "At what '
                         'temperature?" never mention "bake" or "chocolate" or "cake", the subject of the question '
                         'before it')


def test_judge_refusal_in_words():
    g = gate(result(row(1, 0.4, judge=-2.314), row(2, 0.5, judge=None), question="How old was Rollo?"), 0.7, 4,
             JUDGE_RULE)
    e = explain(g)
    assert e.reason == "the judge read the closest passages and none answers it"
    assert e.refusal == ('NO ANSWER: the judge read the passages under cosine distance 0.700 and none answers "How '
                         'old was Rollo?" (best judge score -2.31; English needs 0.50 or more)')
    assert e.threshold.startswith("No threshold would let a passage through: the judge, which reads the question "
                                  "with each passage, found none that answers it.")
    unread = explain(gate(result(row(1, 0.4, judge=None)), 0.7, 4, JUDGE_RULE))
    assert "(it read none of them; English needs 0.50 or more)" in unread.refusal
    passing = explain(gate(result(row(1, 0.4, judge=-1.0), row(2, 0.75, judge=0.9)), 0.7, 4, JUDGE_RULE))
    assert passing.threshold == ("A threshold of 0.750 would let doc2.md through (the nearest passage the judge "
                                 "says answers).")


def test_nothing_indexed_and_still_indexing():
    g = gate(result(), 0.8, 4, RULE)
    assert explain(g).empty == "The folder has nothing indexed yet: add documents in the sidebar."
    assert explain(g, indexing=3).empty == ("Nothing is indexed yet: 3 file(s) are still being indexed (see the "
                                            "sidebar). Ask again once they are.")
    assert explain(g).closest == explain(g).threshold == ""


def test_an_answer_has_nothing_to_explain_but_its_passages():
    g = gate(result(row(1, 0.5), row(2, 0.9)), 0.8, 4, RULE)
    e = explain(g, passage=g.candidates[0])
    assert (e.refused, e.reason, e.refusal, e.lines) == (False, "", "", ())
    assert e.passage == "It was found and cited as [1] (doc1.md, fused rank 1, distance 0.500)."
    over = explain(g, passage=g.candidates[1]).passage
    assert over.endswith("its distance 0.900 is over the threshold 0.800; a threshold of 0.900 would let it through.")


def test_each_passage_verdict_in_words():
    rows = [row(1, 0.5, support=0.2, missing=("bake",)), row(2, 0.5, absent_names=("falcon",)),
            row(3, 0.5, lacks_names=("lantern",)), row(4, 0.5, subject_support=0.0, subject_in_document=False),
            row(5, 0.8434)]
    g = gate(result(*rows), 0.8, 4, RULE)
    said = [explain(g, passage=c).passage for c in rows]
    assert "holds 20% of the question's words, under the 50% the support test asks: it does not mention bake" in said[0]
    assert "the question names falcon, which the folder never mentions" in said[1]
    assert "it does not mention lantern, which the question names" in said[2]
    assert "none of the question before it" in said[3]
    assert said[4].endswith("a threshold of 0.844 would let it through.")  # rounded up, as the refusal's
    judged = gate(result(row(1, 0.4, judge=-1.0)), 0.7, 4, JUDGE_RULE)
    assert explain(judged, passage=judged.candidates[0]).passage.endswith(
        "found it does not answer: its score is -1.00, under the cut of 0.50.")


def test_paraphrase_and_unsaid_notes():
    kept = gate(result(row(1, 0.25, support=0.29, missing=("k1", "b")), terms=("bm25", "k1", "b")), 0.8, 4, RULE)
    assert paraphrase_note(kept) == ("Kept as close paraphrases: the passages hold at most 29% of the question's words "
                                    '(50% otherwise), and none mentions "k1" or "b". Check that they answer what you '
                                    "asked.")
    held = gate(result(row(1, 0.5, support=0.8, missing=("juniors",)), terms=("course", "juniors")), 0.8, 4, RULE)
    assert unsaid_note(held) == 'The quoted passages never mention "juniors": check that they answer what you asked.'
    judged = gate(result(row(1, 0.5, judge=2.0, missing=("juniors",))), 0.8, 4, JUDGE_RULE)
    assert judged.kept and unsaid_note(judged) is None  # the judge read question and passage together

"""Answerability pairs from SQuAD 2.0 train (lab.answerability_data), on the real file's articles."""

import random

import pytest

from lab.answerability_data import article_pairs, split_of_doc
from lab.relevance_data import HELD_OUT, load


def _shares_text(passage: str, paragraph: str) -> bool:
    body = passage.split("]", 1)[1]
    return any(paragraph[k:k + 40] in body for k in range(0, max(1, len(paragraph) - 40), 10))


@pytest.fixture(scope="module")
def three():
    arts = [a for a in load() if split_of_doc(a["doc"]) == "train"
            and any(n is not None and n < len(p["qas"]) for p in a["paragraphs"] for n in [p["n_answerable"]])][:3]
    out = []
    for a in arts:
        out += article_pairs(a, [], random.Random(a["doc"]), p_same=1.0, p_far=0.0)
    return arts, out


def test_each_unanswerable_question_is_a_near_miss_of_its_own_paragraph_and_each_answer_is_labelled_one(three):
    arts, pairs = three
    where = {q["id"]: (k, p) for a in arts for p in a["paragraphs"] for k, q in enumerate(p["qas"])}
    near = [p for p in pairs if p.kind == "near-miss"]
    answers = [p for p in pairs if p.kind == "answer"]
    assert len(near) > 50 and len(answers) > 100
    for pr in near:
        k, paragraph = where[pr.qid]
        assert pr.label == 0.0 and k >= paragraph["n_answerable"]  # listed after the answerable ones
        assert _shares_text(pr.passage, paragraph["context"])
    for pr in answers:
        k, paragraph = where[pr.qid]
        assert pr.label == 1.0 and k < paragraph["n_answerable"]
        assert _shares_text(pr.passage, paragraph["context"])
    # A same-article negative is another paragraph's chunk, never the one its question is answered from.
    answered = {p.qid: p.passage for p in answers}
    same = [p for p in pairs if p.kind == "same-article"]
    assert len(same) > 50
    for pr in same:
        assert pr.label == 0.0 and pr.passage != answered[pr.qid]
    # Paragraphs whose boundary is unknown give nothing.
    unknown = {q["id"] for a in arts for p in a["paragraphs"] if p["n_answerable"] is None for q in p["qas"]}
    assert not unknown & {p.qid for p in pairs}


def test_the_split_is_by_article_and_the_ten_labelled_articles_are_held_out():
    assert {split_of_doc(d) for d in HELD_OUT} == {"heldout"}
    splits = [split_of_doc(d) for d in range(10, 442)]
    assert splits.count("valid") == 44 and splits.count("train") == 388

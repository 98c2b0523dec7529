"""The judge's training targets: where an answer lies in a pair's tokens, the near miss made by cutting the
answer's sentence, and how a span head's logits become one answerability score. Real tokenizer (the shipped
judge's), no model loaded."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import AutoTokenizer

from lab.judge_data import SPLITS, Pair, names_in, pairs, swapped, without_answer
from lab.train_judge import answer_tokens
from rag.deciding.judge import JUDGE_DIR, span_answerability

PASSAGE = "[Normans]\nRollo was a Viking leader. He died in 930 at Rouen. His son William succeeded him."


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(JUDGE_DIR), local_files_only=True)


def _pair(label: float, answer: str = "", passage: str = PASSAGE) -> Pair:
    at = passage.find(answer) if answer else -1
    return Pair("When did Rollo die?", passage, label, "en", "answer" if label else "near-miss", "Normans", "q1",
                at, len(answer) if answer else 0)


def _targets(tokenizer, item: Pair, max_length: int = 192):
    enc = tokenizer(item.question, item.passage, truncation="only_second", max_length=max_length,
                    return_offsets_mapping=True)
    return enc, answer_tokens(item, enc.sequence_ids(0), enc["offset_mapping"])


@pytest.mark.parametrize("answer", ["930", "930 at Rouen", "William", "Rollo"])
def test_an_answers_tokens_are_found_in_the_passage_not_the_question(tokenizer, answer):
    enc, (first, last) = _targets(tokenizer, _pair(1.0, answer))
    assert enc.sequence_ids(0)[first] == 1 and first <= last
    assert tokenizer.decode(enc["input_ids"][first:last + 1]).lower() == answer.lower()


def test_a_pair_without_an_answer_points_at_cls_and_a_lost_answer_is_not_learned_from(tokenizer):
    assert _targets(tokenizer, _pair(0.0))[1] == (0, 0)
    assert _targets(tokenizer, _pair(1.0))[1] == (-100, -100)  # an answer pair whose answer was not located
    # Cut off by the length limit: the answer's last token is gone, so neither end is learned.
    assert _targets(tokenizer, _pair(1.0, "William"), max_length=22)[1] == (-100, -100)


@pytest.mark.parametrize("text, at, answer, expected", [
    (PASSAGE, PASSAGE.find("930"), "930", "[Normans]\nRollo was a Viking leader. His son William succeeded him."),
    # The answer's words stay elsewhere in the passage: no near miss can be made from it.
    (PASSAGE, PASSAGE.find("William"), "Rollo", None),
    # Too little would be left.
    ("[T]\nHe died in 930.", 15, "930", None),
])
def test_the_near_miss_made_from_an_answer_drops_its_sentence(text, at, answer, expected):
    assert without_answer(text, at, answer) == expected


def _logits(n: int, peaks: dict[int, float]) -> torch.Tensor:
    t = torch.full((1, n), -5.0)
    for i, v in peaks.items():
        t[0, i] = v
    return t


# 10 tokens: [CLS] q q [SEP] p p p p p [SEP]
TYPES = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1, 1]])
MASK = torch.ones_like(TYPES)


@pytest.mark.parametrize("start, end, expected", [
    ({5: 3.0, 0: 1.0}, {6: 2.0, 0: 1.0}, 3.0),      # span 5..6 (5) beats [CLS] (2)
    ({5: 1.0, 0: 3.0}, {6: 1.0, 0: 3.0}, -4.0),     # [CLS] wins: no answer
    ({2: 9.0, 0: 0.0}, {2: 9.0, 0: 0.0}, -10.0),    # the question's own tokens never count as the answer
    ({9: 9.0, 0: 0.0}, {9: 9.0, 0: 0.0}, -10.0),    # nor the closing [SEP]
    ({6: 4.0, 0: 0.0}, {5: 4.0, 0: 0.0}, -1.0),     # an end before its start is no span
])
def test_span_answerability_is_the_best_passage_span_less_cls(start, end, expected):
    got = span_answerability(_logits(10, start), _logits(10, end), TYPES, MASK)
    assert got.shape == (1,) and got.item() == pytest.approx(expected)


def test_a_span_longer_than_allowed_does_not_count():
    start, end = _logits(10, {4: 4.0, 0: 0.0}), _logits(10, {8: 4.0, 0: 0.0})
    assert span_answerability(start, end, TYPES, MASK, longest=5).item() == pytest.approx(8.0)
    assert span_answerability(start, end, TYPES, MASK, longest=4).item() == pytest.approx(-1.0)


@pytest.mark.parametrize("split, articles, expected", [
    ("train", 1, {"Normans"}),
    ("train", 2, {"Normans", "Victoria_(Australia)"}),
    ("train+dev", 0, {*SPLITS["train"], *SPLITS["dev"]}),
])
def test_pairs_come_from_the_articles_asked_for_and_no_other(split, articles, expected):
    # A learning curve trains on the first N articles; `train+dev` once the dev articles have chosen what they
    # chose. Never a test article.
    got = pairs(split, ("en",), articles=articles)
    assert {p.article for p in got} == expected
    assert not {p.article for p in got} & set(SPLITS["test"])


def test_a_swapped_question_asks_of_something_its_passage_never_mentions():
    got = [p for p in pairs("train", ("en",), articles=1, p_swapped=1.0) if p.kind == "swapped"]
    assert got and all(p.label == 0.0 for p in got)
    for p in got:
        new = [n for n in names_in(p.question) if n.lower() not in p.passage.lower()]
        assert new, p.question  # the swapped-in name or number is not in the passage


@pytest.mark.parametrize("question, expected", [
    ("When did Rollo die in 930?", {"When did William die in 930?", "When did Rollo die in 911?"}),
    ("Who ruled?", {None}),  # nothing to swap
])
def test_a_name_is_swapped_for_a_name_and_a_number_for_a_number(question, expected):
    passage = "Rollo died in 930 at Rouen."
    got = {swapped(question, passage, ["William", "911", "Rouen", "930"], random.Random(seed)) for seed in range(20)}
    assert got == expected

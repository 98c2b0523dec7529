"""The support model: its features, its file, the rule and the refusal it decides by, and its calibrated cut
(hand-made candidates and a hand-made model: no embedding model, no index)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from rag.deciding.calibration import (CALIBRATED_LANGUAGES, Calibration, calibrate, question_kinds,
                                      unrelated_questions)
from rag.deciding.explain import evidence_rule, evidence_summary, explain
from rag.deciding.gate import gate
from rag.deciding.rule import KEPT, MODEL, SUPPORT, UNNAMED, UNSUPPORTED, WEIGHED_OUT, SupportRule
from rag.deciding.support_model import FEATURES, SupportModel, features, load_support_model
from tests.unit.made import result, row

MODEL_RULE = SupportRule(0.5, model_cut=0.45, judge_rules=("names", "wordless", "codes"), model_lang="pt")


def model(langs=("pt",), side_weight=-3.0) -> SupportModel:
    """A model that reads only the multilingual distance (closer: likelier), standardised around 0.5."""
    coef = [0.0] * len(FEATURES)
    coef[FEATURES.index("side distance")] = side_weight
    return SupportModel(langs, (0.5,) * len(FEATURES), (0.1,) * len(FEATURES), tuple(coef), 0.0, "s1")


def test_features_compare_each_passage_with_the_best_of_its_question():
    r = result(replace(row(1, 0.4, side_distance=0.3, support=1.0), bm25_score=8.0),
               row(2, 0.6, side_distance=0.5, support=0.25), language="pt", terms=("a", "b"))
    m = features(r)
    at = {f: m[:, i].round(3).tolist() for i, f in enumerate(FEATURES)}
    assert at["distance gap"] == [0.0, 0.2] and at["side gap"] == [0.0, 0.2] and at["support gap"] == [0.0, 0.75]
    assert at["bm25 share"] == [1.0, 0.125] and at["log fused rank"] == [0.0, round(math.log(2), 3)]
    absent = features(result(replace(row(1, 0.4, side_distance=None), bm25_rank=None, bm25_score=None)))
    assert absent[0, FEATURES.index("side distance")] == 1.0  # a side that did not read it: as far as it goes
    assert absent[0, FEATURES.index("log bm25 rank")] == pytest.approx(math.log(21))
    assert features(result()).shape == (0, len(FEATURES))


def test_the_model_weighs_only_the_languages_it_reads():
    m = model()
    pt = m.scored(result(row(1, 0.4, side_distance=0.3), row(2, 0.4, side_distance=0.7), language="pt"))
    p1, p2 = (c.supported for c in pt.candidates)
    assert p1 > 0.99 and p2 < 0.01  # 2 standard units either side of the mean, weighed -3 each
    en = m.scored(result(row(1, 0.4, side_distance=0.3), language="en"))
    assert en.candidates[0].supported is None


def test_a_saved_model_loads_and_one_of_other_features_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model().to_json()), encoding="utf-8")
    assert load_support_model(path) == model()
    d = model().to_json()
    d["features"] = d["features"][:-1]
    path.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(ValueError, match="trained on features"):
        load_support_model(path)


def test_the_support_model_decides_with_its_cut_and_the_name_tests_beside_it():
    rows = [row(1, 0.4, supported=0.31), row(2, 0.5, supported=0.2), row(3, 0.6, supported=None)]
    g = gate(result(*rows, question="Quem fundou Fresno?", language="pt"), 0.8, 4, MODEL_RULE)
    assert g.verdicts == [WEIGHED_OUT] * 3 and (g.failed, g.because) == (SUPPORT, MODEL) and g.model_best == 0.31
    e = explain(g)
    assert e.reason == "the passages close enough do not support it"
    assert e.refusal == ('NO ANSWER: the passages under cosine distance 0.800 do not support "Quem fundou Fresno?" '
                         "(best 0.31 against 0.45 in Portuguese)")
    # A passage holding few of the question's words passes on the model's word, not the share...
    assert gate(result(row(1, 0.4, supported=0.5, support=0.1)), 0.8, 4, MODEL_RULE).verdicts == [KEPT]
    # ...but never one lacking a name the question writes, however likely.
    named = gate(result(row(1, 0.4, supported=0.9, lacks_names=("fresno",))), 0.8, 4, MODEL_RULE)
    assert named.verdicts == [UNSUPPORTED] and named.because == UNNAMED
    # The judge, where it decides, comes first.
    both = SupportRule(0.5, judge_cut=0.5, model_cut=0.45)
    assert both.judging and not both.modelling
    assert "probability of 0.45 or more (the cut calibrated for Portuguese)" in evidence_rule(MODEL_RULE)
    assert evidence_summary({"en": SupportRule(0.5), "pt": MODEL_RULE}).startswith(
        "for English questions, it holds enough of the question's own words (the support test); for Portuguese "
        "questions, the support model")


def test_calibrate_sets_each_kinds_budget_on_the_models_best_probability_for_the_languages_it_reads():
    # Each unrelated question's one passage is close and holds its words; its probability is spread over
    # 0.00..0.99 (everyday) or 0.50..0.99 (general knowledge, which come closer to a folder of articles).
    prob = {}
    for lang in CALIBRATED_LANGUAGES:
        for i, (q, kind) in enumerate(zip([q for _, q in unrelated_questions(lang)], question_kinds(lang))):
            prob[q] = (i % 100) / 100 if kind == "everyday" else 0.5 + (i % 50) / 100

    def search(question, vector):
        return result(row(1, 0.5, supported=prob[question]), language="pt")

    vectors = {lang: np.zeros((len(unrelated_questions(lang)), 1), dtype=np.float32) for lang in CALIBRATED_LANGUAGES}
    cal = calibrate(search, vectors, fingerprint="f", min_support=0.5, close_support=0.2, budget=0.05,
                    floor=0.3, ceiling=0.9, model_langs=("pt",), judge_rules=("names",))
    pt = cal.languages["pt"]
    # General knowledge: 140 spread over 0.50..0.99, 7 may pass: over the 8th highest, 0.97 -> 0.98 (a
    # hundredth over it); the everyday questions alone would allow 0.97.
    assert pt.model_cut == 0.98 and pt.model_passing <= 0.05 * pt.questions
    assert cal.languages["en"].model_cut is None
    rule = cal.rule("pt", 0.5, 0.2, judge_rules=("names",))
    assert (rule.model_cut, rule.model_lang, rule.modelling) == (0.98, "pt", True)
    assert cal.rule("en", 0.5, 0.2).model_cut is None
    assert "support model cut 0.98" in pt.describe()
    assert Calibration.from_json(json.loads(json.dumps(cal.to_json()))).languages["pt"].model_cut == 0.98


def test_the_retrieval_table_shows_the_models_probability_after_the_verdict_when_it_weighed_the_rows():
    from app.chat_view import retrieval_table

    r = result(row(1, 0.4, supported=0.62), row(2, 0.5, supported=0.1), language="pt")
    g = gate(r, 0.8, 4, MODEL_RULE)
    table = retrieval_table(g, r)
    assert table.columns[4] == "likely" and [x["likely"] for x in table.rows] == [0.62, 0.1]
    assert "likely" in table.coloured and table.config["likely"].label == "likely (≥ 0.45)"
    assert "likely" not in retrieval_table(gate(result(row(1, 0.4)), 0.8, 4, SupportRule(0.5)), result(row(1, 0.4))).columns


def test_training_fits_the_informative_signal_the_same_way_twice_and_the_saved_model_scores_alike(tmp_path):
    from lab.train_support import answer_or_near_miss, fit

    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, len(FEATURES)))
    side = FEATURES.index("side distance")
    y = (x[:, side] + 0.5 * rng.normal(size=400) < -0.5).astype(float)  # closer in meaning: the answer
    a, b = fit(x, y, ("pt", "es")), fit(x, y, ("pt", "es"))
    assert a == b and a.stamp == b.stamp  # deterministic: no seed to forget
    assert a.coef[side] < 0 and abs(a.coef[side]) == max(abs(c) for c in a.coef)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(a.to_json()), encoding="utf-8")
    assert np.allclose(load_support_model(path).scores_rows(x), a.scores_rows(x))
    # Question by question: two answerable questions (rows 0-1, 2-3) and one near miss (rows 4-5).
    p, labels, q = np.array([0.9, 0.1, 0.2, 0.7, 0.5, 0.3]), np.array([1, 0, 0, 1, 0, 0.0]), np.array([0, 0, 1, 1, -3, -3])
    assert answer_or_near_miss(p, labels, q) == 1.0  # 0.9 and 0.7 both over the near miss's 0.5

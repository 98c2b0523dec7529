"""rag/deciding/calibration.py's pure parts on hand-made distances and candidates, and `calibrate` with a search
made by hand (no model, no store)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag.deciding.calibration import (CALIBRATED_LANGUAGES, Calibration, LanguageCalibration, calibrate, choose_threshold,
                             close_distance, evidence_distance, judge_cut, question_kinds, rise_distance,
                             unrelated_questions)
from rag.deciding.rule import SupportRule
from rag.searching.search import Candidate, SearchResult


def candidate(distance: float, support: float = 1.0, judge: float | None = None) -> Candidate:
    return Candidate("c", "d", "a.md", "A", "", "text", 0, 4, None, None, "md", 1, 0.0, distance, 1, None, None,
                     support=support, judge=judge)


def result(*candidates: Candidate) -> SearchResult:
    return SearchResult("q", "q", list(candidates), {"dense": 1.0, "bm25": 1.0})


@pytest.mark.parametrize("best, budget, floor, expected", [
    ([], 0.02, 0.0, 0.0),  # no question: the floor
    ([2.5], 0.0, -1.0, 2.51),  # one question, none may pass: just over its score, rounded up
    ([2.5], 1.0, -1.0, -1.0),  # one question, and the budget lets it pass: the floor
    ([1.0, 0.5, -3.0, -4.0], 0.25, -9.0, 0.51),  # one of four may pass: over the second best
    ([-math.inf] * 10, 0.1, 0.0, 0.0),  # no question reached a passage the judge read
    ([0.3] * 4, 0.0, 1.0, 1.0),  # never under the floor
])
def test_judge_cut(best, budget, floor, expected):
    assert judge_cut(best, budget, floor) == expected


def test_at_most_the_budget_reaches_the_judge_cut():
    best = [(-1) ** i * i / 7 for i in range(100)]
    cut = judge_cut(best, 0.05, -10.0)
    assert sum(b >= cut for b in best) <= 5


@pytest.mark.parametrize("nearest, percentile, expected", [
    ([], 0.0, -0.001),
    ([0.5], 0.0, 0.499),
    ([0.5], 0.9, 0.499),
    ([0.7, 0.3, 0.5], 0.0, 0.299),  # the nearest, whatever the order
    ([0.1, 0.4, 0.5, 0.6], 0.25, 0.399),  # all but a quarter stay beyond
])
def test_close_distance_is_just_under_the_nearest_kept(nearest, percentile, expected):
    assert close_distance(nearest, percentile) == expected


@pytest.mark.parametrize("nearest, percentile, ceiling, expected", [
    ([], 0.05, 0.8, None),
    ([math.inf, math.inf], 0.05, 0.8, None),  # no question found a passage
    ([0.5], 0.05, 0.8, 0.5),
    ([0.5], 1.0, 0.8, None),  # never rises
    ([0.85], 0.05, 0.8, None),  # beyond the ceiling
    ([0.9, math.inf, 0.4, 0.6], 0.5, 0.8, 0.6),
])
def test_rise_distance(nearest, percentile, ceiling, expected):
    assert rise_distance(nearest, percentile, ceiling) == expected


def test_evidence_distance_is_the_nearest_passage_that_passes_the_support_test():
    rule = SupportRule(min_support=0.5)
    assert evidence_distance(result(candidate(0.2, support=0.1), candidate(0.4), candidate(0.6)), rule) == 0.4
    assert evidence_distance(result(candidate(0.2, support=0.1)), rule) == math.inf
    assert evidence_distance(result(), rule) == math.inf


@pytest.mark.parametrize("values, budget, expected", [
    ([0.4], 0.0, (0.399, 0, (), "")),  # one question: just under it
    ([0.7, 0.5, 0.6, 0.4], 0.25, (0.499, 1, (), "")),  # one of four may pass: under the second nearest
    ([0.1, 0.2, 0.3, 0.4], 0.0, (0.3, 3, (), "floor")),  # measured under the floor: held there
    ([0.95, math.inf, math.inf, math.inf], 0.5, (0.9, 0, (), "ceiling")),  # the support test refuses the rest
    ([], 0.05, (0.9, 0, (), "ceiling")),
])
def test_choose_threshold(values, budget, expected):
    topics = [f"topic {i}" for i in range(len(values))]  # one question each: too few to be left out
    assert choose_threshold(values, topics, budget, floor=0.3, ceiling=0.9) == expected


def test_a_topic_the_folder_answers_is_left_out_and_named():
    # "recipes" questions all come close (the folder is about cooking); sport and travel share 0.60..0.79.
    values = [0.2] * 10 + [0.60 + 0.02 * i for i in range(10)] + [0.61 + 0.02 * i for i in range(10)]
    topics = ["recipes"] * 10 + ["sport"] * 10 + ["travel"] * 10
    threshold, passing, excluded, bound = choose_threshold(values, topics, 0.05, floor=0.1, ceiling=0.9)
    assert excluded == ("recipes",)
    assert (threshold, passing, bound) == (0.609, 1, "")  # one of the twenty others may pass
    # Without leaving it out, the threshold would sit under the recipes' distance.
    assert choose_threshold(values, topics, 0.05, floor=0.1, ceiling=0.9, exclude=())[0] == 0.199


def test_a_topic_with_too_few_questions_is_never_left_out():
    values = [0.2] * 3 + [0.6 + i / 100 for i in range(20)]
    assert choose_threshold(values, ["tiny"] * 3 + ["sport"] * 20, 0.05, 0.1, 0.9)[2] == ()


def lang_cal(lang: str = "en", threshold: float = 0.5, **kw) -> LanguageCalibration:
    return LanguageCalibration(lang, threshold, close=0.3, budget=0.05, questions=400, passing=20, **kw)


@pytest.mark.parametrize("kw, says", [
    ({}, "calibrated for English: 0.500, where 20 of 400 unrelated questions would pass (budget 5%"),
    ({"bound": "floor"}, "; held at the floor"),
    ({"bound": "ceiling"}, "the highest value allowed: fewer unrelated questions than the budget would pass"),
    ({"excluded_topics": ("cooking", "sport")}, "left out as this folder's own subject: cooking, sport"),
    ({"judge_cut": 1.25, "judge_passing": 7}, "judge cut 1.25, which 7 of 400 unrelated questions' best"),
])
def test_a_language_calibration_says_what_its_value_means(kw, says):
    assert says in lang_cal(**kw).describe()


def test_an_unclear_language_gets_the_strictest_threshold_and_close_distance():
    cal = Calibration("f", 0.5, {"en": lang_cal("en", 0.6), "pt": lang_cal("pt", 0.4)})
    assert (cal.threshold("en"), cal.threshold("pt"), cal.threshold("")) == (0.6, 0.4, 0.4)
    assert "language unclear, so the strictest calibrated value: calibrated for Portuguese" in cal.describe("")
    # A language with no unrelated questions of its own (nor word rules) is judged alike, and says why.
    assert (cal.threshold("es"), cal.rule("es", 0.5, 0.2).close) == (0.4, 0.3)
    assert cal.describe("es").startswith("Spanish has no unrelated questions of its own to calibrate on, and the word "
                                         "rules (written for English and Portuguese) stand down, so the strictest "
                                         "calibrated value: calibrated for Portuguese: 0.400")
    assert Calibration("f", 0.5, {}).threshold("en") is None
    assert Calibration("f", 0.5, {}).describe(None) == "not calibrated: nothing is indexed"


def test_a_judge_cut_joins_the_rule_only_for_a_language_that_has_one():
    cal = Calibration("f", 0.5, {"en": lang_cal("en", judge_cut=0.7), "pt": lang_cal("pt")})
    assert cal.rule("en", 0.5, 0.2).judge_cut == 0.7
    assert cal.rule("pt", 0.5, 0.2).judge_cut is None
    assert cal.rule("", 0.5, 0.2).judge_cut == 0.7  # unclear: the highest cut


def test_a_calibration_survives_a_round_trip_through_its_file_infinities_included(tmp_path):
    cal = Calibration("f", 0.5, {"pt": lang_cal("pt", excluded_topics=("culinária",), rise_from=0.6, rise_to=0.8)},
                      points=[{"lang": "pt", "topic": "culinária", "question": "Quanto açúcar?",
                               "evidence": math.inf, "nearest": 0.42}], computed_at=1.0, seconds=2.0)
    path = tmp_path / "calibration.json"
    cal.save(path)
    assert Calibration.load(path) == cal
    assert not (tmp_path / "calibration.json.part").exists()


@pytest.mark.parametrize("content", ["", "{not json", '{"fingerprint": "f"}', "[]"])
def test_an_unreadable_calibration_file_is_computed_again(tmp_path, content):
    path = tmp_path / "calibration.json"
    path.write_text(content, encoding="utf-8")
    assert Calibration.load(path) is None
    assert Calibration.load(tmp_path / "missing.json") is None


def test_unrelated_questions_exist_for_each_language_and_only_those():
    for lang in CALIBRATED_LANGUAGES:
        assert len(unrelated_questions(lang)) == len(question_kinds(lang)) > 100
    with pytest.raises(ValueError, match="choose one of en, pt"):
        unrelated_questions("fr")


def test_calibrate_with_a_hand_made_search_keeps_each_language_within_its_budget():
    # Each unrelated question's nearest passage sits at a distance spread over 0.40..0.79, and holds all of
    # its words, so only the distance decides.
    distance = {q: 0.40 + (i % 40) / 100 for lang in CALIBRATED_LANGUAGES for i, (_, q) in enumerate(unrelated_questions(lang))}

    def search(question, vector):
        return result(candidate(distance[question]))

    vectors = {lang: np.zeros((len(unrelated_questions(lang)), 1), dtype=np.float32) for lang in CALIBRATED_LANGUAGES}
    cal = calibrate(search, vectors, fingerprint="f", min_support=0.5, close_support=0.2, budget=0.05,
                    floor=0.3, ceiling=0.9)
    for lang in CALIBRATED_LANGUAGES:
        c = cal.languages[lang]
        assert c.close == 0.399  # just under the nearest any unrelated question comes
        # 0.40 and 0.41 come seven times each among the 260 everyday questions, of which 5% (13) may pass:
        # just under the 14th nearest. The general-knowledge ones, further out, allow more.
        assert c.threshold == 0.409
        assert c.passing <= 0.05 * c.questions and not c.excluded_topics
    assert len(cal.points) == sum(len(unrelated_questions(lang)) for lang in CALIBRATED_LANGUAGES)


def test_calibrate_chooses_the_multilingual_cut_on_the_passages_in_another_language():
    # Each unrelated question meets one passage in its own language (far, holding its words) and one in
    # another, at a multilingual distance spread over 0.40..0.79; the English questions meet none in another.
    side = {q: 0.40 + (i % 40) / 100 for lang in CALIBRATED_LANGUAGES for i, (_, q) in enumerate(unrelated_questions(lang))}
    english = {q for _, q in unrelated_questions("en")}

    def search(question, vector):
        own = candidate(0.85)
        if question in english:
            return result(own)
        other = Candidate("o", "e", "b.md", "B", "", "text", 0, 4, None, None, "md", 2, 0.0, 0.95, None, None, None,
                          support=0.0, across=True, side_distance=side[question], lang="en")
        return result(own, other)

    vectors = {lang: np.zeros((len(unrelated_questions(lang)), 1), dtype=np.float32) for lang in CALIBRATED_LANGUAGES}
    kw = dict(fingerprint="f", min_support=0.5, close_support=0.2, budget=0.05, floor=0.3, ceiling=0.9)
    cal = calibrate(search, vectors, across_ceiling=0.7, **kw)
    assert cal.languages["en"].across_cut is None  # no English question met a passage in another language
    pt = cal.languages["pt"]
    assert pt.across_cut == 0.409 and pt.across_passing <= 0.05 * pt.questions
    assert "multilingual distance, at most 0.409" in pt.describe()
    # A language without a cut of its own (English here, Spanish, an unclear one) gets the strictest there is.
    assert cal.rule("en", 0.5, 0.2).across_cut == cal.rule("es", 0.5, 0.2).across_cut == 0.409
    # The ceiling holds it when the unrelated questions would allow more.
    assert calibrate(search, vectors, across_ceiling=0.405, **kw).languages["pt"].across_cut == 0.405

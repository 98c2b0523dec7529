"""rag/searching/fusion.py's ranking arithmetic on hand-made scores: rrf, normalise, fuse and fused_order."""

from __future__ import annotations

import math

import pytest

from rag.searching.fusion import FUSIONS, Fused, fuse, fused_order, normalise, rrf


@pytest.mark.parametrize("rankings, expected", [
    ({}, {}),
    ({"dense": [], "bm25": []}, {}),
    ({"dense": ["a"]}, {"a": 1 / 61}),
    ({"dense": ["a", "b"], "bm25": ["b", "a"]}, {"a": 1 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61}),
    ({"dense": ["é", "ß"], "bm25": ["ß"]}, {"ß": 1 / 62 + 1 / 61, "é": 1 / 61}),
])
def test_rrf_sums_reciprocal_ranks(rankings, expected):
    fused = rrf(rankings)
    assert fused.keys() == expected.keys() and list(fused) == list(expected)
    assert all(math.isclose(fused[k], v) for k, v in expected.items())


def test_rrf_weighs_each_side_and_reads_k():
    fused = rrf({"dense": ["a"], "bm25": ["b"]}, k=0, weights={"dense": 0.25})
    assert fused == {"b": 1.0, "a": 0.25}  # a side without a weight weighs 1


@pytest.mark.parametrize("how, scores, expected", [
    ("minmax", [], []),
    ("zscore", [], []),
    ("minmax", [5.0], [1.0]),  # one score is the side's best
    ("zscore", [5.0], [0.0]),
    ("minmax", [-1.0, -3.0], [1.0, 0.0]),
    ("zscore", [1.0, 3.0], [-1.0, 1.0]),
])
def test_normalise(how, scores, expected):
    assert normalise(scores, how) == pytest.approx(expected)


def test_an_unknown_normalisation_lists_the_valid_ones():
    with pytest.raises(ValueError, match="choose minmax or zscore"):
        normalise([1.0], "rank")


@pytest.mark.parametrize("method", ["bogus", "", "RRF"])
def test_an_unknown_fusion_lists_the_valid_ones(method):
    with pytest.raises(ValueError, match=f"choose one of {', '.join(FUSIONS)}"):
        fuse([("a", 1.0)], [], method=method)


@pytest.mark.parametrize("method", FUSIONS)
def test_nothing_found_fuses_to_nothing(method):
    assert fuse([], [], method=method) == {}


@pytest.mark.parametrize("method", FUSIONS)
def test_one_candidate_on_one_side_is_kept(method):
    assert list(fuse([("a", 0.3)], [], method=method)) == ["a"]
    assert list(fuse([], [("a", 7.0)], method=method)) == ["a"]


def test_a_candidate_both_sides_found_beats_one_either_side_missed():
    dense = [("both", 0.8), ("dense only", 0.9), ("low", 0.1)]
    bm25 = [("both", 9.0), ("bm25 only", 10.0), ("low", 1.0)]
    for method in FUSIONS:
        assert next(iter(fuse(dense, bm25, method=method))) == "both", method


def test_minmax_gives_the_side_that_missed_a_candidate_its_lowest_value():
    f = fuse([("a", 0.9), ("b", 0.5)], [("c", 4.0), ("a", 2.0)], method="minmax")
    assert f["b"] == Fused(score=0.0, dense=0.0, bm25=0.0)
    assert f["c"] == Fused(score=0.5, dense=0.0, bm25=1.0)
    assert f["a"] == Fused(score=0.5, dense=1.0, bm25=0.0)


def test_weights_of_zero_give_every_candidate_zero():
    f = fuse([("a", 0.9)], [("b", 3.0)], method="zscore", weights={"dense": 0.0, "bm25": 0.0})
    assert {cid: x.score for cid, x in f.items()} == {"a": 0.0, "b": 0.0}


def test_rrf_fusion_leaves_the_normalised_scores_empty():
    f = fuse([("a", 0.9)], [("a", 3.0)], method="rrf", k=1)
    assert f == {"a": Fused(score=1.0)}


@pytest.mark.parametrize("method", ["minmax", "zscore"])  # rrf reads ranks: a, listed first, wins there
def test_fused_order_breaks_ties_by_distance_and_cuts_at_n(method):
    # Each side scores a and b alike, so they tie; b is the closer.
    dense, bm25 = [("a", 0.30), ("b", 0.30)], [("a", 2.0), ("b", 2.0)]
    distances = {"a": 0.30001, "b": 0.3}
    assert [cid for cid, _ in fused_order(dense, bm25, distances, n=2, method=method)] == ["b", "a"]
    assert [cid for cid, _ in fused_order(dense, bm25, distances, n=1, method=method)] == ["b"]
    assert fused_order(dense, bm25, distances, n=0, method=method) == []


def test_fused_order_reads_dense_as_distances_closest_best():
    order = fused_order([("near", 0.1), ("far", 0.9)], [], {"near": 0.1, "far": 0.9}, n=5, method="minmax")
    assert [(cid, f.dense) for cid, f in order] == [("near", 1.0), ("far", 0.0)]

"""The fusion rule (rag.searching.fusion): each fusion on edge inputs (a side empty, ties, a candidate only one side
found), the per-question weights, and the rule as the engine applies it on real parts (MiniLM, Chroma on
disk): the weights follow the question's language, and every candidate carries both ranks, both
normalised scores and the fused score they add up to. Feedback: the first ranking's best rows stay as
found, the rest follow a second search from them, and every distance stays the question's own.
"""

from __future__ import annotations

import pytest

import numpy as np

from rag.deciding.gate import gate
from rag.text.lexical import analyze_query
from rag.searching.fusion import FUSIONS, fuse, fused_order, normalise, question_weights
from rag.searching.search import dense_top, feedback
from rag.settings import Tuning
from rag.settings import Settings

DENSE = [("a", 0.9), ("b", 0.6), ("c", 0.3)]  # (id, cosine similarity), best first
BM25 = [("c", 9.0), ("d", 4.0), ("a", 1.0)]  # (id, BM25 score), best first
EQUAL = {"dense": 1.0, "bm25": 1.0}


@pytest.mark.parametrize("method", FUSIONS)
def test_one_side_empty_keeps_the_other_sides_order(method):
    assert list(fuse(DENSE, [], method=method, weights=EQUAL)) == ["a", "b", "c"]
    assert list(fuse([], BM25, method=method, weights=EQUAL)) == ["c", "d", "a"]
    assert fuse([], [], method=method, weights=EQUAL) == {}


@pytest.mark.parametrize("method", ["minmax", "zscore"])
def test_a_candidate_one_side_missed_gets_that_sides_lowest_value(method):
    fused = fuse(DENSE, BM25, method=method, weights=EQUAL)
    dense_norm, bm25_norm = normalise([s for _, s in DENSE], method), normalise([s for _, s in BM25], method)
    assert fused["b"].bm25 == min(bm25_norm)  # only dense found b: BM25's lowest
    assert fused["d"].dense == min(dense_norm)  # only BM25 found d: dense's lowest
    assert fused["a"].dense == dense_norm[0] and fused["a"].bm25 == bm25_norm[2]
    for x in fused.values():  # the convex combination, with equal weights
        assert x.score == pytest.approx((x.dense + x.bm25) / 2)
    assert list(fused) == sorted(fused, key=lambda c: -fused[c].score)


def test_minmax_values_by_hand():
    fused = fuse(DENSE, BM25, method="minmax", weights={"dense": 0.25, "bm25": 0.75})
    # dense: a 1, b 0.5, c 0; BM25: c 1, d 0.375, a 0.
    assert fused["c"].score == pytest.approx(0.75)
    assert fused["d"].score == pytest.approx(0.75 * 0.375)
    assert fused["a"].score == pytest.approx(0.25)
    assert fused["b"].score == pytest.approx(0.125)
    assert list(fused) == ["c", "d", "a", "b"]


def test_rrf_reads_ranks_only_and_leaves_normalised_scores_empty():
    fused = fuse(DENSE, BM25, method="rrf", weights=EQUAL, k=60)
    assert fused["a"].score == pytest.approx(1 / 61 + 1 / 63)
    assert fused["d"].score == pytest.approx(1 / 62)
    assert all(x.dense is None and x.bm25 is None for x in fused.values())


@pytest.mark.parametrize("method", FUSIONS)
def test_equal_fused_scores_put_the_closer_chunk_first(method):
    # x and y mirror each other: each is first on one side and absent from the other.
    dense, bm25 = [("x", 0.8)], [("y", 3.0)]
    assert fuse(dense, bm25, method=method, weights=EQUAL)["x"].score == pytest.approx(
        fuse(dense, bm25, method=method, weights=EQUAL)["y"].score)
    # fused_order takes cosine distances; y is the closer one, so it goes first despite meeting order.
    order = fused_order([("x", 0.2)], bm25, {"x": 0.2, "y": 0.1}, n=5, method=method, weights=EQUAL)
    assert [c for c, _ in order] == ["y", "x"]
    order = fused_order([("x", 0.2)], bm25, {"x": 0.2, "y": 0.3}, n=5, method=method, weights=EQUAL)
    assert [c for c, _ in order] == ["x", "y"]


@pytest.mark.parametrize("method", ["minmax", "zscore"])
def test_all_scores_equal_on_a_side(method):
    fused = fuse([("a", 0.5), ("b", 0.5)], [("b", 2.0), ("c", 2.0)], method=method, weights=EQUAL)
    # Equal scores carry no order, but being found does: b, found by both, comes first; a and c, each
    # missed by one side (which gives them one below its lowest), tie behind it.
    assert list(fused)[0] == "b"
    assert fused["a"].score == pytest.approx(fused["c"].score) and fused["a"].score < fused["b"].score
    assert fused["a"].bm25 == fused["c"].dense == fused["b"].dense - 1


@pytest.mark.parametrize("method", ["minmax", "zscore"])
def test_a_zero_dense_weight_ranks_by_bm25(method):
    fused = fuse(DENSE, BM25, method=method, weights={"dense": 0.0, "bm25": 1.0})
    assert list(fused)[:2] == ["c", "d"]


def test_fused_order_cuts_at_n():
    order = fused_order([("a", 0.1), ("b", 0.4)], [("c", 3.0)], {"a": 0.1, "b": 0.4, "c": 0.5}, n=2,
                        method="minmax", weights=EQUAL)
    assert len(order) == 2 and order[0][0] == "a"


def test_unknown_fusion_is_refused():
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse(DENSE, BM25, method="sum")
    with pytest.raises(ValueError, match="fusion"):
        Settings().replace(fusion="sum")
    with pytest.raises(ValueError, match="negative"):
        Settings().replace(dense_weight_unread=-0.1)


@pytest.mark.parametrize("lang,model,folder,expected", [
    ("en", ("en",), ("en", "pt"), {"dense": 0.6, "bm25": 0.4, "multilingual": 0.0}),
    # the model does not read it; BM25 can, and the multilingual side helps
    ("pt", ("en",), ("en", "pt"), {"dense": 0.1, "bm25": 0.4, "multilingual": 0.2}),
    ("pt", ("en", "pt"), ("pt",), {"dense": 0.6, "bm25": 0.4, "multilingual": 0.0}),  # a model that reads Portuguese
    # cross-language: BM25 has no Portuguese to match (the multilingual side alone ranks the English passages)
    ("pt", ("en",), ("en",), {"dense": 0.6, "bm25": 0.4, "multilingual": 0.2}),
    ("en", ("en",), ("pt",), {"dense": 0.6, "bm25": 0.4, "multilingual": 0.0}),  # an English question about Portuguese notes
])
def test_question_weights_follow_the_models_and_the_folders_languages(lang, model, folder, expected):
    s = Settings().replace(dense_weight=0.6, bm25_weight=0.4, dense_weight_unread=0.1, multilingual_weight=0.2,
                           multilingual_weight_read=0.0)
    assert question_weights(s, lang, model, folder) == expected


MULTI = [("e", 0.8), ("a", 0.7), ("f", 0.1)]  # the multilingual side: (id, cosine similarity), best first


@pytest.mark.parametrize("method", FUSIONS)
def test_without_the_multilingual_side_the_fusion_is_the_two_sides(method):
    weights = {"dense": 0.6, "bm25": 0.4, "multilingual": 0.5}
    two = fuse(DENSE, BM25, method=method, weights=weights)
    assert fuse(DENSE, BM25, method=method, weights=weights, multilingual=[], across={"a"}) == two
    # At weight 0 the third side adds candidates at the bottom and moves nobody else.
    three = fuse(DENSE, BM25, method=method, weights={**weights, "multilingual": 0.0}, multilingual=MULTI)
    assert [c for c in three if c in two] == list(two)


@pytest.mark.parametrize("method", ["minmax", "zscore"])
def test_a_passage_in_another_language_weighs_the_multilingual_side_by_its_own_weight(method):
    weights = {"dense": 0.6, "bm25": 0.4, "multilingual": 0.2}
    fused = fuse(DENSE, BM25, method=method, weights=weights, multilingual=MULTI, across={"e", "f"}, across_weight=3)
    multi = normalise([s for _, s in MULTI], method)
    for cid in ("e", "f"):  # in another language: the multilingual side weighs 3, the others as ever
        x = fused[cid]
        assert x.score == pytest.approx((0.6 * x.dense + 0.4 * x.bm25 + 3 * x.multilingual) / 4.0)
    assert fused["e"].multilingual == pytest.approx(multi[0])
    a = fused["a"]  # in the question's language: the three sides at the question's weights
    assert a.score == pytest.approx((0.6 * a.dense + 0.4 * a.bm25 + 0.2 * a.multilingual) / 1.2)
    assert a.multilingual == pytest.approx(multi[1])
    assert fused["d"].multilingual == pytest.approx(min(multi))  # the multilingual side missed it: its lowest
    # The more the multilingual side weighs for it, the higher a passage it prefers climbs.
    heavier = fuse(DENSE, BM25, method=method, weights=weights, multilingual=MULTI, across={"e"}, across_weight=9)
    assert list(heavier).index("e") <= list(fused).index("e")


def test_rank_fusion_weighs_a_passage_in_another_language_by_the_multilingual_sides_across_weight():
    fused = fuse(DENSE, BM25, method="rrf", weights=EQUAL, multilingual=MULTI, across={"e"}, k=60, across_weight=2)
    assert fused["e"].score == pytest.approx(2 / 61)
    assert fused["a"].score == pytest.approx(1 / 61 + 1 / 63 + 1 / 62)


PT_NOTE = """# Notas da loja

## Devoluções

As devoluções são aceites até trinta dias depois da compra, com o talão e a embalagem original.

## Entregas

As encomendas são entregues em dois a quatro dias úteis em Portugal continental, e o envio é gratuito acima de
cinquenta euros.
"""
EN_NOTE = """# Shop notes

## Returns

Returns are accepted within thirty days of purchase, with the receipt and the original box.

## Error codes

ERR-4017 means the upload was larger than the limit; split the file and try again.
"""


def test_the_engine_weighs_each_question_by_its_language_and_explains_every_candidate(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "loja.md").write_text(PT_NOTE, encoding="utf-8")
    (folder / "shop.md").write_text(EN_NOTE, encoding="utf-8")
    engine = make_engine(folder)
    engine.sync()
    s = engine.settings
    assert engine.embedder.languages == ("en",)  # MiniLM reads English only
    pt = engine.search("Quantos dias tenho para devoluções?")
    en = engine.search("How many days do I have to return something?")
    assert pt.language == "pt" and pt.weights == {"dense": s.tuning.dense_weight_unread, "bm25": s.tuning.bm25_weight,
                                                  "multilingual": s.tuning.multilingual_weight}
    assert en.language == "en" and en.weights == {"dense": s.tuning.dense_weight, "bm25": s.tuning.bm25_weight,
                                                  "multilingual": s.tuning.multilingual_weight_read}
    assert pt.fusion == en.fusion == s.tuning.fusion == "zscore"
    # The Portuguese question leans on BM25: its best BM25 hit, the returns section, comes first.
    assert pt.candidates[0].bm25_rank == 1 and "devoluções" in pt.candidates[0].content
    assert "Returns are accepted" in en.candidates[0].content
    for result in (pt, en):
        wd, wb, wm = result.weights["dense"], result.weights["bm25"], result.weights["multilingual"]
        assert [c.fused_rank for c in result.candidates] == list(range(1, len(result.candidates) + 1))
        # The other language's passages weigh the multilingual side more (neither other side reads across
        # languages); the question's own language's the three at the question's weights.
        assert {c.across for c in result.candidates} == {True, False}
        wa = s.tuning.multilingual_weight_across
        for c in result.candidates:
            # Every rank and normalised score is shown; the fused score is their weighted mean.
            assert c.dense_norm is not None and c.bm25_norm is not None and c.side_norm is not None
            assert c.across == (c.lang != result.language)
            w3 = wa if c.across else wm
            expected = (wd * c.dense_norm + wb * c.bm25_norm + w3 * c.side_norm) / (wd + wb + w3)
            assert c.fused_score == pytest.approx(expected)
            assert c.dense_rank is not None or c.bm25_rank is not None or c.side_rank is not None
            assert 0.0 <= c.side_distance <= 2.0
        scores = [c.fused_score for c in result.candidates]
        assert scores == sorted(scores, reverse=True)
    # A candidate BM25 did not return gets BM25's floor: at most the value of BM25's last hit.
    for result in (pt, en):
        missed = [c for c in result.candidates if c.bm25_rank is None]
        found = [c for c in result.candidates if c.bm25_rank is not None]
        assert missed and found and max(c.bm25_norm for c in missed) <= min(c.bm25_norm for c in found)
    # Rank fusion stays available as a setting: same candidates' ranks, no normalised scores.
    rrf_result = engine.search("How many days do I have to return something?", settings=s.replace(fusion="rrf"))
    assert rrf_result.fusion == "rrf" and all(c.dense_norm is None for c in rrf_result.candidates)


QUESTION = "How does the app decide to refuse a question?"


def test_feedback_keeps_the_best_rows_and_orders_the_rest_by_a_second_search(sample_engine):
    s = sample_engine.settings
    assert s.tuning.feedback == 5
    snap = sample_engine.snapshot
    off = sample_engine.search(QUESTION, settings=s.replace(feedback=0))
    on = sample_engine.search(QUESTION)
    assert off.kept_first == len(off.candidates) == s.candidates and off.expansion == () and off.feedback_note == ""
    assert on.kept_first == 5 and len(on.candidates) == s.candidates
    assert [c.chunk_id for c in on.candidates[:5]] == [c.chunk_id for c in off.candidates[:5]]
    assert [c.chunk_id for c in on.candidates[5:]] != [c.chunk_id for c in off.candidates[5:]]
    qv = sample_engine.embedder.embed_batch([QUESTION])[0]
    # Rows after the fifth: their dense rank is their place in a scan with the question's vector moved
    # toward the five rows' mean; every row's distance is still to the question itself.
    moved = qv + Tuning().feedback_dense * snap.vectors[[snap.pos[c.chunk_id] for c in on.candidates[:5]]].mean(axis=0)
    order = list(np.argsort(-(snap.vectors @ (moved / np.linalg.norm(moved))), kind="stable"))
    for c in on.candidates:
        assert c.distance == pytest.approx(1 - float(snap.vectors[snap.pos[c.chunk_id]] @ qv), abs=1e-5)
    for c in on.candidates[5:]:
        if c.dense_rank is not None:
            assert order.index(snap.pos[c.chunk_id]) + 1 == c.dense_rank
    # The words feedback added: none of the question's own, each written in one of the five rows.
    kept_text = " ".join(snap.chunks[snap.pos[c.chunk_id]].text.lower() for c in on.candidates[:5])  # header too
    assert on.expansion and all(w in kept_text for w in on.expansion)
    assert not set(on.expansion) & {"app", "decide", "refuse", "question"}
    assert on.feedback_note.startswith("Rows 6–20 were ordered by a second search from rows 1–5")
    # Feedback does not touch what answers: the same four passages are kept.
    choice = sample_engine.threshold_choice(QUESTION)
    kept = [[c.chunk_id for c in gate(r, choice.value, s.max_chunks, choice.rule).kept] for r in (on, off)]
    assert kept[0] and kept[0] == kept[1]


def test_feedback_with_a_pool_orders_the_rows_the_first_search_found_not_the_whole_folder(sample_engine, monkeypatch):
    # With `feedback_pool`, each side's list runs on to that many times the candidates. At 1 (the candidates
    # alone) the second search may only reorder what the first one's sides found, so its cost follows them.
    pooled = sample_engine.settings.replace(feedback_pool=1)
    snap, n = sample_engine.snapshot, sample_engine.settings.candidates
    assert len(snap.chunks) > 2 * n  # else every row is in the pool and nothing is tested
    on = sample_engine.search(QUESTION, settings=pooled)
    qv = sample_engine.embedder.embed_batch([QUESTION])[0]
    pool = set(dense_top(snap, qv, n)[0]) | {i for i, _ in snap.lexical.top(QUESTION, n)}
    if snap.side_vectors is not None:
        sq = sample_engine.side.embed_queries([QUESTION])[0]
        pool |= set(dense_top(snap, sq, n, side="multilingual")[0])
    assert on.pooled == len(pool) and f"among the {len(pool)} passages the first search's sides listed" in on.feedback_note
    placed = [snap.pos[c.chunk_id] for c in on.candidates[5:]]
    assert placed and set(placed) <= pool
    # Its dense ranks are places among the pool, by the moved vector.
    moved = qv + Tuning().feedback_dense * snap.vectors[[snap.pos[c.chunk_id] for c in on.candidates[:5]]].mean(axis=0)
    rows = sorted(pool)
    order = [rows[i] for i in np.argsort(-(snap.vectors[rows] @ (moved / np.linalg.norm(moved))), kind="stable")]
    assert [order.index(r) + 1 for r, c in zip(placed, on.candidates[5:]) if c.dense_rank] == \
        [c.dense_rank for c in on.candidates[5:] if c.dense_rank]
    # The whole folder's second search (the default) places rows the first lists missed.
    assert sample_engine.settings.tuning.feedback_pool == 0
    whole = sample_engine.search(QUESTION)
    assert whole.pooled == 0 and "among the" not in whole.feedback_note
    # The calibration reads every row's distance, rows 6-20 included: a pool asks for a calibration of its own.
    before = sample_engine.calibration_fingerprint()
    monkeypatch.setattr(sample_engine, "settings", pooled)
    assert sample_engine.calibration_fingerprint() != before
    assert [c.chunk_id for c in whole.candidates[:5]] == [c.chunk_id for c in on.candidates[:5]]
    assert {snap.pos[c.chunk_id] for c in whole.candidates[5:]} - pool


def test_feedback_gives_the_question_own_words_half_of_the_bm25_query(sample_engine):
    snap = sample_engine.snapshot
    qv = sample_engine.embedder.embed_batch([QUESTION])[0]
    first = sample_engine.search(QUESTION, settings=sample_engine.settings.replace(feedback=0))
    rows = [snap.pos[c.chunk_id] for c in first.candidates[:5]]
    vector, bag, added = feedback(snap, QUESTION, qv, rows)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert sum(bag.values()) == pytest.approx(1.0)
    own = [t for t in analyze_query(QUESTION, snap.lexical.languages) if snap.lexical.known(t)]
    assert {"app", "decid", "refus", "question"} <= set(own) <= set(bag)
    assert sum(bag[t] for t in own) >= Tuning().feedback_own  # half, plus whatever the rows lend to the same words
    assert len(added) <= 10 and all(w == w.lower() for w in added)


def test_feedback_lends_only_words_of_the_question_language_and_no_numbers(sample_engine):
    # A user trial saw a Portuguese question's BM25 search extended with "meetings", "bicycle" and a stray "g"
    # lent by English passages that ranked near it: words from another language only pull in that language.
    snap = sample_engine.snapshot
    question = "Como é que a aplicação decide recusar uma pergunta?"
    qv = sample_engine.embedder.embed_batch([question])[0]
    by_lang = {lang: [i for i in np.argsort(1 - snap.vectors @ qv, kind="stable")
                      if snap.chunks[i].meta.get("lang") == lang][:3] for lang in ("pt", "en")}
    assert all(len(rows) == 3 for rows in by_lang.values())  # the sample folder holds both languages
    mixed = by_lang["pt"] + by_lang["en"]
    _, bag, added = feedback(snap, question, qv, mixed, "pt")
    _, bag_pt, added_pt = feedback(snap, question, qv, by_lang["pt"], "pt")
    assert added and added == added_pt and bag == pytest.approx(bag_pt)
    _, _, any_language = feedback(snap, question, qv, mixed)  # language unknown: every row lends
    assert any_language != added
    lent = [t for t in bag if t not in analyze_query(question, snap.lexical.languages)]
    assert all(len(t) > 1 and any(ch.isalpha() for ch in t) for t in lent), lent


def test_feedback_off_or_negative(tmp_path):
    from rag import load_settings

    assert load_settings(config=tmp_path / "none.toml", env={}, feedback=0).tuning.feedback == 0
    with pytest.raises(ValueError, match="feedback must be 0"):
        load_settings(config=tmp_path / "none.toml", env={}, feedback=-1)

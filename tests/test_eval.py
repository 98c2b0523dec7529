"""The lab (lab.metrics, lab.evaluate, lab.beir) and the product's needle rules (rag.deciding.needles, rag.deciding.sweep,
rag.deciding.diagnosis): metrics against hand-computed values, the sample needle set's invariants, the "why wasn't
it found?" verdict for each of its cases, destroyed answers, the threshold sweep (through `rag eval
sweep`) and a BEIR run through the app's own search, all on real parts: the MiniLM model, Chroma on disk,
documents written here.

One small engine (blind 512-character chunks, 3 candidates) is shared by the module: every "why" case is
a different expected sentence or gate over the same search.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import rag
from rag import Engine, gate, load_settings
from rag.cli import main as cli_main
from lab.beir import beir_chunks, beir_snapshot, cached_vectors, load_beir, run_beir
from lab.evaluate import check_needles, evaluate_needles
from lab.metrics import first_rank, ndcg_at, recall_at, reciprocal_rank, sign_test, wilson
from rag.indexing.chunk import strategy
from rag.deciding.diagnosis import CAPPED_OUT, CHUNKING, CITED, EXTRACTION, GATED, RANKS, why_not_found
from rag.searching.fusion import rrf
from rag.text.languages import question_language
from rag.deciding.needles import Question, contains, load_questions, save_question
from rag.searching.search import hybrid_search
from rag.deciding.sweep import SweepRow, suggest_threshold

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_SET = ROOT / "bench" / "sample_needles.jsonl"
DATA = ROOT / "data"

TOMATO = "Tomatoes need six hours of direct sun every day."
INVOICE = "Invoices are due within thirty days of the delivery date."
BOAT = "The spare key for the boathouse hangs behind the blue lantern by the door."
QUESTION = "How many hours of sun do tomatoes need?"

DOCS = {
    "tomatoes.md": f"# Tomatoes\n\n{TOMATO} Water them at the base in the morning.\n",
    "peppers.md": "# Peppers\n\nPeppers like warm soil and go in after the last frost; tomatoes grow well beside them.\n",
    "roses.md": "# Roses\n\nPrune roses in late winter, before the new growth starts.\n",
    "invoices.md": f"# Billing\n\n{INVOICE} Late payments carry a fee.\n",
    "bikes.md": "# Bikes\n\nCheck the tyre pressure of a road bike before every long ride.\n",
    "bread.md": "# Bread\n\nA sourdough starter is fed with flour and water every day.\n",
}
FILLER = ("The lake was calm in the early morning. Gulls circled over the old pier. Two canoes rested on the "
          "grass. The rowing club meets on Saturdays at nine. Life jackets are stored in the shed. The dock was "
          "painted green last spring. Fishing is allowed from the east jetty only. ")


def long_text() -> str:
    """A text file whose answer sentence straddles the first blind 512-character cut, in its own paragraph."""
    head = "Boathouse notes\n\n"
    body = ""
    while len(head) + len(body) < 470:
        body += FILLER
    body = body[: 488 - len(head)].rstrip() + "."
    text = head + body + "\n\n" + BOAT + " Lock it after use.\n"
    s = text.index(BOAT)
    assert s < 512 < s + len(BOAT), (s, len(BOAT))
    return text


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    f = tmp_path_factory.mktemp("why") / "docs"
    f.mkdir()
    for name, text in DOCS.items():
        (f / name).write_text(text, encoding="utf-8")
    (f / "boathouse.txt").write_text(long_text(), encoding="utf-8")
    return f


@pytest.fixture(scope="module")
def engine(folder, embedder, tmp_path_factory) -> Engine:
    settings = load_settings(config=folder / "none.toml", env={}, folder=folder, chunk_strategy="A", candidates=3,
                             index_dir=tmp_path_factory.mktemp("why-index"))
    e = Engine(settings, embedder=embedder)
    assert e.sync().count("indexed") == len(DOCS) + 1
    yield e
    e.close()


@pytest.fixture(scope="module")
def result(engine):
    return engine.search(QUESTION)


# --- metrics, by hand ------------------------------------------------------------------------------------


def test_ndcg_uses_linear_graded_gains():
    # DCG = 0/log2(2) + 2/log2(3) + 1/log2(4); ideal = 2/log2(2) + 1/log2(3).
    expected = (2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3))
    assert ndcg_at(["a", "b", "c"], {"b": 2, "c": 1}, k=3) == pytest.approx(expected)
    assert ndcg_at(["a", "b", "c"], {"b": 2, "c": 1}, k=3) == pytest.approx(0.66967, abs=1e-5)
    # Exponential gains (2^g - 1) would give 0.6590: the linear figure is what trec_eval and BEIR report.
    assert ndcg_at(["b", "c", "a"], {"b": 2, "c": 1}, k=3) == pytest.approx(1.0)
    assert ndcg_at(["a", "b"], {"b": 2, "c": 1}, k=1) == 0.0
    # Judged-irrelevant (grade 0) documents gain nothing and do not enter the ideal.
    assert ndcg_at(["z", "b"], {"z": 0, "b": 1}, k=2) == pytest.approx(1 / math.log2(3))
    assert ndcg_at(["a"], {}, k=10) == 0.0


def test_recall_and_reciprocal_rank():
    assert recall_at(["a", "b", "c", "d"], ["b", "d", "e"], 2) == pytest.approx(1 / 3)
    assert recall_at(["a", "b", "c", "d"], ["b", "d", "e"], 4) == pytest.approx(2 / 3)
    assert first_rank(["a", "b", "c"], ["c"]) == 3
    assert reciprocal_rank(3) == pytest.approx(1 / 3)
    assert reciprocal_rank(11, k=10) == 0.0
    assert reciprocal_rank(None) == 0.0


def test_wilson_interval():
    lo, hi = wilson(5, 10)
    assert (lo, hi) == (pytest.approx(0.23659, abs=1e-5), pytest.approx(0.76341, abs=1e-5))
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.27753, abs=1e-5)
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(0.72247, abs=1e-5) and hi == pytest.approx(1.0)
    # With 64 questions a recall of 0.5 carries about +-0.12.
    lo, hi = wilson(32, 64)
    assert hi - 0.5 == pytest.approx(0.12, abs=0.005)


def test_sign_test_exact_two_sided():
    t = sign_test([1, 1, 1, 0, 1], [0, 0, 0, 0, 1])
    assert (t.wins, t.losses, t.ties) == (3, 0, 2)
    assert t.p == pytest.approx(0.25)  # 2 * (1/2)^3
    t = sign_test([1] * 8 + [0], [0] * 8 + [1])
    assert (t.wins, t.losses) == (8, 1)
    assert t.p == pytest.approx(2 * (1 + 9) / 512)  # 0.0390625
    assert sign_test([0.3, 0.2], [0.3, 0.2]).p == 1.0
    with pytest.raises(ValueError):
        sign_test([1], [1, 0])


def test_rrf_on_three_documents():
    ranks = {"dense": ["a", "b", "c"], "bm25": ["c", "a"]}
    fused = rrf(ranks, k=60)
    assert list(fused) == ["a", "c", "b"]
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    # Weighting the BM25 side twice puts its first hit first: 1/63 + 2/61 > 1/61 + 2/62.
    weighted = rrf(ranks, k=60, weights={"dense": 1.0, "bm25": 2.0})
    assert list(weighted) == ["c", "a", "b"]


def test_suggested_threshold_respects_the_bluff_budget():
    rows = [SweepRow(0.4, 2, 0, 8, 0, 10, 10), SweepRow(0.5, 6, 1, 3, 1, 10, 10),
            SweepRow(0.6, 8, 1, 1, 3, 10, 10), SweepRow(0.7, 8, 2, 0, 6, 10, 10)]
    assert suggest_threshold(rows, 0.1) == 0.5
    assert suggest_threshold(rows, 0.3) == 0.6  # 0.7 keeps no more right chunks, and bluffs more
    assert suggest_threshold(rows, 0.0) == 0.4
    assert suggest_threshold([SweepRow(0.5, 1, 0, 0, 0, 1, 0)], 0.1) is None  # nothing to refuse: no basis


# --- needle sets ---------------------------------------------------------------------------------------------


def test_sample_needle_set_invariants():
    questions = load_questions(SAMPLE_SET)
    assert check_needles(questions, DATA) == []
    answerable = [q for q in questions if q.answerable]
    assert len(answerable) >= 40 and sum(q.refuse for q in questions) >= 20
    assert sum(q.style == "paraphrase" for q in answerable) * 2 >= len(answerable)
    pt = [q for q in questions if q.lang == "pt"]
    assert sum(q.answerable for q in pt) >= 20 and sum(q.refuse for q in pt) >= 10
    assert len({q.question for q in questions}) == len(questions)


def test_check_needles_catches_duplicates_headings_and_absences(tmp_path):
    (tmp_path / "a.md").write_text("# Guide\n\n## Upload limits\n\nUploads stop at 50 MB each.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Uploads stop at 50 MB each.\n", encoding="utf-8")
    qs = [Question("q1", needle="Uploads stop at 50 MB each."), Question("q2", needle="## Upload limits"),
          Question("q3", needle="not in the folder at all"), Question("q4", refuse=True)]
    problems = check_needles(qs, tmp_path)
    assert len(problems) == 3
    assert "2 times" in problems[0] and "heading" in problems[1] and "0 times" in problems[2]


def test_questions_file_round_trip_and_errors(tmp_path):
    path = tmp_path / "questions.jsonl"
    save_question(path, Question("Quanto tempo demora a devolução?", needle="demora catorze dias", lang="pt"))
    save_question(path, Question("Who won the 1998 final?", refuse=True, lang="en"))
    got = load_questions(path)
    assert [(q.question, q.needle, q.refuse, q.lang) for q in got] == [
        ("Quanto tempo demora a devolução?", "demora catorze dias", False, "pt"),
        ("Who won the 1998 final?", None, True, "en")]
    path.write_text('{"question": "both", "needle": "x", "refuse": true}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=":1:"):
        load_questions(path)
    assert question_language("Como posso apagar um documento da pasta?") == "pt"
    assert question_language("How do I delete a document from the folder?") == "en"
    assert contains("a line\nthat wraps  here", "line that wraps here")


# --- why wasn't it found? -------------------------------------------------------------------------------------


def test_why_cited(engine, result):
    g = gate(result, 2.0, 4)
    d = why_not_found(engine, result, g, TOMATO)
    assert d.verdict == CITED
    cited = next(c for c in g.citations if c.n == d.citation)
    assert TOMATO in cited.quote and d.doc_name == "tomatoes.md"


def test_why_gated(engine, result):
    g = gate(result, 0.01, 4)
    d = why_not_found(engine, result, g, TOMATO)
    assert d.verdict == GATED
    assert d.distance > 0.01 and d.threshold == 0.01
    assert f"{d.distance:.3f}" in d.message


def test_why_capped(engine, result):
    g = gate(result, 2.0, 1)
    second = result.candidates[1]  # passes a threshold of 2.0, but the cap of 1 takes only the first
    d = why_not_found(engine, result, g, second.content)
    assert d.verdict == CAPPED_OUT
    assert d.fused_rank == 2 and d.chunk_id == second.chunk_id


def test_why_ranks_outside_the_candidates(engine, result):
    assert not any(INVOICE in c.content for c in result.candidates)
    d = why_not_found(engine, result, gate(result, 2.0, 4), INVOICE)
    assert d.verdict == RANKS
    assert d.doc_name == "invoices.md"
    assert d.fused_rank > len(result.candidates) and d.dense_rank >= 1
    # Over the whole snapshot, ranks agree with the search's own for chunks that were candidates.
    first = result.candidates[0]
    d1 = why_not_found(engine, result, gate(result, 0.0, 4), first.content)
    assert d1.verdict == GATED and d1.dense_rank == first.dense_rank


def test_why_chunking_shows_the_two_chunks(engine, result):
    d = why_not_found(engine, result, gate(result, 2.0, 4), BOAT)
    assert d.verdict == CHUNKING and d.doc_name == "boathouse.txt"
    left, right = d.straddles
    cut = 512 - long_text().index(BOAT)  # where the blind cut falls inside the sentence
    assert BOAT not in left and BOAT not in right
    assert left.endswith(BOAT[:cut].rstrip()) and right.startswith(BOAT[cut:].lstrip())


def test_why_extraction(engine, result):
    d = why_not_found(engine, result, gate(result, 2.0, 4), "The moon is made of green cheese.")
    assert d.verdict == EXTRACTION


# --- strategies, sweep, BEIR ----------------------------------------------------------------------------------


def test_blind_cuts_destroy_the_answer_that_boundaries_keep(folder, embedder, tmp_path):
    base = load_settings(config=tmp_path / "none.toml", env={})
    qs = [Question("Where is the spare key for the boathouse?", needle=BOAT, lang="en"),
          Question(QUESTION, needle=TOMATO, lang="en")]
    run = evaluate_needles(qs, folder, embedder, base, ["A/bm25", "E/bm25", "E/hybrid"])
    assert run.destroyed["A"] == [True, False] and run.destroyed["E"] == [False, False]
    assert run.ranks["A/bm25"][0] is None and run.ranks["E/bm25"][0] == 1
    s = run.summary("E/hybrid")
    assert s["recall@20"]["k"] == 2 and s["destroyed"]["k"] == 0
    assert run.compare("E/bm25", "A/bm25", k=20).wins == 1


def test_sweep_command_separates_answerable_from_refusable(folder, tmp_path, capsys):
    inp, out = tmp_path / "q.jsonl", tmp_path / "sweep.json"
    save_question(inp, Question(QUESTION, needle=TOMATO, lang="en"))
    save_question(inp, Question("Who won the football world cup final in 1998?", refuse=True, lang="en"))
    cfg = tmp_path / "none.toml"
    cfg.write_text("", encoding="utf-8")
    assert cli_main(["--config", str(cfg), "--folder", str(folder), "--index-dir", str(tmp_path / "never"),
                     "eval", "sweep", str(inp), str(out), "--budget", "0"]) == 0
    sw = json.loads(out.read_text(encoding="utf-8"))
    near = {d["kind"]: d["nearest"] for d in sw["distances"]}
    evidence = {d["kind"]: d["evidence"] for d in sw["distances"]}
    assert near["answerable"] < near["refusable"]
    rows = sw["rows"]["all"]
    assert [r["bluffs"] for r in rows] == sorted(r["bluffs"] for r in rows)
    # The football question shares no word with the garden notes: the support test refuses it at any
    # threshold, while the answerable one is kept once the threshold reaches it.
    assert evidence["refusable"] is None
    assert rows[-1]["right"] == 1 and rows[-1]["bluffs"] == 0
    # The answerable question is refused exactly at thresholds under the distance of its nearest passage
    # that passes the support test.
    assert all(r["refused"] == (1 if r["threshold"] < evidence["answerable"] else 0) for r in rows)
    assert evidence["answerable"] <= sw["suggested"]["all"]
    # As the engine asks it (its language's calibrated threshold): answered, and the other refused.
    assert sw["at_current"]["all"]["right"] == 1 and sw["at_current"]["all"]["bluffs"] == 0
    assert not (tmp_path / "never").exists()  # the sweep indexes into a temporary folder
    assert "suggested threshold" in capsys.readouterr().out


def test_beir_run_on_a_small_benchmark(tmp_path, embedder):
    docs = [("d1", "Statins and breast cancer", "Statin use was linked to lower mortality in a Finnish cohort."),
            ("d2", "Vitamin D and bones", "Vitamin D supplements improve bone density in older adults."),
            ("d3", "Coffee at night", "Drinking coffee late in the day delays sleep onset."),
            ("d4", "Fiber intake", "Dietary fiber from whole grains lowers cholesterol."),
            ("d5", "Green tea", "Green tea catechins may reduce blood pressure.")]
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, t, x in docs:
            fh.write(json.dumps({"_id": i, "title": t, "text": x, "metadata": {}}) + "\n")
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "statins breast cancer", "metadata": {"answer": "d2"}},
        {"_id": "q2", "text": "coffee and sleep", "metadata": {}},
        {"_id": "q3", "text": "not judged", "metadata": {}}]) + "\n", encoding="utf-8")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\r\nq1\td1\t2\r\nq1\td4\t1\r\nq2\td3\t1\r\n")
    run = run_beir(tmp_path, embedder, load_settings(config=tmp_path / "none.toml", env={}), candidates=10)
    assert (run.documents, run.queries) == (5, 2)
    # BM25 matches only d1 for q1 (d4 shares no word) and only d3 for q2:
    # nDCG@10 = mean(2 / (2 + 1/log2 3), 1); recall@10 = mean(1/2, 1).
    assert run.metrics["bm25"]["ndcg@10"] == pytest.approx((2 / (2 + 1 / math.log2(3)) + 1) / 2)
    assert run.metrics["bm25"]["recall@10"] == pytest.approx(0.75)
    assert run.metrics["dense"]["recall@100"] == 1.0  # dense ranks every document
    assert run.metrics["hybrid"]["mrr@10"] == 1.0
    assert set(run.tests) == {"hybrid vs dense", "hybrid vs bm25"}
    # The hybrid column is the app's search over the same snapshot: its documents, best chunk first.
    settings = load_settings(config=tmp_path / "none.toml", env={}, candidates=10)
    data = load_beir(tmp_path)
    ch = beir_chunks(data, strategy("E", settings.tuning.chunk_budget))
    vectors, _, _ = cached_vectors(embedder, ch.texts, None, "unused")
    snap = beir_snapshot(data, ch, vectors, settings)
    result = hybrid_search("coffee and sleep", embedder=embedder, snapshot=snap, settings=settings)
    assert result.candidates[0].doc_id == "d3" and result.candidates[0].title == "Coffee at night"
    assert run.per_query["hybrid"]["ndcg@10"][1] == 1.0  # q2: d3 first, as the search ranks it
    assert run.settings["fusion"] == settings.tuning.fusion and run.settings["weights"] == [result.weights]
    with pytest.raises(ValueError, match="only 'chunk'"):
        run_beir(tmp_path, embedder, settings, fusion="doc")


def test_the_lab_measures_with_the_products_own_rules():
    # One rule in one place: the lab's needle runs and the calibration page judge a passage alike.
    import lab.beir
    import lab.evaluate
    import rag.deciding.diagnosis
    import rag.deciding.needles
    import rag.deciding.sweep

    assert lab.evaluate.contains is rag.deciding.needles.contains is rag.deciding.diagnosis.contains is rag.deciding.sweep.contains
    assert lab.evaluate.Question is rag.deciding.needles.Question is rag.deciding.sweep.Question
    assert lab.beir.hybrid_search is hybrid_search

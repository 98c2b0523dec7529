"""The judge's relevance pairs from SQuAD 2.0's training articles (lab.relevance_data), on the real file."""

import gzip
import json

import pytest

from lab.judge_data import TRAIN_DIR
from lab.relevance_data import FIRST_ANSWERABLE, HELD_OUT, SOURCE, load, relevance_pairs


def _shares_text(passage: str, paragraph: str) -> bool:
    """Whether the chunk (past its "[Title]" header) holds a 40-character stretch of the paragraph: a chunk may
    start in the paragraph before or end in the next one."""
    body = passage.split("]", 1)[1]
    return any(paragraph[k:k + 40] in body for k in range(0, max(1, len(paragraph) - 40), 10))


@pytest.fixture(scope="module")
def articles():
    return load()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    cache = tmp_path_factory.mktemp("rel") / "pairs.jsonl.gz"
    return relevance_pairs(4, per_article=6, cache=cache), cache


def test_the_first_questions_are_answerable_on_the_ten_articles_whose_labels_we_hold():
    # The inference the pairs rest on, checked where it can be: SQuAD lists a paragraph's answerable questions
    # first, so its first FIRST_ANSWERABLE questions are answerable.
    data = json.load(gzip.open(TRAIN_DIR / "squad2-train-first10-en.json.gz"))["data"]
    firsts = [q for a in data for p in a["paragraphs"] for q in p["qas"][:FIRST_ANSWERABLE]]
    assert len(firsts) > 1300 and not any(q["is_impossible"] for q in firsts)


def test_every_positive_is_a_first_question_with_a_chunk_of_its_own_paragraph(articles, made):
    pairs, _ = made
    by_id = {q["id"]: (i, p) for a in articles for p in a["paragraphs"] for i, q in enumerate(p["qas"])}
    positives = [p for p in pairs if p.label == 1.0]
    assert len(positives) == 4 * 6 and {p.kind for p in positives} == {"answer"}
    for pr in positives:
        at, paragraph = by_id[pr.qid]
        assert at < FIRST_ANSWERABLE
        assert _shares_text(pr.passage, paragraph["context"])


def test_no_negative_comes_from_the_questions_own_paragraph_and_the_held_out_articles_are_never_read(articles, made):
    pairs, _ = made
    by_id = {q["id"]: p for a in articles for p in a["paragraphs"] for q in p["qas"]}
    negatives = [p for p in pairs if p.label == 0.0]
    assert {p.kind for p in negatives} <= {"same-article", "far"} and len(negatives) >= 24
    for pr in negatives:
        assert not _shares_text(pr.passage, by_id[pr.qid]["context"])
    held = {a["title_en"] for a in articles if a["doc"] in HELD_OUT}
    assert not {p.article for p in pairs} & held
    assert all(not p.qid.startswith(("bt00", "bt01-", "bt009")) for p in pairs)


def test_the_pairs_are_seeded_and_read_back_from_their_cache_unchanged(made):
    pairs, cache = made
    assert cache.is_file()
    again = relevance_pairs(4, per_article=6, cache=cache)
    assert again == pairs
    cache.unlink()
    assert relevance_pairs(4, per_article=6, cache=cache) == pairs  # built afresh: the same seed, the same pairs


def test_the_source_file_is_the_one_its_readme_describes():
    data = json.load(gzip.open(TRAIN_DIR / SOURCE))["data"]
    assert len(data) == 442 and sum(len(p["qas"]) for a in data for p in a["paragraphs"]) == 130_319


def test_the_held_out_folder_of_the_ten_labelled_articles_is_what_its_doc_says(tmp_path):
    from lab.heldout import build_first10, first10_articles
    from lab.judge_data import SPLITS, load_articles, split_of

    rows = [json.loads(x) for x in build_first10(tmp_path).read_text(encoding="utf-8").splitlines()]
    kinds = {k: [r for r in rows if r["kind"] == k] for k in ("answerable", "near-miss", "off-folder")}
    assert [len(v) for v in kinds.values()] == [200, 100, 100]
    labelled = {q["id"]: q for a in first10_articles() for p in a["paragraphs"] for q in p["qas"]}
    assert all(labelled[r["id"]]["is_impossible"] for r in kinds["near-miss"])
    assert all(not labelled[r["id"]]["is_impossible"] for r in kinds["answerable"])
    docs = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "docs").iterdir()}
    assert len(docs) == 10 and all(r["needle"] in docs[r["document"]] for r in kinds["answerable"])
    test_ids = {q["id"] for a in load_articles("en") if split_of(a["title_en"]) == "test"
                for p in a["paragraphs"] for q in p["qas"]}
    assert all(r["id"] in test_ids and r["id"] not in labelled for r in kinds["off-folder"])
    # None of the ten is a dev article the judge trains or is chosen on (the relevance pairs skip them: above).
    assert not {a["title"] for a in first10_articles()} & {a for v in SPLITS.values() for a in v}

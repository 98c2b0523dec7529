"""The judge: the shipped cross-encoder loads offline, reorders candidates by whether they answer, decides the
gate for the languages it reads, names itself when it refuses, and can be trained again here.

Real parts throughout: the shipped judge weights, the real MiniLM embedder, a real store on disk; the
training test runs the real training script on a few SQuAD pairs from ../shared/train.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rag
from rag.cli import main as cli_main
from rag.deciding.gate import gate
from rag.deciding.rule import JUDGE, JUDGED_OUT, KEPT, SupportRule
from rag.deciding.judge import JUDGE_DIR, Judge, load_judge, load_pair_model, passage_text
from rag.searching.search import Candidate, SearchResult
from rag.deciding.explain import refusal_sentence

ROOT = Path(__file__).resolve().parent.parent

KILN = """# Studio kiln

## Firing schedule

The kiln is fired every Thursday. Pieces must be on the kiln shelf by Wednesday at 6 pm to make that firing.

## Kiln room rules

Only the studio manager loads and unloads the kiln. Do not open the kiln room door while the kiln is firing; the
room stays locked until the kiln has cooled below 100 degrees.

## Prices

A bisque firing costs 4 euros per shelf. Glaze firings are included in the membership fee.
"""


def row(i: int, judge: float | None, distance: float = 0.4, **kw) -> Candidate:
    return Candidate(f"c{i}", "d1", "kiln.md", "Studio kiln", "", f"passage {i}", 0, 10, None, None, "text", i,
                     0.1, distance, i, i, 1.0, judge=judge, judge_rank=i, **kw)


def test_the_shipped_judge_loads_offline_from_the_package_and_names_its_languages():
    assert (JUDGE_DIR / "config.json").is_file() and JUDGE_DIR.parent.name == "deciding"  # in the package: rag/deciding/
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set by `import rag`: nothing is fetched
    judge = load_judge()
    card = json.loads((JUDGE_DIR / "training.json").read_text(encoding="utf-8"))
    assert judge.languages == tuple(card["judged_languages"]) and "en" in judge.languages
    scores = judge.score("When is the kiln fired?", ["The kiln is fired every Thursday.", "Bread rises in a warm room."])
    assert len(scores) == 2 and scores[0] > scores[1]
    assert judge.stamp.startswith("judge-") and judge.stamp == load_judge().stamp


def test_a_pairs_score_is_its_own_whatever_else_is_read_beside_it():
    """The calibration reads 3 passages a question and a search 20: a pair must score the same in both, or the
    cut is chosen on other numbers than the ones it is held against (int8 sets its scale per input)."""
    judge = load_judge()
    question, answer = "When is the kiln fired?", "The kiln is fired every Thursday."
    alone = judge.score(question, [answer])[0]
    judge.forget()
    beside = judge.score(question, ["Bread.", KILN, answer, "A bisque firing costs 4 euros per shelf."])
    judge.forget()
    assert beside[2] == alone and beside[0] == judge.score(question, ["Bread."])[0]


@pytest.mark.parametrize("question, answers, shares_words", [
    ("When is the kiln fired?", "The kiln is fired every Thursday.",
     "Do not open the kiln room door while the kiln is firing."),
    ("How much does a bisque firing cost?", "A bisque firing costs 4 euros per shelf.",
     "Only the studio manager loads and unloads the kiln for a bisque firing."),
])
def test_a_passage_that_answers_outranks_one_that_only_shares_the_question_words(question, answers, shares_words):
    judge = load_judge()
    good, bad = judge.score(question, [answers, shares_words])
    assert good > bad


def test_on_a_real_folder_the_judge_puts_the_answering_passage_first(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kiln.md").write_text(KILN, encoding="utf-8")
    engine = make_engine(folder, judge=True)
    engine.sync()
    result = engine.search("On which day is the kiln fired?")
    assert result.judged == len(result.candidates) and result.judge_stamp == engine.judge.stamp
    top = result.candidates[0]
    assert "every Thursday" in top.content and top.judge_rank == 1
    assert top.judge == max(c.judge for c in result.candidates)
    # Every row keeps its fused rank beside its judge rank: the table shows both orders.
    assert sorted(c.fused_rank for c in result.candidates) == list(range(1, len(result.candidates) + 1))
    assert sorted(c.judge_rank for c in result.candidates) == list(range(1, len(result.candidates) + 1))
    turn = engine.ask("On which day is the kiln fired?")
    assert turn.gated.rule.judging and not turn.answer.refused
    assert "every Thursday" in turn.gated.citations[0].quote


def test_a_refusal_by_the_judge_names_it_in_the_engine_and_the_cli(make_engine, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kiln.md").write_text(KILN, encoding="utf-8")
    # A cut no passage can reach: every passage under the threshold is judged not to answer.
    engine = make_engine(folder, judge=True, judge_floor=50.0)
    engine.sync()
    turn = engine.ask("On which day is the kiln fired?")
    assert turn.answer.refused and turn.gated.because == JUDGE
    assert "the judge read the passages under cosine distance" in refusal_sentence(turn.gated)
    assert "English needs 50.00 or more" in refusal_sentence(turn.gated)
    assert JUDGED_OUT in turn.gated.verdicts
    # The judge is tuning: a rag.toml cannot turn it on (the start stops, naming the setting) ...
    (tmp_path / "rag.toml").write_text("judge = true\njudge_floor = 50.0\n", encoding="utf-8")
    args = ["--folder", str(folder), "--index-dir", str(engine.settings.index_path), "ask",
            "On which day is the kiln fired?", "--json"]
    assert cli_main(["--config", str(tmp_path / "rag.toml"), *args]) == 2
    assert "setting judge, judge_floor (in " in capsys.readouterr().err
    # ... while `rag ask` on an engine whose tuning a test built in code says what the chat says.
    monkeypatch.setattr("rag.cli._engine", lambda args, folder=None: engine)
    assert cli_main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["refused"] and out["support_rule"]["judge_cut"] == 50.0
    assert all(c["judge"] is not None and c["judge_rank"] for c in out["candidates"])


def test_the_gate_keeps_by_judge_score_and_cut_and_says_which_test_judged():
    result = SearchResult("q", "q", [row(1, 2.0), row(2, 0.3), row(3, -1.0)], {})
    rule = SupportRule(0.5, judge_cut=0.5, judge_rules=("names",), judge_lang="en")
    g = gate(result, 0.8, 4, rule)
    assert g.verdicts == [KEPT, JUDGED_OUT, JUDGED_OUT]
    # Over the threshold the distance decides first, judge or not.
    g = gate(result, 0.3, 4, rule)
    assert refusal_sentence(g).startswith("NO ANSWER: nothing under cosine distance 0.300")
    # A name the passage lacks fails it whatever its score ("names" kept beside the judge) ...
    named = SearchResult("q", "q", [row(1, 2.0, lacks_names=("lantern",))], {})
    assert gate(named, 0.8, 4, rule).kept == []
    # ... and passes without that rule.
    assert gate(named, 0.8, 4, SupportRule(0.5, judge_cut=0.5, judge_rules=(), judge_lang="en")).kept


def test_the_judge_reads_the_header_it_was_trained_with():
    c = row(1, None)
    assert passage_text(c) == "[Studio kiln]\npassage 1"


@pytest.mark.slow
def test_a_tiny_training_run_produces_a_judge_that_loads(tmp_path):
    out = tmp_path / "judge"
    proc = subprocess.run([sys.executable, str(ROOT / "lab" / "train_judge.py"), "--out", str(out), "--langs", "en",
                           "--max-pairs", "32", "--dev-pairs", "32", "--batch", "16", "--max-length", "128"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    card = json.loads((out / "training.json").read_text(encoding="utf-8"))
    assert card["pairs"] == 32 and card["recipe"]["steps"] == 2 and card["languages"] == ["en"]
    judge = Judge(out, languages=["en"])
    scores = judge.score("When is the kiln fired?", ["The kiln is fired every Thursday.", "Bread."])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
    assert judge.stamp != load_judge().stamp
    # A second stage starts from that judge, not from the embedder, and its card says what it started from; on
    # relevance pairs of the SQuAD training articles, stopped by its time limit after one step, it leaves a
    # checkpoint, and the same command run again resumes there and finishes.
    second = tmp_path / "judge2"
    stage = [sys.executable, str(ROOT / "lab" / "train_judge.py"), "--out", str(second), "--langs", "en",
             "--init", str(out), "--near-share", "1", "--relevance", "2", "--relevance-cache", str(tmp_path), "--labelled", "0.01", "--max-pairs", "32",
             "--dev-pairs", "0", "--batch", "16", "--max-length", "128"]
    proc = subprocess.run(stage + ["--minutes", "0.0001"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (second / "checkpoint.pt").is_file()
    assert json.loads((second / "training.json").read_text(encoding="utf-8"))["recipe"]["steps"] == 1
    proc = subprocess.run(stage, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "resumed at step 1 of 2" in proc.stdout and not (second / "checkpoint.pt").exists()
    card2 = json.loads((second / "training.json").read_text(encoding="utf-8"))
    assert card2["first_stage"]["pairs"] == 32 and card2["near_share"] == 1.0 and card2["recipe"]["steps"] == 2
    assert "first 2 articles" in card2["relevance"] and card2["pairs"] == 32
    assert Judge(second, languages=["en"]).stamp not in (judge.stamp, load_judge().stamp)
    # With a span head and near misses made from answers: the head is saved, loaded, and the judge still scores.
    third = tmp_path / "judge3"
    proc = subprocess.run([sys.executable, str(ROOT / "lab" / "train_judge.py"), "--out", str(third), "--langs", "en",
                           "--init", str(out), "--span-weight", "1", "--removed-share", "1", "--max-pairs", "16",
                           "--dev-pairs", "48", "--batch", "16", "--max-length", "128"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    card3 = json.loads((third / "training.json").read_text(encoding="utf-8"))
    assert card3["span_weight"] == 1.0 and card3["removed_share"] == 1.0
    assert {"span:near-miss", "both:all"} <= set(card3["dev_auc"]["en"])
    head = json.loads((third / "judge_head.json").read_text(encoding="utf-8"))
    assert len(head["span"]["weight"]) == 2 and len(head["span"]["weight"][0]) == 384
    assert load_pair_model(third).span is not None and load_pair_model(out).span is None
    assert len(Judge(third, languages=["en"]).score("When is the kiln fired?", ["The kiln is fired every Thursday."])) == 1


@pytest.mark.slow
def test_the_gpu_script_trains_and_its_parts_put_together_make_a_judge(tmp_path):
    """scripts/device-train-judge.sh as a lent GPU machine runs it (here on CPU, a tiny run): the SQuAD files
    from .device/train, the judge back in files of at most 16 MiB that the README's two commands reassemble."""
    work = tmp_path / "tree"  # a working tree of its own, so .device/ is not written into the repository
    work.mkdir()
    for part in ("lab", "rag", "scripts"):
        (work / part).symlink_to(ROOT / part)
    (work / ".device" / "train").mkdir(parents=True)
    for f in (ROOT.parent / "shared" / "train").glob("*.json.gz"):
        (work / ".device" / "train" / f.name).symlink_to(f)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(["bash", "scripts/device-train-judge.sh", "--init", str(JUDGE_DIR), "--langs", "en",
                           "--max-pairs", "16", "--dev-pairs", "0", "--batch", "16", "--max-length", "128"],
                          capture_output=True, text=True, timeout=300, cwd=work,
                          env={**os.environ, "OUT": str(out), "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    parts = sorted(out.glob("model.safetensors.part-*"))
    assert len(parts) == 3 and all(p.stat().st_size <= 16 * 2**20 for p in parts)
    assert "saved to" in (out / "train.log").read_text(encoding="utf-8")
    judge = tmp_path / "judge"
    judge.mkdir()
    (judge / "model.safetensors").write_bytes(b"".join(p.read_bytes() for p in parts))
    subprocess.run(["tar", "-C", str(judge), "-xf", str(out / "judge-rest.tar")], check=True)
    card = json.loads((judge / "training.json").read_text(encoding="utf-8"))
    assert card["pairs"] == 16 and card["first_stage"]["pairs"] == load_judge().card["pairs"]
    scores = Judge(judge, languages=["en"]).score("When is the kiln fired?", ["The kiln is fired every Thursday."])
    assert len(scores) == 1 and isinstance(scores[0], float)


def test_a_language_the_judge_does_not_read_falls_back_to_the_word_tests(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kiln.md").write_text(KILN, encoding="utf-8")
    engine = make_engine(folder, judge=True, judge_languages=("pt",))  # as if its card listed Portuguese only
    engine.sync()
    turn = engine.ask("On which day is the kiln fired?")
    assert turn.result.judged  # it still reads and orders the rows ...
    assert not turn.gated.rule.judging  # ... but the word share decides, and the screen says so
    assert rag.evidence_rule(turn.gated.rule).startswith("support at least 50%")
    assert JUDGED_OUT not in turn.gated.verdicts
    pt = engine.threshold_choice("Em que dia é cozido o forno?").rule
    assert pt.judging and pt.judge_lang == "pt"


def test_ordering_alone_orders_the_languages_the_judge_reads_and_the_word_tests_decide(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kiln.md").write_text(KILN, encoding="utf-8")
    engine = make_engine(folder, judge_rerank=True)
    words = make_engine(folder, index_dir=tmp_path / "words-index")
    assert engine.judge is not None and words.judge is None
    read: list[int] = []
    score = engine.judge.score
    engine.judge.score = lambda q, passages: (read.append(len(passages)), score(q, passages))[1]
    engine.sync()
    words.sync()
    # The word tests' calibration takes the nearest passing row whatever the order: the judge reads none of the
    # 800 unrelated questions, and the thresholds are the words' own.
    assert engine.calibrated().languages == words.calibrated().languages
    assert read == []
    turn = engine.ask("On which day is the kiln fired?")
    assert read and turn.result.judged == min(engine.settings.tuning.judge_top, len(turn.result.candidates))
    assert turn.result.candidates[0].judge_rank is not None and "every Thursday" in turn.result.candidates[0].content
    assert not turn.gated.rule.judging and JUDGED_OUT not in turn.gated.verdicts  # the word share decides
    assert rag.evidence_rule(turn.gated.rule).startswith("support at least 50%")
    # The same rows as without the judge, in its order; the same passages kept or refused.
    plain = words.ask("On which day is the kiln fired?")
    assert {c.chunk_id for c in turn.result.candidates} == {c.chunk_id for c in plain.result.candidates}
    assert turn.answer.refused == plain.answer.refused
    # A question in a language its card does not list is left in retrieval's order.
    pt = engine.search("Em que dia é cozido o forno?")
    assert pt.judged == 0 and all(c.judge is None for c in pt.candidates)


def test_a_judge_that_cannot_be_loaded_leaves_the_words_deciding_and_rag_status_says_why(make_engine, tmp_path,
                                                                                           capsys, monkeypatch):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kiln.md").write_text(KILN, encoding="utf-8")
    broken = tmp_path / "judge"
    broken.mkdir()
    (broken / "README.md").write_text("no weights here", encoding="utf-8")
    engine = make_engine(folder, judge=True, judge_path=str(broken))
    engine.sync()
    assert engine.judge is None and engine.judge_error.startswith("the judge could not be loaded (")
    turn = engine.ask("On which day is the kiln fired?")
    # The word tests decided: no row was read by a judge.
    assert not turn.gated.rule.judging and all(c.judge is None for c in turn.result.candidates)
    monkeypatch.setattr("rag.cli._engine", lambda args, folder=None: engine)
    assert cli_main(["--folder", str(folder), "status"]) == 0
    assert engine.judge_error in capsys.readouterr().out

"""The calibration page driven by AppTest: it works before anyone writes a question (unrelated questions and
the folder's own sentences), draws the calibrated threshold per language, sweeps, moves the chat's slider
and puts it back, and saves questions beside the index.

Everything is real: the page loads the real MiniLM model and indexes a small English + Portuguese folder
written here into a real Chroma store in a temporary folder (RAG_FOLDER / RAG_INDEX_DIR).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import rag
from rag.deciding.needles import Question, load_questions, save_question

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "app" / "pages" / "calibration.py")
TIMEOUT = 180  # the first run loads the model and indexes the folder

DOCS = {
    "garden.md": "# Garden\n\n## Tomatoes\n\nTomatoes need six hours of direct sun every day.\n\n"
                 "## Roses\n\nPrune roses in late winter, before the new growth starts.\n",
    "billing.md": "# Billing\n\nInvoices are due within thirty days of the delivery date.\n",
    "notas.md": "# Notas da casa\n\n## Devoluções\n\nAs devoluções são aceites durante catorze dias após a entrega.\n\n"
                "## Lixo\n\nO lixo reciclável é recolhido às quartas-feiras de manhã.\n",
}
QUESTIONS = [
    Question("How many hours of sun do tomatoes need?", needle="Tomatoes need six hours of direct sun every day.", lang="en"),
    Question("When are invoices due?", needle="Invoices are due within thirty days of the delivery date.", lang="en"),
    Question("Who won the football world cup in 1998?", refuse=True, lang="en"),
    Question("Quanto tempo tenho para devolver uma encomenda?",
             needle="As devoluções são aceites durante catorze dias após a entrega.", lang="pt"),
    Question("Qual é a capital da Mongólia?", refuse=True, lang="pt"),
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("calibration")
    docs = base / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    index = base / "index"
    for q in QUESTIONS:
        save_question(index / "questions.jsonl", q)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAG_FOLDER", str(docs))
        mp.setenv("RAG_INDEX_DIR", str(index))
        mp.setenv("RAG_CONFIG", str(base / "none.toml"))  # no rag.toml of the working tree leaks in
        yield index


def charts(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def engine_of(index_dir) -> rag.Engine:
    """The engine the page opened for the settings in the environment (the same `st.cache_resource` entry)."""
    from app import ui
    settings = rag.load_settings()
    assert settings.index_path == index_dir
    return ui.open_workspace(ui.engine_key(settings), settings).engine


def test_page_works_before_anyone_writes_a_question(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("RAG_FOLDER", str(docs))
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("RAG_CONFIG", str(tmp_path / "none.toml"))
    AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()  # opens the engine; its queue indexes the folder
    engine = engine_of(tmp_path / "index")
    assert engine.queue.wait_idle(120)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    calibration = engine.calibrated()
    # How each language's threshold was chosen, in words, with the calibrated value.
    lines = [text for text in (m.value.replace("\\", "") for m in at.markdown)
             if text.startswith(("Calibrated for English:", "Calibrated for Portuguese:"))]
    assert len(lines) == 2
    assert f"{calibration.threshold('en'):.3f}" in lines[0] and f"{calibration.threshold('pt'):.3f}" in lines[1]
    # The rule each language's passages must pass, in the gate's own words (it once described an old rule).
    s = engine.settings
    for lang, line in zip(("en", "pt"), lines):
        rule = calibration.rule(lang, s.tuning.min_support, s.tuning.close_support, s.tuning.ramp_support, s.tuning.judge_rules)
        assert rag.evidence_rule(rule) in line
    # One chart per language, each with the calibrated and in-use thresholds drawn as rules.
    assert [h.value for h in at.subheader][:2] == ["Language: en", "Language: pt"]
    assert len(charts(at)) == 2
    assert all(any(layer["mark"] == "rule" or (isinstance(layer["mark"], dict) and layer["mark"]["type"] == "rule")
                   for layer in spec["layer"]) for spec in charts(at))
    # The sweep runs on the folder's own sentences and the unrelated questions: no questions file needed.
    assert not (tmp_path / "index" / "questions.jsonl").exists()
    table = at.dataframe[0].value
    assert {"threshold", "right passage kept", "unrelated answered"} <= set(table.columns)
    assert table["unrelated answered"].is_monotonic_increasing
    assert table["right passage kept"].iloc[-1] > 0.5  # the folder's own sentences find themselves
    assert "0 questions of your own" in at.caption[-1].value
    # The tuning in force, named by its fingerprint, as `rag status` prints it.
    assert any(f"Tuning {s.tuning.fingerprint}" in c.value for c in at.caption)

    # Pick a threshold for the chat, then go back to the calibrated ones.
    at.number_input(key="calibration_pick").set_value(0.5).run()
    at.button(key="use_pick").click().run()
    assert at.session_state["threshold_set"] == pytest.approx(0.5)
    assert any("0.500" in s.value for s in at.success)
    at.button(key="use_calibrated").click().run()
    assert at.session_state["threshold_set"] is None


def test_adding_questions_beside_the_index(index_dir):
    AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert engine_of(index_dir).queue.wait_idle(120)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    before = len(load_questions(index_dir / "questions.jsonl"))

    at.text_input(key="new_question").input("Quando é recolhido o lixo reciclável?")
    at.text_area(key="new_expected").input("O lixo reciclável é recolhido às quartas-feiras de manhã.")
    at.checkbox(key="new_refuse").check()  # a sentence AND "should refuse": one of the two, not both
    next(b for b in at.button if b.label == "Save question").click().run()
    assert any("one of the two" in e.value for e in at.error)
    assert len(load_questions(index_dir / "questions.jsonl")) == before

    at.checkbox(key="new_refuse").uncheck()
    at.text_input(key="new_question").input("Quando é recolhido o lixo reciclável?")
    at.text_area(key="new_expected").input("O lixo reciclável é recolhido às quartas-feiras de manhã.")
    next(b for b in at.button if b.label == "Save question").click().run()
    assert not at.exception, at.exception
    saved = load_questions(index_dir / "questions.jsonl")
    assert len(saved) == before + 1
    assert (saved[-1].question, saved[-1].lang, saved[-1].refuse) == ("Quando é recolhido o lixo reciclável?", "pt", False)
    assert f"{before + 1} questions of your own" in at.caption[-1].value

"""The calibration page driven by AppTest: per-language histograms with the threshold drawn on them, the
sweep table, the button that moves the chat's threshold slider, and questions saved beside the index.

Everything is real: the page loads the real MiniLM model and indexes a small English + Portuguese folder
written here into a real Chroma store in a temporary folder (RAG_FOLDER / RAG_INDEX_DIR).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag.evaluate import Question, load_questions, save_question

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "pages" / "2_Calibration.py")
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


def rule_at(spec: dict) -> float:
    rule = next(layer for layer in spec["layer"] if (layer["mark"]["type"] if isinstance(layer["mark"], dict)
                                                      else layer["mark"]) == "rule")
    return rule["encoding"]["x"]["datum"]


def test_histograms_table_and_suggested_threshold(index_dir):
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert [h.value for h in at.subheader][:2] == ["Language: en", "Language: pt"]
    specs = charts(at)
    assert len(specs) == 2
    assert [rule_at(s) for s in specs] == [0.675, 0.675]  # the settings' threshold, before anyone moves it

    table = at.dataframe[0].value
    assert {"threshold", "right chunk kept", "bluffs (should refuse)"} <= set(table.columns)
    assert table["bluffs (should refuse)"].is_monotonic_increasing
    assert table["right chunk kept"].max() == 3 and table["bluffs (should refuse)"].max() == 2

    button = at.button(key="use_suggested")
    suggested = float(re.search(r"([0-9.]+)$", button.label).group(1))
    row = table[(table["threshold"] - suggested).abs() < 1e-9].iloc[0]
    assert row["bluffs (should refuse)"] == 0  # the default budget of 10% of 2 questions allows none
    button.click().run()
    assert at.session_state["threshold"] == pytest.approx(suggested)
    assert [rule_at(s) for s in charts(at)] == [pytest.approx(suggested)] * 2  # the rule moved with it


def test_adding_questions_beside_the_index(index_dir):
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
    assert any(f"{before + 1} questions" in m.value for m in at.markdown)

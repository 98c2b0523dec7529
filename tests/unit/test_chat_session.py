"""chat_session: a chat's turns and the settings each is shown with, on hand-made search results.

No Streamlit, no model: the support test a question gets is a function the test passes in, as the page
passes the engine's choice.
"""

from __future__ import annotations

import pytest

import rag
from app.chat_session import ChatSession, Controls, Research

RULES = {"en": rag.SupportRule(0.5, close=0.3, close_support=0.2), "pt": rag.SupportRule(0.6)}


def rule_for(question: str) -> rag.SupportRule:
    return RULES["pt" if question.startswith("Onde") else "en"]


def searched(question: str, chunks: int = 40, query: str | None = None) -> rag.SearchResult:
    return rag.SearchResult(question, query or question, [], {"dense": 0.6, "bm25": 0.4}, searched_chunks=chunks)


def candidate(i: int, distance: float) -> rag.Candidate:
    return rag.Candidate(f"c{i}", "d1", "notes.md", "Notes", "", "Text.", 0, 5, None, None, "text", i, 1.0,
                         distance, i, i, 1.0)


NOW = Controls(0.6, 4, "extractive")


def test_asking_appends_a_live_turn_and_freezes_the_earlier_ones_at_the_settings_shown():
    turns: list[dict] = []
    chat = ChatSession(turns, rule_for)
    chat.ask("Where is the index?", searched("Where is the index?"), 20, NOW)
    assert len(chat) == 1 and turns[0]["live"] and "threshold" not in turns[0] and turns[0]["n"] == 20
    assert chat.shown(0, Controls(0.7, 2, "llm")).threshold == 0.7  # the last turn follows the sidebar

    chat.ask("Onde fica o índice?", searched("Onde fica o índice?"), 20, Controls(0.7, 2, "llm"))
    first = chat.shown(0, Controls(0.1, 9, "extractive"))
    assert (first.threshold, first.max_chunks, first.mode, first.rule, first.live) == (0.7, 2, "llm", RULES["en"], False)
    last = chat.shown(1, Controls(0.1, 9, "extractive"))
    assert (last.threshold, last.rule, last.live) == (0.1, RULES["pt"], True)
    assert turns[0]["id"] != turns[1]["id"]


def test_a_turn_appended_by_an_overlapping_run_is_frozen_when_it_becomes_an_earlier_turn():
    turns: list[dict] = []
    chat = ChatSession(turns, rule_for)
    chat.ask("Where is the index?", searched("Where is the index?"), 20, NOW)
    turns.append({"id": "other", "question": "What is BM25?", "result": searched("What is BM25?"), "n": 20,
                  "live": True})  # another tab's run: never frozen
    chat.ask("What is RRF?", searched("What is RRF?"), 20, Controls(0.5, 3, "extractive"))
    assert [t.get("threshold") for t in turns] == [0.5, 0.5, None]
    turns[0].pop("threshold")  # drawn before any ask froze it: frozen at the settings on screen
    assert chat.shown(0, Controls(0.4, 1, "extractive")).threshold == 0.4 and turns[0]["threshold"] == 0.4


def test_history_is_the_searched_queries_before_the_turn():
    chat = ChatSession([], rule_for)
    chat.ask("What is RRF?", searched("What is RRF?"), 20, NOW)
    chat.ask("Its k?", searched("Its k?", query="What is RRF? Its k?"), 20, NOW)
    assert chat.history() == ["What is RRF?", "What is RRF? Its k?"]
    assert chat.history(-1) == ["What is RRF?"]
    assert chat.last_question() == "Its k?" and ChatSession([], rule_for).last_question() == ""


def test_the_last_question_is_searched_again_when_n_changes_or_it_was_asked_before_anything_was_indexed():
    chat = ChatSession([], rule_for)
    assert chat.due_search(20, indexed=True) is None  # no turn yet
    chat.ask("Where is the index?", searched("Where is the index?"), 20, NOW)
    assert chat.due_search(20, indexed=True) is None
    assert chat.due_search(5, indexed=True) == Research("Where is the index?", stale=False)
    chat.turns[-1]["answers"] = {("extractive", None, ("c1",)): "an answer"}
    chat.searched_again(searched("Where is the index?"), 5)
    assert chat.turns[-1]["n"] == 5 and chat.turns[-1]["answers"] == {}  # its answers were for other passages
    assert chat.due_search(5, indexed=True) is None

    early = ChatSession([], rule_for)
    early.ask("Where do herons go?", searched("Where do herons go?", chunks=0), 20, NOW)
    assert early.due_search(20, indexed=False) is None  # still nothing indexed
    assert early.due_search(20, indexed=True) == Research("Where do herons go?", stale=True)
    early.searched_again(searched("Where do herons go?", chunks=3), 20)
    assert early.due_search(20, indexed=True) is None  # not again on every redraw


def test_a_redraw_only_when_landed_files_moved_the_threshold_nobody_set():
    asked = []

    def now() -> float:
        asked.append(1)
        return 0.8

    assert ChatSession.redraw(True, False, 0.675, now)
    assert not ChatSession.redraw(True, False, 0.8, now)
    assert not ChatSession.redraw(True, True, 0.675, now)  # the person's value stays
    assert not ChatSession.redraw(False, False, 0.675, now)  # nothing landed
    assert len(asked) == 2  # the engine is asked only when it can matter


def test_answers_are_remembered_by_mode_server_and_kept_passages():
    rows = [candidate(1, 0.2), candidate(2, 0.3), candidate(3, 0.45)]
    res = rag.SearchResult("q", "q", rows, {})
    wide, same, narrow = (rag.gate(res, t, 4) for t in (0.5, 0.49, 0.25))
    key = ChatSession.answer_key(wide, "extractive", ("http://127.0.0.1:1/v1", "m"))
    assert key == ("extractive", None, ("c1", "c2", "c3"))  # the server matters only to an LLM answer
    assert ChatSession.answer_key(same, "extractive") == key
    assert ChatSession.answer_key(narrow, "extractive") != key
    assert ChatSession.answer_key(wide, "llm", ("u", "m")) != ChatSession.answer_key(wide, "llm", ("u", "n"))
    turn: dict = {}
    assert ChatSession.answer(turn, key) is None
    assert ChatSession.remember_answer(turn, key, ("answer", 12.0)) == ("answer", 12.0)
    assert ChatSession.answer(turn, key) == ("answer", 12.0)


def test_a_diagnosis_is_computed_once_per_key_and_only_the_last_is_kept():
    turn: dict = {}
    calls = []
    first = ChatSession.diagnosis(turn, ("s", 0.5), lambda: calls.append(1) or "cited")
    again = ChatSession.diagnosis(turn, ("s", 0.5), lambda: calls.append(1) or "other")
    assert first == again == "cited" and len(calls) == 1
    assert ChatSession.diagnosis(turn, ("s", 0.0), lambda: "gated") == "gated"
    assert list(turn["why"]) == [("s", 0.0)]


def test_an_unknown_answer_mode_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="valid: extractive, llm"):
        Controls(0.5, 4, "abstractive")

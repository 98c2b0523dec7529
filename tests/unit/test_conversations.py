"""The conversation store (app/conversations.py) on a real SQLite file: a turn comes back equal after the
store is opened again, the list, find, rename, delete and undo, two writers on one conversation, damage set
aside, and the Markdown export."""

from __future__ import annotations

import math

import rag
from app import conversations as conv
from rag.deciding.citations import CitationCheck


def turn(question: str, doc: str = "notes.md", quote: str = "The heron migrates every October.") -> dict:
    cand = rag.Candidate("c1", "d1", doc, "Notes", "Migration", quote, 10, 10 + len(quote), None, None, "md", 1,
                         0.5, 0.31, 1, 2, 3.5, missing=("bolo",), lacks_names=(), lang="en", version="abc")
    result = rag.SearchResult(question, question, [cand], {"dense": 0.6, "bm25": 0.4}, {"embed": 3.0},
                              searched_chunks=40, terms=("heron", "migrate"))
    rule = rag.SupportRule(0.5, rise_from=math.inf)
    gated = rag.gate(result, 0.6, 4, rule)
    cite = gated.citations[0]
    ans = rag.Answer(f"{quote} [1]", False, "extractive", citations=[cite],
                     check=CitationCheck((1,), (1,), (), (), False), quoted=[(0, len(quote))])
    t = {"id": question, "question": question, "result": result, "n": 20, "threshold": 0.6,
         "max_chunks": 4, "mode": "extractive", "rule": rule, "live": False, "asked_at": 1.0,
         "answers": {("extractive", None, ("c1",)): (ans, 12.5)}}
    t["shown"] = conv.shown_of(gated, ans, "")
    return t


def test_a_turn_comes_back_equal_after_reopening(tmp_path):
    store = conv.Store(tmp_path)
    first = turn("When does the heron migrate?")
    store.save_turn("chat1", first, folder="/f", threshold_set=0.61, scope={"docs": ["notes.md"]})
    store.close()
    back = conv.Store(tmp_path).load("chat1")
    assert back.title == "When does the heron migrate?" and back.threshold_set == 0.61
    assert back.scope == {"docs": ["notes.md"]}
    (got,) = back.turns
    assert got["result"] == first["result"] and got["rule"] == first["rule"]
    assert got["answers"] == first["answers"] and got["shown"] == first["shown"]
    assert isinstance(got["result"].candidates[0].missing, tuple)
    # Gated again from its row, it keeps the same passage.
    assert rag.gate(got["result"], got["threshold"], got["max_chunks"], got["rule"]).verdicts == ["kept"]


def test_list_find_rename_delete_undo_and_two_writers(tmp_path, monkeypatch):
    store = conv.Store(tmp_path)
    store.save_turn("a", turn("Qual é a caução do apartamento?", "contrato.md", "A caução é de dois meses."))
    store.save_turn("b", turn("When does the heron migrate?"))
    assert [s.id for s in store.list()] == ["b", "a"]  # newest first
    assert [s.id for s in store.list("CAUCAO")] == ["a"]  # accents and case ignored
    assert [s.id for s in store.list("heron october")] == ["b"]  # the answer's words count too
    store.rename("b", "Birds")
    assert store.list("birds")[0].title == "Birds"
    store.delete("b")
    assert [s.id for s in store.list()] == ["a"] and store.load("b") is None
    assert store.undo("b") and store.load("b").title == "Birds"
    store.delete("b")
    now = conv.time.time()
    monkeypatch.setattr(conv.time, "time", lambda: now + conv.UNDO_S + 1)
    assert not store.undo("b") and [s.id for s in store.list()] == ["a"]
    monkeypatch.undo()
    # Two tabs (two handles) add turns to one conversation: both are kept, in the order asked.
    other = conv.Store(tmp_path)
    store.save_turn("a", turn("And the rent?"))
    other.save_turn("a", turn("And the keys?"))
    assert [t["question"] for t in store.load("a").turns] == ["Qual é a caução do apartamento?", "And the rent?",
                                                              "And the keys?"]


def test_damage_is_set_aside_and_the_rest_opens(tmp_path):
    store = conv.Store(tmp_path)
    store.save_turn("a", turn("When does the heron migrate?"))
    store.save_turn("a", turn("Where does it go?"))
    store.save_turn("b", turn("Who keeps the lighthouse?"))
    store._db.execute("UPDATE turns SET data=? WHERE id=?", (conv.zlib.compress(b'{"question": '), "Where does it go?"))
    opened = store.load("a")
    assert [t["question"] for t in opened.turns] == ["When does the heron migrate?"]
    assert "could not be read" in opened.set_aside[0]
    assert store._db.execute("SELECT count(*) FROM set_aside").fetchone()[0] == 1
    assert store.load("b").turns[0]["question"] == "Who keeps the lighthouse?"
    store.close()
    (tmp_path / conv.FILE).write_bytes(b"this is not a database" * 100)
    fresh = conv.Store(tmp_path)
    assert fresh.list() == [] and "set aside" in fresh.notices[0]
    aside = list(tmp_path.glob("conversations.damaged-*.sqlite"))
    assert len(aside) == 1 and aside[0].with_name(aside[0].name + ".reason.txt").read_text().strip()


def test_markdown_export_holds_every_quote_and_place(tmp_path):
    store = conv.Store(tmp_path)
    store.save_turn("a", turn("When does the heron migrate?"))
    md = conv.to_markdown(store.load("a"))
    assert "## 1. When does the heron migrate?" in md
    assert "> The heron migrates every October." in md
    assert "[1] **notes.md** · Migration · cosine distance 0.310" in md
    assert '"quote": "The heron migrates every October."' in conv.to_json(store.load("a"))

"""`rag ask --doc PATH --under FOLDER` on the sample folder, with the real model and index: every candidate
(dense, BM25 and multilingual sides alike) comes from the chosen documents, a question the rest of the
folder answers is refused naming the scope, the whole folder answers it, and a chosen document that is
gone is said and searches nothing (never the whole folder)."""

from __future__ import annotations

import json

from rag import cli

QUESTION = "Where is the index stored by default?"  # getting-started.md answers it


def ask(capsys, *args: str) -> dict:
    assert cli.main(["ask", QUESTION, "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_rag_ask_searches_only_the_chosen_documents(sample_engine, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_engine", lambda args, folder=None: sample_engine)
    whole = ask(capsys)
    assert not whole["refused"] and whole["citations"][0]["doc_name"] == "getting-started.md"

    two = ask(capsys, "--doc", "citations.md", "--doc", "uploading.md")
    assert two["refused"] and two["candidates"]
    assert {c["doc_name"] for c in two["candidates"]} <= {"citations.md", "uploading.md"}
    assert any(c["side_rank"] is not None for c in two["candidates"])  # the multilingual side ran, masked too
    assert two["scope"]["searched"] == ["citations.md", "uploading.md"]
    assert cli.main(["ask", QUESTION, "--doc", "citations.md", "--doc", "uploading.md"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Asked of the 2 chosen documents (citations.md, uploading.md) only.")
    assert "None of the 2 chosen documents (citations.md, uploading.md) answers this" in printed

    under = ask(capsys, "--under", "notas")
    assert under["candidates"] and all(c["doc_name"].startswith("notas/") for c in under["candidates"])

    gone = ask(capsys, "--doc", "gone.md")
    assert gone["candidates"] == [] and gone["refused"]
    assert gone["scope"]["problems"] == ["gone.md is no longer in the folder"]

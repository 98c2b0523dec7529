"""One explanation, three surfaces: the chat's refusal lines, `rag ask`'s printed lines and its --json say the
same words for the same verdict (the chat only adds Markdown; the CLI only leaves out the chat's own tool)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

import rag
from app import chat_view as view
from rag.answering.answer import answer
from rag.cli import print_turn, turn_to_json
from rag.engine import Turn
from rag.deciding.explain import LOST_HINT, names_note, refusal_sentence

RULE = rag.SupportRule(min_support=0.5, close=0.3, close_support=0.2)


def row(i: int, distance: float, support: float = 1.0, doc: str = "notes.md", **kw) -> rag.Candidate:
    return rag.Candidate(f"c{i}", f"d-{doc}", doc, "Notes", kw.pop("section", "Setup_*1*"),
                         f"Passage {i}.", 10 * i, 10 * i + 9, None, None, "text", i, 1.0 / i, distance, i, i, 1.0,
                         support=support, **kw)


def searched(*candidates: rag.Candidate, **kw) -> rag.SearchResult:
    return rag.SearchResult("Where is the [index] stored?", "Where is the [index] stored?", list(candidates),
                            {"dense": 0.6, "bm25": 0.4}, terms=("index", "stored"), **kw)


VERDICTS = {
    "over the threshold": (searched(row(1, 0.8434, doc="heron_notes.md")), 0.8),
    "lacks the words": (searched(row(1, 0.4, support=0.1, missing=("stored",))), 0.6),
    "names something absent": (searched(row(1, 0.3, support=0.0, missing=("youtube",), absent_names=("youtube",)),
                                        absent_names=("youtube",), unknown_names=("youtube",)), 0.6),
    "wordless": (searched(row(1, 0.3, wordless=True)), 0.6),
}


def unmarked(markdown: str) -> str:
    """The chat's line as a reader sees it: Markdown's escapes and emphasis gone."""
    return re.sub(r"\\(.)", r"\1", re.sub(r"(?<!\\)\*+", "", markdown))


@pytest.mark.parametrize("case", list(VERDICTS))
def test_chat_cli_and_json_say_the_same_lines(case):
    result, threshold = VERDICTS[case]
    gated = rag.gate(result, threshold, 4, RULE)
    assert refusal_sentence(gated) is not None
    plain = rag.explain(gated)
    chat = view.refusal_lines(gated, indexing=0)
    assert chat.text == plain.refusal == refusal_sentence(gated)
    assert [unmarked(line) for line in chat.lines] == [plain.best]
    assert [unmarked(line) for line in chat.details] == list(plain.details)

    turn = Turn(result.question, result, gated, answer(gated, None))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_turn(turn)
    printed = out.getvalue().splitlines()
    cli = rag.explain(gated, lost_hint="")
    assert printed[0] == refusal_sentence(gated)
    assert cli.best in printed and cli.threshold in printed
    # The CLI has no "Why wasn't it found?" box: the only difference allowed is that pointer.
    assert cli.threshold == plain.threshold.replace(f"; {LOST_HINT}.", ".")
    # The note beside the table on a name the folder never mentions: one wording, the chat's marked up.
    names = names_note(result.unknown_names, result.absent_names)
    assert unmarked(view.unknown_names_note(result)) == (f". {names}" if names else "")
    assert not names or names in printed
    said = turn_to_json(turn)
    assert (said["reason"], said["explanation"]["best"], said["explanation"]["threshold"]) == (
        chat.header.split("] ", 1)[1], cli.best, cli.threshold)


def test_the_chat_escapes_what_a_document_writes_and_bolds_what_to_look_at():
    result, threshold = VERDICTS["over the threshold"]
    refusal = view.refusal_lines(rag.gate(result, threshold, 4, RULE), indexing=0)
    best, = refusal.lines
    need, = refusal.details
    assert best.startswith(r"Best candidate, the search's first row: **heron\_notes\.md** · Setup\_\*1\*: over "
                           r"threshold at distance 0.843; a threshold of **0\.844**")
    assert need.startswith(r"A threshold of **0\.844** would let **heron\_notes\.md** through")


def test_an_empty_folder_tells_each_surface_where_documents_go():
    result = searched()
    gated = rag.gate(result, 0.6, 4, RULE)
    assert view.refusal_lines(gated, indexing=0).lines == ["The folder has nothing indexed yet: add documents in "
                                                          "the sidebar."]
    turn = Turn(result.question, result, gated, answer(gated, None))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_turn(turn)
    said = "The folder has nothing indexed yet: put documents in the folder and run `rag index`."
    assert said in out.getvalue().splitlines()
    assert turn_to_json(turn)["explanation"]["empty"] == said

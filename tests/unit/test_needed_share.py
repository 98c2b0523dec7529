"""A share needed, printed: one rounding on every surface, up (`rag.deciding.explain.percent(..., needed=True)`).

A passage whose distance falls on the support test's ramp needs a fractional share (24.35% here). Rounded to
the nearest it read "24%" in the refusal and the diagnosis while the tables, rounded up, said "25%": here every
surface says "25%" (a need never reads lower than it is, and a share held, 20%, never higher).
"""

from __future__ import annotations

import contextlib
import io
import math
from types import SimpleNamespace

import pytest

import rag
from app import chat_view as view
from app.inert import md_escape
from rag.answering.answer import answer
from rag.cli import print_turn, turn_to_json
from rag.deciding.diagnosis import UNSUPPORTED_OUT, why_not_found
from rag.deciding.explain import evidence_rule, percent, refusal_sentence
from rag.engine import Turn
from tests.unit.made import result, row

# Calibrated: 10% at or under 0.300, then from 20% growing to 50% at 0.700, rising to every word at 0.900.
RULE = rag.SupportRule(0.5, close=0.3, close_support=0.1, rise_from=0.7, rise_to=0.9, ramp_support=0.2)
DISTANCE = 0.358  # on the ramp: 0.2 + 0.3 * 0.058 / 0.4 = 0.2435 needed
SENTENCE = "The index is stored in the hidden folder."


def refused() -> tuple[rag.SearchResult, rag.Gated]:
    c = row(1, DISTANCE, support=0.2)  # too small a share, yet no word it lacks: the refusal gives the shares
    found = result(c, question="Where is the index stored?", terms=("index", "stored"))
    return found, rag.gate(found, 0.6, 4, RULE)


def test_the_need_is_fractional_and_its_two_roundings_differ():
    need = RULE.needed(DISTANCE)
    assert need == pytest.approx(0.2435)
    assert f"{need:.0%}" == "24%" and math.ceil(need * 100) == 25  # nearest and up disagree: the case to test
    assert percent(need, needed=True) == "25%" and percent(need) == "24%"  # held down, needed up


def test_a_needed_share_reads_the_same_rounded_up_on_every_surface():
    found, gated = refused()
    c = gated.candidates[0]
    assert gated.verdicts == [rag.UNSUPPORTED] and gated.failed == rag.SUPPORT
    shown = percent(RULE.needed_by(c), needed=True)
    assert shown == "25%"

    # The refusal sentence, as the chat, `rag ask` and its --json say it.
    assert refusal_sentence(gated).endswith('"Where is the index stored?" (the best holds 20%; 25% needed)')
    assert view.refusal_lines(gated, indexing=0).text == refusal_sentence(gated)
    turn = Turn(found.question, found, gated, answer(gated, None))
    assert turn_to_json(turn)["answer"] == refusal_sentence(gated)

    # The passage's own verdict, and the diagnosis ("Why wasn't it found?") that quotes it.
    said = rag.explain(gated, passage=c).passage
    assert "holds 20% of the question's words, under the 25% the support test asks" in said
    chunk = SimpleNamespace(id=c.chunk_id, doc_id=c.doc_id, content=SENTENCE)
    engine = SimpleNamespace(snapshot=SimpleNamespace(chunks=[chunk], docs={c.doc_id: (c.doc_name,)}))
    diagnosis = why_not_found(engine, found, gated, SENTENCE)
    assert diagnosis.verdict == UNSUPPORTED_OUT and diagnosis.message == said

    # The CLI's retrieval table: the row's "need" column.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_turn(turn)
    lines = out.getvalue().splitlines()
    assert lines[0] == refusal_sentence(gated)
    head = next(line for line in lines if line.split()[:1] == ["fused"]).split()
    cells = next(line for line in lines if line.rstrip().endswith("doc1.md / Section 1")).split()
    assert (cells[head.index("supp")], cells[head.index("need")]) == ("20%", shown)

    # The chat's retrieval table: the same whole percent (a number, which the column shows as a percent).
    table_row = view.retrieval_table(gated, found).rows[0]
    assert table_row["needs"] == pytest.approx(0.25) and f"{table_row['needs']:.0%}" == shown
    assert table_row["support"] == pytest.approx(0.2)


def test_the_rule_in_words_rounds_its_shares_up_too():
    # A close share of 24.5% (set by a person in rag.toml) reads "25%" wherever the rule is said.
    rule = rag.SupportRule(0.5, close=0.3, close_support=0.245)
    assert evidence_rule(rule) == "support at least 50%, 25% for a passage at distance ≤ 0.300"
    found = result(row(1, 0.2, support=0.3), terms=("index", "stored"))
    gated = rag.gate(found, 0.6, 4, rule)
    assert md_escape(evidence_rule(rule)) in view.evidence_caption(gated, found)
    assert "25% for a passage at distance ≤ 0.300" in view.retrieval_table(gated, found).config["support"].options["help"]
    assert view.retrieval_table(gated, found).rows[0]["needs"] == pytest.approx(0.25)

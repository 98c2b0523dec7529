"""chat_view: what a turn draws, computed from hand-made candidates and the real gate, without Streamlit.

No model, no store, no AppTest: each test builds a `rag.SearchResult` of hand-made `rag.Candidate`s, gates it
with `rag.deciding.gate` and checks what the presenter makes of it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import chat_view as view
import rag
from rag.answering.answer import ChosenSentence
from rag.deciding.citations import NO_ANSWER_SENTENCE, as_quoted
from rag.deciding.explain import header, refusal_text

RULE = rag.SupportRule(0.5, close=0.3, close_support=0.2)


def row(i: int, distance: float, support: float = 1.0, doc: str = "notes.md", **kw) -> rag.Candidate:
    return rag.Candidate(f"c{i}", f"d-{doc}", doc, "Notes", kw.pop("section", "Setup"),
                         kw.pop("content", f"Passage {i} about the index folder."), 10 * i, 10 * i + 9, None, None,
                         "text", i, 1.0 / i, distance, kw.pop("dense_rank", i), kw.pop("bm25_rank", i), 1.0,
                         support=support, **kw)


def result(*candidates: rag.Candidate, question: str = "Where is the index stored?", **kw) -> rag.SearchResult:
    kw.setdefault("weights", {"dense": 0.6, "bm25": 0.4})
    kw.setdefault("terms", ("index", "stored"))
    return rag.SearchResult(question, kw.pop("query", question), list(candidates), searched_chunks=40,
                            fusion=kw.pop("fusion", "zscore"), **kw)


def plain(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def test_table_rows_follow_the_gate_with_its_own_verdicts_and_dashes_for_missing_ranks():
    res = result(row(1, 0.2), row(2, 0.4, support=0.1, missing=("stored",)), row(3, 0.9, dense_rank=None),
                 row(4, 0.35, bm25_rank=None))
    gated = rag.gate(res, 0.5, max_chunks=1, rule=RULE)
    table = view.retrieval_table(gated, res)
    assert table.columns == view.COLUMNS  # the judge read nothing: no judge columns
    # What a person scans first: document, place, preview, verdict; the numbers after.
    assert table.columns[:4] == ["document", "place", "preview", "verdict"]
    # Each row's verdict in one line: the gate's label, then what it lacked or what would let it through.
    assert [r["verdict"] for r in table.rows] == [
        "kept: cited as [1]", "lacks the question's words: \"stored\" (holds 10% of the words, needs 50%)",
        "over threshold at distance 0.900; a threshold of 0.900 would let it through",
        "under threshold, over cap: passes, after the 1 kept"]
    assert [r["dense"] for r in table.rows] == ["1", "2", "–", "4"]
    assert [r["BM25"] for r in table.rows] == ["1", "2", "3", "–"]
    assert all(list(r) == table.columns for r in table.rows)
    assert table.rows[1]["lacks"] == "stored" and table.rows[0]["margin"] == pytest.approx(0.3)
    assert table.colours == [view.VERDICT_COLOUR[v] for v in gated.verdicts] and table.colours[2] == ""
    assert table.coloured == ["verdict", "distance", "margin", "support"]
    assert table.config["distance"].label == "distance (≤ 0.500 passes)"
    assert table.config["distance"].options["max_value"] == 1.0  # at least 1, else the farthest distance
    assert table.config["support"].label == "support (≥ 50%)"
    assert "20% for a passage at distance ≤ 0.300" in table.config["support"].options["help"]
    assert table.config["score"].options["help"] == view.FUSED_HELP["zscore"]
    assert "kept (at most 1)" in table.config["verdict"].options["help"]


def test_table_shows_the_judge_columns_first_when_the_judge_read_the_rows():
    res = result(row(1, 0.2, judge=2.5, judge_rank=1), row(2, 0.3, judge=None, judge_rank=None))
    gated = rag.gate(res, 0.5, 4, rag.SupportRule(0.5, judge_cut=1.0))
    table = view.retrieval_table(gated, res)
    assert table.columns[:7] == ["document", "place", "preview", "verdict", "judge", "judge rank", "fused"]
    assert [r["judge rank"] for r in table.rows] == ["1", "–"]
    assert [r["judge"] for r in table.rows] == ["2.50", "–"]  # a row it did not read: a dash, not "None"
    assert table.coloured[-1] == "judge"
    assert table.config["judge"].label == "judge (≥ 1.00)"
    assert [r["verdict"] for r in table.rows] == ["kept: cited as [1]",
                                                  "judged not to answer: not read by the judge, needs 1.00"]


def test_a_column_of_an_unknown_kind_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="valid: number, text, progress"):
        view.Column("slider", "x")


def test_refusal_names_the_searchs_first_row_at_a_glance_and_the_closest_one_click_away():
    # The search ranked heron.md first; getting-started.md is nearer by distance: the best candidate is the
    # search's own first row (a trial's refusal named the nearest, an unrelated row).
    res = result(row(1, 0.7, doc="heron.md"), row(2, 0.62, doc="getting-started.md"))
    gated = rag.gate(res, 0.0, 4, RULE)
    refusal = view.refusal_lines(gated, indexing=0)
    assert refusal.header == ":orange-badge[:material/block: refused] " + header(gated)
    assert refusal.text == refusal_text(0.0, res.question)
    assert [plain(x) for x in refusal.lines] == [
        "Best candidate, the search's first row: **heron.md** · Setup: over threshold at distance 0.700; a "
        "threshold of **0.700** would let it through."]
    closest, need = map(plain, refusal.details)
    assert closest.startswith("Closest by distance: **getting-started.md** · Setup at cosine distance **0.620**")
    assert need == ("A threshold of **0.620** would let **getting-started.md** through (the nearest passage "
                    "that holds the question's words).")


def test_refusal_says_why_no_threshold_would_help():
    absent = result(row(1, 0.3, support=0.0, missing=("youtube",), absent_names=("youtube",)),
                    absent_names=("youtube",), unknown_names=("youtube",))
    refusal = view.refusal_lines(rag.gate(absent, 0.5, 4, RULE), 0)
    assert plain(refusal.lines[0]).endswith('lacks the question\'s words: the folder never mentions "youtube".')
    assert plain(refusal.details[-1]) == 'No threshold would let a passage through: the folder never mentions "youtube".'
    words = result(row(1, 0.3, support=0.1, missing=("index",)))
    refusal = view.refusal_lines(rag.gate(words, 0.5, 4, RULE), 0)
    assert plain(refusal.lines[0]).endswith(': lacks the question\'s words: "index" (holds 10% of the words, needs 20%).')
    assert refusal.details[-1].startswith("No threshold would let a passage through: none of the candidates holds enough")


def test_refusal_of_an_empty_folder_says_whether_files_are_still_on_their_way():
    empty = result()
    gated = rag.gate(empty, 0.5, 4, RULE)
    assert view.refusal_lines(gated, indexing=3).lines == [
        "Nothing is indexed yet: 3 file(s) are still being indexed (see the sidebar). Ask again once they are."]
    assert view.refusal_lines(gated, indexing=0).lines == [
        "The folder has nothing indexed yet: add documents in the sidebar."]


def test_answer_notes_warn_on_a_fallback_and_list_the_citation_flags_in_order():
    res = result(row(1, 0.2))
    gated = rag.gate(res, 0.5, 4, RULE)
    fell_back = rag.Answer("It is in .rag-index [1].", False, "extractive", note="could not reach the LLM server",
                           flags=["[7] is not one of the sources"])
    notes = view.answer_notes(fell_back, gated, "llm")
    assert [(n.kind, n.icon) for n in notes] == [("warning", ":material/cloud_off:"), ("warning", ":material/rule:")]
    assert plain(notes[1].text) == "Citation check:\n- [7] is not one of the sources"
    same = view.answer_notes(fell_back, gated, "extractive")[0]  # asked for extractive: only information
    assert (same.kind, same.icon) == ("info", ":material/info:")
    tokens = rag.Answer("x [1]", False, "llm", prompt_tokens=321)
    assert view.answer_notes(tokens, gated, "llm") == [view.Note("caption", "prompt 321 tokens (tiktoken)")]


def test_an_answer_whose_passages_lack_a_question_word_carries_the_caution():
    res = result(row(1, 0.2, support=0.8, missing=("gigabytes",)), terms=("pdf", "gigabytes"))
    gated = rag.gate(res, 0.5, 4, RULE)
    notes = view.answer_notes(rag.Answer("x [1]", False, "extractive"), gated, "extractive")
    assert [plain(n.text) for n in notes] == [
        ':material/help: The quoted passages never mention "gigabytes": check that they answer what you asked.']
    assert view.answer_notes(rag.Answer("x", True, "llm"), gated, "llm") == []  # not under a refusal


def test_citation_cards_say_which_sources_the_answer_does_not_cite(tmp_path: Path):
    res = result(row(1, 0.2, content="The index is\nstored in .rag-index."), row(2, 0.3))
    gated = rag.gate(res, 0.5, 4, RULE)
    cards = view.citation_cards(2, gated, tmp_path, cited={1})
    assert [c.citation.n for c in cards] == [1, 2]
    assert [c.uncited for c in cards] == [None, "[2] passed the tests, but the answer does not cite it"]
    assert cards[0].anchor == '<span id="cite-2-1"></span>'
    assert plain(cards[0].header) == "**[1]** notes.md · Setup · cosine distance **0.200**"
    assert cards[0].label == "[1] Open notes.md at the passage (#char=10,19)"
    assert plain(cards[0].link_help) == (tmp_path / "notes.md").resolve().as_uri() + "#char=10,19"
    assert cards[0].quote == "The index is stored in .rag-index."
    assert [c.citation.n for c in view.citation_cards(1, gated, tmp_path, numbers={2})] == [2]


def test_a_citation_card_names_the_rows_the_answer_quotes(tmp_path: Path):
    sheet = row(1, 0.2, doc="b.xlsx", section="Budget",
                content="Item | Fee\n\nItem: Tour | Fee: 30\n\nItem: Lunch_* | Fee: 15",
                place="Budget!A1:B3", rows="0:1:2 12:2:2 34:3:2")
    gated = rag.gate(result(sheet, terms=("tour", "fee")), 0.5, 4, RULE)
    chosen = [ChosenSentence(1, "Item: Tour | Fee: 30", 0.9, 12, 32)]
    ans = rag.Answer("Item: Tour | Fee: 30 [1]", False, "extractive", chosen=chosen,
                     citations=as_quoted(gated.citations, [(1, 12, 32)]))  # as `rag.answering.answer.answer` makes it
    [card] = view.citation_cards(1, gated, tmp_path, ans=ans)
    assert plain(card.header).startswith("**[1]** b.xlsx · Budget!A2:B2 · ")
    # The card quotes the row its range names, and shows it as a one-row table under the sheet's header
    # (a trial's card named A40:H40 and quoted rows 39-40, as "Member: … | Party: …" markup).
    assert card.quote == "Item: Tour | Fee: 30" and card.table == (["Item", "Fee"], [["Tour", "30"]])
    [whole] = view.citation_cards(1, gated, tmp_path)
    assert plain(whole.header).startswith("**[1]** b.xlsx · Budget!A1:B3 · ")
    assert whole.table == (["Item", "Fee"], [["Tour", "30"], [r"Lunch\_\*", "15"]])  # escaped: st.table reads Markdown


def test_headings_captions_and_the_chosen_sentences():
    res = result(row(1, 0.2), row(2, 0.9), timings_ms={"embed": 10.2, "bm25": 2.0})
    gated = rag.gate(res, 0.5, 4, RULE)
    assert view.sources_heading(gated, False) == "**Sources** · threshold 0.500 · 1 of 2 candidates kept"
    assert view.sources_heading(gated, True).startswith("**Sources the LLM read**")
    assert view.retrieval_label(gated) == "Retrieval: 2 candidates, 1 kept"
    ans = rag.Answer("a [1] b [1]", False, "extractive",
                     chosen=[ChosenSentence(1, "First  one.", 0.61, 0, 10), ChosenSentence(1, "Second.", 0.72, 11, 18)])
    assert view.timing_caption(res, ans, 41.6) == "search 12 ms (embed 10, bm25 2) · extractive answer 42 ms · 40 chunks searched"
    chosen = view.chosen_markdown(ans)
    assert chosen.startswith("**Sentences chosen for the answer**: the 2 sentences of the kept passages")
    assert re.findall(r"\(rank (\d)\) · source \*\*\[1\]\*\* · (.*)$", chosen, re.M) == [("2", "First one\\."),
                                                                                       ("1", "Second\\.")]
    assert view.llm_refused(rag.Answer(NO_ANSWER_SENTENCE, True, "llm"))
    assert not view.llm_refused(rag.Answer("x", True, "refusal"))


def test_fusion_note_says_when_bm25_decides_and_what_feedback_reordered():
    res = result(row(1, 0.2), row(2, 0.3), weights={"dense": 0.2, "bm25": 0.8}, kept_first=1, fusion="rrf")
    note = view.fusion_note(res, 60)
    assert note.startswith("Fused: reciprocal ranks, k = 60, weights dense 0.2 · BM25 0.8 (the embedding model "
                           "does not read this question's language")
    assert note.endswith(res.feedback_note) and "Rows 2–2" in note


def test_evidence_caption_under_the_judge_and_with_names_the_folder_never_mentions():
    res = result(row(1, 0.2), unknown_names=("falcon",), absent_names=("falcon",))
    judging = rag.SupportRule(0.5, judge_cut=1.0, judge_lang="en")
    caption = plain(view.evidence_caption(rag.gate(res, 0.5, 4, judging), res))
    assert caption.startswith(f"Evidence: cosine distance ≤ 0.500; {rag.evidence_rule(judging)}. ")
    assert caption.startswith("Evidence: cosine distance ≤ 0.500; the judge decides: a score of 1.00 or more")
    assert "The rows the judge read come first" in caption
    assert caption.endswith('. The question names "falcon", which the folder never mentions: no passage is '
                            "evidence for it")


def test_evidence_caption_words_the_rule_in_force_as_every_surface_does():
    # The words of the rule are rag.evidence_rule's (the CLI's and the Calibration page's); the caption adds
    # where its calibrated distances come from, and the words looked for.
    rule = rag.SupportRule(0.5, close=0.3, close_support=0.2, rise_from=0.7, rise_to=0.9, ramp_support=0.35)
    res = result(row(1, 0.2))
    gated = rag.gate(res, 0.5, 4, rule)
    caption = plain(view.evidence_caption(gated, res))
    assert caption == ("Evidence: cosine distance ≤ 0.500; support at least 50%, 20% for a passage at distance ≤ "
                       "0.300, from 35% past 0.300 growing to 50% at 0.700, rising from 50% past 0.700 to every word "
                       "at 0.900. The close distance, 0.300, is nearer than any unrelated question comes to this "
                       "folder; past 0.700 unrelated questions start to find passages. Words looked for: index, stored")
    assert caption.startswith(f"Evidence: cosine distance ≤ 0.500; {rag.evidence_rule(rule)}. ")
    assert rag.evidence_rule(rule) in view.retrieval_table(gated, res).config["support"].options["help"]
    # Before any calibration: the full share for every passage, and the caption says why.
    flat = plain(view.evidence_caption(rag.gate(res, 0.5, 4, rag.SupportRule(0.5)), res))
    assert flat.startswith("Evidence: cosine distance ≤ 0.500; support at least 50%. No lower share for close "
                           "passages until the folder is calibrated.")
    # The judge ordering the rows without deciding (`judge_rerank`): the word tests decide, and the caption says so.
    judged = plain(view.evidence_caption(gated, result(row(1, 0.2), judged=3)))
    assert "The rows the judge read come first, ordered by its ranks fused with retrieval's; the word tests decide." in judged
    assert "the judge decides" not in judged


def test_evidence_caption_gives_the_multilingual_cut_in_force_for_rows_in_another_language():
    across = row(1, 0.7, side_distance=0.5, across=True)
    rule = rag.SupportRule(0.5, across_cut=0.55)
    caption = plain(view.evidence_caption(rag.gate(result(across), 0.52, 4, rule), result(across)))
    assert "a passage in another language: multilingual distance ≤ 0.550" in caption  # the rule's calibrated cut
    assert "at most 0.520 here (the threshold, lower than the cut calibrated on this folder)" in caption
    wide = plain(view.evidence_caption(rag.gate(result(across), 0.8, 4, rule), result(across)))
    assert "at most 0.550 here (the cut calibrated on this folder)" in wide
    # No row in another language: nothing beside the rule's own words.
    assert "Rows in another language" not in plain(view.evidence_caption(rag.gate(result(row(1, 0.2)), 0.8, 4, rule),
                                                                         result(row(1, 0.2))))


def test_threshold_caption_and_the_empty_chat():
    class Choice:  # the fields of rag.engine.ThresholdChoice the caption reads
        value, source, note, calibrated = 0.61, "calibrated", "calibrated for English: 0.610", 0.61

    assert plain(view.threshold_caption(Choice, False)) == "Calibrated for English: 0.610"
    assert plain(view.threshold_caption(Choice, True)) == "Set by you (overrides the calibration; calibrated: 0.610)"
    assert view.empty_chat_note(0, 0, 2).icon == ":material/hourglass_top:"
    assert view.empty_chat_note(0, 0, 0).text.startswith("The folder has no indexed documents yet.")
    assert view.empty_chat_note(12, 3, 0).text == "3 documents, 12 passages. Ask a question below."

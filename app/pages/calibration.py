"""Calibration: how this folder's threshold was chosen, and what each threshold would do. No homework needed.

Per question language, one histogram of the distance at which each question would get an answer through
the gate's full evidence test (distance and support), for three kinds of question:

- unrelated: the shipped questions the calibration measured, everyday (cooking, sport, travel, ...) and of
  general knowledge (history, science, the arts, ...), drawn apart;
- the folder's own sentences, each asked as it stands (where answers in the folder's words fall);
- the person's own questions, when they have written some (saved beside the index, `questions.jsonl`).

The calibrated threshold and the one in use are drawn on them. Below: the sweep (what every threshold
keeps, refuses and lets bluff), a button that moves the chat's slider to a threshold the person picks,
and one that puts it back to the calibrated value. All measuring is `rag`'s; this page only shows it.
"""

from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from app import ui
import rag
from rag.deciding import calibration as cal
from rag.deciding.explain import evidence_summary
from rag.text.languages import question_language
from rag.deciding.needles import Question, load_questions, save_question
from rag.deciding.sweep import Sweep, sweep

ws = ui.workspace()
engine = ws.engine
questions_path = Path(engine.settings.index_path) / "questions.jsonl"

st.title("Calibration")


def rules_in_force(calibration: cal.Calibration | None) -> dict[str, rag.SupportRule]:
    """The rule the gate applies to each calibrated language's questions (the engine's, for a question before
    anything is calibrated): the judge decides in it only where it is on and calibrated for that language."""
    if calibration is None:
        return {"": engine.threshold_choice("").rule}
    return {lang: engine.threshold_choice("", lang=lang).rule for lang in calibration.languages}


def show(calibration: cal.Calibration, rules: dict[str, rag.SupportRule]) -> None:
    """The calibration of every language, the sweep, and the form for a question of the person's own."""
    chosen = ui.threshold_set()
    explicit = chosen is not None
    in_use = {lang: (chosen if explicit else c.threshold) for lang, c in calibration.languages.items()}
    for lang, c in calibration.languages.items():
        said = c.describe()  # "calibrated for English: 0.704, where ..."
        # The rule the gate applies to this language's questions, in the gate's own words.
        st.markdown(f"{ui.md_escape(said[:1].upper() + said[1:])}. Besides the distance, a passage needs: "
                    f"{ui.md_escape(rag.evidence_rule(rules[lang]))}.")
    if explicit:
        st.info(f"The chat uses the threshold you set, {in_use[next(iter(in_use))]:.3f}, for every question.",
                icon=":material/tune:")

    try:
        own = load_questions(questions_path)
    except ValueError as exc:
        st.error(ui.md_escape(f"The questions file cannot be read: {exc}"))
        own = []
    sentences = [Question(question=s, needle=s, lang=lang, kind="folder sentence")
                 for lang, s in cal.folder_sentences(engine.snapshot.chunks)]
    asked = sentences + own

    def measured() -> Sweep | None:
        """Search each question once per change of questions or index; re-gating is cheap, searching is not."""
        if not asked:
            return None
        mtime = questions_path.stat().st_mtime_ns if questions_path.exists() else 0
        key = (str(questions_path), mtime, calibration.fingerprint, engine.settings.candidates)
        cached = st.session_state.get("calibration_results")
        if not cached or cached[0] != key:
            with st.spinner(f"Searching {len(asked)} questions…"):
                cached = (key, [engine.search(q.question) for q in asked])
            st.session_state["calibration_results"] = cached
        return sweep(engine, asked, budget=engine.settings.tuning.calibration_budget, results=cached[1])


    sw = measured()
    points = [{"lang": p["lang"], "kind": f"unrelated: {p.get('kind', 'everyday')}", "evidence": p["evidence"]}
              for p in calibration.points]
    if sw is not None:
        for q, e in zip(asked, sw.evidence):
            kind = q.kind if q.kind == "folder sentence" else ("your should-refuse" if q.refuse else "your answerable")
            points.append({"lang": q.lang or "?", "kind": kind, "evidence": e})
    frame = pd.DataFrame(points)
    kinds = ["unrelated: everyday", "unrelated: general knowledge", "folder sentence", "your answerable",
             "your should-refuse"]
    colours = ["#d62728", "#9467bd", "#2ca02c", "#1f77b4", "#ff7f0e"]

    for lang in [lang for lang in calibration.languages if lang in set(frame["lang"])]:
        part = frame[frame["lang"] == lang]
        finite = part[part["evidence"].apply(math.isfinite)]
        never = part[~part["evidence"].apply(math.isfinite)].groupby("kind").size().to_dict()
        st.subheader(f"Language: {lang}")
        base = alt.Chart(finite).mark_bar(opacity=0.6).encode(
            x=alt.X("evidence:Q", bin=alt.Bin(step=0.025), title="distance at which it would get an answer"),
            y=alt.Y("count():Q", stack=None, title="questions", axis=alt.Axis(tickMinStep=1, format="d")),
            color=alt.Color("kind:N", title="question", scale=alt.Scale(domain=kinds, range=colours)),
            tooltip=["kind", "count()"],
        )
        lines = pd.DataFrame({"threshold": [calibration.languages[lang].threshold, in_use[lang]],
                              "which": ["calibrated", "in use"]})
        rule = alt.Chart(lines).mark_rule(strokeWidth=2).encode(
            x="threshold:Q", strokeDash="which:N", color=alt.value("black"),
            tooltip=["which", alt.Tooltip("threshold:Q", format=".3f")])
        st.altair_chart((base + rule).properties(height=220), width="stretch")
        if never:
            # Not "holds enough of their words": where the judge decides, its score is the test.
            st.caption("Never answered, at any threshold (no candidate passes this language's rule above, whatever "
                       "its distance): " + ", ".join(f"{n} {k}" for k, n in never.items()))

    if sw is not None:
        st.subheader("The sweep")
        groups = list(sw.rows)
        group = st.selectbox("Questions", groups,
                             format_func=lambda g: "all (the folder's sentences and yours)" if g == "all" else f"in {g}")
        lang_of_group = group.split(":")[0] if group != "all" else None
        unrelated = [p for p in calibration.points if lang_of_group in (None, p["lang"])]
        table = pd.DataFrame([{
            "threshold": r.threshold,
            "right passage kept": r.right / r.answerable if r.answerable else None,
            "unrelated answered": sum(p["evidence"] <= r.threshold for p in unrelated) / max(len(unrelated), 1),
            "your should-refuse answered": r.bluffs / r.refusable if r.refusable else None,
            "right chunk kept": r.right, "bluffs (should refuse)": r.bluffs,
        } for r in sw.rows[group]])
        st.dataframe(table, hide_index=True, width="stretch", column_config={
            "threshold": st.column_config.NumberColumn(format="%.3f"),
            "right passage kept": st.column_config.NumberColumn(format="%.2f", help="Of the answerable questions: the "
                                                                "folder's sentences and yours"),
            "unrelated answered": st.column_config.NumberColumn(format="%.2f"),
            "your should-refuse answered": st.column_config.NumberColumn(format="%.2f"),
        })

        def use(value: float) -> None:
            # A callback runs before the page does: the charts of this very run draw the new threshold.
            ui.set_threshold(value)
            st.session_state["threshold_set_here"] = value

        def back() -> None:
            ui.set_threshold(None)
            st.session_state.pop("threshold_set_here", None)

        left, right = st.columns(2)
        pick = left.number_input("Threshold to use in the chat", 0.0, 1.5, float(in_use[next(iter(in_use))]),
                                 0.005, format="%.3f", key="calibration_pick")
        left.button(f"Use {pick:.3f} for every question", key="use_pick", on_click=use, args=(round(pick, 3),))
        right.button("Use the calibrated thresholds", key="use_calibrated", on_click=back, disabled=not explicit)
        if explicit and st.session_state.get("threshold_set_here") is not None:
            st.success(f"Threshold set to {st.session_state['threshold_set_here']:.3f}: the chat uses it from the next "
                       "question.")

    st.subheader("Add a question of your own")
    with st.form("add_question", clear_on_submit=True):
        text = st.text_input("Question", key="new_question")
        expected = st.text_area("Sentence that answers it (copied from the document)", key="new_expected")
        refuse = st.checkbox("The folder should refuse this question", key="new_refuse")
        if st.form_submit_button("Save question"):
            if not text.strip():
                st.error("Write the question.")
            elif refuse == bool(expected.strip()):
                st.error("Give the sentence that answers it, or tick 'should refuse' (one of the two).")
            else:
                q = Question(question=text.strip(), needle=None if refuse else " ".join(expected.split()),
                             lang=question_language(text, engine.snapshot.language_shares), refuse=refuse)
                save_question(questions_path, q)
                st.success(ui.md_escape(f"Saved: {q.question}"))
                st.rerun()
    st.caption(f"{len(own)} questions of your own · {len(sentences)} of the folder's sentences · "
               f"{len(calibration.points)} unrelated questions")


calibration = engine.calibrated()
in_force = rules_in_force(calibration)
# What decides, said from the rules in force: the judge only where it does (it is off by default).
st.caption(f"A passage is evidence when it is close enough to the question (the threshold) and "
           f"{ui.md_escape(evidence_summary(in_force))}. Both are calibrated on this folder: for each language, "
           "where only a few unrelated questions would still get an answer. "
           f"Tuning {engine.settings.tuning.fingerprint}: every value the project tuned (docs/settings.md).")
if calibration is None:
    st.info("Nothing is indexed yet: add documents in the sidebar, then come back.")
else:
    show(calibration, in_force)

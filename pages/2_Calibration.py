"""Calibration: choose the threshold from this folder's own questions, and see what each choice costs.

The person's questions live beside the index (`questions.jsonl`): each with the sentence that should
answer it, or marked "should refuse". The page searches each one once, then shows the nearest-candidate
distances of answerable and refusable questions per language (Altair histograms, the current threshold
drawn as a rule), the sweep table (what every threshold keeps, refuses and lets bluff), and a button that
moves the chat's threshold slider (`st.session_state["threshold"]`) to the suggested value.

All measuring is `rag.evaluate`'s; this page only shows it. Questions and sentences render inert.
"""

from __future__ import annotations

import sys
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `ui` lives beside streamlit_app.py

import ui  # noqa: E402
from rag import evaluate  # noqa: E402

st.set_page_config(page_title="Calibration · Chat with your folder", page_icon="🎚️", layout="wide")

ui.folder_picker()
ws = ui.workspace()
engine = ws.engine
questions_path = Path(engine.settings.index_path) / "questions.jsonl"
if "threshold" in st.session_state:
    # Streamlit forgets a widget's value on pages that do not draw it: keep the chat slider's threshold.
    st.session_state["threshold"] = st.session_state["threshold"]

st.title("Calibration")
st.caption("The threshold is the only part that can say no. Pick it from questions about this folder: "
           "some it should answer (with the sentence you expect), some it should refuse.")

try:
    questions = evaluate.load_questions(questions_path)
except ValueError as exc:
    st.error(ui.md_escape(f"The questions file cannot be read: {exc}"))
    questions = []

current = float(st.session_state.get("threshold", engine.settings.threshold))
budget = st.number_input("Bluff budget: share of should-refuse questions allowed through", 0.0, 1.0, 0.10, 0.05,
                         format="%.2f", key="bluff_budget")


def measured() -> evaluate.Sweep | None:
    """Search each question once per change of questions or index; re-gating is cheap, searching is not."""
    if not questions:
        return None
    mtime = questions_path.stat().st_mtime_ns if questions_path.exists() else 0
    key = (str(questions_path), mtime, len(engine.snapshot.chunks), engine.settings.candidates)
    cached = st.session_state.get("calibration_results")
    if not cached or cached[0] != key:
        with st.spinner(f"Searching {len(questions)} questions…"):
            results = [engine.search(q.question) for q in questions]
        cached = (key, results)
        st.session_state["calibration_results"] = cached
    return evaluate.sweep(engine, questions, budget=budget, results=cached[1])


sw = measured()
if sw is None:
    st.info("No questions yet. Add a few below: at least some the folder should answer and some it should refuse.")
else:
    answerable = sum(q.answerable for q in questions)
    st.markdown(f"**{len(questions)} questions**: {answerable} answerable, {len(questions) - answerable} should refuse. "
                f"Current threshold **{current:.3f}**.")
    dist = pd.DataFrame(sw.distances())
    for lang in sorted(dist["lang"].unique()):
        part = dist[dist["lang"] == lang]
        base = alt.Chart(part).mark_bar(opacity=0.6).encode(
            x=alt.X("nearest:Q", bin=alt.Bin(step=0.025), title="nearest candidate's cosine distance"),
            y=alt.Y("count():Q", stack=None, title="questions"),
            color=alt.Color("kind:N", title="question",
                            scale=alt.Scale(domain=["answerable", "refusable"], range=["#1f77b4", "#d62728"])),
            tooltip=["kind", "count()"],
        )
        # The threshold as a datum in the spec itself: one rule, whatever the data.
        rule = alt.Chart(pd.DataFrame({"threshold": [current]})).mark_rule(color="black", strokeWidth=2).encode(
            x=alt.datum(current), tooltip=[alt.Tooltip("threshold:Q", format=".3f")])
        st.subheader(f"Language: {lang}")
        st.altair_chart((base + rule).properties(height=220), width="stretch")

    groups = list(sw.rows)
    group = st.selectbox("Sweep for", groups, format_func=lambda g: "all questions" if g == "all" else f"questions in {g}")
    rows = sw.rows[group]
    table = pd.DataFrame([{
        "threshold": r.threshold, "right chunk kept": r.right, "refused (answerable)": r.refused,
        "wrong chunk kept": r.wrong, "bluffs (should refuse)": r.bluffs,
        "right rate": r.right / r.answerable if r.answerable else None,
        "bluff rate": r.bluffs / r.refusable if r.refusable else None,
    } for r in rows])
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"threshold": st.column_config.NumberColumn(format="%.3f"),
                                "right rate": st.column_config.NumberColumn(format="%.2f"),
                                "bluff rate": st.column_config.NumberColumn(format="%.2f")})
    suggested = sw.suggested[group]
    if suggested is None:
        st.warning("No suggestion: it needs both answerable and should-refuse questions, and a threshold whose "
                   "bluffs stay within the budget.")
    else:
        at = sw.at(group, suggested)
        st.markdown(f"Suggested threshold **{suggested:.3f}**: keeps the right passage for {at.right} of "
                    f"{at.answerable} answerable questions and lets {at.bluffs} of {at.refusable} should-refuse "
                    f"questions through.")
        def use(value: float) -> None:
            # A callback runs before the page does: the histograms of this very run draw the new threshold.
            st.session_state["threshold"] = value
            st.session_state["threshold_set_here"] = value

        st.button(f"Set the threshold to {suggested:.3f}", key="use_suggested", type="primary", on_click=use,
                  args=(suggested,))
        if st.session_state.get("threshold_set_here") == current:
            st.success(f"Threshold set to {current:.3f}: the chat uses it from the next question.")

    with st.expander("Each question"):
        st.dataframe(pd.DataFrame([{
            "question": q.question, "language": q.lang or "?", "kind": "should refuse" if q.refuse else "answerable",
            "nearest distance": d, "passes now": d <= current,
        } for q, d in zip(questions, sw.nearest)]), hide_index=True, width="stretch")

st.subheader("Add a question")
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
            q = evaluate.Question(question=text.strip(), needle=None if refuse else " ".join(expected.split()),
                                  lang=evaluate.question_language(text), refuse=refuse)
            evaluate.save_question(questions_path, q)
            st.success(ui.md_escape(f"Saved: {q.question}"))
            st.rerun()

"""The chat's Streamlit widgets: a note, a refusal, the evidence line above the retrieval table, the table, the
citation cards and the "Why wasn't it found?" box. What they show is computed by `chat_view` (no Streamlit there); the page (`pages/chat.py`) places them.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import rag
from app import chat_view as view
from app import ui
from app.chat_session import ChatSession
from rag.deciding import diagnosis
from rag.deciding.explain import codes_note

COLUMN = {"number": st.column_config.NumberColumn, "text": st.column_config.TextColumn,
          "progress": st.column_config.ProgressColumn}


def say(note: view.Note) -> None:
    getattr(st, note.kind)(note.text, **({"icon": note.icon} if note.icon else {}))


def refusal(r: view.Refusal) -> None:
    """The refusal at a glance (its reason, its sentence, its best candidate), the rest one click away."""
    st.markdown(r.header)
    st.text(r.text)
    for line in r.lines:
        st.markdown(line)
    if r.details:
        with st.expander("Details: the closest passage, and what would let one through"):
            for line in r.details:
                st.markdown(line)


def evidence_notes(gated: rag.Gated, result: rag.SearchResult, tuning: rag.settings.Tuning) -> None:
    """One line of what a row needed; the rule's derivation and the fusion's weights in its tooltip."""
    more = (view.evidence_caption(gated, result) + "\n\n"
            + view.fusion_note(result, tuning.rrf_k, tuning.multilingual_weight_across))
    st.caption(view.evidence_line(gated, result), help=more)
    if note := codes_note(gated):
        st.caption(ui.md_escape(note))


def retrieval_table(gated: rag.Gated, result: rag.SearchResult) -> None:
    table = view.retrieval_table(gated, result)
    frame = pd.DataFrame(table.rows, columns=table.columns)
    styled = frame.style.apply(lambda col: table.colours, axis=0, subset=table.coloured)
    st.dataframe(styled, hide_index=True, width="stretch", column_config={
        name: COLUMN[c.kind](c.label, **c.options) for name, c in table.config.items()})


def citation_cards(cards: list[view.Card]) -> None:
    for card in cards:
        with st.container(border=True):
            if card.uncited:
                st.caption(card.uncited)
            st.markdown(card.anchor, unsafe_allow_html=True)  # only our own id goes through HTML
            st.markdown(card.header)
            st.caption(card.link, help=card.link_help)
            st.page_link(ui.VIEWER_PAGE, label=card.label, icon=":material/open_in_new:",
                         query_params=ui.viewer_params(card.citation))
            if card.table:  # a sheet's rows under their header (cells escaped: st.table renders Markdown)
                head, rows = card.table
                st.table(pd.DataFrame(rows, columns=head), hide_index=True)
            else:
                st.text(card.quote)


def why_not_found(engine: rag.Engine, turn: dict, gated: rag.Gated) -> None:
    """Paste the sentence you expected; the app says where it was lost or that it was in fact cited."""
    with st.expander("Why wasn't it found?"):
        expected = st.text_input("The sentence you expected the answer to come from", key=f"why-{turn['id']}",
                                 placeholder="Paste it as it stands in your document")
        if expected.strip():
            key = (expected, gated.threshold, gated.max_chunks, tuple(gated.verdicts), len(engine.snapshot.chunks))
            d = ChatSession.diagnosis(turn, key, lambda: diagnosis.why_not_found(engine, turn["result"], gated,
                                                                                 expected))
            st.markdown(f"**{ui.md_escape(d.verdict)}**: {ui.md_escape(d.message)}")
            if d.straddles:
                st.caption("It falls across these two chunks:")
                for part in d.straddles:
                    st.text(part)

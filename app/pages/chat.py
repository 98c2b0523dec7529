"""The chat: ask the folder, see the evidence or the reason for a refusal, move the threshold live.

Each question is searched once (`engine.search`, with the conversation's earlier queries, so a follow-up is
searched in its standalone form, shown as "Searched as: ..."); every rerun decides the last turn again with
the sidebar's threshold and chunk cap (`engine.decide`, the step `rag ask` takes too), so the slider changes
verdicts, the answer and its citations without searching again. Answers are remembered per turn by answer mode
and kept passages; an LLM answer streams into its place while it is written. Earlier turns keep the settings
they were last shown with; changing the number of candidates searches the last question again.

This page only draws: the turns and their settings are `chat_session.ChatSession`'s, what each turn shows
(table, notes, refusal, cards) is `chat_view`'s, and the widgets that draw them are `chat_widgets`'. Document
and generator text renders as inert text (escaped Markdown, `st.text`, or cells of `st.dataframe`). The folder
box, the uploader and the indexing queue are the app's shared sidebar (`streamlit_app.py`).
"""

from __future__ import annotations

import time

import streamlit as st

import rag
from app import chat_view as view
from app import chat_widgets as widgets
from app import conversation_panel as panel
from app import ui, ui_files
from app.chat_session import MODES, ChatSession, Controls
from rag.deciding.explain import refusal_sentence

ws = ui.workspace()
engine = ws.engine
defaults = engine.settings
chat = ChatSession(st.session_state["turns"], lambda q: engine.threshold_choice(q).rule)  # ui.restore_chat


def keep_question() -> None:
    # Streamlit gives a chat input's value to one run only, and the next run (a drop finishing its upload) can
    # cut that run short anywhere, even before this page reads the box. Callbacks run before the script, so the
    # question is kept in the session from the start, and waits there until its turn is stored (tests/test_app.py).
    st.session_state["asking"] = st.session_state["chat"]


# Read first, so that files attached in the chat are indexed (and reported) before the question is asked.
st.chat_input("Ask a question about your documents (you can attach files too)", accept_file="multiple",
              key="chat", on_submit=keep_question)  # any type: see ui_files.add_documents
prompt = st.session_state.get("asking")
prompt_text = ((prompt if isinstance(prompt, str) else prompt.text) or "").strip() if prompt is not None else ""
prompt_files = [] if prompt is None or isinstance(prompt, str) else list(prompt.files or [])

# The slider follows the engine's choice for the question on screen (the one being asked, else the last).
choice = engine.threshold_choice(prompt_text or chat.last_question())
st.session_state.setdefault("max_chunks", int(defaults.max_chunks))
st.session_state.setdefault("candidates", int(defaults.candidates))
st.session_state.setdefault("answer_mode", defaults.answer_mode)

with st.sidebar:
    panel.sidebar(ws)  # New chat, the stored conversations, export, the scope
    st.subheader("Answering")
    threshold = ui.threshold_slider(choice.value, label="Threshold (cosine distance)", min_value=0.0,
                                    max_value=1.5, step=0.005, format="%.3f", help=view.HELP["threshold"])
    st.caption(view.threshold_caption(choice, ui.threshold_set() is not None),
               help=view.threshold_help(choice, ui.threshold_set() is not None))
    if ui.threshold_set() is not None:
        st.button("Use the calibrated threshold", icon=":material/restart_alt:", on_click=ui.set_threshold,
                  args=(None,), key="threshold_reset")
    max_chunks = st.number_input("Max chunks", 1, 20, key="max_chunks", help=view.HELP["max_chunks"])
    candidates = int(st.number_input("Candidates N", 1, 100, key="candidates", help=view.HELP["candidates"]))
    settings = ui.session_settings()
    mode = st.selectbox("Answer mode", list(MODES), key="answer_mode", help=view.HELP["answer_mode"])
    if mode == "llm" and not settings.llm_base_url:
        st.info(view.NO_LLM_SERVER, icon=":material/info:")
    st.divider()

now = Controls(threshold, int(max_chunks), mode)
attached = ui_files.handle_uploads(ws, prompt_files, source="chat") if prompt_files else []
if not prompt_text:
    st.session_state.pop("asking", None)  # files alone: handled


def search(question: str, history: list[str]) -> rag.SearchResult:
    # A follow-up is rewritten by the LLM only when the person chose the LLM mode and a server is set.
    return ui.search(ws, question, candidates, history, settings.replace(answer_mode=mode), panel.doc_ids(ws))


def answer_for(turn: dict, gated: rag.Gated, mode_name: str, slot) -> tuple[rag.Answer, float]:
    """The answer for these kept passages, streamed into `slot` while it is written, or the one remembered."""
    key = ChatSession.answer_key(gated, mode_name, (settings.llm_base_url, settings.llm_model))
    if (known := ChatSession.answer(turn, key)) is not None:
        return known
    problem, pieces = "", []
    try:
        generator = rag.make_generator(settings.replace(answer_mode=mode_name), engine.embedder, engine.side)
    except ValueError as exc:  # an llm_base_url that is not an http(s) URL: say so, answer extractively
        generator = rag.make_generator(settings.replace(answer_mode="extractive"), engine.embedder, engine.side)
        problem = f"{exc}; showing the extractive answer"

    def on_text(piece: str) -> None:
        pieces.append(piece)
        slot.markdown(ui.md_escape("".join(pieces)) + " ▌")

    t0 = time.perf_counter()
    # A server that cannot be reached is answer()'s business: it falls back and says why in `note`.
    ans = engine.answer(gated, generator, standalone=turn["result"].query, on_text=on_text)
    if problem:
        ans.note = "; ".join(x for x in (problem, ans.note) if x)
    return ChatSession.remember_answer(turn, key, (ans, (time.perf_counter() - t0) * 1000))


def render_turn(index: int, turn: dict) -> None:
    turn_no, result = index + 1, turn["result"]
    with st.chat_message("user"):
        st.markdown(ui.md_escape(turn["question"]))
    shown = chat.shown(index, now)
    gated = engine.decide(result, shown.threshold, shown.max_chunks, shown.rule)
    ans = ms = None
    with st.chat_message("assistant"):
        if result.searched_note:  # a follow-up, searched with what it refers to (or tried so)
            st.caption(ui.md_escape(result.searched_note))
        panel.scope_note(turn)
        # Fixed places, whatever the state: the answer (or the refusal), then the sources. When the slider
        # turns an answer into a refusal, an empty element takes the sources' place, so their cards go at
        # once instead of lingering until the rest of the page is drawn.
        head = st.container()
        if refusal_sentence(gated) is not None:
            refusal = view.refusal_lines(gated, engine.indexing())
            with head:
                widgets.refusal(refusal)
                panel.refusal_note(turn)
            st.empty()
        else:
            with head:
                badge, slot = st.empty(), st.empty()
                ans, ms = answer_for(turn, gated, shown.mode, slot)
                by_llm = view.llm_refused(ans)
                if by_llm:
                    badge.markdown(view.LLM_REFUSED)
                slot.markdown(ui.linkify(ans, gated.citations, href=ui.viewer_url, escape=ui.md_escape))
                for note in view.answer_notes(ans, gated, shown.mode):
                    widgets.say(note)
            with st.container():
                st.markdown(view.sources_heading(gated, by_llm))
                read = set(ans.check.given) if ans.check is not None and by_llm else None
                cited = set(ans.check.cited) if ans.check is not None and not ans.refused else None
                widgets.citation_cards(view.citation_cards(turn_no, gated, engine.folder, read, cited, ans=ans))
        st.caption(view.timing_caption(result, ans, ms, None if shown.live else shown.threshold))
        with st.expander(view.retrieval_label(gated), expanded=shown.live):
            panel.scope_note(turn)
            widgets.evidence_notes(gated, result, settings.tuning)
            widgets.retrieval_table(gated, result)
            chosen = st.empty()  # in every state, so a list from an earlier answer never lingers
            if ans is not None and ans.chosen:
                chosen.markdown(view.chosen_markdown(ans))
        widgets.why_not_found(engine, turn, gated)
        panel.keep(index, turn, chat.turns, gated, ans)


st.title("Chat with your folder")
st.caption(view.intro_caption(engine.folder))
ui_files.indexing_note(ws)
ui_files.conflicts_note(ws)

if prompt_text:
    # Asked with its attachment, or just after a drop in the sidebar, a question is most likely about those
    # files: wait (up to 20 s) for this session's files still being indexed before searching.
    waiting = list(dict.fromkeys(attached + ui_files.unfinished_uploads(ws)))
    waited = bool(waiting) and ui_files.wait_for(ws, waiting)
    if waiting and not waited:
        st.info(view.STILL_INDEXING, icon=":material/hourglass_top:")
    try:
        result = search(prompt_text, panel.history(chat, prompt_text))
    except Exception:
        st.session_state.pop("asking", None)  # asked, and failed: shown once, not again on every run
        raise
    chat.ask(prompt_text, result, candidates, now)
    panel.asked(ws, chat)  # stored before it is answered
    st.session_state.pop("asking", None)
    if chat.redraw(waited, ui.threshold_set() is not None, choice.value,
                   lambda: engine.threshold_choice(prompt_text).value):
        st.rerun()

# The page redraws when the queue empties: a question asked before anything was indexed is searched again.
if due := chat.due_search(candidates, bool(engine.snapshot.chunks)):
    chat.searched_again(search(due.question, chat.history(-1)), candidates)
    if chat.redraw(due.stale, ui.threshold_set() is not None, choice.value,
                   lambda: engine.threshold_choice(due.question).value):
        st.rerun()

if not len(chat):
    stats = engine.counts()
    widgets.say(view.empty_chat_note(stats.chunks, stats.indexed, engine.indexing()))

for i, turn in enumerate(chat.turns):
    render_turn(i, turn)
panel.done()  # the sidebar's list, drawn before this run's question was stored

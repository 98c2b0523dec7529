"""The chat's conversations and scope, as Streamlit widgets: the list in the sidebar, export, the scope picker,
and what each turn adds about them (its scope, "Ask again" and what changed).

- `sidebar()`: *New chat*; the stored conversations, newest first, titled by their first question, filtered
  by *Find*; for the one on screen, rename, delete (with *Undo* for `conversations.UNDO_S` seconds), and
  export as Markdown or JSON; notices about anything the store set aside; the scope picker (documents,
  subfolders, formats), kept per conversation.
- `doc_ids()` / `asked()`: the scope a question is searched with, recorded on its turn, and the turn stored.
- `keep()`: after a turn is drawn, what it showed is stored (only when it changed), and its *Ask again* button;
  `done()`: the page drawn again when its question changed the list.
- `scope_note()`, `refusal_note()`: the turn's scope above its answer and table, and in a refusal.
- `ask_about()`: the Library's and the Viewer's *Ask about this document*: a new chat scoped to it.

Not here: the store itself (`app.conversations`, no Streamlit), asking and drawing a turn (the chat page).
"""

from __future__ import annotations

import time

import streamlit as st

import rag
from app import conversations, ui
from app.chat_session import ChatSession
from rag.indexing.scope import Resolved, Scope, resolve

LISTED = 10  # conversations shown in the sidebar at once; Find narrows the rest


# --- the list --------------------------------------------------------------------------------------------

def _current() -> str:
    return st.session_state.get("chat_id", "")


def _stored(chat_id: str) -> conversations.Conversation:
    return ui.conversations().load(chat_id) or conversations.Conversation(chat_id, "New chat", "", None, {}, [])


def _delete(chat_id: str) -> None:
    title = _stored(chat_id).title
    ui.conversations().delete(chat_id)
    ui._chats().pop(chat_id, None)
    st.session_state["deleted"] = (chat_id, title, time.time())
    ui.start_chat(st.session_state.get("folder"))


def _undo() -> None:
    chat_id, title, _ = st.session_state.pop("deleted")
    if ui.conversations().undo(chat_id):
        ui.open_chat(chat_id)
    else:
        st.session_state["conv_error"] = f"“{title}” is gone for good: it was deleted over a minute ago."


def _rename(chat_id: str) -> None:
    try:
        ui.conversations().rename(chat_id, st.session_state.get("conv_name", ""))
        st.session_state["conv_name"] = ""
    except ValueError as exc:
        st.session_state["conv_error"] = str(exc)


def sidebar(ws: ui.Workspace) -> None:
    store = ui.conversations()
    st.subheader("Conversations")
    st.button("New chat", icon=":material/add_comment:", width="stretch", key="new_chat", on_click=ui.start_chat,
              kwargs={"folder": st.session_state.get("folder")})
    for notice in store.notices + list(ui._chats().get(_current(), {}).get("set_aside", [])):
        st.warning(ui.md_escape(notice), icon=":material/report:")
    if err := st.session_state.pop("conv_error", None):
        st.error(ui.md_escape(err))
    deleted = st.session_state.get("deleted")
    if deleted and time.time() - deleted[2] < conversations.UNDO_S:
        st.button(f"Undo: bring back “{ui.md_escape(conversations._title(deleted[1], 40))}”", key="conv_undo",
                  icon=":material/undo:", on_click=_undo, width="stretch")
    words = st.text_input("Find", key="conv_find", placeholder="words of a question or an answer")
    found = store.list(words, limit=LISTED + 1)
    st.session_state["conv_first"] = found[0].id if found else None  # see `done`
    for s in found[:LISTED]:
        here = s.id == _current()
        # No tooltip: each is a second element per button, and the sidebar is drawn on every run.
        st.button(ui.md_escape(s.title), key=f"conv-{s.id}", width="stretch", type="primary" if here else "secondary",
                  on_click=ui.open_chat, args=(s.id,))
    if len(found) > LISTED:
        st.caption("More conversations: narrow them with Find.")
    elif not found:
        st.caption("No conversation holds those words." if words.strip() else "Asked questions are kept here.")
    # Drawn for a chat not stored yet too: its first question is stored later in the same run, after the
    # sidebar; the exports read the store when clicked.
    chat_id = _current()
    # Its widgets are drawn only while it is open (and the scope's, below): drawn on every run, they cost the
    # browser enough that a question typed right after a drop went in 0.8-1.2 s later instead of 0.1-0.4.
    menu = st.popover("This conversation", icon=":material/more_horiz:", width="stretch", key="conv_menu",
                      on_change="rerun")
    with menu:
        if menu.open:
            st.text_input("Name", key="conv_name", placeholder="a name for this conversation")
            st.button("Rename", key="conv_rename", on_click=_rename, args=(chat_id,))
            st.download_button("Export as Markdown", lambda: conversations.to_markdown(_stored(chat_id)),
                               file_name=f"conversation-{chat_id}.md", mime="text/markdown", key="conv_md",
                               on_click="ignore", icon=":material/download:")
            st.download_button("Export as JSON", lambda: conversations.to_json(_stored(chat_id)),
                               file_name=f"conversation-{chat_id}.json", mime="application/json", key="conv_json",
                               on_click="ignore", icon=":material/data_object:")
            st.button("Delete", key="conv_delete", icon=":material/delete:", on_click=_delete, args=(chat_id,))
    scope_picker(ws)
    st.divider()


# --- the scope -------------------------------------------------------------------------------------------

def scope() -> Scope:
    return Scope.of(st.session_state.get("scope"))


def _scope_changed() -> None:
    chosen = {k: list(st.session_state.get(f"scope_{k}", [])) for k in ("docs", "under", "kinds")}
    _set_scope({k: v for k, v in chosen.items() if v})


def _set_scope(value: dict) -> None:
    st.session_state["scope"] = value
    record = ui._chats().get(_current())
    if record is not None:
        record["scope"] = value
    ui.conversations().set_meta(_current(), scope=value)


def _clear_scope() -> None:
    for k in ("docs", "under", "kinds"):
        st.session_state.pop(f"scope_{k}", None)
    _set_scope({})


def scope_picker(ws: ui.Workspace) -> None:
    docs = ws.engine.documents()
    now = scope()
    resolved = resolve(now, docs)
    st.caption(ui.md_escape(f"Scope: {resolved.label}" if now else "Scope: the whole folder"))
    # Its label never changes, so choosing a document (which changes the scope) leaves it open.
    box = st.expander("Choose the scope", icon=":material/filter_alt:", key="scope_box", on_change="rerun")
    with box:
        if box.open:  # drawn only while open (see `sidebar`); the scope itself is kept in "scope"
            folders = sorted({d.path.rsplit("/", 1)[0] for d in docs if "/" in d.path} | set(now.under))
            kinds = sorted({d.kind for d in docs} | set(now.kinds))
            paths = [d.path for d in docs] + [p for p in now.docs if p not in {d.path for d in docs}]
            for key, label, options, value in (("docs", "Documents", paths, now.docs),
                                               ("under", "Subfolders", folders, now.under),
                                               ("kinds", "Formats", kinds, now.kinds)):
                st.session_state.setdefault(f"scope_{key}", list(value))
                st.multiselect(label, options, key=f"scope_{key}", on_change=_scope_changed)
            if now:
                st.button("Clear the scope", key="scope_clear", on_click=_clear_scope, icon=":material/filter_alt_off:")
        else:
            st.caption("Documents, subfolders or formats.")
    for problem in resolved.problems:
        st.warning(ui.md_escape(f"Scope: {problem}."), icon=":material/warning:")


def resolved(ws: ui.Workspace) -> Resolved:
    return resolve(scope(), ws.engine.documents())


def doc_ids(ws: ui.Workspace) -> tuple[str, ...] | None:
    """The documents the next question is searched among (None: the whole folder)."""
    return resolved(ws).doc_ids


def ask_about(path: str) -> None:
    """*Ask about this document*: a new chat limited to `path`, then the chat page."""
    ui.start_chat(st.session_state.get("folder"), scope={"docs": [path]})
    st.switch_page("app/pages/chat.py")


# --- a turn ----------------------------------------------------------------------------------------------

def history(chat: ChatSession, question: str) -> list[str]:
    """The queries `question` is searched after: the conversation's, or for *Ask again* those before the turn
    asked again (so a follow-up is searched again as it was)."""
    again = st.session_state.get("again")
    if again and again["question"] == question:
        return list(again["history"])
    return chat.history()


def _ask_again(turn: dict, upto: list[str]) -> None:
    st.session_state["asking"] = turn["question"]
    st.session_state["again"] = {"of": turn["id"], "question": turn["question"], "history": upto}


def asked(ws: ui.Workspace, chat: ChatSession) -> None:
    """The new turn: the scope it was searched with, the turn it asks again, and its time; stored at once
    (before it is answered: a process killed meanwhile keeps it), with the turn before it, just frozen."""
    turn = chat.turns[-1]
    r = resolved(ws)
    turn.update(scope={"scope": r.scope.as_dict(), "label": r.searched, "refusal": r.refusal(),
                       "problems": list(r.problems)} if r.scope else {}, asked_at=time.time())
    again = st.session_state.pop("again", None)
    if again and again["question"] == turn["question"]:
        turn["again_of"] = again["of"]
    for t in chat.turns[-2:]:
        _store(t)
    st.session_state["conv_stored"] = True


def done() -> None:
    """At the end of the chat page: the sidebar was drawn before this run's question was stored, so when that
    question started a conversation or moved it up the list, the page is drawn once more (its turns are
    remembered: nothing is searched or answered again)."""
    if st.session_state.pop("conv_stored", False) and not st.session_state.get("conv_find") \
            and st.session_state.get("conv_first") != _current():
        st.rerun()


def _store(turn: dict) -> None:
    record = ui._chats().get(_current(), {})
    ui.conversations().save_turn(_current(), turn, folder=str(record.get("folder") or ""),
                                 threshold_set=record.get("threshold_set"), scope=record.get("scope"))


def scope_note(turn: dict) -> None:
    """The scope a turn was asked in, with what was wrong with it then (a chosen document gone or unreadable)."""
    scope = turn.get("scope") or {}
    if scope.get("label"):
        text = scope["label"] + "".join(f" Scope: {p}." for p in scope.get("problems", []))
        st.caption(ui.md_escape(text), help="Chosen in the sidebar's Scope: only these documents were searched.")


def refusal_note(turn: dict) -> None:
    if text := (turn.get("scope") or {}).get("refusal"):
        st.markdown(ui.md_escape(text))


def keep(index: int, turn: dict, turns: list[dict], gated: rag.Gated, ans: rag.Answer | None) -> None:
    """Store what turn `index` showed, when it changed (a new answer, a slider move on the last turn); then
    its *Ask again* button and, for a turn that asks an earlier one again, what changed."""
    shown = conversations.shown_of(gated, ans, (turn.get("scope") or {}).get("label", ""),
                                   (turn.get("scope") or {}).get("refusal", ""))
    key = (turn.get("threshold"), turn.get("max_chunks"), turn.get("mode"), tuple(turn.get("answers", {})), repr(shown))
    if turn.get("_stored") != key:
        turn["shown"] = shown
        _store(turn)
        turn["_stored"] = key
    if turn.get("again_of"):
        before = next((t for t in turns if t["id"] == turn["again_of"]), None)
        if before is not None and before.get("shown"):
            st.info(ui.md_escape(conversations.what_changed(before["shown"], shown)), icon=":material/compare_arrows:")
    st.button("Ask again", key=f"again-{turn['id']}", icon=":material/refresh:", on_click=_ask_again,
              args=(turn, [t["result"].query for t in turns[:index]]),
              help="Search this question anew in today's index and say what changed.")

"""Files coming in, as the app shows them: the sidebar's uploader and the indexing queue, live.

- `add_documents()` / `handle_uploads()` / `index_paths()`: the uploader saves dropped files under safe
  names (asking before replacing a different file of the same name, `upload_questions`) and puts them on
  the engine's indexing queue; a file that cannot be saved is logged in `st.session_state["upload_log"]`,
  the rest show in the queue panel. `wait_for()`: a question asked with its attachment, or right after a
  drop (`unfinished_uploads`), waits for those files.
- `keep_upload_replies()`: keeps a drop from being lost when a question or page switch follows at once.
- `queue_panel()` / `indexing_note()`: fragments that rerun on their own (not the page), every second
  while files are being indexed and every few seconds otherwise, and show the queue: each file's state and
  progress, cancel, retry, and how many files are still waiting.

Not here: saving or indexing itself (the engine's: `Engine.save_upload`, `Engine.enqueue`, its queue).
"""

from __future__ import annotations

import time
from typing import Iterable

import streamlit as st

import rag
from app.ui import Workspace, md_escape


# --- uploads ------------------------------------------------------------------------------------------

def keep_upload_replies() -> None:
    """Keep Streamlit from dropping the reply to a file upload when a run starts.

    To upload a dropped file, the browser first asks the server where to send it; the answer travels in
    the session's outgoing message queue. Streamlit (1.67) empties that queue when a script run starts,
    keeping only its own lifecycle messages, so a question asked (or a page switched) at the moment of a
    drop threw the answer away: the browser never uploaded the file, and the uploader showed nothing.
    This wraps the queue's `clear` to put such answers back when it is that clear (the one that keeps
    lifecycle messages), and only then: `flush`, which hands the queue to the browser, clears it too, and a
    reply put back there would be sent again after every send, for ever. It changes nothing else, and
    does nothing (with a warning in the server log) on a Streamlit whose queue no longer looks like this
    one. Streamlit is pinned to the exact version this was written against (pyproject.toml), and
    tests/unit/test_streamlit_queue.py checks on its real queue what this relies on."""
    try:
        from streamlit.runtime.forward_msg_queue import ForwardMsgQueue
    except ImportError:  # pragma: no cover - a Streamlit that moved it
        ForwardMsgQueue = None
    clear = getattr(ForwardMsgQueue, "clear", None)
    if clear is None or getattr(clear, "keeps_upload_replies", False):
        return
    if not hasattr(ForwardMsgQueue(), "_queue"):  # pragma: no cover
        import logging
        logging.getLogger(__name__).warning("Streamlit's message queue changed: a drop followed at once by a "
                                            "question may be lost")
        return

    def keeping_clear(self, retain_lifecycle_msgs: bool = False, *args, **kwargs):
        if not retain_lifecycle_msgs:
            return clear(self, retain_lifecycle_msgs, *args, **kwargs)
        replies = [m for m in self._queue if m.WhichOneof("type") == "file_urls_response"]
        clear(self, retain_lifecycle_msgs, *args, **kwargs)
        kept = {id(m) for m in self._queue}
        self._queue.extend(m for m in replies if id(m) not in kept)

    keeping_clear.keeps_upload_replies = True
    keeping_clear.original = clear
    ForwardMsgQueue.clear = keeping_clear


def add_documents(ws: Workspace) -> None:
    """The sidebar's uploader. Dropped files are saved and queued by the widget's own callback, which
    Streamlit runs at the start of the next run whatever page that run draws."""
    engine = ws.engine
    st.sidebar.subheader("Add documents")
    st.sidebar.file_uploader(
        # No `type=` filter: Streamlit's own refusal of a .key names its MIME type; ours names the types
        # the folder takes ("talk.key: failed, unsupported file type '.key'; supported: .csv, .docx, ...").
        "Documents, slides, sheets, web pages, e-mail", accept_multiple_files=True, key="uploader",
        on_change=lambda: handle_uploads(ws, list(st.session_state.get("uploader") or []), source="upload"),
        help=f"{rag.format_names()}. Saved into {engine.folder} and queued for indexing (in the background: "
             f"keep asking meanwhile). Up to {engine.settings.tuning.max_upload_mb} MB each.")
    # Also here: a file the callback has seen is skipped (by its id), one it has not (a run that started
    # before the upload finished) is saved now.
    handle_uploads(ws, list(st.session_state.get("uploader") or []), source="upload")


def log_outcome(name: str, status: str, detail: str) -> None:
    st.session_state.setdefault("upload_log", []).insert(0, {"name": name, "status": status, "detail": detail})


def handle_uploads(ws: Workspace, files: Iterable, source: str = "upload") -> list[str]:
    """Save newly uploaded files and queue them; each file is handled once per session (by its file id).
    Returns the relative paths queued."""
    done = st.session_state.setdefault("uploaded_ids", set())
    saved: list[str] = []
    for f in files or []:
        fid = getattr(f, "file_id", None) or f"{f.name}:{f.size}"
        if fid in done:
            continue
        done.add(fid)
        data = f.getvalue()
        if same := ws.engine.already_there(f.name, data):
            # Nothing to save or index: say so (a trial dropped a file already there and saw it indexed again).
            log_outcome(f.name, "unchanged", f"already in the folder as {same} with the same content")
            continue
        try:
            saved.append(ws.engine.save_upload(f.name, data, on_conflict="ask"))
        except rag.UploadConflict:
            pass  # its bytes wait in the engine until the person chooses: `resolve_conflicts`
        except rag.UploadError as exc:
            # The message names the file first ("minutes.docx: unsupported type; …"); the log names it too.
            log_outcome(f.name, "failed", str(exc).split(": ", 1)[-1])
    if saved:
        index_paths(ws, saved, source)
        st.session_state.setdefault("session_uploads", []).extend(saved)
    return saved


def unfinished_uploads(ws: Workspace) -> list[str]:
    """Files this session added that are still queued or being indexed (and forgets the finished ones):
    a question asked right after a drop waits for them, as it waits for its own attachments."""
    queue = ws.engine.queue
    mine = st.session_state.get("session_uploads", [])
    left = [p for p in dict.fromkeys(mine) if (item := queue.get(p)) is not None and item.active]
    st.session_state["session_uploads"] = left
    return left


def wait_for(ws: Workspace, rel_paths: list[str], timeout: float = 20.0) -> bool:
    """Wait (with a spinner) until these queued files are indexed or failed: a question asked together
    with its attachment is answered from it. False when they took longer (the question is then answered
    from what is indexed, and the queue panel shows the rest)."""
    queue = ws.engine.queue
    deadline = time.monotonic() + timeout
    with st.spinner(f"Indexing {len(rel_paths)} file(s) you added…"):
        while time.monotonic() < deadline:
            items = [queue.get(p) for p in rel_paths]
            if all(i is None or not i.active for i in items):
                return True
            time.sleep(0.1)
    return False


def index_paths(ws: Workspace, rel_paths: list[str], source: str = "upload") -> list:
    """Put files on the indexing queue; the queue panel shows them from here on, in every session."""
    return ws.engine.enqueue(rel_paths, source=source)


# --- the indexing queue, live -------------------------------------------------------------------------

STATE_ICON = {"queued": ":material/schedule:", "extracting": ":material/description:",
              "embedding": ":material/memory:", "indexed": ":material/check_circle:", "failed": ":material/error:",
              "cancelled": ":material/block:", "removed": ":material/delete:"}


# How often the live panels redraw themselves: every second while files are indexed; when nothing is, only
# often enough to notice files the folder watcher queued (each redraw is a rerun of the fragment and a
# message to the browser: at one a second, an idle open tab kept the server busy for nothing).
BUSY_EVERY, IDLE_EVERY = 1.0, 5.0


def _every(busy: bool) -> float:
    return BUSY_EVERY if busy else IDLE_EVERY


def queue_panel(ws: Workspace, recent: int = 12) -> None:
    """The queue, redrawn by itself while the person chats: files waiting or running (with progress and a
    cancel button), failures (with their reason and a retry), the last files finished."""
    every = _every(ws.engine.indexing() > 0)
    st.fragment(run_every=every)(_queue_panel)(ws, recent, every)


def _queue_panel(ws: Workspace, recent: int, every: float) -> None:
    engine = ws.engine
    items = engine.queue.items()
    active = [i for i in items if i.active]
    failed = [i for i in items if i.state == "failed"]
    done = sorted((i for i in items if i.state in ("indexed", "cancelled", "removed")),
                  key=lambda i: -i.updated_at)[:recent]
    if active:
        head, button = st.columns([3, 2])
        head.markdown(f"**Indexing** · {len(active)} file{'s' if len(active) != 1 else ''} to go")
        if button.button("Cancel all", key="queue_cancel_all", icon=":material/cancel:"):
            engine.queue.cancel_all()
        for item in active[:recent]:
            text, cancel = st.columns([5, 1])
            if item.state == "embedding" and item.total:
                text.progress(min(1.0, item.done / item.total), text=md_escape(item.label()))
            else:
                text.caption(f"{STATE_ICON[item.state]} {md_escape(item.label())}")
            if cancel.button("Cancel", key=f"queue_cancel_{item.seq}", help=f"Do not index {item.name}"):
                engine.queue.cancel(item.path)
        if len(active) > recent:
            st.caption(f"… and {len(active) - recent} more queued")
    for item in failed:
        st.error(md_escape(item.label()), icon=STATE_ICON["failed"])
        if st.button("Retry", key=f"queue_retry_{item.seq}", icon=":material/refresh:"):
            engine.enqueue([item.path], source="retry")
    for item in done:
        show = st.success if item.state == "indexed" else st.info
        show(md_escape(item.label()), icon=STATE_ICON[item.state])
    # `every` is the interval this panel was drawn with, fixed until the next whole-page run. When the queue
    # empties between two of the panel's own runs, the whole page redraws once (the counts and the library
    # are then up to date, and the panels slow down); when it fills (files the folder watcher found), too
    # (the panels then redraw every second). A whole-page run that drew the panel with the right interval
    # (after a drop, the queue is already full when the panel is drawn) does not run the page a second time:
    # that second run, racing a click on another page, could take the person back to the page they left.
    if _every(bool(active)) != every:
        st.rerun(scope="app")


def indexing_note(ws: Workspace) -> None:
    """One line in the chat while files are still being indexed."""
    st.fragment(run_every=_every(ws.engine.indexing() > 0))(_indexing_note)(ws)


def _indexing_note(ws: Workspace) -> None:
    n = ws.engine.indexing()
    if n:
        st.caption(f":material/hourglass_top: {n} file{'s are' if n != 1 else ' is'} still being indexed; "
                   "answers come from what is fully indexed so far.")


def resolve_conflicts(ws: Workspace) -> None:
    """Ask, for each upload whose name is taken by a different file: replace it, or keep both. The uploads
    wait in the engine (`Engine.held_uploads`), not in this session: a reload or another tab still asks."""
    for h in ws.engine.held_uploads():
        st.warning(md_escape(f"{h.name}: {h.message}"))
        choice = None
        # One under the other: three columns in the sidebar cut the labels short ("Repl…", "Keep…").
        if st.button("Replace it", key=f"conflict-replace-{h.id}", width="stretch"):
            choice = "replace"
        if st.button("Keep both", key=f"conflict-rename-{h.id}", width="stretch"):
            choice = "rename"
        if st.button("Cancel", key=f"conflict-cancel-{h.id}", width="stretch"):
            choice = "cancel"
        if choice:
            try:
                rel = ws.engine.resolve_upload(h.id, choice)
            except KeyError:
                pass  # another tab chose first
            except rag.UploadError as exc:
                log_outcome(h.name, "failed", str(exc).split(": ", 1)[-1])
            else:
                if rel is None:
                    log_outcome(h.name, "skipped", "not saved: a different file has that name")
                else:
                    index_paths(ws, [rel])
            st.rerun()


def conflicts_note(ws: Workspace) -> None:
    """In the chat: uploads waiting for the replace-or-keep choice, whose new text no answer can see yet
    (a trial asked at once and was answered from the old file, with nothing saying why)."""
    names = list(dict.fromkeys(h.name for h in ws.engine.held_uploads()))
    if names:
        listed = ", ".join(names)
        st.warning(md_escape(f"{listed}: a different file of that name is already in the folder. Choose in the "
                             f"sidebar whether to replace it or keep both; until then, answers come from the "
                             f"folder's own {listed}."), icon=":material/difference:")


def upload_log(limit: int = 12) -> None:
    for entry in st.session_state.get("upload_log", [])[:limit]:
        text = md_escape(f"{entry['name']}: {entry['status']}, {entry['detail']}")
        if entry["status"] == "indexed":
            st.success(text, icon=":material/check_circle:")
        elif entry["status"] == "failed":
            st.error(text, icon=":material/error:")
        else:
            st.info(text)

"""What the Streamlit pages share: the cached engine, the folder choice, chat state, and inert text.

Here:
- `workspace()`: one `Engine` per folder behind `st.cache_resource` (the embedding model loads once per
  process and is shared by every engine). Opening it starts its indexing queue's worker and the folder
  watcher (`Engine.start`), once per process: no browser session syncs or indexes anything itself.
  The folder comes from the sidebar (`folder_picker`), else from `rag.load_settings()`.
- `search()`: one search with this session's number of candidates and answer mode (a follow-up is
  searched in its standalone form, rewritten by the LLM when the session uses one).
- `restore_chat()`: a chat survives a reload and a restart (its id rides in the URL, `?chat=`; its turns,
  folder, threshold and scope stay in the server's memory for the last `KEPT_CHATS` chats, and are stored
  beside the index by `conversations()`, the folder's `app.conversations.Store`).
- `keep_page_state()` and the threshold helpers: settings a page's widgets hold survive visits to other
  pages (Streamlit forgets the state of a widget that a run does not draw).
- `linkify()`: an answer's Markdown, each valid [n] a link to its source (the viewer, in the app).
- `md_escape()` and `one_line()` (from `inert`, which has no Streamlit import): document text (and anything
  derived from it) as Markdown that shows the same characters and nothing else, and one-line previews.

Uploads and the indexing queue's panel are in `ui_files`.

Not here: retrieval, gating or answering logic. That is the engine's (`rag`), used only through its
public names.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import urlencode

import streamlit as st

import rag
import rag.deciding.citations
from app.conversations import Store
from app.inert import md_escape, one_line  # noqa: F401 (the pages call them as ui.md_escape, ui.one_line)

# Settings read per question, not when the index is opened: changing them never opens another engine.
QUERY_TIME = ("threshold", "max_chunks", "candidates", "answer_mode", "llm_base_url", "llm_model", "llm_api_key",
              "llm_timeout_s")


# --- links to the viewer -----------------------------------------------------------------------------

VIEWER_PAGE = "app/pages/viewer.py"


VERSION_CHARS = 12  # of the document's content hash, in a citation's viewer link


def viewer_params(c: rag.Citation) -> dict[str, str]:
    """The viewer's address for a citation: the document (as the index names it), the quote's range, and
    this chat's id: an answer's [n] opens in a new tab, a new session, which would start an empty chat
    when the person goes back to Chat there."""
    out = {"doc": c.doc_name, "start": str(c.start), "end": str(c.end)}
    if c.version:  # the version quoted: after the file changes, the viewer says the offsets are old
        out["v"] = c.version[:VERSION_CHARS]
    if st.session_state.get("chat_id"):
        out["chat"] = st.session_state["chat_id"]
    return out


def viewer_url(c: rag.Citation) -> str:
    """A relative link to the viewer at this citation's passage (opens in a new tab from Markdown)."""
    return "viewer?" + urlencode(viewer_params(c))


# --- settings and the engine --------------------------------------------------------------------------

@dataclass
class Workspace:
    """The engine of one folder, shared by every session and page."""

    engine: rag.Engine


def base_settings() -> rag.Settings:
    try:
        return rag.load_settings()
    except ValueError as exc:  # a bad rag.toml or RAG_* variable: say which, do not show a traceback
        st.error(f"Settings could not be loaded: {md_escape(str(exc))}")
        st.stop()
        raise


def session_settings() -> rag.Settings:
    """The configured settings, pointed at the folder this session chose in the sidebar (if any)."""
    base = base_settings()
    chosen = st.session_state.get("folder")
    if chosen and Path(chosen).resolve() != Path(base.folder).resolve():
        # Another folder gets its own index (inside it), never the configured folder's index_dir.
        base = base.replace(folder=Path(chosen), index_dir=None)
    return base


def engine_key(settings: rag.Settings) -> str:
    data = {k: v for k, v in dataclasses.asdict(settings).items() if k not in QUERY_TIME}
    data["folder"] = str(Path(settings.folder).resolve())
    data["index_dir"] = str(settings.index_path.resolve())
    return json.dumps(data, sort_keys=True, default=str)


@st.cache_resource(show_spinner="Loading the embedding model…")
def _embedder(model: str, batch_size: int, languages: tuple[str, ...]) -> rag.Embedder:
    return rag.load_embedder(model, batch_size, languages)


@st.cache_resource(show_spinner="Opening the index…")
def open_workspace(key: str, _settings: rag.Settings) -> Workspace:
    """One engine per folder and index for the whole process: every session and page shares it, and so
    its indexing queue, its worker thread and its folder watcher, started here once."""
    emb = _embedder(_settings.tuning.model, _settings.tuning.embed_batch_size, _settings.tuning.model_languages)
    engine = rag.Engine(_settings, embedder=emb)
    engine.start()
    return Workspace(engine)


def workspace() -> Workspace:
    """This session's workspace (the engine of the folder chosen in the sidebar)."""
    settings = session_settings()
    key = engine_key(settings)
    ws = open_workspace(key, settings)
    if ws.engine.index_gone():
        # Someone deleted the index folder while the app ran: nothing of the old engine can be read any
        # more. A new one builds the index again from the folder, as a first start does, and the page says so.
        ws.engine.close()
        open_workspace.clear(key, settings)
        st.session_state["index_rebuilt"] = str(settings.index_path)
        ws = open_workspace(key, settings)
    if gone := st.session_state.pop("index_rebuilt", None):
        st.sidebar.warning(f"The index folder {md_escape(gone)} was deleted while the app ran: it is being "
                           "built again from the folder's files.")
    return ws


def search(ws: Workspace, question: str, candidates: int, history: list[str] | None = None,
           session: rag.Settings | None = None, doc_ids: Sequence[str] | None = None) -> rag.SearchResult:
    """One search with this session's number of candidates (the engine reads it from its settings).

    `history`: the conversation's earlier searched queries, oldest first; a follow-up question is then
    searched in its standalone form (the engine decides: the previous query joined in front of it, or the
    LLM's rewrite when `session` asks for the LLM answer mode and names a server). `session`: this
    session's settings; their query-time fields (answer mode, LLM server) apply to this search only,
    since the engine is shared by every session and was opened with whatever settings came first.
    `doc_ids`: the conversation's scope (None: the whole folder; empty: nothing is searched)."""
    per_search = (session or ws.engine.settings).replace(candidates=candidates)
    return ws.engine.search(question, doc_ids=doc_ids, history=history or None, settings=per_search)


def folder_picker() -> None:
    """The sidebar's folder box; a new folder opens its own engine and starts a new chat."""
    default = str(Path(st.session_state.get("folder") or base_settings().folder))
    st.session_state.setdefault("folder_input", default)

    def changed() -> None:
        raw = st.session_state["folder_input"].strip()
        path = Path(raw).expanduser()
        if not raw or not path.is_dir():
            st.session_state["folder_error"] = f"{raw or '(empty)'} is not a folder on this machine"
            return
        st.session_state.pop("folder_error", None)
        if str(path.resolve()) != str(Path(st.session_state.get("folder") or base_settings().folder).resolve()):
            st.session_state["folder"] = str(path.resolve())
            start_chat(folder=str(path.resolve()))

    st.sidebar.text_input("Folder", key="folder_input", on_change=changed,
                          help="The folder whose documents you ask about. Its index lives in a hidden "
                               ".rag-index folder inside it.")
    if st.session_state.get("folder_error"):
        st.sidebar.error(md_escape(st.session_state["folder_error"]))


def linkify(ans: rag.Answer, citations: Sequence[rag.Citation], href: Callable[[rag.Citation], str] = lambda c: c.link,
            escape: Callable[[str], str] = lambda s: s) -> str:
    """Markdown for an answer: each valid [n] becomes a link to its citation; a number that is not one
    of the sources the generator was given stays plain text with no link (escaped, so Markdown cannot
    make a link of it). Brackets inside the extractive answer's quotes are left as they are.
    `escape` is applied to all the rest (the words), e.g. to render them as inert text."""
    by_n = {c.n: c for c in citations}
    ok = set(by_n) if ans.check is None else set(ans.check.given) & set(by_n)

    def one(n: int) -> str:
        return f"[\\[{n}\\]]({href(by_n[n])})" if n in ok else f"\\[{n}\\]"

    def words(text: str) -> str:
        out, pos = [], 0
        for m in rag.deciding.citations.MARKER.finditer(text):
            out += [escape(text[pos:m.start()]), "".join(one(int(x)) for x in m.group(1).split(","))]
            pos = m.end()
        return "".join(out) + escape(text[pos:])

    out, pos = [], 0
    for s, e in sorted(ans.quoted):
        out += [words(ans.text[pos:s]), escape(ans.text[s:e])]
        pos = e
    return "".join(out) + words(ans.text[pos:])


# --- state that outlives a page -----------------------------------------------------------------------

# The chat's settings widgets. Streamlit deletes the state of a widget that a run does not draw, so a
# visit to the Library would put them back to their defaults; re-assigning a key at the start of every
# run marks it as the person's and keeps it (the documented way to carry widget values across pages).
PAGE_WIDGETS = ("max_chunks", "candidates", "answer_mode")


def keep_page_state() -> None:
    for key in PAGE_WIDGETS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def threshold_set() -> float | None:
    """The threshold the person chose (the chat's slider or the Calibration page), or None: then each
    question gets the engine's choice (the settings' threshold, else the folder's calibration)."""
    value = st.session_state.get("threshold_set")
    return None if value is None else float(value)


def set_threshold(value: float | None, key: str | None = None) -> None:
    """Choose the chat's threshold (None: back to the calibrated one). `key` is the slider the person
    moved to choose it, which then stays on screen as it is; any other choice (the Calibration page, the
    reset button) gets the chat a fresh slider that starts at the new value."""
    st.session_state["threshold_set"] = None if value is None else round(float(value), 3)
    st.session_state["threshold_key"] = key
    if key is None:
        st.session_state["threshold_gen"] = st.session_state.get("threshold_gen", 0) + 1
    record = _chats().get(st.session_state.get("chat_id", ""))
    if record is not None:
        record["threshold_set"] = st.session_state["threshold_set"]
        conversations().set_meta(st.session_state["chat_id"], threshold_set=record["threshold_set"])


# --- a chat that outlives a reload ----------------------------------------------------------------------

KEPT_CHATS = 50  # chats kept in the server's memory; the oldest goes first


@st.cache_resource
def _chats() -> "OrderedDict[str, dict]":
    """Every recent chat of this server process, by id: its turns (the list the chat page appends to),
    its folder, the threshold its person set and its scope. The stored copy is `conversations()`'."""
    return OrderedDict()


@st.cache_resource
def _store(index_dir: str) -> Store:
    return Store(Path(index_dir))


def conversations() -> Store:
    """The stored conversations of this session's folder (in its index folder), one store per process."""
    return _store(str(session_settings().index_path.resolve()))


def _keep(chat_id: str, record: dict) -> None:
    chats = _chats()
    chats[chat_id] = record
    chats.move_to_end(chat_id)
    while len(chats) > KEPT_CHATS:
        chats.popitem(last=False)


def start_chat(folder: str | None = None, scope: dict | None = None) -> None:
    """A new, empty chat for this session, under a new id (put in the URL); `scope`: the documents it asks."""
    chat_id = uuid.uuid4().hex[:12]
    _keep(chat_id, {"turns": [], "folder": folder, "threshold_set": None, "scope": scope or {}})
    open_chat(chat_id)


def open_chat(chat_id: str) -> bool:
    """Show chat `chat_id` in this session: from the server's memory, else from the store (after a restart).
    False when it is neither."""
    record = _chats().get(chat_id)
    if record is None:
        stored = conversations().load(chat_id)
        if stored is None:
            return False
        record = {"turns": stored.turns, "folder": stored.folder or None, "threshold_set": stored.threshold_set,
                  "scope": stored.scope, "set_aside": stored.set_aside}
    _keep(chat_id, record)
    st.session_state.update(chat_id=chat_id, turns=record["turns"], scope=dict(record.get("scope") or {}))
    for key in [k for k in st.session_state if str(k).startswith("scope_")]:
        del st.session_state[key]  # the scope picker's widgets start again from this chat's scope
    set_threshold(record["threshold_set"])
    if record["folder"]:
        st.session_state["folder"] = st.session_state["folder_input"] = record["folder"]
    st.query_params["chat"] = chat_id
    return True


def restore_chat() -> None:
    """Run first on every page: a session that is new (a reload, a second tab opened on the same URL) picks
    up the chat named in the URL, with its folder and threshold; else it starts one. Streamlit keeps a
    chat in `st.session_state`, which a reload empties; the URL is what a reload keeps. The id also goes
    back into the URL on every page, since a page switch drops query parameters."""
    chats = _chats()
    wanted = st.query_params.get("chat")
    mine = st.session_state.get("chat_id")
    if mine is not None and mine in chats:
        if wanted != mine:
            st.query_params["chat"] = mine
        return
    if not (wanted and open_chat(wanted)):
        start_chat(st.session_state.get("folder"))


def threshold_slider(calibrated: float, **kwargs) -> float:
    """The chat's threshold slider: at the person's value once they moved it, else at `calibrated`.

    A browser sends back every slider's value with each rerun, and a run cut short (a fragment redrawing
    the page, a new question) may never have shown it a value the app set, so a value the app writes into
    a widget can come back as a "change" nobody made. The slider is therefore never written to: its key
    names the value it starts from (and a generation, bumped by every choice made elsewhere), so a new
    calibrated value gets a new slider, and once the person moves one, that same slider stays (a new one
    under their hand would drop the moves still on their way). A change reported for a slider that is no
    longer the one on screen is ignored."""
    chosen = threshold_set()
    key = st.session_state.get("threshold_key") if chosen is not None else None
    start = chosen if chosen is not None else round(calibrated, 3)
    if key is None:
        gen = st.session_state.get("threshold_gen", 0)
        key = f"threshold_{gen}_{'set' if chosen is not None else 'calibrated'}_{start:.3f}"
    st.session_state["threshold_drawn"] = key

    def moved() -> None:
        if st.session_state.get("threshold_drawn") == key:
            set_threshold(st.session_state[key], key=key)

    return float(st.slider(value=start, key=key, on_change=moved, **kwargs))


# --- the sidebar's counts ---------------------------------------------------------------------------

def library_status(ws: Workspace) -> None:
    """Two counts, the model and the folder's languages, from a cheap call (the full statistics are the
    Library page's)."""
    engine = ws.engine
    stats = engine.counts()
    st.caption(f"{stats.indexed} documents indexed · {stats.chunks} chunks · {stats.failed} failed · "
               f"model {md_escape(stats.model)}")
    # Two lines at most in the sidebar: the languages and their shares; what is weaker in each in the tooltip
    # (the Library page says it all). A trial's sidebar ran to a paragraph here.
    line = engine.language_line(stats)
    head, _, more = line.partition(". ")
    st.caption(md_escape(head + ("." if more else "")), help=md_escape(line) if more else None)
    language = engine.language_warning(stats)
    if language:
        st.warning(md_escape(language))


def human_size(n: int | None) -> str:
    if n is None:
        return "on the server"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"

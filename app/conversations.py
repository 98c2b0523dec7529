"""Conversations kept beside the index, so that a restart finds them: pure Python and SQLite, no Streamlit.

One SQLite file in the index folder (`conversations.sqlite`): a row per conversation (its id, the one in the
page's URL `?chat=`, title, folder, the threshold its person set, its scope, times, a `words` column that
finding reads) and a row per turn. A turn's row holds everything it is drawn from, as JSON: the question,
its `rag.SearchResult` (what was searched, every candidate with its ranks, distances and evidence: the
retrieval table's rows), the settings it was shown with (threshold, chunk cap, mode, support rule), the
answers made for it (with their citations), and `shown`, what the screen showed last (verdict, answer,
refusal and its reason, citations with quote, place and distance), which export reads. The gate is a pure
function of the search and those settings, so a turn reopened after a restart is gated again from its row
and draws exactly as it did, without searching.

Each turn is committed on its own (WAL journal), so a process killed while answering loses at most the turn
being answered. Writes come from one process (the app's, as the index has one writer) but from several
sessions at once: a lock serialises them, and two tabs writing the same conversation each add their own
turns (rows keyed by turn id), neither overwriting the other's.

Damage is contained: a file SQLite cannot read is set aside (renamed, with a `.reason.txt` beside it) and a
new one started; a turn whose JSON no longer reads is moved to a `set_aside` table with its reason, and the
rest of its conversation opens. `notices` says what was set aside.

Deleting is undoable for `UNDO_S` seconds (the row is marked, then purged). `to_markdown` and `to_json`
export one conversation from its stored rows.

Not here: searching, gating, answering (the engine's), drawing (`app/conversation_panel.py`).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
import unicodedata
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rag
from rag.answering.answer import ChosenSentence
from rag.deciding.citations import CitationCheck

FILE = "conversations.sqlite"
UNDO_S = 60.0  # how long a deleted conversation can be brought back
SCHEMA = 1

# The types a turn's JSON may hold, by name: decoding builds only these (never a class named by the data).
TYPES = {t.__name__: t for t in (rag.SearchResult, rag.Candidate, rag.SupportRule, rag.Answer, rag.Citation,
                                 ChosenSentence, CitationCheck)}


# --- turns as JSON ----------------------------------------------------------------------------------------

def encode(value: Any) -> Any:
    """A value as JSON-ready data that `decode` turns back into an equal value: dataclasses by type name,
    tuples marked (a candidate's fields are tuples, and `==` tells them from lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if TYPES.get(name) is not type(value):
            raise TypeError(f"cannot store a {name}")
        return {"__type": name, **{f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple):
        return {"__tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("only text keys can be stored")
        return {k: encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__}")


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if "__tuple" in data:
            return tuple(decode(v) for v in data["__tuple"])
        if "__type" in data:
            cls = TYPES.get(data["__type"])
            if cls is None:
                raise ValueError(f"unknown type {data['__type']!r}")
            names = {f.name for f in dataclasses.fields(cls) if f.init}
            # A field added since the row was written takes its default; one removed since is dropped.
            return cls(**{k: decode(v) for k, v in data.items() if k in names})
        return {k: decode(v) for k, v in data.items()}
    return data


# The turn's keys that are stored; `why` (a diagnosis) and `live` are the screen's own.
STORED = ("id", "question", "result", "n", "threshold", "max_chunks", "mode", "rule", "scope", "again_of",
          "asked_at", "shown")


def turn_json(turn: dict) -> bytes:
    """A turn as stored: JSON, compressed (its 20 candidates' passages make it about 25 KB, 6 KB compressed)."""
    data = {k: encode(turn[k]) for k in STORED if k in turn}
    # Answers are remembered by a tuple key (mode, server, kept chunks): stored as pairs.
    data["answers"] = [[encode(k), encode(v)] for k, v in turn.get("answers", {}).items()]
    return zlib.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), 6)


def turn_of(stored: bytes | str) -> dict:
    data = json.loads(zlib.decompress(stored) if isinstance(stored, bytes) else stored)
    turn = {k: decode(v) for k, v in data.items() if k != "answers"}
    turn["answers"] = {decode(k): decode(v) for k, v in data.get("answers", [])}
    if not isinstance(turn.get("result"), rag.SearchResult) or not isinstance(turn.get("question"), str):
        raise ValueError("a turn without its question or its search")
    turn["live"] = False
    return turn


# --- the store -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    id: str
    title: str
    turns: int
    updated: float
    folder: str = ""


@dataclass
class Conversation:
    id: str
    title: str
    folder: str
    threshold_set: float | None
    scope: dict
    turns: list[dict]
    created: float = 0.0
    updated: float = 0.0
    set_aside: list[str] = field(default_factory=list)  # turns that could not be read, with why


def fold(text: str) -> str:
    """Lower case without accents: "Caução" is found by "caucao"."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


class Store:
    """The conversations of one index folder (see the module's doc)."""

    def __init__(self, index_dir: Path):
        self.path = Path(index_dir) / FILE
        self.notices: list[str] = []
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            self._db = self._set_file_aside(str(exc))

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=10, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout=10000")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # with WAL: a killed process loses no committed turn
            # Reading the schema fails on a file that is not a database (a full check would read every page
            # at each start); damage inside a row is found when it is read (`load`).
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            db.executescript("""
                CREATE TABLE IF NOT EXISTS conversations (
                    id TEXT PRIMARY KEY, title TEXT NOT NULL, named INTEGER NOT NULL DEFAULT 0,
                    folder TEXT NOT NULL DEFAULT '', threshold_set REAL, scope TEXT NOT NULL DEFAULT '{}',
                    created REAL NOT NULL, updated REAL NOT NULL, deleted REAL, words TEXT NOT NULL DEFAULT '',
                    turns INTEGER NOT NULL DEFAULT 0);
                CREATE INDEX IF NOT EXISTS by_update ON conversations(deleted, updated);
                CREATE TABLE IF NOT EXISTS turns (
                    conversation TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
                    words TEXT NOT NULL DEFAULT '', PRIMARY KEY (conversation, id));
                CREATE TABLE IF NOT EXISTS set_aside (
                    conversation TEXT, id TEXT, data TEXT, reason TEXT NOT NULL, at REAL NOT NULL);
                """)
            db.execute(f"PRAGMA user_version={SCHEMA}")
        except BaseException:
            db.close()
            raise
        return db

    def _set_file_aside(self, reason: str) -> sqlite3.Connection:
        """The file cannot be read: keep it, renamed, with its reason beside it, and start a new one."""
        aside = self.path.with_name(f"conversations.damaged-{time.strftime('%Y%m%d-%H%M%S')}.sqlite")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                src.replace(Path(str(aside) + suffix))
        aside.with_name(aside.name + ".reason.txt").write_text(reason + "\n", encoding="utf-8")
        self.notices.append(f"The conversation store could not be read ({reason}); it was set aside as "
                            f"{aside.name} and a new one started.")
        return self._open()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- writing ---------------------------------------------------------------------------------------

    def save_turn(self, chat_id: str, turn: dict, folder: str = "", threshold_set: float | None = None,
                  scope: dict | None = None) -> None:
        """Insert or update one turn (keyed by its id), creating its conversation on its first turn, titled by
        its question. Committed before returning."""
        data = turn_json(turn)
        words = fold(" ".join([turn["question"], (turn.get("shown") or {}).get("answer", "")]))
        now = time.time()
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT OR IGNORE INTO conversations (id, title, folder, threshold_set, scope, created, "
                           "updated) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (chat_id, _title(turn["question"]), folder, threshold_set, json.dumps(scope or {}), now, now))
                seq = db.execute("SELECT seq FROM turns WHERE conversation=? AND id=?", (chat_id, turn["id"])).fetchone()
                if seq is None:
                    seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE conversation=?",
                                     (chat_id,)).fetchone()
                    db.execute("INSERT INTO turns (conversation, id, seq, data, words) VALUES (?, ?, ?, ?, ?)",
                               (chat_id, turn["id"], seq[0], data, words))
                else:
                    db.execute("UPDATE turns SET data=?, words=? WHERE conversation=? AND id=?",
                               (data, words, chat_id, turn["id"]))
                self._refresh(chat_id, now)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _refresh(self, chat_id: str, now: float) -> None:
        """The conversation's words (its title and every turn's) and count, after a turn changed."""
        rows = self._db.execute("SELECT words FROM turns WHERE conversation=? ORDER BY seq", (chat_id,)).fetchall()
        title = self._db.execute("SELECT title FROM conversations WHERE id=?", (chat_id,)).fetchone()[0]
        self._db.execute("UPDATE conversations SET words=?, turns=?, updated=? WHERE id=?",
                         (fold(title) + "\n" + "\n".join(r[0] for r in rows), len(rows), now, chat_id))

    def set_meta(self, chat_id: str, **values: Any) -> None:
        """Change a conversation's threshold_set or scope (nothing happens before its first turn is stored)."""
        for key, value in values.items():
            if key not in ("threshold_set", "scope"):
                raise ValueError(f"not a conversation setting: {key}")
            with self._lock:
                self._db.execute(f"UPDATE conversations SET {key}=? WHERE id=?",
                                 (json.dumps(value or {}) if key == "scope" else value, chat_id))

    def rename(self, chat_id: str, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            raise ValueError("a conversation needs a name")
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            if self._db.execute("UPDATE conversations SET title=?, named=1 WHERE id=?", (title, chat_id)).rowcount:
                self._refresh(chat_id, time.time())
            self._db.execute("COMMIT")

    def delete(self, chat_id: str) -> None:
        """Out of the list at once; gone for good after `UNDO_S` seconds unless `undo` brings it back."""
        with self._lock:
            self._db.execute("UPDATE conversations SET deleted=? WHERE id=?", (time.time(), chat_id))

    def undo(self, chat_id: str) -> bool:
        """Bring back a conversation deleted less than `UNDO_S` seconds ago; False when it is gone."""
        with self._lock:
            self._purge()
            cur = self._db.execute("UPDATE conversations SET deleted=NULL WHERE id=? AND deleted IS NOT NULL", (chat_id,))
            return cur.rowcount > 0

    def _purge(self) -> None:
        old = [r[0] for r in self._db.execute("SELECT id FROM conversations WHERE deleted < ?",
                                              (time.time() - UNDO_S,))]
        for chat_id in old:
            self._db.execute("DELETE FROM turns WHERE conversation=?", (chat_id,))
            self._db.execute("DELETE FROM conversations WHERE id=?", (chat_id,))

    # --- reading -----------------------------------------------------------------------------------------

    def list(self, words: str = "", limit: int | None = None) -> list[Summary]:
        """Conversations newest first; with `words`, those whose title, questions or answers hold every one of
        them (accents and case ignored)."""
        terms = fold(words).split()
        sql = "SELECT id, title, turns, updated, folder FROM conversations WHERE deleted IS NULL"
        sql += "".join(" AND instr(words, ?) > 0" for _ in terms) + " ORDER BY updated DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            self._purge()
            return [Summary(*row) for row in self._db.execute(sql, terms)]

    def load(self, chat_id: str) -> Conversation | None:
        """A stored conversation with its turns in the order asked (None: not stored, or deleted). A turn
        that no longer reads is set aside with its reason; the others open."""
        with self._lock:
            row = self._db.execute("SELECT id, title, folder, threshold_set, scope, created, updated FROM "
                                   "conversations WHERE id=? AND deleted IS NULL", (chat_id,)).fetchone()
            if row is None:
                return None
            rows = self._db.execute("SELECT id, data FROM turns WHERE conversation=? ORDER BY seq", (chat_id,)).fetchall()
        turns, aside = [], []
        for turn_id, data in rows:
            try:
                turns.append(turn_of(data))
            except Exception as exc:  # any damage to one row: that row alone is set aside, with why
                reason = f"{type(exc).__name__}: {exc}"
                aside.append(f"a turn could not be read ({reason}) and was set aside")
                with self._lock:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._db.execute("INSERT INTO set_aside VALUES (?, ?, ?, ?, ?)",
                                     (chat_id, turn_id, data, reason, time.time()))
                    self._db.execute("DELETE FROM turns WHERE conversation=? AND id=?", (chat_id, turn_id))
                    self._refresh(chat_id, row[6])
                    self._db.execute("COMMIT")
        try:
            scope = json.loads(row[4]) or {}
        except ValueError:
            scope = {}
        return Conversation(row[0], row[1], row[2], row[3], scope, turns, row[5], row[6], aside)


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def _title(question: str, most: int = 80) -> str:
    q = " ".join(question.split())
    return q if len(q) <= most else q[:most - 1].rstrip() + "…"


# --- export ------------------------------------------------------------------------------------------------

def shown_of(gated: rag.Gated, ans: rag.Answer | None, scope: str = "", refusal_note: str = "") -> dict:
    """What a turn showed, as export and the list read it: verdict, answer or refusal with its reason, the
    citations (quote, document, place, link, distance), each candidate's verdict, and the settings."""
    e = rag.explain(gated, lost_hint="", add_hint="")
    refused = ans is None or ans.refused
    cites = (ans.citations or gated.citations) if ans is not None else []
    return {
        "verdict": "refused" if refused else "answered", "refused": refused,
        "refusal": (e.refusal or (ans.text if ans is not None else "")) if refused else "",
        "reason": [x for x in (e.reason, *e.lines[1:], refusal_note) if x] if refused else [],
        "answer": ans.text if ans is not None else "",
        "citations": [{"n": c.n, "doc": c.doc_name, "place": c.locator, "link": c.link, "distance": c.distance,
                       "quote": c.quote} for c in cites],
        "verdicts": list(gated.verdicts), "threshold": gated.threshold, "max_chunks": gated.max_chunks,
        "mode": ans.mode if ans is not None else "refusal", "scope": scope,
    }


def what_changed(before: dict, now: dict) -> str:
    """*Ask again*: how the new showing of a question differs from the earlier one (both `shown_of`'s).

    >>> a = {"refused": False, "answer": "x [1]", "citations": [{"doc": "a.md", "place": "Intro"}]}
    >>> what_changed(a, a)
    'Asked again: the same answer, from the same passages.'
    >>> what_changed(a, {"refused": True, "refusal": "NO ANSWER: …", "citations": []})
    'Asked again: now refused (before: answered); no longer cites a.md · Intro.'
    """
    places = lambda s: [f"{c['doc']} · {c['place']}" for c in s.get("citations", [])]  # noqa: E731
    old, new = places(before), places(now)
    parts = []
    if before.get("refused") != now.get("refused"):
        parts.append("now refused (before: answered)" if now.get("refused") else "now answered (before: refused)")
    if gone := [p for p in old if p not in new]:
        parts.append("no longer cites " + "; ".join(gone))
    if added := [p for p in new if p not in old]:
        parts.append("newly cites " + "; ".join(added))
    if not parts and (before.get("answer"), before.get("refusal")) != (now.get("answer"), now.get("refusal")):
        parts.append("the same passages, worded differently")
    return "Asked again: " + ("; ".join(parts) if parts else "the same answer, from the same passages") + "."


def to_json(conv: Conversation) -> str:
    """The conversation as the screen showed it: each turn's question, what was searched, settings, verdict,
    answer, refusal and citations (`shown`), and its retrieval rows."""
    def turn(t: dict) -> dict:
        shown = t.get("shown") or {}
        rows = [{"fused_rank": c.fused_rank, "doc_name": c.doc_name, "section": c.section, "distance": c.distance,
                 "dense_rank": c.dense_rank, "bm25_rank": c.bm25_rank, "support": c.support,
                 "verdict": v} for c, v in zip(t["result"].candidates, shown.get("verdicts", []))]
        return {"question": t["question"], "searched_as": t["result"].query, "asked_at": t.get("asked_at"),
                **shown, "scope": t.get("scope") or None, "candidates": rows}
    out = {"id": conv.id, "title": conv.title, "folder": conv.folder, "scope": conv.scope or None,
           "turns": [turn(t) for t in conv.turns]}
    return json.dumps(out, ensure_ascii=False, indent=2, default=str)


def to_markdown(conv: Conversation) -> str:
    """Questions, answers with their [n], each citation's quote, document, place and distance; refusals with
    their reason."""
    out = [f"# {conv.title}", ""]
    if conv.folder:
        out += [f"Folder: `{conv.folder}`", ""]
    for i, t in enumerate(conv.turns, start=1):
        shown = t.get("shown") or {}
        out += [f"## {i}. {t['question']}", ""]
        if t["result"].query != t["question"]:
            out += [f"*Searched as: {t['result'].query}*", ""]
        if shown.get("scope"):
            out += [f"*{shown['scope']}*", ""]
        if shown.get("refused"):
            out += ["**" + shown.get("refusal", "NO ANSWER") + "**", ""]
            out += [f"- {line}" for line in shown.get("reason", [])]
            out += [""]
        else:
            out += [shown.get("answer", ""), ""]
            for c in shown.get("citations", []):
                quote = "\n".join("> " + line for line in c["quote"].splitlines() if line.strip())
                out += [f"[{c['n']}] **{c['doc']}** · {c['place']} · cosine distance {c['distance']:.3f}", "", quote, ""]
        if "threshold" in shown:
            out += [f"*Threshold {shown['threshold']:.3f}, at most {shown.get('max_chunks')} passages, "
                    f"{shown.get('mode', '')} answer.*", ""]
    return "\n".join(out).rstrip() + "\n"

"""Library: one record per document (status, reason, chunk count, stamp), in SQLite beside the index.

A document's life: `pending` while its chunks are being written, `indexed` once all of them are (the
chunk count and the stamp are written in the same transaction), `failed` with a reason a person can
read, `stale` when the stamp no longer matches the settings (another model, chunker or extractor).
Only `indexed` and `stale` documents are visible to search, so a search never sees half a document.

Also here: `WriterLock`, the one-writer-at-a-time rule for the index folder, across threads and
processes (an OS file lock on `writer.lock` beside the database, through `filelock`, so it works on
Windows too). Readers never take it. And the index folder's marker (`RAG_INDEX`): `rag index --rebuild`
deletes only a folder that `is_index_dir` says is one.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

STATUSES = ("indexed", "failed", "stale", "pending")
VISIBLE = ("indexed", "stale")


@dataclass(frozen=True)
class Stamp:
    model: str
    dimension: int
    chunker: str
    extractor: str

    def label(self) -> str:
        return f"{self.model} ({self.dimension}d) · {self.chunker} · {self.extractor}"


@dataclass
class DocRecord:
    doc_id: str
    path: str  # relative to the folder, POSIX separators
    kind: str
    status: str
    content_hash: str = ""
    size: int = 0
    mtime_ns: int = 0
    reason: str = ""
    title: str = ""
    chunks: int = 0
    pages: int = 0
    chars: int = 0
    empty_pages: int = 0
    truncated: int = 0  # chunks longer than the encoder window
    header_share: float = 0.0
    tokens: int = 0
    lang: str = ""
    stamp: Stamp | None = None
    indexed_at: float | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


_COLUMNS = [f.name for f in dataclasses.fields(DocRecord)]


class Library:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._local = threading.local()
        self._create = True  # only the first connection may create the database file
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS documents (doc_id TEXT PRIMARY KEY, path TEXT UNIQUE, record TEXT)")
            # The indexing queue (rag.indexing.queue): one row per file, its state kept here so that a rerun, a reload,
            # another tab or a restart neither loses nor repeats work.
            db.execute("CREATE TABLE IF NOT EXISTS queue (path TEXT PRIMARY KEY, item TEXT)")
        self._create = False

    def _conn(self) -> sqlite3.Connection:
        # One connection per thread, in autocommit mode; WAL so that readers never wait for the writer.
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # After the first, read-write without create: if the index folder is deleted while the app runs,
            # a new thread gets "unable to open" instead of an empty database ("no such table: queue").
            target = self.path if self._create else self.path.resolve().as_uri() + "?mode=rw"
            conn = sqlite3.connect(target, timeout=30, isolation_level=None, uri=not self._create)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _db(self) -> "_Tx":
        """A write transaction (BEGIN IMMEDIATE: takes the write lock at once). Reads do not use it."""
        return _Tx(self._conn())

    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        """One SELECT in its own implicit read transaction: it sees the last commit and never takes the write lock."""
        return self._conn().execute(sql, params).fetchall()

    def put(self, *recs: DocRecord) -> None:
        """Write records, all in one transaction."""
        with self._db() as db:
            for rec in recs:
                db.execute("DELETE FROM documents WHERE path = ? AND doc_id != ?", (rec.path, rec.doc_id))
                db.execute("INSERT OR REPLACE INTO documents VALUES (?, ?, ?)",
                           (rec.doc_id, rec.path, json.dumps(dataclasses.asdict(rec))))

    def get(self, doc_id: str) -> DocRecord | None:
        rows = self._read("SELECT record FROM documents WHERE doc_id = ?", (doc_id,))
        return _load(rows[0][0]) if rows else None

    def by_path(self, path: str) -> DocRecord | None:
        """The record of the file at this relative path, if it has one."""
        rows = self._read("SELECT record FROM documents WHERE path = ?", (path,))
        return _load(rows[0][0]) if rows else None

    def remove(self, doc_id: str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))

    def status_counts(self) -> dict[str, int]:
        """Documents per status, counted by SQLite without decoding a record (cheap on every page run)."""
        rows = self._read("SELECT json_extract(record, '$.status'), COUNT(*) FROM documents GROUP BY 1")
        return {status: n for status, n in rows}

    def all(self) -> list[DocRecord]:
        return [_load(r[0]) for r in self._read("SELECT record FROM documents ORDER BY path")]

    # --- the indexing queue's rows (rag.indexing.queue.QueueItem as JSON) ---

    def queue_put(self, *items: dict) -> None:
        with self._db() as db:
            for item in items:
                db.execute("INSERT OR REPLACE INTO queue VALUES (?, ?)", (item["path"], json.dumps(item)))

    def queue_get(self, path: str) -> dict | None:
        rows = self._read("SELECT item FROM queue WHERE path = ?", (path,))
        return json.loads(rows[0][0]) if rows else None

    def queue_all(self) -> list[dict]:
        return [json.loads(r[0]) for r in self._read("SELECT item FROM queue")]

    def queue_delete(self, path: str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM queue WHERE path = ?", (path,))

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class _Tx:
    """`with` gives a transaction that commits on success and rolls back on error."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, *_):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def _load(raw: str) -> DocRecord:
    data = json.loads(raw)
    stamp = data.pop("stamp", None)
    rec = DocRecord(**{k: v for k, v in data.items() if k in _COLUMNS})
    rec.stamp = Stamp(**stamp) if stamp else None
    return rec


class WriterLock:
    """Exclusive lock on the index folder for writers (indexing, deleting), across processes.

    Re-entrant within one thread; other threads of the process wait as other processes do. `timeout`
    None waits for ever; a number gives up after that many seconds (0: one try) and returns False.

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> mine, theirs = WriterLock(Path(tmp.name) / "writer.lock"), WriterLock(Path(tmp.name) / "writer.lock")
    >>> with mine:
    ...     theirs.acquire(timeout=0)  # another writer (another process, or another Engine here)
    False
    >>> theirs.acquire(timeout=0)
    True
    >>> theirs.release(); tmp.cleanup()
    """

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Threads of this process queue on the RLock; the file lock is taken once, by the outermost hold,
        # and only the thread holding the RLock touches it: so the file lock is not per thread.
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._file_lock = FileLock(path, thread_local=False)

    def acquire(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        if self._depth == 0:
            try:
                # -1: wait for ever; 0: a single try (what the engine's start-up recovery asks for).
                wait = -1 if deadline is None else max(0.0, deadline - time.monotonic())
                self._file_lock.acquire(timeout=wait, poll_interval=0.05)
            except Timeout:
                self._thread_lock.release()
                return False
            except BaseException:
                self._thread_lock.release()
                raise
        self._depth += 1
        return True

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                self._file_lock.release()
        finally:
            self._thread_lock.release()

    def __enter__(self) -> "WriterLock":
        self.acquire()
        return self

    def __exit__(self, *_) -> None:
        self.release()


INDEX_MARKER = "RAG_INDEX"
HELD_DIR = "held"  # uploads waiting for a replace-or-keep choice (rag.indexing.uploads): not derived, --rebuild keeps it
# What an index folder holds (a new file kept there belongs here too): for an index from before the
# marker, anything else in the folder means it is not (only) an index.
INDEX_ENTRIES = frozenset({INDEX_MARKER, "library.sqlite", "library.sqlite-wal", "library.sqlite-shm",
                           "library.sqlite-journal", "writer.lock", "chroma", "questions.jsonl",
                           "calibration.json", HELD_DIR})


def is_index_dir(path: Path) -> bool:
    """True when `path` is an index folder made by rag: it holds the marker, or (an index made before the
    marker existed) it holds library.sqlite and nothing an index does not hold."""
    path = Path(path)
    if (path / INDEX_MARKER).is_file():
        return True
    if not (path / "library.sqlite").is_file():
        return False
    return all(p.name in INDEX_ENTRIES for p in path.iterdir())


def mark_index_dir(path: Path, folder: Path | str = "") -> None:
    """Create the index folder if needed and mark it as one, when it is new, empty, or an index from before
    the marker. A folder that already holds other things is never marked, so never deleted by --rebuild."""
    path = Path(path)
    if (path / INDEX_MARKER).is_file():
        return
    if path.exists() and not (path.is_dir() and (not any(path.iterdir()) or is_index_dir(path))):
        return
    path.mkdir(parents=True, exist_ok=True)
    about = f" for the folder {folder}" if folder else ""
    try:
        (path / INDEX_MARKER).write_text(
            f"This directory is an index made by rag (chat with your folder){about}.\n"
            "It holds only derived data: `rag index --rebuild` deletes it and builds it again from the folder.\n",
            encoding="utf-8")
    except OSError:
        pass  # a read-only index still opens; without the marker, --rebuild only refuses

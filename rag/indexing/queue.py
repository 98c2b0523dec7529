"""Queue: the files waiting to be indexed, the one worker thread that indexes them, and the folder watcher.

Every way a file reaches the index goes through here: uploads, chat attachments, the Library's re-index
and retry, files added, changed or removed in the folder by another program (the watcher), and files a
restart found unfinished. One queue per engine, so one per index and process, shared by every browser
session. Each file's state is a row in the library's SQLite database, not in a session:

    queued -> extracting -> embedding -> indexed
                     \\-> failed (with its reason)      cancelled (asked to)     removed (the file is gone)

so a rerun, a page change, a reload or a second tab neither loses nor repeats work, and after a restart
(even a SIGKILL) the files still queued or half done are indexed again from the start. Cancelling a queued
file takes it off; cancelling one being embedded stops it before anything of it is written. Questions are
answered throughout from what is fully indexed: the worker publishes whole documents only.

Files a person asked for (an upload, an attachment, a retry) go before the ones the app queued itself (the
folder's, a restart's); one queued while the worker is busy with the app's own is indexed at once, between two
model batches (`Indexer._index_asked`), so a file dropped to ask about it is not kept behind a folder's first
indexing, nor behind the calibration the engine computes once the queue empties (`asked_waiting`).

What it does not do: extract, embed or write (the engine does, `Indexer._index_queued`); decide what changed
in the folder (`Engine.rescan` compares sizes and modification times with the library).

    >>> QueueItem("notes/a.md", state=EMBEDDING, done=120, total=400).label()
    'a.md: embedding, 120 of 400 chunks'
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

QUEUED, EXTRACTING, EMBEDDING = "queued", "extracting", "embedding"
INDEXED, FAILED, CANCELLED, REMOVED = "indexed", "failed", "cancelled", "removed"
ACTIVE = (QUEUED, EXTRACTING, EMBEDDING)
STATES = ACTIVE + (INDEXED, FAILED, CANCELLED, REMOVED)
BATCH_FILES = 64  # files taken from the queue at once (their chunks are embedded in full batches)
# Files the app queued by itself (the folder's own, found by a scan or the watcher; those a restart found
# unfinished) wait behind the ones a person asked for (an upload, a chat attachment, a retry, a re-index):
# a file dropped to ask about it at once is not kept behind the first indexing of a folder of hundreds.
BACKGROUND = ("folder", "restart")

log = logging.getLogger(__name__)


@dataclass
class QueueItem:
    path: str  # relative to the folder, POSIX separators
    state: str = QUEUED
    reason: str = ""  # why it failed
    source: str = ""  # upload, chat, folder, library, restart
    seq: int = 0  # order of arrival
    enqueued_at: float = 0.0
    updated_at: float = 0.0
    done: int = 0  # chunks embedded so far
    total: int = 0  # chunks to embed (known once extracted)
    chunks: int = 0  # chunks indexed, once indexed
    runs: int = 0  # how many times the queue indexed this file
    cancel: bool = False  # asked to stop while it runs

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def background(self) -> bool:
        """Queued by the app itself, not asked for by a person: it waits behind those that were."""
        return self.source in BACKGROUND

    def label(self) -> str:
        """One line for the screen."""
        if self.state == EMBEDDING and self.total:
            return f"{self.name}: embedding, {self.done} of {self.total} chunks"
        if self.state == INDEXED:
            return f"{self.name}: indexed, {self.chunks} chunk{'s' if self.chunks != 1 else ''}"
        if self.state == FAILED:
            return f"{self.name}: failed, {self.reason}"
        return f"{self.name}: {self.state}"


class Stopped(Exception):
    """Raised inside the worker's step when the queue is being stopped: the files it held stay as they
    are on disk, and the next start queues them again."""


class IndexQueue:
    """The queue's rows and its worker thread. `index` is the engine's `_index_queued(items, queue)`."""

    def __init__(self, library, index: Callable[[list[QueueItem], "IndexQueue"], None],
                 after_idle: Callable[[], None] | None = None):
        self.library = library
        self._index = index
        self._after_idle = after_idle
        self._lock = threading.Lock()  # one state change at a time: seq numbers, cancel flags
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._asked = threading.Event()  # a person's file was queued since the worker took its batch
        self._thread: threading.Thread | None = None
        self.error = ""  # the last unexpected error of the worker, for the screen

    # --- rows -----------------------------------------------------------------------------------------

    def items(self) -> list[QueueItem]:
        return sorted((_item(d) for d in self.library.queue_all()), key=lambda i: i.seq)

    def get(self, path: str) -> QueueItem | None:
        d = self.library.queue_get(path)
        return _item(d) if d else None

    def save(self, item: QueueItem, state: str | None = None, **changes) -> QueueItem:
        with self._lock:
            return self._save(item, state, **changes)

    def _save(self, item: QueueItem, state: str | None = None, **changes) -> QueueItem:
        # A cancel asked for meanwhile (by another thread, on the stored row) is never written over.
        if "cancel" not in changes:
            row = self.library.queue_get(item.path)
            item.cancel = item.cancel or bool(row and row.get("cancel"))
        if state is not None:
            item.state = state
        for k, v in changes.items():
            setattr(item, k, v)
        item.updated_at = time.time()
        self.library.queue_put(dataclasses.asdict(item))
        return item

    def pending(self) -> int:
        """Files still to index: queued or being worked on."""
        return sum(1 for i in self.items() if i.active)

    def asked_waiting(self) -> bool:
        """A person's file was queued since the worker last took its files (the worker's calibration of the
        folder stands aside for it: `Engine._after_change`)."""
        return self._asked.is_set()

    def take_asked(self) -> list[QueueItem]:
        """The files a person queued since the worker took its batch, in order of arrival; [] when none was.
        The worker indexes them at once, between two files or two model batches of the app's own."""
        if not self._asked.is_set():
            return []
        self._asked.clear()
        return self._next(asked_only=True)

    def _next(self, asked_only: bool = False) -> list[QueueItem]:
        """The queued files the worker takes next, in its order (`_order`), at most `BATCH_FILES`."""
        waiting = (i for i in self.items() if i.state == QUEUED and not (asked_only and i.background))
        return sorted(waiting, key=_order)[:BATCH_FILES]

    def busy(self) -> bool:
        return not self._idle.is_set() or self.pending() > 0

    # --- what callers do ----------------------------------------------------------------------------------

    def put(self, paths: Sequence[str], source: str = "",
            unless: Callable[[str], bool] | None = None) -> list[QueueItem]:
        """Queue files (relative paths). A file already queued or being indexed is left as it is (a change
        made meanwhile is found by the next rescan: its modification time is newer than the one indexed),
        except that one the app queued and a person now asks for goes first.

        `unless(path)`, when given, is asked under the queue's lock for each file not running: True leaves
        it off. A rescan decides from what it read a moment ago; the worker may have finished the file since
        (it marks a file indexed under this lock, after writing its record), so the rescan asks again here."""
        out = []
        with self._lock:
            rows = {i.path: i for i in self.items()}
            seq = max((i.seq for i in rows.values()), default=0)
            for path in dict.fromkeys(paths):
                item = rows.get(path)
                if item is not None and item.active:
                    if item.state == QUEUED and item.background and source not in BACKGROUND:
                        item = self._save(item, source=source)  # still waiting: now asked for, so it goes first
                    out.append(item)
                    continue
                if unless is not None and unless(path):
                    continue
                seq += 1
                runs = item.runs if item else 0
                out.append(self._save(QueueItem(path, QUEUED, source=source, seq=seq, enqueued_at=time.time(),
                                                runs=runs), cancel=False))
        if out:
            self._idle.clear()
            if source not in BACKGROUND:
                self._asked.set()
            self._wake.set()
        return out

    def cancel(self, path: str) -> bool:
        """Cancel one file: a queued one is taken off; one being extracted or embedded stops before any of
        it is written. False when it was not waiting or running."""
        with self._lock:
            item = self.get(path)
            if item is None or not item.active:
                return False
            self._save(item, CANCELLED if item.state == QUEUED else None, cancel=True)
            return True

    def cancel_all(self) -> int:
        return sum(self.cancel(i.path) for i in self.items() if i.active)

    def forget(self, path: str) -> None:
        """Drop a finished file's row (the Library's delete)."""
        with self._lock:
            item = self.get(path)
            if item is not None and not item.active:
                self.library.queue_delete(path)

    def is_cancelled(self, item: QueueItem) -> bool:
        row = self.get(item.path)
        return row is None or row.cancel or row.state == CANCELLED

    def requeue_unfinished(self) -> int:
        """After a restart: files that were waiting or half done go back to the queue, in their old order."""
        with self._lock:
            stale = [i for i in self.items() if i.state in (EXTRACTING, EMBEDDING) or (i.state == QUEUED and i.cancel)]
            for item in stale:
                self._save(item, CANCELLED if item.cancel else QUEUED, done=0, source=item.source or "restart",
                           cancel=False)
        return len(stale)

    # --- the worker ------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="rag-index-queue", daemon=True)
        self._thread.start()
        self._wake.set()

    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the worker at its next check (between files, and between embedding slices)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Until nothing is queued or running (True), or the timeout passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._idle.wait(0.05) and self.pending() == 0:
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._asked.clear()  # before reading the rows: a file queued after this is seen next time
            batch = self._next()
            if not batch:
                if not self._idle.is_set() and self._after_idle is not None:
                    try:
                        self._after_idle()
                    except Exception as exc:  # noqa: BLE001  the worker must outlive any one failure
                        log.exception("after the queue emptied")
                        self.error = f"{type(exc).__name__}: {exc}"
                self._idle.set()
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            self._idle.clear()
            try:
                self._index(batch, self)
            except Stopped:
                return
            except Exception as exc:  # noqa: BLE001
                # Never leave files claimed: whatever was not finished fails with the reason.
                log.exception("indexing queue batch")
                self.error = f"{type(exc).__name__}: {exc}"
                for item in batch:
                    row = self.get(item.path)
                    if row is not None and row.active:
                        self.save(row, FAILED, reason=f"could not be indexed ({type(exc).__name__}: {exc})")
                time.sleep(0.5)


def _order(item: QueueItem) -> tuple[bool, int]:
    """The worker's order: the files a person asked for first, then the app's own; each in order of arrival.

    >>> [i.path for i in sorted([QueueItem("a", source="folder", seq=1), QueueItem("b", source="upload", seq=2),
    ...                          QueueItem("c", source="folder", seq=3)], key=_order)]
    ['b', 'a', 'c']
    """
    return item.background, item.seq


def _item(d: dict) -> QueueItem:
    fields = {f.name for f in dataclasses.fields(QueueItem)}
    return QueueItem(**{k: v for k, v in d.items() if k in fields})


class FolderWatcher:
    """Sees files added, changed or removed in the folder by another program and rescans.

    Inotify events through watchdog (installed with Streamlit) mark the folder dirty; a thread rescans
    half a second after the last event, and every `every` seconds anyway (an event can be missed: a
    network drive, an editor's atomic rename). The rescan itself compares sizes and modification times,
    so a spurious event costs one cheap walk of the folder. Without watchdog it only polls.
    """

    def __init__(self, folder: Path, rescan: Callable[[], object], ignore: Sequence[Path] = (), every: float = 5.0):
        self.folder = Path(folder).resolve()
        self.rescan = rescan
        self.ignore = [Path(p).resolve() for p in ignore]
        self.every = every
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer = None
        self.inotify = False

    def _relevant(self, path: str) -> bool:
        p = Path(path)
        if not _inside(p, self.folder) or any(part.startswith(".") for part in p.relative_to(self.folder).parts):
            return False  # outside, or hidden (the index's own .rag-index folder, editors' swap files)
        resolved = p.resolve()
        return not any(resolved == i or i in resolved.parents for i in self.ignore)

    def start(self) -> None:
        if self._thread is not None:
            return
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer

            watcher = self

            class Handler(FileSystemEventHandler):
                def on_any_event(self, event):  # noqa: N802 (watchdog's name)
                    paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
                    if any(p and watcher._relevant(str(p)) for p in paths):
                        watcher._dirty.set()

            self._observer = Observer()
            self._observer.schedule(Handler(), str(self.folder), recursive=True)
            self._observer.daemon = True
            self._observer.start()
            self.inotify = True
        except Exception:  # noqa: BLE001  no watchdog, or no inotify here: polling alone
            self._observer = None
            self.every = min(self.every, 2.0)
        self._thread = threading.Thread(target=self._run, name="rag-folder-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        if self._observer is not None:
            self._observer.stop()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait(self.every)
            if self._stop.is_set():
                return
            time.sleep(0.5)  # let a burst of events (a copy of many files) settle
            self._dirty.clear()
            try:
                self.rescan()
            except Exception:  # noqa: BLE001  the watcher must outlive a folder that vanished for a moment
                log.exception("rescanning the folder")


def _inside(p: Path, folder: Path) -> bool:
    try:
        p.relative_to(folder)
        return True
    except ValueError:
        return False

"""Engine: the folder, the store, the library and search, kept consistent; the front door for the UI and CLI.

`Engine(settings)` opens the index for one folder (creating it if needed), finishes or undoes work
that a crash left `pending`, and builds the search snapshot from the store. Then:

- `sync()` brings the index in line with the folder: new and changed files are indexed, deleted ones
  removed, stale ones (another model, chunker or extractor) re-indexed; a second sync of an unchanged
  folder embeds nothing. One file that fails is recorded `failed` with its reason; the rest go on.
- `save_upload()` + `index_files()` are the upload path; `remove()`, `reindex()` the library's actions.
- `search()` runs hybrid retrieval; `gate()` (in `rag.gate`) decides; `answer()` writes the answer.
  `ask()` does all three.

Writes take the writer lock (one writer at a time, across processes); searches never do. A document's
chunks become visible to search only once all of them are written and its record says `indexed`.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from rag.answer import Answer, Generator, answer as run_answer, llm_client, make_generator
from rag.followup import followup_query, rewrite_followup
from rag.calibration import LANGUAGES as CALIBRATED_LANGUAGES, Calibration, calibrate, questions_digest, unrelated_questions
from rag.chunk import Chunk, chunk_document, strategy
from rag.embed import Embedder, count_tokens, header_share, load_embedder
from rag.extract import EXTRACTOR_VERSIONS, SUPPORTED, ExtractionError, Extracted, extract_bytes, kind_of
from rag.gate import NO_SUPPORT_TEST, Gated, SupportRule, gate
from rag.lexical import analyze, detect_language, question_language
from rag.llm import LLMError
from rag.library import VISIBLE, DocRecord, Library, Stamp, WriterLock, mark_index_dir
from rag.queue import (CANCELLED, EMBEDDING, EXTRACTING, FAILED, INDEXED, REMOVED, FolderWatcher, IndexQueue,
                       QueueItem, Stopped)
from rag.search import SearchResult, Snapshot, hybrid_search, question_weights
from rag.settings import DEFAULT_THRESHOLD, Settings
from rag.viewer import Located, ViewerError, locate
from rag.store import ChunkStore, StoredChunk, chunk_metadata

Progress = Callable[[int, int, str], None]  # (done, total, current file)
EMBED_GROUP = 256  # chunks embedded together across small documents: the model is fastest in full batches


@dataclass
class FileOutcome:
    path: str
    status: str  # indexed, failed, unchanged, removed, skipped
    chunks: int = 0
    reason: str = ""
    doc_id: str = ""


@dataclass
class SyncReport:
    outcomes: list[FileOutcome] = field(default_factory=list)
    embedded: int = 0  # chunks embedded by this sync
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def summary(self) -> str:
        parts = [f"{self.count(s)} {s}" for s in ("indexed", "unchanged", "failed", "removed", "skipped") if self.count(s)]
        return ", ".join(parts or ["nothing to do"]) + f"; {self.embedded} chunks embedded in {self.seconds:.1f} s"


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold a question gets, and where it came from (for the screen)."""

    value: float
    source: str  # "given", "language_thresholds", "threshold", "calibrated", "default"
    note: str  # one line: e.g. "calibrated for English: 0.612, where 5% of 260 unrelated questions would pass"
    calibrated: float | None = None  # what the calibration says for this question, whatever decided
    rule: SupportRule = NO_SUPPORT_TEST  # the support test for this question (its close distance by language)


@dataclass
class Turn:
    question: str
    result: SearchResult
    gated: Gated
    answer: Answer
    threshold: ThresholdChoice | None = None


@dataclass
class LibraryStats:
    documents: int
    indexed: int
    failed: int
    stale: int
    pending: int
    chunks: int
    size_on_disk: int | None
    model: str
    dimension: int
    languages: dict[str, int]  # characters of indexed text per detected language


class UploadError(ValueError):
    """An upload that was not saved; the message says why and what to do."""


class UploadConflict(UploadError):
    """Another file already has this name: the person chooses to replace it or keep both."""

    def __init__(self, message: str, existing: str):
        super().__init__(message)
        self.existing = existing


def doc_id_for(rel_path: str) -> str:
    return hashlib.sha1(rel_path.encode("utf-8")).hexdigest()[:16]


def safe_name(name: str) -> str:
    """A file name that is only a name: no directories, no control characters, no leading dots.

    >>> safe_name("../../etc/passwd.md"), safe_name("C:\\\\x\\\\notes .md"), safe_name("a\\x00b?.txt")
    ('passwd.md', 'notes.md', 'a_b_.txt')
    """
    name = unicodedata.normalize("NFC", name)
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch if ch.isprintable() and ch not in '<>:"|?*' else "_" for ch in name).strip().lstrip(".")
    stem, dot, ext = name.rpartition(".")
    if dot:
        name = stem[: 120].rstrip() + "." + ext[:10]
    else:
        name = name[:130]
    return name or "upload"


class Engine:
    def __init__(self, settings: Settings, embedder: Embedder | None = None):
        self.settings = settings
        self.folder = Path(settings.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        mark_index_dir(settings.index_path, self.folder)  # before anything writes there: what --rebuild may delete
        self.embedder = embedder or load_embedder(settings.model, settings.embed_batch_size, settings.model_languages)
        self.strategy = strategy(settings.chunk_strategy, settings.chunk_budget)
        self.store = ChunkStore(settings, self.embedder.name, self.embedder.dimension)
        self.library = Library(settings.index_path / "library.sqlite")
        self.lock = WriterLock(settings.index_path / "writer.lock")
        self.searches = 0  # how many searches ran: re-gating must not add to it
        self._chunks_by_doc: dict[str, list[StoredChunk]] = {}
        # What the calibration depends on in the folder, as of the last publish (the only time it changes):
        # so that choosing a question's threshold reads no library record.
        self._content_key: list[tuple[str, str, int]] = []
        self._folder_uncovered = False  # most of the folder in a language the model does not read
        self._languages: dict[str, int] = {}  # characters of searchable text per language, as of the last publish
        self._tokens: dict[tuple[str, str], list[str]] = {}  # BM25 tokens of published chunks
        self._publish_lock = threading.Lock()
        self.calibrations = 0  # how many times the calibration was computed (not loaded) in this process
        self._calibration_lock = threading.Lock()
        self._calibration_path = settings.index_path / "calibration.json"
        self.calibration: Calibration | None = Calibration.load(self._calibration_path)
        self._unrelated_vectors: dict[str, np.ndarray] | None = None
        self.queue = IndexQueue(self.library, self._index_queued, after_idle=self._after_queue)
        self.watcher: FolderWatcher | None = None
        if self.lock.acquire(timeout=0):  # another process writing will recover on its own
            try:
                self._recover()
                self.queue.requeue_unfinished()  # files a crash or a stop left waiting or half done
            finally:
                self.lock.release()
        self.reload()

    # --- stamps and state -------------------------------------------------------------------------

    def stamp_for(self, kind: str) -> Stamp:
        return Stamp(self.embedder.name, self.embedder.dimension, self.strategy.version, EXTRACTOR_VERSIONS[kind])

    def _recover(self) -> None:
        """Undo what a crash left half-done, and mark documents whose stamp no longer matches.

        Records first, then chunks, as everywhere: a `pending` document, and a visible one whose record
        claims chunks the store does not hold (a crash between a chunk delete and its record update), go
        back to `pending` with no content hash, so the next sync indexes them again; then every chunk that
        no visible record claims is deleted.
        """
        records = {r.doc_id: r for r in self.library.all()}
        counts = self.store.chunk_counts()
        changed: dict[str, DocRecord] = {}
        for rec in records.values():
            if rec.status == "indexed" and rec.stamp != self.stamp_for(rec.kind):
                rec.status = "stale"
                changed[rec.doc_id] = rec
            # (stale records of another model keep their chunks in that model's collection, not this one)
            here = rec.stamp is not None and (rec.stamp.model, rec.stamp.dimension) == (self.store.model, self.store.dimension)
            if rec.status in VISIBLE and here and counts.get(rec.doc_id, 0) != rec.chunks:
                rec.status, rec.chunks = "pending", 0
            if rec.status == "pending" and rec.content_hash:
                rec.content_hash = ""  # makes the next sync index it again
                changed[rec.doc_id] = rec
        if changed:
            self.library.put(*changed.values())
        for doc_id, rec in records.items():
            if rec.status not in VISIBLE:
                self._chunks_by_doc.pop(doc_id, None)
        # Chunks of documents the library does not show (pending work, a crash between writes): delete them.
        self.store.delete_docs([d for d in counts if d not in records or records[d].status not in VISIBLE])

    def reload(self) -> None:
        """Rebuild the search snapshot from the store (the truth) and the library's statuses."""
        visible = {r.doc_id for r in self.library.all() if r.status in VISIBLE}
        by_doc: dict[str, list[StoredChunk]] = {}
        for c in self.store.all_chunks(vectors=True):
            if c.doc_id in visible:
                by_doc.setdefault(c.doc_id, []).append(c)
        for chunks in by_doc.values():
            chunks.sort(key=lambda c: int(c.meta["chunk_index"]))
        self._chunks_by_doc = by_doc
        self._publish()

    def _publish(self) -> None:
        with self._publish_lock:
            records = {r.doc_id: r for r in self.library.all()}
            chunks = [c for d in sorted(self._chunks_by_doc) if d in records for c in self._chunks_by_doc[d]]
            docs = {d: (r.path, r.title, r.kind) for d, r in records.items()}
            # BM25 is rebuilt after every change; analysing text is most of that, so unchanged chunks
            # keep their tokens (keyed by id and text: a re-indexed document reuses its ids).
            tokens, cache = [], {}
            for c in chunks:
                key = (c.id, c.text)
                cache[key] = self._tokens.get(key) or analyze(c.text, c.meta.get("lang", ""))
                tokens.append(cache[key])
            self._tokens = cache
            self.snapshot = Snapshot.build(chunks, docs, self.settings, tokens)
            self._content_key = sorted((r.doc_id, r.content_hash, r.chunks) for r in records.values()
                                       if r.status in VISIBLE)
            self._languages = _languages(records.values())
            self._folder_uncovered = self._uncovered_language(self._languages) is not None

    def fusion_weights(self, settings: Settings | None = None, question: str = "") -> dict[str, float]:
        """The fusion weights for one question (`rag.search.question_weights`): the dense side weighs
        `dense_weight_unread` when the model does not read the question's language and the folder has
        text in it. A question whose language is unclear counts as written in the folder's main language."""
        s = settings or self.settings
        lang = question_language(question) if question else ""
        held = tuple(k for k, v in self._languages.items() if k != "unknown" and v > 0)
        return question_weights(s, lang or self._main_language(), self.embedder.languages, held)

    def _main_language(self) -> str:
        """The language most of the indexed text is in; the model's first language for an empty folder."""
        known = {k: v for k, v in self._languages.items() if k != "unknown"}
        return max(known, key=known.get) if known else (tuple(self.embedder.languages) or ("en",))[0]

    def _uncovered_language(self, languages: dict[str, int]) -> tuple[str, float] | None:
        """(language, share) when most of the indexed text is in a language the model does not cover."""
        known = {k: v for k, v in languages.items() if k != "unknown"}
        total = sum(known.values())
        if not total:
            return None
        main = max(known, key=known.get)
        share = known[main] / total
        return (main, share) if main not in self.embedder.languages and share >= 0.5 else None

    # --- indexing --------------------------------------------------------------------------------

    def scan(self) -> tuple[dict[str, Path], list[FileOutcome]]:
        """Supported files under the folder by relative path, and the skipped ones with their reason."""
        found: dict[str, Path] = {}
        skipped: list[FileOutcome] = []
        index_dir = self.settings.index_path.resolve()
        for root, dirs, files in os.walk(self.folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and Path(root, d).resolve() != index_dir)
            for f in sorted(files):
                p = Path(root, f)
                rel = p.relative_to(self.folder).as_posix()
                if f.startswith(".") or p.is_symlink():
                    continue
                if kind_of(f) is None:
                    skipped.append(FileOutcome(rel, "skipped", reason=f"unsupported type; supported: {', '.join(sorted(SUPPORTED))}"))
                    continue
                found[rel] = p
        return found, skipped

    def sync(self, progress: Progress | None = None) -> SyncReport:
        t0 = time.perf_counter()
        with self.lock:
            self._recover()
            files, skipped = self.scan()
            records = {r.path: r for r in self.library.all()}
            report = SyncReport(outcomes=list(skipped))
            for path, rec in records.items():
                if path not in files:
                    self._forget(rec.doc_id)
                    report.outcomes.append(FileOutcome(path, "removed", doc_id=rec.doc_id))
            todo = []
            for rel, p in files.items():
                rec = records.get(rel)
                if rec and self._unchanged(rec, p):
                    report.outcomes.append(FileOutcome(rel, "unchanged", rec.chunks, rec.reason, rec.doc_id))
                else:
                    todo.append(rel)
            self._index(todo, report, progress)
            if report.count("removed") and not todo:
                self._publish()  # (_index publishes whatever it wrote; an unchanged folder rebuilds nothing)
            if not any(r.status == "stale" and r.stamp and r.stamp.model != self.embedder.name for r in self.library.all()):
                self.store.drop_other_collections()
        self.calibrated()  # now, so the first question after a change does not wait for it
        report.seconds = time.perf_counter() - t0
        return report

    def _unchanged(self, rec: DocRecord, p: Path) -> bool:
        try:
            st = p.stat()
        except OSError:
            return False
        if rec.status == "indexed" and rec.stamp == self.stamp_for(rec.kind) or rec.status == "excluded" or \
                rec.status == "failed" and rec.stamp and rec.stamp.extractor == EXTRACTOR_VERSIONS[rec.kind]:
            if rec.size == st.st_size and rec.content_hash:
                # Same size and modification time: unchanged without reading it (as git does); else compare
                # contents, so a touched but identical file is not indexed again (nor read next time).
                if rec.mtime_ns == st.st_mtime_ns:
                    return True
                if _hash(p.read_bytes()) == rec.content_hash:
                    rec.mtime_ns = st.st_mtime_ns
                    self.library.put(rec)
                    return True
        return False

    def index_files(self, rel_paths: Sequence[str], progress: Progress | None = None) -> SyncReport:
        """Index these files (relative to the folder) now, whatever their state: upload, re-index, retry."""
        t0 = time.perf_counter()
        report = SyncReport()
        with self.lock:
            self._index(list(rel_paths), report, progress)
        self.calibrated()
        report.seconds = time.perf_counter() - t0
        return report

    def reindex(self, doc_id: str) -> SyncReport:
        rec = self.library.get(doc_id)
        if rec is None:
            raise KeyError(f"no document {doc_id!r} in the library")
        return self.index_files([rec.path])

    def reindex_stale(self, progress: Progress | None = None) -> SyncReport:
        return self.index_files([r.path for r in self.library.all() if r.status == "stale"], progress)

    def remove(self, doc_id: str, delete_file: bool = False) -> None:
        """Remove a document's chunks from both indexes; optionally the file too. A file left in the folder
        stays out of the index (status `excluded`) until it changes or is re-indexed, so the folder watcher
        does not bring it straight back."""
        with self.lock:
            rec = self.library.get(doc_id)
            if delete_file and rec:
                # The file first: a crash right after it leaves a record without its file, which the next sync
                # removes; the other way round, the next sync would index again the file the person deleted.
                (self.folder / rec.path).unlink(missing_ok=True)
            self._forget(doc_id)
            if rec is not None and not delete_file and (self.folder / rec.path).is_file():
                rec.status, rec.reason, rec.chunks = "excluded", "removed from the index; the file is still in the folder", 0
                self.library.put(rec)
            self._publish()
        if rec is not None:
            self.queue.forget(rec.path)

    def _forget(self, doc_id: str) -> None:
        # The record first: a crash before the chunks go leaves chunks no record claims, which start-up deletes.
        self.library.remove(doc_id)
        self._chunks_by_doc.pop(doc_id, None)
        self.store.delete_doc(doc_id)

    def _index(self, rel_paths: list[str], report: SyncReport, progress: Progress | None) -> None:
        total = len(rel_paths)
        group: list[tuple[DocRecord, list[Chunk]]] = []
        for i, rel in enumerate(rel_paths):
            if progress:
                progress(i, total, rel)
            rec, chunks = self._prepare(rel)
            if rec.status == "failed":
                self._write_failed(rec)
                report.outcomes.append(FileOutcome(rel, "failed", reason=rec.reason, doc_id=rec.doc_id))
                continue
            group.append((rec, chunks))
            if sum(len(c) for _, c in group) >= EMBED_GROUP:
                self._write_group(group, report)
                group = []
        if group:
            self._write_group(group, report)
        if progress:
            progress(total, total, "")
        if rel_paths:
            self._publish()

    def _prepare(self, rel: str) -> tuple[DocRecord, list[Chunk]]:
        kind = kind_of(rel) or "txt"
        doc_id = doc_id_for(rel)
        rec = DocRecord(doc_id=doc_id, path=rel, kind=kind, status="pending", stamp=self.stamp_for(kind))
        try:
            path = self.folder / rel
            rec.mtime_ns = path.stat().st_mtime_ns  # before reading: a write during the read shows next time
            data = path.read_bytes()
            rec.size, rec.content_hash = len(data), _hash(data)
            doc = extract_bytes(data, rel, max_chars=self.settings.max_chars, max_pages=self.settings.max_pages)
            chunks = chunk_document(doc, doc_id, self.strategy)
            if not chunks:
                raise ExtractionError("no text left to index after extraction")
            self._describe(rec, doc, chunks)
            return rec, chunks
        except ExtractionError as exc:
            rec.status, rec.reason = "failed", exc.reason
        except OSError as exc:
            rec.status, rec.reason = "failed", f"cannot read the file: {exc.strerror or exc}"
        except Exception as exc:  # one broken file never breaks the folder: it fails with its reason
            rec.status, rec.reason = "failed", f"could not be indexed ({type(exc).__name__}: {exc})"
        return rec, []

    def _describe(self, rec: DocRecord, doc: Extracted, chunks: list[Chunk]) -> None:
        texts = [c.text for c in chunks]
        pieces = self.embedder.count_wordpieces(texts)
        rec.title, rec.pages, rec.chars, rec.empty_pages = doc.title, doc.pages, len(doc.text), doc.empty_pages
        rec.truncated = sum(1 for n in pieces if n > self.embedder.max_tokens)
        rec.header_share = header_share(texts, [c.content for c in chunks])
        rec.tokens = sum(count_tokens(t) for t in texts)
        rec.lang = detect_language(doc.text)
        rec.warnings = list(doc.warnings)
        if rec.truncated:
            rec.warnings.append(f"{rec.truncated} chunk(s) longer than the encoder window of "
                                f"{self.embedder.max_tokens} word-pieces: their ends are not embedded")

    def _write_failed(self, rec: DocRecord) -> None:
        # The record first (`failed` is not visible): a crash before the chunks go leaves chunks that start-up deletes.
        rec.chunks = 0
        self.library.put(rec)
        self._chunks_by_doc.pop(rec.doc_id, None)
        self.store.delete_doc(rec.doc_id)

    def _write_group(self, group: list[tuple[DocRecord, list[Chunk]]], report: SyncReport,
                     vectors: np.ndarray | None = None) -> None:
        """Embed (unless `vectors` are given) and write a group of prepared documents; records last."""
        texts = [c.text for _, chunks in group for c in chunks]
        try:
            vectors = self.embedder.embed_batch(texts) if vectors is None else vectors
        except Exception as exc:
            for rec, _ in group:
                rec.status, rec.reason = "failed", f"embedding failed ({type(exc).__name__}: {exc})"
                self._write_failed(rec)
                report.outcomes.append(FileOutcome(rec.path, "failed", reason=rec.reason, doc_id=rec.doc_id))
            return
        report.embedded += len(texts)
        recs = [rec for rec, _ in group]
        chunks = [c for _, cs in group for c in cs]
        extras = [self._chunk_extra(rec) for rec, cs in group for _ in cs]
        # pending first: a crash from here on leaves records that start-up knows to undo.
        self.library.put(*recs)
        self.store.delete_docs([r.doc_id for r in recs])
        self.store.add(chunks, vectors, extras)  # one write for the group: Chroma is fastest in bulk
        at, now = 0, time.time()
        for rec, cs in group:
            rec.status, rec.reason, rec.chunks, rec.indexed_at = "indexed", "", len(cs), now
            self._chunks_by_doc[rec.doc_id] = [
                StoredChunk(c.id, c.doc_id, c.text, chunk_metadata(c, x), v)
                for c, x, v in zip(cs, extras[at:at + len(cs)], vectors[at:at + len(cs)])]
            at += len(cs)
            report.outcomes.append(FileOutcome(rec.path, "indexed", len(cs), doc_id=rec.doc_id))
        self.library.put(*recs)  # chunk counts and stamps land together, after all chunks are written

    @staticmethod
    def _chunk_extra(rec: DocRecord) -> dict:
        return {"lang": rec.lang, "model": rec.stamp.model, "dimension": rec.stamp.dimension,
                "chunker": rec.stamp.chunker, "extractor": rec.stamp.extractor}

    # --- the indexing queue (rag.queue) -----------------------------------------------------------------

    def start(self, watch: bool | None = None) -> None:
        """Start indexing in the background: the queue's worker, a rescan of the folder, and (with `watch`,
        by default the `watch_folder` setting) the folder watcher. The app calls it once per engine, so
        once per process."""
        self.queue.start()
        # A process that ends while the worker embeds would take torch's threads down mid-work (an abort,
        # not an exit): stop it first. The files it held are queued again at the next start.
        atexit.register(self.stop)
        self.rescan(source="folder")
        if (self.settings.watch_folder if watch is None else watch) and self.watcher is None:
            self.watcher = FolderWatcher(self.folder, lambda: self.rescan(source="folder"),
                                         ignore=[self.settings.index_path])
            self.watcher.start()

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        self.queue.stop()

    def enqueue(self, rel_paths: Sequence[str], source: str = "") -> list[QueueItem]:
        """Put files (relative to the folder) on the indexing queue; the worker indexes them."""
        return self.queue.put(list(rel_paths), source)

    def rescan(self, source: str = "folder") -> list[QueueItem]:
        """Queue what changed in the folder since it was indexed: new and changed files (by size and
        modification time, then content), and files that are gone. Files already queued or running are
        left alone, and so are files the person cancelled, until they change. Cheap when nothing changed:
        one walk of the folder, no file read."""
        files, _ = self.scan()
        records = {r.path: r for r in self.library.all()}
        rows = {i.path: i for i in self.queue.items()}
        active = {p for p, i in rows.items() if i.active}

        def held(rel: str, p: Path) -> bool:
            # Queued or running already; or cancelled by the person and not changed since.
            item = rows.get(rel)
            return item is not None and (item.active or item.state == CANCELLED and _mtime(p) <= item.updated_at)

        todo = [rel for rel, p in files.items()
                if not held(rel, p) and not (rel in records and self._unchanged(records[rel], p))]
        gone = [path for path in records if path not in files and path not in active]
        return self.queue.put(todo + gone, source) if todo or gone else []

    def indexing(self) -> int:
        """How many files are waiting to be indexed or being indexed."""
        return self.queue.pending()

    def _index_queued(self, items: list[QueueItem], queue: IndexQueue) -> None:
        """The worker's step: extract, embed and write queued files in groups, reporting each file's state.

        Extracting and embedding happen outside the writer lock (they only read); the lock is held for each
        group's write, so an upload or a deletion never waits for a long embedding. A file cancelled while
        it is embedded stops before anything of it is written; the rest of its group goes on."""
        group: list[tuple[DocRecord, list[Chunk], QueueItem]] = []
        for item in items:
            if queue.stopping():
                raise Stopped()
            if queue.is_cancelled(item):
                queue.save(item, CANCELLED, cancel=False)
                continue
            if not (self.folder / item.path).is_file():
                self._queued_removal(item)
                continue
            queue.save(item, EXTRACTING)
            rec, chunks = self._prepare(item.path)
            if rec.status == "failed":
                with self.lock:
                    self._write_failed(rec)
                queue.save(item, FAILED, reason=rec.reason, cancel=False)
                continue
            queue.save(item, EMBEDDING, total=len(chunks), done=0)
            group.append((rec, chunks, item))
            if sum(len(c) for _, c, _ in group) >= EMBED_GROUP:
                self._write_queued(group, queue)
                group = []
        if group:
            self._write_queued(group, queue)

    def _write_queued(self, group: list[tuple[DocRecord, list[Chunk], QueueItem]], queue: IndexQueue) -> None:
        """Embed a group in slices (reporting each file's progress, dropping a file cancelled meanwhile),
        then write what is left under the writer lock and publish it."""
        texts = [c.text for _, chunks, _ in group for c in chunks]
        owner = [i for i, (_, chunks, _) in enumerate(group) for _ in chunks]  # text j belongs to file owner[j]
        first = {i: owner.index(i) for i in set(owner)}
        vectors: dict[int, np.ndarray] = {}
        dropped: set[int] = set()
        # One model batch at a time: the model serves one caller at a time, so a question asked meanwhile
        # waits for at most one batch of 32 (measured: slices of 256 made questions wait minutes on a busy machine).
        step = max(self.settings.embed_batch_size, 1)
        for at in range(0, len(texts), step):
            if queue.stopping():
                raise Stopped()
            end = min(at + step, len(texts))
            here = sorted({owner[j] for j in range(at, end)} - dropped)
            dropped |= {i for i in here if queue.is_cancelled(group[i][2])}
            keep = [j for j in range(at, end) if owner[j] not in dropped]
            if keep:
                vectors.update(zip(keep, self.embedder.embed_batch([texts[j] for j in keep])))
            for i in here:
                if i not in dropped:
                    queue.save(group[i][2], done=min(len(group[i][1]), end - first[i]))
        # A cancel that came while the last slice was embedded still stops the file before it is written.
        dropped |= {i for i in range(len(group)) if i not in dropped and queue.is_cancelled(group[i][2])}
        for i in sorted(dropped):
            queue.save(group[i][2], CANCELLED, done=0, cancel=False)
        kept = [i for i in range(len(group)) if i not in dropped]
        if not kept:
            return
        report = SyncReport()
        rows = np.stack([vectors[j] for j in range(len(texts)) if owner[j] not in dropped])
        with self.lock:
            self._write_group([(group[i][0], group[i][1]) for i in kept], report, rows)
            self._publish()
        outcome = {o.path: o for o in report.outcomes}
        for i in kept:
            item, o = group[i][2], outcome.get(group[i][2].path)
            if o is not None and o.status == "indexed":
                queue.save(item, INDEXED, chunks=o.chunks, done=o.chunks, runs=item.runs + 1, reason="", cancel=False)
            else:
                queue.save(item, FAILED, reason=o.reason if o else "not written")

    def _queued_removal(self, item: QueueItem) -> None:
        """A queued file that is no longer in the folder: its document leaves both indexes."""
        rec = next((r for r in self.library.all() if r.path == item.path), None)
        if rec is not None:
            with self.lock:
                self._forget(rec.doc_id)
                self._publish()
        self.queue.save(item, REMOVED)

    def _after_queue(self) -> None:
        """The queue emptied: calibrate now, so the next question does not wait for it."""
        self.calibrated()

    # --- uploads -----------------------------------------------------------------------------------

    def save_upload(self, name: str, data: bytes, on_conflict: str = "ask") -> str:
        """Save uploaded bytes into the folder under a safe name; returns the relative path.

        The same name with the same bytes is a no-op. Another file under that name (up to case and
        Unicode normalisation) is never overwritten silently: `on_conflict` is "ask" (raise
        `UploadError`, so the UI can ask), "replace", or "rename" (keep both: `report-2.pdf`).
        """
        if on_conflict not in ("ask", "replace", "rename"):
            raise ValueError(f"on_conflict must be one of 'ask', 'replace', 'rename', got {on_conflict!r}")
        limit = self.settings.max_upload_mb * 1024 * 1024
        if len(data) > limit:
            raise UploadError(f"{name}: {len(data) / 1048576:.1f} MB is over the upload limit of {self.settings.max_upload_mb} MB")
        clean = safe_name(name)
        if kind_of(clean) is None:
            raise UploadError(f"{clean}: unsupported type; supported: {', '.join(sorted(SUPPORTED))}")
        target = (self.folder / clean).resolve()
        if target.parent != self.folder.resolve():
            raise UploadError(f"{name}: not a plain file name")
        with self.lock:
            existing = _existing_variant(self.folder, clean)
            if existing is not None:
                if existing.read_bytes() == data:
                    return existing.name
                if on_conflict == "ask":
                    raise UploadConflict(f"a different file named {existing.name} is already in the folder; "
                                         f"replace it, or keep both", existing.name)
                if on_conflict == "replace":
                    target = existing
                else:
                    stem, ext = os.path.splitext(clean)
                    n = 2
                    while _existing_variant(self.folder, f"{stem}-{n}{ext}") is not None:
                        n += 1
                    target = self.folder.resolve() / f"{stem}-{n}{ext}"
            tmp = target.with_name(f".{target.name}.part")
            tmp.write_bytes(data)
            os.replace(tmp, target)  # never a half-written file under the real name
        return target.name

    # --- asking -------------------------------------------------------------------------------------

    def search(self, question: str, doc_ids: Sequence[str] | None = None, query: str | None = None,
               history: Sequence[str] | None = None, settings: Settings | None = None) -> SearchResult:
        """Hybrid retrieval. `history`: the conversation's previous searched queries (each turn's
        `result.query`), oldest first; a follow-up is then searched in its standalone form. `settings`:
        one caller's query-time settings (candidates, answer mode, LLM server) for this search only; the
        index-time ones (model, chunker, store) are the engine's."""
        self.searches += 1
        settings = settings or self.settings
        if query is None and history:
            query = self.standalone_query(question, history, settings)
        snapshot = self.snapshot  # one reference: a publish during this search cannot mix two states
        return hybrid_search(question, embedder=self.embedder, snapshot=snapshot, settings=settings,
                             doc_ids=doc_ids, query=query, weights=self.fusion_weights(settings, question))

    def standalone_query(self, question: str, history: Sequence[str], settings: Settings | None = None) -> str:
        """What to search for `question` after `history`: the question itself unless it is a follow-up
        (`rag.followup.is_followup`); then the LLM's standalone rewrite when an LLM is configured and
        answers, else the previous query joined in front of it."""
        joined = followup_query(question, history)
        if joined is None:
            return question
        client = llm_client(settings or self.settings)
        if client is not None:
            try:
                rewritten = rewrite_followup(client, question, [h for h in history if h and h.strip()])
                if rewritten:
                    return rewritten
            except LLMError:
                pass  # the answer step reaches the same server and says why in its note
        return joined

    # --- the threshold -------------------------------------------------------------------------------

    def calibration_fingerprint(self) -> str:
        """What the calibration depends on: the model, the chunker, the search and gate settings, the shipped
        question sets and the indexed content. The same fingerprint means the stored calibration holds."""
        s = self.settings
        key = [self.embedder.name, self.embedder.dimension, self.strategy.version, s.candidates, s.rrf_k, s.bm25_k1,
               s.bm25_b, s.fusion, s.dense_weight, s.dense_weight_unread, s.bm25_weight, tuple(self.embedder.languages),
               sorted(self._languages), self._main_language(), s.min_support, s.close_support, s.calibration_budget,
               s.calibration_floor, s.calibration_ceiling, questions_digest(), self._content_key]
        return hashlib.sha1(repr(key).encode("utf-8")).hexdigest()

    def calibrated(self, stale_ok: bool = False) -> Calibration | None:
        """The folder's calibration, computed again when what it depends on changed (and only then).
        None while nothing is indexed: there is nothing to calibrate on. `stale_ok`: return the last one
        without checking (while the folder is being indexed)."""
        if not self.snapshot.chunks:
            return None
        if stale_ok and self.calibration is not None:
            return self.calibration
        fingerprint = self.calibration_fingerprint()
        if self.calibration is not None and self.calibration.fingerprint == fingerprint:
            return self.calibration
        with self._calibration_lock:
            if self.calibration is None or self.calibration.fingerprint != fingerprint:
                s = self.settings
                snapshot = self.snapshot

                def search(question: str, vector: np.ndarray) -> SearchResult:
                    return hybrid_search(question, embedder=self.embedder, snapshot=snapshot, settings=s,
                                         weights=self.fusion_weights(s, question), vector=vector)

                calibration = calibrate(search, self._calibration_vectors(), fingerprint=fingerprint,
                                        min_support=s.min_support, close_support=s.close_support,
                                        budget=s.calibration_budget,
                                        floor=s.calibration_floor, ceiling=s.calibration_ceiling)
                self.calibrations += 1
                try:
                    calibration.save(self._calibration_path)
                except OSError:
                    pass  # a read-only index still answers; it calibrates again next time
                self.calibration = calibration
        return self.calibration

    def _calibration_vectors(self) -> dict[str, np.ndarray]:
        """The unrelated questions' embeddings: computed once per process (they depend only on the model)."""
        if self._unrelated_vectors is None:
            self._unrelated_vectors = {lang: self.embedder.embed_batch([q for _, q in unrelated_questions(lang)])
                                       for lang in CALIBRATED_LANGUAGES}
        return self._unrelated_vectors

    def threshold_choice(self, question: str, given: float | None = None, lang: str | None = None) -> ThresholdChoice:
        """The threshold for `question`, first of: `given` (the slider moved, `--threshold`); the person's
        `language_thresholds` for its language; the `threshold` setting; the folder's calibration for its
        language; the default (nothing indexed yet). `lang`: the question's language when known (else
        detected)."""
        lang = question_language(question) if lang is None else lang
        s = self.settings
        # While files are being indexed the folder changes every few seconds: keep the last calibration
        # rather than recompute it for each question; it is recomputed once the queue empties.
        calibration = self.calibrated(stale_ok=self.queue.busy())
        calibrated = calibration.threshold(lang) if calibration else None
        rule = calibration.rule(lang, s.min_support, s.close_support) if calibration else SupportRule(s.min_support)
        by_lang = s.thresholds_by_language
        if given is not None:
            return ThresholdChoice(given, "given", f"set by you: {given:.3f}", calibrated, rule)
        if lang in by_lang:
            return ThresholdChoice(by_lang[lang], "language_thresholds",
                                   f"set in the settings for this language (language_thresholds): {by_lang[lang]:.3f}",
                                   calibrated, rule)
        if s.threshold is not None:
            return ThresholdChoice(s.threshold, "threshold", f"set in the settings (threshold): {s.threshold:.3f}",
                                   calibrated, rule)
        if calibrated is not None:
            return ThresholdChoice(calibrated, "calibrated", calibration.describe(lang), calibrated, rule)
        return ThresholdChoice(DEFAULT_THRESHOLD, "default",
                               f"default {DEFAULT_THRESHOLD:.3f}: nothing is indexed to calibrate on", None, rule)

    def threshold_for(self, question: str) -> float:
        """The threshold a question gets when nobody gives one (`threshold_choice`)."""
        return self.threshold_choice(question).value

    def generator(self) -> Generator:
        return make_generator(self.settings, self.embedder)

    def answer(self, gated: Gated, generator: Generator | None = None, standalone: str | None = None,
               on_text: Callable[[str], None] | None = None) -> Answer:
        """`standalone`: the searched query (`result.query`) when it differs from the question asked."""
        return run_answer(gated, generator or self.generator(), standalone=standalone, on_text=on_text)

    def ask(self, question: str, threshold: float | None = None, max_chunks: int | None = None,
            doc_ids: Sequence[str] | None = None, generator: Generator | None = None,
            history: Sequence[str] | None = None, on_text: Callable[[str], None] | None = None) -> Turn:
        result = self.search(question, doc_ids=doc_ids, history=history)
        choice = self.threshold_choice(question, threshold)
        gated = gate(result, choice.value, self.settings.max_chunks if max_chunks is None else max_chunks, choice.rule)
        return Turn(question, result, gated, self.answer(gated, generator, standalone=result.query, on_text=on_text),
                    choice)

    # --- library view -------------------------------------------------------------------------------

    def documents(self) -> list[DocRecord]:
        return self.library.all()

    def document(self, path: str) -> DocRecord:
        """The library's record of the document at `path` (relative to the folder, as citations name it).
        Anything else, a path with `..`, an absolute path, a file the library does not hold, is refused:
        the viewer serves only documents of this folder."""
        rec = next((r for r in self.library.all() if r.path == path), None) if isinstance(path, str) else None
        if rec is None or rec.status not in VISIBLE:
            raise ViewerError(f"{path!r} is not a document of this folder's index; nothing is shown")
        return rec

    def locate(self, path: str, start: int, end: int) -> Located:
        """Where characters [start, end) of a document are, to show them marked (`rag.viewer`)."""
        return locate(self.folder, self.document(path), start, end, max_chars=self.settings.max_chars,
                      max_pages=self.settings.max_pages)

    def document_bytes(self, path: str) -> bytes:
        """The bytes of a document of this folder (read-only; `document()` decides what may be read)."""
        return (self.folder / self.document(path).path).read_bytes()

    def counts(self) -> LibraryStats:
        """What the sidebar shows on every run, without reading every record or walking the store's folder:
        counts per status from SQLite, chunks and languages as of the last publish. `size_on_disk` is None."""
        by = self.library.status_counts()
        return LibraryStats(documents=sum(by.values()), indexed=by.get("indexed", 0), failed=by.get("failed", 0),
                            stale=by.get("stale", 0), pending=by.get("pending", 0), chunks=len(self.snapshot.chunks),
                            size_on_disk=None, model=self.embedder.name, dimension=self.embedder.dimension,
                            languages=dict(self._languages))

    def stats(self) -> LibraryStats:
        docs = self.library.all()
        langs = _languages(docs)
        by = lambda s: sum(1 for r in docs if r.status == s)  # noqa: E731
        return LibraryStats(documents=len(docs), indexed=by("indexed"), failed=by("failed"), stale=by("stale"),
                            pending=by("pending"), chunks=len(self.snapshot.chunks),
                            size_on_disk=self.store.size_on_disk(), model=self.embedder.name,
                            dimension=self.embedder.dimension, languages=langs)

    def language_warning(self, stats: LibraryStats | None = None) -> str | None:
        """One plain sentence when most of the folder is in a language the embedding model does not cover."""
        uncovered = self._uncovered_language((stats or self.stats()).languages)
        if uncovered is None:
            return None
        lang, share = uncovered
        return (f"Most of this folder ({share:.0%}) is in {LANGUAGE_NAMES.get(lang, lang)}, which the embedding model "
                f"{self.embedder.name} does not cover ({', '.join(self.embedder.languages)}): its cosine distances "
                f"say less there, so the threshold may let unrelated questions through and refuse good ones; "
                f"calibrate the threshold on this folder's own questions, or choose a multilingual model in the "
                f"settings.")

    def close(self) -> None:
        self.stop()
        self.library.close()


LANGUAGE_NAMES = {"en": "English", "pt": "Portuguese"}


def _languages(records: Iterable[DocRecord]) -> dict[str, int]:
    """Characters of searchable text per detected language ("unknown" when detection could not tell)."""
    out: dict[str, int] = {}
    for r in records:
        if r.status in VISIBLE:
            out[r.lang or "unknown"] = out.get(r.lang or "unknown", 0) + r.chars
    return out


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _existing_variant(folder: Path, name: str) -> Path | None:
    """A file already in the folder whose name equals `name` up to case and Unicode normalisation."""
    key = unicodedata.normalize("NFC", name).casefold()
    for p in folder.iterdir():
        if p.is_file() and unicodedata.normalize("NFC", p.name).casefold() == key:
            return p
    return None

"""Indexer: keeps the index in line with the folder; the only code that writes to the store and the library.

An `Indexer` owns the Chroma store, the library of document records, the writer lock and the indexing
queue. It scans the folder, extracts, chunks, embeds and writes documents (in groups: record first as
`pending`, then chunks, then the record as `indexed`), records failures with their reason, removes
documents (record first, then chunks), undoes at start-up what a crash left half done, and runs the
queue's background indexing step (and the folder watcher). After each write it publishes the search
snapshot. Writes take the writer lock (one writer at a time, across processes).

It does not search, choose thresholds, calibrate or answer: that is `rag.engine.Engine`, which reads the
snapshot published here; after a change it calls `after_change` (the engine calibrates there) and knows
nothing else of the engine. Uploads are saved into the folder by `rag.indexing.uploads`, then indexed here.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from rag.indexing import heap
from rag.indexing.chunk import Chunk, Strategy, chunk_document
from rag.indexing.embed import Embedder, count_tokens, header_share
from rag.reading.extract import SUPPORTED, extract_bytes, kind_of, version_of
from rag.reading.document import ExtractionError, Extracted
from rag.text.lexical import analyze, detect_language
from rag.indexing.multilingual import MultilingualEmbedder
from rag.indexing.library import VISIBLE, DocRecord, Library, Stamp, WriterLock
from rag.indexing.queue import (CANCELLED, EMBEDDING, EXTRACTING, FAILED, INDEXED, REMOVED, FolderWatcher, IndexQueue,
                       QueueItem, Stopped)
from rag.indexing.snapshot import Snapshot, pool_depth
from rag.indexing.served import StoredRows, StoredVectors
from rag.indexing.vectors import Graphs
from rag.settings import Settings
from rag.indexing.store import PAGE, ChunkStore, StoreError, StoredChunk, chunk_metadata

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


@dataclass
class _Held:
    """One visible document's chunks as written (texts and metadata; their `vector`/`side` left None) and
    their vectors, one matrix per side, in chunk order. After each publish the matrices are views into the
    snapshot's (`Indexer._publish`), so the process holds each vector once however often it publishes.

    When search reads the store (rag.indexing.served), only each chunk's id and language are held (`_light`), no
    vectors, and the chunks' BM25 `tokens`, made once from the text as it was written or read."""

    chunks: list[StoredChunk]
    vectors: np.ndarray | None
    sides: np.ndarray | None = None
    tokens: list[list[str]] | None = None


@functools.lru_cache(maxsize=None)
def _lang_meta(lang: str) -> dict:
    return {"lang": lang}  # one dict per language, shared by every light chunk: never written to


def _light(c: StoredChunk) -> StoredChunk:
    """A chunk reduced to what a snapshot that reads the store holds of it (rag.indexing.served)."""
    return StoredChunk(c.id, c.doc_id, "", _lang_meta(c.meta.get("lang", "")))


def doc_id_for(rel_path: str) -> str:
    return hashlib.sha1(rel_path.encode("utf-8")).hexdigest()[:16]


class Indexer:
    """The writing side of one folder's index. `after_change` runs after a sync, an `index_files` and each
    time the queue empties (outside the writer lock); `group`: chunks embedded and written together."""

    def __init__(self, settings: Settings, embedder: Embedder, strategy: Strategy,
                 after_change: Callable[[], None] = lambda: None, group: int = EMBED_GROUP,
                 side: MultilingualEmbedder | None = None,
                 graph_probes: Callable[[str, Sequence], np.ndarray | None] | None = None):
        """`graph_probes`: (side, the snapshot's passages) -> question vectors each new graph is checked with
        (rag.indexing.vectors.Graphs)."""
        self.settings = settings
        self.folder = Path(settings.folder)
        self.embedder = embedder
        self.strategy = strategy
        self.after_change = after_change
        self.group = group
        self.store = ChunkStore(settings, embedder.name, embedder.dimension)
        self.served = settings.server.search_reads == "store"  # search reads the store, not the snapshot (rag.indexing.served)
        # The multilingual side (rag.indexing.multilingual): its vectors in a collection of their own, under the same
        # chunk ids, written and deleted with the chunks. A chunk without one (the side was off when it was
        # indexed, or its model changed) gets it when the snapshot is rebuilt (`reload`).
        self.side, self.side_store, self.side_error = side, None, ""
        if side is not None:
            try:
                self.side_store = ChunkStore(settings, side.name, side.dimension, beside=self.store)
            except StoreError as exc:  # an index that cannot take a new collection (read-only): search without it
                self.side, self.side_error = None, f"the multilingual side is off: {exc}"
        self.library = Library(settings.index_path / "library.sqlite")
        self.lock = WriterLock(settings.index_path / "writer.lock")
        # Each visible document's chunks as written, with their vectors: what `_publish` builds the snapshot from.
        self._chunks_by_doc: dict[str, _Held] = {}
        self._tokens: dict[tuple[str, str], list[str]] = {}  # BM25 tokens of published chunks
        self._publish_lock = threading.Lock()
        # Each dense side's graph in a large folder (rag.indexing.vectors), saved in the index folder and read at start.
        # (None when search reads the store: its own index is the graph.)
        self.graphs = None if self.served else Graphs(
            settings.tuning.graph_above, folder=settings.index_path / "graphs",
            models={"dense": embedder.name, **({"multilingual": self.side.name} if self.side else {})},
            probes=graph_probes, depth=pool_depth(settings))
        if self.graphs is not None:
            self.graphs.load()
        # What the calibration depends on in the folder, as of the last publish (the only time it changes):
        # so that choosing a question's threshold reads no library record.
        self.content_key: list[tuple[str, str, int]] = []
        self.languages: dict[str, int] = {}  # characters of searchable text per language, as of the last publish
        self.queue = IndexQueue(self.library, self._index_queued, after_idle=self._idle)
        self.watcher: FolderWatcher | None = None
        if self.lock.acquire(timeout=0):  # another process writing will recover on its own
            try:
                self._recover()
                self.queue.requeue_unfinished()  # files a crash or a stop left waiting or half done
            finally:
                self.lock.release()
        self.reload()

    def _idle(self) -> None:
        """The queue has nothing left to index: let go of the store until the next write, then tell the engine."""
        self.store.release()
        self.after_change()

    # --- stamps, recovery and the published snapshot -------------------------------------------------

    def stamp_for(self, kind: str) -> Stamp:
        return Stamp(self.embedder.name, self.embedder.dimension, self.strategy.version, version_of(kind))

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
        if self.side_store is not None:
            side = self.side_store.chunk_counts()
            self.side_store.delete_docs([d for d in side if d not in records or records[d].status not in VISIBLE])

    def reload(self) -> None:
        """Rebuild the search snapshot from the store (the truth) and the library's statuses."""
        visible = {r.doc_id for r in self.library.all() if r.status in VISIBLE}
        by_doc: dict[str, list[tuple[int, StoredChunk, list[str] | None]]] = {}
        for c in self.store.all_chunks(vectors=not self.served):
            if c.doc_id in visible:
                at, tokens = int(c.meta["chunk_index"]), None
                if self.served:  # the text is read once, for BM25, and left in the store
                    c, tokens = _light(c), analyze(c.text, c.meta.get("lang", ""))
                by_doc.setdefault(c.doc_id, []).append((at, c, tokens))
        held = {}
        for doc_id, rows in by_doc.items():
            rows.sort(key=lambda r: r[0])
            chunks = [c for _, c, _ in rows]
            if self.served:
                held[doc_id] = _Held(chunks, None, tokens=[t for _, _, t in rows])
            else:
                held[doc_id] = _Held([dataclasses.replace(c, vector=None) for c in chunks],
                                     np.stack([c.vector for c in chunks]))
        del by_doc
        if self.side_store is not None:
            self.store.release()  # one collection's HNSW index in memory at a time (Chroma loads it to read)
            self._with_side(held)
        self._chunks_by_doc = held
        self._publish()
        self.store.release()  # search reads the snapshot, not Chroma: its HNSW indexes need not stay in memory

    def _with_side(self, held: dict[str, _Held]) -> None:
        """Each document's multilingual vectors; the ones the side store lacks are embedded now and written
        when no other process is writing (else they are embedded again at its next start). When search reads
        the store, nothing is held: the missing ones' texts are read back a page at a time, embedded, written."""
        if self.served:
            stored_ids = self.side_store.ids()
            missing = [c for h in held.values() for c in h.chunks if c.id not in stored_ids]
            for at in range(0, len(missing), PAGE):
                texts = self.store.chunks([c.id for c in missing[at:at + PAGE]])
                part = [c for c in missing[at:at + PAGE] if c.id in texts]
                if part:
                    self._write_side(part, self.side.embed_batch([texts[c.id].text for c in part]))
            return
        stored = self.side_store.all_vectors()
        missing = [c for h in held.values() for c in h.chunks if c.id not in stored]
        if missing:
            vectors = self.side.embed_batch([c.text for c in missing])
            stored.update(zip((c.id for c in missing), vectors))
            self._write_side(missing, vectors)
        for h in held.values():
            h.sides = np.stack([stored.pop(c.id) for c in h.chunks])

    def _write_side(self, chunks: list[StoredChunk], vectors: np.ndarray) -> None:
        if self.lock.acquire(timeout=0):
            try:
                self.side_store.add_vectors([c.id for c in chunks], [c.doc_id for c in chunks], vectors)
            except StoreError:
                pass  # a read-only index: searched with the vectors made here, made again next start
            finally:
                self.lock.release()

    # Publishing lives here, beside the writes, rather than in the engine that only reads its result: each
    # write ends by publishing under the writer lock, so a document's chunks reach searches only once its
    # record says indexed, and nothing outside this class has to keep `_chunks_by_doc` in step with the store.
    # The snapshot (and what the calibration reads) is replaced whole: a search holds one reference to it.
    def _publish(self) -> None:
        with self._publish_lock:
            records = {r.doc_id: r for r in self.library.all()}
            shown = [d for d in sorted(self._chunks_by_doc) if d in records]
            held = [self._chunks_by_doc[d] for d in shown]
            chunks = [c for h in held for c in h.chunks]
            docs = {d: (r.path, r.title, r.kind) for d, r in records.items()}
            versions = {d: r.content_hash for d, r in records.items()}
            if self.served:
                self._publish_served(held, chunks, docs, versions, records)
                return
            # BM25 is rebuilt after every change; analysing text is most of that, so unchanged chunks
            # keep their tokens (keyed by id and text: a re-indexed document reuses its ids).
            tokens, cache = [], {}
            for c in chunks:
                key = (c.id, c.text)
                cache[key] = self._tokens.get(key) or analyze(c.text, c.meta.get("lang", ""))
                tokens.append(cache[key])
            self._tokens = cache
            vectors = (np.concatenate([h.vectors for h in held]) if held
                       else np.zeros((0, self.embedder.dimension), dtype=np.float32))
            sided = bool(held) and all(h.sides is not None for h in held)
            sides = np.concatenate([h.sides for h in held]) if sided else None
            at = 0
            for h in held:  # each document's vectors now a view of the new matrices: the old ones can go
                h.vectors = vectors[at:at + len(h.chunks)]
                if sides is not None:
                    h.sides = sides[at:at + len(h.chunks)]
                at += len(h.chunks)
            self.snapshot = Snapshot.build(chunks, docs, self.settings, tokens, versions,
                                           vectors=vectors, side_vectors=sides, graphs=self.graphs)
            for side, matrix in (("dense", vectors), ("multilingual", sides)):
                _, cover = self.snapshot.graph_for(side)
                self.graphs.offer(side, matrix, self.snapshot.chunks, cover)
            self._published(records)
        heap.trim()  # Chroma leaves hundreds of megabytes freed but resident after a large read

    def _publish_served(self, held: list[_Held], chunks: list[StoredChunk], docs: dict, versions: dict,
                        records: dict[str, DocRecord]) -> None:
        """`_publish` for a search that reads the store (rag.indexing.served): the rows' ids, documents and languages,
        the BM25 index from the held tokens, and each side's vectors left in its store."""
        ids = [c.id for c in chunks]
        rows = StoredRows(ids, [c.doc_id for c in chunks], [c.meta.get("lang", "") for c in chunks], self.store,
                          versions)
        side = (StoredVectors(self.side_store, ids, self.side.dimension)
                if self.side_store is not None else None)
        self.snapshot = Snapshot.build(rows, docs, self.settings, [t for h in held for t in h.tokens], versions,
                                       vectors=StoredVectors(self.store, ids, self.embedder.dimension),
                                       side_vectors=side)
        self._published(records)

    def _published(self, records: dict[str, DocRecord]) -> None:
        """What the calibration reads of the folder, as of this publish."""
        self.content_key = sorted((r.doc_id, r.content_hash, r.chunks) for r in records.values()
                                  if r.status in VISIBLE)
        self.languages = languages_of(records.values())

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

    def pending(self) -> list[str]:
        """Files the index does not show as they are now: new, or whose size or modification time differ
        from what was indexed, and indexed ones the folder no longer holds. Read-only and lock-free (a
        writer may be at work), by stat alone: a touched but identical file is listed too."""
        files, _ = self.scan()
        records = {r.path: r for r in self.library.all()}
        out = [path for path in records if path not in files]
        for rel, p in files.items():
            rec = records.get(rel)
            try:
                st = p.stat()
            except OSError:
                continue
            if rec is None or rec.size != st.st_size or rec.mtime_ns != st.st_mtime_ns:
                out.append(rel)
        return sorted(out)

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
                self.store.drop_other_collections(keep=[self.side_store.name] if self.side_store else [])
            self.store.release()
        self.after_change()  # the engine calibrates now, so the first question after a change does not wait for it
        report.seconds = time.perf_counter() - t0
        return report

    def _unchanged(self, rec: DocRecord, p: Path) -> bool:
        try:
            st = p.stat()
        except OSError:
            return False
        if rec.status == "indexed" and rec.stamp == self.stamp_for(rec.kind) or rec.status == "excluded" or \
                rec.status == "failed" and rec.stamp and rec.stamp.extractor == version_of(rec.kind):
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
        self.after_change()
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
        self._delete_docs([doc_id])

    def _delete_docs(self, doc_ids: Sequence[str]) -> None:
        """A document's chunks leave both stores (the multilingual side's after the chunks: a crash between the
        two leaves side vectors no chunk claims, which start-up deletes)."""
        self.store.delete_docs(list(doc_ids))
        if self.side_store is not None:
            self.side_store.delete_docs(list(doc_ids))

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
            if sum(len(c) for _, c in group) >= self.group:
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
            doc = extract_bytes(data, rel, max_chars=self.settings.tuning.max_chars, max_pages=self.settings.tuning.max_pages,
                                ocr_cache=self.settings.ocr_cache)
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
        self._delete_docs([rec.doc_id])

    def _write_group(self, group: list[tuple[DocRecord, list[Chunk]]], report: SyncReport,
                     vectors: np.ndarray | None = None, sides: np.ndarray | None = None) -> None:
        """Embed (unless `vectors`, and the multilingual side's `sides`, are given) and write a group of
        prepared documents; records last."""
        texts = [c.text for _, chunks in group for c in chunks]
        try:
            vectors = self.embedder.embed_batch(texts) if vectors is None else vectors
            if self.side is not None and sides is None:
                sides = self.side.embed_batch(texts)
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
        # A document the library has never recorded has no chunks to delete (start-up deleted any a crash left,
        # and only this process writes): a delete by document scans the collection's metadata, which made a
        # first index of a large folder quadratic.
        known = [r.doc_id for r in recs if self.library.get(r.doc_id) is not None]
        # pending first: a crash from here on leaves records that start-up knows to undo.
        self.library.put(*recs)
        self._delete_docs(known)
        self.store.add(chunks, vectors, extras)  # one write for the group: Chroma is fastest in bulk
        if self.side_store is not None:
            self.side_store.add_vectors([c.id for c in chunks], [c.doc_id for c in chunks], sides)
        at, now = 0, time.time()
        for rec, cs in group:
            rec.status, rec.reason, rec.chunks, rec.indexed_at = "indexed", "", len(cs), now
            written = [StoredChunk(c.id, c.doc_id, c.text, chunk_metadata(c, x)) for c, x in zip(cs, extras[at:at + len(cs)])]
            if self.served:  # the store holds texts and vectors; this process their ids and BM25 tokens
                self._chunks_by_doc[rec.doc_id] = _Held(
                    [_light(c) for c in written], None, tokens=[analyze(c.text, c.meta.get("lang", "")) for c in written])
            else:
                self._chunks_by_doc[rec.doc_id] = _Held(
                    written, np.array(vectors[at:at + len(cs)], dtype=np.float32),
                    None if sides is None else np.array(sides[at:at + len(cs)], dtype=np.float32))
            at += len(cs)
            report.outcomes.append(FileOutcome(rec.path, "indexed", len(cs), doc_id=rec.doc_id))
        self.library.put(*recs)  # chunk counts and stamps land together, after all chunks are written

    @staticmethod
    def _chunk_extra(rec: DocRecord) -> dict:
        # "version": the document's content hash, so a search reading the store can tell a chunk rewritten
        # since its snapshot (rag.indexing.served).
        return {"lang": rec.lang, "model": rec.stamp.model, "dimension": rec.stamp.dimension,
                "chunker": rec.stamp.chunker, "extractor": rec.stamp.extractor, "version": rec.content_hash}

    # --- the indexing queue (rag.indexing.queue) -----------------------------------------------------------------

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
        rows = {i.path: i for i in self.queue.items()}
        records = {r.path: r for r in self.library.all()}
        active = {p for p, i in rows.items() if i.active}

        def held(rel: str, p: Path) -> bool:
            # Queued or running already; or cancelled by the person and not changed since.
            item = rows.get(rel)
            return item is not None and (item.active or item.state == CANCELLED and _mtime(p) <= item.updated_at)

        todo = [rel for rel, p in files.items()
                if not held(rel, p) and not (rel in records and self._unchanged(records[rel], p))]
        gone = [path for path in records if path not in files and path not in active]

        def done_meanwhile(rel: str) -> bool:
            # Asked under the queue's lock: the worker may have indexed the file since the reads above
            # (an upload queued and finished while this walked the folder); then it is not queued again.
            rec = self.library.by_path(rel)
            p = files.get(rel)
            return rec is not None and p is not None and self._unchanged(rec, p)

        return self.queue.put(todo + gone, source, unless=done_meanwhile) if todo or gone else []

    def indexing(self) -> int:
        """How many files are waiting to be indexed or being indexed."""
        return self.queue.pending()

    def _index_queued(self, items: list[QueueItem], queue: IndexQueue, asked: bool = False) -> None:
        """The worker's step: extract, embed and write queued files in groups, reporting each file's state.

        Extracting and embedding happen outside the writer lock (they only read); the lock is held for each
        group's write, so an upload or a deletion never waits for a long embedding. A file cancelled while
        it is embedded stops before anything of it is written; the rest of its group goes on. A file a person
        queued meanwhile is indexed at once, between two files or two model batches of the app's own
        (`_index_asked`; a person's files among themselves keep their order of arrival); `asked`: these are
        such files (they are not interrupted in turn)."""
        group: list[tuple[DocRecord, list[Chunk], QueueItem]] = []
        served: set[str] = set()  # files of this batch a person's interruption indexed already
        for item in items:
            if queue.stopping():
                raise Stopped()
            if not asked and item.background:
                served |= self._index_asked(queue)
            if item.path in served:
                continue
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
            if sum(len(c) for _, c, _ in group) >= self.group:
                self._write_queued(group, queue, asked)
                group = []
        if group:
            self._write_queued(group, queue, asked)

    def _index_asked(self, queue: IndexQueue) -> set[str]:
        """Index the files a person queued since the worker took its batch (an upload to ask about at once),
        before going on with the app's own: they wait for one model batch, not for a folder of hundreds.
        Nothing of the interrupted work is lost: its vectors so far are kept and it goes on after. Returns
        the paths it indexed."""
        items = queue.take_asked()
        if items:
            self._index_queued(items, queue, asked=True)
        return {i.path for i in items}

    def _write_queued(self, group: list[tuple[DocRecord, list[Chunk], QueueItem]], queue: IndexQueue,
                      asked: bool = False) -> None:
        """Embed a group in slices (reporting each file's progress, dropping a file cancelled meanwhile),
        then write what is left under the writer lock and publish it."""
        texts = [c.text for _, chunks, _ in group for c in chunks]
        owner = [i for i, (_, chunks, _) in enumerate(group) for _ in chunks]  # text j belongs to file owner[j]
        first = {i: owner.index(i) for i in set(owner)}
        vectors: dict[int, np.ndarray] = {}
        sides: dict[int, np.ndarray] = {}  # the multilingual side's, when it is on
        dropped: set[int] = set()
        # One model batch at a time: the model serves one caller at a time, so a question asked meanwhile
        # waits for at most one batch of 32 (measured: slices of 256 made questions wait minutes on a busy machine).
        step = max(self.settings.tuning.embed_batch_size, 1)
        for at in range(0, len(texts), step):
            if queue.stopping():
                raise Stopped()
            if not asked and all(item.background for _, _, item in group):
                self._index_asked(queue)
            end = min(at + step, len(texts))
            here = sorted({owner[j] for j in range(at, end)} - dropped)
            dropped |= {i for i in here if queue.is_cancelled(group[i][2])}
            keep = [j for j in range(at, end) if owner[j] not in dropped]
            if keep:
                vectors.update(zip(keep, self.embedder.embed_batch([texts[j] for j in keep])))
                if self.side is not None:
                    sides.update(zip(keep, self.side.embed_batch([texts[j] for j in keep])))
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
        side_rows = np.stack([sides[j] for j in range(len(texts)) if owner[j] not in dropped]) if sides else None
        with self.lock:
            self._write_group([(group[i][0], group[i][1]) for i in kept], report, rows, side_rows)
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
        rec = self.library.by_path(item.path)
        if rec is not None:
            with self.lock:
                self._forget(rec.doc_id)
                self._publish()
        self.queue.save(item, REMOVED)


def languages_of(records: Iterable[DocRecord]) -> dict[str, int]:
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

"""Store: the chunks, their vectors and their metadata in Chroma; the single source of truth for chunks.

Embedded (`PersistentClient`, on disk under the index folder) by default, or a Chroma server
(`HttpClient`) when `chroma_host` is set. Either way the collection is in cosine space, vectors are
always passed in (no Chroma embedding function is ever attached, so nothing is downloaded), and
telemetry is off. One collection per embedding model and dimension, with the model recorded in its
metadata: vectors of two models are never compared.

What it does not do: decide what is visible to search (the library's statuses do) or keep anything in
memory beyond Chroma's own caches.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from rag.indexing.chunk import Chunk
from rag.settings import Settings

MAX_BATCH = 5000  # under Chroma's maximum batch (5461)
# Rows per read of the whole collection: Chroma's reply for a page is held whole, in Python objects, while it
# is read (measured at 10,000 chunks: 200 MB for one page of every metadata, 60 MB in pages of 500); a
# smaller page costs more round trips, a larger one a higher peak.
PAGE = 1000
# Ids per read when only ids are asked for (about 3 MB of reply).
ID_PAGE = 100_000


@dataclass(frozen=True)
class StoredChunk:
    id: str
    doc_id: str
    text: str  # embedded text; content is text[header_len:]
    meta: dict[str, Any]
    vector: np.ndarray | None = None
    side: np.ndarray | None = None  # the multilingual side's vector (rag.indexing.multilingual), when it is on

    @property
    def content(self) -> str:
        return self.text[int(self.meta["header_len"]):]


def chunk_metadata(c: Chunk, extra: dict[str, Any]) -> dict[str, Any]:
    return {"doc_id": c.doc_id, "chunk_index": c.index, "section": c.section, "start": c.start, "end": c.end,
            "page": c.page, "page_end": c.page_end, "header_len": c.header_len, **({"place": c.place} if c.place else {}),
            **({"rows": c.rows} if c.rows else {}),
            **({"ocr_mean": round(c.ocr[0], 1), "ocr_min": round(c.ocr[1], 1)} if c.ocr else {}),
            **extra}


class StoreError(RuntimeError):
    """The store cannot be reached or used; the message says what to do."""


def collection_name(prefix: str, model: str, dimension: int) -> str:
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", model).strip("-._") or "model"
    return f"{prefix}-{slug}-{dimension}"[:500]


def _chroma_settings():
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


class ChunkStore:
    """One collection of the store. The embedded client is opened when first needed and may be let go of
    (`release`) between uses: Chroma keeps the HNSW index of every collection it has read in memory (250 MB
    a collection at 100,000 chunks, measured), and search never reads Chroma (rag.searching.search), so an idle app
    need not hold it. Every call goes through `_call`, under one lock per client, and reopens what was let go."""

    def __init__(self, settings: Settings, model: str, dimension: int, beside: "ChunkStore | None" = None):
        """`beside`: another store whose client this one shares (a second model's collection beside the first)."""
        self.settings = settings
        self.model, self.dimension = model, dimension
        self.remote = bool(settings.server.chroma_host)
        self.name = collection_name(settings.server.collection_prefix, model, dimension)
        self._beside = beside
        self._lock = beside._lock if beside is not None else threading.RLock()
        self._client: Any = None
        self._opened = 0  # how many times this store's client was opened (the owner's count is the one read)
        self._collection: Any = None
        self._seen = -1  # the owner's `_opened` when `_collection` was fetched
        try:
            with self._lock:
                configuration = self.collection.configuration
        except Exception as exc:
            raise StoreError(self._explain(exc)) from exc
        hnsw = (configuration or {}).get("hnsw") or {}
        if hnsw.get("space") not in (None, "cosine"):
            raise StoreError(f"collection {self.name} uses {hnsw['space']!r} space, not cosine: distances would mean nothing")
        if hnsw.get("ef_search") not in (None, settings.tuning.hnsw_ef_search):
            # The breadth a search reads the store with (rag.indexing.served) changed since the collection was made: a
            # server applies it when it next loads the collection (measured: not while it holds it).
            self._call("modify", configuration={"hnsw": {"ef_search": settings.tuning.hnsw_ef_search}})

    @property
    def client(self) -> Any:
        """The Chroma client, opened again if it was let go of."""
        if self._beside is not None:
            return self._beside.client
        if self._client is None:
            import chromadb

            if self.remote:
                self._client = chromadb.HttpClient(host=self.settings.server.chroma_host, port=self.settings.server.chroma_port,
                                                   settings=_chroma_settings())
            else:
                path = self.settings.index_path / "chroma"
                path.mkdir(parents=True, exist_ok=True)
                self._client = chromadb.PersistentClient(path=str(path), settings=_chroma_settings())
            self._opened += 1
        return self._client

    @property
    def collection(self) -> Any:
        client = self.client
        owner = self._beside or self
        if self._collection is None or self._seen != owner._opened:
            self._collection = client.get_or_create_collection(
                self.name,
                configuration={"hnsw": {"space": "cosine", "ef_search": self.settings.tuning.hnsw_ef_search}},
                metadata={"embedding_model": self.model, "dimension": self.dimension, "space": "cosine"},
                embedding_function=None,
            )
            self._seen = owner._opened
        return self._collection

    def release(self) -> None:
        """Let go of the embedded client (and so of the HNSW indexes Chroma holds in memory) until the next
        call; a store sharing it opens it again as well. Nothing to do for a server: its memory is its own."""
        if self.remote:
            return
        owner = self._beside or self
        with self._lock:
            if owner._client is not None:
                owner._client.close()
                owner._client = None

    def _explain(self, exc: Exception) -> str:
        if self.remote:
            return (f"cannot use the Chroma server at {self.settings.server.chroma_host}:{self.settings.server.chroma_port} "
                    f"({type(exc).__name__}: {exc}); is `chroma run` up?")
        return f"cannot open the index at {self.settings.index_path} ({type(exc).__name__}: {exc})"

    def _call(self, method: str, *args, **kwargs):
        """The collection's `method` ("client.name": the client's), under the client's lock (`release` may
        close it meanwhile). A server's client is never let go of, so its calls run at once: a search that
        reads the store (rag.indexing.served) asks both sides' collections together."""
        try:
            with self._lock if not self.remote else contextlib.nullcontext():
                target = self.client if method.startswith("client.") else self.collection
                return getattr(target, method.removeprefix("client."))(*args, **kwargs)
        except Exception as exc:
            raise StoreError(self._explain(exc)) from exc

    # --- writes ---------------------------------------------------------------------------------

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray, extra: dict[str, Any] | Sequence[dict[str, Any]]) -> None:
        """Write chunks with their vectors; `extra` is metadata for all of them, or one dict per chunk."""
        extras = [extra] * len(chunks) if isinstance(extra, dict) else list(extra)
        for i in range(0, len(chunks), MAX_BATCH):
            part = chunks[i:i + MAX_BATCH]
            metas = [chunk_metadata(c, x) for c, x in zip(part, extras[i:i + MAX_BATCH])]
            self._call("upsert", ids=[c.id for c in part], embeddings=vectors[i:i + MAX_BATCH],
                       documents=[c.text for c in part], metadatas=metas)

    def add_vectors(self, ids: Sequence[str], doc_ids: Sequence[str], vectors: np.ndarray) -> None:
        """Write vectors only, each with its document's id (a second model's side: the chunk's text and
        metadata live once, in the first model's collection)."""
        for i in range(0, len(ids), MAX_BATCH):
            self._call("upsert", ids=list(ids[i:i + MAX_BATCH]), embeddings=vectors[i:i + MAX_BATCH],
                       metadatas=[{"doc_id": d} for d in doc_ids[i:i + MAX_BATCH]])

    def all_vectors(self, page: int = PAGE) -> dict[str, np.ndarray]:
        """Every vector in the collection, by chunk id."""
        return {cid: np.asarray(vec, dtype=np.float32) for cid, _, _, vec in self._rows(["embeddings"], page)}

    def delete_docs(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            self._call("delete", where={"doc_id": {"$in": list(doc_ids)}} if len(doc_ids) > 1
                       else {"doc_id": doc_ids[0]})

    def delete_doc(self, doc_id: str) -> None:
        self._call("delete", where={"doc_id": doc_id})

    def drop_other_collections(self, keep: Sequence[str] = ()) -> list[str]:
        """Delete collections of other models once nothing needs them: their vectors cannot be compared.
        `keep`: other collections still in use (the multilingual side's)."""
        dropped = []
        for c in self._call("client.list_collections"):
            name = getattr(c, "name", c)
            if name.startswith(self.settings.server.collection_prefix + "-") and name != self.name and name not in keep:
                self._call("client.delete_collection", name)
                dropped.append(name)
        return dropped

    # --- reads ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Let go of the embedded store's files (Chroma keeps one system per path for the whole process, and a
        client opened later on the same path would be handed this one, even after its folder was deleted)."""
        self.release()

    def count(self) -> int:
        return self._call("count")

    def all_chunks(self, page: int = PAGE, vectors: bool = False) -> Iterable[StoredChunk]:
        include = ["documents", "metadatas"] + (["embeddings"] if vectors else [])
        for cid, text, meta, vec in self._rows(include, page):
            yield StoredChunk(cid, meta["doc_id"], text, meta,
                              np.asarray(vec, dtype=np.float32) if vec is not None else None)

    def doc_ids(self, page: int = PAGE) -> set[str]:
        """Every document id that has chunks in the store (metadata only: cheap enough for each sync)."""
        return {meta["doc_id"] for _, _, meta, _ in self._rows(["metadatas"], page)}

    def chunk_counts(self, page: int = PAGE) -> dict[str, int]:
        """Chunks per document id in the store (metadata only, as `doc_ids`)."""
        return dict(Counter(meta["doc_id"] for _, _, meta, _ in self._rows(["metadatas"], page)))

    def _rows(self, include: Sequence[str], page: int = PAGE) -> Iterable[tuple[str, Any, Any, Any]]:
        """Every row of the collection as (id, document, metadata, embedding), None for what `include` does
        not ask, in the store's own order, `page` rows read at a time: the ids first, then each page asked for
        by its ids. Chroma reads a page asked for by offset by passing over every row before it, so reading a
        whole collection that way grows with its square: a server holding 627,000 chunks took 5.5 minutes for
        one pass over their metadata, 0.6 s a page of 1,000 and rising (issue 36); asked for by ids, a page
        costs the same wherever it lies (45 s for that pass). A row deleted between the two reads is left out."""
        ids = self._ordered_ids()
        for at in range(0, len(ids), page):
            wanted = ids[at:at + page]
            got = self._call("get", ids=wanted, include=list(include))
            row = {cid: k for k, cid in enumerate(got["ids"])}
            docs, metas, vecs = got.get("documents"), got.get("metadatas"), got.get("embeddings")
            for cid in wanted:  # (the reply's order is the store's to choose: the ids' order is kept)
                k = row.get(cid)
                if k is not None:
                    yield (cid, docs[k] if docs is not None else None, metas[k] if metas is not None else None,
                           vecs[k] if vecs is not None else None)

    def _ordered_ids(self, page: int = ID_PAGE) -> list[str]:
        """Every chunk id in the collection, in the store's own order (nothing else is read)."""
        out, offset = [], 0
        while True:
            got = self._call("get", include=[], limit=page, offset=offset)
            out.extend(got["ids"])
            if len(got["ids"]) < page:
                return out
            offset += page

    def doc_chunk_ids(self, doc_id: str) -> list[str]:
        return self._call("get", where={"doc_id": doc_id}, include=[])["ids"]

    def query(self, vector: np.ndarray, n: int, doc_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """Nearest chunks as (id, cosine distance); `doc_ids` restricts the search before it runs."""
        if n <= 0:  # more than the collection holds is fine: Chroma returns what there is
            return []
        where = None
        if doc_ids is not None:
            if not doc_ids:
                return []
            where = {"doc_id": {"$in": list(doc_ids)}} if len(doc_ids) > 1 else {"doc_id": doc_ids[0]}
        got = self._call("query", query_embeddings=[vector], n_results=n, where=where, include=["distances"])
        return list(zip(got["ids"][0], got["distances"][0]))

    def chunks(self, ids: Sequence[str]) -> dict[str, StoredChunk]:
        """The chunks with these ids that the store holds (texts and metadata, no vectors), by id."""
        if not ids:
            return {}
        got = self._call("get", ids=list(ids), include=["documents", "metadatas"])
        return {cid: StoredChunk(cid, meta["doc_id"], text, meta)
                for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"])}

    def ids(self) -> set[str]:
        """Every chunk id in the collection (nothing else is read)."""
        return set(self._ordered_ids())

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        got = self._call("get", ids=list(ids), include=["embeddings"])
        return {cid: np.asarray(v, dtype=np.float32) for cid, v in zip(got["ids"], got["embeddings"])}

    def size_on_disk(self) -> int | None:
        if self.remote:
            return None
        root = self.settings.index_path / "chroma"
        return sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())

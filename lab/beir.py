"""BEIR benchmarks through the app's own search: a BEIR folder (corpus, queries, graded judgments) becomes
a snapshot as a folder of documents does, and every query goes through `rag.searching.search.hybrid_search`. The
lab beside the product: `rag eval beir` calls it.

- `load_beir`: corpus.jsonl(.gz), queries.jsonl and qrels/<split>.tsv; only judged queries are kept.
- `beir_chunks` / `beir_snapshot`: each document chunked by the project's chunker (its title as the
  header), then held as the engine holds a folder (stored chunks with vectors, a BM25 index).
- `run_beir`: nDCG@10, Recall@10/100 and MRR@10 for dense, BM25 and hybrid (a document scores as its best
  chunk), paired sign tests, timings. `cached_vectors` keeps embeddings between runs.

What it does not do: write an index to disk, or rank with anything the app does not (no second dense scan,
fusion or pooling of its own).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from lab.metrics import SignTest, first_rank, ndcg_at, recall_at, reciprocal_rank, sign_test
from rag.indexing.chunk import Chunk, Strategy, chunk_document, strategy as make_strategy
from rag.reading.extract import version_of
from rag.reading.document import Extracted, Section
from rag.text.languages import question_language
from rag.indexing.bm25 import LexicalIndex
from rag.searching.fusion import question_weights
from rag.searching.search import dense_top, hybrid_search
from rag.indexing.snapshot import Snapshot
from rag.settings import Settings
from rag.indexing.store import StoredChunk, chunk_metadata

MODES = ("dense", "bm25", "hybrid")


@dataclass
class BeirData:
    name: str
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # query id -> text, for the judged queries only
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> grade


def load_beir(folder: str | Path, split: str = "test") -> BeirData:
    """corpus.jsonl(.gz) with _id/title/text, queries.jsonl (only `text` is read: some sets carry labels
    in metadata), qrels/<split>.tsv with a header line. Only judged queries are kept."""
    folder = Path(folder)
    path = folder / "corpus.jsonl"
    if not path.is_file():
        path = folder / "corpus.jsonl.gz"
    if not path.is_file():
        raise ValueError(f"{folder} has no corpus.jsonl or corpus.jsonl.gz: not a BEIR folder")
    opener = gzip.open if path.suffix == ".gz" else open
    corpus = {}
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                corpus[str(d["_id"])] = (d.get("title") or "", d.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    qpath = folder / "qrels" / f"{split}.tsv"
    if not qpath.is_file():
        raise ValueError(f"{folder} has no qrels/{split}.tsv")
    for i, line in enumerate(qpath.read_text(encoding="utf-8").splitlines()):
        parts = line.strip().split("\t")
        if len(parts) < 3 or (i == 0 and not parts[-1].lstrip("-").isdigit()):
            continue  # header
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                if str(d["_id"]) in qrels:
                    queries[str(d["_id"])] = d["text"]
    qrels = {q: r for q, r in qrels.items() if q in queries}
    return BeirData(folder.name, corpus, queries, qrels)


def beir_document(doc_id: str, title: str, text: str) -> Extracted:
    """A BEIR document as the chunker sees a plain-text file whose title is known: the title goes in the
    header of every chunk (strategies E, F), the text is the body."""
    return Extracted(name=f"{doc_id}.txt", kind="txt", title=" ".join(title.split()), text=text,
                     sections=[Section(0, len(text), ())], version=version_of("txt"))


@dataclass
class BeirChunks:
    doc_ids: list[str]  # document order; a document's chunks are contiguous
    starts: np.ndarray  # index of each document's first chunk
    texts: list[str]  # embedded / BM25 text of each chunk (header + content)
    doc_of: np.ndarray  # document position of each chunk
    chunks: list[Chunk] = field(default_factory=list)  # the chunker's output, in the same order


def beir_chunks(data: BeirData, how: Strategy) -> BeirChunks:
    doc_ids, starts, texts, doc_of, all_chunks = [], [], [], [], []
    for pos, (did, (title, text)) in enumerate(data.corpus.items()):
        if not text.strip():
            text = title  # a document with no body is searchable by its title
        chunks = chunk_document(beir_document(did, title, text), did, how)
        doc_ids.append(did)
        starts.append(len(texts))
        texts.extend(c.text for c in chunks)
        doc_of.extend([pos] * len(chunks))
        all_chunks.extend(chunks)
    return BeirChunks(doc_ids, np.array(starts), texts, np.array(doc_of), all_chunks)


def beir_snapshot(data: BeirData, ch: BeirChunks, vectors: np.ndarray, settings: Settings,
                  lexical: LexicalIndex | None = None) -> Snapshot:
    """The corpus as the app's search sees a folder: stored chunks with their vectors, a BM25 index
    (English analyzer), one document per BEIR document."""
    chunks = [StoredChunk(c.id, c.doc_id, c.text, chunk_metadata(c, {"lang": "en"}), v)
              for c, v in zip(ch.chunks, vectors)]
    docs = {did: (did, title, "txt") for did, (title, _) in data.corpus.items()}
    if lexical is None:
        return Snapshot.build(chunks, docs, settings)
    # A BM25 index the caller built over the same texts (parameter sweeps): everything else as usual.
    return Snapshot(chunks, lexical, docs, {c.id: i for i, c in enumerate(chunks)},
                    np.array([c.doc_id for c in chunks], dtype=object), np.asarray(vectors))


def cached_vectors(embedder, texts: Sequence[str], cache: Path | None, label: str) -> tuple[np.ndarray, float, bool]:
    """Embed texts, or load them from `cache/<label>-<hash>.npy` made by an earlier run on the same texts
    and model. Returns (vectors, seconds the embedding took when it was done, whether it came from cache)."""
    key = hashlib.sha1("\x1e".join([embedder.name, *texts]).encode("utf-8")).hexdigest()[:16]
    if cache is not None:
        npy, meta = Path(cache) / f"{label}-{key}.npy", Path(cache) / f"{label}-{key}.json"
        if npy.is_file() and meta.is_file():
            return np.load(npy), float(json.loads(meta.read_text())["seconds"]), True
    t = time.perf_counter()
    vecs = embedder.embed_batch(list(texts))
    seconds = time.perf_counter() - t
    if cache is not None:
        Path(cache).mkdir(parents=True, exist_ok=True)
        np.save(npy, vecs)
        meta.write_text(json.dumps({"seconds": seconds, "n": len(texts), "model": embedder.name}))
    return vecs, seconds, False


@dataclass
class BeirRun:
    dataset: str
    split: str
    strategy: str
    documents: int
    chunks: int
    queries: int
    settings: dict
    metrics: dict[str, dict[str, float]]  # mode -> metric -> mean
    per_query: dict[str, dict[str, list[float]]]  # mode -> metric -> per query, in query order
    tests: dict[str, dict]  # "hybrid vs dense" -> sign test on per-query nDCG@10
    timings: dict[str, float]
    query_ids: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [f"{self.dataset} ({self.split}): {self.documents} documents, {self.chunks} chunks (strategy "
                 f"{self.strategy}), {self.queries} queries",
                 f"{'mode':<8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7}"]
        for mode, m in self.metrics.items():
            lines.append(f"{mode:<8} {m['ndcg@10']:>8.4f} {m['recall@10']:>7.4f} {m['recall@100']:>7.4f} "
                         f"{m['mrr@10']:>7.4f}")
        for name, t in self.tests.items():
            lines.append(f"{name}, per-query nDCG@10: {SignTest(**t)}")
        tm = self.timings
        lines.append(f"index: chunking {tm['chunk_s']:.1f} s, embedding {tm['embed_s']:.1f} s "
                     f"({'cached' if tm.get('embed_cached') else 'measured now'}), BM25 {tm['bm25_build_s']:.1f} s; "
                     f"query median: embed {tm['q_embed_ms']:.1f} ms, BM25 {tm['q_bm25_ms']:.1f} ms, "
                     f"dense scan {tm['q_dense_ms']:.1f} ms, fusion {tm['q_fusion_ms']:.2f} ms")
        return "\n".join(lines)


def _docs(chunk_ids: Sequence[str], doc_of: Mapping[str, str], depth: int) -> list[str]:
    """Documents in the order of their best chunk (a document scores as its best chunk)."""
    out: dict[str, None] = {}
    for cid in chunk_ids:
        out.setdefault(doc_of[cid], None)
        if len(out) >= depth:
            break
    return list(out)


def run_beir(folder: str | Path, embedder, settings: Settings, *, split: str = "test", strategy: str = "E",
             depth: int = 100, candidates: int = 1000, fusion: str = "chunk", cache: Path | None = None,
             data: BeirData | None = None, lexical: LexicalIndex | None = None) -> BeirRun:
    """Dense, BM25 and hybrid over a BEIR folder, through the app's own search (in memory: nothing is
    written but the optional vector cache).

    The corpus becomes a `Snapshot` as a folder does (the project's chunker, the title as each chunk's
    header); each query goes through `hybrid_search` with `candidates` chunks per side (a setting the app
    has at 20; a benchmark ranking 100 documents needs more), the fusion and the per-question weights
    the app would use. Dense alone and BM25 alone are the same search's two sides (`dense_top`, the
    lexical index's `top`). A document scores as its best chunk. `fusion` is kept for callers: only
    "chunk" exists (fusing per document was a second implementation the app never ran).
    """
    if fusion != "chunk":
        raise ValueError(f"fusion {fusion!r}: only 'chunk' (the app's search) is measured")
    data = data or load_beir(folder, split)
    how = make_strategy(strategy, settings.tuning.chunk_budget)
    t = time.perf_counter()
    ch = beir_chunks(data, how)
    chunk_s = time.perf_counter() - t
    vecs, embed_s, embed_cached = cached_vectors(embedder, ch.texts, cache, f"{data.name}-{strategy}")
    run_settings = settings.replace(candidates=max(candidates, depth))
    t = time.perf_counter()
    snap = beir_snapshot(data, ch, vecs, run_settings, lexical)
    bm25_build_s = time.perf_counter() - t
    doc_of = {c.id: c.doc_id for c in snap.chunks}

    qids = list(data.queries)
    qtexts = [data.queries[q] for q in qids]
    t = time.perf_counter()
    qvecs, _, _ = cached_vectors(embedder, qtexts, cache, f"{data.name}-queries")
    q_embed_ms = (time.perf_counter() - t) * 1000 / max(1, len(qids))
    if cache is not None:  # the cache hides the real cost: time single queries as a person would ask them
        times = []
        for q in qtexts[:50]:
            t = time.perf_counter()
            embedder.embed_batch([q])
            times.append((time.perf_counter() - t) * 1000)
        q_embed_ms = float(np.median(times))

    n = run_settings.candidates
    rankings: dict[str, list[list[str]]] = {m: [] for m in MODES}
    tb, td, tf, used = [], [], [], {}
    for qv, qtext in zip(qvecs, qtexts):
        # As the engine weighs a question: the corpus is English, an unclear question counts as English.
        weights = question_weights(run_settings, question_language(qtext) or "en", embedder.languages, ("en",))
        result = hybrid_search(qtext, embedder=embedder, snapshot=snap, settings=run_settings, weights=weights,
                               vector=qv)
        used[json.dumps(result.weights, sort_keys=True)] = result.weights
        tb.append(result.timings_ms["bm25"])
        td.append(result.timings_ms["dense"])
        tf.append(result.timings_ms["fusion"])
        rows, _ = dense_top(snap, qv, n)
        rankings["dense"].append(_docs([snap.chunks[i].id for i in rows], doc_of, depth))
        rankings["bm25"].append(_docs([snap.chunks[i].id for i, _ in snap.lexical.top(qtext, n)], doc_of, depth))
        rankings["hybrid"].append(_docs([c.chunk_id for c in result.candidates], doc_of, depth))

    per_query: dict[str, dict[str, list[float]]] = {}
    metrics: dict[str, dict[str, float]] = {}
    for mode, ranked_lists in rankings.items():
        pq = {"ndcg@10": [], "recall@10": [], "recall@100": [], "mrr@10": []}
        for qid, ranked in zip(qids, ranked_lists):
            rel = data.qrels[qid]
            relevant = [d for d, g in rel.items() if g > 0]
            pq["ndcg@10"].append(ndcg_at(ranked, rel, 10))
            pq["recall@10"].append(recall_at(ranked, relevant, 10))
            pq["recall@100"].append(recall_at(ranked, relevant, 100))
            pq["mrr@10"].append(reciprocal_rank(first_rank(ranked, relevant), 10))
        per_query[mode] = pq
        metrics[mode] = {m: float(np.mean(v)) for m, v in pq.items()}
    tests = {f"hybrid vs {side}": dataclasses.asdict(sign_test(per_query["hybrid"]["ndcg@10"], per_query[side]["ndcg@10"]))
             for side in ("dense", "bm25")}
    timings = {"chunk_s": chunk_s, "embed_s": embed_s, "embed_cached": bool(embed_cached), "bm25_build_s": bm25_build_s,
               "embed_ms_per_chunk": embed_s * 1000 / max(1, len(ch.texts)),
               "q_embed_ms": q_embed_ms, "q_bm25_ms": float(np.median(tb)), "q_dense_ms": float(np.median(td)),
               "q_fusion_ms": float(np.median(tf))}
    s = run_settings
    settings_used = {"k1": s.tuning.bm25_k1, "b": s.tuning.bm25_b, "fusion": s.tuning.fusion, "rrf_k": s.tuning.rrf_k,
                     "weights": list(used.values()), "candidates": n, "depth": depth}
    return BeirRun(data.name, split, strategy, len(ch.doc_ids), len(ch.texts), len(qids), settings_used, metrics,
                   per_query, tests, timings, qids)

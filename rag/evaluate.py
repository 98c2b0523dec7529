"""Evaluate: measure retrieval without generation (no LLM needed), on the sample folder, on the
person's own folder, and on any BEIR-format benchmark.

- Metrics: Recall@k, MRR, nDCG@k with graded linear gains (as trec_eval and BEIR compute it), Wilson
  95% intervals, and the exact paired sign test (two-sided binomial on the discordant pairs).
- Needle sets (`bench/sample_needles.jsonl`, and the questions a person saves on the calibration page):
  JSONL of {question, needle, document, lang, style} or {question, refuse: true, lang}. A retrieval is
  correct when a ranked chunk's content contains the whole needle (white space compared loosely: PDF
  text joins lines).
- `evaluate_needles`: Recall@1/4/8/20, MRR and destroyed answers for chunk strategies A–F and dense /
  BM25 / hybrid retrieval, each strategy indexed into its own temporary index (never the person's).
- `sweep`: nearest-candidate distances of answerable and refusable questions and what every threshold
  does with them; suggests the threshold a bluff budget allows, overall and per question language.
- `run_beir`: a BEIR folder indexed with the project's own chunker (the title as the header), a document
  scoring as its best chunk; nDCG@10, Recall@10/100, MRR@10 for dense, BM25 and hybrid, with timings.
- `why_not_found`: where an expected sentence was lost, for one question already asked.

What it does not do: call a generator, or write to the index of the folder it measures (the calibration
page's questions file beside the index is the one exception, and only through `save_question`).

>>> round(ndcg_at(["a", "b", "c"], {"b": 2, "c": 1}, k=3), 4)
0.6697
>>> [round(x, 3) for x in wilson(5, 10)]
[0.237, 0.763]
>>> sign_test([1, 1, 1, 0], [0, 0, 0, 0])
SignTest(wins=3, losses=0, ties=1, p=0.25)
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
import re
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from rag.chunk import Strategy, chunk_document, strategy as make_strategy
from rag.extract import EXTRACTOR_VERSIONS, Extracted, Section, extract
from rag.gate import CAPPED, KEPT, OVER, UNSUPPORTED, Gated, gate
from rag.lexical import LexicalIndex, question_language  # noqa: F401  (re-exported for the calibration page)
from rag.search import SearchResult, rrf
from rag.settings import Settings

KS = (1, 4, 8, 20)
STRATEGIES = ("A", "B", "C", "D", "E", "F")
MODES = ("dense", "bm25", "hybrid")
Z95 = 1.959963984540054


# --- metrics ------------------------------------------------------------------------------------------


def dcg(gains: Sequence[float]) -> float:
    # Linear gains, log2(rank + 1) discount: trec_eval's ndcg_cut and BEIR (pytrec_eval) alike.
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of a ranking against graded judgments (gain = the judged grade; 0 or absent = not relevant)."""
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([max(qrels.get(d, 0), 0) for d in ranked[:k]]) / ideal


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    rel = set(relevant)
    return len(rel.intersection(ranked[:k])) / len(rel) if rel else 0.0


def reciprocal_rank(rank: int | None, k: int | None = None) -> float:
    """1/rank of the first correct result (1-based), 0 when there is none within k."""
    if rank is None or (k is not None and rank > k):
        return 0.0
    return 1.0 / rank


def first_rank(ranked: Sequence[str], relevant: Iterable[str]) -> int | None:
    rel = set(relevant)
    return next((i for i, d in enumerate(ranked, start=1) if d in rel), None)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion (95% by default); (0, 1) when there is nothing to measure."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class SignTest:
    wins: int  # pairs where the first configuration did better
    losses: int
    ties: int
    p: float  # exact two-sided binomial p-value on wins + losses pairs at 1/2

    def __str__(self) -> str:
        return f"+{self.wins}/−{self.losses} (ties {self.ties}), p = {self.p:.3g}"


def sign_test(a: Sequence[float], b: Sequence[float]) -> SignTest:
    """Exact paired sign test: per item, does `a` beat `b`? Ties are dropped; p is two-sided."""
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    wins = sum(1 for x, y in zip(a, b) if x > y)
    losses = sum(1 for x, y in zip(a, b) if x < y)
    n, m = wins + losses, min(wins, losses)
    if n == 0:
        return SignTest(0, 0, len(a), 1.0)
    tail = sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n
    return SignTest(wins, losses, len(a) - n, min(1.0, 2 * tail))


def rate(successes: int, n: int) -> dict:
    lo, hi = wilson(successes, n)
    return {"k": successes, "n": n, "rate": successes / n if n else 0.0, "low": lo, "high": hi}


def fmt_rate(r: Mapping) -> str:
    return f"{r['rate']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"


# --- needle sets --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    question: str
    needle: str | None = None  # the sentence that answers it; None for a question the folder must refuse
    document: str | None = None
    lang: str = ""
    style: str = ""  # "echo" (words of the needle) or "paraphrase" (a person's own words)
    refuse: bool = False
    kind: str = ""  # e.g. "answerable", "off-folder", "near-miss" (public sets label their questions)

    @property
    def answerable(self) -> bool:
        return not self.refuse

    def to_json(self) -> dict:
        if self.refuse:
            return {"question": self.question, "refuse": True, "lang": self.lang} | ({"kind": self.kind} if self.kind else {})
        d = {"question": self.question, "needle": self.needle, "document": self.document, "lang": self.lang,
             "style": self.style}
        return {k: v for k, v in d.items() if v not in (None, "")} | {"needle": self.needle}


def load_questions(path: str | Path) -> list[Question]:
    """Read a needle set; `ValueError` names the line and what is wrong with it."""
    out: list[Question] = []
    p = Path(path)
    if not p.is_file():
        return out
    for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}:{no}: not JSON ({exc.msg})") from None
        if not isinstance(d, dict) or not str(d.get("question", "")).strip():
            raise ValueError(f"{p}:{no}: needs a non-empty \"question\"")
        refuse = bool(d.get("refuse", False))
        needle = d.get("needle")
        if refuse == bool(needle):
            raise ValueError(f"{p}:{no}: give either a \"needle\" (the expected sentence) or \"refuse\": true")
        out.append(Question(question=str(d["question"]).strip(), needle=needle.strip() if needle else None,
                            document=d.get("document"), lang=d.get("lang") or question_language(d["question"]),
                            style=d.get("style", ""), refuse=refuse, kind=str(d.get("kind", ""))))
    return out


def save_question(path: str | Path, q: Question) -> None:
    """Append one question to a JSONL file (the calibration page's questions, beside the index)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")


def _squash(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def contains(content: str, needle: str) -> bool:
    """The whole needle is in the content, white space compared loosely (PDF text joins lines)."""
    return _squash(needle) in _squash(content)


def folder_texts(folder: Path) -> dict[str, str]:
    """Relative path -> text of the folder's .md and .txt files (the PDF in the sample is made from one)."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and p.suffix.lower() in (".md", ".txt") and not any(x.startswith(".") for x in rel.parts):
            out[rel.as_posix()] = p.read_text(encoding="utf-8")
    return out


def check_needles(questions: Sequence[Question], folder: Path) -> list[str]:
    """Problems with a needle set against its folder: each needle once in the .md/.txt text, not a heading."""
    texts = folder_texts(folder)
    problems = []
    for q in questions:
        if q.refuse:
            continue
        hits = {name: t.count(q.needle) for name, t in texts.items() if q.needle in t}
        if sum(hits.values()) != 1:
            problems.append(f"{q.question!r}: needle occurs {sum(hits.values())} times {hits}")
            continue
        name = next(iter(hits))
        if q.document and q.document != name:
            problems.append(f"{q.question!r}: needle is in {name}, not {q.document}")
        line = next(ln for ln in texts[name].splitlines() if q.needle in ln)
        if re.match(r"^\s{0,3}#{1,6}\s", line):
            problems.append(f"{q.question!r}: needle is in a heading: {line!r}")
    return problems


# --- BEIR ---------------------------------------------------------------------------------------------


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
                     sections=[Section(0, len(text), ())], version=EXTRACTOR_VERSIONS["txt"])


@dataclass
class BeirChunks:
    doc_ids: list[str]  # document order; a document's chunks are contiguous
    starts: np.ndarray  # index of each document's first chunk
    texts: list[str]  # embedded / BM25 text of each chunk (header + content)
    doc_of: np.ndarray  # document position of each chunk


def beir_chunks(data: BeirData, how: Strategy) -> BeirChunks:
    doc_ids, starts, texts, doc_of = [], [], [], []
    for pos, (did, (title, text)) in enumerate(data.corpus.items()):
        if not text.strip():
            text = title  # a document with no body is searchable by its title
        chunks = chunk_document(beir_document(did, title, text), did, how)
        doc_ids.append(did)
        starts.append(len(texts))
        texts.extend(c.text for c in chunks)
        doc_of.extend([pos] * len(chunks))
    return BeirChunks(doc_ids, np.array(starts), texts, np.array(doc_of))


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


def _doc_max(scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(scores, starts)


def _top(scores: np.ndarray, n: int, positive: bool = False) -> list[int]:
    # A full stable sort: equal scores keep corpus order, so every run ranks ties the same way.
    idx = np.argsort(-scores, kind="stable")[:n]
    return [int(i) for i in idx if not positive or scores[i] > 0]


def run_beir(folder: str | Path, embedder, settings: Settings, *, split: str = "test", strategy: str = "E",
             depth: int = 100, candidates: int = 1000, fusion: str = "chunk", cache: Path | None = None,
             data: BeirData | None = None, lexical: LexicalIndex | None = None) -> BeirRun:
    """Dense, BM25 and hybrid over a BEIR folder, in memory (a temporary index that dies with the run).

    Dense is an exact cosine scan of the chunk vectors (the store's HNSW only approximates it). Hybrid
    fuses the two sides' top `candidates` chunks by weighted RRF (settings' k and weights), as the
    engine does, and a document scores as its best chunk (`fusion="chunk"`); `fusion="doc"` fuses the
    two sides' document rankings instead.
    """
    data = data or load_beir(folder, split)
    how = make_strategy(strategy, settings.chunk_budget)
    t = time.perf_counter()
    ch = beir_chunks(data, how)
    chunk_s = time.perf_counter() - t
    vecs, embed_s, embed_cached = cached_vectors(embedder, ch.texts, cache, f"{data.name}-{strategy}")
    t = time.perf_counter()
    lex = lexical or LexicalIndex.build(ch.texts, ["en"] * len(ch.texts), k1=settings.bm25_k1, b=settings.bm25_b)
    bm25_build_s = time.perf_counter() - t

    qids = list(data.queries)
    qtexts = [data.queries[q] for q in qids]
    t = time.perf_counter()
    qvecs, _, _ = cached_vectors(embedder, qtexts, cache, f"{data.name}-queries")
    q_embed_ms = (time.perf_counter() - t) * 1000 / max(1, len(qids))
    if cache is not None:  # the cache hides the real cost: time single queries as a person would ask them
        sample = qtexts[:50]
        times = []
        for q in sample:
            t = time.perf_counter()
            embedder.embed_batch([q])
            times.append((time.perf_counter() - t) * 1000)
        q_embed_ms = float(np.median(times))

    weights = {"dense": settings.dense_weight, "bm25": settings.bm25_weight}
    ndocs = len(ch.doc_ids)
    rankings: dict[str, list[list[str]]] = {m: [] for m in MODES}
    tb, td, tf = [], [], []
    for qv, qtext in zip(qvecs, qtexts):
        t0 = time.perf_counter()
        bs = lex.scores(qtext)
        t1 = time.perf_counter()
        ds = vecs @ qv
        t2 = time.perf_counter()
        dense_docs = _top(_doc_max(ds, ch.starts), max(depth, candidates if fusion == "doc" else 0))
        bm25_docs = _top(_doc_max(bs, ch.starts), max(depth, candidates if fusion == "doc" else 0), positive=True)
        t3 = time.perf_counter()
        if fusion == "doc":
            fused = rrf({"dense": [str(i) for i in dense_docs[:candidates]], "bm25": [str(i) for i in bm25_docs[:candidates]]},
                        k=settings.rrf_k, weights=weights)
            hybrid_docs = [int(i) for i in fused][:depth]
        else:
            fused = rrf({"dense": _top(ds, candidates), "bm25": _top(bs, candidates, positive=True)},
                        k=settings.rrf_k, weights=weights)
            best = np.zeros(ndocs)
            for c, s in fused.items():
                d = ch.doc_of[c]
                if s > best[d]:
                    best[d] = s
            # Equal fused scores: the closer document first, as the engine orders chunks.
            order = sorted(np.nonzero(best)[0], key=lambda d: (-best[d], -ds[ch.starts[d]]))
            hybrid_docs = [int(d) for d in order[:depth]]
        t4 = time.perf_counter()
        tb.append((t1 - t0) * 1000)
        td.append((t2 - t1) * 1000 + (t3 - t2) * 500)
        tf.append((t4 - t3) * 1000)
        rankings["dense"].append([ch.doc_ids[i] for i in dense_docs[:depth]])
        rankings["bm25"].append([ch.doc_ids[i] for i in bm25_docs[:depth]])
        rankings["hybrid"].append([ch.doc_ids[i] for i in hybrid_docs])

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
    run_settings = {"k1": settings.bm25_k1, "b": settings.bm25_b, "rrf_k": settings.rrf_k, "weights": weights,
                    "candidates": candidates, "fusion": fusion, "depth": depth}
    return BeirRun(data.name, split, strategy, ndocs, len(ch.texts), len(qids), run_settings, metrics, per_query,
                   tests, timings, qids)


# --- needle sets: strategies x modes --------------------------------------------------------------------


def _open_engine(folder: Path, index_dir: Path, embedder, base: Settings, **changes):
    from rag.engine import Engine

    engine = Engine(base.replace(folder=Path(folder), index_dir=Path(index_dir), **changes), embedder=embedder)
    report = engine.sync()
    return engine, report


class MemoEmbedder:
    """The embedder with a memory: an evaluation embeds the same question for every strategy and mode."""

    def __init__(self, inner):
        self.inner = inner
        self.memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed_batch(missing)))
        if not texts:
            return self.inner.embed_batch([])
        return np.stack([self.memo[t] for t in texts])


def mode_ranking(engine, question: str, mode: str, depth: int | None = None) -> list[str]:
    """Chunk ids, best first: one side alone (dense, bm25) or the engine's own hybrid search."""
    depth = depth or engine.settings.candidates
    if mode == "hybrid":
        return [c.chunk_id for c in engine.search(question).candidates][:depth]
    snap = engine.snapshot
    if mode == "bm25":
        return [snap.chunks[i].id for i, _ in snap.lexical.top(question, depth)]
    if mode == "dense":
        qv = engine.embedder.embed_batch([question])[0]
        return [cid for cid, _ in engine.store.query(qv, depth) if cid in snap.pos][:depth]
    raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")


def needle_rank(engine, ranked: Sequence[str], needle: str) -> int | None:
    snap = engine.snapshot
    for r, cid in enumerate(ranked, start=1):
        if contains(snap.chunks[snap.pos[cid]].content, needle):
            return r
    return None


@dataclass
class NeedleRun:
    folder: str
    questions: list[Question]  # the answerable ones, in order
    ranks: dict[str, list[int | None]]  # "E/hybrid" -> rank of the first correct chunk per question
    destroyed: dict[str, list[bool]]  # strategy -> needle whole in no chunk, per question
    chunks: dict[str, int]  # strategy -> chunks in the index
    depth: int
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # config -> fusion weights used

    def groups(self) -> dict[str, list[int]]:
        out = {"all": list(range(len(self.questions)))}
        for lang in sorted({q.lang for q in self.questions if q.lang}):
            out[lang] = [i for i, q in enumerate(self.questions) if q.lang == lang]
        return out

    def hits(self, config: str, k: int) -> list[int]:
        return [1 if r is not None and r <= k else 0 for r in self.ranks[config]]

    def summary(self, config: str, idx: Sequence[int] | None = None) -> dict:
        idx = list(range(len(self.questions))) if idx is None else list(idx)
        ranks = [self.ranks[config][i] for i in idx]
        out = {f"recall@{k}": rate(sum(1 for r in ranks if r is not None and r <= k), len(ranks)) for k in KS}
        out["mrr"] = float(np.mean([reciprocal_rank(r) for r in ranks])) if ranks else 0.0
        s = config.split("/")[0]
        out["destroyed"] = rate(sum(self.destroyed[s][i] for i in idx), len(idx))
        return out

    def compare(self, a: str, b: str, k: int = 4, idx: Sequence[int] | None = None) -> SignTest:
        idx = list(range(len(self.questions))) if idx is None else list(idx)
        ha, hb = self.hits(a, k), self.hits(b, k)
        return sign_test([ha[i] for i in idx], [hb[i] for i in idx])

    def table(self, compare: Sequence[tuple[str, str]] = (), at: Sequence[int] = (4, 20)) -> str:
        lines = []
        for group, idx in self.groups().items():
            lines.append(f"\n{group}: {len(idx)} answerable questions (rates with Wilson 95% intervals)")
            lines.append(f"{'config':<14} " + " ".join(f"{'R@' + str(k):<18}" for k in KS) + f" {'MRR':>5}  destroyed")
            for config in self.ranks:
                s = self.summary(config, idx)
                lines.append(f"{config:<14} " + " ".join(f"{fmt_rate(s[f'recall@{k}']):<18}" for k in KS)
                             + f" {s['mrr']:>5.3f}  {s['destroyed']['k']}/{s['destroyed']['n']}")
            for a, b in compare:
                for k in at:
                    lines.append(f"  {a} vs {b} @{k}: {self.compare(a, b, k, idx)}")
        return "\n".join(lines).lstrip("\n")

    def to_json(self, compare: Sequence[tuple[str, str]] = (), at: Sequence[int] = (4, 20)) -> dict:
        out = {"folder": self.folder, "depth": self.depth, "chunks": self.chunks, "weights": self.weights,
               "groups": {}}
        for group, idx in self.groups().items():
            out["groups"][group] = {
                "questions": len(idx),
                "configs": {c: self.summary(c, idx) for c in self.ranks},
                "tests": {f"{a} vs {b} @{k}": dataclasses.asdict(self.compare(a, b, k, idx))
                          for a, b in compare for k in at},
            }
        out["per_question"] = [{"question": q.question, "lang": q.lang, "style": q.style,
                                "ranks": {c: self.ranks[c][i] for c in self.ranks}}
                               for i, q in enumerate(self.questions)]
        return out


def parse_config(name: str) -> tuple[str, str, dict[str, float] | None]:
    """'E/hybrid' -> ('E', 'hybrid', None); 'E/hybrid:1:2' -> weights dense 1, bm25 2."""
    s, _, rest = name.partition("/")
    mode, *w = rest.split(":")
    if s not in STRATEGIES or mode not in MODES or (w and (mode != "hybrid" or len(w) != 2)):
        raise ValueError(f"bad configuration {name!r}: write STRATEGY/MODE, e.g. E/hybrid, E/bm25, or "
                         f"E/hybrid:DENSE_WEIGHT:BM25_WEIGHT")
    return s, mode, ({"dense": float(w[0]), "bm25": float(w[1])} if w else None)


def evaluate_needles(questions: Sequence[Question], folder: Path, embedder, base: Settings,
                     configs: Sequence[str] | None = None, depth: int = 20) -> NeedleRun:
    """Index the folder once per chunk strategy (temporary indexes) and rank every answerable question."""
    configs = list(configs or [f"{s}/{m}" for s in STRATEGIES for m in MODES])
    parsed = [parse_config(c) for c in configs]
    answerable = [q for q in questions if q.answerable]
    run = NeedleRun(str(folder), answerable, {c: [] for c in configs}, {}, {}, depth)
    embedder = embedder if isinstance(embedder, MemoEmbedder) else MemoEmbedder(embedder)
    for s in dict.fromkeys(p[0] for p in parsed):
        with tempfile.TemporaryDirectory(prefix=f"rag-eval-{s}-") as tmp:
            engine, report = _open_engine(folder, Path(tmp), embedder, base, chunk_strategy=s, candidates=depth)
            try:
                if report.count("failed"):
                    raise RuntimeError(f"strategy {s}: {report.count('failed')} file(s) failed to index: "
                                       f"{[o.reason for o in report.outcomes if o.status == 'failed']}")
                run.chunks[s] = len(engine.snapshot.chunks)
                run.destroyed[s] = [not any(contains(c.content, q.needle) for c in engine.snapshot.chunks)
                                    for q in answerable]
                plain = engine.settings
                for c, (cs, mode, w) in zip(configs, parsed):
                    if cs != s:
                        continue
                    engine.settings = plain if w is None else plain.replace(dense_weight=w["dense"], bm25_weight=w["bm25"])
                    for q in answerable:
                        run.ranks[c].append(needle_rank(engine, mode_ranking(engine, q.question, mode, depth), q.needle))
                    if mode == "hybrid":
                        run.weights[c] = engine.search(answerable[0].question).weights if answerable else {}
                    engine.settings = plain
            finally:
                engine.close()
    return run


# --- threshold sweep ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRow:
    threshold: float
    right: int  # answerable, and a kept chunk holds the needle
    wrong: int  # answerable, something kept, but not the needle
    refused: int  # answerable, nothing passed
    bluffs: int  # should refuse, yet something passed
    answerable: int
    refusable: int


@dataclass
class Sweep:
    questions: list[Question]
    nearest: list[float]  # nearest candidate's cosine distance, per question
    current: float  # the threshold the engine gives a question of the group's language (first group: all)
    budget: float  # the bluff rate allowed when suggesting a threshold
    rows: dict[str, list[SweepRow]]  # group ("all", "en", "en:off-folder", ...) -> one row per threshold
    suggested: dict[str, float | None]
    evidence: list[float] = field(default_factory=list)  # per question: the smallest threshold that answers it
    currents: dict[str, float] = field(default_factory=dict)  # group -> the engine's threshold for it
    at_current: dict[str, SweepRow] = field(default_factory=dict)  # group -> outcome at that threshold

    def at(self, group: str, threshold: float) -> SweepRow:
        return min(self.rows[group], key=lambda r: abs(r.threshold - threshold))

    def table(self, group: str = "all") -> str:
        rows = self.rows[group]
        a, r = rows[0].answerable, rows[0].refusable
        current = self.currents.get(group, self.current)
        lines = [f"{group}: {a} answerable, {r} should refuse; suggested threshold "
                 f"{_f(self.suggested[group])} (bluffs ≤ {self.budget:.0%}); the engine's {current:.3f}",
                 f"{'threshold':>9}  {'right chunk kept':<22} {'refused':<20} {'wrong kept':>10}  {'bluffs':<20}"]
        if group in self.at_current:
            row = self.at_current[group]
            lines.append(f"{'engine':>9}  {fmt_rate(rate(row.right, a)):<22} {fmt_rate(rate(row.refused, a)):<20} "
                         f"{row.wrong:>10}  {fmt_rate(rate(row.bluffs, r)):<20} <- as asked (per-language threshold)")
        for row in rows:
            mark = " <- current" if abs(row.threshold - current) < 1e-9 else ""
            mark += " <- suggested" if self.suggested[group] is not None and abs(row.threshold - self.suggested[group]) < 1e-9 else ""
            lines.append(f"{row.threshold:>9.3f}  {fmt_rate(rate(row.right, a)):<22} {fmt_rate(rate(row.refused, a)):<20} "
                         f"{row.wrong:>10}  {fmt_rate(rate(row.bluffs, r)):<20}{mark}")
        return "\n".join(lines)

    def distances(self) -> list[dict]:
        ev = self.evidence or [math.nan] * len(self.questions)
        return [{"question": q.question, "lang": q.lang or "?", "kind": "refusable" if q.refuse else "answerable",
                 "set_kind": q.kind, "nearest": d, "evidence": None if not math.isfinite(e) else e}
                for q, d, e in zip(self.questions, self.nearest, ev)]

    def to_json(self) -> dict:
        return {"current": self.current, "budget": self.budget, "suggested": self.suggested,
                "currents": self.currents, "at_current": {g: dataclasses.asdict(r) for g, r in self.at_current.items()},
                "distances": self.distances(),
                "rows": {g: [dataclasses.asdict(r) for r in rows] for g, rows in self.rows.items()}}


def _f(x: float | None) -> str:
    return "none" if x is None else f"{x:.3f}"


def default_thresholds(current: float) -> list[float]:
    grid = {round(0.2 + 0.025 * i, 3) for i in range(37)}  # 0.200 .. 1.100
    return sorted(grid | {round(current, 3)})


def suggest_threshold(rows: Sequence[SweepRow], budget: float) -> float | None:
    """The threshold that keeps the right chunk for the most answerable questions while the bluff rate
    stays within budget; the smallest such threshold on a tie. None without both kinds of question."""
    if not rows or rows[0].answerable == 0 or rows[0].refusable == 0:
        return None
    ok = [r for r in rows if r.bluffs <= budget * r.refusable + 1e-9]
    if not ok:
        return None
    return max(ok, key=lambda r: (r.right, -r.threshold)).threshold


def _outcome(q: Question, kept: Sequence) -> str:
    if q.refuse:
        return "bluff" if kept else "refused"
    if not kept:
        return "refused"
    return "right" if any(contains(c.content, q.needle) for c in kept) else "wrong"


def _row(t: float, idx: Sequence[int], questions: Sequence[Question], outcome: Sequence[str]) -> SweepRow:
    ans = [i for i in idx if questions[i].answerable]
    ref = [i for i in idx if questions[i].refuse]
    return SweepRow(t, sum(outcome[i] == "right" for i in ans), sum(outcome[i] == "wrong" for i in ans),
                    sum(outcome[i] == "refused" for i in ans), sum(outcome[i] == "bluff" for i in ref), len(ans), len(ref))


def sweep(engine, questions: Sequence[Question], *, budget: float = 0.1, thresholds: Sequence[float] | None = None,
          results: Sequence[SearchResult] | None = None) -> Sweep:
    """Search each question once; gate the same candidates at every threshold, with the full evidence test
    (distance and the support test for the question's language), and once as the engine would (each
    question at its own language's threshold). Groups: all, each language, and each language by kind
    of question to refuse (its answerable questions beside them)."""
    results = list(results) if results is not None else [engine.search(q.question) for q in questions]
    cap = engine.settings.max_chunks
    choices = [engine.threshold_choice(q.question, lang=q.lang or None) for q in questions]
    current = engine.threshold_choice("").value
    thresholds = list(thresholds or default_thresholds(current))
    nearest = [min((c.distance for c in r.candidates), default=float("nan")) for r in results]
    evidence = [min((c.distance for c in r.candidates if ch.rule.passes(c)), default=math.inf)
                for r, ch in zip(results, choices)]
    groups = {"all": list(range(len(questions)))}
    for lang in sorted({q.lang for q in questions if q.lang}):
        mine = [i for i, q in enumerate(questions) if q.lang == lang]
        groups[lang] = mine
        kinds = sorted({questions[i].kind for i in mine if questions[i].refuse and questions[i].kind})
        for kind in kinds if len(kinds) > 1 else ():
            groups[f"{lang}:{kind}"] = [i for i in mine if questions[i].answerable or questions[i].kind == kind]
    rows: dict[str, list[SweepRow]] = {g: [] for g in groups}
    for t in thresholds:
        outcome = [_outcome(q, gate(r, t, cap, ch.rule).kept) for q, r, ch in zip(questions, results, choices)]
        for g, idx in groups.items():
            rows[g].append(_row(t, idx, questions, outcome))
    as_asked = [_outcome(q, gate(r, ch.value, cap, ch.rule).kept) for q, r, ch in zip(questions, results, choices)]
    at_current = {g: _row(math.nan, idx, questions, as_asked) for g, idx in groups.items()}
    currents = {g: (choices[idx[0]].value if g != "all" and idx else current) for g, idx in groups.items()}
    suggested = {g: suggest_threshold(rs, budget) for g, rs in rows.items()}
    return Sweep(list(questions), nearest, current, budget, rows, suggested, evidence, currents, at_current)


# --- why wasn't it found? ----------------------------------------------------------------------------------

EXTRACTION, CHUNKING, RANKS, GATED, CAPPED_OUT, CITED = "extraction", "chunking", "ranks", "gated", "capped", "cited"
UNSUPPORTED_OUT = "unsupported"


@dataclass
class Diagnosis:
    verdict: str  # one of extraction, chunking, ranks, gated, unsupported, capped, cited
    message: str  # one plain sentence for the person
    doc_name: str | None = None
    chunk_id: str | None = None
    straddles: tuple[str, str] | None = None  # chunking: contents of the two chunks the sentence falls across
    dense_rank: int | None = None  # over the whole snapshot (ranks), or within the candidates
    bm25_rank: int | None = None  # None: the chunk shares no searchable word with the question
    fused_rank: int | None = None
    distance: float | None = None
    threshold: float | None = None
    citation: int | None = None  # cited: the [n] it was cited as
    candidates: int = 0


def _find_span(text: str, sentence: str) -> tuple[int, int] | None:
    words = sentence.split()
    if not words:
        return None
    m = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return (m.start(), m.end()) if m else None


def _full_ranks(engine, result: SearchResult, chunk_ids: Sequence[str]) -> dict[str, tuple[int | None, int | None, int, float]]:
    """Dense, BM25 and fused rank of each chunk over the whole snapshot, as if every chunk were a candidate."""
    snap = engine.snapshot
    ids = [c.id for c in snap.chunks]
    qv = engine.embedder.embed_batch([result.query])[0]
    sims = snap.vectors @ qv
    bm = snap.lexical.scores(result.query)
    dense_order = [ids[i] for i in np.argsort(-sims, kind="stable")]
    bm_order = [ids[i] for i in np.argsort(-bm, kind="stable") if bm[i] > 0]
    fused = rrf({"dense": dense_order, "bm25": bm_order}, k=engine.settings.rrf_k, weights=result.weights)
    dist = {c: 1.0 - s for c, s in zip(ids, sims)}
    fused_order = sorted(fused, key=lambda c: (-fused[c], dist[c]))
    d_rank = {c: r for r, c in enumerate(dense_order, start=1)}
    b_rank = {c: r for r, c in enumerate(bm_order, start=1)}
    f_rank = {c: r for r, c in enumerate(fused_order, start=1)}
    return {c: (d_rank.get(c), b_rank.get(c), f_rank[c], dist[c]) for c in chunk_ids}


def why_not_found(engine, result: SearchResult, gated: Gated, expected_sentence: str) -> Diagnosis:
    """Where the sentence the person expected was lost, for a question already asked and gated."""
    sentence = " ".join(expected_sentence.split())
    n = len(result.candidates)
    if not sentence:
        return Diagnosis(EXTRACTION, "Paste the sentence you expected the answer to come from.", candidates=n)
    snap = engine.snapshot
    holders = [c for c in snap.chunks if contains(c.content, sentence)]
    if holders:
        doc_name = lambda c: snap.docs.get(c.doc_id, (c.doc_id,))[0]  # noqa: E731
        holder_ids = {c.id for c in holders}
        order = {KEPT: 0, CAPPED: 1, UNSUPPORTED: 2, OVER: 3}
        among = sorted(((c, v) for c, v in zip(gated.candidates, gated.verdicts) if c.chunk_id in holder_ids),
                       key=lambda cv: order.get(cv[1], 3))
        if among:
            c, v = among[0]
            base = dict(doc_name=c.doc_name, chunk_id=c.chunk_id, dense_rank=c.dense_rank, bm25_rank=c.bm25_rank,
                        fused_rank=c.fused_rank, distance=c.distance, threshold=gated.threshold, candidates=n)
            if v == KEPT:
                cit = next((x.n for x in gated.citations if x.chunk_id == c.chunk_id), None)
                return Diagnosis(CITED, f"It was found and cited as [{cit}] ({c.doc_name}, fused rank {c.fused_rank}, "
                                        f"distance {c.distance:.3f}).", citation=cit, **base)
            if v == CAPPED:
                ahead = sum(1 for x, vv in zip(gated.candidates, gated.verdicts) if vv == KEPT)
                return Diagnosis(CAPPED_OUT, f"Its chunk passed the threshold (distance {c.distance:.3f} ≤ "
                                             f"{gated.threshold:.3f}) but came at fused rank {c.fused_rank}, after the "
                                             f"{ahead} chunks the cap of {gated.max_chunks} allows.", **base)
            if v == UNSUPPORTED:
                need = gated.rule.needed(c.distance)
                lacks = f": it does not mention {', '.join(c.missing)}" if c.missing else ""
                return Diagnosis(UNSUPPORTED_OUT, f"Its chunk is close enough (distance {c.distance:.3f} ≤ "
                                                  f"{gated.threshold:.3f}) but holds {c.support:.0%} of the question's "
                                                  f"words, under the {need:.0%} the support test asks{lacks}. Asking "
                                                  f"with the document's own words would find it.", **base)
            return Diagnosis(GATED, f"Its chunk was a candidate (fused rank {c.fused_rank}) but its distance "
                                    f"{c.distance:.3f} is over the threshold {gated.threshold:.3f}; a threshold of "
                                    f"{c.distance:.3f} would let it through.", **base)
        ranks = _full_ranks(engine, result, [c.id for c in holders])
        best = min(holders, key=lambda c: ranks[c.id][2])
        d, b, f, dist = ranks[best.id]
        bm = f"BM25 rank {b}" if b else "no BM25 match (it shares no searchable word with the question)"
        return Diagnosis(RANKS, f"Its chunk ({doc_name(best)}) was not among the {n} candidates: over the whole "
                                f"folder it ranks {d} by meaning (dense), {bm}, {f} fused.",
                         doc_name=doc_name(best), chunk_id=best.id, dense_rank=d, bm25_rank=b, fused_rank=f,
                         distance=dist, threshold=gated.threshold, candidates=n)
    # No chunk holds it whole: is it in a document's extracted text at all?
    for rec in engine.documents():
        if rec.status not in ("indexed", "stale"):
            continue
        try:
            doc = extract(engine.folder / rec.path, rec.path.rsplit("/", 1)[-1], max_chars=engine.settings.max_chars,
                          max_pages=engine.settings.max_pages)
        except Exception:
            continue
        span = _find_span(doc.text, sentence)
        if span is None:
            continue
        chunks = [c for c in snap.chunks if c.doc_id == rec.doc_id]
        s, e = span

        def covering(pos: int):
            inside = [c for c in chunks if int(c.meta["start"]) <= pos < int(c.meta["end"])]
            return inside[0] if inside else None

        first, last = covering(s), covering(e - 1)
        if first is not None and last is not None and first.id != last.id:
            return Diagnosis(CHUNKING, f"It is in {rec.path}, but no single chunk holds it whole: it starts in one "
                                       f"chunk and ends in the next.", doc_name=rec.path,
                             straddles=(first.content, last.content), threshold=gated.threshold, candidates=n)
        return Diagnosis(CHUNKING, f"It is in {rec.path}, but no chunk quotes it whole (it sits in a heading or "
                                   f"between passages).", doc_name=rec.path, threshold=gated.threshold, candidates=n,
                         straddles=(first.content if first else "", last.content if last else "") if first or last else None)
    failed = [r.path for r in engine.documents() if r.status == "failed"]
    extra = f" ({len(failed)} file(s) failed to extract: {', '.join(failed[:3])})" if failed else ""
    return Diagnosis(EXTRACTION, "No indexed document's extracted text contains that sentence: it was lost at "
                                 f"extraction, or it is worded differently in the file{extra}.",
                     threshold=gated.threshold, candidates=n)


# --- `rag eval ...` -----------------------------------------------------------------------------------------

DEFAULT_COMPARE = ("E/hybrid:A/hybrid", "E/hybrid:C/hybrid", "E/hybrid:E/dense", "E/hybrid:E/bm25")


def add_eval_parser(sub) -> None:
    """Register `rag eval needles|sweep|beir` on the CLI's subparsers."""
    pe = sub.add_parser("eval", help="measure retrieval: needle sets, threshold sweep, BEIR benchmarks")
    es = pe.add_subparsers(dest="eval_cmd", required=True)
    pn = es.add_parser("needles", help="Recall@1/4/8/20, MRR, destroyed answers for strategies A-F x modes")
    pn.add_argument("set", help="needle set (JSONL)")
    pn.add_argument("--configs", help="comma-separated STRATEGY/MODE[:DENSE_W:BM25_W] (default: A-F x dense, bm25, hybrid)")
    pn.add_argument("--compare", action="append", metavar="A:B",
                    help="paired sign test between two configurations, e.g. E/hybrid:A/hybrid (repeatable)")
    pn.add_argument("--at", default="4,20", help="k values for the sign tests (default 4,20)")
    pn.add_argument("--json", action="store_true")
    pn.set_defaults(fn=cmd_eval_needles)
    pw = es.add_parser("sweep", help="nearest distances and a threshold sweep of answerable vs refusable questions")
    pw.add_argument("inp", metavar="IN", help="questions (JSONL: needle set format)")
    pw.add_argument("out", metavar="OUT", help="where to write the sweep as JSON")
    pw.add_argument("--budget", type=float, default=0.1, help="bluff rate allowed when suggesting (default 0.1)")
    pw.set_defaults(fn=cmd_eval_sweep)
    pb = es.add_parser("beir", help="nDCG@10, Recall@10/100, MRR@10 on a BEIR folder (temporary index)")
    pb.add_argument("dir", help="folder with corpus.jsonl(.gz), queries.jsonl, qrels/<split>.tsv")
    pb.add_argument("--split", default="test")
    pb.add_argument("--strategy", default="E")
    pb.add_argument("--candidates", type=int, default=1000, help="chunks per side fused for hybrid (default 1000)")
    pb.add_argument("--fusion", choices=("chunk", "doc"), default="chunk")
    pb.add_argument("--cache", help="folder to keep vectors in between runs (e.g. bench/out)")
    pb.add_argument("--json", action="store_true")
    pb.set_defaults(fn=cmd_eval_beir)


def _settings(args) -> Settings:
    from rag.settings import load_settings

    return load_settings(args.config, folder=args.folder, index_dir=args.index_dir)


def _pairs(specs: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for spec in specs:
        # Configurations hold ':' themselves (weights): split between the two STRATEGY/ names.
        m = re.match(r"^([A-F]/[^/]+?):([A-F]/.+)$", spec)
        if not m:
            raise ValueError(f"--compare {spec!r}: write A:B, e.g. E/hybrid:A/hybrid")
        out.append((m.group(1), m.group(2)))
    return out


def cmd_eval_needles(args) -> int:
    from rag.embed import load_embedder

    settings = _settings(args)
    questions = load_questions(args.set)
    if not questions:
        raise ValueError(f"no questions in {args.set}")
    problems = check_needles(questions, settings.folder)
    for p in problems:
        print(f"warning: {p}")
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else None
    compare = _pairs(args.compare or DEFAULT_COMPARE)
    configs = list(dict.fromkeys((configs or [f"{s}/{m}" for s in STRATEGIES for m in MODES])
                                 + [c for pair in compare for c in pair]))
    at = [int(k) for k in args.at.split(",")]
    embedder = load_embedder(settings.model, settings.embed_batch_size, settings.model_languages)
    run = evaluate_needles(questions, settings.folder, embedder, settings, configs)
    if args.json:
        print(json.dumps(run.to_json(compare, at), ensure_ascii=False, indent=1))
    else:
        print(f"{settings.folder}: {len(run.questions)} answerable questions; chunks per strategy {run.chunks}")
        print(run.table(compare, at))
    return 0


def cmd_eval_sweep(args) -> int:
    from rag.embed import load_embedder

    settings = _settings(args)
    questions = load_questions(args.inp)
    if not questions:
        raise ValueError(f"no questions in {args.inp}")
    embedder = load_embedder(settings.model, settings.embed_batch_size, settings.model_languages)
    # A temporary index of the folder with the person's settings: their own index is never written to.
    with tempfile.TemporaryDirectory(prefix="rag-sweep-") as tmp:
        engine, _ = _open_engine(settings.folder, Path(tmp), embedder, settings)
        try:
            sw = sweep(engine, questions, budget=args.budget)
        finally:
            engine.close()
    Path(args.out).write_text(json.dumps(sw.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    for group in sw.rows:
        print(sw.table(group) + "\n")
    print(f"written: {args.out}")
    return 0


def cmd_eval_beir(args) -> int:
    from rag.embed import load_embedder

    settings = _settings(args)
    embedder = load_embedder(settings.model, settings.embed_batch_size, settings.model_languages)
    run = run_beir(args.dir, embedder, settings, split=args.split, strategy=args.strategy,
                   candidates=args.candidates, fusion=args.fusion, cache=Path(args.cache) if args.cache else None)
    if args.json:
        print(json.dumps({k: v for k, v in vars(run).items() if k != "per_query"}, indent=1))
    else:
        print(run.table())
    return 0

"""Search: dense top-N and BM25 top-N (and the multilingual side's top-N when it is on), fused per question,
every candidate fully explained.

The multilingual side (rag.indexing.multilingual) is a second dense side over the same chunks, searched the same way
(an exact scan of its vectors in the snapshot); a passage in another language than the question's is
marked `across`, and weighs that side more in the fusion (rag.searching.fusion.fuse).

Fusion: `rag.searching.fusion` (the arithmetic and the per-question weights).

Feedback (`settings.tuning.feedback`, 5): the fused ranking's best five rows stay first, as found, and both sides
search again from them (`feedback`: the question's vector moved toward theirs; a BM25 query in which the
question's own words keep half the weight and the ten words those rows use most tellingly share the
rest); that second ranking orders rows 6 onwards. With `settings.tuning.feedback_pool` it reads only the rows the
first search's sides listed (each side's list run on to that many times the candidates), not the whole folder
again: its cost then follows the candidates, not the folder's size (a snapshot that reads the store asks the
store again). What answers a needle-like question is in the first
rows, which feedback leaves alone (on SQuAD, moving them cost R@1 .82 -> .69); a short question about a
subject the folder covers in many passages gains below them (NFCorpus nDCG@10 .347 -> .371).

Each candidate keeps its dense rank, BM25 rank, fused rank, fused score, each side's normalised score and
its cosine distance (a row feedback placed: that search's ranks and scores, the question's own distance);
a candidate that only BM25 found gets its distance computed from its stored vector, so every row of the
retrieval table has one. Ranks are 1-based; None means that side did not return the
chunk in its top N. The result keeps the weights and fusion used for its question.

Search only sees a `Snapshot`: the chunks of documents that were completely indexed when it was built,
with their texts, offsets, vectors and BM25 index. Chunks being written meanwhile are skipped, so a
question asked during indexing answers from what is already indexed. Both sides read the snapshot, and
nothing else, at query time: BM25 its lexical index, the dense side an exact scan of its vectors (unit
vectors: distance = 1 - dot; ties keep the snapshot's order). Chroma stays the store of truth (the
snapshot is rebuilt from it) but is not asked at query time, because during a sync it already holds a
re-indexed document's new vectors under the same chunk ids while the snapshot still shows the old texts
and offsets: a quote could be shown with another text's distance, and a removed document stay citable
on one side only. One search takes one snapshot reference, which the engine swaps whole on publish, so
the quote, offsets, distance and BM25 score of every candidate describe one and the same state. A
filter by document applies before each side ranks (a row mask on both), not to the results. A snapshot
built to read the store (`search_reads = "store"`, rag.indexing.served) holds ids and BM25 only: its dense sides ask
the store's HNSW index and its passages are read for the candidates, each checked against the snapshot's
version of its document.

What it does not do: weigh or decide. What each candidate holds of the question is weighed by the deciding
stage (rag.deciding.evidence), and what is good enough is the gate's job, run separately so that a threshold
change re-gates the same candidates without searching again.
"""

from __future__ import annotations

import concurrent.futures
import functools
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from rag.indexing.embed import Embedder
from rag.indexing.multilingual import MultilingualEmbedder
from rag.indexing.snapshot import Snapshot, pool_depth
from rag.indexing.store import StoredChunk
from rag.indexing.vectors import Distances, among, nearest
from rag.searching.fusion import fused_order
from rag.settings import Settings, Tuning
from rag.text.languages import question_language
from rag.text.lexical import analyze, analyze_query


@dataclass(frozen=True)
class Candidate:
    chunk_id: str
    doc_id: str
    doc_name: str
    title: str
    section: str
    content: str
    start: int
    end: int
    page: int | None
    page_end: int | None
    kind: str
    fused_rank: int
    fused_score: float
    distance: float
    dense_rank: int | None
    bm25_rank: int | None
    bm25_score: float | None
    # Each side's normalised score that went into `fused_score` (None under rank fusion, which reads none).
    dense_norm: float | None = None
    bm25_norm: float | None = None
    # The fields below, to `wordless`, are evidence, written by the deciding stage (rag.deciding.evidence.weighed);
    # a search leaves them at these defaults. The support test's input: the IDF-weighted share of the question's
    # own content words this chunk holds (1.0 when the question has none), and the words it lacks.
    support: float = 1.0
    missing: tuple[str, ...] = ()
    # Names the question writes (capitalised mid-sentence) that no chunk of the folder holds: the same for
    # every candidate of a search; the gate then denies the close-paraphrase relaxation (rag.deciding.gate).
    unknown_names: tuple[str, ...] = ()
    # Of those, the ones written as words, not acronyms ("falcon" in "Project Falcon", not "ppp"): the
    # question is about something the folder never mentions, so no passage is evidence for it (rag.deciding.gate).
    absent_names: tuple[str, ...] = ()
    # Names the question writes (not acronyms) that the folder uses but this chunk does not: it is about
    # something else ("Project Heron" for a question about Project Lantern), and fails (rag.deciding.gate). Also
    # numbers written as names, a follow-up's from the question it was joined to ("2" of "Level 2").
    lacks_names: tuple[str, ...] = ()
    # Codes the question names (`is_code`: ERR-4017, UTF-8), or a follow-up names through "it" (those of the
    # question it was joined to), that this chunk holds, exactly as one token: such a chunk passes the
    # support test whatever other words it lacks (rag.deciding.gate).
    codes: tuple[str, ...] = ()
    lang: str = ""  # the chunk's language, as indexing detected it ("" when unclear)
    place: str = ""  # where it sits in the format's own terms ("Budget!A14:F16", "slide 4"; rag.reading.document.Place)
    # A sheet's passage: its rows (rag.indexing.chunk.Chunk.rows), to name the rows of a part of it; "" for other
    # formats and for passages indexed before chunks kept them.
    rows: str = ""
    # Its words' OCR confidence, 0-100 (mean, lowest), when they came from OCR (a scan); None otherwise.
    ocr_confidence: float | None = None
    ocr_lowest: float | None = None
    # For a follow-up joined to the question before it: the share (IDF-weighted) of that question's own
    # words, the subject the follow-up leans on, this chunk holds. None for a question searched alone.
    subject_support: float | None = None
    # For such a follow-up, whether another passage of this chunk's document holds some of that subject:
    # "E a renda?" after "Quanto é a caução?" asks about the same lease, whose rent clause does not repeat
    # "caução" (rag.deciding.gate). None for a question searched alone.
    subject_in_document: bool | None = None
    # The question has no word of its own to look for ("What is it?", "E então?", "Há ou à?": question
    # words and stopwords only): no passage can be shown to answer it, unless it refers to a code (rag.deciding.gate).
    wordless: bool = False
    # The content hash of the document version the passage was read from: a citation's link carries it, so
    # the viewer can tell an old answer's offsets from the current text's after the file changed.
    version: str = ""
    # The judge's score (a logit: over 0, more likely to answer than not) and its rank among the candidates
    # it read (rag.deciding.judge.rerank); None for a candidate it did not read.
    judge: float | None = None
    judge_rank: int | None = None
    # The multilingual side (rag.indexing.multilingual), when it was searched: its rank (None: not in its top N), its
    # cosine distance and its normalised score in the fusion.
    side_rank: int | None = None
    side_distance: float | None = None
    side_norm: float | None = None
    # Written in another language than the question's (both identified): the multilingual side weighed
    # more in its fused score (rag.searching.fusion), and the gate reads its multilingual distance, not MiniLM's, nor
    # the question's words (rag.deciding.gate).
    across: bool = False
    # The support model's probability that this passage answers (rag.deciding.support_model), for a question in
    # a language it reads; None otherwise.
    supported: float | None = None

    @property
    def lacking(self) -> tuple[str, ...]:
        """What the table shows it lacks: the question's words, then a name of the question before it."""
        return self.missing + tuple(n for n in self.lacks_names if n not in self.missing)


@dataclass
class SearchResult:
    question: str  # as the person asked it
    query: str  # what was searched (a follow-up carries its subject)
    candidates: list[Candidate]
    weights: dict[str, float]  # the fusion weights used for this question
    timings_ms: dict[str, float] = field(default_factory=dict)
    searched_chunks: int = 0
    terms: tuple[str, ...] = ()  # the content words the support test looks for
    unknown_names: tuple[str, ...] = ()  # of `terms`: names the question writes that the folder never uses
    absent_names: tuple[str, ...] = ()  # of `unknown_names`: those not written as acronyms
    subject: tuple[str, ...] = ()  # a follow-up joined to the question before it: that question's words
    language: str = ""  # the question's language ('en', 'pt', '' when unclear)
    fusion: str = "rrf"  # how the sides were fused (rag.searching.fusion.FUSIONS)
    # Feedback (settings.tuning.feedback): the first `kept_first` candidates are the question's own ranking, the
    # rest were ordered by a second search from them, whose BM25 query also held `expansion` (analysed
    # words). Without feedback: every candidate is the first ranking's and `expansion` is empty.
    kept_first: int = 0
    expansion: tuple[str, ...] = ()
    pooled: int = 0  # how many rows that second search read (`settings.tuning.feedback_pool`); 0: the whole folder
    # A follow-up by its form searched alone (`Engine.search`): the joined query that was tried first and
    # found no passage holding enough of this question's own words. "" otherwise.
    joined_tried: str = ""
    folder_languages: tuple[str, ...] = ()  # the languages the folder's passages are written in
    judged: int = 0  # how many of the first candidates the judge read and reordered (rag.deciding.judge.rerank)
    judge_stamp: str = ""  # which judge read them

    @property
    def searched_note(self) -> str:
        """What was searched, when it is not the question as asked (a follow-up), else ""."""
        if self.joined_tried:
            return (f"Searched on its own: with the previous question (\"{self.joined_tried}\") no passage held "
                    f"enough of its own words.")
        return f"Searched as: {self.query}" if self.query != self.question else ""

    @property
    def feedback_note(self) -> str:
        """One sentence for the retrieval table when feedback ordered some of its rows, else ""."""
        if self.kept_first >= len(self.candidates):
            return ""
        words = f", and BM25 also searched for {', '.join(self.expansion)}" if self.expansion else ""
        among = f", among the {self.pooled} passages the first search's sides listed" if self.pooled else ""
        return (f"Rows {self.kept_first + 1}–{len(self.candidates)} were ordered by a second search from rows "
                f"1–{self.kept_first}{among} (their mean vector added to the question's{words}); their dense and "
                f"BM25 ranks are that search's. Every distance is the question's own.")




def dense_top(snapshot: Snapshot, qv: np.ndarray, n: int, mask: np.ndarray | None = None,
              side: str = "dense", depth: int = 0) -> tuple[list[int], Distances]:
    """A dense side's best `n` rows (`side`: "dense", MiniLM's, or "multilingual") among those `mask` keeps
    (> 0), closest first, equal distances in snapshot order, and every row's cosine distance (1 - dot: the
    vectors are unit), which the other sides' candidates take theirs from. An exact scan, or in a large
    folder the side's graph re-ranked exactly (`rag.indexing.vectors`). `depth` (> n): the list runs on to that many
    rows, the best of what the scan or graph read beyond the first `n` (feedback's pool)."""
    vectors = snapshot.side_vectors if side == "multilingual" else snapshot.vectors
    if not snapshot.chunks or vectors is None or n <= 0:
        return [], Distances(np.zeros((0, 0), dtype=np.float32), qv, full=np.zeros(len(snapshot.chunks), dtype=np.float32))
    if snapshot.reads_store:  # the store's own index (rag.indexing.served)
        doc_ids = None if mask is None else sorted(set(snapshot.doc_of[np.asarray(mask) > 0]))
        # Only the candidates, whatever `depth`: feedback asks the store again (`dense_among`), so a deeper
        # list would only lengthen the server's answer.
        found = vectors.nearest(qv, n, snapshot.pos, doc_ids)
        return [r for r, _ in found], Distances(vectors, np.asarray(qv, dtype=np.float32), known=dict(found))
    graph, cover = snapshot.graph_for(side)
    return nearest(vectors, qv, n, mask, graph, cover, depth)


# The multilingual side searches its graph on this thread while the caller's searches MiniLM's (and BM25):
# faiss releases the interpreter, so on two cores a search waits for the slower side, not for both. One
# thread: searches from several sessions queue here as they would on the cores.
_SIDE = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="multilingual-side")


def _side_search(snapshot: Snapshot, sq: np.ndarray, n: int, mask: np.ndarray | None, depth: int = 0,
                 pool: np.ndarray | None = None):
    """The multilingual side's `dense_top` to `depth` (or, with a `pool`, feedback's `dense_among`), started:
    on the second thread when the side goes through its graph, else when called (a scan of a large matrix is
    bound by memory, and two at once took longer than one after the other: 24.8 against 20.9 ms at 134,926
    passages; a pool is a few hundred rows); on the second thread as well when the side's store answers
    (rag.indexing.served), so that both sides wait on the server at once. Call the result for (rows, distances)."""
    if pool is not None:
        return functools.partial(dense_among, snapshot, sq, pool, n, mask, "multilingual")
    search = functools.partial(dense_top, snapshot, sq, n, mask, "multilingual", depth)
    graph, _ = snapshot.graph_for("multilingual")
    if snapshot.reads_store or graph is not None and graph.breadth and mask is None:
        return _SIDE.submit(search).result
    return search


def feedback_pool(snapshot: Snapshot, settings: Settings, *lists: Sequence[int]) -> np.ndarray | None:
    """The rows feedback's second search reads (ascending): those the first search's sides listed, when
    `settings.tuning.feedback_pool` asks for a pool. None, the whole folder: by default, and always for a snapshot
    that reads the store (rag.indexing.served), whose sides ask the store's index again (its vectors are not at hand,
    and reading a pool's would cost more than the query)."""
    if not settings.tuning.feedback_pool or snapshot.reads_store:
        return None
    return np.unique(np.fromiter((r for rows in lists for r in rows), dtype=np.int64))


def dense_among(snapshot: Snapshot, qv: np.ndarray, pool: np.ndarray | None, n: int,
                mask: np.ndarray | None = None, side: str = "dense") -> tuple[list[int], Distances]:
    """Feedback's second dense search: the side's best `n` rows of `pool` (`feedback_pool`), each distance
    exact; the whole folder's (`dense_top`) when the pool is None."""
    if pool is None:
        return dense_top(snapshot, qv, n, mask, side)
    return among(snapshot.side_vectors if side == "multilingual" else snapshot.vectors, qv, pool, n)






# The feedback rule's version, in the calibration's fingerprint beside its tuned values (Tuning.feedback_*):
# 2, only passages in the question's language lend words, and no single letter or bare number.
FEEDBACK_VERSION = 2


def feedback(snapshot: Snapshot, query: str, qv: np.ndarray, rows: Sequence[int],
             language: str = "", tuning: Tuning = Tuning()) -> tuple[np.ndarray, dict[str, float], tuple[str, ...]]:
    """Pseudo-relevance feedback from the passages at `rows` (the first ranking's best): a question vector
    moved toward their mean (Rocchio, `tuning.feedback_dense`), and a BM25 query in which the question's own
    tokens keep `tuning.feedback_own` of the weight and the passages' `tuning.feedback_terms` most telling
    tokens (term frequency times IDF, averaged over the passages: RM3's expansion) share the rest. Only
    passages in the question's language lend words, and no single letter or bare number. Returns (vector, weighted
    tokens, the added tokens). A short question about a subject a folder covers in many passages then
    reaches the passages that use the folder's words for it rather than the question's."""
    lex = snapshot.lexical
    qv2 = _toward(qv, snapshot.vectors[list(rows)], tuning.feedback_dense)
    lent: dict[str, float] = {}
    lenders = [i for i in rows if not language or snapshot.langs[i] in ("", language)]
    for i in lenders:
        # The tokens BM25 indexed (a snapshot built around a given index may not keep them: analyse again).
        tokens = (snapshot.tokens[i] if snapshot.tokens is not None
                  else analyze(snapshot.chunks[i].text, snapshot.langs[i]))
        for t, count in Counter(tokens).items():
            if len(t) > 1 and any(ch.isalpha() for ch in t):  # not "g", "30" or "4.155"
                lent[t] = lent.get(t, 0.0) + count / len(tokens) * lex.idf(t) / len(lenders)
    added = sorted(lent, key=lambda t: (-lent[t], t))[:tuning.feedback_terms]
    own = [t for t in analyze_query(query, lex.languages) if lex.known(t)]
    bag: dict[str, float] = {t: tuning.feedback_own / len(own) for t in own}
    total = sum(lent[t] for t in added) or 1.0
    for t in added:
        bag[t] = bag.get(t, 0.0) + (1 - tuning.feedback_own) * lent[t] / total
    return qv2, bag, _as_written([t for t in added if t not in own], list(snapshot.passages(lenders).values()))


def _toward(qv: np.ndarray, rows: np.ndarray, weight: float) -> np.ndarray:
    """The question's vector moved toward the mean of `rows` (Rocchio, as `feedback` does), unit again."""
    moved = np.asarray(qv, dtype=np.float64) + weight * rows.mean(axis=0)
    return (moved / (np.linalg.norm(moved) or 1.0)).astype(rows.dtype)


def _across(snapshot: Snapshot, ids: Sequence[str], language: str) -> set[str]:
    """Of `ids`, the passages written in another language than the question's (both identified)."""
    if not language:
        return set()
    return {cid for cid in ids if snapshot.langs[snapshot.pos[cid]] not in ("", language)}


@functools.lru_cache(maxsize=100_000)
def _word_tokens(word: str, lang: str) -> tuple[str, ...]:
    """One written word's index tokens (cached: the same passages' words are read for every question)."""
    return tuple(analyze(word, lang))


def _as_written(tokens: Sequence[str], chunks: Sequence[StoredChunk]) -> tuple[str, ...]:
    """Each analysed token as the passages first write it ("nutrit" -> "nutrition"), for the table's note."""
    wanted, seen = set(tokens), {}
    for chunk in chunks:
        lang = chunk.meta.get("lang", "") or "en"
        for word in re.findall(r"\w+", chunk.text):
            for t in _word_tokens(word, lang):
                if t in wanted:
                    seen.setdefault(t, word.lower())
            if len(seen) == len(wanted):
                return tuple(seen[t] for t in tokens)
    return tuple(seen.get(t, t) for t in tokens)


def hybrid_search(question: str, *, embedder: Embedder, snapshot: Snapshot, settings: Settings,
                  doc_ids: Sequence[str] | None = None, query: str | None = None,
                  weights: dict[str, float] | None = None,
                  vector: np.ndarray | None = None, side: MultilingualEmbedder | None = None,
                  side_vector: np.ndarray | None = None) -> SearchResult:
    """Search one snapshot: the caller passes the reference it took once, so a publish in the middle of
    this search cannot mix two states. `vector`: the query's embedding when the caller has it already
    (calibration); `side`, `side_vector`: the multilingual side's model and the query's vector from it (the
    side is searched when the snapshot holds its vectors and either is given). The store is not read at
    query time (see the module docstring).

    Retrieval only (both sides, fusion, feedback): the candidates' evidence fields (support, the names and
    words they lack, codes, a follow-up's subject) stay at their defaults until the deciding stage weighs them
    against the question (`rag.deciding.evidence.weighed`)."""
    query = query or question
    n = settings.candidates
    weights = weights or {"dense": settings.tuning.dense_weight, "bm25": settings.tuning.bm25_weight,
                          "multilingual": settings.tuning.multilingual_weight_read}
    language = question_language(question, snapshot.language_shares)
    t = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        timings[name] = (now - t) * 1000
        t = now

    qv = embedder.embed_batch([query])[0] if vector is None else vector
    lap("embed")

    mask = None
    if doc_ids is not None:
        mask = np.isin(snapshot.doc_of, list(doc_ids)).astype(np.float32) if snapshot.chunks else None
    # Each side's list runs deeper than the candidates when feedback's second search reads a pool.
    depth = pool_depth(settings)
    sq, side_list, side_dist, beside = None, [], None, None
    if snapshot.side_vectors is not None and (side is not None or side_vector is not None):
        sq = side.embed_queries([query])[0] if side_vector is None else side_vector
        lap("multilingual embed")
        beside = _side_search(snapshot, sq, n, mask, depth)  # through a graph: on its thread while BM25 and MiniLM's run here

    bm25_pool = snapshot.lexical.top(query, depth, mask)
    bm25 = bm25_pool[:n]
    bm25_ids = [snapshot.ids[i] for i, _ in bm25]
    bm25_scores = {snapshot.ids[i]: s for i, s in bm25}
    lap("bm25")

    rows_pool, dist = dense_top(snapshot, qv, n, mask, depth=depth)
    rows = rows_pool[:n]
    dense = [(snapshot.ids[i], float(dist[i])) for i in rows]
    distances = dict(dense)
    lap("dense")

    side_pool: list[int] = []
    if beside is not None:
        side_pool, side_dist = beside()
        side_list = [(snapshot.ids[i], float(side_dist[i])) for i in side_pool[:n]]
    lap("multilingual")

    dist.need([snapshot.pos[cid] for cid in bm25_ids + [cid for cid, _ in side_list]])
    for cid in bm25_ids + [cid for cid, _ in side_list]:  # the other sides' candidates: the same scan's distance
        if cid not in distances:
            distances[cid] = float(dist[snapshot.pos[cid]])
    across = _across(snapshot, distances, language) if side_list else set()
    ranked = fused_order(dense, [(cid, bm25_scores[cid]) for cid in bm25_ids], distances, n=n,
                         method=settings.tuning.fusion, weights=weights, k=settings.tuning.rrf_k, multilingual=side_list,
                         across=across, across_weight=settings.tuning.multilingual_weight_across)
    dense_rank = {cid: r for r, (cid, _) in enumerate(dense, start=1)}
    side_rank = {cid: r for r, (cid, _) in enumerate(side_list, start=1)}
    bm25_rank = {cid: r for r, cid in enumerate(bm25_ids, start=1)}
    fused = dict(ranked)
    order = [cid for cid, _ in ranked]
    lap("fusion")
    kept, expansion, pool = len(order), (), None
    if 0 < settings.tuning.feedback < len(order):
        # The first ranking's best `feedback` passages stay first, as found; both sides search again from
        # them and order the rest (see `feedback`). A row placed by the second search shows that search's
        # ranks and scores; every distance stays the question's own, which is what the gate reads.
        kept = settings.tuning.feedback
        top_rows = [snapshot.pos[cid] for cid in order[:kept]]
        pool = feedback_pool(snapshot, settings, rows_pool, [i for i, _ in bm25_pool], side_pool)
        beside = None
        if sq is not None:  # the multilingual side moves toward the same passages (first: on its thread meanwhile)
            beside = _side_search(snapshot, _toward(sq, snapshot.side_vectors[top_rows], settings.tuning.feedback_dense),
                                  n, mask, pool=pool)
        qv2, bag, expansion = feedback(snapshot, query, qv, top_rows, language, settings.tuning)
        rows2, dist2 = dense_among(snapshot, qv2, pool, n, mask)
        bm25_2 = snapshot.lexical.top(bag, n, mask) if pool is None else snapshot.lexical.top_among(bag, pool, n)
        dense_2 = [(snapshot.ids[i], float(dist2[i])) for i in rows2]
        bm25_2 = [(snapshot.ids[i], s) for i, s in bm25_2]
        side_2 = []
        if beside is not None:
            side_rows2, side_dist2 = beside()
            side_2 = [(snapshot.ids[i], float(side_dist2[i])) for i in side_rows2]
        dist.need([snapshot.pos[cid] for cid, _ in dense_2 + bm25_2 + side_2])
        for cid, _ in dense_2 + bm25_2 + side_2:
            distances.setdefault(cid, float(dist[snapshot.pos[cid]]))
        across |= _across(snapshot, distances, language) if side_2 else set()
        again = fused_order(dense_2, bm25_2, distances, n=n, method=settings.tuning.fusion, weights=weights,
                            k=settings.tuning.rrf_k, multilingual=side_2, across=across,
                            across_weight=settings.tuning.multilingual_weight_across)
        first = set(order[:kept])
        rest = [(cid, f) for cid, f in again if cid not in first][:n - kept]
        order = order[:kept] + [cid for cid, _ in rest]
        fused.update(rest)
        dense_rank2 = {cid: r for r, (cid, _) in enumerate(dense_2, start=1)}
        bm25_rank2 = {cid: r for r, (cid, _) in enumerate(bm25_2, start=1)}
        bm25_score2 = dict(bm25_2)
        side_rank2 = {cid: r for r, (cid, _) in enumerate(side_2, start=1)}
        for cid, _ in rest:
            dense_rank[cid], bm25_rank[cid] = dense_rank2.get(cid), bm25_rank2.get(cid)
            bm25_scores[cid] = bm25_score2.get(cid)
            side_rank[cid] = side_rank2.get(cid)
    lap("feedback")
    held = snapshot.passages([snapshot.pos[cid] for cid in order])
    order = [cid for cid in order if snapshot.pos[cid] in held]  # (read from the store: less any rewritten since)
    positions = [snapshot.pos[cid] for cid in order]
    chunks = [held[i] for i in positions]
    if side_dist is not None:
        side_dist.need(positions)
    candidates = []
    for rank, (cid, sc) in enumerate(zip(order, chunks), start=1):
        path, title, kind = snapshot.docs.get(sc.doc_id, (sc.doc_id, "", ""))
        m = sc.meta
        candidates.append(Candidate(
            chunk_id=cid, doc_id=sc.doc_id, doc_name=path, title=title, section=m.get("section") or "",
            content=sc.content, start=int(m["start"]), end=int(m["end"]), page=m.get("page"),
            page_end=m.get("page_end"), kind=kind, fused_rank=rank, fused_score=fused[cid].score,
            distance=float(distances[cid]), dense_rank=dense_rank.get(cid), bm25_rank=bm25_rank.get(cid),
            bm25_score=bm25_scores.get(cid), dense_norm=fused[cid].dense, bm25_norm=fused[cid].bm25,
            lang=m.get("lang", ""), place=m.get("place") or "", rows=m.get("rows") or "",
            ocr_confidence=m.get("ocr_mean"), ocr_lowest=m.get("ocr_min"), version=snapshot.versions.get(sc.doc_id, ""), side_rank=side_rank.get(cid),
            side_distance=None if side_dist is None else float(side_dist[snapshot.pos[cid]]),
            side_norm=fused[cid].multilingual, across=cid in across,
        ))
    lap("candidates")
    return SearchResult(question=question, query=query, candidates=candidates, weights=weights,
                        timings_ms=timings, searched_chunks=len(snapshot.chunks),
                        language=language, fusion=settings.tuning.fusion,
                        kept_first=kept, expansion=expansion, folder_languages=snapshot.languages,
                        pooled=0 if pool is None else len(pool))

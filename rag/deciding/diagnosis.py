"""Run-time diagnosis: "why wasn't it found?" for a question already asked, beside the search it explains.

Given a search result, its gating and the sentence the person expected, `why_not_found` names the step
where that sentence was lost, in this order: extraction (no indexed text holds it), chunking (no single
chunk holds it whole), ranks (its chunk was not among the candidates; its dense, BM25 and fused ranks over
the whole snapshot are given, fused with the weights the search used), the gate (over the threshold, or
short of the support test), the cap on chunks, or found and cited.

What it does not do: search again with other settings, or change anything: it reads the engine's
snapshot and, for the extraction verdict only, re-extracts the indexed documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rag.reading.extract import extract
from rag.deciding.explain import explain
from rag.searching.fusion import fused_order
from rag.deciding.gate import Gated
from rag.deciding.rule import CAPPED, JUDGED_OUT, KEPT, OFF_SUBJECT, OVER, UNSUPPORTED
from rag.deciding.needles import contains
from rag.searching.search import SearchResult

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
    ids = snap.ids
    qv = engine.embedder.embed_batch([result.query])[0]
    sims = _whole(snap.vectors) @ qv
    bm = snap.lexical.scores(result.query)
    dense_order = [ids[i] for i in np.argsort(-sims, kind="stable")]
    bm_order = [ids[i] for i in np.argsort(-bm, kind="stable") if bm[i] > 0]
    dist = {c: 1.0 - float(s) for c, s in zip(ids, sims)}
    bm_of = dict(zip(ids, bm))
    side, across = [], set()
    if snap.side_vectors is not None and getattr(engine, "side", None) is not None:  # the multilingual side too
        side_dist = 1.0 - _whole(snap.side_vectors) @ engine.side.embed_queries([result.query])[0]
        side = [(ids[i], float(side_dist[i])) for i in np.argsort(side_dist, kind="stable")]
        lang = result.language
        across = {cid for cid, language in zip(ids, snap.langs) if lang and language not in ("", lang)}
    # The search's own fusion, with the weights it used for this question, over every chunk at once.
    ranked = fused_order([(c, dist[c]) for c in dense_order], [(c, float(bm_of[c])) for c in bm_order], dist,
                         n=len(ids), method=result.fusion, weights=result.weights, k=engine.settings.tuning.rrf_k,
                         multilingual=side, across=across,
                         across_weight=engine.settings.tuning.multilingual_weight_across)
    fused_order_ = [c for c, _ in ranked]
    d_rank = {c: r for r, c in enumerate(dense_order, start=1)}
    b_rank = {c: r for r, c in enumerate(bm_order, start=1)}
    f_rank = {c: r for r, c in enumerate(fused_order_, start=1)}
    return {c: (d_rank.get(c), b_rank.get(c), f_rank[c], dist[c]) for c in chunk_ids}


def _whole(vectors) -> np.ndarray:
    """A side's whole matrix: the snapshot's, or read from the store when search reads it (rag.indexing.served; a
    diagnosis ranks every passage, so it reads every vector once)."""
    return vectors if isinstance(vectors, np.ndarray) else vectors.whole()


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
        order = {KEPT: 0, CAPPED: 1, UNSUPPORTED: 2, OFF_SUBJECT: 2, JUDGED_OUT: 2, OVER: 3}
        among = sorted(((c, v) for c, v in zip(gated.candidates, gated.verdicts) if c.chunk_id in holder_ids),
                       key=lambda cv: order.get(cv[1], 3))
        if among:
            c, v = among[0]
            base = dict(doc_name=c.doc_name, chunk_id=c.chunk_id, dense_rank=c.dense_rank, bm25_rank=c.bm25_rank,
                        fused_rank=c.fused_rank, distance=c.distance, threshold=gated.threshold, candidates=n)
            # The gate's verdict on that chunk, worded by rag.deciding.explain as every surface words it.
            message = explain(gated, passage=c).passage
            if v == KEPT:
                cit = next((x.n for x in gated.citations if x.chunk_id == c.chunk_id), None)
                return Diagnosis(CITED, message, citation=cit, **base)
            if v == CAPPED:
                return Diagnosis(CAPPED_OUT, message, **base)
            if v in (UNSUPPORTED, OFF_SUBJECT, JUDGED_OUT):
                return Diagnosis(UNSUPPORTED_OUT, message, **base)
            return Diagnosis(GATED, message, **base)
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
            doc = extract(engine.folder / rec.path, rec.path.rsplit("/", 1)[-1], max_chars=engine.settings.tuning.max_chars,
                          max_pages=engine.settings.tuning.max_pages, ocr_cache=engine.settings.ocr_cache)
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



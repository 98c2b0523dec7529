"""Consistency at every moment: each search reads one state, the snapshot it took.

Real parts only: the MiniLM model, Chroma on disk, real files re-indexed by a real Engine while another
thread asks. The dense side scans the snapshot's own vectors, so a candidate's quote, offsets, distance
and BM25 score always describe the same version of its document, even while Chroma already holds the
next version's vectors under the same chunk ids.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from rag.indexing.indexer import doc_id_for
from rag.searching.search import dense_top
from rag.indexing.snapshot import Snapshot

QUERY = "How often must the pump valve be serviced and who checks the pressure seal?"
TOPICS = ["pump", "valve", "pressure seal", "filter", "gasket", "impeller", "bearing", "intake"]


def version_text(v: int) -> str:
    """A different text, of a different length, for every version: chunk texts at the same ids change."""
    paras = []
    for p in range(2 + v % 4):
        topic = TOPICS[(v + p) % len(TOPICS)]
        paras.append(f"Revision {v}, part {p}: the {topic} of station {v * 7 + p} is serviced every "
                     f"{3 + (v + p) % 9} weeks by crew {chr(65 + (v * 3 + p) % 26)}; " +
                     " ".join(f"the {TOPICS[(v + p + k) % len(TOPICS)]} reading {v}.{p}.{k} is logged."
                              for k in range(1 + (v * 5 + p) % 6)))
    return "\n\n".join(paras) + "\n"


GONE_TEXT = "The pump valve on the spare line is checked monthly; the pressure seal is replaced yearly.\n"
STEADY_TEXT = "Pressure seals are kept in the store room. The valve manual lists every pump by serial number.\n"


def test_search_during_reindex_reads_one_state(make_engine, tmp_path, embedder):
    """With the old dense side (Chroma's `query`) this fails on (b): between `store.add` and `_publish`,
    Chroma gives the new text's distance to a chunk id whose snapshot content is still the old text."""
    folder = tmp_path / "docs"
    folder.mkdir()
    versions = {"changing.txt": [version_text(0)], "gone.txt": [GONE_TEXT], "steady.txt": [STEADY_TEXT]}
    for name, texts in versions.items():
        (folder / name).write_text(texts[0], encoding="utf-8")
    engine = make_engine(folder, chunk_budget=48)
    assert engine.sync().count("failed") == 0
    gone_id = doc_id_for("gone.txt")
    embedded: dict[tuple[str, str, int, int], str] = {}  # (chunk id, content, start, end) -> embedded text

    def record(snapshot: Snapshot) -> None:
        for c in snapshot.chunks:
            embedded[(c.id, c.content, int(c.meta["start"]), int(c.meta["end"]))] = c.text

    record(engine.snapshot)
    state_lock = threading.Lock()
    state = {"epoch": 0, "gone": False}  # gone: the removal's publish has completed and no re-add began
    done = threading.Event()
    errors: list[BaseException] = []
    seen: list[tuple[object, tuple[int, bool], int]] = []

    def writer() -> None:
        try:
            deadline = time.monotonic() + 40
            for r in range(1, 25):
                if time.monotonic() > deadline:
                    break
                text = version_text(r)
                versions["changing.txt"].append(text)  # known before any search can see it
                (folder / "changing.txt").write_text(text, encoding="utf-8")
                report = engine.index_files(["changing.txt"])
                assert report.outcomes[0].status == "indexed", report.outcomes
                record(engine.snapshot)  # only this thread publishes: every snapshot a search uses is recorded
                if r % 2:
                    engine.remove(gone_id, delete_file=True)
                    with state_lock:
                        state["epoch"] += 1
                        state["gone"] = True
                else:
                    with state_lock:
                        state["epoch"] += 1
                        state["gone"] = False
                    (folder / "gone.txt").write_text(GONE_TEXT, encoding="utf-8")
                    engine.index_files(["gone.txt"])
                record(engine.snapshot)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)
        finally:
            done.set()

    def asker() -> None:
        try:
            while not done.is_set():
                with state_lock:
                    before = (state["epoch"], state["gone"])
                result = engine.search(QUERY)
                with state_lock:
                    after = state["epoch"]
                seen.append((result, before, after))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=asker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(seen) >= 20, "the asker hardly ran while the writer wrote"

    qv = embedder.embed_batch([QUERY])[0]
    vec_cache: dict[str, np.ndarray] = {}
    checked = 0
    for result, (epoch, gone), after in seen:
        assert result.candidates
        for c in result.candidates:
            # (a) the quote is the text between its offsets in one version of its document
            name = {doc_id_for(n): n for n in versions}[c.doc_id]
            assert any(v[c.start:c.end] == c.content for v in versions[name]), (c.chunk_id, c.content[:60])
            # the same (id, quote, offsets) was in a published snapshot, embedded as this text
            key = (c.chunk_id, c.content, c.start, c.end)
            assert key in embedded, key
            # (b) its distance is that text's distance, not another version's
            text = embedded[key]
            if text not in vec_cache:
                vec_cache[text] = embedder.embed_batch([text])[0]
            expected = 1.0 - float(np.dot(vec_cache[text], qv))
            # (bfloat16 in a batch, fp32 alone: the same text's distance agrees within a few 1e-4; another version's
            # text is much farther; measured up to 1e-3)
            assert abs(c.distance - expected) < 5e-3, (c.chunk_id, c.distance, expected)
            checked += 1
            # a removed document is never cited once its removal was published (and before a re-add began)
            if gone and after == epoch:
                assert c.doc_id != gone_id, (c.chunk_id, epoch)
    assert checked > 0


def _brute_force(snapshot: Snapshot, qv: np.ndarray, n: int, doc_ids=None) -> list[tuple[str, float]]:
    rows = [(1.0 - float(np.dot(np.asarray(snapshot.vectors[i], dtype=np.float64), np.asarray(qv, dtype=np.float64))), i)
            for i, c in enumerate(snapshot.chunks) if doc_ids is None or c.doc_id in doc_ids]
    rows.sort()  # by distance, then by snapshot row: the stable tie order
    return [(snapshot.chunks[i].id, d) for d, i in rows[:n]]


def test_dense_side_is_an_exact_scan_of_the_snapshot(make_engine, tmp_path, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    for v in range(6):
        (folder / f"note-{v}.txt").write_text(version_text(v), encoding="utf-8")
    engine = make_engine(folder, chunk_budget=48, candidates=8)
    assert engine.sync().count("failed") == 0
    snapshot = engine.snapshot
    assert len(snapshot.chunks) > 8
    qv = embedder.embed_batch([QUERY])[0]
    some = sorted({c.doc_id for c in snapshot.chunks})[:3]
    for doc_ids in (None, some, some[:1], []):
        result = engine.search(QUERY, doc_ids=doc_ids)
        expected = _brute_force(snapshot, qv, 8, doc_ids)
        ranked = {cid: r for r, (cid, _) in enumerate(expected, start=1)}
        # (fusion keeps the best 8 of both sides, so a dense hit may be cut: each kept one has its exact rank)
        assert any(c.dense_rank for c in result.candidates) == bool(expected)
        for c in result.candidates:
            if c.fused_rank > result.kept_first:
                # Ordered by feedback's second search (its own ranks, tests/test_fusion.py): the filter
                # and the question's own distance still hold, checked below.
                assert c.doc_id in (doc_ids if doc_ids is not None else [c.doc_id])
            else:
                assert c.dense_rank == ranked.get(c.chunk_id), c.chunk_id
            if c.dense_rank and c.fused_rank <= result.kept_first:
                assert abs(c.distance - expected[c.dense_rank - 1][1]) < 1e-5
            # BM25-only ones too: every distance comes from the same snapshot's vectors
            v = snapshot.vectors[snapshot.pos[c.chunk_id]]
            assert abs(c.distance - (1.0 - float(np.dot(v, qv)))) < 1e-5
            assert doc_ids is None or c.doc_id in doc_ids
        rows, _ = dense_top(snapshot, qv, 8, None if doc_ids is None else np.isin(snapshot.doc_of, doc_ids))
        assert [snapshot.chunks[i].id for i in rows] == [cid for cid, _ in expected]
    # With nothing being written, the store (the truth) agrees with the snapshot built from it.
    assert [cid for cid, _ in engine.store.query(qv, 8)] == [cid for cid, _ in _brute_force(snapshot, qv, 8)]


def test_dense_ties_keep_snapshot_order(make_engine, tmp_path, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(version_text(1), encoding="utf-8")
    engine = make_engine(folder, chunk_budget=48)
    engine.sync()
    base = engine.snapshot.chunks
    # The same vectors three times over, under different ids: equal distances, ranked in snapshot order.
    from rag.indexing.store import StoredChunk

    chunks = [StoredChunk(f"{c.id}#{k}", f"{c.doc_id}-{k}", c.text, c.meta) for k in range(3) for c in base]
    snap = Snapshot.build(chunks, {}, engine.settings, vectors=np.concatenate([engine.snapshot.vectors] * 3))
    qv = embedder.embed_batch([QUERY])[0]
    n = 3 * (len(base) // 2) + 1  # the cut falls inside a group of three ties
    rows, dist = dense_top(snap, qv, n)
    assert rows == sorted(range(len(chunks)), key=lambda i: (dist[i], i))[:n]
    assert [snap.chunks[i].id for i in rows] == [cid for cid, _ in _brute_force(snap, qv, n)]
    m = len(base)
    assert [r % m for r in rows[:-1]] == [r % m for r in rows[:-1:3] for _ in range(3)]  # each vector's copies together
    assert all(rows[k] < rows[k + 1] < rows[k + 2] for k in range(0, n - 1, 3))  # in snapshot order
    assert rows[-1] < m  # cut inside a tie: the first copy is kept, not a later one

"""Large folders: what one app process holds, and how long a search takes beyond the query's embeddings, at
10,000 and 100,000 passages (issue 36).

    .venv/bin/python bench/bench_large.py --sizes 10000 100000        # builds each index once, then measures
    .venv/bin/python bench/bench_large.py --sizes 100000 --queries 200 --rebuild

Building 100,000 passages with the real models takes about 40 minutes here (MiniLM and the multilingual side
embed ~20 ms a passage together), so the index is built with stand-in embedders: each word gets a fixed
random vector (seeded by the word) and a passage the unit mean of its words' vectors, 384 dimensions for
MiniLM's place, 384 for the multilingual side's (multilingual-e5-small's; USE's 512 before issue 62). Everything else is the app's own: the synthetic Markdown
folder of bench/bench_engine.py, extraction, chunking, Chroma on disk, the library, BM25. A search beyond
the query's embeddings does not depend on what the vectors mean, only on how many there are and how many
dimensions they have; passages that share words are close, as with a real model, so the rankings are not
noise. The built index is kept in bench/out/large-N and reused (`--rebuild` to build it again).

Each size is measured in a fresh process: the real MiniLM and multilingual models are loaded first (so the
resident set counts them, as the app's does), then an Engine opens the index with the stand-ins (the app's
start: the library, Chroma, the snapshot), and 200 questions from the folder's vocabulary are searched.
Printed: the resident set after each step, a breakdown of what the snapshot holds (exact byte counts of
arrays and Python objects), and the per-stage latencies (median / p95, ms). Nothing is asserted: read it
beside the docs' table (docs/benchmarks.md "Large folders").

With `--server` the index is written to a real `chroma run` server on loopback (its store kept in
bench/out/large-server-N/db, never in the repository), and the measuring process searches with
`search_reads = "store"` (rag.indexing.served): the server's HNSW proposes, texts are read for the candidates. Printed
as well: the server's own resident set, and recall@20 of each side against an exact scan of every vector
(read from the server after the timings).

    .venv/bin/python bench/bench_large.py --server --sizes 10000 100000 [--ef-search 1600]

`--corpus real` builds from real text with the real models instead (NFCorpus's abstracts as runs of
sentences, `write_real_corpus`; its questions are NFCorpus's queries): how a graph fares on a real model's
vectors, which neither stand-in folder shows (the small one's crowd together, the zipf one's are near
orthogonal). About 40 minutes of embedding for 100,000 passages here; `--sizes 7800 78000` gives about 10,000
and 100,000 passages. `--multilingual off` measures with the multilingual side turned off.

    .venv/bin/python bench/bench_large.py --corpus real --sizes 7800 78000
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import re
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

OUT = ROOT / "bench" / "out"
SIDE_DIM = 384  # the multilingual side's dimension (multilingual-e5-small)
SIDE_NAME = f"bench-hash-side-{SIDE_DIM}"


class HashModel:
    """A stand-in sentence encoder: the unit mean of each word's fixed random vector (see the docstring)."""

    def __init__(self, dimension: int, tokenizer=None):
        self.dimension, self.tokenizer, self._words = dimension, tokenizer, {}

    def _word(self, w: str) -> np.ndarray:
        v = self._words.get(w)
        if v is None:
            v = self._words[w] = np.random.default_rng(zlib.crc32(w.encode())).standard_normal(self.dimension)
        return v

    def encode(self, texts, **_kw) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, t in enumerate(texts):
            words = re.findall(r"\w+", t.lower()) or ["empty"]
            v = np.sum([self._word(w) for w in words], axis=0)
            out[i] = v / (np.linalg.norm(v) or 1.0)
        return out


def stand_ins():
    """(embedder, side): the real classes around `HashModel`, named so their collections are their own."""
    import dataclasses

    import rag
    from rag.indexing.multilingual import MultilingualEmbedder

    class HashSide(MultilingualEmbedder):
        def _embed(self, texts, prefix):  # the stand-in reads a question as a passage
            return self._model.encode(list(texts))

    real = rag.load_embedder()
    embedder = dataclasses.replace(real, name="bench-hash-384", _model=HashModel(384, real._model.tokenizer))
    side = HashSide(name=SIDE_NAME, dimension=SIDE_DIM, _model=HashModel(SIDE_DIM))
    return embedder, side


def models(corpus: str):
    """(embedder, side) to index and search `corpus` with: the real models for "real", else the stand-ins."""
    if corpus != "real":
        return stand_ins()
    import rag
    from rag.indexing.multilingual import load_multilingual

    return rag.load_embedder(), load_multilingual()


SYLLABLES = "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu".split()


def zipf_vocabulary(size: int = 20_000, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def write_zipf_corpus(folder: Path, chunks: int, seed: int = 7, topics: int = 500) -> None:
    """Passages on topics, as a real folder's are: 20,000 words with Zipf frequencies (s = 1.1); each
    document has a topic (one of 500, each favouring 200 words), and a paragraph draws 60% of its words from
    its topic, the rest from the whole vocabulary."""
    rng = np.random.default_rng(seed)
    vocab = zipf_vocabulary()
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
    p /= p.sum()
    topic_words = [rng.choice(len(vocab), 200, replace=False, p=p) for _ in range(topics)]
    folder.mkdir(parents=True)
    for d in range(chunks // 10):
        words = topic_words[int(rng.integers(topics))]
        parts = [f"# Document {d}\n"]
        for sec in range(10):
            n = int(rng.integers(60, 80))
            own = rng.random(n) < 0.6
            picks = np.where(own, words[rng.integers(len(words), size=n)], rng.choice(len(vocab), n, p=p))
            parts.append(f"## Section {sec}\n\n" + " ".join(vocab[i] for i in picks).capitalize() + ".\n")
        (folder / f"doc-{d:05d}.md").write_text("\n".join(parts), encoding="utf-8")


NFCORPUS = ROOT.parent / "shared" / "eval" / "nfcorpus"


def nfcorpus_queries() -> list[str]:
    """NFCorpus's queries, in the file's order: the real corpus's questions (on its subject)."""
    return [json.loads(line)["text"] for line in (NFCORPUS / "queries.jsonl").open(encoding="utf-8")]


def _sentences(text: str) -> list[str]:
    return [x for x in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text.strip()) if x]


def write_real_corpus(folder: Path, chunks: int) -> None:
    """Real English for the real models (`--corpus real`): NFCorpus's 3,633 medical abstracts (../shared/eval/
    nfcorpus), each a document whose sections are runs of one to four of its consecutive sentences
    (every start): about 125,000 passages in all, overlapping as drafts and versions of notes do, so each
    has close neighbours. Sections in order, abstract by abstract, until `chunks`."""
    rows = [json.loads(line) for line in gzip.open(NFCORPUS / "corpus.jsonl.gz", "rt", encoding="utf-8")]
    folder.mkdir(parents=True)
    written = 0
    for d, row in enumerate(rows):
        sents = _sentences(row["text"])
        runs = [" ".join(sents[i:i + k]) for k in (1, 2, 3, 4) for i in range(len(sents) - k + 1)]
        runs = runs[:chunks - written]
        if not runs:
            break
        body = "\n".join(f"## Passage {i}\n\n{run}\n" for i, run in enumerate(runs))
        (folder / f"doc-{d:05d}.md").write_text(f"# {row['title']}\n\n{body}", encoding="utf-8")
        written += len(runs)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def root_of(size: int, corpus: str, server: bool = False) -> Path:
    return OUT / (f"large-{'server-' if server else ''}{size}" if corpus == "small"
                  else f"large-{'server-' if server else ''}{corpus}-{size}")


class Server:
    """A `chroma run` server on loopback over `db`, for `--server`; stopped on exit from the with-block."""

    def __init__(self, db: Path):
        self.db = db

    def __enter__(self) -> "Server":
        import os
        import socket
        import urllib.request

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.db.mkdir(parents=True, exist_ok=True)
        self.log = open(self.db.parent / "server.log", "ab")
        self.proc = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(self.db),
                                      "--host", "127.0.0.1", "--port", str(self.port)], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1):
                    return self
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("chroma run did not start: see " + str(self.db.parent / "server.log"))
                time.sleep(0.3)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)
        self.log.close()


def settings_for(root: Path, server: "Server | None", **extra):
    from rag import load_settings

    more = dict(chroma_host="127.0.0.1", chroma_port=server.port) if server else {}
    return load_settings(env={}, folder=root / "docs", index_dir=root / "index", **more, **extra)


def build(size: int, rebuild: bool, corpus: str = "small", server: bool = False) -> dict:
    from bench_engine import write_corpus

    from rag import Engine

    root = root_of(size, corpus, server)
    if (root / "built.json").is_file() and not rebuild:
        return json.loads((root / "built.json").read_text())
    # A build cut short (a million passages take longer than a session here) goes on where it stopped: the
    # folder is written once (marked when whole), and indexing is durable, so a sync indexes what is missing.
    resumed = (root / "docs.written").is_file() and not rebuild
    if not resumed:
        shutil.rmtree(root, ignore_errors=True)
        {"small": write_corpus, "zipf": write_zipf_corpus, "real": write_real_corpus}[corpus](root / "docs", size)
        (root / "docs.written").write_text("")
    embedder, side = models(corpus)
    with (Server(root / "db") if server else _Nothing()) as srv:
        engine = Engine(settings_for(root, srv, **({"search_reads": "store"} if server else {})), embedder=embedder,
                        side=side)
        t = time.perf_counter()
        report = engine.sync()
        info = {"size": size, "chunks": len(engine.snapshot.chunks), "build_s": time.perf_counter() - t,
                "embedded": report.embedded, "resumed": resumed}  # (resumed: build_s is the last leg's alone)
        engine.close()
    (root / "built.json").write_text(json.dumps(info))
    return info


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc) -> None:
        pass


def _size(obj) -> int:
    return sys.getsizeof(obj)


def breakdown(engine) -> dict[str, float]:
    """Bytes (MB) of what the snapshot and the indexer hold, counted object by object."""
    snap, mb = engine.snapshot, 1 / 2**20
    chunks = snap.chunks
    if hasattr(chunks, "fetch"):  # search reads the store (rag.indexing.served): what the process holds instead
        held = [h for h in engine.indexer._chunks_by_doc.values()]
        return {"passages": len(chunks),
                "ids, documents, languages (rows)": sum(_size(x) for x in (chunks.ids, chunks.doc_ids, chunks.langs)) * mb
                + sum(_size(c) for c in chunks.ids) * mb,
                "held chunks (id and language)": sum(_size(c) for h in held for c in h.chunks) * mb,
                "tokens (lists)": sum(_size(t) for h in held for t in h.tokens) * mb,
                "tokens (distinct strings)": sum(_size(w) for w in {id(w): w for h in held for t in h.tokens
                                                                   for w in t}.values()) * mb,
                "ids to rows": (_size(snap.pos) + snap.doc_of.nbytes) * mb,
                **_bm25_sizes(snap.lexical)}
    out = {
        "passages": len(chunks),
        "vectors (snapshot matrix)": (snap.vectors.nbytes if snap.vectors is not None else 0) * mb,
        "multilingual vectors (snapshot matrix)": (snap.side_vectors.nbytes if snap.side_vectors is not None else 0) * mb,
        "vectors kept per passage as well": sum(_size(c.vector) for c in chunks if c.vector is not None) * mb
        + sum(_size(c.side) for c in chunks if getattr(c, "side", None) is not None) * mb,
        "texts": sum(_size(c.text) for c in chunks) * mb,
        "metadata": sum(_size(c.meta) + sum(_size(v) for v in c.meta.values()) for c in chunks) * mb,
        "passage objects": sum(_size(c) + _size(c.id) + _size(c.doc_id) for c in chunks) * mb,
        "ids to rows": (_size(snap.pos) + (snap.doc_of.nbytes if snap.doc_of is not None else 0)) * mb,
    }
    if snap.tokens is not None:
        out["tokens (lists)"] = sum(_size(t) for t in snap.tokens) * mb
    cache = getattr(engine.indexer, "_tokens", None)
    if cache:
        out["tokens cache (keys)"] = (_size(cache) + sum(_size(k) for k in cache)) * mb
    out.update(_bm25_sizes(snap.lexical))
    return out


def _bm25_sizes(lexical) -> dict[str, float]:
    """MB of BM25's arrays (posting lists, and the commonest tokens' columns) and its vocabulary; a tree before
    the index read its arrays itself held bm25s's object (measured for comparison)."""
    index = getattr(lexical, "_index", None)
    if index is not None:
        arrays = sum(a.nbytes for a in (index.indptr, index.indices, index.data, index.df))
        arrays += sum(c.nbytes for c in index.columns.values())
        vocab = index.vocab
    elif getattr(lexical, "_bm25", None) is not None:
        arrays = sum(a.nbytes for a in lexical._bm25.scores.values() if hasattr(a, "nbytes"))
        vocab = lexical._bm25.vocab_dict
    else:
        return {}
    return {"BM25 index (arrays)": arrays / 2**20, "BM25 vocabulary": (_size(vocab) + sum(_size(k) for k in vocab)) / 2**20}



def questions(n: int, seed: int = 11, corpus: str = "small", size: int = 0) -> list[str]:
    """Questions of 3 to 8 words: from the small vocabulary, or from the words of a passage of the folder's
    first 1,000 documents (zipf: the same documents at every size)."""
    from bench_engine import WORDS as words

    rng = random.Random(seed)
    if corpus == "real":  # NFCorpus's own queries (their words are the folder's subject, not its passages')
        asked = nfcorpus_queries()
        return [rng.choice(asked) for _ in range(n)]
    if corpus != "small":
        files = sorted((root_of(size, corpus) / "docs").glob("*.md"))[:1000]
        texts = [p.read_text(encoding="utf-8").split("\n\n")[2] for p in files]  # the first section's paragraph
        return [" ".join(rng.sample(rng.choice(texts).rstrip(".\n").split(), rng.randint(3, 8))) + "?"
                for _ in range(n)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + "?" for _ in range(n)]


def measure(size: int, queries: int, corpus: str = "small", server: bool = False, ef: int | None = None,
            side: bool = True, pool: int = 0) -> dict:
    if server:
        db = root_of(size, corpus, True) / "db"
        if ef:  # written to both collections, then a fresh server loads them with it (rag.indexing.store.ChunkStore)
            from rag.indexing.store import ChunkStore

            with Server(db) as srv:
                settings = settings_for(root_of(size, corpus, True), srv, hnsw_ef_search=ef)
                for name, dimension in (("bench-hash-384", 384), (SIDE_NAME, SIDE_DIM)):
                    ChunkStore(settings, name, dimension)
        with Server(db) as srv:
            return _measure(size, queries, corpus, srv, ef)
    return _measure(size, queries, corpus, None, with_side=side, pool=pool)


def _measure(size: int, queries: int, corpus: str, server: "Server | None", ef: int | None = None,
             with_side: bool = True, pool: int = 0) -> dict:
    import rag
    from rag import Engine, gate
    from rag.indexing.multilingual import load_multilingual

    steps = {"start": rss_mb()}
    real = rag.load_embedder()
    real.embed_batch(["warm up"])
    load_multilingual().embed_batch(["warm up"])
    steps["models loaded"] = rss_mb()
    embedder, side = models(corpus)
    side = side if with_side else None
    root = root_of(size, corpus, server is not None)
    settings = settings_for(root, server, **({"search_reads": "store"} if server else {}),
                            **({"hnsw_ef_search": ef} if ef else {}), **({} if with_side else {"multilingual": False}), feedback_pool=pool)
    t = time.perf_counter()
    engine = Engine(settings, embedder=embedder, side=side)
    open_s = time.perf_counter() - t
    steps["index opened (snapshot built)"] = rss_mb()
    t = time.perf_counter()
    if getattr(engine.indexer, "graphs", None) is not None:  # (an older tree, measured for comparison, has none)
        engine.indexer.graphs.wait()  # the graphs build in the background (rag.indexing.vectors); searches scan meanwhile
    graph_s = time.perf_counter() - t
    steps["graphs built"] = rss_mb()
    parts = breakdown(engine)
    qs = questions(queries, corpus=corpus, size=size)
    for q in qs[:5]:
        engine.search(q)
    stages: dict[str, list[float]] = {}
    beyond = []
    for q in qs:
        r = engine.search(q)
        t = time.perf_counter()
        gate(r, 0.675, 4)
        r.timings_ms["gate"] = (time.perf_counter() - t) * 1000
        for k, v in r.timings_ms.items():
            stages.setdefault(k, []).append(v)
        beyond.append(sum(v for k, v in r.timings_ms.items() if k not in ("embed", "multilingual embed")))
    steps["after the searches"] = rss_mb()
    if server is not None:
        steps["the server (its own process)"] = server.rss_mb()
    top20 = {q: [c.chunk_id for c in engine.search(q).candidates[:20]] for q in qs[:50]}
    recall = store_recall(engine, qs) if server is not None else graph_recall(engine, qs)
    exact_top = {}
    if server is None and hasattr(engine.snapshot, "scanned"):  # the same searches with every row scanned
        graphed, engine.indexer.snapshot = engine.indexer.snapshot, engine.indexer.snapshot.scanned()
        exact_top = {q: [c.chunk_id for c in engine.search(q).candidates[:20]] for q in qs[:50]}
        engine.indexer.snapshot = graphed
    t = time.perf_counter()
    engine.calibration = None
    engine.calibrated()  # the 800 unrelated questions, each scanned exactly in memory (rag.engine)
    calibrate_s = time.perf_counter() - t
    engine.close()
    return {
        "size": size, "chunks": parts["passages"], "open_s": open_s, "graph_s": graph_s, "recall_at_20": recall,
        "calibrate_s": calibrate_s, "as_scanned": as_scanned(top20, exact_top), "rss_mb": steps, "peak_mb": peak_mb(),
        "breakdown_mb": parts,
        "stages": {k: {"median": statistics.median(v), "p95": float(np.percentile(v, 95))} for k, v in stages.items()},
        "beyond": {"median": statistics.median(beyond), "p95": float(np.percentile(beyond, 95))},
        "top20": top20,
    }


def as_scanned(got: dict[str, list[str]], exact: dict[str, list[str]]) -> dict[str, float]:
    """The app's own top 20 (fused, feedback and all) against the same search with every row scanned: the
    questions whose first 4 (an answer's passages) and whole lists are identical, and recall@20."""
    if not exact:
        return {}
    return {"questions": len(exact), "first 4 identical": sum(got[q][:4] == exact[q][:4] for q in exact),
            "top 20 identical": sum(got[q] == exact[q] for q in exact),
            "recall@20": sum(len(set(got[q]) & set(exact[q])) for q in exact) / max(sum(map(len, exact.values())), 1)}


def graph_recall(engine, qs: list[str], n: int = 20) -> dict[str, float]:
    """Each side's top-n through its graph against an exact scan of the same matrix (1.0 where no graph)."""
    from rag.searching.search import dense_top

    snap, out = engine.snapshot, {}
    if not hasattr(snap, "graph_for"):
        return {"dense": 1.0, "multilingual": 1.0}
    for side, model in (("dense", engine.embedder), ("multilingual", engine.side)):
        graph, _ = snap.graph_for(side)
        if graph is None or model is None:
            out[side] = 1.0
            continue
        hits = 0
        for q in qs:
            qv = model.embed_batch([q])[0]
            got, _ = dense_top(snap, qv, n, side=side)
            exact, _ = dense_top(snap, qv, n, np.ones(len(snap.chunks), dtype=np.float32), side=side)  # a mask scans
            hits += len(set(got) & set(exact))
        out[side] = hits / (n * len(qs))
    return out


def store_recall(engine, qs: list[str], n: int = 20) -> dict[str, float]:
    """Each side's top-n from the server's index against an exact scan of all its vectors (read from the
    server here, after the timings: the app never reads them all)."""
    from rag.searching.search import dense_top

    snap, out = engine.snapshot, {}
    for side, model, store in (("dense", engine.embedder, engine.indexer.store),
                               ("multilingual", engine.side, engine.indexer.side_store)):
        if model is None or store is None:
            continue
        stored = store.all_vectors()
        matrix = np.stack([stored[cid] for cid in snap.ids])
        del stored
        hits = 0
        for q in qs:
            qv = model.embed_batch([q])[0]
            got, _ = dense_top(snap, qv, n, side=side)
            exact = np.argsort(1.0 - matrix @ qv, kind="stable")[:n]
            hits += len(set(got) & set(exact.tolist()))
        out[side] = hits / (n * len(qs))
    return out


def child(args) -> None:
    if args.child == "build":
        print(json.dumps(build(args.size, args.rebuild, args.corpus, args.server)))
    else:
        print(json.dumps(measure(args.size, args.queries, args.corpus, args.server, args.ef_search,
                                 args.multilingual == "on", args.feedback_pool)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--corpus", choices=("small", "zipf", "real"), default="small",
                    help="small: bench_engine's 80-word vocabulary (every passage near every other: a graph's "
                         "hard case); zipf: 20,000 words on 500 topics, as real folders are; real: NFCorpus's "
                         "abstracts as runs of sentences, embedded by the real models (slow: ~25 ms a passage)")
    ap.add_argument("--label", default="", help="a name for this run's output file (bench/out/large-LABEL.json)")
    ap.add_argument("--plot", nargs="+", metavar=("SVG", "NAME=JSON"),
                    help="draw the curves of earlier runs: an SVG path, then NAME=file for each series "
                         "(a file this script wrote, or several: NAME=a.json,b.json)")
    ap.add_argument("--server", action="store_true",
                    help="index through a `chroma run` server and search with search_reads = \"store\"")
    ap.add_argument("--ef-search", type=int, help="with --server: the HNSW search breadth (hnsw_ef_search) to measure at")
    ap.add_argument("--feedback-pool", type=int, default=0, help="the feedback_pool setting to measure with")
    ap.add_argument("--multilingual", choices=("on", "off"), default="on",
                    help="off: measure with the multilingual side turned off (the index keeps its vectors)")
    ap.add_argument("--child", choices=("build", "measure"), help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.plot:
        series = {}
        for spec in args.plot[1:]:
            name, files = spec.split("=", 1)
            rows = []
            for f in files.split(","):
                got = json.loads(Path(f).read_text())
                rows += got["rows"] if "rows" in got else [got]
            series[name] = [(r["chunks"], r["beyond"]["median"], r["rss_mb"]["after the searches"]) for r in rows]
        return plot(series, Path(args.plot[0]))
    OUT.mkdir(exist_ok=True)
    rows = []
    for size in args.sizes:
        run = lambda what, *extra: json.loads(subprocess.run(  # noqa: E731
            [sys.executable, __file__, "--child", what, "--size", str(size), "--queries", str(args.queries),
             "--corpus", args.corpus, *(["--server"] if args.server else []),
             *(["--ef-search", str(args.ef_search)] if args.ef_search else []),
             "--multilingual", args.multilingual, "--feedback-pool", str(args.feedback_pool), *extra],
            check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        built = run("build", *(["--rebuild"] if args.rebuild else []))
        row = run("measure")
        row["built"] = built
        rows.append(row)
    machine = f"{platform.machine()}, Python {platform.python_version()}"
    name = OUT / f"large{'-' + args.label if args.label else ''}.json"
    name.write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    print(f"machine: {machine}; {args.queries} questions a size; written to {name.relative_to(ROOT)}\n")
    for r in rows:
        print(f"## {r['chunks']:,} passages (opened in {r['open_s']:.1f} s, graphs built in {r['graph_s']:.1f} s more; "
              f"index built in {r['built']['build_s']:.0f} s; calibrated in {r.get('calibrate_s', 0):.0f} s); recall@20 of the "
              f"{'server index' if args.server else 'graphs'}: {r['recall_at_20']}; the app's lists against every row "
              f"scanned: {r.get('as_scanned') or '-'}\n")
        print("| resident set | MB |\n|---|---:|")
        for k, v in r["rss_mb"].items():
            print(f"| {k} | {v:,.0f} |")
        print(f"| peak | {r['peak_mb']:,.0f} |\n")
        print("| held by the snapshot and indexer | MB |\n|---|---:|")
        for k, v in r["breakdown_mb"].items():
            if k != "passages":
                print(f"| {k} | {v:,.1f} |")
        print("\n| stage | median ms | p95 ms |\n|---|---:|---:|")
        for k, v in r["stages"].items():
            print(f"| {k} | {v['median']:.2f} | {v['p95']:.2f} |")
        print(f"| **beyond the embeddings** | **{r['beyond']['median']:.2f}** | **{r['beyond']['p95']:.2f}** |\n")



def plot(series: dict[str, list[tuple[int, float, float]]], path: Path) -> None:
    """Two panels as SVG (no plotting library here): search time beyond the embeddings (median, ms) and
    resident memory (MB) against passages, log scale, one line per series ((passages, ms, MB) points)."""
    w, h, pad = 360, 240, 48
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    xs = sorted({p[0] for pts in series.values() for p in pts})
    lo, hi = np.log10(min(xs)), np.log10(max(xs))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * w + 20}" height="{h + 40}" '
           f'font-family="sans-serif" font-size="11">']
    for panel, (k, label) in enumerate(((1, "beyond the embeddings, median ms"), (2, "resident memory, MB"))):
        ox = panel * (w + 20)
        top = max(p[k] for pts in series.values() for p in pts) * 1.15
        X = lambda n: ox + pad + (np.log10(n) - lo) / ((hi - lo) or 1) * (w - 2 * pad)  # noqa: E731
        Y = lambda v: h - pad + 10 - v / top * (h - 2 * pad)  # noqa: E731
        out.append(f'<text x="{ox + pad}" y="16" font-weight="bold">{label}</text>')
        out.append(f'<line x1="{ox + pad}" y1="{Y(0)}" x2="{ox + w - pad}" y2="{Y(0)}" stroke="#888"/>')
        out.append(f'<line x1="{ox + pad}" y1="{Y(0)}" x2="{ox + pad}" y2="{Y(top)}" stroke="#888"/>')
        for frac in (0.25, 0.5, 0.75, 1.0):
            v = top / 1.15 * frac
            out.append(f'<text x="{ox + pad - 4}" y="{Y(v) + 4}" text-anchor="end">{v:,.0f}</text>')
        last = -1e9
        for n in xs:  # a size too close to the last one labelled goes unlabelled (its point says it)
            if X(n) - last >= 60:
                out.append(f'<text x="{X(n)}" y="{Y(0) + 14}" text-anchor="middle">{n:,}</text>')
                last = X(n)
        for i, (name, pts) in enumerate(series.items()):
            pts = sorted(pts)
            c = colours[i % len(colours)]
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                       % (c, " ".join(f"{X(p[0]):.1f},{Y(p[k]):.1f}" for p in pts)))
            out += [f'<circle cx="{X(p[0]):.1f}" cy="{Y(p[k]):.1f}" r="3" fill="{c}"/>' for p in pts]
            if panel == 0:
                out.append(f'<text x="{ox + pad + 8}" y="{32 + 14 * i}" fill="{c}">{name}</text>')
        out.append(f'<text x="{ox + w / 2}" y="{h + 30}" text-anchor="middle">passages (log scale)</text>')
    out.append("</svg>")
    path.write_text("\n".join(out), encoding="utf-8")


if __name__ == "__main__":
    main()

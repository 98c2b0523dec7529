"""Evaluation: measure retrieval without generation (no LLM needed), on the sample folder and on the
person's own folder, through the engine's own search. The lab beside the product: `rag eval` calls it.

- Needle sets (`bench/sample_needles.jsonl`, in the format of `rag.deciding.needles`): a retrieval is correct when
  a ranked chunk's content contains the whole needle (`rag.deciding.needles.contains`, the product's own rule).
- `evaluate_needles`: Recall@1/4/8/20, MRR and destroyed answers for chunk strategies A–F and dense /
  BM25 / hybrid retrieval, each strategy indexed into its own temporary index (never the person's).
- `sweep_table`: the product's threshold sweep (`rag.deciding.sweep`) as a table, rates with Wilson intervals.

Elsewhere: the statistics in `lab.metrics`, BEIR benchmarks in `lab.beir`, the chat's "why wasn't it
found?" in `rag.deciding.diagnosis`, the `rag eval` commands in `rag.cli`.

What it does not do: call a generator, or write to the index of the folder it measures.

>>> parse_config("E/hybrid:1:2")
('E', 'hybrid', {'dense': 1.0, 'bm25': 2.0})
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from lab.metrics import SignTest, fmt_rate, rate, reciprocal_rank, sign_test
from rag.deciding.needles import Question, contains
from rag.searching.search import dense_top
from rag.settings import Settings
from rag.deciding.sweep import Sweep

KS = (1, 4, 8, 20)
STRATEGIES = ("A", "B", "C", "D", "E", "F")
MODES = ("dense", "bm25", "hybrid")


# --- needle sets --------------------------------------------------------------------------------------


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



# --- needle sets: strategies x modes --------------------------------------------------------------------


def open_engine(folder: Path, index_dir: Path, embedder, base: Settings, **changes):
    """An engine over `folder` with its index in `index_dir` (a temporary one: never the person's), synced."""
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
    if mode == "dense":  # the search's own exact scan of the snapshot
        rows, _ = dense_top(snap, engine.embedder.embed_batch([question])[0], depth)
        return [snap.chunks[i].id for i in rows]
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
            engine, report = open_engine(folder, Path(tmp), embedder, base, chunk_strategy=s, candidates=depth)
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
                    engine.settings = plain if w is None else plain.replace(dense_weight=w["dense"], bm25_weight=w["bm25"],
                                                                           dense_weight_unread=w["dense"])
                    for q in answerable:
                        run.ranks[c].append(needle_rank(engine, mode_ranking(engine, q.question, mode, depth), q.needle))
                    if mode == "hybrid":
                        run.weights[c] = engine.search(answerable[0].question).weights if answerable else {}
                    engine.settings = plain
            finally:
                engine.close()
    return run


# --- threshold sweep ------------------------------------------------------------------------------------


def sweep_table(sw: Sweep, group: str = "all") -> str:
    """One group of a sweep as a table: each threshold's right, refused, wrong and bluffing questions."""
    rows = sw.rows[group]
    a, r = rows[0].answerable, rows[0].refusable
    current = sw.currents.get(group, sw.current)
    lines = [f"{group}: {a} answerable, {r} should refuse; suggested threshold "
             f"{_f(sw.suggested[group])} (bluffs ≤ {sw.budget:.0%}); the engine's {current:.3f}",
             f"{'threshold':>9}  {'right chunk kept':<22} {'refused':<20} {'wrong kept':>10}  {'bluffs':<20}"]
    if group in sw.at_current:
        row = sw.at_current[group]
        lines.append(f"{'engine':>9}  {fmt_rate(rate(row.right, a)):<22} {fmt_rate(rate(row.refused, a)):<20} "
                     f"{row.wrong:>10}  {fmt_rate(rate(row.bluffs, r)):<20} <- as asked (per-language threshold)")
    for row in rows:
        mark = " <- current" if abs(row.threshold - current) < 1e-9 else ""
        mark += " <- suggested" if sw.suggested[group] is not None and abs(row.threshold - sw.suggested[group]) < 1e-9 else ""
        lines.append(f"{row.threshold:>9.3f}  {fmt_rate(rate(row.right, a)):<22} {fmt_rate(rate(row.refused, a)):<20} "
                     f"{row.wrong:>10}  {fmt_rate(rate(row.bluffs, r)):<20}{mark}")
    return "\n".join(lines)


def _f(x: float | None) -> str:
    return "none" if x is None else f"{x:.3f}"

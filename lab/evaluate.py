"""Evaluation: measure retrieval without generation (no LLM needed), on the sample folder and on the
person's own folder, through the engine's own search.

- Needle sets (`bench/sample_needles.jsonl`, and the questions a person saves on the calibration page):
  JSONL of {question, needle, document, lang, style} or {question, refuse: true, lang}. A retrieval is
  correct when a ranked chunk's content contains the whole needle (`rag.metrics.contains`).
- `evaluate_needles`: Recall@1/4/8/20, MRR and destroyed answers for chunk strategies A–F and dense /
  BM25 / hybrid retrieval, each strategy indexed into its own temporary index (never the person's).
- `sweep`: nearest-candidate distances of answerable and refusable questions and what every threshold
  does with them; suggests the threshold a bluff budget allows, overall and per question language.

Elsewhere: the statistics in `rag.metrics`, BEIR benchmarks in `rag.beir`, the chat's "why wasn't it
found?" in `rag.diagnosis`, the `rag eval` commands in `rag.cli`. Their names stay importable from here.

What it does not do: call a generator, or write to the index of the folder it measures (the calibration
page's questions file beside the index is the one exception, and only through `save_question`).

>>> parse_config("E/hybrid:1:2")
('E', 'hybrid', {'dense': 1.0, 'bm25': 2.0})
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from rag.calibration import evidence_distance
from rag.gate import gate
from rag.lexical import question_language  # noqa: F401  (the calibration page reads it from here)
from rag.metrics import SignTest, contains, fmt_rate, rate, reciprocal_rank, sign_test
from rag.search import SearchResult, dense_top
from rag.settings import Settings

# Names that moved to their own modules, still importable from here for existing callers.
from rag.beir import BeirChunks, BeirData, BeirRun, beir_chunks, beir_document, beir_snapshot, cached_vectors, load_beir, run_beir  # noqa: E402,F401
from rag.diagnosis import (  # noqa: E402,F401
    CAPPED_OUT, CHUNKING, CITED, EXTRACTION, GATED, RANKS, UNSUPPORTED_OUT, Diagnosis, why_not_found,
)
from rag.metrics import Z95, dcg, first_rank, ndcg_at, recall_at, wilson  # noqa: E402,F401

KS = (1, 4, 8, 20)
STRATEGIES = ("A", "B", "C", "D", "E", "F")
MODES = ("dense", "bm25", "hybrid")


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
    evidence = [evidence_distance(r, ch.rule) for r, ch in zip(results, choices)]
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



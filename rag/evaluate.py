"""Evaluate: measure retrieval without generation (DESIGN.md rule 13), on the sample folder, on the
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
0.6199
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
from rag.gate import CAPPED, KEPT, OVER, Gated, gate
from rag.lexical import LexicalIndex, analyze, fold
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

    @property
    def answerable(self) -> bool:
        return not self.refuse

    def to_json(self) -> dict:
        if self.refuse:
            return {"question": self.question, "refuse": True, "lang": self.lang}
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
                            style=d.get("style", ""), refuse=refuse))
    return out


def save_question(path: str | Path, q: Question) -> None:
    """Append one question to a JSONL file (the calibration page's questions, beside the index)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")


_QUESTION_WORDS = {
    "en": {"the", "what", "how", "does", "do", "is", "are", "can", "which", "why", "when", "where", "who", "of",
           "to", "my", "i", "a", "an", "it", "in", "for", "and", "should", "will"},
    "pt": {"o", "a", "os", "as", "que", "qual", "quais", "como", "quando", "onde", "quem", "porque", "por", "de",
           "do", "da", "dos", "das", "um", "uma", "e", "é", "sao", "são", "em", "no", "na", "para", "posso", "se",
           "eu", "meu", "minha", "há", "ha", "nao", "não", "quanto", "quantos", "ao", "com"},
}


def question_language(text: str) -> str:
    """'en' or 'pt' for a short question, by function words and Portuguese letters; '' if unclear."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    pt = sum(1 for w in words if w in _QUESTION_WORDS["pt"] and w not in ("a", "e")) + \
        2 * sum(1 for w in words if re.search(r"[ãõçáéíóúâêô]", w))
    en = sum(1 for w in words if w in _QUESTION_WORDS["en"] and w != "a")
    if pt == en:
        return ""
    return "pt" if pt > en else "en"


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

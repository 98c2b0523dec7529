"""Other evidence rules, simulated on the same searches: does any keep more right passages without more bluffs?

Two steps, each a subcommand:

- `dump`: index the sample folder (data/) and the SQuAD 2.0 folders (../shared/eval/squad2, English and
  Portuguese) with the default settings, search every question of bench/sample_needles.jsonl,
  bench/sample_heldout.jsonl, bench/sample_heldout2.jsonl and SQuAD's questions.jsonl, and the 800 shipped
  unrelated questions the calibration asks, once each, through the app's own search; keep per candidate what
  the rules below need: per question word, whether the passage holds it and its IDF; the best sentence's
  cosine distance; per question word, its best cosine against the passage's words (MiniLM on single words),
  and its best cosine in context (MiniLM's token outputs: the question word's word pieces as the question
  encodes them, against every word piece of the passage's sentences, each sentence encoded on its own; the
  late-interaction matching of ColBERT, with a model not trained for it); the cosine distance between the
  passage's stored vector and the question's missing words embedded as one phrase. Written to
  OUT/frontier-<folder>.pkl.
- `simulate`: for each rule, calibrate every folder again with it (the app's arithmetic,
  `rag.deciding.calibration.choose_threshold`: 5% budget per kind of unrelated question, the folder's own topics left
  out, the close distance from the unrelated questions' nearest) and gate every question: right passages
  kept (of those hybrid search ranks in its top 4) and should-refuse questions answered. Development: the
  sample set's dev half, held-out set 1, SQuAD's dev halves; test: the sample set's test half, held-out set
  2, SQuAD's test halves (the same halves as bench/refusals.py). Prints one line per rule and split.
- `stability`: the shipped rule (or its close distance at `--percentile`, with `--close-support`), calibrated
  again on 200 draws (with replacement) of the unrelated questions: how far the calibrated thresholds and the
  test halves' right-kept counts move with the question set itself (5th / 50th / 95th percentile of the
  draws).

Rules (each at several min_support / close_support): the shipped one; word weights multiplied by how rare the
word is in its language (needs the `wordfreq` package, which the app does not depend on: skipped without it);
no close relaxation for a question holding a rare word (Zipf < 4.5, wordfreq again) the folder never uses; the
best sentence's distance in place of the chunk's; a missing word counted as held when some word of the passage
is within a cosine of it (MiniLM word vectors), or the same in context (token outputs), for full or half
credit; the close distance at a percentile of the unrelated questions' nearest distances instead of their
minimum (`close-percentile`), or both, the nearest keeping the lower share (`two-tier`); no support needed by
a passage far under the close distance (`very-close`); the distance between the passage and the question's
missing words read as one phrase, required for the close relaxation (`resid-close`) or enough on its own
(`resid-or`, `resid-only`); a share needed that grows with the distance, from the close distance to a
percentile of the unrelated questions' nearest (`ramp`); the opposite, a share that rises past such a
percentile to every word at the ceiling (`rise`, shipped at the 5th percentile since session 14; `shipped`
is the rule before it); the word naming the kind of answer ("what percentage", "which country") left out
of the support test (`wh-type`). Every rule applies the shipped name rules (a name the folder never
mentions, or a passage lacking one it uses, fails). `--only PREFIX` simulates the rules whose name starts
with it. Results: docs/benchmarks.md, "The frontier".

What it does not do: change the app. The code rule (rag.deciding.gate) is not simulated: no question here names a
code except the sample's few error codes.

    .venv/bin/python bench/gate_frontier.py dump [--out bench/out] [--squad ../shared/eval/squad2]
    .venv/bin/python bench/gate_frontier.py simulate [--out bench/out] [--only ramp]
    .venv/bin/python bench/gate_frontier.py stability [--out bench/out] [--percentile 0.02 --close-support 0.3]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import pickle
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import rag  # noqa: E402
from rag import load_settings  # noqa: E402
from rag.deciding.calibration import KINDS, _just_under, choose_threshold, question_kinds, unrelated_questions  # noqa: E402
from rag.indexing.chunk import sentences  # noqa: E402
from rag.text.lexical import TOKEN, fold, stop_words, term_tokens  # noqa: E402
from rag.deciding.needles import contains, load_questions  # noqa: E402
from rag.deciding.evidence import weighed  # noqa: E402
from rag.searching.search import hybrid_search  # noqa: E402
from rag.searching.terms import QUESTION_FILLER  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from refusals import half  # noqa: E402

SAMPLE_SETS = {"sample_needles.jsonl": "sample", "sample_heldout.jsonl": "set 1", "sample_heldout2.jsonl": "set 2"}
BUDGET, FLOOR, CEILING = 0.05, 0.30, 0.80


# --- dump --------------------------------------------------------------------------------------------------

def _row(c, r, snap) -> dict:
    """What the rules need of one candidate: its distance, rank, names, and per question word (held, idf)."""
    pos = snap.pos[c.chunk_id]
    clang = snap.chunks[pos].meta.get("lang", "")
    words = []
    for t in r.terms:
        toks = term_tokens(t, clang)
        if toks:
            words.append((t, all(snap.lexical._holds(pos, x) for x in toks), max(snap.lexical.idf(x) for x in toks)))
    return {"id": c.chunk_id, "distance": c.distance, "fused_rank": c.fused_rank, "content": c.content,
            "names": bool(c.unknown_names), "absent": bool(c.absent_names), "lacks": bool(c.lacks_names),
            "words": words}


def _searched(r, snap) -> dict:
    lang = r.language or "en"
    return {"question": r.question, "detected": lang, "terms": list(r.terms),
            "unused": [t for t in r.terms if snap.chunks and snap.lexical.unused(t)],
            "rows": [_row(c, r, snap) for c in r.candidates]}


def dump(out: Path, squad: Path) -> None:
    embedder = rag.load_embedder()
    folders = [("sample", ROOT / "data", [ROOT / "bench" / f for f in SAMPLE_SETS]),
               ("squad-en", squad / "en" / "docs", [squad / "en" / "questions.jsonl"]),
               ("squad-pt", squad / "pt" / "docs", [squad / "pt" / "questions.jsonl"])]
    stop = stop_words("en") | stop_words("pt") | QUESTION_FILLER
    for name, folder, files in folders:
        settings = load_settings(config=out / "none.toml", env={}, folder=folder, index_dir=out / f"idx-{name}")
        engine = rag.Engine(settings, embedder=embedder)
        engine.sync()
        snap = engine.snapshot
        unrelated = []
        for lang in ("en", "pt"):
            qs, kinds = unrelated_questions(lang), question_kinds(lang)
            vectors = embedder.embed_batch([q for _, q in qs])
            for kind, (topic, q), v in zip(kinds, qs, vectors):
                r = weighed(hybrid_search(q, embedder=embedder, snapshot=snap, settings=settings,
                                          weights=engine.fusion_weights(settings, q), vector=v), snap)
                unrelated.append({**_searched(r, snap), "lang": lang, "kind": kind, "topic": topic})
        asked = []
        for path in files:
            raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            for q, d in zip(load_questions(path), raw):
                r = engine.search(q.question)
                part = SAMPLE_SETS.get(path.name, name)
                split = "dev" if part == "set 1" else "test" if part == "set 2" else half(d.get("id") or q.question)
                asked.append({**_searched(r, snap), "set": part, "split": split, "lang": q.lang or "en",
                              "needle": q.needle, "kind": q.kind or ("should-refuse" if q.refuse else "answerable")})
        # The best sentence's distance, and each question word's best cosine against the passage's words.
        searched = unrelated + asked
        chunks = {row["id"]: row["content"] for s in searched for row in s["rows"]}
        sents, owner = _sentences(chunks)
        by_chunk: dict[str, list] = {}
        for cid, v in zip(owner, embedder.embed_batch(sents)):
            by_chunk.setdefault(cid, []).append(v)
        words = {cid: sorted({w for w in (m.group() for m in TOKEN.finditer(t.lower()))
                              if len(w) > 2 and fold(w) not in stop}) for cid, t in chunks.items()}
        vocab = sorted({w for ws in words.values() for w in ws} | {t for s in searched for t in s["terms"]})
        wv = dict(zip(vocab, embedder.embed_batch(vocab)))
        qv = dict(zip([s["question"] for s in searched], embedder.embed_batch([s["question"] for s in searched])))
        for s in searched:
            for row in s["rows"]:
                sv = np.stack(by_chunk[row["id"]]) if row["id"] in by_chunk else None
                row["sentence"] = float(1 - (sv @ qv[s["question"]]).max()) if sv is not None else row["distance"]
                m = np.stack([wv[w] for w in words[row["id"]]]) if words[row["id"]] else None
                row["near"] = {t: float((m @ wv[t]).max()) if m is not None else 0.0 for t in s["terms"]}
        _in_context(embedder, searched, chunks)
        _residual(embedder, searched, {cid: snap.vectors[snap.pos[cid]] for cid in chunks})
        with (out / f"frontier-{name}.pkl").open("wb") as fh:
            pickle.dump({"unrelated": unrelated, "asked": asked}, fh)
        print(f"{name}: {len(unrelated)} unrelated, {len(asked)} asked, {len(chunks)} passages", flush=True)
        engine.close()


def _sentences(chunks: dict[str, str]) -> tuple[list[str], list[str]]:
    """Every passage's sentences (whitespace collapsed), and beside each the id of its passage."""
    sents, owner = [], []
    for cid, text in chunks.items():
        for a, b in sentences(text) or [(0, len(text))]:
            if text[a:b].strip():
                sents.append(" ".join(text[a:b].split()))
                owner.append(cid)
    return sents, owner


def _token_vectors(embedder, texts: list[str]) -> list[tuple[list[tuple[int, int]], np.ndarray]]:
    """Per text: the character spans of its word pieces and their unit vectors (MiniLM's last layer, before
    pooling); the [CLS]/[SEP] markers and pieces without a letter or digit left out."""
    model = embedder._model  # the SentenceTransformer itself: its token outputs are not part of Embedder
    outs = model.encode(texts, output_value="token_embeddings", batch_size=64, convert_to_numpy=False,
                        show_progress_bar=False)
    res = []
    for text, emb in zip(texts, outs):
        offs = model.tokenizer(text, return_offsets_mapping=True, truncation=True,
                               max_length=model.max_seq_length)["offset_mapping"]
        keep = [i for i, (a, b) in enumerate(offs) if b > a and any(ch.isalnum() for ch in text[a:b])]
        v = emb.float().numpy()[keep]
        res.append(([offs[i] for i in keep], v / np.linalg.norm(v, axis=1, keepdims=True)))
    return res


def _in_context(embedder, searched: list[dict], chunks: dict[str, str]) -> None:
    """row["ctx"][word]: the question word's best cosine in context against the passage's word pieces."""
    sents, owner = _sentences(chunks)
    pieces: dict[str, list] = {}
    for cid, (_, v) in zip(owner, _token_vectors(embedder, sents)):
        pieces.setdefault(cid, []).append(v)
    pieces = {cid: np.concatenate(vs) for cid, vs in pieces.items()}
    questions = sorted({s["question"] for s in searched})
    asked = dict(zip(questions, _token_vectors(embedder, questions)))
    for s in searched:
        offs, v = asked[s["question"]]
        folded = fold(s["question"])  # fold() keeps the length of these texts, so spans still match
        words = {}
        for t in s["terms"]:
            m = re.search(r"\b" + re.escape(fold(t)), folded)
            if not m:
                continue
            end = m.start()
            while end < len(folded) and (folded[end].isalnum() or folded[end] in "-'"):
                end += 1
            idx = [i for i, (a, b) in enumerate(offs) if a >= m.start() and b <= end]
            if idx:
                x = v[idx].mean(0)
                words[t] = x / np.linalg.norm(x)
        for row in s["rows"]:
            m = pieces.get(row["id"])
            row["ctx"] = {t: float((m @ words[t]).max()) if m is not None and t in words else 0.0
                          for t in s["terms"]}


def _residual(embedder, searched: list[dict], vectors: dict[str, np.ndarray]) -> None:
    """row["resid"]: the cosine distance between the passage and the question's words it lacks, read as one
    phrase ("open source licence"): whether the passage is about what it does not literally say (a
    paraphrase: "cutoff" beside "threshold") or only about the words it shares (a near-topic question: "Is
    Folder Chat open source?" beside a passage about Folder Chat). 0 when it lacks nothing. `vectors`: each
    passage's stored vector, as the dense search reads it."""
    def lacking(row: dict) -> str:
        return " ".join(t for t, held, _ in row["words"] if not held)

    phrases = sorted({lacking(row) for s in searched for row in s["rows"]} - {""})
    pv = dict(zip(phrases, embedder.embed_batch(phrases)))
    for s in searched:
        for row in s["rows"]:
            phrase = lacking(row)
            row["resid"] = float(1 - pv[phrase] @ vectors[row["id"]]) if phrase else 0.0


# --- simulate ----------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _zipf(word: str, lang: str) -> float:
    import wordfreq

    return wordfreq.zipf_frequency(word, lang)


_ASKS_TYPE = {"what", "which", "que", "qual", "quais", "quanto", "quanta", "quantos", "quantas"}


def _answer_types(question: str) -> frozenset[str]:
    """The word naming the kind of answer asked for, right after "what"/"which" ("what percentage", "which
    country", "em que data"), and "name" of "the name of": the passage holds the answer, not that word."""
    toks = [m.group() for m in TOKEN.finditer(question.lower())]
    out = {b for a, b in zip(toks, toks[1:]) if a in _ASKS_TYPE}
    return frozenset(out | ({"name", "nome"} & set(toks)))


def _support(row: dict, weight, near: float | None = None, key: str = "near", credit: float = 1.0) -> float:
    """The support test's share, a missing word counted as `credit` of a held one when its best cosine
    (row[key]: "near" for single-word vectors, "ctx" in context) is at least `near`."""
    total = sum(weight(t, idf) for t, _, idf in row["words"])
    held = sum(weight(t, idf) * (1.0 if h else credit if near is not None and row[key][t] >= near else 0.0)
               for t, h, idf in row["words"])
    return held / total if total else 1.0


def _calibrate(unrelated: list[dict], passes, distance, percentile: float, min_support: float,
               upper: float = 0.0) -> dict:
    """Per language (threshold, (close, nearest)): the app's calibration arithmetic with a rule's tests;
    `close` at the rule's percentile of the unrelated questions' nearest distances, `nearest` at their
    nearest (the app's), both just under."""
    out = {}
    for lang in ("en", "pt"):
        qs = [u for u in unrelated if u["lang"] == lang]
        topics = [u["topic"] for u in qs]
        plain = [min((distance(r) for r in u["rows"] if r["support"] + 1e-9 >= min_support), default=math.inf)
                 for u in qs]
        _, _, excluded, _ = choose_threshold(plain, topics, BUDGET, FLOOR, CEILING)
        nearest = sorted(min((distance(r) for r in u["rows"]), default=math.inf)
                         for u, t in zip(qs, topics) if t not in excluded)
        close = (_just_under(nearest[int(percentile * len(nearest))]), _just_under(nearest[0]),
                 nearest[min(int(upper * len(nearest)), len(nearest) - 1)])
        values = [min((distance(r) for r in u["rows"] if passes(r, u, close)), default=math.inf) for u in qs]
        thresholds = []
        for kind, _ in KINDS:
            mine = [i for i, u in enumerate(qs) if u["kind"] == kind]
            t, *_ = choose_threshold([values[i] for i in mine], [topics[i] for i in mine], BUDGET, FLOOR, CEILING,
                                     exclude=excluded)
            thresholds.append(t)
        out[lang] = (min(thresholds), close)
    return out


def _rule(name: str, min_support: float, close_support: float, **kw):
    """(weight, passes, distance, percentile) for a named rule."""
    weight = (lambda t, idf, lang: idf * max(0.0, 7.0 - _zipf(t, lang))) if name == "rarity" else \
        (lambda t, idf, lang: idf)
    distance = (lambda r: r["sentence"]) if name == "sentence" else (lambda r: r["distance"])

    def passes(row: dict, s: dict, closes: tuple[float, float]) -> bool:
        close, nearest = closes[:2]
        denied = row["names"] or (name == "rare-unused" and any(_zipf(t, s["detected"]) < 4.5 for t in s["unused"]))
        need = close_support if distance(row) <= close and not denied else min_support
        if name == "two-tier" and not denied and distance(row) <= nearest:
            need = min(need, kw["inner"])  # the nearest question's close distance keeps its own, lower share
        if name == "very-close" and not denied and distance(row) <= close - kw["below"]:
            need = kw.get("need", 0.0)
        if name == "resid-close" and need < min_support and row["resid"] > kw["resid"]:
            need = min_support  # the close relaxation only for a passage near the words it lacks
        if name == "refuse-names" and row["names"]:
            return False  # a question naming what the folder never mentions is refused outright
        if row.get("absent") or row.get("lacks"):
            return False  # the shipped name rules (rag.deciding.gate; dumps before them lack the fields)
        if name == "ramp" and not denied:
            # The share needed grows with the distance, from close_support at the close distance to min_support
            # at the unrelated questions' nearest distances' `upper` percentile (`closes` carries it).
            upper = closes[2]
            share = 0.0 if distance(row) <= close else min(1.0, (distance(row) - close) / max(upper - close, 1e-9))
            start = close_support if share == 0.0 else kw.get("start", close_support)  # the share just past close
            need = start + (min_support - start) * share
        if name == "rise" and distance(row) > closes[2]:
            # Session 14 (shipped since): past the unrelated questions' nearest distances' `upper` percentile
            # the share needed rises, reaching every word at the ceiling (rag.deciding.rule.SupportRule.rise_from).
            share = min(1.0, (distance(row) - closes[2]) / max(CEILING - closes[2], 1e-9))
            need = min_support + (1.0 - min_support) * share
        ok = row["support"] + 1e-9 >= (min_support if name == "resid-only" else need)
        if name in ("resid-or", "resid-only") and not denied:
            ok = ok or row["resid"] <= kw["resid"]
        return ok

    return weight, passes, distance, kw.get("percentile", 0.0), kw.get("near"), kw.get("credit", 1.0)


def simulate(out: Path, only: str = "") -> None:
    data = {p.stem.removeprefix("frontier-"): pickle.load(p.open("rb")) for p in sorted(out.glob("frontier-*.pkl"))}
    if not data:
        sys.exit(f"nothing dumped in {out}: run `dump` first")
    try:
        import wordfreq  # noqa: F401
        rare = ["rarity", "rare-unused"]
    except ImportError:
        rare = []
        print("wordfreq is not installed: the two rules that read word rarity are skipped")
    rules = [("shipped", 0.5, 0.2, {})]
    rules += [("refuse-names", 0.5, cs, {"percentile": p}) for p, cs in ((0.0, 0.2), (0.02, 0.3), (0.02, 0.2))]
    rules += [(r, ms, cs, {}) for r in rare for ms, cs in ((0.5, 0.2), (0.5, 0.1))]
    rules += [("sentence", ms, cs, {}) for ms, cs in ((0.5, 0.2), (0.4, 0.2))]
    rules += [("near-words", 0.5, 0.2, {"near": n}) for n in (0.85, 0.75, 0.65)]
    rules += [("near-context", 0.5, 0.2, {"near": n, "credit": c}) for c in (1.0, 0.5) for n in (0.75, 0.7, 0.65)]
    rules += [("close-percentile", 0.5, cs, {"percentile": p}) for p in (0.01, 0.02, 0.03, 0.05)
              for cs in (0.2, 0.25, 0.3, 0.35)]
    rules += [("two-tier", 0.5, cs, {"percentile": p, "inner": 0.2}) for p in (0.01, 0.02, 0.03, 0.05)
              for cs in (0.25, 0.3, 0.35)]
    rules += [("shipped", ms, cs, {}) for ms, cs in ((0.4, 0.1), (0.5, 0.0))]
    rules += [("very-close", 0.5, 0.2, {"below": b, "need": n}) for n in (0.0, 0.1) for b in (0.1, 0.15, 0.2, 0.25)]
    rules += [(r, 0.5, 0.2, {"resid": x}) for r in ("resid-close", "resid-or", "resid-only")
              for x in (0.7, 0.75, 0.8, 0.85, 0.9)]
    rules += [("wh-type", ms, cs, {}) for ms, cs in ((0.5, 0.2), (0.6, 0.2))]
    rules += [("ramp", ms, cs, {"upper": u}) for u in (0.05, 0.1, 0.25, 0.5) for ms, cs in ((0.5, 0.2), (0.5, 0.1), (0.6, 0.2))]
    rules += [("rise", 0.5, 0.2, {"upper": u}) for u in (0.02, 0.05, 0.1)]
    for name, ms, cs, kw in rules:
        if only and not name.startswith(only):
            continue
        weight, passes, distance, percentile, near, credit = _rule(name, ms, cs, **kw)
        key = "ctx" if name == "near-context" else "near"
        tally: dict[tuple[str, str], list[int]] = {}
        for folder, d in data.items():
            for s in d["unrelated"] + d["asked"]:
                for row in s["rows"]:
                    typed = _answer_types(s["question"]) if name == "wh-type" else ()
                    row["support"] = _support(row, lambda t, idf: 0.0 if t in typed else weight(t, idf, s["detected"]),
                                              near, key, credit)
            cal = _calibrate(d["unrelated"], passes, distance, percentile, ms, kw.get("upper", 0.0))
            for s in d["asked"]:
                threshold, close = cal.get(s["lang"], cal["en"])
                kept = [r for r in s["rows"] if distance(r) <= threshold and passes(r, s, close)][:4]
                group = f"{s['set']} {s['lang']}" if folder == "sample" else folder
                t = tally.setdefault((s["split"], group), [0, 0, 0, 0, 0, 0])
                if s["kind"] == "answerable":
                    if any(r["fused_rank"] <= 4 and contains(r["content"], s["needle"]) for r in s["rows"]):
                        t[1] += 1
                        t[0] += any(contains(r["content"], s["needle"]) for r in kept)
                elif s["kind"] != "near-miss":
                    t[3] += 1
                    t[2] += bool(kept)
                else:
                    t[5] += 1
                    t[4] += bool(kept)
        label = f"{name}{' ' + str(kw) if kw else ''} ({ms} / {cs})"
        for split in ("dev", "test"):
            cells = [f"{g}: kept {k}/{n}, answered {b}/{m}" + (f", near-miss {x}/{y}" if y else "")
                     for (sp, g), (k, n, b, m, x, y) in sorted(tally.items()) if sp == split]
            print(f"{label:52} {split:4} " + "; ".join(cells), flush=True)


def stability(out: Path, rounds: int = 200, seed: int = 0, rule: tuple = ("shipped", 0.5, 0.2, {})) -> None:
    """How far the shipped rule's figures move with the unrelated questions themselves: each round draws
    the 800 questions again with replacement (within language and kind), calibrates every folder with that
    draw, and gates the test halves. Prints, per folder, the calibrated threshold, the right passages kept
    and the off-folder (or should-refuse) questions answered on test, at the 5th, 50th and 95th percentile of
    the rounds, beside the figure with the shipped draw."""
    data = {p.stem.removeprefix("frontier-"): pickle.load(p.open("rb")) for p in sorted(out.glob("frontier-*.pkl"))}
    if not data:
        sys.exit(f"nothing dumped in {out}: run `dump` first")
    rng = np.random.default_rng(seed)
    name, min_support, close_support, kw = rule
    weight, passes, distance, percentile, _, _ = _rule(name, min_support, close_support, **kw)
    for folder, d in data.items():
        for s in d["unrelated"] + d["asked"]:
            for row in s["rows"]:
                row["support"] = _support(row, lambda t, idf: weight(t, idf, s["detected"]))
        test = [s for s in d["asked"] if s["split"] == "test" and s["kind"] == "answerable" and s["set"] != "set 2"
                and any(r["fused_rank"] <= 4 and contains(r["content"], s["needle"]) for r in s["rows"])]
        refuse = [s for s in d["asked"] if s["split"] == "test" and s["kind"] not in ("answerable", "near-miss")
                  and s["set"] != "set 2"]
        groups = {}
        for i, u in enumerate(d["unrelated"]):
            groups.setdefault((u["lang"], u["kind"]), []).append(i)

        def measure(unrelated):
            cal = _calibrate(unrelated, passes, distance, percentile, min_support)
            kept = {}
            for s in test:
                threshold, close = cal.get(s["lang"], cal["en"])
                ok = any(contains(r["content"], s["needle"]) for r in
                         [r for r in s["rows"] if distance(r) <= threshold and passes(r, s, close)][:4])
                kept[s["lang"]] = kept.get(s["lang"], 0) + ok
            for s in refuse:
                threshold, close = cal.get(s["lang"], cal["en"])
                answered = any(distance(r) <= threshold and passes(r, s, close) for r in s["rows"])
                kept["bluffs " + s["lang"]] = kept.get("bluffs " + s["lang"], 0) + answered
            return cal, kept

        shipped_cal, shipped_kept = measure(d["unrelated"])
        draws = []
        for _ in range(rounds):
            idx = [i for g in groups.values() for i in rng.choice(g, size=len(g), replace=True)]
            draws.append(measure([d["unrelated"][i] for i in idx]))
        for lang in sorted(k for k in shipped_kept if not k.startswith("bluffs")):
            n = sum(s["lang"] == lang for s in test)
            m = sum(s["lang"] == lang for s in refuse)
            bs = np.array([k.get("bluffs " + lang, 0) for _, k in draws])
            ts = np.array([c[lang][0] for c, _ in draws])
            ks = np.array([k.get(lang, 0) for _, k in draws])
            q = lambda a: " / ".join(f"{x:g}" for x in np.percentile(a, [5, 50, 95]).round(3))
            print(f"{folder:9} {lang}: threshold {shipped_cal[lang][0]:.3f} (rounds 5/50/95%: {q(ts)}); "
                  f"right kept on test {shipped_kept[lang]}/{n} (rounds: {q(ks)}); should-refuse answered "
                  f"{shipped_kept.get('bluffs ' + lang, 0)}/{m} (rounds: {q(bs)})", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("step", choices=["dump", "simulate", "stability"])
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    p.add_argument("--squad", default=str(ROOT.parent / "shared" / "eval" / "squad2"))
    p.add_argument("--percentile", type=float, default=0.0,
                   help="stability: the close distance at this percentile of the unrelated questions' nearest")
    p.add_argument("--close-support", type=float, default=0.2, help="stability: the close relaxation's share")
    p.add_argument("--only", default="", help="simulate: only the rules whose name starts with this")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.step == "dump":
        dump(out, Path(args.squad))
    elif args.step == "stability":
        stability(out, rule=("close-percentile", 0.5, args.close_support, {"percentile": args.percentile}))
    else:
        simulate(out, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())

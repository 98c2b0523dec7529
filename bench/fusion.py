"""Fusion and BM25 settings chosen from measurements, then reported on held-out questions.

Steps, each a subcommand:

- `collect`: index the SQuAD 2.0 folder (English and Portuguese, ../shared/eval/squad2) and the sample
  folder (data/, bench/sample_needles.jsonl) with the app's defaults, and keep, for every answerable
  question, what each side returned (dense: the snapshot's exact scan; BM25: the snapshot's lexical
  index, at several k1/b), the distances, and which candidates hold the needle. Groups: each folder's own
  language, and the cross-language pairs (an English question on the Portuguese folder and the reverse,
  matched by SQuAD id, the needle taken from the folder's language). The app's ranking as it stood before
  this change (RRF, k = 60, BM25 x1.3 on a folder the model does not read) is recorded alongside.
- `choose`: score fusion rules on DEVELOPMENT data only: the SQuAD questions whose id hashes to `dev`
  (the same halves as bench/refusals.py), the sample set, and NFCorpus's dev split (needs the vector
  cache bench/beir_nfcorpus.py writes). Every rule goes through `rag.searching.fusion.fused_order`, the function the
  app's search ranks with.
- `lexical`: the BM25 side alone on the same development questions, with each analyzer step switched
  off in turn (stopwords, stemming, accent folding, whole-code tokens, numbers) and other BM25 variants.
- `nfcorpus`: fusion rules on NFCorpus's dev split through `lab.beir.run_beir` (the app's search);
  `--rules feedback`: the feedback settings instead (passages, and the other Tuning.feedback_* one at a time);
  `--split test`: the app before and after on the test split, with a paired sign test.
- `report`: the chosen defaults through `Engine.search` itself on the held-out SQuAD half (and the
  sample set, which has no held-out half), with Wilson intervals and paired sign tests, before vs after;
  NFCorpus test is `bench/beir_nfcorpus.py`.

    .venv/bin/python bench/fusion.py collect|choose|lexical|nfcorpus|report [--out bench/out] [--md FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the lab beside rag/, wherever the script is run from

import rag  # noqa: E402
from lab.beir import cached_vectors  # noqa: E402
from lab.metrics import SignTest, rate, sign_test  # noqa: E402
from rag.text.lexical import analyze  # noqa: E402
from rag.text.languages import question_language
from rag.indexing.bm25 import LexicalIndex
from rag.deciding.needles import load_questions  # noqa: E402
from rag.searching.fusion import fused_order  # noqa: E402
from rag.searching.search import dense_top, hybrid_search  # noqa: E402
from rag.settings import load_settings  # noqa: E402

SQUAD = ROOT.parent / "shared" / "eval" / "squad2"
NFCORPUS = Path("/work/shared/eval/nfcorpus")
KS = (1, 4, 20)
BM25_GRID = [(1.2, 0.75), (0.9, 0.4), (1.5, 0.75), (1.2, 0.5), (2.0, 0.75)]


def half(qid: str) -> str:
    """SQuAD's fixed split: the same function as bench/refusals.py, so all work uses the same halves."""
    return "dev" if int(hashlib.md5(qid.encode()).hexdigest(), 16) % 2 == 0 else "test"


def squash(text: str) -> str:
    import unicodedata

    return " ".join(unicodedata.normalize("NFC", text).split())


def _raw(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def folders() -> dict[str, tuple[Path, list[tuple[str, str, str, str, str]]]]:
    """Folder name -> (folder, [(group, question, needle, question language, split)])."""
    out = {}
    raw = {lang: {d["id"]: d for d in _raw(SQUAD / lang / "questions.jsonl") if not d.get("refuse")}
           for lang in ("en", "pt")}
    for lang, other in (("en", "pt"), ("pt", "en")):
        qs = [(f"squad-{lang}", d["question"], d["needle"], lang, half(i)) for i, d in raw[lang].items()]
        # A question in the other language about this folder: its needle is this folder's sentence.
        qs += [(f"squad-{other}-on-{lang}", raw[other][i]["question"], d["needle"], other, half(i))
               for i, d in raw[lang].items() if i in raw[other]]
        out[f"squad-{lang}"] = (SQUAD / lang / "docs", qs)
    sample = [q for q in load_questions(ROOT / "bench" / "sample_needles.jsonl") if q.answerable]
    out["sample"] = (ROOT / "data", [(f"sample-{q.lang}", q.question, q.needle, q.lang, "all") for q in sample])
    return out


def collect(out: Path, n: int = 20) -> None:
    embedder = rag.load_embedder()
    records = []
    for name, (folder, qs) in folders().items():
        settings = load_settings(config=out / "none.toml", env={}, folder=folder, index_dir=out / f"fusion-idx-{name}")
        engine = rag.Engine(settings, embedder=embedder)
        engine.sync()
        snap = engine.snapshot
        uncovered = engine._uncovered_language(engine._languages) is not None
        contents = [squash(c.content) for c in snap.chunks]
        langs = [c.meta.get("lang", "") for c in snap.chunks]
        tokens = [analyze(c.text, l) for c, l in zip(snap.chunks, langs)]
        lexicals = {(k1, b): LexicalIndex.build([c.text for c in snap.chunks], langs, k1=k1, b=b, tokens=tokens)
                    for k1, b in BM25_GRID}
        vecs, _, _ = cached_vectors(embedder, [q for _, q, _, _, _ in qs], out, f"fusion-q-{name}")
        for (group, question, needle, qlang, split), qv in zip(qs, vecs):
            holders = [i for i, c in enumerate(contents) if squash(needle) in c]
            rows, dist = dense_top(snap, qv, n)
            bm25 = {f"{k1}/{b}": lex.top(question, n) for (k1, b), lex in lexicals.items()}
            union = set(rows) | {i for side in bm25.values() for i, _ in side}
            # The app's ranking before this change: RRF (k = 60), BM25 weighed 1.3 on a folder most of whose
            # text is in a language the model does not read, 1 elsewhere.
            before = hybrid_search(question, embedder=embedder, snapshot=snap, vector=qv,
                                   settings=settings.replace(fusion="rrf", rrf_k=60, feedback=0),
                                   weights={"dense": 1.0, "bm25": 1.3 if uncovered else 1.0})
            before_rank = next((c.fused_rank for c in before.candidates if snap.pos[c.chunk_id] in holders), None)
            records.append({
                "folder": name, "group": group, "question": question, "lang": qlang, "detected": question_language(question),
                "split": split, "holders": holders, "dense": [[i, float(dist[i])] for i in rows],
                "bm25": {k: [[i, s] for i, s in v] for k, v in bm25.items()},
                "dist": {str(i): float(dist[i]) for i in union}, "before": before_rank,
                "before_weights": before.weights,
            })
        print(f"{name}: {len(snap.chunks)} chunks, {len(qs)} questions, languages {engine._languages}", flush=True)
        engine.close()
    (out / "fusion-records.json").write_text(json.dumps(records))


# --- scoring rules on the records ------------------------------------------------------------------------


def side_rank(ids: list[int], holders: set[int]) -> int | None:
    return next((r for r, i in enumerate(ids, start=1) if i in holders), None)


def rule_rank(rec: dict, method: str, weights: dict, k: int = 60, bm25_key: str = "1.2/0.75", n: int = 20) -> int | None:
    dense = [(str(i), d) for i, d in rec["dense"]]
    bm25 = [(str(i), s) for i, s in rec["bm25"][bm25_key]]
    order = fused_order(dense, bm25, rec["dist"], n=n, method=method, weights=weights, k=k)
    return side_rank([int(c) for c, _ in order], set(rec["holders"]))


def hits(ranks: list[int | None], k: int) -> list[int]:
    return [1 if r is not None and r <= k else 0 for r in ranks]


def recall(ranks: list[int | None], k: int) -> float:
    return sum(hits(ranks, k)) / len(ranks) if ranks else 0.0


FOLDER_LANGUAGES = {"squad-en": ("en",), "squad-pt": ("pt",), "sample": ("en", "pt")}


def reads(rec: dict, model_languages=("en",), folder_condition: bool = True) -> bool:
    """Whether the question gets the usual weights, as `rag.searching.fusion.question_weights` decides: not when
    the model does not read the question's language (unclear: the folder's main language) and the folder
    holds text in it. `folder_condition=False`: the simpler rule that ignores the folder's languages."""
    held = FOLDER_LANGUAGES[rec["folder"]]
    lang = rec["detected"] or held[0]
    return lang in model_languages or (folder_condition and lang not in held)


def choose(out: Path) -> None:
    records = json.loads((out / "fusion-records.json").read_text())
    dev = [r for r in records if r["split"] in ("dev", "all")]
    groups = sorted({r["group"] for r in dev})
    by_group = {g: [r for r in dev if r["group"] == g] for g in groups}
    print("DEV sides (k1 1.2, b 0.75): R@1 / R@4 / R@20")
    for g, rs in by_group.items():
        d = [side_rank([i for i, _ in r["dense"]], set(r["holders"])) for r in rs]
        b = [side_rank([i for i, _ in r["bm25"]["1.2/0.75"]], set(r["holders"])) for r in rs]
        bf = [r["before"] for r in rs]
        print(f"  {g:<16} n={len(rs):<4} dense {' '.join(f'{recall(d, k):.3f}' for k in KS)}  "
              f"bm25 {' '.join(f'{recall(b, k):.3f}' for k in KS)}  before {' '.join(f'{recall(bf, k):.3f}' for k in KS)}")
    print("\nDEV BM25 k1/b (BM25 alone, R@1 / R@4 per group)")
    for key in records[0]["bm25"]:
        cells = []
        for g, rs in by_group.items():
            b = [side_rank([i for i, _ in r["bm25"][key]], set(r["holders"])) for r in rs]
            cells.append(f"{g} {recall(b, 1):.3f}/{recall(b, 4):.3f}")
        print(f"  {key:<9} " + "  ".join(cells))

    # Rules: (name, method, k, weights when the model reads the question's language, weights when not).
    rules = []
    for k in (60, 20, 10, 5):
        for wb in (1.0, 1.3, 2.0):
            for wd_unread in (1.0, 0.5, 0.25, 0.1, 0.0):
                rules.append((f"rrf k={k} bm25={wb} dense_unread={wd_unread}", "rrf", k,
                              {"dense": 1.0, "bm25": wb}, {"dense": wd_unread, "bm25": wb}))
    for method in ("minmax", "zscore"):
        for a in (0.3, 0.4, 0.5, 0.6, 0.7):
            for a_un in (0.5, 0.3, 0.2, 0.1, 0.05, 0.0):
                rules.append((f"{method} dense={a} dense_unread={a_un}", method, 60,
                              {"dense": a, "bm25": 1 - a}, {"dense": a_un, "bm25": 1 - a_un}))
    table = []
    for name, method, k, w_read, w_unread in rules:
        row = {"rule": name}
        for g, rs in by_group.items():
            ranks = [rule_rank(r, method, w_read if reads(r) else w_unread, k) for r in rs]
            row[g] = {f"r@{kk}": recall(ranks, kk) for kk in KS}
            b = [side_rank([i for i, _ in r["bm25"]["1.2/0.75"]], set(r["holders"])) for r in rs]
            d = [side_rank([i for i, _ in r["dense"]], set(r["holders"])) for r in rs]
            # The paired comparison the target is about: against the better side at each k.
            worst = 1.0
            for kk in (1, 4):
                better = b if recall(b, kk) >= recall(d, kk) else d
                worst = min(worst, sign_test(hits(ranks, kk), hits(better, kk)).p
                            if sum(hits(ranks, kk)) < sum(hits(better, kk)) else 1.0)
            row[g]["loss_p"] = worst
        table.append(row)
    main_groups = [g for g in groups if "-on-" not in g]
    for row in table:
        row["score"] = sum(row[g]["r@1"] + row[g]["r@4"] for g in main_groups)
        row["min_loss_p"] = min(row[g]["loss_p"] for g in main_groups)
    table.sort(key=lambda r: -r["score"])
    best = next(r for r in rules if r[0] == table[0]["rule"])
    print(f"\nDEV cross-language groups under {best[0]}: with and without the folder condition")
    for cond in (True, False):
        cells = []
        for g in [g for g in groups if "-on-" in g]:
            ranks = [rule_rank(r, best[1], best[3] if reads(r, folder_condition=cond) else best[4], best[2])
                     for r in by_group[g]]
            cells.append(f"{g} {' / '.join(f'{recall(ranks, k):.3f}' for k in KS)}")
        print(f"  {'unread weights only where the folder holds the language' if cond else 'unread weights for every such question':<58} "
              + "  ".join(cells))
    print("\nDEV rules, best 25 by sum of R@1 + R@4 over own-language groups (min p of a loss vs the better side)")
    for row in table[:25]:
        print(f"  {row['rule']:<42} score {row['score']:.3f} minp {row['min_loss_p']:.3f}  " +
              "  ".join(f"{g} {row[g]['r@1']:.3f}/{row[g]['r@4']:.3f}" for g in groups))
    (out / "fusion-dev.json").write_text(json.dumps(table, indent=1))


# --- the lexical side: analyzer and BM25 variants, on development data ------------------------------------


def _variant_analyzer(stop: bool = True, stem: bool = True, fold_accents: bool = True, codes: bool = True,
                      numbers: bool = True):
    """The app's analyzer (rag.text.lexical.analyze) with one step switched off."""
    import unicodedata

    from rag.text.lexical import TOKEN, WORD_PART, _stem, fold, stop_words

    def analyze_v(text: str, lang: str) -> list[str]:
        lang = lang if lang in ("en", "pt") else "en"
        words = stop_words(lang) if stop else frozenset()
        low = fold(text) if fold_accents else unicodedata.normalize("NFC", text.lower())
        out = []
        for m in TOKEN.finditer(low):
            tok = m.group()
            parts = WORD_PART.findall(tok)
            if codes and len(parts) > 1:
                out.append(tok)
            for q in parts:
                if q in words or (not numbers and q.isdigit()):
                    continue
                out.append((_stem(q, lang) if fold_accents else _stemmer_raw(q, lang)) if stem else q)
        return out
    return analyze_v


def _stemmer_raw(word: str, lang: str) -> str:
    from rag.text.lexical import _stemmer

    return _stemmer(lang).stemWord(word)


def lexical(out: Path) -> None:
    import bm25s

    records = json.loads((out / "fusion-records.json").read_text())
    dev = [r for r in records if r["split"] in ("dev", "all") and "-on-" not in r["group"]]
    variants = {"app analyzer": {}, "no stopwords": {"stop": False}, "no stemming": {"stem": False},
                "no accent folding": {"fold_accents": False}, "no whole-code token": {"codes": False},
                "no numbers": {"numbers": False}}
    methods = ["lucene", "robertson", "bm25l", "bm25+", "atire"]
    embedder = rag.load_embedder()
    results = {}
    for name, (folder, _) in folders().items():
        settings = load_settings(config=out / "none.toml", env={}, folder=folder, index_dir=out / f"fusion-idx-{name}")
        engine = rag.Engine(settings, embedder=embedder)
        engine.sync()
        chunks = engine.snapshot.chunks
        langs = [c.meta.get("lang", "") for c in chunks]
        present = sorted({x for x in langs if x in ("en", "pt")}) or ["en"]
        mine = [r for r in dev if r["folder"] == name]
        engine.close()
        for vname, kw in variants.items():
            an = _variant_analyzer(**kw)
            toks = [an(c.text, l) for c, l in zip(chunks, langs)]
            for method in (methods if vname == "app analyzer" else ["lucene"]):
                bm = bm25s.BM25(k1=1.2, b=0.75, method=method)
                bm.index(toks, show_progress=False)
                for r in mine:
                    q = list(dict.fromkeys(t for lang in present for t in an(r["question"], lang)))
                    q = [t for t in q if t in bm.vocab_dict]
                    sc = np.asarray(bm.get_scores(q)) if q else np.zeros(len(chunks))
                    top = [int(i) for i in np.argsort(-sc, kind="stable")[:20] if sc[i] > 0]
                    results.setdefault((vname, method), {}).setdefault(r["group"], []).append(
                        side_rank(top, set(r["holders"])))
    groups = sorted({r["group"] for r in dev})
    print("DEV BM25 alone, R@1 / R@4 per group (k1 1.2, b 0.75)")
    for (vname, method), by in results.items():
        print(f"  {vname + ' / ' + method:<32} " + "  ".join(
            f"{g} {recall(by[g], 1):.3f}/{recall(by[g], 4):.3f}" for g in groups))


def nfcorpus(out: Path, split: str = "dev", rule_set: str = "fusion") -> None:
    """Fusion rules on NFCorpus's dev split, through `run_beir` (the app's search over a snapshot of the
    corpus); `rule_set` "feedback": the feedback settings instead of the fusion rules. Needs the vector
    cache bench/beir_nfcorpus.py writes."""
    from lab.beir import beir_chunks, load_beir, run_beir
    from rag.indexing.chunk import strategy

    embedder = rag.load_embedder()
    base = load_settings(config=out / "none.toml", env={})
    data = load_beir(NFCORPUS, split)
    ch = beir_chunks(data, strategy("E", base.tuning.chunk_budget))
    lex = LexicalIndex.build(ch.texts, ["en"] * len(ch.texts), k1=base.tuning.bm25_k1, b=base.tuning.bm25_b)
    rules = [("rrf k=60 1:1 (before)", dict(fusion="rrf", dense_weight=1.0, bm25_weight=1.0, feedback=0)),
             ("zscore 0.6, no feedback", dict(feedback=0))]
    if split == "test":  # the held-out split: only the app before and after, compared per query
        rules.append(("shipped defaults (after)", {}))
    elif rule_set == "feedback":  # feedback passages, and its other tuned values (Tuning.feedback_*) one at a time
        rules += [(f"feedback {k}", dict(feedback=k)) for k in (3, 5, 10)]
        rules += [(f"feedback 5, {name} {v}", dict(feedback=5, **{field: v})) for name, field, vs in (
            ("words", "feedback_terms", (0, 5, 20)), ("own share", "feedback_own", (0.3, 0.7, 1.0)),
            ("dense", "feedback_dense", (0.0, 0.5, 2.0))) for v in vs]
    else:
        rules += [(f"rrf k={k} 1:1", dict(fusion="rrf", rrf_k=k, dense_weight=1.0, bm25_weight=1.0, feedback=0))
                  for k in (20, 100)]
        rules += [(f"{m} dense={a}", dict(fusion=m, dense_weight=a, bm25_weight=round(1 - a, 2), feedback=0))
                  for m in ("zscore", "minmax") for a in (0.4, 0.5, 0.6, 0.7)]
    rows, per_query = [], {}
    for name, kw in rules:
        run = run_beir(NFCORPUS, embedder, base.replace(**kw), split=split, cache=out, data=data, lexical=lex)
        m, t = run.metrics["hybrid"], run.tests
        print(f"  {name:<24} nDCG@10 {m['ndcg@10']:.4f}  R@100 {m['recall@100']:.4f}  vs dense "
              f"{SignTest(**t['hybrid vs dense'])}  vs BM25 {SignTest(**t['hybrid vs bm25'])}", flush=True)
        rows.append({"rule": name, "settings": kw, "metrics": run.metrics, "tests": t})
        per_query[name] = run.per_query["hybrid"]["ndcg@10"]
    if split == "test":
        after, before = per_query["shipped defaults (after)"], per_query["rrf k=60 1:1 (before)"]
        print(f"  after vs before, per-query nDCG@10: {sign_test(after, before)}")
        print(f"  after vs the same without feedback: {sign_test(after, per_query['zscore 0.6, no feedback'])}")
    suffix = "-feedback" if rule_set == "feedback" and split != "test" else ""
    (out / f"fusion-nfcorpus-{split}{suffix}.json").write_text(json.dumps(rows, indent=1))


def _cell(r: dict) -> str:
    return f"{r['rate']:.3f} [{r['low']:.2f}, {r['high']:.2f}] ({r['k']}/{r['n']})"


def report(out: Path, md: Path | None = None) -> None:
    """The app's search as shipped (`Engine.search`, default settings) on the held-out SQuAD half and the
    sample set, against each side alone and the ranking before this change (stored by `collect`)."""
    records = json.loads((out / "fusion-records.json").read_text())
    embedder = rag.load_embedder()
    after: dict[int, int | None] = {}
    weights_seen: dict[str, set] = {}
    for name, (folder, _) in folders().items():
        settings = load_settings(config=out / "none.toml", env={}, folder=folder, index_dir=out / f"fusion-idx-{name}")
        engine = rag.Engine(settings, embedder=embedder)
        engine.sync()
        snap = engine.snapshot
        for i, r in enumerate(records):
            if r["folder"] != name or r["split"] == "dev":
                continue
            result = engine.search(r["question"])
            holders = set(r["holders"])
            after[i] = next((c.fused_rank for c in result.candidates if snap.pos[c.chunk_id] in holders), None)
            weights_seen.setdefault(r["group"], set()).add(json.dumps(result.weights, sort_keys=True))
        fusion = settings.tuning.fusion
        engine.close()
    lines = [f"Held-out questions (SQuAD: the `test` half by id hash; sample set: all of it), through `Engine.search` "
             f"with the shipped defaults (fusion {fusion}). Rates with Wilson 95% intervals; sign tests are paired "
             f"per question (+wins/-losses of the new hybrid, ties, two-sided p).", ""]
    order = ["squad-en", "squad-pt", "squad-en-on-pt", "squad-pt-on-en", "sample-en", "sample-pt"]
    for g in order:
        idx = [i for i in after if records[i]["group"] == g]
        if not idx:
            continue
        rs = [records[i] for i in idx]
        cols = {
            "dense": [side_rank([j for j, _ in r["dense"]], set(r["holders"])) for r in rs],
            "BM25": [side_rank([j for j, _ in r["bm25"]["1.2/0.75"]], set(r["holders"])) for r in rs],
            "hybrid before": [r["before"] for r in rs],
            "hybrid after": [after[i] for i in idx],
        }
        w = ", ".join(sorted(weights_seen[g]))
        lines += [f"**{g}** ({len(rs)} questions; weights used: {w})", "",
                  "| | R@1 | R@4 | R@20 |", "|---|---|---|---|"]
        for name, ranks in cols.items():
            lines.append(f"| {name} | " + " | ".join(_cell(rate(sum(hits(ranks, k)), len(ranks))) for k in KS) + " |")
        new = cols["hybrid after"]
        for k in KS:
            better = "BM25" if sum(hits(cols["BM25"], k)) >= sum(hits(cols["dense"], k)) else "dense"
            t_side = sign_test(hits(new, k), hits(cols[better], k))
            t_before = sign_test(hits(new, k), hits(cols["hybrid before"], k))
            lines.append(f"- @{k}: after vs {better} (the better side) {t_side}; after vs before {t_before}")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if md:
        Path(md).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("step", choices=("collect", "choose", "lexical", "nfcorpus", "report"))
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    p.add_argument("--md", help="report: also write the Markdown tables here")
    p.add_argument("--split", default="dev", help="nfcorpus: dev (the rules) or test (before vs after)")
    p.add_argument("--rules", default="fusion", choices=("fusion", "feedback"), help="nfcorpus dev: which grid")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.step == "report":
        report(out, Path(a.md) if a.md else None)
    elif a.step == "nfcorpus":
        nfcorpus(out, a.split, a.rules)
    else:
        {"collect": collect, "choose": choose, "lexical": lexical, "nfcorpus": nfcorpus}[a.step](out)

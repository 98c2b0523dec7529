"""BM25 alone for Portuguese and Spanish: the app's analyzer against lemmas (simplemma), and BM25's k1 and b.

BM25 carries these languages (MiniLM reads them poorly, issues 33 and 35), so a better analysis or better
parameters would lift the hybrid. This indexes the SQuAD folders (`../shared/eval/squad2/{pt,es}`) and the
held-out folder (`lab.heldout`, six other articles) with the app's chunker and language detection, BM25 only
(no model: a minute per language), and ranks every answerable question's needle:

- analyzers: `stem` (the app's: stopwords, accents folded, Snowball stems), `lemma+stem` (simplemma's lemma
  of each word, then the same), `lemma` (simplemma's lemma folded, no stemmer);
- parameters: k1 in 0.9, 1.2 (the app's), 1.5, 2.0 and b in 0.5, 0.75 (the app's), 0.9, with the app's analyzer.

Everything is chosen on the SQuAD folders' questions outside the `test` articles (`lab.judge_data.SPLITS`)
and reported on the `test` articles and the held-out folder, as R@1 / R@4 hits.

    .venv/bin/python bench/bm25_languages.py [--langs pt,es] [--out bench/out/bm25-languages]

simplemma is not a dependency of the app (it was measured and not used): install it beside the app to rerun
the lemma rows (`.venv/bin/pip install simplemma==2.0.0`); without it they are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from judge_eval import SQUAD, article_of_ids  # noqa: E402
from lab import heldout  # noqa: E402
from lab.judge_data import split_of  # noqa: E402
from rag import load_settings  # noqa: E402
from rag.indexing.chunk import chunk_document, strategy  # noqa: E402
from rag.reading.extract import extract_bytes  # noqa: E402
from rag.text.lexical import TOKEN, WORD_PART, analyze, detect_language, fold, stop_words, term_tokens  # noqa: E402
from rag.indexing.bm25 import LexicalIndex
from rag.deciding.needles import contains  # noqa: E402

GRID = [(k1, b) for k1 in (0.9, 1.2, 1.5, 2.0) for b in (0.5, 0.75, 0.9)]


def chunks_of(folder: Path) -> tuple[list, list[str]]:
    """The folder's chunks as the app makes them, and each one's language (its document's)."""
    s = load_settings(env={}, folder=folder)
    how = strategy(s.tuning.chunk_strategy, s.tuning.chunk_budget)
    chunks, langs = [], []
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix in (".md", ".txt"):
            doc = extract_bytes(p.read_bytes(), p.name, max_chars=s.tuning.max_chars, max_pages=s.tuning.max_pages)
            cs = chunk_document(doc, p.name, how)
            chunks += cs
            langs += [detect_language(doc.text)] * len(cs)
    return chunks, langs


def lemma_analyzer(stemmed: bool):
    import simplemma

    def analyze_lemmas(text: str, lang: str) -> list[str]:
        stop, out = stop_words(lang), []
        for m in TOKEN.finditer(text.lower()):
            parts = WORD_PART.findall(m.group())
            if len(parts) > 1:
                out.append(fold(m.group()))
            for p in parts:
                if fold(p) not in stop:
                    lemma = simplemma.lemmatize(p, lang=lang)
                    out.extend(term_tokens(lemma, lang) if stemmed else [fold(lemma)])
        return out
    return analyze_lemmas


def hits(chunks, langs, questions, lang, analyzer=analyze, k1=1.2, b=0.75) -> dict[str, int | None]:
    """Each question's needle rank in BM25's first four (None: not there)."""
    index = LexicalIndex.build(None, langs, k1=k1, b=b, tokens=[analyzer(c.text, l) for c, l in zip(chunks, langs)])
    out = {}
    for q in questions:
        scores = index.weighted_scores(dict.fromkeys(analyzer(q["question"], lang), 1.0))
        top = np.argsort(-scores, kind="stable")[:4]
        out[q["id"]] = next((r for r, i in enumerate(top, 1) if scores[i] > 0 and contains(chunks[i].content, q["needle"])),
                            None)
    return out


def tally(ranks: dict, questions: list[dict], part: str) -> str:
    r = [ranks[q["id"]] for q in questions if q["part"] == part]
    return f"{sum(x == 1 for x in r)} / {sum(x is not None for x in r)} of {len(r)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default="pt,es")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "bm25-languages")
    args = ap.parse_args(argv)
    ids = article_of_ids()
    analyzers = {"stem": analyze}
    try:
        analyzers |= {"lemma+stem": lemma_analyzer(True), "lemma": lemma_analyzer(False)}
    except ImportError:
        print("simplemma is not installed: the lemma rows are left out", file=sys.stderr)
    for lang in args.langs.split(","):
        held = args.out / f"heldout-{lang}"
        if not (held / "questions.jsonl").is_file():
            heldout.build(lang, held)
        folders = []
        for folder, part_of in ((SQUAD / lang, lambda q: "choose" if split_of(ids[q["id"]]) != "test" else "test"),
                                (held, lambda q: "heldout")):
            qs = [json.loads(x) for x in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x]
            qs = [dict(q, part=part_of(q)) for q in qs if q["kind"] == "answerable" and q.get("needle")]
            folders.append((chunks_of(folder / "docs"), qs))
        print(f"\n{lang}: R@1 / R@4 hits | chosen on (SQuAD, not test) | SQuAD test | held-out folder")
        rows = [(name, {}, fn) for name, fn in analyzers.items()] + [(f"k1 {k1}, b {b}", {"k1": k1, "b": b}, analyze)
                                                                    for k1, b in GRID if (k1, b) != (1.2, 0.75)]
        for name, params, fn in rows:
            ranks, qs_all = {}, []
            for (chunks, langs), qs in folders:
                ranks |= hits(chunks, langs, qs, lang, fn, **params)
                qs_all += qs
            print(f"| {name} | {tally(ranks, qs_all, 'choose')} | {tally(ranks, qs_all, 'test')} | "
                  f"{tally(ranks, qs_all, 'heldout')} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

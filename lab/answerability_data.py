"""Answerability pairs from SQuAD 2.0's 442 training articles (`squad2-train-bt-en`, with the answerability
recovered: see ../shared/train/SOURCE.md): which chunk answers a question, and which only looks as if it did.

What it does: writes each article as the folder would hold it and cuts it with the app's chunker
(`lab.judge_data.article_chunks`, as every other judge pair is made), then, for every paragraph whose boundary
between answerable and unanswerable questions is known (`n_answerable` not null):

- an answerable question with the chunk of its paragraph it is about (label 1, "answer"; the chunk holding one
  of the paragraph's `marked` phrases and most of the question's words, as `lab.relevance_data` picks it; a tie
  skips the question);
- an unanswerable question with the chunk of its own paragraph sharing most of its words (label 0, "near-miss":
  written about that paragraph, the same subject and words, no answer);
- with `p_same`, an answerable question with the chunk of another paragraph the app's BM25 ranks first for it
  (label 0, "same-article");
- with `p_far`, an answerable question with a chunk of another article (label 0, "far").

Split by article, never by question: documents 0-9 are held out (`lab.relevance_data.HELD_OUT`, the held-out
folder `lab.heldout --source first10`); of the rest, every `VALID_EVERY`-th document is the validation split the
head's options are chosen on, the others train it. Nothing of SQuAD's dev set is read here.

What it does not do: translate. The text is English (back-translated from Finnish); the other languages are
reached through a multilingual model's embedding space, and measured on the dev-even articles in Portuguese
and Spanish (`lab.judge_data.pairs`).
"""

from __future__ import annotations

import random

from lab.judge_data import Pair, _words, article_chunks
from lab.relevance_data import HELD_OUT, _positive, load
from rag.indexing.bm25 import LexicalIndex

VALID_EVERY = 10  # documents 10, 20, ... 440: the validation split


def split_of_doc(doc: int) -> str:
    """'heldout' (documents 0-9), 'valid' or 'train'.

    >>> split_of_doc(3), split_of_doc(20), split_of_doc(21)
    ('heldout', 'valid', 'train')
    """
    return "heldout" if doc in HELD_OUT else "valid" if doc % VALID_EVERY == 0 else "train"


def article_pairs(article: dict, others: list, rng: random.Random, p_same: float = 0.5,
                  p_far: float = 0.1) -> list[Pair]:
    """One article's pairs (see the module's doc); `others`: chunks of other articles for the far pairs."""
    chunks, spans = article_chunks(article)
    if len(chunks) < 3:
        return []
    index = LexicalIndex.build([c.content for c in chunks], ["en"] * len(chunks))
    title = article["title_en"]
    out: list[Pair] = []
    for p, (ps, pe) in zip(article["paragraphs"], spans):
        n = p.get("n_answerable")
        if ps < 0 or n is None:
            continue
        mine = tuple(i for i, c in enumerate(chunks) if c.start < pe and c.end > ps)
        if not mine:
            continue
        for k, q in enumerate(p["qas"]):
            text = q["question"].strip()
            if not text:
                continue
            if k >= n:  # SQuAD 2.0 lists a paragraph's unanswerable questions after its answerable ones
                qw = _words(text)
                near = max(mine, key=lambda i: (len(qw & _words(chunks[i].content)), -i))
                out.append(Pair(text, chunks[near].text, 0.0, "en", "near-miss", title, q["id"]))
                continue
            hit = _positive(text, chunks, mine, p.get("marked") or [])
            if hit is None:
                continue
            out.append(Pair(text, chunks[hit].text, 1.0, "en", "answer", title, q["id"]))
            if rng.random() < p_same:
                ranked = [i for i, _ in index.top(text, len(mine) + 2) if i not in mine]
                if ranked:
                    out.append(Pair(text, chunks[ranked[0]].text, 0.0, "en", "same-article", title, q["id"]))
            if others and rng.random() < p_far:
                out.append(Pair(text, rng.choice(others).text, 0.0, "en", "far", title, q["id"]))
    return out


def answerability_pairs(split: str = "train", seed: int = 13, articles: int = 0) -> list[Pair]:
    """Every pair of one split ('train' or 'valid') in the file's article order, shuffled with `seed`;
    `articles`: only the first N of the split's articles (0: all)."""
    # The header the app writes names the file's title: SQuAD's, where the source gives one.
    arts = [dict(a, title_en=(a.get("title") or "").replace("_", " ") or a["title_en"])
            for a in load() if split_of_doc(a["doc"]) == split]
    if articles:
        arts = arts[:articles]
    rng = random.Random(seed)
    pool = [c for a in rng.sample(arts, min(30, len(arts))) for c in article_chunks(a)[0][:6]]
    out: list[Pair] = []
    for a in arts:
        r = random.Random(seed * 100_003 + a["doc"])
        out += article_pairs(a, [c for c in pool if not c.text.startswith(f"[{a['title_en']}")], r)
    rng.shuffle(out)
    return out


if __name__ == "__main__":
    import collections
    import sys
    ps = answerability_pairs(sys.argv[1] if len(sys.argv) > 1 else "valid")
    print(len(ps), collections.Counter(p.kind for p in ps))
    for p in ps[:6]:
        print(p.label, p.kind, "|", p.question, "|", p.passage[:140].replace("\n", " "))

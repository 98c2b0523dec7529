"""Relevance pairs for the judge from SQuAD 2.0's 442 training articles (`squad2-train-bt-en`): which chunk a
question is about, at scale.

What it does: reads `../shared/train/squad2-train-bt-en.json.gz` (SQuAD's layout, English back-translated from
Finnish, answerability unlabelled; see that folder's SOURCE.md), writes each article as the folder would hold it
(a `#` title, then its paragraphs), cuts it with the app's own chunker (as `lab.judge_data` does for the labelled
articles), and per article, with a seed of its own, makes at most `per_article` questions' pairs:

- the question and the chunk of its own paragraph it is about (label 1, kind "answer");
- the question and the chunk of another paragraph of the same article that the app's lexical search ranks
  first for it (label 0, "same-article": the hard negative), and with `p_second` the one it ranks second;
- with `p_far`, the question and a chunk of another article (label 0, "far").

Which questions count as answerable. The file does not say; SQuAD 2.0 lists a paragraph's answerable questions
before its unanswerable ones. Checked on the ten articles whose labels we hold (`squad2-train-first10-en`, 694
paragraphs): the first question is answerable in 694 of 694 paragraphs, the second in 681 of 681, the third in
642 of 643; on the dev articles (where SQuAD put unanswerable questions in every paragraph) the first two are
answerable in 1.000 and 0.984. So only a paragraph's first two questions are used (`FIRST_ANSWERABLE`); nothing
is inferred about the rest, and no near miss is made from this file (the labelled ones come from
`lab.judge_data`).

Which chunk is the question's. A paragraph (716 characters on average) is usually cut into two chunks, and the
file does not say where the answer is. The chunk of the paragraph that shares most of the question's words
and holds one of the source's `marked` phrases (answers and plausible answers) is the positive; when two of
the paragraph's chunks tie, the question is skipped (ambiguous). The paragraph's other chunks are never
negatives.

Why the lexical side alone mines the hard negatives: embedding the articles' 36,000 chunks takes about 35
minutes of these two cores (17 chunks a second measured beside other work); BM25 over an article takes
milliseconds. The dense side's own near passages are therefore not mined; the dev articles' near misses
(`lab.judge_data`) stay in the mix for what relevance cannot teach.

What it does not do: touch documents 0-9 (`HELD_OUT`: the ten articles with labels, kept as a held-out folder
with near misses, `lab.heldout --source first10`), any SQuAD dev article, or the calibration's questions.

>>> title_of("Kanye Omari West (/ˈkɑːnjeɪ/; born June 8, 1977) is an American hip hop artist.")
'Kanye Omari West'
>>> title_of("In 1059, the right to elect a pope was reserved to the cardinals.")
'In 1059'
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

from lab.judge_data import TRAIN_DIR, Pair, _words, article_chunks
from rag.indexing.bm25 import LexicalIndex

SOURCE = "squad2-train-bt-en.json.gz"
HELD_OUT = range(0, 10)  # documents 0-9: the ten articles with labels (squad2-train-first10-en)
FIRST_ANSWERABLE = 2  # a paragraph's first N questions are answerable (checked on the ten; see above)


def title_of(lead: str) -> str:
    """A title for an article whose file gives none (`title` is null): the subject of its first sentence, the
    words before a bracket, a comma or its verb, at most six. Training data only: the header the judge reads
    at run time names the file's title, so a train chunk should carry one too."""
    head = re.split(r"\s[(/\[]|,|;|\s(?:is|was|are|were|has|had|refers|consists)\s", lead.strip(), maxsplit=1)[0]
    return " ".join(head.split()[:6]).strip(" .:") or "Article"


def load(train_dir: Path = TRAIN_DIR) -> list[dict]:
    """Every article of the back-translated file, with `doc` (0-441) and a `title_en` from `title_of`."""
    data = json.load(gzip.open(train_dir / SOURCE))["data"]
    return [dict(a, title_en=title_of(a["paragraphs"][0]["context"])) for a in data]


def _positive(question: str, chunks: list, mine: tuple[int, ...], marked: list[str]) -> int | None:
    """The chunk of the paragraph the question is about (see the module's doc), or None when ambiguous."""
    qw = _words(question)

    def key(i: int) -> tuple[int, int]:
        low = chunks[i].content.lower()
        return (any(m.lower() in low for m in marked if len(m) > 1), len(qw & _words(chunks[i].content)))

    ranked = sorted(mine, key=key, reverse=True)
    if not ranked or (len(ranked) > 1 and key(ranked[0]) == key(ranked[1])) or not key(ranked[0])[0]:
        return None
    return ranked[0]


def article_pairs(article: dict, others: list, per_article: int = 12, p_second: float = 0.5,
                  p_far: float = 0.25, seed: int = 13) -> list[Pair]:
    """One article's pairs (see the module's doc); `others`: chunks of other articles for the far pairs."""
    rng = random.Random(seed * 100_003 + article["doc"])
    chunks, spans = article_chunks(article)
    if len(chunks) < 3:
        return []
    index = LexicalIndex.build([c.content for c in chunks], ["en"] * len(chunks))
    paragraphs = [(p, s) for p, s in zip(article["paragraphs"], spans) if s[0] >= 0 and p["qas"]]
    rng.shuffle(paragraphs)
    out: list[Pair] = []
    used = 0
    for p, (ps, pe) in paragraphs:
        if used >= per_article:
            break
        q = rng.choice(p["qas"][:FIRST_ANSWERABLE])
        mine = tuple(i for i, c in enumerate(chunks) if c.start < pe and c.end > ps)
        hit = _positive(q["question"], chunks, mine, p.get("marked") or [])
        if hit is None:
            continue
        ranked = [i for i, _ in index.top(q["question"], len(mine) + 3) if i not in mine]
        if not ranked:
            continue
        used += 1
        title = article["title_en"]
        out.append(Pair(q["question"], chunks[hit].text, 1.0, "en", "answer", title, q["id"]))
        out.append(Pair(q["question"], chunks[ranked[0]].text, 0.0, "en", "same-article", title, q["id"]))
        if len(ranked) > 1 and rng.random() < p_second:
            out.append(Pair(q["question"], chunks[ranked[1]].text, 0.0, "en", "same-article", title, q["id"]))
        if others and rng.random() < p_far:
            out.append(Pair(q["question"], rng.choice(others).text, 0.0, "en", "far", title, q["id"]))
    return out


def relevance_pairs(articles: int = 0, per_article: int = 12, seed: int = 13, train_dir: Path = TRAIN_DIR,
                    cache: Path | None = None) -> list[Pair]:
    """The pairs of the first `articles` training documents past `HELD_OUT` (0: all 432), in the file's order,
    shuffled with `seed`. With `cache`, read from / written to that JSON-lines file (building them takes
    minutes)."""
    if cache is not None and cache.is_file():
        return [Pair(**json.loads(line)) for line in gzip.open(cache, "rt", encoding="utf-8")]
    arts = [a for a in load(train_dir) if a["doc"] not in HELD_OUT]
    if articles:
        arts = arts[:articles]
    rng = random.Random(seed)
    # Far chunks: a fixed sample of other articles' first paragraphs, cut as the app cuts them.
    pool = [c for a in rng.sample(arts, min(40, len(arts))) for c in article_chunks(a)[0]]
    out: list[Pair] = []
    for a in arts:
        out += article_pairs(a, [c for c in pool if not c.text.startswith(f"[{a['title_en']}")], per_article,
                             seed=seed)
    rng.shuffle(out)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(cache, "wt", encoding="utf-8") as f:
            for pr in out:
                f.write(json.dumps(pr.__dict__, ensure_ascii=False) + "\n")
    return out


if __name__ == "__main__":
    import collections
    import sys
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    ps = relevance_pairs(n)
    print(len(ps), collections.Counter(p.kind for p in ps))
    for p in ps[:6]:
        print(p.label, p.kind, "|", p.question, "|", p.passage[:160].replace("\n", " "))

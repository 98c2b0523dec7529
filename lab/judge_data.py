"""The judge's data: (question, passage, label) pairs from SQuAD 2.0 articles, split by article.

What it does: reads `../shared/train/squad2-dev-even-{en,pt,es}.json.gz` (SQuAD's JSON layout), writes
each article as the folder would hold it (a `#` title, then its paragraphs), cuts it with the app's own
chunker (`rag.indexing.chunk.chunk_document`, strategy E: the passages the judge will read at run time, header
included), and pairs questions with chunks:

- an answerable question with the chunk holding its answer (label 1);
- the same question with the chunk of its article that shares most of its words but not the answer
  (label 0: the same subject, not the answer);
- the same question with a chunk of another article (label 0: off the folder);
- for half of them (`p_near`), an unanswerable question (SQuAD 2.0's `is_impossible`, written to look answerable from its paragraph)
  with the chunk of its paragraph that shares most of its words (label 0: the near miss).

What it does not do: use any question the calibration asks (rag/deciding/questions/*.tsv are never read here), or
any article outside `SPLITS[split]`: the judge trains on `train`, its operating point is chosen on `dev`,
and the project reports on `test` (bench/judge_eval.py, bench/refusals.py --split article).

>>> split_of("Normans"), split_of("Pharmacy"), split_of("Black_Death"), split_of("Warsaw")
('train', 'dev', 'test', 'test')
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from rag.indexing.chunk import chunk_document
from rag.reading.extract import extract_bytes

ROOT = Path(__file__).resolve().parent.parent
TRAIN_DIR = ROOT.parent / "shared" / "train"
LANGS = ("en", "pt", "es")

# By article, never by question. The eval folder (../shared/eval/squad2) holds the first twelve; the last
# six are its off-folder topics. Test: the folder's articles at odd positions and half the other topics.
SPLITS = {
    "train": ("Normans", "Victoria_(Australia)", "1973_oil_crisis", "Fresno,_California",
              "Yuan_dynasty", "Intergovernmental_Panel_on_Climate_Change"),
    "dev": ("Pharmacy", "Harvard_University", "Rhine"),
    "test": ("Southern_California", "Steam_engine", "Amazon_rainforest", "Black_Death", "Construction",
             "Economic_inequality", "Islamism", "Warsaw", "Force"),
}


def split_of(article: str) -> str:
    """The split an article (SQuAD's English title) belongs to."""
    for name, articles in SPLITS.items():
        if article in articles:
            return name
    raise ValueError(f"unknown article {article!r}; known: {sorted(a for v in SPLITS.values() for a in v)}")


@dataclass(frozen=True)
class Pair:
    question: str
    passage: str
    label: float
    lang: str
    kind: str  # "answer", "same-article", "far", "near-miss", "removed"
    article: str
    qid: str
    answer_at: int = -1  # an answer pair: where its answer starts in `passage` (characters), else -1
    answer_len: int = 0


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    lang: str
    article: str
    answerable: bool
    chunk: int | None  # index of the chunk holding the answer (answerable), or of its paragraph's best
    paragraph_chunks: tuple[int, ...]
    answer: str = ""  # answerable: the answer's text and where it starts in the folder's text
    answer_pos: int = -1


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 2}


def load_articles(lang: str, train_dir: Path = TRAIN_DIR) -> list[dict]:
    """SQuAD's articles in one language, each with its English title (the Spanish file translates titles;
    the order is the same in every language)."""
    data = json.load(gzip.open(train_dir / f"squad2-dev-even-{lang}.json.gz"))["data"]
    titles = [a["title"] for a in json.load(gzip.open(train_dir / "squad2-dev-even-en.json.gz"))["data"]]
    return [dict(a, title_en=t) for a, t in zip(data, titles)]


def article_chunks(article: dict) -> tuple[list, list[tuple[int, int]]]:
    """The article as the folder holds it, chunked by the app's chunker, and each paragraph's span in it."""
    title = article["title_en"].replace("_", " ")
    md = f"# {title}\n\n" + "\n\n".join(p["context"].strip() for p in article["paragraphs"]) + "\n"
    doc = extract_bytes(md.encode("utf-8"), "article.md")
    chunks = chunk_document(doc, "a")
    spans, at = [], 0
    for p in article["paragraphs"]:
        head = p["context"].strip()[:40]
        s = doc.text.find(head, at)
        spans.append((s, s + len(p["context"].strip())) if s >= 0 else (-1, -1))
        at = max(at, s)
    return chunks, spans


def _answer_at(p: dict, q: dict) -> int | None:
    found = _answer(p, q)
    return found[0] if found else None


def _answer(p: dict, q: dict) -> tuple[int, str] | None:
    """Where the question's first locatable answer starts in its paragraph, and its text."""
    ctx = p["context"]
    for a in q.get("answers") or []:
        if isinstance(a, dict) and a.get("answer_start", -1) >= 0:
            return int(a["answer_start"]), a.get("text", "")
        text = a if isinstance(a, str) else a.get("text", "")
        if text and (i := ctx.find(text)) >= 0:
            return i, text
    return None


def questions_and_chunks(article: dict, lang: str) -> tuple[list[Question], list]:
    chunks, spans = article_chunks(article)
    out = []
    for p, (ps, pe) in zip(article["paragraphs"], spans):
        if ps < 0:
            continue
        lead = len(p["context"]) - len(p["context"].lstrip())
        mine = tuple(i for i, c in enumerate(chunks) if c.start < pe and c.end > ps)
        for q in p["qas"]:
            if not q["is_impossible"]:
                found = _answer(p, q)
                if found is None:
                    continue
                at, answer = found
                pos = ps + at - lead
                hold = [i for i in mine if chunks[i].start <= pos < chunks[i].end]
                if not hold:
                    continue
                out.append(Question(q["id"], q["question"], lang, article["title_en"], True, hold[0], mine,
                                    answer.strip(), pos))
            else:
                qw = _words(q["question"])
                best = max(mine, key=lambda i: len(qw & _words(chunks[i].content)))
                out.append(Question(q["id"], q["question"], lang, article["title_en"], False, best, mine))
    return out, chunks


def answer_in(chunk, q: Question) -> int:
    """Where q's answer starts in `chunk.text` (header included), or -1 if it is not found there."""
    if not q.answer:
        return -1
    guess = chunk.header_len + q.answer_pos - chunk.start
    if chunk.text[guess:guess + len(q.answer)] == q.answer:
        return guess
    found = [m.start() for m in re.finditer(re.escape(q.answer), chunk.text)]
    return min(found, key=lambda i: abs(i - guess)) if found else -1


def without_answer(text: str, at: int, answer: str) -> str | None:
    r"""`text` without the sentence holding the answer at `at`: the same passage, its subject intact, that no
    longer says what was asked (a near miss made from an answer). None when the answer's words remain
    elsewhere in it or too little is left.

    >>> without_answer("[T]\nRollo was a Viking. He died in 930. His son was William.", 35, "930")
    '[T]\nRollo was a Viking. His son was William.'
    """
    ends = [m.end() for m in re.finditer(r"[.!?]\s+|\n", text)]
    start = max((e for e in ends if e <= at), default=0)
    stop = min((e for e in ends if e > at + len(answer)), default=len(text))
    cut = text[:start] + text[stop:]
    if answer.lower() in cut.lower() or len(cut) < 0.4 * len(text):
        return None
    return cut


# A name (capitalised words, "of"/"de" between them) or a number, as a question writes it; not its first word.
_NAME = re.compile(r"(?<=\s)[A-ZÀ-Ý][\w'’-]*(?:\s+(?:(?:of|the|de|da|do|del|la)\s+)?[A-ZÀ-Ý][\w'’-]*)*|\b\d[\d.,]*\d\b|\b\d\b")


def names_in(text: str) -> list[str]:
    """The names and numbers of `text` (not its first word): what a swap replaces.

    >>> names_in("When did Rollo of Normandy die, in 930 or 931?")
    ['Rollo of Normandy', '930', '931']
    """
    return [m.group() for m in _NAME.finditer(text)]


def swapped(question: str, passage: str, pool: list[str], rng: random.Random) -> str | None:
    """The question with one name or number the passage holds replaced by one of `pool` (the article's) the
    passage never mentions: the same subject, asked of something this passage does not say (SQuAD 2.0's
    "entity swap", its most common kind of unanswerable question). None when nothing can be swapped.

    >>> swapped("When did Rollo die?", "Rollo died in 930. His son William ruled.", ["Rollo", "William", "Hasting"],
    ...         random.Random(1))
    'When did Hasting die?'
    >>> swapped("In what year did Rollo die?", "Rollo died in 930.", ["911", "930"], random.Random(1))  # no name to swap for
    """
    low = passage.lower()
    mine = [n for n in names_in(question) if n.lower() in low]
    if not mine:
        return None
    old = rng.choice(mine)
    is_number = old[0].isdigit()
    options = sorted({n for n in pool if n[0].isdigit() == is_number and n.lower() not in low
                      and n.lower() not in question.lower()})
    if not options:
        return None
    return question.replace(old, rng.choice(options), 1)


def articles_of(split: str, first: int = 0) -> list[str]:
    """The articles of a split of SPLITS, or of several joined by "+", in order; `first`: only the first N.

    >>> articles_of("train+dev", 2), len(articles_of("train+dev"))
    (['Normans', 'Victoria_(Australia)'], 9)
    """
    names = [a for part in split.split("+") for a in SPLITS[part]]
    return names[:first] if first else names


def pairs(split: str, langs=LANGS, p_far: float = 1.0, p_near: float = 0.5, seed: int = 13,
          train_dir: Path = TRAIN_DIR, p_removed: float = 0.0, articles: int = 0,
          p_swapped: float = 0.0) -> list[Pair]:
    """Every pair of one split (`split`: a name of SPLITS, or several joined by "+"), shuffled with a fixed
    seed; `articles`: only the first N of its articles (0: all; a learning curve). `p_far`: the share of answerable questions also
    paired with another article's chunk; `p_near`: the share of unanswerable questions used; `p_removed`:
    the share of answerable questions also paired with their chunk less the answer's sentence (`without_answer`);
    `p_swapped`: the share also asked with a name or number swapped (`swapped`), against their chunk. With every near
    miss (as many as the answers, often on the very chunk an answer uses) and few far chunks, the loss stayed
    at the constant predictor's for 325 steps: the model gets the easy contrast first this way."""
    rng = random.Random(seed)
    wanted = set(articles_of(split, articles))
    out: list[Pair] = []
    for lang in langs:
        arts = [a for a in load_articles(lang, train_dir) if a["title_en"] in wanted]
        built = [questions_and_chunks(a, lang) for a in arts]
        for ai, (qs, chunks) in enumerate(built):
            title = arts[ai]["title_en"]
            pool = sorted({n for c in chunks for n in names_in(c.content)}) if p_swapped else []
            others = [c for j, (_, cs) in enumerate(built) if j != ai for c in cs]
            for q in qs:
                if q.answerable:
                    c = chunks[q.chunk]
                    at = answer_in(c, q)
                    out.append(Pair(q.text, c.text, 1.0, lang, "answer", title, q.qid, at,
                                    len(q.answer) if at >= 0 else 0))
                    if at >= 0 and rng.random() < p_removed and (cut := without_answer(c.text, at, q.answer)):
                        out.append(Pair(q.text, cut, 0.0, lang, "removed", title, q.qid))
                    if p_swapped and rng.random() < p_swapped and (other := swapped(q.text, c.content, pool, rng)):
                        out.append(Pair(other, c.text, 0.0, lang, "swapped", title, q.qid))
                    qw = _words(q.text)
                    rest = [i for i in range(len(chunks)) if i != q.chunk]
                    if rest:
                        hard = max(rest, key=lambda i: (len(qw & _words(chunks[i].content)), -i))
                        out.append(Pair(q.text, chunks[hard].text, 0.0, lang, "same-article", title, q.qid))
                    if others and rng.random() < p_far:
                        out.append(Pair(q.text, rng.choice(others).text, 0.0, lang, "far", title, q.qid))
                elif rng.random() < p_near:
                    out.append(Pair(q.text, chunks[q.chunk].text, 0.0, lang, "near-miss", title, q.qid))
    rng.shuffle(out)
    return out


if __name__ == "__main__":
    import collections
    for split in SPLITS:
        ps = pairs(split)
        print(split, len(ps), collections.Counter((p.lang, p.kind) for p in ps))

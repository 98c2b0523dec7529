"""A held-out folder of the SQuAD kind: the six other-topic articles of `../shared/train/` as a folder, with
questions in the needle-set format, for a check on a folder no word rule or weight was chosen on.

`../shared/eval/squad2/<lang>/` is a folder of twelve articles whose off-folder questions come from six
others (Yuan dynasty, IPCC, Rhine, Islamism, Warsaw, Force). This turns that round: those six are the
folder, one Markdown file each (a `#` title, then its paragraphs); its answerable questions come with the
sentence that holds SQuAD's answer as the needle; its near misses are SQuAD 2.0's unanswerable questions of
the same articles; its off-folder questions are the answerable questions of the twelve. Seeded sampling,
at most 200 / 100 / 100 per kind. The same articles and question ids in every language.

Not held out from the judge: Yuan dynasty and IPCC are among its training articles and Rhine a dev one
(`lab.judge_data.SPLITS`), as are six of the twelve the off-folder questions come from; `bench/judge_eval.py
--heldout` reports the questions of test articles apart (`heldout`) from the others (`heldout-seen`).

What it does not do: search or measure (`bench/judge_eval.py --heldout` does, at defaults), or touch the
eval folder.

    .venv/bin/python -m lab.heldout --lang es --out bench/out/heldout-es

`build_first10` is a second held-out folder, held out from everything: the ten SQuAD 2.0 **training** articles
whose labels are kept (`squad2-train-first10-en`: Beyoncé, Frédéric Chopin, …; original English), which no judge
trains on (`lab.relevance_data.HELD_OUT`) and no rule or setting was chosen on. Its near misses are their
unanswerable questions (348 in all); its off-folder questions, the answerable questions of the dev articles'
test split (`lab.judge_data.SPLITS`). English only.

    .venv/bin/python -m lab.heldout --source first10 --out bench/out/heldout10-en
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from lab.judge_data import TRAIN_DIR, _answer_at, load_articles, split_of
from rag.indexing.chunk import sentences

ARTICLES = ("Yuan_dynasty", "Intergovernmental_Panel_on_Climate_Change", "Rhine", "Islamism", "Warsaw", "Force")
LIMITS = {"answerable": 200, "near-miss": 100, "off-folder": 100}
SEED = 7


def _file_name(title: str) -> str:
    return title.replace(",", "").replace("_", "-") + ".md"


def _needle(context: str, at: int) -> str | None:
    """The whole sentence of `context` that holds the character at `at`."""
    for s, e in sentences(context):
        if s <= at < e:
            return context[s:e]
    return None


def row_split(article: str) -> str:
    """How a question of this folder (of `article`, SQuAD's English title) is reported for the judge: `heldout`
    when the article is a test one, `heldout-seen` when the judge trained or was chosen on it.

    >>> row_split("Warsaw"), row_split("Yuan_dynasty"), row_split("Rhine"), row_split("Normans")
    ('heldout', 'heldout-seen', 'heldout-seen', 'heldout-seen')
    """
    return "heldout" if split_of(article) == "test" else "heldout-seen"


def build(lang: str, out: Path, train_dir: Path = TRAIN_DIR, articles: tuple[str, ...] = ARTICLES,
          off_from: tuple[str, ...] | None = None, limits: dict[str, int] = LIMITS) -> Path:
    """Write `out/docs/*.md` and `out/questions.jsonl`; returns the questions file. `articles`: the folder's
    (SQuAD's English titles); `off_from`: the articles whose answerable questions are its off-folder ones
    (None: every other); `limits`: at most so many questions of each kind (seeded sampling)."""
    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, list[dict]] = {k: [] for k in LIMITS}
    for article in load_articles(lang, train_dir):
        mine = article["title_en"] in articles
        if not mine and off_from is not None and article["title_en"] not in off_from:
            continue
        name = _file_name(article["title_en"])
        if mine:
            paragraphs = [p["context"].strip() for p in article["paragraphs"]]
            text = f"# {article['title_en'].replace('_', ' ')}\n\n" + "\n\n".join(paragraphs) + "\n"
            (docs / name).write_text(text, encoding="utf-8")
        for p in article["paragraphs"]:
            context = p["context"]
            for q in p["qas"]:
                row = {"question": q["question"], "lang": lang, "id": q["id"]}
                if not mine:
                    if not q["is_impossible"]:
                        kinds["off-folder"].append({**row, "refuse": True, "kind": "off-folder"})
                elif q["is_impossible"]:
                    kinds["near-miss"].append({**row, "refuse": True, "kind": "near-miss"})
                elif (at := _answer_at(p, q)) is not None and (needle := _needle(context, at)):
                    kinds["answerable"].append({**row, "needle": needle.strip(), "document": name,
                                                "kind": "answerable"})
    rng = random.Random(SEED)
    rows = []
    for kind, limit in limits.items():
        found = kinds[kind]
        rows += rng.sample(found, min(limit, len(found)))
    path = out / "questions.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


FIRST10 = "squad2-train-first10-en.json.gz"


def first10_articles(train_dir: Path = TRAIN_DIR) -> list[dict]:
    return json.load(gzip.open(train_dir / FIRST10))["data"]


def build_first10(out: Path, train_dir: Path = TRAIN_DIR) -> Path:
    """Write the folder of the ten labelled training articles (`out/docs/*.md`) and `out/questions.jsonl`."""
    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, list[dict]] = {k: [] for k in LIMITS}
    for article in first10_articles(train_dir):
        name = _file_name(article["title"])
        paragraphs = [p["context"].strip() for p in article["paragraphs"]]
        (docs / name).write_text(f"# {article['title'].replace('_', ' ')}\n\n" + "\n\n".join(paragraphs) + "\n",
                                 encoding="utf-8")
        for p in article["paragraphs"]:
            for q in p["qas"]:
                row = {"question": q["question"], "lang": "en", "id": q["id"]}
                if q["is_impossible"]:
                    kinds["near-miss"].append({**row, "refuse": True, "kind": "near-miss"})
                elif (at := _answer_at(p, q)) is not None and (needle := _needle(p["context"], at)):
                    kinds["answerable"].append({**row, "needle": needle.strip(), "document": name,
                                                "kind": "answerable"})
    for article in load_articles("en", train_dir):
        if split_of(article["title_en"]) == "test":
            kinds["off-folder"] += [{"question": q["question"], "lang": "en", "id": q["id"], "refuse": True,
                                     "kind": "off-folder"}
                                    for p in article["paragraphs"] for q in p["qas"] if not q["is_impossible"]]
    rng = random.Random(SEED)
    rows = []
    for kind, limit in LIMITS.items():
        rows += rng.sample(kinds[kind], min(limit, len(kinds[kind])))
    path = out / "questions.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lang", default="es")
    ap.add_argument("--source", default="six", choices=("six", "first10"),
                    help="six: the eval folder's six other topics; first10: the ten labelled training articles")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    path = build_first10(args.out) if args.source == "first10" else build(args.lang, args.out)
    print(f"{path}: {sum(1 for _ in path.open(encoding='utf-8'))} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

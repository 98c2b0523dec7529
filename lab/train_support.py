"""Train the support model (rag.deciding.support_model) on labelled Portuguese and Spanish questions.

The model (a logistic regression over `rag.deciding.support_model.FEATURES`), the data, the loss, the evaluator:

- **data**: for each language, a folder of the four SQuAD 2.0 dev articles of the `train` split that the eval
  folder also holds (`TRAIN_FOLDER`; `lab.judge_data.SPLITS`), built as `lab.heldout` builds its folders,
  with every question of those articles: the answerable ones with the sentence that holds SQuAD's answer
  (the needle), the unanswerable ones (near misses); and answerable questions of the two other `train`
  articles as off-folder ones (`TRAIN_OFF`). Each question is searched by the app itself (`rag.Engine`, at
  defaults, no judge), and each of its candidates is a row: 1 when the question is answerable and the
  candidate holds the needle, else 0 (a near miss's, an off-folder question's and every other candidate).
  No dev or test article is read; nothing of `../shared/eval/squad2`'s questions either.
- **loss**: L2-regularised log loss (`logistic`: Newton's method, deterministic), standardised features; `C`
  fixed in `RECIPE` (not tuned on the measured splits).
- **evaluator**: the rows' AUC here; the app's figures at defaults (right passage kept, near misses and
  off-folder questions answered, by split) come from `bench/judge_eval.py --configs words,model`, whose
  dev split (Pharmacy, Harvard, Rhine) chose the recipe and whose test split and held-out folder report.

    .venv/bin/python -m lab.train_support [--langs pt,es] [--out bench/out/support] [--save]

`--save` writes `rag/deciding/support_model.json` (the weights and the card: data, recipe, time, figures).
The searches are cached in `--out` (one pickle per language); delete them after a change to search.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import time
from pathlib import Path

import numpy as np

from lab.heldout import build
from lab.judge_data import split_of
from rag.deciding.needles import contains
from rag.deciding.support_model import FEATURES, MODEL_PATH, SupportModel, features

ROOT = Path(__file__).resolve().parent.parent
TRAIN_FOLDER = ("Normans", "Victoria_(Australia)", "1973_oil_crisis", "Fresno,_California")
TRAIN_OFF = ("Yuan_dynasty", "Intergovernmental_Panel_on_Climate_Change")
LIMITS = {"answerable": 100_000, "near-miss": 100_000, "off-folder": 300}
RECIPE = {"C": 1.0}


def searched(lang: str, out: Path, embedder=None) -> dict:
    """Every question of the language's training folder, searched by the app (cached in `out`)."""
    import rag
    from rag import load_settings

    assert all(split_of(a) == "train" for a in TRAIN_FOLDER + TRAIN_OFF)
    cache = out / f"support-train-{lang}.pkl"
    if cache.is_file():
        return pickle.loads(cache.read_bytes())
    folder = out / f"train-{lang}"
    questions = build(lang, folder, articles=TRAIN_FOLDER, off_from=TRAIN_OFF, limits=LIMITS)
    settings = load_settings(config=out / "none.toml", env={}, folder=folder / "docs", index_dir=out / f"idx-{lang}",
                             judge=False, support_model=False)
    engine = rag.Engine(settings, embedder=embedder)
    try:
        engine.sync()
        raw = [json.loads(x) for x in questions.read_text(encoding="utf-8").splitlines() if x]
        t0 = time.perf_counter()
        data = {"questions": raw, "results": [engine.search(q["question"]) for q in raw],
                "seconds": time.perf_counter() - t0}
    finally:
        engine.close()
    cache.write_bytes(pickle.dumps(data))
    return data


def rows(data: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, labels, question): one row per candidate of every question; `question` numbers the
    question each row belongs to, negative for a near miss's (-1 - its number)."""
    xs, ys, qs = [], [], []
    for n, (q, r) in enumerate(zip(data["questions"], data["results"])):
        if not r.candidates:
            continue
        needle = q.get("needle")
        xs.append(features(r))
        ys += [float(bool(needle) and contains(c.content, needle)) for c in r.candidates]
        qs += [-1 - n if q["kind"] == "near-miss" else n] * len(r.candidates)
    return np.vstack(xs), np.asarray(ys), np.asarray(qs)


def answer_or_near_miss(p: np.ndarray, y: np.ndarray, q: np.ndarray) -> float:
    """The AUC between an answerable question's right passage and a near miss's likeliest passage: whether
    the model tells an answer from a question written to look answerable from the same paragraph."""
    answers = [p[(q == n) & (y == 1)].max() for n in np.unique(q[y == 1])]
    near = [p[q == n].max() for n in np.unique(q[q < 0])]
    return auc(np.asarray(answers + near), np.asarray([1.0] * len(answers) + [0.0] * len(near)))


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The probability that a positive row scores over a negative one (ties: half)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for s in np.unique(scores):  # ties share their mean rank
        tie = scores == s
        ranks[tie] = ranks[tie].mean()
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def logistic(z: np.ndarray, y: np.ndarray, c: float = 1.0, iterations: int = 50) -> tuple[np.ndarray, float]:
    """(weights, intercept) minimising 0.5 |w|^2 + c * sum of log losses (scikit-learn's `C`; the intercept
    not penalised), by Newton's method: deterministic, no seed needed.

    >>> z = np.array([[-2.0], [-1.0], [1.0], [2.0], [0.5], [-0.5]])
    >>> w, b = logistic(z, np.array([0, 0, 1, 1, 0, 1.0]))
    >>> bool(w[0] > 0), round(float(b), 6) == 0.0
    (True, True)
    """
    x = np.hstack([z, np.ones((len(z), 1))])
    penalty = np.eye(x.shape[1]) / c
    penalty[-1, -1] = 0.0
    theta = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        grad = x.T @ (p - y) + penalty @ theta
        hess = (x * (p * (1 - p))[:, None]).T @ x + penalty + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta[:-1], float(theta[-1])


def fit(x: np.ndarray, y: np.ndarray, langs: tuple[str, ...], recipe: dict = RECIPE, card: dict | None = None) -> SupportModel:
    """A `SupportModel` fitted on standardised rows."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    coef, intercept = logistic((x - mean) / scale, y, recipe["C"])
    weights = (tuple(map(float, mean)), tuple(map(float, scale)), tuple(map(float, coef)), intercept)
    stamp = hashlib.sha1(repr(weights).encode()).hexdigest()[:12]
    return SupportModel(langs, *weights, stamp=stamp, card=card or {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", default="pt,es")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "support")
    ap.add_argument("--save", action="store_true", help=f"write {MODEL_PATH.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import rag

    embedder = rag.load_embedder()
    langs = tuple(args.langs.split(","))
    parts = {lang: rows(searched(lang, args.out, embedder)) for lang in langs}
    x = np.vstack([p[0] for p in parts.values()])
    y = np.concatenate([p[1] for p in parts.values()])
    t0 = time.perf_counter()
    model = fit(x, y, langs)
    seconds = time.perf_counter() - t0
    figures = {}
    for lang, (xl, yl, ql) in parts.items():
        p = model.scores_rows(xl)
        figures[lang] = {"rows": int(len(yl)), "positives": int(yl.sum()), "AUC": round(auc(p, yl), 3),
                         "AUC answer / near miss": round(answer_or_near_miss(p, yl, ql), 3)}
        print(lang, figures[lang])
    print("weights:", {f: round(c, 3) for f, c in zip(FEATURES, model.coef)})
    card = {"data": {"articles": list(TRAIN_FOLDER), "off-folder articles": list(TRAIN_OFF),
                     "source": "../shared/train/squad2-dev-even-{pt,es}.json.gz (train split only)",
                     "rows": {lang: f["rows"] for lang, f in figures.items()},
                     "positives": {lang: f["positives"] for lang, f in figures.items()}},
            "recipe": {**RECIPE, "features": list(FEATURES), "search": "the app at defaults, no judge"},
            "fit seconds": round(seconds, 2), "train figures": figures,
            "command": "python -m lab.train_support --save",
            "measured": "docs/gate.md, \"The support model\": dominated by the word tests; off by default"}
    model = SupportModel(model.languages, model.mean, model.scale, model.coef, model.intercept, model.stamp, card)
    if args.save:
        MODEL_PATH.write_text(json.dumps(model.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_PATH} ({model.stamp})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

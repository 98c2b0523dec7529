"""The judge: a cross-encoder that reads a question and a passage together and scores whether the passage
answers it.

The shipped model (`rag/deciding/judge_model/`, about 45 MB in fp16) is all-MiniLM-L6-v2, the embedder's own
weights, reading question and passage in one pass (`pair_model`), fine-tuned on SQuAD 2.0 articles in English, Portuguese and Spanish
(`lab/train_judge.py`; data, recipe and figures in `rag/deciding/judge_model/README.md`). A score is a logit: over
0 the model thinks the passage more likely answers than not. A near miss (a question on the passage's
subject asking something it does not give) scores low although it shares the passage's words, which a
word count cannot tell.

What it does: load offline from the package, score (question, passage) pairs, each read alone, and rerank a
search's first `top` candidates by score (`rerank`), keeping each candidate's fused rank beside its judge
rank. What it does not do: decide. The gate compares the score with the folder's calibrated cut
(rag.deciding.gate, rag.deciding.calibration).

Cost: a pair costs about as much as embedding a 200-token text twice; on two CPU cores the engine judges
only the first `judge_top` candidates (settings), with passages cut at `max_length` word-pieces, in int8
(dynamic quantisation of the linear layers: about twice as fast as fp32 here, the same ranking).
bench/bench_judge.py measures it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import Sequence

from rag.indexing.chunk import header_for
from rag.searching.search import Candidate, SearchResult

JUDGE_DIR = Path(__file__).resolve().parent / "judge_model"
# The judge on multilingual-e5-small trained on SQuAD 2.0 train's answerability (its README): `judge_path` names it.
JUDGE_E5_DIR = Path(__file__).resolve().parent / "judge_e5"
HEAD_FILE = "judge_head.json"
E5_LAYERS = "layers.safetensors"  # a judge on multilingual-e5-small: its weights but the word pieces


def pair_model(bert, scale: float = 10.0, shift: float = 0.5, span: bool = False):
    """The judge's network: one BERT pass over "[CLS] question [SEP] passage [SEP]", so every token of each
    reads the other (a cross-encoder), then the cosine of the question's mean token vector with the
    passage's, as a logit: scale x (cosine - shift).

    Why this head and not a classifier on [CLS]: all-MiniLM-L6-v2 was trained to mean-pool, never to read its
    [CLS] token, and a new classifier there stayed at the constant predictor's loss for 325 steps on these
    CPUs (docs/judge.md); the mean-pooled cosine starts where the embedder is (a passage of another article
    already scores low) and training teaches the joint reading to tell the answer from its neighbours.

    `span`: also a start and an end logit for every token (SQuAD's extractive head), where the answer begins
    and ends in the passage, or at [CLS] when it holds none; `forward(..., spans=True)` returns them beside the
    logit, and `span_answerability` turns them into a score."""
    import torch

    class PairScorer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert
            self.scale = torch.nn.Parameter(torch.tensor(float(scale)))
            self.shift = torch.nn.Parameter(torch.tensor(float(shift)))
            self.span = torch.nn.Linear(bert.config.hidden_size, 2) if span else None

        def forward(self, input_ids, attention_mask, token_type_ids, spans: bool = False):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state
            live = attention_mask.unsqueeze(-1).to(h.dtype)
            second = token_type_ids.unsqueeze(-1).to(h.dtype) * live
            first = live - second
            q = (h * first).sum(1) / first.sum(1).clamp(min=1.0)
            p = (h * second).sum(1) / second.sum(1).clamp(min=1.0)
            cos = torch.nn.functional.cosine_similarity(q, p, dim=-1)
            logit = self.scale * (cos - self.shift)
            if not spans:
                return logit
            start, end = self.span(h).unbind(-1)
            return logit, start, end

    return PairScorer()


def span_answerability(start, end, token_type_ids, attention_mask, longest: int = 30):
    """Per pair: the best answer span's start+end logit in the passage (at most `longest` tokens, its last
    [SEP] excluded) less [CLS]'s (no answer). Over 0: the model finds an answer in the passage."""
    import torch

    allowed = (token_type_ids * attention_mask).bool()
    last = attention_mask.sum(1) - 1
    allowed[torch.arange(allowed.shape[0]), last] = False
    neg = torch.finfo(start.dtype).min / 4
    s = start.masked_fill(~allowed, neg)
    e = end.masked_fill(~allowed, neg)
    n = s.shape[1]
    i = torch.arange(n)
    band = (i[None, :] >= i[:, None]) & (i[None, :] < i[:, None] + longest)
    pair = s[:, :, None] + e[:, None, :]
    best = pair.masked_fill(~band, neg).flatten(1).max(1).values
    return best - (start[:, 0] + end[:, 0])


def save_pair_model(model, tokenizer, out: Path) -> None:
    """The encoder in fp16 safetensors with its tokenizer, and the head's two numbers beside it."""
    import torch

    out.mkdir(parents=True, exist_ok=True)
    model.bert.to("cpu").to(torch.float16).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    head = {"scale": model.scale.item(), "shift": model.shift.item()}
    if model.span is not None:
        head["span"] = {"weight": model.span.weight.detach().float().tolist(),
                        "bias": model.span.bias.detach().float().tolist()}
    (out / HEAD_FILE).write_text(json.dumps(head) + "\n", encoding="utf-8")


def load_pair_model(path: Path):
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(path), local_files_only=True, torch_dtype=torch.float32)
    head = json.loads((path / HEAD_FILE).read_text(encoding="utf-8"))
    model = pair_model(bert, head["scale"], head["shift"], span="span" in head)
    if "span" in head:
        with torch.no_grad():
            model.span.weight.copy_(torch.tensor(head["span"]["weight"]))
            model.span.bias.copy_(torch.tensor(head["span"]["bias"]))
    return model


def save_e5_judge(model, out: Path, base: Path, card: dict) -> None:
    """A judge (`pair_model` over rag.indexing.e5.zero_segments(bert)) saved without the base's word-piece
    matrix: the other weights in fp16, the head's two numbers, and the card naming the base file and its hash."""
    import json

    import torch
    from safetensors.torch import save_file

    from rag.indexing import e5

    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", torch.float16).contiguous()
             for k, v in model.bert.inner.state_dict().items() if k != e5.WORDS and v.is_floating_point()}
    save_file(state, str(out / E5_LAYERS))
    (out / HEAD_FILE).write_text(json.dumps({"scale": model.scale.item(), "shift": model.shift.item()}) + "\n",
                                 encoding="utf-8")
    card = {**card, "base": {"package": e5.PACKAGE, "file": base.name, "sha256": e5.sha256(base)}}
    (out / "training.json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")


def _load_e5_judge(path: Path, card: dict, base: Path | None = None):
    """(model, tokenizer) of a judge `save_e5_judge` wrote, in fp32 and eval mode: the base file's weights, then the
    judge's own over them. `base`: the model file (default: the installed package's, rag.indexing.e5.base_file)."""
    import json

    import torch
    from safetensors.torch import load_file

    from rag.indexing import e5

    want = card["base"]
    base = base or e5.base_file(want["file"])
    if e5.sha256(base) != want["sha256"]:
        raise ValueError(f"{base}: not the {want['file']} this judge was trained on (its SHA-256 differs)")
    f = e5.read_bin(str(base), words="q4")  # the word pieces stay in their 4-bit blocks (frozen in training)
    bert = e5.to_bert(f)
    state = {k: v.float() for k, v in load_file(str(path / E5_LAYERS)).items()}
    missing, unexpected = bert.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if k != e5.WORDS and not k.endswith(("position_ids", "token_type_ids"))]:
        raise ValueError(f"{path / E5_LAYERS}: does not fit the base (missing {missing}, unexpected {unexpected})")
    head = json.loads((path / HEAD_FILE).read_text(encoding="utf-8"))
    model = pair_model(e5.zero_segments(bert), head["scale"], head["shift"])
    return model.eval(), e5.E5Tokenizer(f)


class Judge:
    """Scores (question, passage) pairs with a pair model on disk.

    `path`: a folder holding a transformers encoder, its tokenizer and the head's numbers (the shipped judge by
    default), or a judge on multilingual-e5-small (its card names the base file: rag.indexing.e5). `languages`:
    the question languages its score is trusted for (default: the model card's `judged_languages`); for the
    others the gate falls back to the word tests.
    """

    def __init__(self, path: Path | str = JUDGE_DIR, max_length: int = 192, quantize: bool = True,
                 languages: Sequence[str] | None = None):
        import torch
        from transformers import AutoTokenizer

        self.path = Path(path)
        self.card = _card(self.path)
        # A judge on multilingual-e5-small: its card names the base file its word pieces are read from (the MiniLM
        # judge's card names its base too, as a string).
        self.e5 = isinstance(self.card.get("base"), dict)
        if self.e5:
            if not (self.path / E5_LAYERS).is_file() or not (self.path / HEAD_FILE).is_file():
                raise FileNotFoundError(f"no judge model in {self.path} ({E5_LAYERS} or {HEAD_FILE} missing)")
            model, self.tokenizer = _load_e5_judge(self.path, self.card)
            # int8 cost e5's judge 0.02-0.08 of its near-miss AUC (dev pairs: en 0.785 -> 0.708, es 0.800 -> 0.724);
            # it reads in bfloat16 where the CPU computes it, in one batch (`score`), else fp32.
            quantize = False
        else:
            if not (self.path / "config.json").is_file() or not (self.path / HEAD_FILE).is_file():
                raise FileNotFoundError(f"no judge model in {self.path} (config.json or {HEAD_FILE} missing)")
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            model = load_pair_model(self.path)
        self.max_length = max_length
        model.eval()
        if quantize:
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        self.model = model
        self.languages = tuple(languages if languages is not None else self.card.get("judged_languages", ()))
        self.quantized = quantize
        self._lock = threading.Lock()  # one forward pass at a time: torch threads are shared anyway
        self._seen: dict[tuple[str, str], float] = {}

    @functools.cached_property
    def stamp(self) -> str:
        """Names these weights and how they are run: part of the calibration's fingerprint."""
        h = hashlib.sha1()
        for name in sorted(p.name for p in self.path.iterdir() if p.suffix in (".safetensors", ".json")):
            h.update(name.encode())
            h.update((self.path / name).read_bytes())
        from rag.indexing.embed import bf16_native
        precision = "int8" if self.quantized else "bf16" if self.e5 and bf16_native() else "fp32"
        return f"judge-{h.hexdigest()[:12]}-{precision}-{self.max_length}-{_READING}"

    def reading(self, languages: Sequence[str]) -> "Judge":
        """The same model, trusted for these question languages instead of its card's."""
        other = object.__new__(Judge)
        other.__dict__.update({k: v for k, v in self.__dict__.items() if k != "stamp"})
        other.languages = tuple(languages)
        return other

    def forget(self) -> None:
        """Drop the remembered scores (a benchmark times the model, not the memory)."""
        self._seen.clear()

    def judges(self, lang: str) -> bool:
        """Whether the score decides for a question in this language."""
        return lang in self.languages

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """One logit per passage, in order (higher: more likely to answer the question).

        Each pair is read alone, so its score is the pair's own: int8 dynamic quantisation sets the
        activations' scale over the whole input, so in a batch a pair's score moved with the other passages
        and the padding they brought (a search's 20 candidates read together against each alone: median 0.19
        logits apart, up to 1.67, where the cut is about 0.2), and the calibration, which reads 3 passages a
        question, would have cut scores read in other company than a question's 20. Alone also pads nothing;
        it costs 3-8% more time here than one batch of 20 (bench/bench_judge.py).

        Scores are remembered per (question, passage) for the life of the process: the calibration asks the
        same 800 questions again after every change to the folder, and most of their passages did not change.
        """
        import torch

        out = [self._seen.get((question, p)) for p in passages]
        todo = [i for i, x in enumerate(out) if x is None]
        with self._lock, torch.inference_mode():
            if self.e5 and todo:  # fp32 or bf16 (not int8): padding is masked, so a batch leaves each pair's score
                from rag.indexing.embed import cpu_bf16
                enc = self.tokenizer([question] * len(todo), [passages[i] for i in todo], max_length=self.max_length)
                with cpu_bf16():  # always where native, so the calibration's 3 pairs and a question's 8 read alike
                    scores = self.model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).float()
                for i, v in zip(todo, scores.tolist()):
                    out[i] = v
            else:
                for i in todo:
                    enc = self.tokenizer(question, passages[i], truncation="only_second", max_length=self.max_length,
                                         return_tensors="pt")
                    out[i] = float(self.model(enc["input_ids"], enc["attention_mask"],
                                              enc["token_type_ids"]).float()[0])
            if len(self._seen) > _REMEMBERED:
                self._seen.clear()
            self._seen.update(((question, passages[i]), out[i]) for i in todo)
        return out


# How pairs are read, in the stamp: "alone" since scores stopped depending on a batch's other passages
# (`Judge.score`); calibrations cut on batched scores are made again.
_READING = "alone"

# Scores a judge remembers before it forgets them all (about 100 bytes of key each, plus the passage, shared).
_REMEMBERED = 200_000


def _card(path: Path) -> dict:
    try:
        return json.loads((path / "training.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@functools.lru_cache(maxsize=2)
def load_judge(path: str = str(JUDGE_DIR)) -> Judge:
    """The judge at `path`, loaded once per process."""
    return Judge(path)


def passage_text(c: Candidate) -> str:
    """What the judge reads: the passage with its [Title > Section] header, as it was trained."""
    return header_for(c.title, tuple(p for p in c.section.split(" > ") if p)) + "\n" + c.content


def rerank(result: SearchResult, judge: Judge, top: int, question: str | None = None,
           within: float | None = None, order: str = "fused") -> SearchResult:
    """The result with its first `top` candidates scored by the judge and put first, in the order that fuses
    the judge's ranks with retrieval's; the rest follow in fused order, unscored. Each candidate keeps its fused rank (`fused_rank`) and gets
    its judge score and rank (`judge`, `judge_rank`). `question`: what the judge reads as the question
    (default: the one searched, `result.query`, so a follow-up carries its subject). `within`: read only
    the candidates at or under this distance among the first `top` (the others follow, unscored). `order`:
    "fused" (the judge's ranks fused with retrieval's) or "judge" (its own; `judged_order`)."""
    first = result.candidates[:top]
    head = [c for c in first if within is None or c.distance <= within]
    tail = [c for c in first if c not in head] + result.candidates[top:]
    if not head:
        return result
    scores = judge.score(question or result.query or result.question, [passage_text(c) for c in head])
    by_judge = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    rank = {i: r + 1 for r, i in enumerate(by_judge)}
    scored = [dataclasses.replace(c, judge=round(scores[i], 4), judge_rank=rank[i]) for i, c in enumerate(head)]
    return dataclasses.replace(result, candidates=judged_order(scored, order=order) + list(tail), judged=len(head),
                               judge_stamp=judge.stamp)


def judged_order(scored: Sequence[Candidate], k: int = 60, order: str = "fused", weight: float = 1.0) -> list[Candidate]:
    """Candidates the judge read, given in retrieval's order, in the order that fuses the judge's ranks with
    retrieval's (reciprocal rank fusion): alone, the judge's order lost R@1 on SQuAD's English test articles
    (0.78 against the fused 0.81, sign test +13/-21); fused with it, none lost and the dev articles gained
    (0.76 -> 0.80). docs/judge.md. `weight`: the judge's term times this (bench/judge_eval.py's
    `rerank:weight=W`; 1 in the app: no other weight was chosen on the dev articles).

    >>> from rag.searching.search import Candidate
    >>> rows = [Candidate(f"c{i}", "d", "a.md", "", "", "", 0, 1, None, None, "text", i, 0.0, 0.3, i, i, 1.0,
    ...                   judge=j, judge_rank=r) for i, j, r in ((1, -2.0, 3), (2, 1.5, 1), (3, 0.5, 2))]
    >>> [c.chunk_id for c in judged_order(rows)]
    ['c2', 'c1', 'c3']
    >>> [c.chunk_id for c in judged_order(rows, order="judge")]  # its own ranks: "judge_order"
    ['c2', 'c3', 'c1']
    """
    if order == "judge":
        return [c for _, c in sorted(enumerate(scored), key=lambda ic: (ic[1].judge_rank or len(scored), ic[0]))]
    return [c for _, c in sorted(enumerate(scored), key=lambda ic: (
        -(1 / (k + ic[0] + 1) + weight / (k + (ic[1].judge_rank or len(scored)))), ic[0]))]

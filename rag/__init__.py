"""rag: chat with your folder, with evidence or an explained refusal.

The engine behind the app and the CLI. No Streamlit here. The front door:

    from rag import Engine, load_settings, gate
    engine = Engine(load_settings(folder="data"))
    engine.sync()
    turn = engine.ask("What does the threshold do?")
    print(turn.answer.text)
    for c in turn.gated.citations:
        print(c.n, c.doc_name, c.locator, c.link, f"{c.distance:.3f}")

Stages, one module each: extract -> chunk -> embed -> store (Chroma) + lexical (BM25) -> search ->
gate (words for its verdicts: `explain`; `citations`) -> answer (generation; `citations` checks an answer's [n], `followup` handles
follow-up questions). `library` keeps one record per document; `indexer` is the one writer of the store
and the library (`uploads` puts files into the folder); `engine` answers and is the front door.

Measuring is not here: the lab (`lab/`, beside this package: needle runs, BEIR, statistics) measures the
engine, and `rag eval` imports it only when it runs. What the app itself shows of measuring stays here:
the calibration page's questions (`needles`) and threshold sweep (`sweep`).
"""

import os as _os

# The one side effect of importing rag: environment variables the app needs set before the libraries that
# read them load. Each is a default (setdefault): a value the person has set wins.
_ENVIRONMENT = {
    # Offline: the model and the judge load from disk; nothing reaches the network at run time.
    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    # No usage reports from the Hugging Face libraries or from Chroma.
    "HF_HUB_DISABLE_TELEMETRY": "1", "ANONYMIZED_TELEMETRY": "False",
    # Quiet: no progress bars, the libraries' messages only when they are errors, and no warning from the
    # tokenizers library when a process forks after it has tokenized.
    "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error",
    # OpenMP threads sleep rather than spin between batches: on a shared 2-core machine spinning cost a
    # query 1 s, not 11 ms.
    "OMP_WAIT_POLICY": "PASSIVE",
}
for _k, _v in _ENVIRONMENT.items():
    _os.environ.setdefault(_k, _v)

from rag.answer import Answer, ChosenSentence, ExtractiveGenerator, Generator, answer, make_generator  # noqa: E402
from rag.prompt import LLMGenerator, build_prompt  # noqa: E402
from rag.citations import NO_ANSWER_SENTENCE, Citation, CitationCheck, check_citations, locator  # noqa: E402
from rag.followup import followup_query, is_followup  # noqa: E402
from rag.chunk import Chunk, Strategy, chunk_document, strategy, unwrap  # noqa: E402
from rag.embed import Embedder, count_tokens, load_embedder  # noqa: E402
from rag.engine import Engine, LibraryStats, ThresholdChoice, Turn  # noqa: E402
from rag.indexer import FileOutcome, SyncReport  # noqa: E402
from rag.uploads import UploadConflict, UploadError, safe_name  # noqa: E402
from rag.extract import ExtractionError, Extracted, extract, extract_bytes  # noqa: E402
from rag.calibration import Calibration, LanguageCalibration  # noqa: E402
from rag.gate import (CAPPED, DISTANCE, EMPTY, JUDGE, JUDGED_OUT, KEPT, OFF_SUBJECT, OVER, SUPPORT,  # noqa: E402
                      UNSUPPORTED, Gated, SupportRule, gate)
from rag.explain import Explanation, Markup, ceiled, evidence_rule, explain, floored, quoted, refusal_text  # noqa: E402
from rag.judge import Judge, load_judge  # noqa: E402
from rag.library import DocRecord, Stamp  # noqa: E402
from rag.llm import ChatClient, LLMError  # noqa: E402
from rag.fusion import Fused, fuse, rrf  # noqa: E402
from rag.search import Candidate, SearchResult  # noqa: E402
from rag.settings import Settings, load_settings  # noqa: E402
from rag.store import StoreError  # noqa: E402
from rag.viewer import Located, Mark, ViewerError  # noqa: E402

__all__ = [
    "NO_ANSWER_SENTENCE", "ChatClient", "CitationCheck", "LLMError", "LLMGenerator", "build_prompt",
    "check_citations", "followup_query", "is_followup", "make_generator",
    "Calibration", "DISTANCE", "EMPTY", "LanguageCalibration", "SUPPORT", "SupportRule", "ThresholdChoice",
    "UNSUPPORTED", "OFF_SUBJECT", "JUDGE", "JUDGED_OUT", "Judge", "load_judge", "evidence_rule", "Markup", "Located", "Mark", "ViewerError",
    "Answer", "CAPPED", "Candidate", "ChosenSentence", "Chunk", "Citation", "DocRecord", "Embedder", "Engine",
    "ExtractionError", "Extracted", "ExtractiveGenerator", "FileOutcome", "ceiled", "floored", "locator", "quoted", "Gated", "Generator", "KEPT",
    "LibraryStats", "OVER", "SearchResult", "Settings", "Stamp", "StoreError", "Strategy", "SyncReport", "Turn",
    "UploadConflict", "UploadError", "answer", "chunk_document", "count_tokens", "extract", "extract_bytes", "gate",
    "load_embedder", "load_settings", "refusal_text", "rrf", "safe_name", "strategy", "unwrap", "Fused", "fuse",
    "Explanation", "explain",
]

"""rag: chat with your folder, with evidence or an explained refusal.

The engine behind the app and the CLI. No Streamlit here. The front door:

    from rag import Engine, load_settings, gate
    engine = Engine(load_settings(folder="data"))
    engine.sync()
    turn = engine.ask("What does the threshold do?")
    print(turn.answer.text)
    for c in turn.gated.citations:
        print(c.n, c.doc_name, c.locator, c.link, f"{c.distance:.3f}")

A file and a question each pass through the stages in order, one package each; a module imports its own
stage or a lower one, never a higher one (tests/unit/test_layout.py counts it):

    rag.settings     the settings a person sets and the constants the project tuned (imports nothing of rag)
    rag.text         text analysis: languages, word lists, the BM25 analyzer
    rag.reading      a file into canonical text, sections and places (a reader per format; the viewer)
    rag.indexing     canonical text into passages, vectors and BM25, stored, stamped and published
    rag.searching    a question into ranked candidates (both sides, fusion, follow-ups, the question's words)
    rag.deciding     candidates into a verdict (the gate, its rule, the judge, calibration) and its words (explain)
    rag.answering    a verdict into an answer citing [n] (extractive, or a local model server)
    rag.engine       the front door: one object the app and the CLI hold; rag.cli, the command line

Measuring is not here: the lab (`lab/`, beside this package: needle runs, BEIR, statistics) measures the
engine, and `rag eval` imports it only when it runs. What the app itself shows of measuring stays in the
deciding stage: the calibration page's questions (`needles`) and threshold sweep (`sweep`).
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

from rag.answering.answer import Answer, make_generator  # noqa: E402
from rag.indexing.chunk import unwrap  # noqa: E402
from rag.deciding.citations import Citation  # noqa: E402
from rag.indexing.embed import Embedder, load_embedder  # noqa: E402
from rag.engine import Engine  # noqa: E402
from rag.deciding.explain import Markup, ceiled, evidence_rule, explain, floored  # noqa: E402
from rag.deciding.gate import Gated, gate  # noqa: E402
from rag.deciding.rule import (ACROSS, CAPPED, DISTANCE, EMPTY, JUDGE, JUDGED_OUT, KEPT, MODEL, OFF_SUBJECT,  # noqa: E402
                               OVER, SUPPORT, UNSUPPORTED, WEIGHED_OUT, SupportRule)
from rag.searching.search import Candidate, SearchResult  # noqa: E402
from rag.settings import Settings, load_settings  # noqa: E402
from rag.indexing.uploads import UploadConflict, UploadError  # noqa: E402
from rag.reading.extract import FORMATS, format_names  # noqa: E402
from rag.reading.viewer import Located, ViewerError  # noqa: E402

# What the app and a script need: the engine and its settings, the gate's verdicts and their words, and the
# types an answer is made of. Everything else is imported from its module (`from rag.searching.fusion import rrf`).
__all__ = [
    "Engine", "Settings", "load_settings", "Embedder", "load_embedder", "make_generator",
    "gate", "Gated", "SupportRule", "ACROSS", "CAPPED", "DISTANCE", "EMPTY", "JUDGE", "JUDGED_OUT", "KEPT", "OFF_SUBJECT",
    "OVER", "SUPPORT", "UNSUPPORTED", "MODEL", "WEIGHED_OUT",
    "explain", "evidence_rule", "Markup", "ceiled", "floored",
    "Answer", "Candidate", "Citation", "SearchResult", "unwrap", "Located", "ViewerError", "UploadConflict",
    "UploadError", "FORMATS", "format_names",
]

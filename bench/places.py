"""Does the citation that quotes an answer name the place a person would look? Measured on real files nobody here
wrote: saved web pages (chapters of The Rust Programming Language as rustup installs them, Mozilla's Firefox
Developer Edition page and an Apache status page from trafilatura's test files) and an OpenDocument manual
(odfpy's `api-for-odfpy.odt`, from its source package).

Each question names the place a person would look for its answer (a heading, as the document shows it). A
question counts as answered when the gate kept a passage; its place is right when the locator of the citation
its answer quotes first names that heading. Reported: answered questions, and the share of them cited at the
right place.

    python bench/places.py FOLDER [setting=value ...]   # FOLDER holds the files named in QUESTIONS (docs/benchmarks.md)

It also asks `UNRELATED` questions (English and Portuguese) that nothing in the files answers, and counts the
refusals.

What it does not do: fetch the files (they are on this machine or in the packages' source archives), or judge
whether the answer is right (only where its citation points).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

# (file, question, the place a person would look: a heading as the document writes it)
QUESTIONS = [
    ("ch08-01-vectors.html", "How do you create a new empty vector?", "Creating a New Vector"),
    ("ch08-01-vectors.html", "What happens to the elements of a vector when the vector is dropped?",
     "Dropping a Vector Drops Its Elements"),
    ("ch08-01-vectors.html", "How can a vector hold values of different types?", "Using an Enum to Store Multiple Types"),
    ("ch08-01-vectors.html", "What does the Rust Programming Language book say about iterating over a vector?",
     "Iterating Over the Values in a Vector"),
    ("ch08-02-strings.html", "Why does Rust not support indexing into a String?", "Indexing into Strings"),
    ("ch08-02-strings.html", "How do you append a string slice with push_str?", "Appending with push_str or push"),
    ("ch08-02-strings.html", "How do you combine strings with the format! macro?", "Concatenating with + or format!"),
    ("ch08-02-strings.html", "What are grapheme clusters?", "Bytes, Scalar Values, and Grapheme Clusters"),
    ("ch08-03-hash-maps.html", "How do you insert a value only if the key has no value yet?",
     "Adding a Key and Value Only If a Key Isn’t Present"),
    ("ch08-03-hash-maps.html", "Which hashing function does HashMap use by default?", "Hashing Functions"),
    ("ch08-03-hash-maps.html", "What happens to owned values like String when they are inserted into a hash map?",
     "Managing Ownership in Hash Maps"),
    ("ch09-02-recoverable-errors-with-result.html", "What does the ? operator do with an Err value?",
     "The ? Operator Shortcut"),
    ("ch09-02-recoverable-errors-with-result.html", "What do unwrap and expect do?", "Shortcuts for Panic on Error"),
    ("ch15-04-rc.html", "How does Rc::clone change the reference count?", "Cloning to Increase the Reference Count"),
    ("ch16-02-message-passing.html", "How do you create multiple producers for a channel?", "Creating Multiple Producers"),
    ("ch16-02-message-passing.html", "What happens to a value after it is sent down a channel?",
     "Transferring Ownership Through Channels"),
    ("mozilla.org.firefox.developer.html", "What is WebIDE in Mozilla's Firefox Developer Edition?", "WebIDE"),
    ("mozilla.org.firefox.developer.html", "What does the Network Monitor show?", "Network Monitor"),
    ("api-for-odfpy.odt", "How do you load an existing document into memory with ODFPY?", "Loading a document"),
    ("api-for-odfpy.odt", "What are subobjects in ODFPY?", "Subobjects"),
    ("api-for-odfpy.odt", "What files is an OpenDocument file made of?", "About OpenDocument"),
    ("api-for-odfpy.odt", "What does the teletype module do?", "Teletype module"),
    ("apache.html", "What is the Apache server's uptime?", "Apache Server Status"),
]


# Questions these files cannot answer, in English and Portuguese (written for this check, after the files were
# chosen): each should be refused.
UNRELATED = [
    "What is the boiling point of water at the top of Mount Everest?",
    "Who won the 1998 FIFA World Cup final?",
    "How long should sourdough bread proof before baking?",
    "What is the capital of Australia?",
    "How many moons does Jupiter have?",
    "Quanto custa a inscrição na regata de sábado?",
    "Qual é a receita tradicional do bacalhau à Gomes de Sá?",
    "Quem escreveu Os Lusíadas?",
    "Quando abre a piscina municipal no verão?",
    "Qual é a dose recomendada de vitamina D para adultos?",
]


def main(folder: Path, overrides: dict | None = None) -> dict:
    """`overrides`: settings for the engine (e.g. {"judge": True, "judge_path": DIR}), as bench/judge_eval.py
    passes them."""
    from rag.engine import Engine
    from rag.settings import load_settings

    with tempfile.TemporaryDirectory() as index:
        settings = load_settings(env={}, folder=str(folder), index_dir=index, **(overrides or {}))
        engine = Engine(settings)
        engine.sync()
        rows = []
        for name, question, place in QUESTIONS:
            turn = engine.ask(question)
            cited = turn.answer.citations or turn.gated.citations
            first = next((c for c in cited if turn.answer.chosen and c.n == turn.answer.chosen[0].n),
                         cited[0] if cited else None)
            rows.append({"question": question, "file": name, "place": place,
                         "answered": not turn.answer.refused, "cited": first and f"{first.doc_name} · {first.locator}",
                         "right": bool(first and first.doc_name == name and place in first.locator)})
        unrelated = [(q, engine.ask(q).answer.refused) for q in UNRELATED]
        engine.close()
    answered = [r for r in rows if r["answered"]]
    right = sum(r["right"] for r in answered)
    for r in rows:
        print(f"{'ok ' if r['right'] else '-- ' if r['answered'] else 'ref'} {r['question']}\n      {r['cited']}  "
              f"(look: {r['place']})")
    for q, refused in unrelated:
        print(f"{'refused ' if refused else 'ANSWERED'} {q}")
    summary = {"questions": len(rows), "answered": len(answered), "right_place": right,
               "share": right / len(answered) if answered else 0.0,
               "unrelated": len(unrelated), "unrelated_refused": sum(r for _, r in unrelated)}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    # python bench/places.py FOLDER [setting=value ...]   e.g. judge=true judge_path=DIR judge_languages=en,pt
    main(Path(sys.argv[1]), dict(kv.split("=", 1) for kv in sys.argv[2:]))

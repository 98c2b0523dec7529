"""Check bench/sample_needles.jsonl against the sample folder data/.

Standard library only. Asserts the invariants the needle set relies on:

* every line is a JSON object with the expected keys and values;
* an answerable entry's needle is 20-120 characters, has no line break,
  occurs exactly once in the whole folder's .md/.txt text (also when compared
  without regard to case), occurs in the document it names, and is not inside
  a Markdown heading line;
* "paraphrase" questions do not echo the needle: at most half of the needle's
  content words may appear in the question;
* questions are unique;
* the counts asked for are met.

The PDF data/threshold-and-refusals.pdf is generated from
data/threshold-and-refusals.md, so its text is not read here; needles of
that document count as occurring once when they occur once among the
.md/.txt files. (bench/make_sample_pdf.py --check verifies that every
paragraph of the Markdown comes back verbatim from the PDF.)

Usage:  python bench/check_needles.py [needles.jsonl] [data_dir]
Exit status 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NEEDLES = ROOT / "bench" / "sample_needles.jsonl"
DEFAULT_DATA = ROOT / "data"

MIN_COUNTS = {
    "en answerable (English documents)": 40,
    "en refusals": 20,
    "pt answerable": 20,
    "pt refusals": 10,
    "en questions answered by pt notes": 6,
}
ANSWERABLE_KEYS = {"question", "needle", "document", "lang", "style"}
REFUSAL_KEYS = {"question", "refuse", "lang"}
PT_PREFIX = "notas/"

STOPWORDS = set(
    """
    a an and are as at be by can do does for from has have how i if in is it its
    my of on or so than that the their then there these this to was what when
    where which who why will with you your
    a à ao aos as às com da das de do dos e é em entre na nas no nos o os ou
    para pela pelo por que se sem um uma umas uns
    """.split()
)


def load_texts(data_dir: Path) -> dict[str, str]:
    texts = {}
    for path in sorted(data_dir.rglob("*")):
        if path.is_file() and path.suffix.lower() in {".md", ".txt"}:
            if any(part.startswith(".") for part in path.relative_to(data_dir).parts):
                continue
            texts[path.relative_to(data_dir).as_posix()] = path.read_text(encoding="utf-8")
    return texts


def content_words(text: str) -> set[str]:
    words = re.findall(r"[\w.,'-]+", unicodedata.normalize("NFC", text.lower()))
    cleaned = {w.strip(".,'-") for w in words}
    return {w for w in cleaned if len(w) >= 3 and w not in STOPWORDS}


def heading_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"^\s{0,3}#{1,6}\s", line)]


def main(argv: list[str]) -> int:
    needles_path = Path(argv[1]) if len(argv) > 1 else DEFAULT_NEEDLES
    data_dir = Path(argv[2]) if len(argv) > 2 else DEFAULT_DATA
    texts = load_texts(data_dir)
    if not texts:
        print(f"FAIL: no .md/.txt files under {data_dir}")
        return 1
    corpus_lower = {name: text.lower() for name, text in texts.items()}
    headings = {name: heading_lines(text) for name, text in texts.items()}

    errors: list[str] = []
    entries: list[dict] = []
    for number, line in enumerate(needles_path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not JSON ({exc})")
            continue
        if not isinstance(entry, dict):
            errors.append(f"line {number}: not an object")
            continue
        entry["_line"] = number
        entries.append(entry)

    counts: Counter[str] = Counter()
    styles: Counter[tuple[str, str]] = Counter()
    per_document: Counter[str] = Counter()
    questions = Counter(e.get("question", "").strip().lower() for e in entries)
    for question, n in questions.items():
        if n > 1:
            errors.append(f"question asked {n} times: {question!r}")

    for entry in entries:
        where = f"line {entry['_line']}"
        keys = set(entry) - {"_line"}
        question = entry.get("question")
        lang = entry.get("lang")
        if not isinstance(question, str) or not question.strip():
            errors.append(f"{where}: empty question")
            continue
        if "\n" in question:
            errors.append(f"{where}: question has a line break")
        if lang not in {"en", "pt"}:
            errors.append(f"{where}: lang must be en or pt, got {lang!r}")
            continue

        if entry.get("refuse") is True:
            if keys != REFUSAL_KEYS:
                errors.append(f"{where}: refusal keys {sorted(keys)} != {sorted(REFUSAL_KEYS)}")
            counts[f"{lang} refusals"] += 1
            continue

        if keys != ANSWERABLE_KEYS:
            errors.append(f"{where}: answerable keys {sorted(keys)} != {sorted(ANSWERABLE_KEYS)}")
            continue
        needle, document, style = entry["needle"], entry["document"], entry["style"]
        if style not in {"echo", "paraphrase"}:
            errors.append(f"{where}: style must be echo or paraphrase, got {style!r}")
        if not 20 <= len(needle) <= 120:
            errors.append(f"{where}: needle length {len(needle)} outside 20-120: {needle!r}")
        if "\n" in needle or "\r" in needle:
            errors.append(f"{where}: needle spans a line break: {needle!r}")
        if needle != needle.strip():
            errors.append(f"{where}: needle has leading or trailing whitespace: {needle!r}")
        if document not in texts:
            errors.append(f"{where}: document {document!r} is not a .md/.txt file in {data_dir}")
            continue

        exact = {name: text.count(needle) for name, text in texts.items() if needle in text}
        folded = {name: low.count(needle.lower()) for name, low in corpus_lower.items() if needle.lower() in low}
        if sum(exact.values()) != 1:
            errors.append(f"{where}: needle occurs {sum(exact.values())} times {exact}: {needle!r}")
        elif document not in exact:
            errors.append(f"{where}: needle is in {list(exact)}, not in {document!r}: {needle!r}")
        if sum(folded.values()) != 1:
            errors.append(f"{where}: needle occurs {sum(folded.values())} times ignoring case {folded}: {needle!r}")
        for heading in headings[document]:
            if needle in heading:
                errors.append(f"{where}: needle is inside heading line {heading!r}")

        if style == "paraphrase":
            needle_words = content_words(needle)
            shared = needle_words & content_words(question)
            if needle_words and len(shared) / len(needle_words) > 0.5:
                errors.append(
                    f"{where}: paraphrase echoes {len(shared)}/{len(needle_words)} needle words {sorted(shared)}: {question!r}"
                )

        is_pt_doc = document.startswith(PT_PREFIX)
        if lang == "pt" and not is_pt_doc:
            errors.append(f"{where}: Portuguese question with a needle outside {PT_PREFIX}: {document!r}")
        if lang == "en" and is_pt_doc:
            bucket = "en questions answered by pt notes"
        elif lang == "en":
            bucket = "en answerable (English documents)"
        else:
            bucket = "pt answerable"
        counts[bucket] += 1
        styles[(bucket, style)] += 1
        per_document[document] += 1

    for bucket, minimum in MIN_COUNTS.items():
        if counts[bucket] < minimum:
            errors.append(f"count: {bucket} = {counts[bucket]}, need at least {minimum}")
    for bucket in ("en answerable (English documents)", "pt answerable"):
        if styles[(bucket, "paraphrase")] * 2 < counts[bucket]:
            errors.append(
                f"count: {bucket} has {styles[(bucket, 'paraphrase')]} paraphrases of {counts[bucket]}, need at least half"
            )
    for name in texts:
        if per_document[name] == 0:
            errors.append(f"coverage: no needle in {name}")

    print(f"needle set: {needles_path}  ({len(entries)} entries)")
    print(f"data folder: {data_dir}  ({len(texts)} .md/.txt files)")
    for bucket in MIN_COUNTS:
        line = f"  {bucket:<36} {counts[bucket]:>3}  (min {MIN_COUNTS[bucket]})"
        if (bucket, "paraphrase") in styles or (bucket, "echo") in styles:
            line += f"  paraphrase {styles[(bucket, 'paraphrase')]}, echo {styles[(bucket, 'echo')]}"
        print(line)
    print("  needles per document:")
    for name in sorted(texts):
        print(f"    {name:<34} {per_document[name]:>3}")
    if errors:
        print(f"FAIL: {len(errors)} problem(s)")
        for error in errors:
            print("  -", error)
        return 1
    print("OK: every needle occurs exactly once, outside headings, on one line; counts met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Extract: a file's bytes become one canonical text, its title and its sections (`document.Extracted`), by the
reader of the file's kind: `markdown` for Markdown and plain text, `pdf` for PDFs.

A file that cannot be read raises `ExtractionError` with a reason a person understands; nothing here writes
anything. What it does not do: OCR (an image-only PDF fails with that reason).

>>> doc = extract_bytes(b"# Handbook\\n\\n## Upload\\n\\nDrop files here.\\n", "guide.md")
>>> doc.title, [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
('Handbook', [(('Upload',), 'Drop files here.')])
>>> extract_bytes(b"PK", "budget.xlsx")
Traceback (most recent call last):
...
rag.reading.document.ExtractionError: unsupported file type '.xlsx'; supported: .markdown, .md, .pdf, .txt
"""

from __future__ import annotations

from pathlib import Path

from rag.reading import markdown, pdf
from rag.reading.document import ExtractionError, Extracted

SUPPORTED = {".md": "md", ".markdown": "md", ".txt": "txt", ".pdf": "pdf"}
# Each reader's version, stamped on every document it read: a bump re-reads that kind's documents.
EXTRACTOR_VERSIONS = {**markdown.VERSIONS, "pdf": pdf.VERSION}


def kind_of(name: str) -> str | None:
    return SUPPORTED.get(Path(name).suffix.lower())


def extract(path: Path, name: str | None = None, *, max_chars: int = 5_000_000, max_pages: int = 2000) -> Extracted:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ExtractionError(f"cannot read the file: {exc.strerror or exc}") from exc
    return extract_bytes(data, name or Path(path).name, max_chars=max_chars, max_pages=max_pages)


def extract_bytes(data: bytes, name: str, *, max_chars: int = 5_000_000, max_pages: int = 2000) -> Extracted:
    kind = kind_of(name)
    if kind is None:
        raise ExtractionError(
            f"unsupported file type {Path(name).suffix or '(none)'!r}; supported: {', '.join(sorted(SUPPORTED))}"
        )
    if not data:
        raise ExtractionError("the file is empty (0 bytes)")
    if kind == "pdf":
        doc = pdf.extract_pdf(data, name, max_pages)
    else:
        text = markdown.decode_text(data)
        doc = markdown.read_markdown(text, name) if kind == "md" else markdown.read_plain(text, name)
    if not doc.text.strip():
        raise ExtractionError("the file holds no text")
    if len(doc.text) > max_chars:
        raise ExtractionError(
            f"the document has {len(doc.text):,} characters of text; the limit is {max_chars:,} (max_chars)"
        )
    return doc



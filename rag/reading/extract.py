"""Extract: a file's bytes become one canonical text, its title, its sections and its places (`document.Extracted`),
by the reader of the file's format.

`FORMATS` is the one list of what the app reads: the upload box, the folder's indexer, the Library page,
`rag status` and the README's table all take the types from it. Each format names its reader module, and each
reader module has the same small interface: `VERSIONS` (its output's version per kind: a bump re-reads that
kind's documents) and `read(data, name, kind, limits) -> Extracted`. A reader is imported when its first file
comes (the web-page reader alone takes a second to import).

A file that cannot be read raises `ExtractionError` with a reason a person understands; nothing here writes
anything. The old binary Office formats (.doc, .xls, .ppt) are known, and refused with what to do.

>>> doc = extract_bytes(b"# Handbook\\n\\n## Upload\\n\\nDrop files here.\\n", "guide.md")
>>> doc.title, [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
('Handbook', [(('Upload',), 'Drop files here.')])
>>> extract_bytes(b"GIF89a", "chart.gif")
Traceback (most recent call last):
...
rag.reading.document.ExtractionError: unsupported file type '.gif'; supported: .csv, .docm, .docx, .eml, .epub, .htm, .html, .jpeg, .jpg, .markdown, .mbox, .md, .odp, .ods, .odt, .pdf, .png, .pptm, .pptx, .tab, .tif, .tiff, .tsv, .txt, .webp, .xhtml, .xlsm, .xlsx
>>> kind_of("Letter.DOC"), kind_of("notes.md"), kind_of("photo.gif")
('doc', 'md', None)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from rag.reading.document import ExtractionError, Extracted, Limits


@dataclass(frozen=True)
class Format:
    kind: str
    suffixes: tuple[str, ...]
    reader: str  # the module in rag.reading that reads it
    name: str  # what a person calls it
    sections: str  # what becomes a section
    locator: str  # how a citation names the place


FORMATS: tuple[Format, ...] = (
    Format("md", (".md", ".markdown"), "markdown", "Markdown", "headings", "the heading path"),
    Format("txt", (".txt",), "markdown", "Plain text", "heading-like lines", "the heading"),
    Format("pdf", (".pdf",), "pdf", "PDF", "headings, else pages", "p. 4 · the heading"),
    Format("docx", (".docx", ".docm"), "word", "Word", "headings; footnotes apart", "the heading path"),
    Format("odt", (".odt",), "opendocument", "OpenDocument text", "headings; notes apart", "the heading path"),
    Format("html", (".html", ".htm", ".xhtml"), "webpage", "Web page (saved)", "the article's headings",
           "the heading path"),
    Format("epub", (".epub",), "ebook", "E-book", "chapters, from its contents", "the chapter"),
    Format("pptx", (".pptx", ".pptm"), "slides", "PowerPoint", "slides, with their notes", "slide 4"),
    Format("odp", (".odp",), "opendocument", "OpenDocument slides", "slides, with their notes", "slide 4"),
    Format("xlsx", (".xlsx", ".xlsm"), "sheets", "Excel", "sheets; a row per line, with its header",
           "Budget!A14:F16"),
    Format("ods", (".ods",), "opendocument", "OpenDocument sheet", "sheets; a row per line, with its header",
           "Budget!A14:F16"),
    Format("csv", (".csv",), "sheets", "CSV", "the table; a row per line, with its header", "budget!A14:F16"),
    Format("tsv", (".tsv", ".tab"), "sheets", "TSV", "the table; a row per line, with its header",
           "budget!A14:F16"),
    Format("eml", (".eml",), "mail", "E-mail", "the message; its attachments", 'message "Subject" from Ana'),
    Format("mbox", (".mbox",), "mail", "Mailbox", "one per message", 'message "Subject" from Ana'),
    Format("image", (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"), "ocr", "Scan or photo (OCR)",
           "the image; a TIFF's pages", "p. 2 · OCR 91% confident"),
)
SUPPORTED = {suffix: f.kind for f in FORMATS for suffix in f.suffixes}
# Known, and refused with what to do: no maintained reader of these in pure Python is worth its weight.
_OLD_OFFICE = {".doc": ("doc", "Word", ".docx"), ".xls": ("xls", "Excel", ".xlsx"), ".ppt": ("ppt", "PowerPoint", ".pptx")}
_BY_KIND = {f.kind: f for f in FORMATS}


def _reader(kind: str):
    return importlib.import_module(f"rag.reading.{_BY_KIND[kind].reader}")


def version_of(kind: str) -> str:
    """The version of the reader of `kind`, stamped on every document it read: a bump re-reads that kind's
    documents. (Read from the reader module, imported for it.)"""
    if kind not in _BY_KIND:
        return "refused-1"  # the old Office formats: a reader for them would be a new version
    return _reader(kind).VERSIONS[kind]


def kind_of(name: str) -> str | None:
    """The kind of a file by its suffix; None for a type the app neither reads nor refuses with a reason."""
    suffix = Path(name).suffix.lower()
    return SUPPORTED.get(suffix) or (_OLD_OFFICE[suffix][0] if suffix in _OLD_OFFICE else None)


def refusal(name: str) -> str | None:
    """Why a file of this name is not read ("" never): its type unknown, or an old Office format; None when read."""
    suffix = Path(name).suffix.lower()
    if suffix in _OLD_OFFICE:
        _, app, new = _OLD_OFFICE[suffix]
        return f"the old {app} format ({suffix}) is not read: open it in {app} or LibreOffice and save it as {new}"
    if suffix not in SUPPORTED:
        return f"unsupported file type {suffix or '(none)'!r}; supported: {', '.join(sorted(SUPPORTED))}"
    return None


def ocr_missing() -> str | None:
    """Why scans and images are not read here (Tesseract missing), said once by `rag status` and the Library
    page; None when OCR works."""
    from rag.reading import ocr

    return ocr.available()


def format_names() -> str:
    """The formats read, as a person names them: "Markdown, Plain text, PDF, Word, ..."."""
    return ", ".join(dict.fromkeys(f.name for f in FORMATS))


def extract(path: Path, name: str | None = None, *, max_chars: int = 5_000_000, max_pages: int = 2000,
            ocr_cache: Path | None = None) -> Extracted:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ExtractionError(f"cannot read the file: {exc.strerror or exc}") from exc
    return extract_bytes(data, name or Path(path).name, max_chars=max_chars, max_pages=max_pages, ocr_cache=ocr_cache)


def extract_bytes(data: bytes, name: str, *, max_chars: int = 5_000_000, max_pages: int = 2000,
                  ocr_cache: Path | None = None) -> Extracted:
    """The document in `data`, read by its format's reader; `ocr_cache`: a folder keeping OCR'd pages' words."""
    if reason := refusal(name):
        raise ExtractionError(reason)
    kind = SUPPORTED[Path(name).suffix.lower()]
    if not data:
        raise ExtractionError("the file is empty (0 bytes)")
    limits = Limits(max_chars=max_chars, max_pages=max_pages, ocr_cache=ocr_cache)
    reader = _reader(kind)
    if kind in ("eml", "mbox"):  # an e-mail's attachments are read by their own readers
        doc = reader.read(data, name, kind, limits, read_attachment=lambda d, n: _attachment(d, n, limits))
    else:
        doc = reader.read(data, name, kind, limits)
    if not doc.text.strip():
        raise ExtractionError("the file holds no text")
    if len(doc.text) > max_chars:
        raise ExtractionError(
            f"the document has {len(doc.text):,} characters of text; the limit is {max_chars:,} (max_chars)"
        )
    return doc


def _attachment(data: bytes, name: str, limits: Limits) -> Extracted | None:
    """An e-mail attachment as a document of its own; None for a type the app does not read (an e-mail inside an
    e-mail is the mail reader's own business)."""
    kind = SUPPORTED.get(Path(name).suffix.lower())
    if kind is None or kind in ("eml", "mbox"):
        return None
    return extract_bytes(data, name, max_chars=limits.max_chars, max_pages=limits.max_pages, ocr_cache=limits.ocr_cache)

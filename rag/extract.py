"""Extract: a file's bytes become one canonical text, its title and its sections (and, for PDFs, pages).

Every offset elsewhere in the engine (chunk start/end, `#char=` fragments, the page of a chunk) is a
position in `Extracted.text`. For Markdown and plain text that text is the file itself with line endings
normalised to `\\n`, so a `#char=a,b` fragment points into the file as the person sees it. For PDFs it is
the pages' text blocks joined by blank lines (a block that goes on with the sentence of the one above it,
a printed line in a block of its own, is joined to it with a space instead, and so is a sentence that goes
on over a page break), with page headers and footers that repeat on most pages dropped, plus `page_starts`
to map an offset back to its page (`rag.pdf` reads PDFs).

What it does not do: OCR (an image-only PDF fails with that reason), guess encodings (text must be
UTF-8), or keep formatting. A file that cannot be read raises `ExtractionError` with a reason a person
understands; nothing here writes anything.

Plain text has no markup: its title is a short first line, and its headings are read from their shape
(`_plain_headings`). Markdown structure comes from markdown-it-py's CommonMark block parser: ATX and
setext headings are sections (a setext underline belongs to its heading), nothing inside a code fence is
ever a heading, and YAML front matter at the top of a file is in the text (offsets stay positions in the
file) but in no section, so no chunk quotes it; its `title:` names a document that has no `#` heading.

>>> doc = extract_bytes(b"# Handbook\\n\\n## Upload\\n\\nDrop files here.\\n", "guide.md")
>>> doc.title, [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
('Handbook', [(('Upload',), 'Drop files here.')])
>>> doc = extract_bytes(b"---\\ntitle: Notes\\ntags: [a]\\n---\\nUpload\\n------\\nDrop files.\\n", "n.md")
>>> doc.title, [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
('Notes', [(('Upload',), 'Drop files.')])
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

SUPPORTED = {".md": "md", ".markdown": "md", ".txt": "txt", ".pdf": "pdf"}
EXTRACTOR_VERSIONS = {"md": "md-3", "txt": "txt-3", "pdf": "pdf-6"}  # txt-2: headings read from lines' shape;
# pdf-4: ligatures read as their letters, combining accents composed, columns one after the other (rag.pdf);
# md-3, txt-3, pdf-5: a document's language identified among every language the app reads (rag.languages),
# not only English and Portuguese, so its chunks are analysed again;
# pdf-6: a column's footnotes after the columns, a table's rows apart, numbered headings found in the
# outline, a compound the document prints whole kept at a line-end hyphen (LaTeX papers, rag.pdf).
TITLE_MAX = 80  # a first line longer than this is a paragraph, not a title


class ExtractionError(Exception):
    """A file that cannot become text; `reason` is shown to the person as it is."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Section:
    start: int  # body of the section in the canonical text, heading lines excluded
    end: int
    path: tuple[str, ...]  # headings below the title, outermost first; () for text before any heading


@dataclass
class Extracted:
    name: str
    kind: str  # "md", "txt" or "pdf"
    title: str
    text: str
    sections: list[Section]
    version: str
    page_starts: list[int] = field(default_factory=list)  # PDFs: offset where each page's text begins
    pages: int = 0
    empty_pages: int = 0  # PDF pages with no extractable text (scans)
    warnings: list[str] = field(default_factory=list)

    def page_at(self, offset: int) -> int | None:
        """1-based page holding `offset`, or None for text documents."""
        if not self.page_starts:
            return None
        return max(1, bisect.bisect_right(self.page_starts, offset))


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
        from rag.pdf import extract_pdf  # here, not at the top: rag.pdf builds this module's Extracted

        doc = extract_pdf(data, name, max_pages)
    else:
        text = _decode_text(data)
        doc = _extract_markdown(text, name) if kind == "md" else _extract_plain(text, name)
    if not doc.text.strip():
        raise ExtractionError("the file holds no text")
    if len(doc.text) > max_chars:
        raise ExtractionError(
            f"the document has {len(doc.text):,} characters of text; the limit is {max_chars:,} (max_chars)"
        )
    return doc


# --- plain text and Markdown -------------------------------------------------------------------------


def _decode_text(data: bytes) -> str:
    if b"\x00" in data:
        raise ExtractionError("binary file (contains NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionError(
            f"not UTF-8 text (invalid byte at position {exc.start}); save the file as UTF-8 and retry"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


@functools.lru_cache(maxsize=1)
def _markdown_parser() -> MarkdownIt:
    # Only block structure is needed; skipping inline parsing keeps a large file cheap. `parse` keeps its
    # state per call, so one parser serves every thread.
    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def clean_heading(text: str) -> str:
    # Headings go into chunk headers: keep them short and free of Markdown decoration.
    text = re.sub(r"[*_`]+", "", text)
    text = " ".join(text.split())  # a setext heading may span several lines
    return text[:TITLE_MAX].rstrip()


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _front_matter(lines: list[str]) -> tuple[int, dict] | None:
    """(lines the YAML front matter takes, its mapping), or None when the file does not start with one.

    Front matter is a `---` first line, a closing `---` or `...` line, and between them YAML that loads
    as a mapping (or nothing at all). Anything else (`---` as a thematic break, text that is not YAML)
    is left to the Markdown parser.
    """
    if not lines or lines[0].rstrip() != "---":
        return None
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if close is None:
        return None
    body = "\n".join(lines[1:close])
    if not body.strip():
        return close + 1, {}
    try:
        meta = yaml.safe_load(body)
    except Exception:  # YAMLError, and anything odd a constructor raises: then it is not front matter
        return None
    return (close + 1, meta) if isinstance(meta, dict) else None


def _extract_markdown(text: str, name: str) -> Extracted:
    lines = text.split("\n")
    starts = _line_starts(text)

    def offset(line_no: int) -> int:  # where a line begins; past the last line, the end of the text
        return starts[line_no] if line_no < len(starts) else len(text)

    fm_lines, fm_title = 0, ""
    front = _front_matter(lines)
    if front:
        fm_lines, meta = front
        if isinstance(meta.get("title"), str):
            fm_title = clean_heading(meta["title"])
    body_from = offset(fm_lines)  # the front matter, if any, is in the text but in no section

    headings: list[tuple[int, int, int, str]] = []  # (first line start, body start after it, level, text)
    tokens = _markdown_parser().parse(text[body_from:])
    for i, tok in enumerate(tokens):
        # Top-level headings only: a heading inside a quote or a list item is part of that block.
        if tok.type != "heading_open" or tok.level != 0 or not tok.map:
            continue
        heading = clean_heading(tokens[i + 1].content if i + 1 < len(tokens) else "")
        if not heading:  # an empty `#` line stays text, as it reads
            continue
        first, after = tok.map[0] + fm_lines, tok.map[1] + fm_lines
        headings.append((offset(first), offset(after), int(tok.tag[1]), heading))

    if not headings:
        # A Markdown file with no headings is plain text with a title line, maybe.
        if fm_title:
            title, body = fm_title, body_from
        else:
            title, rel = title_from_first_line(text[body_from:], name)
            body = body_from + rel
        return Extracted(name=name, kind="md", title=title, text=text, sections=[Section(body, len(text), ())],
                         version=EXTRACTOR_VERSIONS["md"])
    # The title: the first `#` heading, else the front matter's title, else the first heading.
    title_heading = next((h for h in headings if h[2] == 1), None if fm_title else headings[0])
    title = title_heading[3] if title_heading else fm_title

    sections: list[Section] = []
    stack: list[tuple[int, int, int, str]] = []
    body_start, path = body_from, ()
    for h in headings:
        if text[body_start:h[0]].strip():
            sections.append(Section(body_start, h[0], path))
        stack = [s for s in stack if s[2] < h[2]] + [h]
        # The title heading names the document; it is not a section of it.
        path = tuple(s[3] for s in stack if s is not title_heading)
        body_start = h[1]
    sections.append(Section(body_start, len(text), path))
    sections = [s for s in sections if text[s.start:s.end].strip()]
    return Extracted(name=name, kind="md", title=title, text=text, sections=sections, version=EXTRACTOR_VERSIONS["md"])


def title_from_first_line(text: str, name: str) -> tuple[str, int]:
    """(title, offset where the body starts). A title is a short first line; never a paragraph."""
    stripped = text.lstrip("\n")
    lead = len(text) - len(stripped)
    first, sep, rest = stripped.partition("\n")
    line = first.strip().lstrip("#").strip()
    # A short line standing alone (followed by a blank line, or the rest) reads as a title.
    if line and len(line) <= TITLE_MAX and sep and rest.strip() and (rest.startswith("\n") or len(line) <= 60) \
            and not line.endswith((".", ",", ";", ":")):
        return clean_heading(line), lead + len(first) + 1
    return Path(name).stem.replace("_", " ").replace("-", " ").strip() or Path(name).name, 0


def _extract_plain(text: str, name: str, kind: str = "txt") -> Extracted:
    title, body = title_from_first_line(text, name)
    sections, start, path = [], body, ()
    for a, b, heading in _plain_headings(text, body):
        if text[start:a].strip():
            sections.append(Section(start, a, path))
        start, path = min(b + 1, len(text)), (heading,)
    sections.append(Section(start, len(text), path))
    return Extracted(name=name, kind=kind, title=title, text=text, sections=sections,
                     version=EXTRACTOR_VERSIONS[kind])


_NOT_A_HEADING_END = tuple(".,;:!?…")
_SENTENCE_LIKE_END = tuple('.!?…:;"»)')


def _plain_headings(text: str, body: int) -> list[tuple[int, int, str]]:
    r"""(start, end, text) of the heading lines of a plain-text file, from offset `body` on.

    Plain text has no markup, so a heading is read from its shape: a short line (at most TITLE_MAX
    characters) that starts a paragraph, ends without punctuation, and is followed by a longer line that
    ends like a sentence, as in contracts and reports ("CLÁUSULA TERCEIRA (Prazo)" over its clause). A
    lone short line (an address, a signature) or a list item is not one.

    >>> t = "Contract\n\nCLÁUSULA PRIMEIRA (Objeto)\nThe flat on the second floor is let as a home.\n"
    >>> [h for _, _, h in _plain_headings(t, 10)]
    ['CLÁUSULA PRIMEIRA (Objeto)']
    >>> _plain_headings("Notes\n\nRua das Flores 45\n4050 Porto\n\nSigned:\nThe tenant signs here.\n", 7)
    []
    """
    lines, pos = [], body
    for line in text[body:].split("\n"):
        lines.append((pos, pos + len(line), line.strip()))
        pos += len(line) + 1
    out = []
    for i, (a, b, line) in enumerate(lines):
        if not line or (i and lines[i - 1][2]) or len(line) > TITLE_MAX or line.endswith(_NOT_A_HEADING_END):
            continue
        if line[0] in "-*•|>#" or not any(ch.isalpha() for ch in line):
            continue
        after = next((x for _, _, x in lines[i + 1:i + 3] if x), "")
        if len(after) > len(line) and after.endswith(_SENTENCE_LIKE_END):
            out.append((a, b, line))
    return out

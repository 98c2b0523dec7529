"""Extract: a file's bytes become one canonical text, its title and its sections (and, for PDFs, pages).

Every offset elsewhere in the engine (chunk start/end, `#char=` fragments, the page of a chunk) is a
position in `Extracted.text`. For Markdown and plain text that text is the file itself with line endings
normalised to `\\n`, so a `#char=a,b` fragment points into the file as the person sees it. For PDFs it is
the pages' text blocks joined by blank lines (a block that goes on with the sentence of the one above it,
a printed line in a block of its own, is joined to it with a space instead, and so is a sentence that goes
on over a page break), with page headers and footers that repeat on most pages dropped, plus `page_starts`
to map an offset back to its page.

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
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

SUPPORTED = {".md": "md", ".markdown": "md", ".txt": "txt", ".pdf": "pdf"}
EXTRACTOR_VERSIONS = {"md": "md-2", "txt": "txt-2", "pdf": "pdf-3"}  # txt-2: headings read from lines' shape
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
        doc = _extract_pdf(data, name, max_pages)
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


def _clean_heading(text: str) -> str:
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
            fm_title = _clean_heading(meta["title"])
    body_from = offset(fm_lines)  # the front matter, if any, is in the text but in no section

    headings: list[tuple[int, int, int, str]] = []  # (first line start, body start after it, level, text)
    tokens = _markdown_parser().parse(text[body_from:])
    for i, tok in enumerate(tokens):
        # Top-level headings only: a heading inside a quote or a list item is part of that block.
        if tok.type != "heading_open" or tok.level != 0 or not tok.map:
            continue
        heading = _clean_heading(tokens[i + 1].content if i + 1 < len(tokens) else "")
        if not heading:  # an empty `#` line stays text, as it reads
            continue
        first, after = tok.map[0] + fm_lines, tok.map[1] + fm_lines
        headings.append((offset(first), offset(after), int(tok.tag[1]), heading))

    if not headings:
        # A Markdown file with no headings is plain text with a title line, maybe.
        if fm_title:
            title, body = fm_title, body_from
        else:
            title, rel = _title_from_first_line(text[body_from:], name)
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


def _title_from_first_line(text: str, name: str) -> tuple[str, int]:
    """(title, offset where the body starts). A title is a short first line; never a paragraph."""
    stripped = text.lstrip("\n")
    lead = len(text) - len(stripped)
    first, sep, rest = stripped.partition("\n")
    line = first.strip().lstrip("#").strip()
    # A short line standing alone (followed by a blank line, or the rest) reads as a title.
    if line and len(line) <= TITLE_MAX and sep and rest.strip() and (rest.startswith("\n") or len(line) <= 60) \
            and not line.endswith((".", ",", ";", ":")):
        return _clean_heading(line), lead + len(first) + 1
    return Path(name).stem.replace("_", " ").replace("-", " ").strip() or Path(name).name, 0


def _extract_plain(text: str, name: str, kind: str = "txt") -> Extracted:
    title, body = _title_from_first_line(text, name)
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


# --- PDF -------------------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _normalise_block(text: str) -> str:
    # Lines inside a block are wrapped prose: join them, keeping words apart; undo "exam-\nple".
    text = _CONTROL.sub("", unicodedata.normalize("NFC", text))
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)
    return re.sub(r"\s*\n\s*", " ", text).strip()


_SENTENCE_END = ".!?:;"


def _continues(prev: tuple[float, float, float, float], prev_size: float, prev_text: str,
               box: tuple[float, float, float, float], size: float) -> bool:
    """Whether the text block at `box` goes on with the sentence of the block at `prev` (the one before
    it on the page): some PDFs put every printed line in a block of its own, and joining their blocks
    with blank lines would cut sentences into paragraphs. It does when `prev` ends mid-sentence, the two
    share a font size, and `box` sits right under `prev` (less than a line's height between them: pymupdf
    splits lines set at 1.5 or double spacing into blocks of one line each),
    starting where it starts (within two ems) and reaching no more than six ems further right (ragged
    lines differ by a word or two; a heading, much shorter than the line under it, stays apart).

    >>> _continues((72, 60, 520, 74), 11, "documents do not", (72, 76, 300, 90), 11)
    True
    >>> _continues((72, 60, 520, 74), 11, "the end.", (72, 76, 300, 90), 11)  # a sentence ended
    False
    >>> _continues((72, 60, 200, 78), 14, "Cosine distance in brief", (72, 82, 520, 96), 11)  # a heading
    False
    """
    if not prev_text.rstrip() or prev_text.rstrip()[-1] in _SENTENCE_END or not size or abs(prev_size - size) > 0.5:
        return False
    gap = box[1] - prev[3]
    return -0.2 * size <= gap < 1.2 * size and abs(box[0] - prev[0]) <= 2 * size and prev[2] >= box[2] - 6 * size


def _page_break(last: tuple | None, first: tuple | None) -> str:
    """What joins two pages' text: a space when the next page's first block goes on with the sentence of
    the last block before it (a paragraph, longer than a title, with no sentence end; the same font size;
    the same left edge within two ems), else a blank line. Blocks: (text, largest font size, in a margin,
    left edge).

    >>> para = "A parcel that arrives damaged may be sent back within thirty days, and the refund is paid"
    >>> _page_break((para, 11, False, 72), ("within five days.", 11, False, 72))
    ' '
    >>> _page_break((para + ".", 11, False, 72), ("Exchanges", 11, False, 72))
    '\\n\\n'
    >>> _page_break(("Returns and refunds", 11, False, 72), ("A parcel that...", 11, False, 72))  # a heading
    '\\n\\n'
    """
    if last is None or first is None or len(last[0]) <= TITLE_MAX or last[0].rstrip()[-1] in _SENTENCE_END:
        return "\n\n"
    same = first[1] and abs(last[1] - first[1]) <= 0.5 and abs(last[3] - first[3]) <= 2 * first[1]
    return " " if same else "\n\n"


def _union(a: tuple, b: tuple) -> tuple:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _join_continued(blocks, join) -> list[tuple]:
    """A page's blocks, (content, largest font size, bbox, last line's text) in reading order, with each
    block that goes on with the sentence of the one before it (`_continues`) joined to it by
    `join(before, after)`. The extractor's content is the block's lines; the viewer's, its characters and
    their boxes: one rule for both, so their texts (and so every offset) agree.

    >>> _join_continued([(["documents do not"], 11, (72, 60, 520, 74), "documents do not"),
    ...                  (["support it."], 11, (72, 76, 300, 90), "support it.")], lambda a, b: a + b)
    [(['documents do not', 'support it.'], 11, (72, 60, 520, 90), 'support it.')]
    """
    out: list[tuple] = []
    for content, big, box, last in blocks:
        if out and _continues(out[-1][2], out[-1][1], out[-1][3], box, big):
            before, before_big, before_box, _ = out[-1]
            out[-1] = (join(before, content), max(before_big, big), _union(before_box, box), last)
        else:
            out.append((content, big, box, last))
    return out


def _furniture_key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.lower())).strip()


def _extract_pdf(data: bytes, name: str, max_pages: int) -> Extracted:
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except pymupdf.EmptyFileError:
        raise ExtractionError("the file is empty (0 bytes)") from None
    except Exception as exc:  # FileDataError and friends: the bytes are not a PDF pymupdf can repair
        raise ExtractionError(f"not a readable PDF (damaged, or not a PDF at all): {exc}") from None
    with doc:
        if not doc.is_pdf:
            raise ExtractionError("not a PDF: the file is another kind of document (an image?) named .pdf")
        if doc.needs_pass:
            raise ExtractionError("the PDF is encrypted with a password; open it, save an unprotected copy, retry")
        if doc.page_count > max_pages:
            raise ExtractionError(f"the PDF has {doc.page_count:,} pages; the limit is {max_pages:,} (max_pages)")
        if doc.page_count == 0:
            raise ExtractionError("the PDF has no pages")
        warnings = ["the PDF was damaged and has been repaired while reading; check its text"] if doc.is_repaired else []
        pages: list[list[tuple]] = []  # per page: (block text, largest font size, in a margin, left edge)
        sizes: Counter[float] = Counter()
        try:
            for page in doc:
                raw: list[tuple] = []  # (lines, largest font size, bbox, last line)
                height = page.rect.height or 1.0
                for b in page.get_text("dict", sort=True)["blocks"]:
                    if b.get("type") != 0:
                        continue
                    lines = []
                    big = 0.0
                    for line in b["lines"]:
                        t = "".join(s["text"] for s in line["spans"])
                        for s in line["spans"]:
                            if s["text"].strip():
                                sizes[round(s["size"], 1)] += len(s["text"])
                                big = max(big, s["size"])
                        lines.append(t)
                    if lines:
                        raw.append((lines, big, tuple(b["bbox"]), lines[-1]))
                blocks = []
                for lines, big, (x0, y0, _, y1), _ in _join_continued(raw, lambda a, b: a + b):
                    text = _normalise_block("\n".join(lines))
                    if text:
                        blocks.append((text, big, y1 < 0.12 * height or y0 > 0.88 * height, x0))
                pages.append(blocks)
            toc = doc.get_toc(simple=True)
            meta_title = _clean_heading((doc.metadata or {}).get("title") or "")
        except Exception as exc:
            raise ExtractionError(f"the PDF could not be read: {exc}") from None

    pages = _drop_furniture(pages)
    empty = sum(1 for p in pages if not p)
    if empty == len(pages):
        raise ExtractionError(
            f"no extractable text on any of its {len(pages)} page(s): a scanned or image-only PDF (OCR is not supported)"
        )
    body_size = sizes.most_common(1)[0][0] if sizes else 0.0

    parts: list[str] = []
    page_starts: list[int] = []
    heads: list[tuple[int, int, int, str]] = []  # (block start, block end, level, text)
    pos = 0
    toc_by_page: dict[int, list[tuple[int, str]]] = {}
    for lvl, title, pno in toc:
        toc_by_page.setdefault(pno, []).append((lvl, _clean_heading(title)))
    last = None  # the last block written, for a sentence that goes on over the page break
    for pno, blocks in enumerate(pages, start=1):
        if parts:
            sep = _page_break(last, blocks[0] if blocks else None)
            parts.append(sep)
            pos += len(sep)
        page_starts.append(pos)
        wanted = list(toc_by_page.get(pno, []))
        last = blocks[-1] if blocks else None
        for i, (text, big, *_) in enumerate(blocks):
            if i:
                parts.append("\n\n")
                pos += 2
            if toc:
                for w in wanted:
                    if _furniture_key(text).startswith(_furniture_key(w[1])[:40]) and len(text) <= len(w[1]) + 20:
                        heads.append((pos, pos + len(text), w[0], w[1]))
                        wanted.remove(w)
                        break
            elif body_size and big >= body_size * 1.15 and len(text) <= TITLE_MAX and not text.endswith("."):
                level = 1 if big >= body_size * 1.4 else 2
                heads.append((pos, pos + len(text), level, _clean_heading(text)))
            parts.append(text)
            pos += len(text)
        for lvl, t in wanted:  # an outline entry whose heading text was not found: section starts at the page
            heads.append((page_starts[-1], page_starts[-1], lvl, t))
    text = "".join(parts)
    heads.sort()

    # The title: the PDF's own, else a lone top-level outline entry or the one big-font heading.
    tops = [h[3] for h in heads if h[2] == 1]
    title = meta_title or (tops[0] if len(tops) == 1 else "") or \
        _title_from_first_line("" if heads else text, name)[0]
    sections: list[Section] = []
    if heads:
        stack: list[tuple[int, str]] = []
        start, path = 0, ()
        for h in heads:
            if text[start:h[0]].strip():
                sections.append(Section(start, h[0], path))
            stack = [s for s in stack if s[0] < h[2]] + [(h[2], h[3])]
            path = tuple(t for lvl, t in stack if not (lvl == 1 and t == title))
            start = min(h[1] + (2 if h[1] > h[0] else 0), len(text))
        sections.append(Section(start, len(text), path))
    else:
        # No outline and no heading fonts: each page is its own section.
        for i, s in enumerate(page_starts):
            e = page_starts[i + 1] - 2 if i + 1 < len(page_starts) else len(text)
            sections.append(Section(s, e, (f"Page {i + 1}",)))
    sections = [s for s in sections if text[s.start:s.end].strip()]
    return Extracted(name=name, kind="pdf", title=title, text=text, sections=sections,
                     version=EXTRACTOR_VERSIONS["pdf"], page_starts=page_starts, pages=len(pages),
                     empty_pages=empty, warnings=warnings)


def _drop_furniture(pages: list[list[tuple]]) -> list[list[tuple]]:
    """Drop running headers and footers: blocks in the top or bottom margin whose digit-blind text
    repeats on most pages ("Handbook — page 3" and "Handbook — page 4" are the same furniture)."""
    if len(pages) < 3:
        return pages
    seen: Counter[str] = Counter()
    for blocks in pages:
        seen.update({_furniture_key(b[0]) for b in blocks if b[2]})
    limit = max(3, int(0.6 * len(pages)))
    furniture = {k for k, n in seen.items() if n >= limit and len(k) <= 120}
    if not furniture:
        return pages
    return [[b for b in blocks if not (b[2] and _furniture_key(b[0]) in furniture)] for blocks in pages]

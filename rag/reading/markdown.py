"""The reader for Markdown and plain text: the file itself is the canonical text, line endings normalised to `\n`,
so a `#char=a,b` fragment points into the file as the person sees it.

Plain text has no markup: its title is a short first line, and its headings are read from their shape
(`_plain_headings`). Markdown structure comes from markdown-it-py's CommonMark block parser: ATX and
setext headings are sections (a setext underline belongs to its heading), nothing inside a code fence is
ever a heading, and YAML front matter at the top of a file is in the text (offsets stay positions in the
file) but in no section, so no chunk quotes it; its `title:` names a document that has no `#` heading.

What it does not do: guess encodings (text must be UTF-8) or keep formatting.

>>> doc = read_markdown("# Handbook\\n\\n## Upload\\n\\nDrop files here.\\n", "guide.md")
>>> doc.title, [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
('Handbook', [(('Upload',), 'Drop files here.')])
>>> doc = read_markdown("---\\ntitle: Notes\\ntags: [a]\\n---\\nUpload\\n------\\nDrop files.\\n", "n.md")
>>> doc.title, [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]
('Notes', [(('Upload',), 'Drop files.')])
"""

from __future__ import annotations

import functools
import re

import yaml
from markdown_it import MarkdownIt

from rag.reading.document import (TITLE_MAX, ExtractionError, Extracted, Limits, Section, clean_heading,
                                  title_from_first_line)

# txt-2: headings read from lines' shape; md-3, txt-3: a document's language identified among every language
# the app reads (rag.text.languages), not only English and Portuguese, so its chunks are analysed again; md-4, txt-4:
# headings keep their words' underscores (document.clean_heading).
VERSIONS = {"md": "md-4", "txt": "txt-4"}


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """A Markdown ("md") or plain-text ("txt") file's bytes as a document."""
    text = decode_text(data)
    return read_markdown(text, name) if kind == "md" else read_plain(text, name)


def decode_text(data: bytes) -> str:
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


def read_markdown(text: str, name: str) -> Extracted:
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
                         version=VERSIONS["md"])
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
    return Extracted(name=name, kind="md", title=title, text=text, sections=sections, version=VERSIONS["md"])


def read_plain(text: str, name: str, kind: str = "txt") -> Extracted:
    title, body = title_from_first_line(text, name)
    sections, start, path = [], body, ()
    for a, b, heading in _plain_headings(text, body):
        if text[start:a].strip():
            sections.append(Section(start, a, path))
        start, path = min(b + 1, len(text)), (heading,)
    sections.append(Section(start, len(text), path))
    return Extracted(name=name, kind=kind, title=title, text=text, sections=sections,
                     version=VERSIONS[kind])


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



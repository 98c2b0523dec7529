"""The document every reader returns: one canonical text, its title, its sections and, for a paged format, where
each page begins.

Every offset elsewhere in the engine (chunk start/end, `#char=` fragments, the page of a chunk) is a position in
`Extracted.text`, so `text[start:end]` is exactly what a citation quotes. A file that cannot be read raises
`ExtractionError` with a reason a person understands.

>>> doc = Extracted(name="n.txt", kind="txt", title="Notes", text="Notes\\n\\nRent: 850.", sections=[Section(7, 17, ())],
...                 version="txt-3")
>>> doc.text[doc.sections[0].start:doc.sections[0].end], doc.page_at(8)
('Rent: 850.', None)
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

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


def clean_heading(text: str) -> str:
    # Headings go into chunk headers: keep them short and free of Markdown decoration.
    text = re.sub(r"[*_`]+", "", text)
    text = " ".join(text.split())  # a setext heading may span several lines
    return text[:TITLE_MAX].rstrip()


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



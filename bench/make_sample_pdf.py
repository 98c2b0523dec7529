"""Generate data/threshold-and-refusals.pdf from data/threshold-and-refusals.md.

The PDF is the sample folder's only PDF, so it is built to exercise the PDF
path of the app: several A4 pages, 11pt body text, bold headings (16pt for
``#``, 13pt for ``##``), a repeating footer on every page, and an outline
(table of contents) whose ``##`` entries point to the page each section
starts on.

Text is wrapped here and drawn with ``pymupdf.TextWriter`` and the built-in
Helvetica, so ``page.get_text()`` returns the paragraphs cleanly (no
ligature characters, no hyphenation). Metadata is fixed and no dates are written, so
re-running the script gives the same text (and, with the same pymupdf
version, the same bytes).

Usage:  python bench/make_sample_pdf.py [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "data" / "threshold-and-refusals.md"
TARGET = ROOT / "data" / "threshold-and-refusals.pdf"

FOOTER = "Folder chat handbook \u2014 page {n}"
PAGE = pymupdf.paper_rect("a4")  # 595 x 842 pt
MARGIN_X = 85
MARGIN_TOP = 72
MARGIN_BOTTOM = 100  # room for the footer
CONTENT = pymupdf.Rect(MARGIN_X, MARGIN_TOP, PAGE.width - MARGIN_X, PAGE.height - MARGIN_BOTTOM)

# Fonts and sizes. TextWriter with the built-in Helvetica draws glyphs one by
# one (no shaping), so no "fi"/"ff" ligatures end up in the extracted text.
BODY_FONT = pymupdf.Font("helv")
BOLD_FONT = pymupdf.Font("hebo")
STYLES = {
    # tag: (font, size, line height, space before, space after)
    "h1": (BOLD_FONT, 16.0, 21.0, 0.0, 12.0),
    "h2": (BOLD_FONT, 13.0, 18.0, 14.0, 6.0),
    "h3": (BOLD_FONT, 11.5, 16.0, 10.0, 4.0),
    "p": (BODY_FONT, 11.0, 17.0, 0.0, 10.0),
}
FOOTER_SIZE = 9.0
FOOTER_COLOR = (0.35, 0.35, 0.35)

METADATA = {
    "title": "The threshold and refusals",
    "author": "Folder Chat",
    "subject": "Folder chat handbook",
    "keywords": "threshold, cosine distance, refusal",
    "creator": "bench/make_sample_pdf.py",
    "producer": "pymupdf",
    "creationDate": "",
    "modDate": "",
    "format": "PDF 1.7",
    "encryption": None,
    "trapped": "",
}


def parse_markdown(text: str) -> list[tuple[str, str]]:
    """Split the (simple) Markdown source into ("h1"|"h2"|"h3"|"p", text) blocks."""
    blocks: list[tuple[str, str]] = []
    for raw in re.split(r"\n\s*\n", text.strip()):
        lines = [line.strip() for line in raw.strip().splitlines() if line.strip()]
        if not lines:
            continue
        match = re.match(r"^(#{1,3})\s+(.*)$", lines[0])
        if match and len(lines) == 1:
            blocks.append((f"h{len(match.group(1))}", match.group(2).strip()))
        else:
            blocks.append(("p", " ".join(lines)))
    return blocks


def strip_inline(text: str) -> str:
    """Remove the little inline Markdown there is (code spans, emphasis)."""
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<!\w)\*([^*]+)\*(?!\w)", r"\1", text)
    return text


def wrap(text: str, font: pymupdf.Font, size: float, width: float) -> list[str]:
    """Greedy word wrap: split text into lines no wider than width."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and font.text_length(candidate, fontsize=size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


def layout(blocks: list[tuple[str, str]]) -> tuple[list[list[tuple]], list[tuple[int, str, int, float]]]:
    """Place every line on a page.

    Returns (pages, headings): pages is a list of pages, each a list of
    (x, baseline_y, text, font, size) lines; headings is a list of
    (level, title, page_number, top_y).
    """
    width = CONTENT.width
    pages: list[list[tuple]] = [[]]
    headings: list[tuple[int, str, int, float]] = []
    y = CONTENT.y0
    for index, (tag, raw) in enumerate(blocks):
        font, size, leading, before, after = STYLES[tag]
        lines = wrap(strip_inline(raw), font, size, width)
        if y > CONTENT.y0:
            y += before
        needed = len(lines) * leading
        if tag.startswith("h") and index + 1 < len(blocks):
            # Keep a heading together with the first two lines that follow it.
            next_leading = STYLES[blocks[index + 1][0]][2]
            needed += after + 2 * next_leading
        if y + needed > CONTENT.y1 and y > CONTENT.y0 and tag.startswith("h"):
            pages.append([])
            y = CONTENT.y0
        if tag.startswith("h"):
            headings.append((int(tag[1]), strip_inline(raw), len(pages), y))
        for line in lines:
            if y + leading > CONTENT.y1:
                pages.append([])
                y = CONTENT.y0
            baseline = y + size + (leading - size) / 2
            pages[-1].append((CONTENT.x0, baseline, line, font, size))
            y += leading
        y += after
    return pages, headings


def build(blocks: list[tuple[str, str]]) -> bytes:
    pages, headings = layout(blocks)
    doc = pymupdf.open()
    for number, lines in enumerate(pages, start=1):
        page = doc.new_page(width=PAGE.width, height=PAGE.height)
        writer = pymupdf.TextWriter(page.rect)
        for x, baseline, text, font, size in lines:
            writer.append((x, baseline), text, font=font, fontsize=size)
        writer.write_text(page)
        footer = FOOTER.format(n=number)
        footer_width = BODY_FONT.text_length(footer, fontsize=FOOTER_SIZE)
        writer = pymupdf.TextWriter(page.rect, color=FOOTER_COLOR)
        writer.append(((PAGE.width - footer_width) / 2, PAGE.height - 45), footer, font=BODY_FONT, fontsize=FOOTER_SIZE)
        writer.write_text(page)

    # Outline: the title (level 1) and every ## section (level 2) on its page.
    toc: list[list] = []
    for level, title, page_number, top in headings:
        if level > 2:
            continue
        toc.append([level, title, page_number, {"kind": pymupdf.LINK_GOTO, "to": pymupdf.Point(CONTENT.x0, top), "zoom": 0}])
    doc.set_toc(toc)
    doc.set_metadata(METADATA)
    doc.subset_fonts()
    data = doc.tobytes(garbage=4, deflate=True, no_new_id=True)
    doc.close()
    return data


def normalise(text: str) -> str:
    return " ".join(text.replace("\u00ad", "").split())


def check(pdf_path: Path, blocks: list[tuple[str, str]]) -> list[str]:
    """Return a list of problems (empty when the PDF is good)."""
    problems: list[str] = []
    doc = pymupdf.open(pdf_path)
    if doc.page_count < 3:
        problems.append(f"only {doc.page_count} pages")
    if abs(doc[0].rect.width - PAGE.width) > 1 or abs(doc[0].rect.height - PAGE.height) > 1:
        problems.append(f"page size {doc[0].rect} is not A4")
    toc = doc.get_toc()
    if not toc:
        problems.append("empty outline")
    pages_text = [page.get_text() for page in doc]
    for index, text in enumerate(pages_text, start=1):
        if FOOTER.format(n=index) not in text:
            problems.append(f"footer missing on page {index}")
    # Body text without footers, joined across pages.
    body = normalise(" ".join(
        text.replace(FOOTER.format(n=i), " ") for i, text in enumerate(pages_text, start=1)
    ))
    for tag, text in blocks:
        wanted = normalise(strip_inline(text))
        if wanted not in body:
            problems.append(f"{tag} not extracted verbatim: {wanted[:60]!r}")
    # Every ## section is in the outline and points to the page that shows it.
    sections = [text for tag, text in blocks if tag == "h2"]
    toc_titles = {title: page for level, title, page, *_ in toc if level == 2}
    for title in sections:
        page = toc_titles.get(title)
        if page is None:
            problems.append(f"section missing from outline: {title!r}")
        elif title not in normalise(pages_text[page - 1]):
            problems.append(f"outline points {title!r} to page {page}, which does not show it")
    doc.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only verify the existing PDF")
    args = parser.parse_args(argv)

    blocks = parse_markdown(SOURCE.read_text(encoding="utf-8"))
    if not args.check:
        TARGET.write_bytes(build(blocks))
    problems = check(TARGET, blocks)
    doc = pymupdf.open(TARGET)
    print(f"{TARGET.relative_to(ROOT)}: {doc.page_count} pages, {len(doc.get_toc())} outline entries")
    for level, title, page, *_ in doc.get_toc():
        print(f"  {'  ' * (level - 1)}{title} -> page {page}")
    doc.close()
    if problems:
        for problem in problems:
            print("PROBLEM:", problem)
        return 1
    print("ok: every paragraph and heading extracts verbatim, footer on every page")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""rag/reading/extract.py and rag/reading/pdf.py on hand-made files: Markdown, plain text and a real PDF written here with pymupdf."""

from __future__ import annotations

import pymupdf
import pytest

from rag.reading.extract import SUPPORTED, extract, extract_bytes, kind_of
from rag.reading.document import ExtractionError


def sections(doc) -> list[tuple[tuple[str, ...], str]]:
    return [(s.path, doc.text[s.start:s.end].strip()) for s in doc.sections]


def pdf(pages: list[list[tuple[str, float]]], title: str = "") -> bytes:
    """A real PDF: each page a list of (line, font size), set top to bottom in the body of an A4 page."""
    out = pymupdf.open()
    for lines in pages:
        page = out.new_page(width=595, height=842)
        y = 150.0
        for line, size in lines:
            page.insert_text((72, y), line, fontsize=size)
            y += size * 3
    if title:
        out.set_metadata({"title": title})
    data = out.tobytes()
    out.close()
    return data


@pytest.mark.parametrize("name, kind", [
    ("a.md", "md"), ("A.MD", "md"), ("notes.markdown", "md"), ("x.txt", "txt"), ("scan.PDF", "pdf"),
    ("report.docx", "docx"), ("Budget.XLSM", "xlsx"), ("old.doc", "doc"), ("photo.heic", None), ("README", None),
    (".md", None),
])
def test_kind_of(name, kind):
    assert kind_of(name) == kind


def test_an_unsupported_type_lists_the_supported_ones():
    with pytest.raises(ExtractionError) as err:
        extract_bytes(b"text", "report.key")
    assert err.value.reason == f"unsupported file type '.key'; supported: {', '.join(sorted(SUPPORTED))}"


@pytest.mark.parametrize("name, data, reason", [
    ("a.md", b"", "the file is empty (0 bytes)"),
    ("a.txt", b"a\x00b", "binary file (contains NUL bytes), not text"),
    ("a.txt", "caução".encode("latin-1"), "not UTF-8 text (invalid byte at position 3)"),
    ("a.md", b" \n\n\t\n", "the file holds no text"),
    ("a.pdf", b"%PDF-1.4 not really", "not a readable PDF"),
])
def test_a_file_that_cannot_become_text_says_why(name, data, reason):
    with pytest.raises(ExtractionError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        extract_bytes(data, name)


def test_the_character_limit_is_named():
    with pytest.raises(ExtractionError, match=r"the limit is 10 \(max_chars\)"):
        extract_bytes(b"eleven char", "a.txt", max_chars=10)


def test_a_missing_file_cannot_be_read(tmp_path):
    with pytest.raises(ExtractionError, match="cannot read the file"):
        extract(tmp_path / "gone.md")


def test_markdown_title_sections_and_offsets():
    data = "# Handbook\n\nIntro line.\n\n## Upload\n\nDrop files.\n\n### Größe\n\nBis 50 MB.\n".encode()
    doc = extract_bytes(data, "guide.md")
    assert (doc.kind, doc.title) == ("md", "Handbook")
    assert sections(doc) == [((), "Intro line."), (("Upload",), "Drop files."), (("Upload", "Größe"), "Bis 50 MB.")]
    assert doc.text == data.decode()  # the canonical text is the file: every offset points into it


def test_markdown_without_heading_takes_its_title_from_a_short_first_line_or_the_name():
    assert extract_bytes(b"Shopping list\n\nmilk, eggs\n", "list.md").title == "Shopping list"
    assert extract_bytes(b"milk, eggs and a long first line that reads as a sentence.\n", "my_notes-2.md").title \
        == "my notes 2"


def test_crlf_and_a_bom_are_normalised():
    doc = extract_bytes("\ufeff# Título\r\n\r\nCorpo do texto.\r\n".encode(), "t.md")
    assert doc.title == "Título"
    assert "\r" not in doc.text and not doc.text.startswith("\ufeff")


def test_plain_text_reads_headings_from_the_shape_of_lines():
    text = ("Lease\n\nCLÁUSULA PRIMEIRA (Objeto)\nThe flat on the second floor is let as a home.\n\n"
            "CLÁUSULA SEGUNDA (Renda)\nThe rent is paid on the first day of each month.\n")
    doc = extract_bytes(text.encode(), "lease.txt")
    assert (doc.kind, doc.title) == ("txt", "Lease")
    assert sections(doc) == [
        (("CLÁUSULA PRIMEIRA (Objeto)",), "The flat on the second floor is let as a home."),
        (("CLÁUSULA SEGUNDA (Renda)",), "The rent is paid on the first day of each month."),
    ]


def test_one_line_of_plain_text_is_its_body_and_the_name_its_title():
    doc = extract_bytes(b"Only a line.", "one-line.txt")
    assert doc.title == "one line"
    assert sections(doc) == [((), "Only a line.")]
    assert doc.page_at(5) is None


def test_a_pdf_keeps_its_pages_and_maps_offsets_back_to_them(tmp_path):
    path = tmp_path / "manual.pdf"
    path.write_bytes(pdf([[("The first page says hello.", 11)], [("The second page says goodbye.", 11)]],
                         title="Manual"))
    doc = extract(path)
    assert (doc.kind, doc.title, doc.pages, doc.empty_pages) == ("pdf", "Manual", 2, 0)
    assert doc.text == "The first page says hello.\n\nThe second page says goodbye."
    second = doc.text.index("The second")
    assert doc.page_starts == [0, second]
    assert (doc.page_at(0), doc.page_at(second - 1), doc.page_at(second), doc.page_at(len(doc.text))) == (1, 1, 2, 2)
    # No outline and one font size: each page is a section of its own.
    assert sections(doc) == [(("Page 1",), "The first page says hello."), (("Page 2",), "The second page says goodbye.")]


def test_a_pdf_heading_in_a_bigger_font_is_a_section():
    data = pdf([[("Returns", 20), ("A parcel may be sent back within thirty days.", 11),
                 ("Refunds are paid within five days of its arrival.", 11)]])
    doc = extract_bytes(data, "shop.pdf")
    assert doc.title == "Returns"  # the one top-level heading names the document
    assert [s.path for s in doc.sections] == [()]
    assert "thirty days" in doc.text[doc.sections[0].start:]


def test_a_pdf_of_blank_pages_needs_ocr():
    with pytest.raises(ExtractionError, match="no extractable text on any of its 2 page"):
        extract_bytes(pdf([[], []]), "scan.pdf")


def test_the_page_limit_is_named():
    with pytest.raises(ExtractionError, match=r"the limit is 1 \(max_pages\)"):
        extract_bytes(pdf([[("a", 11)], [("b", 11)]]), "two.pdf", max_pages=1)


def test_the_readme_lists_every_type_the_app_reads():
    # One list (FORMATS) feeds the upload box, the indexer, the Library page and `rag status`; the README's
    # table is written by hand, so it is checked against it.
    from pathlib import Path

    from rag.reading.extract import FORMATS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = [line for line in readme.splitlines() if line.startswith("| ") and " ." in line]
    listed = {word.rstrip(";,") for line in table for word in line.split() if word.startswith(".")}
    assert listed == {s for f in FORMATS for s in f.suffixes}

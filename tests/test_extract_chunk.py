"""Extraction and chunking on real files: offsets found in the canonical text, boundaries respected.

PDFs are written by the tests with pymupdf; the sample folder's own documents are checked too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rag.indexing.chunk import chunk_document, header_for, paragraphs, strategy
from rag.reading.extract import extract, extract_bytes
from rag.reading.document import ExtractionError

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE_FILES = sorted(p for p in DATA.rglob("*") if p.suffix in (".md", ".txt", ".pdf"))


def assert_offsets(doc, chunks):
    for c in chunks:
        assert doc.text[c.start:c.end] == c.content, (c.id, c.start, c.end)
        assert c.text.endswith(c.content)
        assert c.content.strip() == c.content and c.content


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("how", list("ABCDEF"))
def test_offset_invariant_on_every_sample_document(path, how):
    doc = extract(path, path.relative_to(DATA).as_posix())
    chunks = chunk_document(doc, "d", how)
    assert chunks
    assert_offsets(doc, chunks)
    if how in "CDEF":  # boundary strategies stay within the budget plus the overlap
        assert max(len(c.content) for c in chunks) <= 512 + (64 if how in "DF" else 0)


def test_sample_folder_has_every_kind():
    assert {p.suffix for p in SAMPLE_FILES} == {".md", ".txt", ".pdf"}


# --- random Markdown ----------------------------------------------------------------------------

words = st.text(alphabet=st.sampled_from("abcdeçãé fgh  .!?\t|-#*"), min_size=1, max_size=60)
line = st.one_of(words, st.builds(lambda w: "## " + w, words), st.builds(lambda w: "# " + w, words),
                 st.just(""), st.just("```"), st.builds(lambda w: "| " + w + " |", words), st.just("|---|"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, min_size=1, max_size=80), st.sampled_from(list("ABCDEF")), st.sampled_from(["\n", "\r\n"]))
def test_offset_invariant_on_random_markdown(lines, how, newline):
    raw = newline.join(lines)
    try:
        doc = extract_bytes(raw.encode(), "random.md")
    except ExtractionError as exc:
        assert "no text" in exc.reason or "empty" in exc.reason  # the only acceptable failures here
        return
    chunks = chunk_document(doc, "r", strategy(how, budget=120))
    assert_offsets(doc, chunks)
    # Everything that is not a heading or blank is somewhere in a chunk: nothing is lost.
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    heading = re.compile(r"^#{1,6}[ \t]")
    pos = 0
    for ln in doc.text.split("\n"):
        if ln.strip() and not heading.match(ln):
            first = pos + (len(ln) - len(ln.lstrip()))
            if doc.sections and any(s.start <= first < s.end for s in doc.sections):
                assert first in covered, (ln, doc.text)
        pos += len(ln) + 1


# --- boundaries ---------------------------------------------------------------------------------

def test_paragraphs_are_never_cut_and_long_ones_split_at_sentences():
    short = "Short paragraph one stays whole."
    long_para = " ".join(f"Sentence number {i} talks about chunk budgets and limits." for i in range(20))
    doc = extract_bytes(f"# T\n\n## S\n\n{short}\n\n{long_para}\n\nTail paragraph.\n".encode(), "t.md")
    chunks = chunk_document(doc, "d")
    assert any(short in c.content for c in chunks)
    for c in chunks:
        assert len(c.content) <= 512
        assert c.content.endswith("."), c.content  # split pieces end at a sentence end
    # Blind cuts do cut sentences.
    blind = chunk_document(doc, "d", "A")
    assert any(not c.content.endswith(".") for c in blind)



@pytest.mark.parametrize("stop, after", [
    ("eight U.S.", "presidents studied there, and"),     # an abbreviation, then a word in lower case
    ("as Dr.", "Amélia Serra wrote, and"),               # a title before a name
    ("by John F.", "Whitcombe, who"),                    # an initial between names
    ("for example e.g.", "Markdown files, which"),
])
def test_a_long_paragraph_is_not_cut_at_a_full_stop_inside_a_sentence(stop, after):
    """Seen on the SQuAD folder: a chunk ended "Harvard's alumni include eight U.S." and the answer quoted
    half a sentence. A full stop that does not end a sentence is not a place to cut."""
    filler = " ".join(["the harbour keeps its records in the old customs house by the quay"] * 4)
    first = "The town sits on the coast and its harbour " + filler + "."
    second = f"The archive was described {stop} {after} {filler}."
    doc = extract_bytes(f"# T\n\n{first} {second} A short last sentence.\n".encode(), "t.md")
    chunks = chunk_document(doc, "d")
    assert_offsets(doc, chunks)
    assert any(second in c.content for c in chunks), [c.content[-40:] for c in chunks]
    assert not any(c.content.endswith(stop) for c in chunks)


def test_header_is_embedded_but_never_quoted():
    doc = extract_bytes(b"# Handbook\n\n## Upload\n\n### Limits\n\nUploads stop at 50 MB.\n", "h.md")
    (c,) = chunk_document(doc, "d")
    assert c.text == "[Handbook > Upload > Limits]\nUploads stop at 50 MB."
    assert c.content == "Uploads stop at 50 MB."
    assert c.section == "Upload > Limits"
    (nh,) = chunk_document(doc, "d", "C")
    assert nh.text == nh.content


def test_table_rows_cut_from_their_header_carry_it():
    rows = "\n".join(f"| ERR-{1000 + i} | meaning number {i} of this code | do thing {i} |" for i in range(30))
    md = f"# Codes\n\n## Table\n\n| Code | Meaning | Fix |\n| --- | --- | --- |\n{rows}\n"
    doc = extract_bytes(md.encode(), "codes.md")
    chunks = chunk_document(doc, "d")
    assert len(chunks) > 2
    assert chunks[0].content.startswith("| Code |")
    for c in chunks[1:]:
        assert "| Code | Meaning | Fix |\n| --- | --- | --- |\n" in c.text
        assert not c.content.startswith("| Code")
        assert c.content.startswith("| ERR-")
    # A long table is cut into its rows, one each: a row is a record, and packed with its neighbours its
    # code and meaning are drowned (the sample folder's "What does ERR-4017 mean?" at 0.843 from 4 rows).
    assert len(chunks) == 30 and chunks[0].content.endswith("| do thing 0 |")
    assert all(c.content.count("\n| ERR-") == 0 for c in chunks[1:])
    assert_offsets(doc, chunks)


def test_a_table_that_fits_stays_one_chunk():
    md = "# Codes\n\n| Code | Meaning |\n| --- | --- |\n| ERR-1 | one |\n| ERR-2 | two |\n"
    (c,) = chunk_document(extract_bytes(md.encode(), "codes.md"), "d")
    assert c.content.startswith("| Code |") and c.content.endswith("| ERR-2 | two |")


def test_headings_inside_code_fences_are_not_sections():
    md = "# Doc\n\n## Real\n\nText.\n\n```\n## not a heading\n```\n"
    doc = extract_bytes(md.encode(), "f.md")
    assert [s.path for s in doc.sections] == [("Real",)]


def test_long_first_line_never_becomes_the_title():
    para = "This first line is a long paragraph " * 25
    doc = extract_bytes(f"{para}\n\nSecond paragraph.\n".encode(), "notes_2024.txt")
    assert doc.title == "notes 2024"
    short = extract_bytes(b"Meeting notes\n\nWe met and talked.\n", "x.txt")
    assert short.title == "Meeting notes"
    assert all(len(header_for("x" * 500, ("y" * 300,))) <= 120 for _ in range(1))


CONTRACT = ("LEASE AGREEMENT\n\nBetween the parties below:\n\nCLAUSE ONE (Object)\nThe landlord lets the flat on the "
            "second floor of 210 Cedar Street to the tenant, as a permanent home.\n\nCLAUSE TWO (Rent)\nThe rent is 950 "
            "euros a month, paid by the eighth day of the month before.\nLate payment adds a fee of 20%.\n\n"
            "Lisbon, 20 February 2025\n\nThe landlord\n\nThe tenant\n")


@pytest.mark.parametrize("text, headings", [
    (CONTRACT, ["CLAUSE ONE (Object)", "CLAUSE TWO (Rent)"]),
    # Prose paragraphs, an address block, a list, a question line and a line ending with ":" are not headings.
    ("Notes\n\nWe met on Monday. The pump was replaced.\n\nRua das Flores 45\n4050 Porto\n\n- buy filters\n"
     "- call the plumber about the valve in the basement.\n\nWho pays for it?\nThe landlord pays for repairs.\n\n"
     "Costs:\nThe valve cost 40 euros and the labour 60.\n", []),
])
def test_plain_text_headings_are_read_from_the_shape_of_their_lines(text, headings):
    doc = extract_bytes(text.encode(), "notes.txt")
    assert [s.path[0] for s in doc.sections if s.path] == headings
    for s in doc.sections:  # a heading line is its section's name, never in its body (so never quoted)
        assert not any(h in doc.text[s.start:s.end] for h in headings)
    chunks = chunk_document(doc, "d", strategy("E", 512))
    rent = next(c for c in chunks if "950 euros" in c.content) if headings else None
    assert rent is None or (rent.section == "CLAUSE TWO (Rent)" and "CLAUSE TWO (Rent)" in rent.text)


def test_header_is_capped():
    h = header_for("T" * 400, ("S" * 400, "U" * 50))
    assert len(h) <= 120 and h.startswith("[T") and h.endswith("]")


def test_crlf_and_bom_are_normalised_and_offsets_still_hold():
    raw = "\ufeff# Title\r\n\r\n## A\r\n\r\nLine one.\r\nLine two.\r\n".encode()
    doc = extract_bytes(raw, "crlf.md")
    assert "\r" not in doc.text and not doc.text.startswith("\ufeff")
    assert_offsets(doc, chunk_document(doc, "d"))


# --- PDFs written here ------------------------------------------------------------------------------

def make_pdf(path: Path, pages: list[list[str]], footer: str | None = "Company handbook — page {n}",
             toc: list[tuple[int, str, int]] | None = None, heading_pages: dict[int, str] | None = None) -> Path:
    doc = pymupdf.open()
    for n, paras in enumerate(pages, start=1):
        page = doc.new_page()
        y = 72
        if heading_pages and n in heading_pages:
            page.insert_text((72, y), heading_pages[n], fontsize=18)
            y += 40
        for p in paras:
            rect = pymupdf.Rect(72, y, 520, y + 120)
            page.insert_textbox(rect, p, fontsize=11)
            y += 130
        if footer:
            page.insert_text((72, 800), footer.format(n=n), fontsize=9)
    if toc:
        doc.set_toc(toc)
    doc.save(path)
    return path


def test_pdf_pages_footers_and_outline(tmp_path):
    pages = [[f"Paragraph {p} on page {n} explains the policy number {n * 10 + p}." for p in range(2)] for n in range(1, 5)]
    pdf = make_pdf(tmp_path / "h.pdf", pages, toc=[(1, "Intro", 1), (1, "Details", 3)])
    doc = extract(pdf)
    assert doc.pages == 4 and doc.empty_pages == 0
    assert "Company handbook" not in doc.text  # the repeating footer is dropped
    for n in range(1, 5):
        off = doc.text.index(f"on page {n} ")
        assert doc.page_at(off) == n
    chunks = chunk_document(doc, "p")
    assert_offsets(doc, chunks)
    by_page = {c.page for c in chunks}
    assert by_page == {1, 2, 3, 4} or by_page <= {1, 2, 3, 4}
    assert {c.section for c in chunks} >= {"Intro", "Details"}
    for c in chunks:
        assert str(c.page) in c.content.split("page ")[1][:2] or c.page == doc.page_at(c.start)


def test_pdf_heading_fonts_become_sections_without_outline(tmp_path):
    pages = [["Body text of the first part, plain and long enough to be body."],
             ["Body text of the second part, also plain prose for the reader."]]
    pdf = make_pdf(tmp_path / "f.pdf", pages, footer=None, heading_pages={1: "Returns", 2: "Shipping"})
    doc = extract(pdf)
    assert [s.path for s in doc.sections] == [("Returns",), ("Shipping",)] or \
        [s.path[-1] for s in doc.sections] == ["Returns", "Shipping"]


def spaced_pdf(leading: float) -> bytes:
    """A page set at 1.5 or double line spacing, where pymupdf puts every printed line in a text block of
    its own: a heading, a paragraph whose sentence wraps over three lines, two short lines that each end
    a sentence, and a paragraph after some space."""
    doc = pymupdf.open()
    page = doc.new_page()
    writer = pymupdf.TextWriter(page.rect)
    body, bold = pymupdf.Font("helv"), pymupdf.Font("hebo")
    y = 72
    for text, font, size, after in [("Returns and refunds", bold, 16, 10),
                                    ("A parcel that arrives damaged may be sent back within thirty days of", body, 11, 0),
                                    ("delivery, in its box, and the refund is paid to the card that bought it", body, 11, 0),
                                    ("within five working days.", body, 11, 0),
                                    ("Keep the receipt.", body, 11, 0),
                                    ("Keep the box.", body, 11, 12),
                                    ("Exchanges follow the same rules as returns, but the new item ships", body, 11, 0),
                                    ("first.", body, 11, 0)]:
        writer.append((72, y), text, font=font, fontsize=size)
        y += leading + after
    writer.write_text(page)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.mark.parametrize("leading", [17, 22])  # 1.5 and double spacing of 11 pt text
def test_pdf_lines_of_one_sentence_are_joined_but_paragraphs_and_headings_stay_apart(leading):
    data = spaced_pdf(leading)
    with pymupdf.open(stream=data, filetype="pdf") as pdf:  # the case this is about: a block per line
        assert len(pdf[0].get_text("dict")["blocks"]) == 8
    doc = extract_bytes(data, "returns.pdf")
    assert doc.text.split("\n\n") == [
        "Returns and refunds",  # a bigger font: a heading, not the start of the paragraph
        "A parcel that arrives damaged may be sent back within thirty days of delivery, in its box, and the "
        "refund is paid to the card that bought it within five working days.",
        "Keep the receipt.", "Keep the box.",  # each line ends a sentence: nothing is joined to it
        "Exchanges follow the same rules as returns, but the new item ships first.",
    ]
    assert doc.title == "Returns and refunds"
    # The viewer rebuilds the same text from the page's characters, so offsets mean the same in both, and
    # a passage over two joined lines is marked on both lines.
    from rag.reading.viewer import marks_for, pdf_layout
    text, boxes = pdf_layout(data)
    assert text == doc.text and len(boxes) == len(text)
    start = text.index("delivery")
    end = text.index("working days.") + len("working days.")
    marks = marks_for(boxes[start:end])
    assert [m.page for m in marks] == [1] and len(marks[0].rects) == 2


def test_a_sentence_over_a_page_break_stays_one_sentence_and_an_empty_first_page_adds_nothing():
    doc = pymupdf.open()
    doc.new_page()  # a cover with no text (an image, a blank page)
    first = "A parcel that arrives damaged may be sent back within thirty days of delivery, in its box, and"
    ended = "Keep the receipt with the parcel, and keep the box it came in until the refund has been paid."
    page = doc.new_page()
    page.insert_text((72, 700), "Returns", fontsize=16)
    page.insert_text((72, 760), first, fontsize=10)  # the last line of page 2 ...
    page = doc.new_page()
    page.insert_text((72, 72), "the refund is paid within five working days.", fontsize=10)  # ... goes on here
    page.insert_text((72, 200), ended, fontsize=10)
    page = doc.new_page()
    page.insert_text((72, 72), "Exchanges follow the same rules.", fontsize=10)
    data = doc.tobytes()
    doc.close()
    extracted = extract_bytes(data, "returns.pdf")
    text = extracted.text
    assert text.startswith("Returns\n\n")  # nothing for the empty cover
    assert first + " the refund is paid within five working days." in text  # one sentence over the break
    assert ended + "\n\nExchanges" in text  # a sentence that ended: the pages stay apart
    assert text[extracted.page_starts[2]:].startswith("the refund is paid")
    assert text[extracted.page_starts[3]:].startswith("Exchanges")
    # The viewer rebuilds the same text (it once added a blank line for the empty cover, so no passage of
    # such a PDF was marked: "the PDF's text could not be matched to its page layout").
    from rag.reading.viewer import pdf_layout
    rebuilt, boxes = pdf_layout(data)
    assert rebuilt == text and len(boxes) == len(text)
    # The chunk holding the sentence says it runs over pages 2 and 3.
    chunk = next(c for c in chunk_document(extracted, strategy("E")) if "within thirty days" in c.content)
    assert "five working days" in chunk.content and chunk.page == 2 and chunk.page_end >= 3


@pytest.mark.parametrize("case", ["random", "empty", "png", "encrypted", "image_only", "truncated"])
def test_bad_pdfs_fail_with_a_reason(tmp_path, case):
    p = tmp_path / f"{case}.pdf"
    good = make_pdf(tmp_path / "good.pdf", [["Some real text here for the record."]] * 3)
    if case == "random":
        p.write_bytes(bytes(range(256)) * 40)
        expect = "not a readable PDF"
    elif case == "empty":
        p.write_bytes(b"")
        expect = "empty"
    elif case == "png":
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
        p.write_bytes(pix.tobytes("png"))
        expect = "not a PDF"
    elif case == "encrypted":
        d = pymupdf.open(good)
        d.save(p, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
        expect = "password"
    elif case == "image_only":
        d = pymupdf.open()
        for _ in range(2):
            page = d.new_page()
            pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 50, 50), False)
            pix.clear_with(200)
            page.insert_image(pymupdf.Rect(50, 50, 300, 300), pixmap=pix)
        d.save(p)
        expect = "scanned or image-only"
    else:  # truncated: pymupdf repairs what it can; either it reads with a warning or fails with a reason
        data = good.read_bytes()
        p.write_bytes(data[: len(data) // 2])
        try:
            doc = extract(p)
        except ExtractionError as exc:
            assert exc.reason
        else:
            assert doc.warnings and "repaired" in doc.warnings[0]
        return
    with pytest.raises(ExtractionError) as info:
        extract(p)
    assert expect in info.value.reason


@pytest.mark.parametrize("name,data,expect", [
    ("bin.txt", b"abc\x00def", "binary"),
    ("latin.md", "Devolução".encode("latin-1"), "not UTF-8"),
    ("empty.md", b"", "empty"),
    ("blank.txt", b"   \n\n  ", "no text"),
    ("doc.key", b"PK\x03\x04", "unsupported"),
    ("doc.docx", b"PK\x03\x04", "damaged or truncated"),
    ("old.doc", b"\xd0\xcf\x11\xe0", "save it as .docx"),
])
def test_bad_text_inputs_fail_with_a_reason(name, data, expect):
    with pytest.raises(ExtractionError) as info:
        extract_bytes(data, name)
    assert expect in info.value.reason


def test_limits_name_the_limit(tmp_path):
    with pytest.raises(ExtractionError) as info:
        extract_bytes(b"x" * 2000, "big.txt", max_chars=1000)
    assert "limit is 1,000" in info.value.reason
    pdf = make_pdf(tmp_path / "many.pdf", [["text"]] * 5, footer=None)
    with pytest.raises(ExtractionError) as info:
        extract(pdf, max_pages=3)
    assert "5 pages" in info.value.reason and "limit is 3" in info.value.reason


def test_paragraphs_are_trimmed_spans():
    text = "  a b  \n\n\n c \n \nd"
    assert [text[s:e] for s, e in paragraphs(text, 0, len(text))] == ["a b", "c", "d"]


# --- Markdown structure from a CommonMark parser -------------------------------------------

def chunks_of(md: str, name: str = "n.md"):
    doc = extract_bytes(md.encode(), name)
    chunks = chunk_document(doc, "d", strategy("E", 512))
    assert_offsets(doc, chunks)
    return doc, chunks


def test_front_matter_is_never_quoted_and_names_a_document_without_heading():
    front = "---\ntitle: Trip to Lisbon\ntags: [travel, notes]\ncreated: 2024-05-01\n---\n"
    doc, chunks = chunks_of(front + "We took the night train.\n\nThe hotel was near the river.\n")
    assert doc.title == "Trip to Lisbon"
    assert doc.text.startswith(front)  # offsets stay positions in the file
    assert all(s.start >= len(front) for s in doc.sections)
    assert chunks and "We took the night train." in chunks[0].content
    for c in chunks:
        assert not any(ln in c.content for ln in ("title:", "tags:", "created:", "---"))
        assert c.text.startswith("[Trip to Lisbon]")
    # With headings, the front matter is still in no chunk; a `#` heading names the document.
    doc, chunks = chunks_of(front + "## Day one\n\nArrived late.\n")
    assert doc.title == "Trip to Lisbon" and [s.path for s in doc.sections] == [("Day one",)]
    doc, chunks = chunks_of("---\ntitle: Ignored\n...\n# Real title\n\nBody text.\n")
    assert doc.title == "Real title" and [c.content for c in chunks] == ["Body text."]


def test_dashes_that_are_not_front_matter_stay_text():
    # Not YAML between the lines: a thematic break and a setext heading, as CommonMark reads it.
    doc, chunks = chunks_of("---\nJust a line: with: colons: [\n---\n\nBody.\n", "x.md")
    assert any("Body." in c.content for c in chunks)
    doc, chunks = chunks_of("Intro text.\n\n---\ntitle: x\n---\n\nMore.\n", "y.md")
    assert any("Intro text." in c.content for c in chunks)  # front matter only counts at the very top


def test_setext_headings_are_sections_and_their_underlines_never_quoted():
    md = ("User guide\n==========\n\nIntro paragraph.\n\nUploading\n---------\n\nDrop files here.\n\n"
          "### Limits\n\nFifty megabytes.\n\nDeleting\n--------\n\nUse the bin.\n")
    doc, chunks = chunks_of(md, "guide.md")
    assert doc.title == "User guide"
    assert [s.path for s in doc.sections] == [(), ("Uploading",), ("Uploading", "Limits"), ("Deleting",)]
    assert [c.content for c in chunks] == ["Intro paragraph.", "Drop files here.", "Fifty megabytes.", "Use the bin."]
    for c in chunks:
        assert "===" not in c.content and "---" not in c.content
    assert chunks[2].text.startswith("[User guide > Uploading > Limits]\n")


def test_four_backtick_fence_is_closed_only_by_four():
    md = ("# Doc\n\n## Setup\n\nRun this:\n\n````bash\n```\n# not a heading\necho hi\n```\n````\n\n"
          "## After\n\nDone.\n")
    doc, chunks = chunks_of(md, "fence.md")
    assert [s.path for s in doc.sections] == [("Setup",), ("After",)]
    fence_start, fence_end = md.index("````bash"), md.rindex("````") + 4
    for s in doc.sections:
        assert not fence_start < s.start < fence_end
    (holder,) = [s for s in doc.sections if s.start <= fence_start and fence_end <= s.end]
    assert holder.path == ("Setup",)
    assert any("# not a heading" in c.content and c.section == "Setup" for c in chunks)


@pytest.mark.parametrize("card,expect", [
    ("---\nlanguage:\n- en\n- pt\nlicense: apache-2.0\n---\n# Model\n", ("en", "pt")),
    ("---\nlicense: mit\nlanguage: [en, PT]\n---\n", ("en", "pt")),
    ("---\nlanguage: en\n---\nText.\n", ("en",)),
    ("---\nlanguages:\n  - de\n  - no\n---\n", ("de", "no")),
    ("---\nlanguage: [en, pt\n  bad: : yaml\n---\n", ()),
    ("---\nlanguage: en\n", ()),  # no closing line
    ("# Model\n\nlanguage: en\n", ()),  # no front matter
])
def test_model_card_languages_come_from_its_yaml(tmp_path, card, expect):
    from rag.indexing.embed import _card_languages

    (tmp_path / "README.md").write_text(card, encoding="utf-8")
    assert _card_languages(tmp_path) == expect
    assert _card_languages(tmp_path / "missing") == ()


md_line = st.one_of(line, st.sampled_from(["---", "===", "-", "...", "````", "~~~", "title: x", "    # code", "> # quoted"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.lists(md_line, min_size=1, max_size=60))
def test_front_matter_setext_and_fences_keep_offsets_on_random_markdown(with_front, lines):
    front = "---\ntitle: Random\nlanguage: [en]\n---\n" if with_front else ""
    try:
        doc = extract_bytes((front + "\n".join(lines)).encode(), "random.md")
    except ExtractionError as exc:
        assert "no text" in exc.reason or "empty" in exc.reason
        return
    chunks = chunk_document(doc, "r", strategy("E", 120))
    assert_offsets(doc, chunks)
    assert all(c.start >= len(front) for c in chunks)  # the front matter is never quoted
    for c in chunks:
        assert any(s.start <= c.start and c.end <= s.end for s in doc.sections)
    if with_front and not any(ln == "===" or re.match(r"\s*#\s", ln) for ln in lines):
        assert doc.title == "Random"  # no `#` heading (ATX or setext) can exist: the front matter names it


LEFT = ("Estuaries mix fresh river water with salt water from the sea. The mixing zone moves with every tide "
        "and with the river's flow after heavy rain. Salt marshes line the shallow banks of the estuary and "
        "trap the fine silt that the river carries down from the hills.")
RIGHT = ("Oyster beds need water that is neither too fresh nor too salty. Farmers therefore move their trays "
         "twice a year, following the mixing zone up and down the estuary. A cold winter can kill a whole "
         "year of young oysters in a single week of frost.")


CARRIED = ("In a hard winter the farmers lift the oyster trays out of the water and keep them in sheds",
           "until the frost has left the estuary. The trays go back in March.")


def two_column_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()  # A4-ish, 595 x 842
    page.insert_text((72, 60), "Tides and oysters in a small estuary", fontsize=16)
    page.insert_textbox(pymupdf.Rect(72, 80, 523, 120), "Abstract. How the tide moves the oyster farms of an "
                        "estuary, read from ten years of field notes.", fontsize=10)
    # Two paragraphs a column, the right column's second starting above the left's: sorted by height alone
    # (pymupdf's sort), the paragraphs of the two columns interleave.
    for rect, column in ((pymupdf.Rect(72, 140, 290, 420), LEFT), (pymupdf.Rect(305, 140, 523, 420), RIGHT)):
        first, second = column.split(". ", 1)
        page.insert_textbox(rect, first + ".", fontsize=10)
        page.insert_textbox(pymupdf.Rect(rect.x0, rect.y0 + (50 if column is LEFT else 36), rect.x1, rect.y1),
                            second, fontsize=10)
    page.insert_text((30, 600), "arXiv:0000.00000v1 [q-bio] 1 Jan 2026", fontsize=9, rotate=90)  # the side stamp
    page = doc.new_page()  # a sentence that goes on from the foot of the left column to the top of the right
    page.insert_textbox(pymupdf.Rect(72, 72, 290, 400), RIGHT, fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 700, 290, 800), CARRIED[0], fontsize=10)
    page.insert_textbox(pymupdf.Rect(305, 72, 523, 200), CARRIED[1], fontsize=10)
    page.insert_textbox(pymupdf.Rect(305, 300, 523, 800), LEFT, fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


def test_two_columns_are_read_one_after_the_other_and_every_sentence_stays_whole():
    data = two_column_pdf()
    extracted = extract_bytes(data, "estuary.pdf")
    text = " ".join(extracted.text.split())
    assert text.index("Abstract.") < text.index(LEFT[:30]) < text.index(LEFT[-30:]) < text.index(RIGHT[:30]) \
        < text.index(RIGHT[-30:])
    chunks = chunk_document(extracted, strategy("E"))
    for column in (LEFT, RIGHT):  # each sentence of each column whole inside one chunk
        for sentence in re.findall(r"[^.]+\.", column):
            assert any(sentence.strip() in " ".join(c.content.split()) for c in chunks), sentence
    assert "arXiv" not in extracted.text  # the side stamp is not text of the paper
    assert any(" ".join(CARRIED).split(". ")[0] in " ".join(c.content.split()) for c in chunks)  # over the columns
    from rag.reading.viewer import pdf_layout
    rebuilt, boxes = pdf_layout(data)  # the viewer reads the same order, so it can mark every passage
    assert rebuilt == extracted.text and len(boxes) == len(rebuilt)


def test_a_chapter_running_header_on_two_pages_is_dropped_and_real_hyphens_stay():
    doc = pymupdf.open()
    lines = [["We trained the Fast R-", "CNN detector with a state-of-the-", "art schedule and a new classi-",
              "fication of the boxes, as COVID-", "19 closed the lab."],
             ["The second chapter measures the boxes again and finds the same."],
             ["The third page closes the chapter with a short summary of the boxes."]]
    for n, (header, body) in enumerate(zip(["1. INTRODUCTION 4", "1. INTRODUCTION 5", "2. METHODS 6"], lines)):
        page = doc.new_page()
        page.insert_text((72, 50), header, fontsize=9)  # the chapter's running header: on 2 of 3 pages
        for i, line in enumerate(body):
            page.insert_text((72, 120 + 14 * i), line, fontsize=11)
    data = doc.tobytes()
    doc.close()
    extracted = extract_bytes(data, "thesis.pdf")
    text = extracted.text
    assert "INTRODUCTION" not in text  # 2 pages, its page number changing: furniture
    assert "2. METHODS 6" in text  # once only: may be a heading, kept
    flat = " ".join(text.split())
    assert "Fast R-CNN detector with a state-of-the-art schedule and a new classification of the boxes, " \
           "as COVID-19 closed the lab." in flat
    from rag.reading.viewer import pdf_layout
    rebuilt, boxes = pdf_layout(data)
    assert rebuilt == text and len(boxes) == len(text)
    at = text.index("R-CNN")  # the viewer marks the kept hyphen with the letters beside it
    assert all(boxes[i] is not None for i in range(at, at + len("R-CNN")))


def test_a_footnote_at_a_page_break_does_not_cut_the_sentence_that_runs_over_it_and_is_a_chunk_of_its_own():
    first = ("The clinic's records show that every patient who was referred before the end of the month was seen "
             "by a specialist and that the waiting list fell, so the board decided to")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 660), "Referrals", fontsize=16)  # a heading: sections by font, not one per page
    page.insert_textbox(pymupdf.Rect(72, 700, 520, 760), first + "¹", fontsize=11)
    page.insert_text((72, 800), "1 Article 3 of the clinic's rules sets the deadline.", fontsize=8)  # the footnote
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 120), "extend the programme to the other two towns.", fontsize=11)
    page.insert_textbox(pymupdf.Rect(72, 140, 520, 200), "The towns agreed in June.", fontsize=11)
    data = doc.tobytes()
    doc.close()
    extracted = extract_bytes(data, "clinic.pdf")
    flat = " ".join(extracted.text.split())
    assert "so the board decided to¹ extend the programme to the other two towns." in flat  # whole
    assert "\n\n1 Article 3 of the clinic's rules sets the deadline.\n\n" in extracted.text  # a paragraph of its own
    chunks = chunk_document(extracted, strategy("E"))
    assert any("decided to¹ extend the programme" in " ".join(c.content.split()) for c in chunks)
    note = [c for c in chunks if "Article 3" in c.content]  # the footnote is a chunk of its own
    assert [c.content for c in note] == ["1 Article 3 of the clinic's rules sets the deadline."]
    assert note[0].section.endswith("Footnote")
    from rag.reading.viewer import pdf_layout
    rebuilt, boxes = pdf_layout(data)
    assert rebuilt == extracted.text and len(boxes) == len(rebuilt)


def test_a_pdf_without_a_title_in_its_metadata_takes_the_largest_type_on_its_first_page():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Oyster farming in the Quarnelia estuary", fontsize=20)
    for i, (head, body) in enumerate([("1 Introduction", "Oysters need brackish water all year round."),
                                      ("2 Methods", "Trays were weighed every month for ten years.")]):
        page.insert_text((72, 120 + 120 * i), head, fontsize=14)  # two headings as large as each other
        page.insert_textbox(pymupdf.Rect(72, 140 + 120 * i, 520, 220 + 120 * i), body, fontsize=10)
    doc.set_metadata({"title": ""})
    data = doc.tobytes()
    doc.close()
    assert extract_bytes(data, "paper-v2-final.pdf").title == "Oyster farming in the Quarnelia estuary"


def test_a_table_is_read_a_row_a_paragraph_with_its_cells_apart():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Specifications", fontsize=14)
    rows = [("Model", "Weight", "Memory"), ("H100", "1.2 kg", "80 GB"), ("H200", "1.3 kg", "141 GB")]
    x = [72, 200, 320, 440]
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            page.draw_rect(pymupdf.Rect(x[c], 100 + 20 * r, x[c + 1], 120 + 20 * r), color=(0, 0, 0), width=0.5)
            page.insert_text((x[c] + 4, 114 + 20 * r), cell, fontsize=10)
    page.insert_textbox(pymupdf.Rect(72, 200, 520, 260), "The H200 carries more memory than the H100 at almost "
                        "the same weight.", fontsize=10)
    data = doc.tobytes()
    doc.close()
    extracted = extract_bytes(data, "specs.pdf")
    # Each row a paragraph of its own, its cells apart; not one run "Model Weight Memory H100 1.2 kg ...".
    assert "Model | Weight | Memory\n\nH100 | 1.2 kg | 80 GB\n\nH200 | 1.3 kg | 141 GB\n\nThe H200 carries" \
        in extracted.text
    from rag.reading.viewer import pdf_layout, marks_for
    rebuilt, boxes = pdf_layout(data)
    assert rebuilt == extracted.text
    at = rebuilt.index("H200 | 1.3 kg")  # a row is marked cell by cell, the gaps between them unmarked
    marks = marks_for(boxes[at:at + len("H200 | 1.3 kg | 141 GB")])
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        under = " ".join(pdf[0].get_textbox(pymupdf.Rect(r)) for m in marks for r in m.rects)
    assert " ".join(under.split()) == "H200 1.3 kg 141 GB"


# --- a real two-column paper, typeset by LaTeX ------------------------------------------------------
# tests/fixtures/pdf/two-column-paper.pdf is pdfTeX's output for two-column-paper.tex beside it (text written
# for this project, freely licensed): Times, TeX's own hyphenation, a fancyhdr running header, footnotes at a
# column's foot, a booktabs table, an outline from hyperref. CI has no LaTeX, so the PDF is committed; to
# regenerate it: `cd tests/fixtures/pdf && pdflatex two-column-paper.tex && pdflatex two-column-paper.tex`.

PAPER = Path(__file__).resolve().parent / "fixtures" / "pdf" / "two-column-paper.pdf"
PAPER_TITLE = "Fast Detection of Things in Crowded Office Scenes"


def paper_sentences(first: str = r"\section{Introduction}", last: str = r"\section{Experiments}") -> list[str]:
    """The sentences of the paper's source between two of its lines (by default: its first page's columns,
    Introduction to Method), as the page prints them: TeX commands read, a footnote's text left out (it is
    printed at the column's foot), the equation a break between paragraphs."""
    tex = PAPER.with_suffix(".tex").read_text(encoding="utf-8")
    body = tex[tex.index(first):tex.index(last)]
    body = re.sub(r"\\footnote\{[^{}]*\}", "", body)
    body = re.sub(r"\\begin\{equation\}.*?\\end\{equation\}", "\n\n", body, flags=re.S)
    refs = {"sec:related": "2", "sec:method": "3", "sec:experiments": "4"}
    body = re.sub(r"\\ref\{([^}]*)\}", lambda m: refs[m.group(1)], body)
    body = re.sub(r"\\(section|label)\{[^}]*\}", "", body).replace("~", " ")
    assert "\\" not in body and "{" not in body, body  # every command of these paragraphs read
    out = []
    for para in re.split(r"\n\s*\n", body):
        para = " ".join(para.split())
        out += [s for s in re.split(r"(?<=[.:])\s+(?=[A-Z])", para) if s]
    return out


@pytest.fixture(scope="module")
def paper():
    extracted = extract(PAPER)
    chunks = chunk_document(extracted, "paper", strategy("E"))
    assert_offsets(extracted, chunks)
    return extracted, chunks


def test_the_latex_fixture_is_what_the_paper_tests_are_about():
    """The PDF still shows what the tests below check: a rebuilt one whose lines break elsewhere would let
    them pass without checking anything."""
    with pymupdf.open(PAPER) as pdf:
        assert pdf.page_count == 2 and not pdf.metadata.get("title")  # the title comes from page 1
        raw = [page.get_text() for page in pdf]
        columns = {b[0] < 0.5 * 595 for b in pdf[0].get_text("blocks") if len(b[4]) > 300 and b[2] - b[0] < 0.5 * 595}
    assert columns == {True, False}  # long paragraphs in two columns
    assert "Fast Detection of Things — 1" in raw[0] and "Fast Detection of Things — 2" in raw[1]
    for broken in ("R-\nCNN", "state-of-the-\nart", "test-\ntime", "can-\ndidate", "inde-\npendently"):
        assert broken in raw[0], broken  # at a line's end on page 1, as TeX broke them
    assert "test-time augmentation" in raw[1]  # printed whole on page 2
    assert raw[0].index("1A graphics card") < raw[0].index("last and most successful")  # a column-foot note


def test_every_sentence_of_the_latex_papers_first_page_is_whole_in_one_chunk_and_in_order(paper):
    extracted, chunks = paper
    sentences = paper_sentences()
    assert len(sentences) > 25
    flat = [" ".join(c.content.split()) for c in chunks]
    where = []
    for s in sentences:
        holders = [i for i, c in enumerate(flat) if s in c]
        assert holders, s
        where.append((holders[0], flat[holders[0]].index(s)))
    assert where == sorted(where)  # the columns one after the other: no chunk reads them interleaved
    text = " ".join(extracted.text.split())
    assert text.index(PAPER_TITLE) < text.index("Abstract. We describe") < text.index(sentences[0])


def test_the_latex_paper_reads_as_people_type_it(paper):
    extracted, chunks = paper
    text = " ".join(c.content for c in chunks)
    flat = " ".join(text.split())
    assert not re.search("[\ufb00-\ufb06]", extracted.text)  # ligatures as letters
    for word in ("classification", "efficient", "workflow", "office", "offline", "final", "influenced", "Conceição",
                 "João Estêvão", "São Paulo", "Mário"):
        assert word in flat, word
    # TeX's own hyphenation joined; hyphens of the words kept, also where the line broke at them.
    for word in ("candidate", "independently", "successor", "processor", "annotators"):
        assert word in flat, word
    assert not re.search(r"\w- \w", flat) and "can-didate" not in flat
    for phrase in ("among them Fast R-CNN and its successors", "practical and state-of-the-art baseline",
                   "we do no test-time augmentation", "the first R-CNN classified", "Journal of Made-Up Results"):
        assert phrase in flat, phrase
    assert not re.search(r"Things\s*—\s*\d", extracted.text)  # the running header, its number changing
    assert extracted.title == PAPER_TITLE  # the largest type on page 1 (no title in its metadata)


def test_the_latex_papers_footnotes_are_chunks_of_their_own_and_cut_no_sentence(paper):
    extracted, chunks = paper
    notes = [c for c in chunks if c.section.endswith("Footnote")]
    assert [c.content for c in notes] == [
        "1A graphics card makes training about forty times faster, but it is not needed to run the trained detector.",
        "2We counted on average 41 annotated objects per office photograph, against 7 in the usual benchmarks."]
    # The first stood at the left column's foot, inside a sentence that goes on in the right column.
    carried = "The deformable part models of the late two-thousands were the last and most successful members"
    assert any(carried in " ".join(c.content.split()) for c in chunks)
    for c in chunks:
        if c not in notes:
            assert "graphics card makes training" not in c.content and "41 annotated" not in c.content
    # The paragraph after the note's mark ("card.1") is a paragraph of its own, not run on from it.
    assert "graphics card.1\n\nThe rest of this paper" in extracted.text


def test_the_latex_papers_outline_names_its_sections_and_its_table_is_read_a_row_a_paragraph(paper):
    extracted, chunks = paper
    assert [s.path for s in extracted.sections if s.path and s.path[-1] != "Footnote"] == [
        ("Introduction",), ("Related Work",), ("Method",), ("Method",), ("Experiments",), ("Conclusion",)]
    assert not any("Introduction" in c.content or "Related Work" in c.content for c in chunks)  # headings
    assert "\n\nTwo-stage baseline | 41.2 | 910\n\nSingle-shot baseline | 35.7 | 140\n\nOurs | 40.8 | 155\n\n" \
        in extracted.text
    from rag.reading.viewer import pdf_layout
    rebuilt, boxes = pdf_layout(PAPER.read_bytes())
    assert rebuilt == extracted.text and len(boxes) == len(rebuilt)

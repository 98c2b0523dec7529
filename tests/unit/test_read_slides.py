"""The PowerPoint reader (rag.reading.slides): decks made here with python-pptx, read back with `read`."""

from __future__ import annotations

import io
import struct
import time
import zipfile
from pathlib import Path

import pptx
import pytest
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

from rag.reading import archive, slides
from rag.reading.document import ExtractionError, Limits

NOTES = "Remind everyone about the emergency fund."


def _textbox(shapes, text: str, left: float, top: float):
    box = shapes.add_textbox(Inches(left), Inches(top), Inches(4), Inches(0.5))
    box.text_frame.text = text
    return box


def _deck() -> Presentation:
    """Six slides: a title slide, bullets, a table, bullets with notes, two boxes placed out of order, a
    hidden slide with groups and a chart."""
    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[0])
    s.shapes.title.text = "Household budget 2024"
    s.placeholders[1].text = "Prepared by Ana"

    s = prs.slides.add_slide(prs.slide_layouts[1])
    s.shapes.title.text = "Rent"
    body = s.placeholders[1].text_frame
    body.text = "Due on the 1st of each month"
    p = body.add_paragraph()
    p.text, p.level = "Paid by bank transfer", 1

    s = prs.slides.add_slide(prs.slide_layouts[5])
    s.shapes.title.text = "Costs"
    table = s.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate([("Item", "Cost"), ("Rent", "850"), ("Power", "60 | peak")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value

    s = prs.slides.add_slide(prs.slide_layouts[1])
    s.shapes.title.text = "Savings plan"
    s.placeholders[1].text = "Put 200 aside every month"
    s.notes_slide.notes_text_frame.text = NOTES

    s = prs.slides.add_slide(prs.slide_layouts[6])  # blank: no title
    _textbox(s.shapes, "Closing remark at the bottom", 1, 6)
    _textbox(s.shapes, "Right of the top remark", 5, 0.55)
    _textbox(s.shapes, "Opening remark at the top", 0.5, 0.5)

    s = prs.slides.add_slide(prs.slide_layouts[5])
    s.shapes.title.text = "Who does what"
    group = s.shapes.add_group_shape()
    _textbox(group.shapes, "Rui pays the power", 1, 3)
    _textbox(group.shapes, "Ana pays the rent", 1, 2)
    inner = group.shapes.add_group_shape()
    _textbox(inner.shapes, "Both share the groceries", 1, 4)
    data = CategoryChartData()
    data.categories = ["Jan", "Feb"]
    data.add_series("Spent", (900, 950))
    chart = s.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(5), Inches(4), Inches(2), data).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Spending by month"
    s._element.set("show", "0")  # hidden: still read
    return prs


def _bytes(prs: Presentation) -> bytes:
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def deck() -> bytes:
    return _bytes(_deck())


def _read(data: bytes, name: str = "budget.pptx", **limits):
    return slides.read(data, name, "pptx", Limits(**limits))


def _reason(data: bytes, name: str = "budget.pptx", **limits) -> str:
    with pytest.raises(ExtractionError) as caught:
        _read(data, name, **limits)
    return caught.value.reason


def _rezip(data: bytes, change=None, add=None) -> bytes:
    """The archive with members changed (name -> function of the old bytes) and added (name -> bytes)."""
    change, add = change or {}, add or {}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            blob = src.read(info.filename)
            dst.writestr(info.filename, change[info.filename](blob) if info.filename in change else blob)
        for member, blob in add.items():
            dst.writestr(member, blob)
    return out.getvalue()


def _span(doc, passage: str) -> tuple[int, int]:
    start = doc.text.index(passage)
    return start, start + len(passage)


# --- what a deck becomes -------------------------------------------------------------------------------------

def test_one_section_and_place_per_slide(deck):
    doc = _read(deck)
    assert doc.kind == "pptx" and doc.version == "pptx-3" and doc.pages == 6
    assert doc.title == "Household budget 2024"  # no core title: the first slide's
    assert [s.path for s in doc.sections] == [("Household budget 2024",), ("Rent",), ("Costs",), ("Savings plan",),
                                               ("Slide 5",), ("Who does what",)]
    assert [p.label for p in doc.places] == [f"slide {n}" for n in range(1, 7)]
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip()
    for p in doc.places:
        assert 0 <= p.start < p.end <= len(doc.text) and doc.text[p.start:p.end].strip()
    for a, b in zip(doc.places, doc.places[1:]):
        assert a.end <= b.start
    # Each slide's heading lies in its own place, so the locator of "Slide 5" is "slide 5".
    assert doc.place_of(*_span(doc, "Slide 5")) == "slide 5"
    assert doc.place_of(*_span(doc, "Household budget 2024\n\nPrepared by Ana")) == "slide 1"


def test_slide_text_and_notes_lie_in_their_place(deck):
    doc = _read(deck)
    body = _span(doc, "Put 200 aside every month")
    notes = _span(doc, "Notes: " + NOTES)
    assert doc.place_of(*body) == "slide 4" and doc.place_of(*notes) == "slide 4"
    assert doc.place_of(body[0], notes[1]) == "slide 4"
    slide4 = next(s for s in doc.sections if s.path == ("Savings plan",))
    assert doc.text[slide4.start:slide4.end] == "Put 200 aside every month\n\nNotes: " + NOTES
    assert doc.text.count("Notes: ") == 1  # only slide 4 has notes
    assert "Due on the 1st of each month\n\nPaid by bank transfer" in doc.text  # a bullet per block
    assert doc.place_of(*_span(doc, "Paid by bank transfer")) == "slide 2"


def test_table_is_a_pipe_table_with_its_header(deck):
    doc = _read(deck)
    table = "| Item | Cost |\n| --- | --- |\n| Rent | 850 |\n| Power | 60 \\| peak |"
    assert table in doc.text
    assert doc.place_of(*_span(doc, table)) == "slide 3"


def test_reading_order_by_position(deck):
    doc = _read(deck)
    top, right, bottom = (doc.text.index(t) for t in ("Opening remark at the top", "Right of the top remark",
                                                      "Closing remark at the bottom"))
    assert top < right < bottom  # added bottom, right, top: read top to bottom, then left to right
    slide5 = next(s for s in doc.sections if s.path == ("Slide 5",))
    assert slide5.start <= top and bottom < slide5.end


def test_groups_charts_and_hidden_slides(deck):
    doc = _read(deck)
    rent, power, groceries = (doc.text.index(t) for t in ("Ana pays the rent", "Rui pays the power",
                                                          "Both share the groceries"))
    assert rent < power < groceries  # inside the group, and the group inside it, by position too
    assert doc.place_of(*_span(doc, "Both share the groceries")) == "slide 6"
    assert doc.place_of(*_span(doc, "Chart: Spending by month")) == "slide 6"


def test_core_title_empty_and_title_only_slides():
    prs = _deck()
    prs.core_properties.title = "Our money"
    data = _bytes(prs)
    assert _read(data).title == "Our money"

    prs = Presentation()
    prs.core_properties.title = "PowerPoint Presentation"  # PowerPoint's default says nothing
    prs.slides.add_slide(prs.slide_layouts[6])  # empty
    s = prs.slides.add_slide(prs.slide_layouts[5])
    s.shapes.title.text = "Part 2: Results"  # a divider: its title is its text
    s = prs.slides.add_slide(prs.slide_layouts[6])
    _textbox(s.shapes, "Nothing but a box", 1, 1)
    doc = _read(_bytes(prs), "Quarterly review.pptx")
    assert doc.title == "Quarterly review"  # no core title, and slide 1 has none: the file's name
    assert [s.path for s in doc.sections] == [("Part 2: Results",), ("Slide 3",)]
    assert [p.label for p in doc.places] == ["slide 2", "slide 3"]  # slide numbers as the deck counts them
    assert doc.text == "Part 2: Results\n\nPart 2: Results\n\nSlide 3\n\nNothing but a box"


def test_python_pptx_default_template_holds_no_text():
    # The real deck python-pptx ships (pptx/templates/default.pptx): a master and layouts, no slides.
    template = Path(pptx.__file__).parent / "templates" / "default.pptx"
    assert "holds no text" in _reason(template.read_bytes(), "default.pptx")
    assert "holds no text" in _reason(_bytes(_blank_slides(2)))


def _blank_slides(n: int) -> Presentation:
    prs = Presentation()
    for _ in range(n):
        prs.slides.add_slide(prs.slide_layouts[6])
    return prs


# --- bad inputs --------------------------------------------------------------------------------------------------

def test_password_protected(deck):
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(deck)).encrypt("secret", out)
    assert "protected by a password" in _reason(out.getvalue())


def test_truncated(deck):
    assert "damaged or truncated" in _reason(deck[: len(deck) // 2])


def test_suffix_lies():
    assert _reason(b"%PDF-1.7\n1 0 obj\n") == ("its content is a PDF, though its name says a PowerPoint "
                                               "presentation (.pptx): rename it to .pdf")
    import docx

    buf = io.BytesIO()
    word = docx.Document()
    word.add_paragraph("A letter.")
    word.save(buf)
    reason = _reason(buf.getvalue())
    assert "its content is a Word document" in reason and "rename it to .docx" in reason


def test_damaged_inside(deck):
    broken = _rezip(deck, change={"ppt/presentation.xml": lambda b: b[: len(b) // 2]})
    assert _reason(broken).startswith("it is damaged: the presentation inside cannot be read")


_MACRO_MAIN = b"application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml"
_PLAIN_MAIN = b"application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"


def test_pptm_with_macros_reads_as_data(deck):
    vba_rel = (b'<Relationship Id="rIdVba" Type="http://schemas.microsoft.com/office/2006/relationships/vbaProject" '
               b'Target="vbaProject.bin"/></Relationships>')
    vba_type = b'<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/></Types>'
    pptm = _rezip(deck, change={
        "[Content_Types].xml": lambda b: b.replace(_PLAIN_MAIN, _MACRO_MAIN).replace(b"</Types>", vba_type),
        "ppt/_rels/presentation.xml.rels": lambda b: b.replace(b"</Relationships>", vba_rel),
    }, add={"ppt/vbaProject.bin": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"Sub AutoOpen()\x00" * 64})
    assert _MACRO_MAIN in zipfile.ZipFile(io.BytesIO(pptm)).read("[Content_Types].xml")
    doc = _read(pptm, "budget.pptm")
    assert doc.place_of(*_span(doc, "Notes: " + NOTES)) == "slide 4" and len(doc.sections) == 6


def test_slide_show_named_pptx_reads(deck):
    # A .ppsx renamed: python-pptx refuses its main part's type, which the reader rewrites in memory.
    show = b"application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml"
    data = _rezip(deck, change={"[Content_Types].xml": lambda b: b.replace(_PLAIN_MAIN, show)})
    with pytest.raises(ValueError):
        Presentation(io.BytesIO(data))
    assert "Put 200 aside every month" in _read(data).text


def test_zip_bomb_refused_from_its_directory(deck):
    data = _rezip(deck, add={"ppt/media/huge.bin": b"0" * 1000})
    # Declare the member far larger than it is, in the central directory (what zipfile believes).
    header = data.rindex(b"PK\x01\x02", 0, data.index(b"ppt/media/huge.bin", data.index(b"PK\x01\x02")) + 1)
    declared = archive.MAX_UNPACKED + 2**20
    bomb = data[:header + 24] + struct.pack("<I", declared) + data[header + 28:]
    assert zipfile.ZipFile(io.BytesIO(bomb)).getinfo("ppt/media/huge.bin").file_size == declared
    assert "zip bomb" in _reason(bomb)


def test_limits(deck):
    assert _reason(deck, max_pages=3) == "the deck has 6 slides; the limit is 3 (max_pages)"
    assert "the limit is 200 (max_chars)" in _reason(deck, max_chars=200)
    assert len(_read(deck, max_pages=6).places) == 6


def test_not_a_deck_at_all():
    assert "not a PowerPoint presentation" in _reason(b"\x00\x01\x02garbage" * 10)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "hello")
    assert _reason(buf.getvalue()) == ("it is a zip archive but not a PowerPoint presentation (.pptx): it holds "
                                       "no slides")


def test_time_for_a_50_slide_deck():
    prs = Presentation()
    for n in range(1, 51):
        s = prs.slides.add_slide(prs.slide_layouts[1])
        s.shapes.title.text = f"Topic {n}"
        frame = s.placeholders[1].text_frame
        frame.text = f"Point one of topic {n}"
        for k in range(2, 6):
            frame.add_paragraph().text = f"Point {k} of topic {n}, with a few more words"
        s.notes_slide.notes_text_frame.text = f"Say more about topic {n}."
    data = _bytes(prs)
    began = time.perf_counter()
    doc = _read(data)
    took = time.perf_counter() - began
    print(f"\n50-slide deck ({len(data) / 1024:.0f} KB, {len(doc.text):,} chars) read in {took * 1000:.0f} ms")
    assert len(doc.places) == 50 and doc.place_of(*_span(doc, "Say more about topic 50.")) == "slide 50"


def test_parts_stored_or_damaged_read_as_zipfile_reads_them(deck):
    """A deck written without compression reads the same, and a part whose bytes do not match its CRC is
    refused with zipfile's reason."""
    stored = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(deck)) as src, zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    assert _read(stored.getvalue()).text == _read(deck).text
    info = zipfile.ZipFile(io.BytesIO(deck)).getinfo("ppt/slides/slide1.xml")
    extra = struct.unpack_from("<H", deck, info.header_offset + 28)[0]
    at = info.header_offset + 30 + len(info.filename.encode()) + extra  # where its deflated bytes start
    flipped = deck[:at + 40] + bytes([deck[at + 40] ^ 0x55]) + deck[at + 41:]
    with pytest.raises(Exception) as caught:
        zipfile.ZipFile(io.BytesIO(flipped)).read("ppt/slides/slide1.xml")
    assert _short(caught.value) in _reason(flipped)


def _short(exc: Exception) -> str:
    return slides._short(exc)


def test_notes_are_cleaned_as_any_block():
    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[1])
    s.shapes.title.text = "Plan"
    s.placeholders[1].text = "Point"
    s.notes_slide.notes_text_frame.text = " notes\twith a tab \n\n second\u00a0line "
    s = prs.slides.add_slide(prs.slide_layouts[1])
    s.shapes.title.text = "Clean"
    s.placeholders[1].text = "Point"
    s.notes_slide.notes_text_frame.text = "Already clean.\nTwo lines."
    doc = _read(_bytes(prs))
    assert doc.text.split("\n\n") == ["Plan", "Point", "Notes: notes with a tab\nsecond line", "Clean", "Point",
                                      "Notes: Already clean.\nTwo lines."]

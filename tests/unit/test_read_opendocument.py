"""rag.reading.opendocument: .odt, .odp and .ods files written by odfdo in the test, read back as canonical text."""

from __future__ import annotations

import datetime
import io
import time
import zipfile
from pathlib import Path

import odfdo
import pytest
from odfdo import Annotation, Cell, Document, DrawPage, Element, Frame, Header, List, Note, Paragraph, Row, Span, Table

from rag.reading.document import ExtractionError, Limits, rows_place
from rag.reading.opendocument import VERSIONS, read

TEMPLATES = Path(odfdo.__file__).parent / "templates"


def _save(doc: Document, path: Path) -> bytes:
    doc.save(path)
    return path.read_bytes()


def _check_ranges(doc) -> None:
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip(), s
    for p in doc.places:
        assert 0 <= p.start < p.end <= len(doc.text) and doc.text[p.start:p.end].strip(), p


def _block(doc, text: str) -> tuple[int, int]:
    start = doc.text.index(text)
    return start, start + len(text)


# --- odt ---------------------------------------------------------------------------------------------------------


def _odt(tmp_path: Path, title: str | None = "Garden handbook") -> bytes:
    d = Document("text")
    body = d.body
    body.clear()
    if title:
        d.meta.title = title
    body.append(Header(1, "Planting"))
    p = Paragraph("Tomatoes need full sun.")
    p.append(Note(note_class="footnote", note_id="n1", citation="1", body="At least six hours a day."))
    p.append(" Water them in the morning.")
    body.append(p)
    body.append(List(["Water daily", "Feed weekly"]))
    body.append(Header(2, "Soil"))
    table = Table("Soils")
    for values in (["Plant", "Soil", "pH"], ["Tomato", "loam", "6.5"], ["Blueberry", "peat", "4.5"]):
        row = Row()
        for v in values:
            row.append(Cell(v))
        table.append(row)
    body.append(table)
    p = Paragraph("The shed is north.")
    p.append(Frame.text_frame("Compost bins go behind the shed.", size=("5cm", "2cm"), anchor_type="paragraph"))
    body.append(p)
    body.append(Header(1, "Harvest"))
    p = Paragraph("Pick when red.")
    p.append(Note(note_class="endnote", note_id="e1", citation="i", body="Source: county extension office."))
    body.append(p)
    return _save(d, tmp_path / "garden.odt")


def test_odt_blocks_sections_notes_and_title(tmp_path):
    doc = read(_odt(tmp_path), "garden.odt", "odt", Limits())
    assert doc.kind == "odt" and doc.version == VERSIONS["odt"] == "odt-2"
    assert doc.title == "Garden handbook"
    # The note leaves its paragraph; the paragraph reads on across it.
    assert "Tomatoes need full sun. Water them in the morning." in doc.text
    assert "six hours" not in doc.text.split("\n\nNotes\n\n")[0]
    blocks = doc.text.split("\n\n")
    assert ["Water daily", "Feed weekly"] == blocks[blocks.index("Water daily"):blocks.index("Water daily") + 2]
    assert "| Plant | Soil | pH |\n| --- | --- | --- |\n| Tomato | loam | 6.5 |\n| Blueberry | peat | 4.5 |" in doc.text
    # The frame's text is a block of its own, after its paragraph.
    assert blocks[blocks.index("The shed is north.") + 1] == "Compost bins go behind the shed."
    assert doc.text.endswith("Notes\n\n[1] At least six hours a day.\n\n[i] Source: county extension office.")
    paths = {s.path: doc.text[s.start:s.end] for s in doc.sections}
    assert list(paths) == [("Planting",), ("Planting", "Soil"), ("Harvest",), ("Notes",)]
    assert paths[("Planting", "Soil")].startswith("| Plant |")
    assert "Compost bins" in paths[("Planting", "Soil")]
    assert paths[("Harvest",)] == "Pick when red."
    assert paths[("Notes",)] == "[1] At least six hours a day.\n\n[i] Source: county extension office."
    # document order
    order = [doc.text.index(t) for t in ("Planting", "Tomatoes", "Water daily", "Soil", "| Plant", "The shed",
                                         "Compost", "Harvest", "Pick", "[1]", "[i]")]
    assert order == sorted(order)
    assert doc.places == []
    _check_ranges(doc)


def test_odt_title_falls_back_to_first_heading_then_name(tmp_path):
    assert read(_odt(tmp_path, title=None), "garden.odt", "odt", Limits()).title == "Planting"
    d = Document("text")
    d.body.clear()
    d.body.append(Paragraph("Just one line  of\ttext."))
    doc = read(_save(d, tmp_path / "x.odt"), "rent_notes.odt", "odt", Limits())
    assert doc.title == "rent notes" and doc.text == "Just one line of text."
    assert [(s.path, doc.text[s.start:s.end]) for s in doc.sections] == [((), "Just one line of text.")]


def test_odt_real_libreoffice_file():
    # odfdo/templates/lpod_styles.odt: saved by LibreOffice (Apache-2.0, shipped in the odfdo wheel); it has a
    # table of contents, which repeats the headings with page numbers and is left out.
    data = (TEMPLATES / "lpod_styles.odt").read_bytes()
    doc = read(data, "lpod_styles.odt", "odt", Limits())
    assert doc.title == "Title One"
    assert "Table of Content" not in doc.text and "\t3" not in doc.text
    assert "Paragraph with bold.\n\nHow to highlight a word." in doc.text
    paths = {s.path: doc.text[s.start:s.end] for s in doc.sections}
    assert paths[("Title One", "Title Two")].startswith("A list\n\nA nested list\n\nAnother list")
    assert paths[("Title One", "Title Two", "Title Three")] == "| A | B | C |\n| --- | --- | --- |\n| 1 | 2 | 3 |"
    _check_ranges(doc)


def test_odt_limits_max_chars(tmp_path):
    d = Document("text")
    d.body.clear()
    for i in range(300):
        d.body.append(Paragraph(f"Paragraph number {i} about the rent."))
    with pytest.raises(ExtractionError, match="max_chars"):
        read(_save(d, tmp_path / "long.odt"), "long.odt", "odt", Limits(max_chars=2000))


# --- odp ---------------------------------------------------------------------------------------------------------


def _odp(tmp_path: Path, slides: int = 5) -> bytes:
    d = Document("presentation")
    d.meta.title = "Quarterly review"
    body = d.body
    body.clear()
    for n in range(1, slides + 1):
        page = DrawPage(f"p{n}", name=f"page{n}")
        if n != 3:  # slide 3 has no title
            page.append(Frame.text_frame(f"Topic {n}", presentation_class="title", size=("20cm", "3cm")))
        page.append(Frame.text_frame([Paragraph(f"Point {n}a"), Paragraph(f"Point {n}b")], size=("20cm", "9cm")))
        if n == 4:
            table = Table("Costs")
            for values in (["Item", "Cost"], ["Rent", "850"], ["Power", "120"]):
                row = Row()
                for v in values:
                    row.append(Cell(v))
                table.append(row)
            frame = Frame(size=("10cm", "4cm"))
            frame.append(table)
            page.append(frame)
            notes = Element.from_tag("<presentation:notes/>")
            notes.append(Frame.text_frame("Mention the budget.", presentation_class="notes"))
            page.append(notes)
        body.append(page)
    return _save(d, tmp_path / "review.odp")


def test_odp_slides_are_sections_and_places(tmp_path):
    doc = read(_odp(tmp_path), "review.odp", "odp", Limits())
    assert doc.kind == "odp" and doc.version == "odp-2" and doc.title == "Quarterly review"
    assert [s.path for s in doc.sections] == [("Topic 1",), ("Topic 2",), ("Slide 3",), ("Topic 4",), ("Topic 5",)]
    assert [p.label for p in doc.places] == [f"slide {n}" for n in range(1, 6)]
    table = "| Item | Cost |\n| --- | --- |\n| Rent | 850 |\n| Power | 120 |"
    assert doc.place_of(*_block(doc, table)) == "slide 4"
    assert doc.place_of(*_block(doc, "Notes: Mention the budget.")) == "slide 4"
    assert doc.place_of(*_block(doc, "Point 3b")) == "slide 3"
    slide4 = next(s for s in doc.sections if s.path == ("Topic 4",))
    assert doc.text[slide4.start:slide4.end] == f"Point 4a\n\nPoint 4b\n\n{table}\n\nNotes: Mention the budget."
    assert doc.text.count("Topic 4") == 1  # the title is the heading, not a block again
    _check_ranges(doc)


def test_odp_stops_past_max_pages(tmp_path):
    with pytest.raises(ExtractionError, match=r"5 slides; the limit is 3 \(max_pages\)"):
        read(_odp(tmp_path), "review.odp", "odp", Limits(max_pages=3))


def test_odp_real_template_reads():
    # odfdo/templates/presentation.otp (LibreOffice-made, in the odfdo wheel): a presentation template.
    # Its one slide holds only empty placeholders: no "Slide 1" line stands for nothing.
    doc = read((TEMPLATES / "presentation.otp").read_bytes(), "presentation.otp", "odp", Limits())
    assert doc.kind == "odp" and doc.text == "" and doc.sections == [] and doc.places == []


# --- ods ---------------------------------------------------------------------------------------------------------


def _row(*cells) -> Row:
    row = Row()
    for c in cells:
        row.append(c if isinstance(c, Cell) else Cell(c))
    return row


def _ods(tmp_path: Path) -> bytes:
    d = Document("spreadsheet")
    body = d.body
    body.clear()
    t = Table("Budget")
    t.append(_row("Month", "Rent", "Share"))  # row 1: the header
    share = Cell(0.125, cell_type="percentage")
    share.text_content = "12.5%"  # as LibreOffice displays it with its format
    t.append(_row("March", Cell(850, cell_type="currency", currency="EUR", text="€850.00"), share))  # 2
    t.append(_row(Cell(datetime.date(2024, 3, 15), text="03/15/2024"), Cell(900, text="900")))  # 3
    t.append(_row("April", Cell(1700, formula="of:=[.B2]*2", text="1,700")))  # 4: a formula's cached value
    t.append(Row())  # 5: empty, in the middle
    t.append(Row(repeated=3))  # 6-8: empty, repeated
    for n in range(9, 14):
        t.append(_row(f"M{n}", str(n * 10)))  # 9-13
    t.append(_row("June", Cell(repeated=1), "5%"))  # 14: an empty cell between
    t.append(_row(Cell("Same", repeated=2), Cell(repeated=1000)))  # 15: a repeated cell, trailing empty run
    t.append(_row("July", "990", "9%"))  # 16
    t.append(Row(repeated=1_000_000))  # the sheet's trailing empty rows
    body.append(t)
    q = Table("Q1 costs")
    q.append(Row())  # row 1 empty: the header is row 2
    paid_by = Cell()
    para = Paragraph("Paid ")
    para.append(Span("by", style="T1"))  # markup inside a cell's paragraph
    paid_by.append(para)
    paint = Cell("Paint")
    paint.append(Annotation("Check the receipt.", creator="Ana"))  # a comment: not the cell's text
    q.append(_row("Item", "Cost", Cell(repeated=2), paid_by))
    q.append(_row(paint, "40", Cell(repeated=2), "Ana"))
    body.append(q)
    return _save(d, tmp_path / "budget.ods")


def test_ods_rows_cells_as_displayed_and_a1_places(tmp_path):
    t0 = time.monotonic()
    doc = read(_ods(tmp_path), "budget.ods", "ods", Limits())
    assert time.monotonic() - t0 < 5  # a million repeated empty rows cost nothing
    assert doc.kind == "ods" and doc.version == "ods-3" and doc.title == "budget"
    lines = doc.text.split("\n\n")
    assert lines[:4] == ["Budget", "Month: March | Rent: €850.00 | Share: 12.5%", "Month: 03/15/2024 | Rent: 900",
                         "Month: April | Rent: 1,700"]
    assert "Month: June | Share: 5%" in lines and "Month: Same | Rent: Same" in lines
    rows = {p.row: p for p in doc.places if p.label == "Budget"}
    assert sorted(rows) == [2, 3, 4, *range(9, 17)]
    assert rows[2].cells == ("March", "€850.00", "12.5%") and rows[2].last_col == 3
    assert rows[14].cells == ("June", "", "5%") and rows[15].cells == ("Same", "Same")
    assert doc.text[rows[9].start:rows[9].end] == "Month: M9 | Rent: 90"
    # A passage holding rows 14 to 16 is cited by its A1 range.
    assert doc.place_of(rows[14].start, rows[16].end) == "Budget!A14:C16"
    assert doc.place_of(rows[15].start, rows[15].end) == "Budget!A15:B15"
    # That passage keeps its rows, so a quote of row 15 alone is cited at row 15 (rag.deciding.citations.as_quoted).
    marks, at = doc.row_marks(rows[14].start, rows[16].end), rows[14].start
    assert rows_place("Budget!A14:C16", marks, rows[15].start - at, rows[15].end - at) == "Budget!A15:B15"
    assert [s.path for s in doc.sections] == [("Budget",), ("Q1 costs",)]
    paint = next(p for p in doc.places if p.label == "Q1 costs")
    assert (paint.row, paint.cells) == (3, ("Paint", "40", "", "", "Ana"))
    assert doc.text[paint.start:paint.end] == "Item: Paint | Cost: 40 | Paid by: Ana"
    assert "receipt" not in doc.text
    assert doc.place_of(paint.start, paint.end) == "'Q1 costs'!A3:E3"
    _check_ranges(doc)


def test_ods_meta_title_and_one_row_sheet(tmp_path):
    d = Document("spreadsheet")
    d.meta.title = "Household"
    d.body.clear()
    t = Table("Notes")
    t.append(Row(repeated=4))
    t.append(_row("Only line", "here"))
    d.body.append(t)
    doc = read(_save(d, tmp_path / "h.ods"), "h.ods", "ods", Limits())
    assert doc.title == "Household"
    assert doc.text == "Notes\n\nOnly line | here" and doc.place_of(0, len(doc.text)) == "Notes!A5:B5"


def test_ods_huge_repeats_are_bounded(tmp_path):
    # A non-empty row repeated a billion times, a cell repeated a billion times: reading stops at max_chars.
    d = Document("spreadsheet")
    d.body.clear()
    t = Table("Big")
    t.append(_row("A", "B"))
    row = _row("x", Cell("y", repeated=10**9))
    row.set_attribute("table:number-rows-repeated", str(10**9))
    t.append(row)
    d.body.append(t)
    data = _save(d, tmp_path / "big.ods")
    t0 = time.monotonic()
    with pytest.raises(ExtractionError, match="max_chars"):
        read(data, "big.ods", "ods", Limits(max_chars=200_000))
    assert time.monotonic() - t0 < 5


def test_ods_many_rows_stop_at_max_chars(tmp_path):
    d = Document("spreadsheet")
    d.body.clear()
    t = Table("Log")
    t.append(_row("Date", "Entry"))
    for n in range(2000):
        t.append(_row(f"2024-01-{n % 28 + 1:02d}", f"entry number {n}"))
    d.body.append(t)
    data = _save(d, tmp_path / "log.ods")
    with pytest.raises(ExtractionError, match="max_chars"):
        read(data, "log.ods", "ods", Limits(max_chars=5000))
    doc = read(data, "log.ods", "ods", Limits())
    assert doc.places[-1].row == 2001 and doc.text.endswith("Date: 2024-01-12 | Entry: entry number 1999")


# --- bad inputs --------------------------------------------------------------------------------------------------


def _rewrite(data: bytes, member: str, content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, content if info.filename == member else src.read(info))
    return out.getvalue()


def test_encrypted_manifest_is_a_password(tmp_path):
    data = _odt(tmp_path)
    manifest = zipfile.ZipFile(io.BytesIO(data)).read("META-INF/manifest.xml")
    encrypted = manifest.replace(
        b'manifest:full-path="content.xml" manifest:media-type="text/xml"/>',
        b'manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="4000">'
        b'<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="abc=">'
        b'<manifest:algorithm manifest:algorithm-name="Blowfish CFB" manifest:initialisation-vector="x="/>'
        b'<manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:iteration-count="1024" '
        b'manifest:salt="y="/></manifest:encryption-data></manifest:file-entry>')
    assert encrypted != manifest
    with pytest.raises(ExtractionError) as err:
        read(_rewrite(data, "META-INF/manifest.xml", encrypted), "garden.odt", "odt", Limits())
    assert err.value.reason == ("it is protected by a password: open it, save a copy without the password, "
                                "and add that copy")


def test_lying_suffixes(tmp_path):
    ods = _ods(tmp_path)
    with pytest.raises(ExtractionError) as err:
        read(ods, "budget.odt", "odt", Limits())
    assert err.value.reason == ("its content is an OpenDocument spreadsheet, though its name says an OpenDocument "
                                "text document (.odt): rename it to .ods")
    with pytest.raises(ExtractionError, match="OpenDocument text document, though its name says an OpenDocument "
                                              r"presentation \(\.odp\): rename it to \.odt"):
        read(_odt(tmp_path), "garden.odp", "odp", Limits())
    with pytest.raises(ExtractionError, match=r"its content is a PDF, though its name says .*\.ods"):
        read(b"%PDF-1.7\n1 0 obj\n", "budget.ods", "ods", Limits())
    import docx

    buf = io.BytesIO()
    docx.Document().save(buf)
    with pytest.raises(ExtractionError, match=r"a Word document \(\.docx\).*rename it to \.docx"):
        read(buf.getvalue(), "letter.odt", "odt", Limits())
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(ExtractionError, match="zip archive without the parts an OpenDocument file has"):
        read(plain.getvalue(), "x.odt", "odt", Limits())


def test_truncated_and_damaged(tmp_path):
    data = _odt(tmp_path)
    with pytest.raises(ExtractionError, match="damaged or truncated"):
        read(data[: len(data) // 2], "garden.odt", "odt", Limits())
    broken = _rewrite(data, "content.xml", b"<?xml version='1.0'?><office:document-content")
    with pytest.raises(ExtractionError, match="it is damaged: its content cannot be read"):
        read(broken, "garden.odt", "odt", Limits())
    ods = _ods(tmp_path)
    content = zipfile.ZipFile(io.BytesIO(ods)).read("content.xml")
    with pytest.raises(ExtractionError, match="it is damaged: its content cannot be read"):
        read(_rewrite(ods, "content.xml", content[: len(content) // 2]), "budget.ods", "ods", Limits())
    no_content = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(no_content, "w") as dst:
        for info in src.infolist():
            if info.filename != "content.xml":
                dst.writestr(info, src.read(info))
    with pytest.raises(ExtractionError, match="'content.xml', which holds the text, is missing"):
        read(no_content.getvalue(), "garden.odt", "odt", Limits())


def test_zip_bomb_is_refused_before_parsing(tmp_path):
    ods = _ods(tmp_path)
    bomb = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(ods)) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == "content.xml":
                dst.writestr("content.xml", src.read(info).replace(b"<office:body>", b"<office:body>"
                                                                   + b" " * (40 * 2**20)))
            else:
                dst.writestr(info, src.read(info))
    with pytest.raises(ExtractionError, match="zip bomb"):
        read(bomb.getvalue(), "budget.ods", "ods", Limits())


def test_comments_and_foreign_markup_do_not_break_reading(tmp_path):
    data = _odt(tmp_path)
    content = zipfile.ZipFile(io.BytesIO(data)).read("content.xml")
    odd = content.replace(b"<text:p>Pick when red.",
                          b'<text:p>Pick <!-- a comment --><x:em xmlns:x="http://example.com/x">when</x:em> red.')
    assert odd != content
    doc = read(_rewrite(data, "content.xml", odd), "garden.odt", "odt", Limits())
    assert "Pick when red." in doc.text and "a comment" not in doc.text

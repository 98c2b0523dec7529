"""The Word reader (rag.reading.word): documents written by python-docx in the test, read back with `read()`."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest
from docx.oxml import parse_xml

from rag.reading import archive
from rag.reading.document import ExtractionError, Limits
from rag.reading.word import VERSIONS, read

NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
      'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
      'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
      'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
      'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
      'xmlns:v="urn:schemas-microsoft-com:vml"')
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


def _bytes(d) -> bytes:
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _rezip(data: bytes, edit: dict) -> bytes:
    """The package with members replaced or added: {name: bytes, or a function of the old bytes}."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            change = edit.get(info.filename)
            dst.writestr(info.filename, change(body) if callable(change) else change if change is not None else body)
        for name, body in edit.items():
            if name not in src.namelist():
                dst.writestr(name, body)
    return out.getvalue()


def _read(data: bytes, name: str = "doc.docx", **limits):
    doc = read(data, name, "docx", Limits(**limits))
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip(), s
    for p in doc.places:
        assert 0 <= p.start < p.end <= len(doc.text)
    assert doc.version == VERSIONS["docx"] == "docx-2"
    return doc


def _reason(data: bytes, name: str = "doc.docx") -> str:
    with pytest.raises(ExtractionError) as err:
        read(data, name, "docx", Limits())
    return err.value.reason


def _paths(doc) -> dict[str, tuple]:
    return {doc.text[s.start:s.end]: s.path for s in doc.sections}


def test_body_order_headings_tables_lists_and_core_title():
    d = docx.Document()
    d.core_properties.title = "Allotment handbook"
    d.add_paragraph("Read this first.")
    d.add_heading("Planting", 1)
    d.add_paragraph("Tomatoes need sun.")
    t = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Plant", "Soil"), ("Tomato", "loam"), ("Carrot", "sand | grit")]):
        t.cell(r, 0).text, t.cell(r, 1).text = a, b
    d.add_paragraph("After the table.")
    d.add_heading("Watering", 2)
    d.add_paragraph("Water at dawn.", style="List Bullet")
    d.add_paragraph("Mulch in May.", style="List Bullet")
    d.add_paragraph("Dig.", style="List Number")
    d.add_paragraph("Sow.", style="List Number")
    d.add_heading("Harvest", 1)
    d.add_paragraph("Pick when red.")
    doc = _read(_bytes(d), "handbook.docx")
    assert doc.title == "Allotment handbook" and doc.kind == "docx"
    table = "| Plant | Soil |\n| --- | --- |\n| Tomato | loam |\n| Carrot | sand \\| grit |"
    assert doc.text == ("Read this first.\n\nPlanting\n\nTomatoes need sun.\n\n" + table + "\n\nAfter the table."
                        "\n\nWatering\n\n- Water at dawn.\n\n- Mulch in May.\n\n1. Dig.\n\n2. Sow.\n\nHarvest\n\n"
                        "Pick when red.")
    assert _paths(doc) == {"Read this first.": (),
                           f"Tomatoes need sun.\n\n{table}\n\nAfter the table.": ("Planting",),
                           "- Water at dawn.\n\n- Mulch in May.\n\n1. Dig.\n\n2. Sow.": ("Planting", "Watering"),
                           "Pick when red.": ("Harvest",)}


def test_title_style_then_first_heading_then_file_name():
    d = docx.Document()
    d.add_paragraph("Quarterly report", style="Title")
    d.add_heading("Costs", 1)
    d.add_paragraph("Rent rose.")
    doc = _read(_bytes(d))
    assert doc.title == "Quarterly report" and doc.text.startswith("Quarterly report\n\nCosts")
    assert _paths(doc)["Rent rose."] == ("Costs",)  # the title paragraph names no section
    d = docx.Document()
    d.add_heading("Costs", 2)
    d.add_paragraph("Rent rose.")
    assert _read(_bytes(d)).title == "Costs"
    d = docx.Document()
    d.add_paragraph("Rent rose.")
    assert _read(_bytes(d), "q3_report.docx").title == "q3_report"


def test_outline_level_on_paragraph_and_style_makes_headings():
    d = docx.Document()
    style = d.styles.add_style("Chapter", docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
    style.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {NS} w:val="0"/>'))
    d.add_paragraph("Chapter one", style="Chapter")
    p = d.add_paragraph("Part a")
    p._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {NS} w:val="1"/>'))
    d.add_paragraph("Body of a.")
    h = d.add_heading("Not a heading", 1)  # outline level 9 on the paragraph: body text, whatever its style
    h._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {NS} w:val="9"/>'))
    doc = _read(_bytes(d))
    assert _paths(doc) == {"Body of a.\n\nNot a heading": ("Chapter one", "Part a")}


def test_hundred_paragraphs_three_levels():
    d = docx.Document()
    expected = {}
    n, topic = 0, 0
    for a in range(1, 4):
        d.add_heading(f"Part {a}", 1)
        for b in range(1, 4):
            d.add_heading(f"Chapter {a}.{b}", 2)
            for c in range(1, 3):
                d.add_heading(f"Topic {a}.{b}.{c}", 3)
                body, topic = [], topic + 1
                for _ in range(6 if topic <= 16 else 2):  # 16 * 6 + 2 * 2 = 100
                    n += 1
                    d.add_paragraph(f"Paragraph {n} about topic {a}.{b}.{c}.")
                    body.append(f"Paragraph {n} about topic {a}.{b}.{c}.")
                expected["\n\n".join(body)] = (f"Part {a}", f"Chapter {a}.{b}", f"Topic {a}.{b}.{c}")
    n_paras = sum(1 for p in d.paragraphs if p.text.startswith("Paragraph"))
    assert n_paras == 100
    doc = _read(_bytes(d))
    assert _paths(doc) == expected
    assert len(doc.sections) == 18


def test_nested_table_merged_cells_and_content_controls():
    d = docx.Document()
    t = d.add_table(rows=3, cols=3)
    t.cell(0, 0).text, t.cell(0, 1).text = "Region", "Q1 and Q2"
    t.cell(0, 1).merge(t.cell(0, 2))
    t.cell(1, 0).text = "North"
    t.cell(1, 0).merge(t.cell(2, 0))
    t.cell(1, 1).text, t.cell(1, 2).text, t.cell(2, 1).text = "850", "900", "870"
    inner = t.cell(2, 2).add_table(rows=2, cols=2)
    for r in range(2):
        for c in range(2):
            inner.cell(r, c).text = f"n{r}{c}"
    sdt = parse_xml(f'<w:sdt {NS}><w:sdtPr/><w:sdtContent><w:p><w:r><w:t>Inside a control.</w:t></w:r></w:p>'
                    '</w:sdtContent></w:sdt>')
    blank = parse_xml(f'<w:sdt {NS}><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent><w:p><w:r>'
                      '<w:t>Click or tap here to enter text.</w:t></w:r></w:p></w:sdtContent></w:sdt>')
    d.element.body.insert(0, blank)
    d.element.body.insert(0, sdt)
    doc = _read(_bytes(d))
    assert "Click or tap" not in doc.text
    rows = doc.text.split("\n\n")[1].split("\n")
    assert doc.text.startswith("Inside a control.\n\n")
    assert rows[0] == "| Region | Q1 and Q2 |  |"
    assert rows[2:] == ["| North | 850 | 900 |", "| North | 870 | n00 n01; n10 n11 |"]


def test_text_box_read_once_where_anchored():
    d = docx.Document()
    p = d.add_paragraph("Anchor paragraph.")
    box = "<w:txbxContent><w:p><w:r><w:t>Sidebar: bring gloves.</w:t></w:r></w:p></w:txbxContent>"
    run = parse_xml(
        f'<w:r {NS}><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:anchor><a:graphic>'
        f'<a:graphicData><wps:wsp><wps:txbx>{box}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor>'
        f'</w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox></v:shape></w:pict>'
        '</mc:Fallback></mc:AlternateContent></w:r>')
    p._p.append(run)
    vml = parse_xml(f'<w:r {NS}><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>Old box.</w:t></w:r>'
                    '</w:p></w:txbxContent></v:textbox></v:shape></w:pict></w:r>')
    d.add_heading("Next", 1)._p.append(vml)
    d.add_paragraph("After.")
    doc = _read(_bytes(d))
    assert doc.text == "Anchor paragraph.\n\nSidebar: bring gloves.\n\nNext\n\nOld box.\n\nAfter."
    assert _paths(doc)["Old box.\n\nAfter."] == ("Next",)


def _with_notes(d, footnotes: list[str], endnotes: list[str]) -> bytes:
    def part(kind, texts):
        notes = "".join(
            f'<w:{kind} w:id="{i}"><w:p><w:r><w:{kind}Ref/></w:r><w:r><w:t xml:space="preserve"> {t}</w:t></w:r>'
            f'</w:p></w:{kind}>' for i, t in enumerate(texts, start=1))
        seps = (f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:t>SEPARATOR</w:t></w:r></w:p></w:{kind}>'
                f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:t>CONT</w:t></w:r></w:p>'
                f'</w:{kind}>')
        return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:{kind}s {NS}>{seps}{notes}</w:{kind}s>'

    types = ('<Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-'
             'officedocument.wordprocessingml.footnotes+xml"/><Override PartName="/word/endnotes.xml" '
             'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.endnotes+xml"/></Types>')
    rels = (f'<Relationship Id="rIdF" Type="{REL}footnotes" Target="footnotes.xml"/>'
            f'<Relationship Id="rIdE" Type="{REL}endnotes" Target="endnotes.xml"/></Relationships>')
    return _rezip(_bytes(d), {
        "[Content_Types].xml": lambda b: b.replace(b"</Types>", types.encode()),
        "word/_rels/document.xml.rels": lambda b: b.replace(b"</Relationships>", rels.encode()),
        "word/footnotes.xml": part("footnote", footnotes).encode(),
        "word/endnotes.xml": part("endnote", endnotes).encode()})


def test_footnotes_and_endnotes_after_the_body():
    d = docx.Document()
    d.add_heading("Lease", 1)
    p = d.add_paragraph("Rent is 850")
    p._p.append(parse_xml(f'<w:r {NS}><w:footnoteReference w:id="2"/></w:r>'))
    p = d.add_paragraph("Deposit is two months")
    p._p.append(parse_xml(f'<w:r {NS}><w:footnoteReference w:id="1"/></w:r>'))
    p._p.append(parse_xml(f'<w:r {NS}><w:endnoteReference w:id="1"/></w:r>'))
    doc = _read(_with_notes(d, ["Held by the agent.", "Paid monthly."], ["Signed 2024."]))
    assert "SEPARATOR" not in doc.text and "CONT" not in doc.text
    assert doc.text == ("Lease\n\nRent is 850[1]\n\nDeposit is two months[2][1]\n\nFootnotes\n\n[1] Paid monthly."
                        "\n\n[2] Held by the agent.\n\nEndnotes\n\n[1] Signed 2024.")
    assert _paths(doc) == {"Rent is 850[1]\n\nDeposit is two months[2][1]": ("Lease",),
                           "[1] Paid monthly.\n\n[2] Held by the agent.": ("Footnotes",),
                           "[1] Signed 2024.": ("Endnotes",)}


def test_docm_with_macros_is_read_as_data():
    d = docx.Document()
    d.add_paragraph("Invoice total: 120.")
    vba = b"Attribute VB_Name = \"ThisDocument\"\nSub AutoOpen()\nShell \"calc.exe\"\nEnd Sub\n"
    docm = _rezip(_bytes(d), {
        "[Content_Types].xml": lambda b: b.replace(
            b"wordprocessingml.document.main+xml", b"PLACEHOLDER").replace(
            b"application/vnd.openxmlformats-officedocument.PLACEHOLDER",
            b"application/vnd.ms-word.document.macroEnabled.main+xml").replace(
            b"</Types>", b'<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/></Types>'),
        "word/_rels/document.xml.rels": lambda b: b.replace(b"</Relationships>", (
            '<Relationship Id="rIdV" Type="http://schemas.microsoft.com/office/2006/relationships/vbaProject" '
            'Target="vbaProject.bin"/></Relationships>').encode()),
        "word/vbaProject.bin": vba})
    with pytest.raises(ValueError, match="macroEnabled"):  # what the workaround is for
        docx.Document(io.BytesIO(docm))
    doc = _read(docm, "invoice.docm")
    assert doc.text == "Invoice total: 120." and doc.title == "invoice"


def test_password_protected():
    from msoffcrypto.format import ooxml
    d = docx.Document()
    d.add_paragraph("Secret rent: 850.")
    out = io.BytesIO()
    ooxml.OOXMLFile(io.BytesIO(_bytes(d))).encrypt("pw", out)
    assert "protected by a password" in _reason(out.getvalue())


def test_truncated_and_lying_suffixes_and_other_zips():
    d = docx.Document()
    d.add_paragraph("Rent: 850.")
    data = _bytes(d)
    assert "damaged or truncated" in _reason(data[: len(data) // 2])
    assert _reason(b"%PDF-1.7\n%...\n") == ("its content is a PDF, though its name says a Word document (.docx): "
                                           "rename it to .pdf")
    assert _reason(b"Rent: 850\nDeposit: 1700\n", "notes.docm") == (
        "its content is plain text, though its name says a Word document (.docm): rename it to .txt")
    assert "old binary Office format" in _reason(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "old.docx")
    import openpyxl
    wb = openpyxl.Workbook()
    wb.active["A1"] = "Rent"
    buf = io.BytesIO()
    wb.save(buf)
    assert _reason(buf.getvalue()) == ("its content is an Excel workbook, though its name says a Word document "
                                       "(.docx): rename it to .xlsx")
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("notes.txt", "Rent")
    assert "not a Word document" in _reason(plain.getvalue())
    broken = _rezip(data, {"word/document.xml": b"<w:document><w:body><w:p>"})
    assert _reason(broken).startswith("it is damaged: its parts cannot be read as a Word document (.docx)")


def test_zip_bombs_refused_before_unpacking():
    d = docx.Document()
    d.add_paragraph("Rent: 850.")
    ratio = _rezip(_bytes(d), {"word/media/zeros.bin": b"\x00" * (24 * 2**20)})  # packs ~1000 times
    assert "zip bomb" in _reason(ratio)
    # A member that declares 600 MB: its sizes patched in the directory, nothing large is ever written.
    small = _rezip(_bytes(d), {"word/media/big.bin": b"\x00" * 1024})
    entry = small.index(b"PK\x01\x02")
    data = bytearray(small)
    while True:  # patch the central directory entry of big.bin
        name_len = int.from_bytes(data[entry + 28:entry + 30], "little")
        if bytes(data[entry + 46:entry + 46 + name_len]) == b"word/media/big.bin":
            data[entry + 24:entry + 28] = (600 * 2**20).to_bytes(4, "little")
            break
        entry = data.index(b"PK\x01\x02", entry + 4)
    assert 600 * 2**20 > archive.MAX_UNPACKED
    reason = _reason(bytes(data))
    assert "zip bomb" in reason and "MB" in reason


def test_empty_document_real_template_and_limits():
    template = Path(docx.__file__).parent / "templates" / "default.docx"  # python-docx's own blank document
    assert _reason(template.read_bytes(), "default.docx") == "the document holds no text"
    d = docx.Document()
    for i in range(200):
        d.add_paragraph(f"Paragraph {i} of a long report, with enough words to count.")
    assert "max_chars" in _reason_limited(_bytes(d), max_chars=2000)
    with pytest.raises(ValueError):
        read(_bytes(d), "old.doc", "doc", Limits())  # the old .doc is not this reader's


def _reason_limited(data: bytes, **limits) -> str:
    with pytest.raises(ExtractionError) as err:
        read(data, "big.docx", "docx", Limits(**limits))
    return err.value.reason

"""The spreadsheet reader (rag.reading.sheets): workbooks written here with openpyxl and xlsxwriter, CSV and TSV
files written here byte by byte, read back as rows with their headers, real row numbers, A1 places and cells
as the sheet displays them; damaged, disguised, protected and huge files refused or bounded with a reason."""

from __future__ import annotations

import datetime as dt
import io
import re
import struct
import sys
import time
import zipfile
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter

from rag.reading import archive, sheets
from rag.reading.document import ExtractionError, Extracted, Limits

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
HEADER = ["Month", "Rent", "Paid", "Share", "Due", "Total"]
LIMITS = Limits()


def check(doc: Extracted) -> None:
    """The invariants every reader keeps: sections and places are non-empty ranges of the text."""
    assert doc.sections
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip(), s
    for p in doc.places:
        assert 0 <= p.start < p.end <= len(doc.text) and doc.text[p.start:p.end].strip(), p
    assert [p.start for p in doc.places] == sorted(p.start for p in doc.places)


def line_of(doc: Extracted, row: int, sheet: str | None = None):
    """(the text of a row's place, the place) by its row number."""
    place = next(p for p in doc.places if p.row == row and (sheet is None or p.label == sheet))
    return doc.text[place.start:place.end], place


def row_number(month: str) -> int:
    """Where a month sits in the budget sheets: row 1 the header, January row 2, row 8 left empty."""
    i = MONTHS.index(month)
    return i + 2 if i < 6 else i + 3


def budget_openpyxl(path: Path) -> bytes:
    """A workbook as a library writes it: a formula in December's Total has no saved value."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Budget"
    ws.append(HEADER)
    for month in MONTHS:
        r = row_number(month)
        rent = 1250 if month == "December" else 850
        ws.cell(r, 1, month)
        ws.cell(r, 2, rent).number_format = "$#,##0.00" if month == "December" else "General"
        ws.cell(r, 3, month != "December")
        ws.cell(r, 4, 0.125).number_format = "0.0%"
        ws.cell(r, 5, dt.date(2024, MONTHS.index(month) + 1, 15)).number_format = "yyyy-mm-dd"
        ws.cell(r, 6, f"=B{r}*2" if month == "December" else rent * 2)
    notes = wb.create_sheet("Notes")
    notes.append(["Topic", "Note"])
    notes.append(["Boiler", "Service booked for May"])
    lookup = wb.create_sheet("Lookup")
    lookup.append(["secret", "value"])
    lookup.sheet_state = "hidden"
    wb.save(path)
    return path.read_bytes()


def budget_xlsxwriter(path: Path) -> bytes:
    """The same budget as xlsxwriter writes it: formulas with their saved results, other number formats."""
    wb = xlsxwriter.Workbook(str(path))
    wb.set_properties({"title": "Household budget 2024"})
    ws = wb.add_worksheet("Budget")
    euro = wb.add_format({"num_format": "[$€-407] #,##0.00"})
    krona = wb.add_format({"num_format": '#,##0 "kr"'})
    pct = wb.add_format({"num_format": "0.00%"})
    day = wb.add_format({"num_format": "dd/mm/yyyy"})
    ws.write_row(0, 0, HEADER)
    for month in MONTHS:
        r = row_number(month) - 1  # xlsxwriter counts rows from 0
        ws.write_string(r, 0, month)
        ws.write_number(r, 1, 850, euro if month == "March" else krona if month == "April" else None)
        ws.write_boolean(r, 2, True)
        ws.write_number(r, 3, 0.125, pct)
        ws.write_datetime(r, 4, dt.datetime(2024, MONTHS.index(month) + 1, 15), day)
        ws.write_formula(r, 5, f"=B{r + 1}*2", None, 1700)
    wb.add_worksheet("Q1 costs").write_row(0, 0, ["Item", "Cost"])
    wb.close()
    return path.read_bytes()


# --- workbooks ----------------------------------------------------------------------------------------------


def test_a_workbook_reads_as_rows_with_their_headers_real_numbers_and_displayed_values(tmp_path):
    doc = sheets.read(budget_openpyxl(tmp_path / "budget.xlsx"), "budget.xlsx", "xlsx", LIMITS)
    check(doc)
    assert doc.kind == "xlsx" and doc.version == sheets.VERSIONS["xlsx"] == "xlsx-4" and doc.title == "budget"
    assert [s.path for s in doc.sections] == [("Budget",), ("Notes",)]  # the hidden sheet is not read
    text, place = line_of(doc, 4)
    assert text == "Month: March | Rent: 850 | Paid: TRUE | Share: 12.5% | Due: 2024-03-15 | Total: 1700"
    assert doc.place_of(place.start, place.end) == "Budget!A4:F4"
    assert place.cells == ("March", "850", "TRUE", "12.5%", "2024-03-15", "1700")
    assert line_of(doc, 1)[0] == "Month | Rent | Paid | Share | Due | Total"  # the header row, once
    # Row 8 is empty: July is row 9, and a passage over June and July spans rows 7 to 9.
    assert 8 not in [p.row for p in doc.places if p.label == "Budget"]
    july, july_place = line_of(doc, 9)
    assert july.startswith("Month: July | Rent: 850")
    assert doc.place_of(line_of(doc, 7)[1].start, july_place.end) == "Budget!A7:F9"
    # December: a currency, FALSE, and a formula never computed, so its Total shows nothing.
    december, december_place = line_of(doc, 14)
    assert december == "Month: December | Rent: $1,250.00 | Paid: FALSE | Share: 12.5% | Due: 2024-12-15"
    assert doc.place_of(december_place.start, december_place.end) == "Budget!A14:E14"
    notes, notes_place = line_of(doc, 2, "Notes")
    assert notes == "Topic: Boiler | Note: Service booked for May"
    assert doc.place_of(notes_place.start, notes_place.end) == "Notes!A2:B2"
    assert "secret" not in doc.text
    assert len(doc.warnings) == 2
    assert doc.warnings[0] == "hidden sheet not read: 'Lookup'"
    assert doc.warnings[1].startswith("1 formula cell has no saved result")
    assert "open the file in Excel or LibreOffice, save it" in doc.warnings[1]


def test_saved_formula_results_and_number_formats_show_as_the_sheet_shows_them(tmp_path):
    doc = sheets.read(budget_xlsxwriter(tmp_path / "budget.xlsx"), "budget.xlsx", "xlsx", LIMITS)
    check(doc)
    assert doc.title == "Household budget 2024" and doc.warnings == []
    assert line_of(doc, 4)[0] == ("Month: March | Rent: € 850.00 | Paid: TRUE | Share: 12.50% | Due: 15/03/2024 | "
                                  "Total: 1700")
    assert line_of(doc, 5)[0].startswith("Month: April | Rent: 850 kr |")
    text, place = line_of(doc, 4)
    assert doc.place_of(place.start, place.end) == "Budget!A4:F4"
    # A sheet with only its header is its header row; its name needs quotes in an A1 reference.
    q1, q1_place = line_of(doc, 1, "Q1 costs")
    assert q1 == "Item | Cost" and doc.place_of(q1_place.start, q1_place.end) == "'Q1 costs'!A1:B1"


def test_a_macro_enabled_workbook_reads_as_data_and_its_macros_are_not_touched(tmp_path):
    vba = tmp_path / "vbaProject.bin"
    vba.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"Attribute VB_Name = \"Module1\"\x00" * 64)
    wb = xlsxwriter.Workbook(str(tmp_path / "tool.xlsm"))
    wb.add_worksheet("Prices").write_row(0, 0, ["Item", "Price"])
    wb.worksheets()[0].write_row(1, 0, ["Tea", 3.5])
    wb.add_vba_project(str(vba))
    wb.close()
    data = (tmp_path / "tool.xlsm").read_bytes()
    assert "xl/vbaProject.bin" in zipfile.ZipFile(io.BytesIO(data)).namelist()
    doc = sheets.read(data, "tool.xlsm", "xlsx", LIMITS)
    check(doc)
    assert line_of(doc, 2)[0] == "Item: Tea | Price: 3.5" and "VB_Name" not in doc.text


def test_a_sheet_whose_dimension_claims_a_million_rows_and_all_columns_is_read_fast(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Log"
    ws.append(["Date", "Event"])
    ws.append(["2024-01-02", "boiler serviced"])
    ws.cell(1_000_000, 1, "2024-12-30")
    ws.cell(1_000_000, 2, "meter read")
    wb.save(tmp_path / "log.xlsx")
    # As some programs write it: a dimension over every row and all 16,384 columns.
    data = rezip(tmp_path / "log.xlsx", "xl/worksheets/sheet1.xml",
                 lambda xml: re.sub(rb'<dimension ref="[^"]*"', b'<dimension ref="A1:XFD1048576"', xml))
    assert b"XFD1048576" in zipfile.ZipFile(io.BytesIO(data)).read("xl/worksheets/sheet1.xml")
    start = time.perf_counter()
    doc = sheets.read(data, "log.xlsx", "xlsx", LIMITS)
    assert time.perf_counter() - start < 10
    check(doc)
    last, place = line_of(doc, 1_000_000)
    assert last == "Date: 2024-12-30 | Event: meter read"
    assert doc.place_of(place.start, place.end) == "Log!A1000000:B1000000"
    assert [p.row for p in doc.places] == [1, 2, 1_000_000]


def rezip(path: Path, member: str, change) -> bytes:
    """The archive at `path` again, with `member`'s bytes changed by `change`."""
    out = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            dst.writestr(info.filename, change(body) if info.filename == member else body)
    return out.getvalue()


def test_bad_workbooks_are_refused_with_a_reason_a_person_understands(tmp_path):
    import msoffcrypto.format.ooxml
    from docx import Document

    data = budget_openpyxl(tmp_path / "budget.xlsx")
    locked = io.BytesIO()
    msoffcrypto.format.ooxml.OOXMLFile(io.BytesIO(data)).encrypt("secret", locked)
    cases = {
        "password": (locked.getvalue(), "budget.xlsx", "protected by a password"),
        "truncated": (data[: len(data) // 2], "budget.xlsx", "damaged or truncated"),
        "a PDF": (b"%PDF-1.7\n1 0 obj << >> endobj\n", "budget.xlsx",
                  "its content is a PDF, though its name says an Excel workbook (.xlsx): rename it to .pdf"),
        "text": (b"Month,Rent\nMarch,850\n", "budget.xlsm", "its content is plain text, though its name says an "
                                                             "Excel workbook (.xlsm)"),
        "a damaged sheet": (rezip(tmp_path / "budget.xlsx", "xl/worksheets/sheet1.xml", lambda x: x[:200]),
                            "budget.xlsx", "it is damaged: its sheet 'Budget' cannot be read"),
    }
    document = Document()
    document.add_paragraph("Dear landlord")
    document.save(tmp_path / "letter.docx")
    cases["a Word document"] = ((tmp_path / "letter.docx").read_bytes(), "letter.xlsx",
                                "it is a Word document, though its name says an Excel workbook (.xlsx)")
    cases["a zip bomb"] = (declare_size(data, "xl/worksheets/sheet1.xml", archive.MAX_UNPACKED + 1), "b.xlsx",
                           "(a zip bomb, or no personal document)")
    for case, (content, name, reason) in cases.items():
        with pytest.raises(ExtractionError) as caught:
            sheets.read(content, name, "xlsx", LIMITS)
        assert reason in caught.value.reason, (case, caught.value.reason)


def declare_size(data: bytes, member: str, size: int) -> bytes:
    """The archive with `member`'s size in its central directory changed to `size`: a zip bomb's directory,
    built without writing a byte of its content."""
    at = data.index(b"PK\x01\x02")  # the first entry of the central directory
    out = bytearray(data)
    while at != -1:
        name_len = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46:at + 46 + name_len] == member.encode():
            struct.pack_into("<I", out, at + 24, size)
            return bytes(out)
        at = out.find(b"PK\x01\x02", at + 46)
    raise AssertionError(member)


# --- CSV and TSV ----------------------------------------------------------------------------------------------


def test_a_windows_1252_csv_with_semicolons_and_a_quoted_delimiter(tmp_path):
    text = ('Mês;Descrição;Valor\r\n'
            'Janeiro;"Renda; água incluída";850,00 €\r\n'
            'Fevereiro;Preço da luz;45,50 €\r\n'
            '\r\n'
            'Março;Serviço de limpeza;120,00 €\r\n')
    doc = sheets.read(text.encode("cp1252"), "despesas.csv", "csv", LIMITS)
    check(doc)
    assert doc.kind == "csv" and doc.version == "csv-3" and doc.title == "despesas"
    assert [s.path for s in doc.sections] == [("despesas",)]
    assert line_of(doc, 1)[0] == "Mês | Descrição | Valor"
    assert line_of(doc, 2)[0] == "Mês: Janeiro | Descrição: Renda; água incluída | Valor: 850,00 €"
    march, place = line_of(doc, 5)  # row 4 is empty: March keeps its own number
    assert march == "Mês: Março | Descrição: Serviço de limpeza | Valor: 120,00 €"
    assert doc.place_of(place.start, place.end) == "despesas!A5:C5"
    assert doc.place_of(line_of(doc, 2)[1].start, place.end) == "despesas!A2:C5"


def test_tsv_files_split_on_tabs_only_in_utf8_and_in_excels_utf16(tmp_path):
    text = "Name\tCity\tNote\nAna\tLisboa\tlikes commas, and semicolons; yes\nBruno\tPorto\t\"quoted\"\n"
    for data, name in ((text.encode(), "people.tsv"), (text.encode("utf-16"), "people.tab")):
        doc = sheets.read(data, name, "tsv", LIMITS)
        check(doc)
        assert doc.version == "tsv-3" and doc.title == "people"
        assert line_of(doc, 2)[0] == "Name: Ana | City: Lisboa | Note: likes commas, and semicolons; yes"
        assert doc.place_of(line_of(doc, 3)[1].start, line_of(doc, 3)[1].end) == "people!A3:C3"


def test_a_csv_with_a_bom_and_a_cell_over_two_lines(tmp_path):
    data = b'\xef\xbb\xbfMonth,Rent,Note\nMarch,850,"paid late,\nwith a fee"\nApril,850,\n'
    doc = sheets.read(data, "rent.csv", "csv", LIMITS)
    check(doc)
    assert line_of(doc, 1)[0] == "Month | Rent | Note"  # no BOM glued to "Month"
    assert line_of(doc, 2)[0] == "Month: March | Rent: 850 | Note: paid late, with a fee"
    april, place = line_of(doc, 3)  # the quoted line break is inside row 2: April is row 3
    assert april == "Month: April | Rent: 850" and doc.place_of(place.start, place.end) == "rent!A3:B3"


def test_real_tab_separated_file_shipped_with_tzdata():
    """tzdata's iso3166.tab (public domain, shipped in the tzdata package): comment lines, then tab-separated rows."""
    import tzdata  # installed with pandas (Streamlit's), which reads time zones through it

    path = Path(tzdata.__file__).parent / "zoneinfo" / "iso3166.tab"
    lines = path.read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if line.startswith("PT\t"))
    doc = sheets.read(path.read_bytes(), "iso3166.tab", "tsv", LIMITS)
    check(doc)
    text, place = line_of(doc, number)
    assert text.endswith("PT | Portugal") and doc.place_of(place.start, place.end) == f"iso3166!A{number}:B{number}"


def test_bad_delimited_files_are_refused_with_a_reason(tmp_path):
    wb = openpyxl.Workbook()
    wb.save(tmp_path / "b.xlsx")
    cases = [
        ((tmp_path / "b.xlsx").read_bytes(), "b.csv", "csv",
         "its content is a zip archive, though its name says a CSV file (.csv)"),
        (b"%PDF-1.4\n", "b.tsv", "tsv", "its content is a PDF, though its name says a tab-separated file (.tsv)"),
        (b"a,b\n\x00\x01\x02\x03", "b.csv", "csv", "its content is binary data"),
        (b'a,b\n1,"' + b"x" * 200_000 + b"\n", "b.csv", "csv", "it is damaged near line"),
    ]
    for data, name, kind, reason in cases:
        with pytest.raises(ExtractionError) as caught:
            sheets.read(data, name, kind, LIMITS)
        assert reason in caught.value.reason, caught.value.reason


@pytest.mark.parametrize("word", [b"ok", "açúcar".encode("cp1252")])
def test_a_million_row_csv_stops_at_max_chars_quickly(word):
    data = b"".join(b"%d;item number %d;%d.50;%s\n" % (i, i, i * 3, word) for i in range(1_000_000))
    assert len(data) > 20_000_000
    start = time.perf_counter()
    with pytest.raises(ExtractionError) as caught:
        sheets.read(data, "huge.csv", "csv", Limits(max_chars=200_000))
    took = time.perf_counter() - start
    assert "200,000 (max_chars)" in caught.value.reason
    assert took < 5, took


def big_workbook(path: Path, rows: int) -> bytes:
    """A workbook of `rows` rows of 4 cells (a number, a shared string, a currency, a date) below a header:
    xlsxwriter writes its styles and 500 shared strings, its sheet's rows are written here (seconds faster)."""
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Big")
    money = wb.add_format({"num_format": "$#,##0.00"})
    day = wb.add_format({"num_format": "yyyy-mm-dd"})
    ws.write_row(0, 0, ["Id", "Item", "Amount", "Due"])  # shared strings 0-3
    for k in range(500):
        ws.write_string(k + 1, 1, f"item {k}")  # shared string 4 + k
    ws.write_number(1, 2, 1.25, money)  # style 1
    ws.write_number(1, 3, 45000, day)  # style 2
    wb.close()
    cells = ('<c r="A%d"><v>%d</v></c><c r="B%d" t="s"><v>%d</v></c><c r="C%d" s="1"><v>%s</v></c>'
             '<c r="D%d" s="2"><v>%d</v></c>')
    body = "".join(f'<row r="{n}">' + cells % (n, n - 1, n, 4 + n % 500, n, n * 1.25, n, 45000 + n % 365) + "</row>"
                   for n in range(2, rows + 2))
    return rezip(path, "xl/worksheets/sheet1.xml", lambda xml: re.sub(
        rb'(<sheetData><row r="1".*?</row>).*</sheetData>', lambda m: m.group(1) + body.encode() + b"</sheetData>",
        xml, flags=re.S))


def test_rows_per_second_for_100000_rows(tmp_path, capsys):
    """Prints (asserts nothing about speed) how many rows a second a 100,000-row workbook and CSV read at."""
    rows = 100_000
    xlsx_data = big_workbook(tmp_path / "big.xlsx", rows)
    csv_data = b"Id,Item,Amount,Due\n" + b"".join(b"%d,item %d,%d.25,2024-03-15\n" % (r, r % 500, r)
                                                  for r in range(rows))
    figures, docs = [], {}
    for data, name, kind in ((xlsx_data, "big.xlsx", "xlsx"), (csv_data, "big.csv", "csv")):
        start = time.perf_counter()
        docs[kind] = doc = sheets.read(data, name, kind, Limits(max_chars=50_000_000))
        took = time.perf_counter() - start
        assert len(doc.places) == rows + 1
        figures.append(f"{kind}: {rows / took:,.0f} rows/s ({took:.2f} s for {rows:,} rows of 4 cells)")
    assert line_of(docs["xlsx"], 100_001)[0] == "Id: 100000 | Item: item 1 | Amount: $125,001.25 | Due: 2024-03-05"
    assert line_of(docs["csv"], 1001)[0] == "Id: 999 | Item: item 499 | Amount: 999.25 | Due: 2024-03-15"
    start = time.perf_counter()  # a workbook past max_chars stops there, without reading the rest
    with pytest.raises(ExtractionError) as caught:
        sheets.read(xlsx_data, "big.xlsx", "xlsx", Limits(max_chars=100_000))
    assert "100,000 (max_chars)" in caught.value.reason and time.perf_counter() - start < 3
    with capsys.disabled():
        print("\n" + "\n".join(figures), file=sys.stderr)


# --- the sheet's XML, read without openpyxl's cell objects ------------------------------------------------------


def test_every_kind_of_cell_reads_as_openpyxl_read_it(tmp_path):
    """Shared strings (rich text, entities), an inline string (its phonetic run left out), numbers in their
    formats, a 1904 workbook's dates, formulas by their saved result, gaps between cells and rows, a merged
    header, cells and rows without coordinates: each as openpyxl's reader gave them (the reader read its cells
    through openpyxl until xlsx-2, which gives this test's lines too)."""
    wb = xlsxwriter.Workbook(str(tmp_path / "kinds.xlsx"), {"date_1904": True})
    ws = wb.add_worksheet("Kinds")
    formats = ("0.0%", '"$"#,##0.00;[Red]("$"#,##0.00)', "d mmmm yyyy")
    pct, money, day = (wb.add_format({"num_format": f}) for f in formats)
    ws.merge_range("A1:B1", "Merged header", wb.add_format({"bold": True}))
    ws.write_row(1, 0, ["Name", "Value"])
    rows = [("percent", 0.1255, pct), ("money", -1234.5, money), ("date", dt.datetime(2024, 3, 15), day),
            ("half up", 2.675, wb.add_format({"num_format": "0.00"})), ("general", 0.1 + 0.2, None)]
    for r, (label, value, fmt) in enumerate(rows, start=2):
        ws.write_string(r, 0, label)
        ws.write_datetime(r, 1, value, fmt) if isinstance(value, dt.datetime) else ws.write_number(r, 1, value, fmt)
    ws.write_string(7, 0, "error")
    ws.write_formula(7, 1, "=1/0", None, "#DIV/0!")
    ws.write_string(8, 0, "text result")
    ws.write_formula(8, 1, '="a"&"b"', None, "ab")
    ws.write_string(9, 0, "true")
    ws.write_formula(9, 1, "=1=1", None, True)
    ws.write_string(11, 0, "gap")  # row 11 is empty
    ws.write_string(11, 3, "column D")  # C12 is empty
    ws.write_string(12, 0, "rich")
    ws.write_rich_string(12, 1, "plain ", wb.add_format({"bold": True}), "bold")
    ws.write_string(13, 0, "Mar&ch <b>")
    ws.write_string(14, 0, "escaped")
    ws.write_string(14, 1, "x005F_x000D_ kept")
    wb.close()

    def change(xml: bytes) -> bytes:  # an inline string, a phonetic run, a row and cells without coordinates
        xml = re.sub(rb'<c r="B15" t="s"><v>\d+</v></c>', b'<c t="inlineStr"><is><t xml:space="preserve"> in  line '
                     b'</t><r><t>run</t></r><rPh sb="0" eb="1"><t>PH</t></rPh></is></c>', xml)
        return re.sub(rb'<row r="16"', b"<row", xml)  # no row 16 yet: appended below
    data = rezip(tmp_path / "kinds.xlsx", "xl/worksheets/sheet1.xml",
                 lambda xml: change(xml).replace(b"</sheetData>", b'<row><c t="inlineStr"><is><t>last</t></is></c>'
                                                                  b'<c t="b"><v>0</v></c></row></sheetData>'))
    doc = sheets.read(data, "kinds.xlsx", "xlsx", LIMITS)
    check(doc)
    lines = {p.row: doc.text[p.start:p.end] for p in doc.places}
    assert lines == {
        1: "Merged header", 2: "Merged header: Name | Value", 3: "Merged header: percent | 12.6%",
        4: "Merged header: money | ($1,234.50)", 5: "Merged header: date | 15 March 2024",
        6: "Merged header: half up | 2.68", 7: "Merged header: general | 0.3", 8: "Merged header: error | #DIV/0!",
        9: "Merged header: text result | ab", 10: "Merged header: true | TRUE", 12: "Merged header: gap | column D",
        13: "Merged header: rich | plain bold", 14: "Merged header: Mar&ch <b>",
        15: "Merged header: escaped | in line run", 16: "Merged header: last | FALSE"}
    assert doc.place_of(*next((p.start, p.end) for p in doc.places if p.row == 12)) == "Kinds!A12:D12"
    assert next(p for p in doc.places if p.row == 12).cells == ("gap", "", "", "column D")


def test_a_shared_string_reads_as_openpyxl_reads_it():
    """Its plain text and its runs' text, a run's phonetic reading left out, comments dropped, openpyxl's
    "x005F_" removed (Excel's _xHHHH_ escapes are kept as they are)."""
    xml = ('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>plain</t></si>'
           '<si><r><rPr><b/></rPr><t xml:space="preserve">Ma </t></r><r><t>rch</t></r><rPh sb="0" eb="1"><t>PH</t>'
           '</rPh></si><si><t>Ap<!-- a comment -->ril</t></si><si><t>x005F_x000D_ _x000D_</t></si><si><t/></si>'
           '<si><t>&amp;&#233;&lt;</t><r><t>+run</t></r></si></sst>')
    from openpyxl.reader.strings import read_string_table

    expected = ["plain", "Ma rch", "April", "x000D_ _x000D_", "", "&é<+run"]
    assert sheets._read_shared_strings(io.BytesIO(xml.encode())) == expected
    assert read_string_table(io.BytesIO(xml.encode())) == expected  # what openpyxl's own reading gives



def test_a_csv_named_with_underscores_is_cited_by_its_name_as_written():
    # A trial's card read "congressional_resignations!A40:H40 · congressionalresignations": the section (the
    # sheet's heading) had lost its underscores, so it no longer matched the place and was said again.
    from rag.deciding.citations import locator
    from rag.indexing.chunk import chunk_document
    from rag.searching.search import Candidate

    doc = sheets.read(b"Member,Party\nAnn Lee,Green\n", "congressional_resignations.csv", "csv", Limits())
    assert doc.title == "congressional_resignations"
    [chunk] = chunk_document(doc, "d")
    row = Candidate("c1", "d", doc.name, doc.title, chunk.section, chunk.content, chunk.start, chunk.end,
                    None, None, "csv", 1, 0.1, 0.2, 1, 1, 1.0, place=chunk.place)
    assert locator(row) == "congressional_resignations!A1:B2"

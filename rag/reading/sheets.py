"""Spreadsheets: an Excel workbook (.xlsx, .xlsm), a CSV (.csv) or tab-separated (.tsv, .tab) file becomes
canonical text one row at a time, each cell read with its column's header, as the sheet shows it.

- A workbook: every visible sheet is a section headed by its name (hidden sheets are skipped, with a warning
  naming them). A sheet's header is its first non-empty row; that row and every following non-empty row is one
  line ("Month: March | Rent: 850") and a `Place` with the sheet's real row number, so a passage's place is its
  A1 range (`Budget!A4:F6`). Cells read as the sheet displays them (`cellformat.display`): the value a formula last
  computed, numbers in their number format (12.5%, $1,250.00, 2024-03-15), TRUE/FALSE.
- A CSV or TSV file: one "sheet" named after the file's stem (budget.csv -> "budget"), its first row the header,
  rows numbered as a spreadsheet numbers them (row 1 = the header; a quoted cell over several lines is one row).
  The encoding is UTF-8 (with or without a BOM), UTF-16 with a BOM, else charset-normalizer's guess; the
  dialect (delimiter, quotes) is clevercsv's, a TSV's delimiter always the tab.

Rows are streamed (a worksheet's XML with lxml's iterparse, the csv module over a decoding stream), so a huge
file costs bounded memory, and reading stops at `Limits.max_chars` with a reason. openpyxl reads a workbook's
other parts (its sheets, their state, its styles and number formats) as its read-only mode does, and a sheet's
cells are read as its read-only worksheet reads them (`_sheet_rows`: its per-cell objects were most of a large
sheet's time). A workbook is checked by `rag.reading.archive.open_zip` before openpyxl sees a byte; a
macro-enabled workbook's macros are never read.

What it does not do: run formulas (a formula no spreadsheet app ever computed shows nothing, and the document
gets one warning counting such cells), read merged cells as one, charts, comments or pictures, apply a number
format to text, or read the old binary .xls format.

>>> c = Canonical("b.csv", max_chars=10_000)
>>> _read_rows(c, "b", iter([["Month", "Rent"], [], ["March", "850"]]))
>>> doc = c.build(kind="csv", title="b", version="csv-1")
>>> doc.text.split("\\n\\n"), doc.place_of(0, len(doc.text)), doc.places[-1].row
(['Month | Rent', 'Month: March | Rent: 850'], 'b!A1:B3', 3)
"""

from __future__ import annotations

import codecs
import csv
import functools
import io
import itertools
import re
from pathlib import Path
from typing import Iterable, Sequence

from rag.reading.archive import content_mismatch, open_zip, sniff
from rag.reading.canonical import Canonical
from rag.reading.cellformat import shower
from rag.reading.document import ExtractionError, Extracted, Limits

# Each step re-indexes the sheets of a folder (a document whose reader version changed is read again): xlsx-2, the
# faster reading; xlsx-3, csv-2, tsv-2: the same text, but their passages now keep their rows (rag.indexing.chunk
# Chunk.rows), so a citation names the rows it quotes, and a sheet indexed before must be chunked again for that.
# xlsx-4, csv-3, tsv-3: headings keep their words' underscores (document.clean_heading).
VERSIONS = {"xlsx": "xlsx-4", "csv": "csv-3", "tsv": "tsv-3"}

# clevercsv judges a CSV's dialect by its first lines, up to this many characters, each line cut at _SAMPLE_LINE:
# its time grows with the square of a long cell's length (8 KB: under half a second at worst; 200 KB: minutes).
_SAMPLE, _SAMPLE_LINE = 8 * 1024, 2 * 1024
# charset-normalizer judges a file that is not UTF-8 by this many bytes of its lines that hold non-ASCII bytes.
_CHARSET_SAMPLE, _HIGH = 64 * 1024, re.compile(rb"[\x80-\xff]")
# The most a workbook's shared text (sharedStrings.xml, which openpyxl loads whole) may unpack to, per character
# of max_chars: XML around short strings is about 16 bytes, so past this the text is over the limit anyway.
_SHARED_BYTES_PER_CHAR, _SHARED_MIN = 16, 64 * 1024 * 1024


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """The spreadsheet `data` (file name `name`, kind "xlsx", "csv" or "tsv") as a document (see the module's doc)."""
    if kind == "xlsx":
        return _read_workbook(data, name, limits)
    if kind in ("csv", "tsv"):
        return _read_delimited(data, name, kind, limits)
    raise ValueError(f"the spreadsheet reader does not read kind {kind!r}")


def _read_rows(canon: Canonical, sheet: str, rows: Iterable[Sequence[str]]) -> None:
    """Each non-empty row of `rows` (the sheet's rows in order, row 1 first, an empty row [] or all blanks)
    appended as a spreadsheet row, its cells read with the header's, the first non-empty row."""
    header: list[str] | None = None
    for number, cells in enumerate(rows, start=1):
        if not cells or not any(c.strip() for c in cells):
            continue  # numbering goes on: an empty row is a row of the sheet
        if header is None:
            header = [str(c).strip() for c in cells]
        canon.row(sheet, number, header, cells)


# --- workbooks ----------------------------------------------------------------------------------------------


def _read_workbook(data: bytes, name: str, limits: Limits) -> Extracted:
    what = f"an Excel workbook ({Path(name).suffix.lower() or '.xlsx'})"
    archive = open_zip(data, what)
    shared = next((i for i in archive.infolist() if i.filename.lower() == "xl/sharedstrings.xml"), None)
    if shared and shared.file_size > max(_SHARED_MIN, _SHARED_BYTES_PER_CHAR * limits.max_chars):
        raise ExtractionError(f"its text takes {shared.file_size / 2**20:,.0f} MB, more than the {limits.max_chars:,} "
                              "characters (max_chars) a document may have: not read")
    try:
        # openpyxl's load_workbook, its shared strings read faster (_reader_class). keep_vba False: a
        # macro-enabled workbook's macros are not even loaded; data_only: a formula's saved value.
        reader = _reader_class()(io.BytesIO(data), read_only=True, data_only=True, keep_vba=False, keep_links=False)
        reader.read()
        book, strings = reader.wb, reader.shared_strings
    except Exception as exc:  # openpyxl raises what its parsers meet: KeyError, XML errors, ValueError, ...
        raise ExtractionError(_not_a_workbook(set(archive.namelist()), what, exc)) from None
    canon = Canonical(name, max_chars=limits.max_chars)
    hidden, uncached = [], 0
    try:
        for sheet in book.worksheets:
            if getattr(sheet, "sheet_state", "visible") != "visible":
                hidden.append(sheet.title)
                continue
            uncached += _read_sheet(canon, sheet, book, strings, archive)
    except ExtractionError:
        raise
    except Exception as exc:  # openpyxl's and lxml's errors over a damaged part
        raise ExtractionError(f"it is damaged: its sheet {sheet.title!r} cannot be read ({exc})") from None
    finally:
        book.close()
    warnings = [f"hidden sheet{'s' * (len(hidden) > 1)} not read: {', '.join(map(repr, hidden))}"] if hidden else []
    if uncached:
        warnings.append(f"{uncached:,} formula cell{'s have' if uncached > 1 else ' has'} no saved result (the file "
                        "was written by a program and never opened in a spreadsheet app), so "
                        f"{'they read' if uncached > 1 else 'it reads'} as empty: open the file in Excel or "
                        "LibreOffice, save it, and add it again")
    title = (book.properties.title or "").strip() if book.properties else ""
    return canon.build(kind="xlsx", title=title or Path(name).stem, version=VERSIONS["xlsx"], warnings=warnings)


def _read_sheet(canon: Canonical, sheet, book, strings: list[str], archive) -> int:
    """Appends one worksheet's rows; returns how many of its formula cells have no saved value."""
    counts = [0, 0]  # cells in the file with no value (a formula never computed, a formatted blank), formulas
    canon.heading(sheet.title, 1)
    # openpyxl's path of the sheet's part (no public name), as its read-only worksheet opens it
    _read_rows(canon, sheet.title, _sheet_rows(archive, sheet._worksheet_path.lstrip("/"), book, strings, counts))
    return counts[1] if counts[0] else 0


_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"  # openpyxl's SHEET_MAIN_NS
_ROW, _VALUE, _FORMULA, _INLINE = _MAIN + "row", _MAIN + "v", _MAIN + "f", _MAIN + "is"
# No entities, no network; comments and processing instructions dropped, as openpyxl's parser drops them.
_XML = dict(resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True)


def _sheet_rows(archive, path: str, book, strings: list[str], counts: list[int]):
    """A worksheet part's rows as the sheet shows them: each row a list of cell texts ("" for an empty cell),
    [] for a row missing between two rows of the file; `counts` gets [cells with no value, formulas among those].

    The rows openpyxl's read-only worksheet gives (`iter_rows` after `reset_dimensions`: a row as wide as its
    last cell, gaps between rows filled with [], a row out of order skipped) and the values its parser reads
    (`WorkSheetParser.parse_cell` with data_only), streamed with lxml instead: its per-cell objects took most
    of a large sheet's time. A cell's number format is the one openpyxl's `ReadOnlyCell.number_format` gives."""
    from lxml import etree
    from openpyxl.styles.numbers import BUILTIN_FORMATS, BUILTIN_FORMATS_MAX_SIZE
    from openpyxl.utils.cell import coordinate_to_tuple
    from openpyxl.utils.datetime import from_excel, from_ISO8601

    epoch = book.epoch  # 1900, or 1904 for a workbook from an old Mac
    date_styles, delta_styles = book._date_formats, book._timedelta_formats
    cell_styles, custom_formats = book._cell_styles, book._number_formats
    style_ids: dict[str, int | str] = {}  # a cell's s attribute -> its style id, as openpyxl reads it
    showers: dict[int | str, object] = {}  # style id -> how a value in its number format shows (cellformat.shower)
    columns: dict[str, int] = {}  # a coordinate's letters -> column number
    digits, value_tag, formula_tag, inline_tag = "0123456789", _VALUE, _FORMULA, _INLINE
    row_counter, counter = 0, 1
    with archive.open(path) as part:
        for _, element in etree.iterparse(part, events=("end",), tag=_ROW, **_XML):
            number = element.get("r")
            if number is None:
                row_counter += 1
            else:
                try:
                    row_counter = int(number)
                except ValueError:
                    as_float = float(number)
                    if not as_float.is_integer():
                        raise ValueError(f"{number} is not a valid row number") from None
                    row_counter = int(as_float)
            col_counter, row, width, column = 0, [], 0, 0
            for c in element:
                kind, where, style = c.get("t"), c.get("r"), c.get("s")
                if style is None:
                    style = 0
                elif (known := style_ids.get(style)) is not None:
                    style = known
                else:
                    style = style_ids[style] = int(style) if style else style
                if where:
                    column = columns.get(where.rstrip(digits))
                    if column is None:
                        column = coordinate_to_tuple(where)[1]  # its error for a coordinate that is not one
                        letters = where.rstrip(digits)
                        if letters != where and not any(d in letters for d in digits):
                            columns[letters] = column
                    col_counter = column
                else:
                    col_counter += 1
                    column = col_counter
                children = len(c)  # findtext costs three times this, and a value is mostly a cell's only child
                if children == 1:
                    only = c[0]
                    text = only.text if only.tag == value_tag else None
                else:
                    text = c.findtext(value_tag) if children else None
                if kind == "inlineStr":  # its text is in its is element, never in a v
                    inline = c.find(inline_tag)
                    value = None if inline is None else _rich_text(inline)
                    if not text:
                        counts[1] += c.find(formula_tag) is not None
                elif not text:  # a formula never computed, a formatted blank
                    value = None
                    counts[1] += c.find(formula_tag) is not None
                elif kind == "s":
                    value = strings[int(text)]
                elif kind is None or kind == "n":
                    value = float(text) if ("." in text or "E" in text or "e" in text) else int(text)
                    if style in date_styles:
                        try:
                            value = from_excel(value, epoch, timedelta=style in delta_styles)
                        except (OverflowError, ValueError):
                            value = "#VALUE!"  # as openpyxl reads a date out of range
                elif kind == "b":
                    value = bool(int(text))
                elif kind == "d":
                    value = from_ISO8601(text)
                else:  # "str" (a formula's text), "e" (an error as the sheet shows it)
                    value = text
                if value is not None and value.__class__ is not str:
                    show = showers.get(style)
                    if show is None:  # the number format openpyxl's ReadOnlyCell.number_format gives
                        fmt_id = cell_styles[style].numFmtId
                        show = showers[style] = shower(
                            BUILTIN_FORMATS.get(fmt_id, "General") if fmt_id < BUILTIN_FORMATS_MAX_SIZE
                            else custom_formats[fmt_id - BUILTIN_FORMATS_MAX_SIZE])
                    value = show(value)
                # Placed by its column, as openpyxl places it (a later cell of the same column wins); None: a
                # cell with no value, counted below if the row keeps it.
                if column > width:
                    if column > width + 1:
                        row.extend([""] * (column - width - 1))
                    row.append(value)
                    width = column
                else:
                    row[column - 1] = value
            element.clear()  # a row read: dropped, so memory stays one row's
            while element.getprevious() is not None:
                del element.getparent()[0]
            while counter < row_counter:  # rows missing from the file
                counter += 1
                yield []
            if counter <= row_counter:
                counter += 1
                if not row:
                    yield ()
                    continue
                if column < width:  # as wide as its last cell in the file's order
                    del row[column:]
                if None in row:
                    counts[0] += row.count(None)
                    row = ["" if shown is None else shown for shown in row]
                yield row


def _rich_text(element) -> str:
    """The text of a string item (a shared string's `si`, an inline string's `is`): its plain text, then its
    runs' text, without phonetic runs (openpyxl's `Text.content`; children named without their namespace)."""
    plain, runs = None, []
    for child in element:
        tag = child.tag
        if not isinstance(tag, str):
            continue  # a comment
        tag = tag.rpartition("}")[2]
        if tag == "t":
            plain = child.text
        elif tag == "r":
            run = None
            for part in child:
                if isinstance(part.tag, str) and part.tag.rpartition("}")[2] == "t":
                    run = part.text
            if run is not None:
                runs.append(run)
    return "".join(runs) if plain is None else plain + "".join(runs)


def _read_shared_strings(source) -> list[str]:
    """The shared strings table as openpyxl's `read_string_table` reads it, with lxml: under a third of its time
    (0.18 s against 0.61 s for the bench's 90,000 strings)."""
    from lxml import etree

    strings = []
    for _, element in etree.iterparse(source, events=("end",), tag=_MAIN + "si", **_XML):
        strings.append(_rich_text(element).replace("x005F_", ""))
        element.clear()
        while element.getprevious() is not None:
            del element.getparent()[0]
    return strings


@functools.lru_cache(maxsize=1)
def _reader_class():
    """openpyxl's `ExcelReader` (what `load_workbook` runs), its shared strings read by `_read_shared_strings`."""
    from openpyxl.reader.excel import SHARED_STRINGS, ExcelReader

    class _Reader(ExcelReader):
        def read_strings(self):
            ct = self.package.find(SHARED_STRINGS)
            if ct is not None:
                with self.archive.open(ct.PartName[1:]) as src:
                    self.shared_strings = _read_shared_strings(src)

    return _Reader


def _not_a_workbook(names: set[str], what: str, exc: Exception) -> str:
    """The reason a zip archive openpyxl cannot open gives: what it is instead, when its parts say."""
    if "word/document.xml" in names:
        return f"it is a Word document, though its name says {what}: rename it to .docx"
    if "ppt/presentation.xml" in names:
        return f"it is a PowerPoint presentation, though its name says {what}: rename it to .pptx"
    if "mimetype" in names and "content.xml" in names:
        return f"it is an OpenDocument file, though its name says {what}"
    if not any(n.startswith("xl/") for n in names):
        return f"it is a zip archive, not {what}"
    return f"it is damaged: the workbook's parts cannot be read ({type(exc).__name__}: {exc})"


# --- CSV and TSV ----------------------------------------------------------------------------------------------


def _read_delimited(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    what = "a CSV file (.csv)" if kind == "csv" else f"a tab-separated file ({Path(name).suffix.lower() or '.tsv'})"
    encoding = _encoding(data, what)
    stream = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors="replace", newline="")
    head, size = [], 0
    while size < _SAMPLE and (line := stream.readline()):  # whole lines, so the csv module sees every line once
        head.append(line)
        size += len(line)
    dialect = _dialect("".join(line[:_SAMPLE_LINE] for line in head)[:_SAMPLE], kind)
    sheet = Path(name).stem or "Sheet1"
    canon = Canonical(name, max_chars=limits.max_chars)
    canon.heading(sheet, 1)
    reader = csv.reader(itertools.chain(head, stream), dialect)
    try:
        _read_rows(canon, sheet, reader)
    except csv.Error as exc:
        raise ExtractionError(f"it is damaged near line {reader.line_num:,}: {exc} (a quote never closed, or a "
                              "cell far too long)") from None
    return canon.build(kind=kind, title=sheet, version=VERSIONS[kind])


def _encoding(data: bytes, what: str) -> str:
    """The text encoding of a CSV or TSV file's bytes (a Python codec's name)."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # Excel's "Unicode text": tab-separated UTF-16
    if sniff(data) != "text":
        raise ExtractionError(content_mismatch(data, what))
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:  # in slices, so a large file is checked without a second copy of its text
        for i in range(0, len(data), 1 << 20):
            decoder.decode(memoryview(data)[i:i + (1 << 20)], final=i + (1 << 20) >= len(data))
        return "utf-8"
    except UnicodeDecodeError:
        return _guess_charset(data)


def _guess_charset(data: bytes) -> str:
    """charset-normalizer's guess from the lines with non-ASCII bytes (the rest says nothing about the charset).
    On a short sample it often ranks a DOS or Mac code page first by a hair; when a Windows code page is as good,
    within a small margin, that is what a CSV from Excel or a bank uses: Windows-1252 first."""
    from charset_normalizer import from_bytes

    lines, size, at = [], 0, 0
    while size < _CHARSET_SAMPLE and (m := _HIGH.search(data, at)):
        start = max(data.rfind(b"\n", 0, m.start()) + 1, m.start() - 1024)  # a long line: 2 KB around
        end = min(data.find(b"\n", m.start()) + 1 or len(data), m.start() + 1024)
        lines.append(data[start:end])
        size, at = size + end - start, end
    matches = from_bytes(b"".join(lines))
    best = matches.best()
    if best is None:
        return "cp1252"  # bytes no charset explains: Windows' Western European, with what fails replaced
    near = [m for m in matches if m.chaos <= best.chaos + 0.05]
    if any("cp1252" in m.could_be_from_charset for m in near):
        return "cp1252"
    return next((m.encoding for m in near if m.encoding.startswith("cp125")), best.encoding)


def _dialect(sample: str, kind: str) -> csv.Dialect | type[csv.Dialect]:
    """clevercsv's dialect of a sample of the file's first lines, as the csv module's; a TSV's delimiter is the tab."""
    import clevercsv

    try:
        found = clevercsv.Detector().detect(sample, delimiters=["\t"] if kind == "tsv" else None)
    except Exception:  # clevercsv gives up on text it cannot judge: the usual dialect then
        found = None
    if found is None:
        return csv.excel_tab if kind == "tsv" else csv.excel
    # No delimiter found: one column, split on a character no text holds, so each line is one cell.
    found.delimiter = "\t" if kind == "tsv" else found.delimiter or "\x1f"
    return found.to_csv_dialect()

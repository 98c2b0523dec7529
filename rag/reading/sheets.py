"""Spreadsheets: an Excel workbook (.xlsx, .xlsm), a CSV (.csv) or tab-separated (.tsv, .tab) file becomes
canonical text one row at a time, each cell read with its column's header, as the sheet shows it.

- A workbook: every visible sheet is a section headed by its name (hidden sheets are skipped, with a warning
  naming them). A sheet's header is its first non-empty row; that row and every following non-empty row is one
  line ("Month: March | Rent: 850") and a `Place` with the sheet's real row number, so a passage's place is its
  A1 range (`Budget!A4:F6`). Cells read as the sheet displays them (`_display`): the value a formula last
  computed, numbers in their number format (12.5%, $1,250.00, 2024-03-15), TRUE/FALSE.
- A CSV or TSV file: one "sheet" named after the file's stem (budget.csv -> "budget"), its first row the header,
  rows numbered as a spreadsheet numbers them (row 1 = the header; a quoted cell over several lines is one row).
  The encoding is UTF-8 (with or without a BOM), UTF-16 with a BOM, else charset-normalizer's guess; the
  dialect (delimiter, quotes) is clevercsv's, a TSV's delimiter always the tab.

Rows are streamed (openpyxl's read-only mode, the csv module over a decoding stream), so a huge file costs
bounded memory, and reading stops at `Limits.max_chars` with a reason. A workbook is checked by
`rag.reading.archive.open_zip` before openpyxl sees a byte; a macro-enabled workbook's macros are never read.

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
import datetime as dt
import functools
import io
import itertools
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Iterable, Sequence

from rag.reading.archive import content_mismatch, open_zip, sniff
from rag.reading.canonical import Canonical
from rag.reading.document import ExtractionError, Extracted, Limits

VERSIONS = {"xlsx": "xlsx-1", "csv": "csv-1", "tsv": "tsv-1"}

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
    import openpyxl

    what = f"an Excel workbook ({Path(name).suffix.lower() or '.xlsx'})"
    archive = open_zip(data, what)
    shared = next((i for i in archive.infolist() if i.filename.lower() == "xl/sharedstrings.xml"), None)
    if shared and shared.file_size > max(_SHARED_MIN, _SHARED_BYTES_PER_CHAR * limits.max_chars):
        raise ExtractionError(f"its text takes {shared.file_size / 2**20:,.0f} MB, more than the {limits.max_chars:,} "
                              "characters (max_chars) a document may have: not read")
    try:
        # keep_vba False: a macro-enabled workbook's macros are not even loaded; data_only: a formula's saved value
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_vba=False,
                                      keep_links=False)
    except Exception as exc:  # openpyxl raises what its parsers meet: KeyError, XML errors, ValueError, ...
        raise ExtractionError(_not_a_workbook(set(archive.namelist()), what, exc)) from None
    canon = Canonical(name, max_chars=limits.max_chars)
    hidden, uncached = [], 0
    try:
        for sheet in book.worksheets:
            if getattr(sheet, "sheet_state", "visible") != "visible":
                hidden.append(sheet.title)
                continue
            uncached += _read_sheet(canon, sheet, archive)
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


def _read_sheet(canon: Canonical, sheet, archive) -> int:
    """Appends one worksheet's rows; returns how many of its formula cells have no saved value."""
    # The dimension a file states may claim a million rows or columns; openpyxl pads every row to it. Without
    # it, a row is as wide as its last cell, and only the gaps between rows that exist are filled (with []).
    sheet.reset_dimensions()
    present_empty = 0  # cells in the file with no value: a formula never computed, or a formatted blank

    def shown_rows():
        nonlocal present_empty
        for cells in sheet.iter_rows(min_row=1):  # a gap between rows in the file comes as ()
            row = []
            for cell in cells:
                value = cell.value
                if value is None:
                    present_empty += hasattr(cell, "row")  # EmptyCell, openpyxl's filler, has none
                    row.append("")
                elif isinstance(value, str):  # text, and errors ("#DIV/0!") as the sheet shows them
                    row.append(value)
                else:
                    row.append(_display(value, cell.number_format))
            yield row

    canon.heading(sheet.title, 1)
    _read_rows(canon, sheet.title, shown_rows())
    path = getattr(sheet, "_worksheet_path", None)  # openpyxl's, no public name: without it, no count
    return _uncached_formulas(archive, path) if present_empty and path else 0


def _uncached_formulas(archive, path: str) -> int:
    """How many cells of the worksheet part `path` hold a formula and no value: openpyxl's data_only mode reads
    them as empty, like blank cells, so the sheet's XML is streamed once more (only when a sheet has cells
    that read as empty)."""
    from lxml import etree

    count = 0
    with archive.open(path.lstrip("/")) as part:
        for _, element in etree.iterparse(part, events=("end",), tag=("{*}c", "{*}row"), resolve_entities=False):
            if element.tag.endswith("}c"):
                count += element.find("{*}f") is not None and not element.findtext("{*}v")
            else:  # a row's cells are counted: drop them, so memory stays one row's
                element.clear()
                while element.getprevious() is not None:
                    del element.getparent()[0]
    return count


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


# --- how a cell shows -----------------------------------------------------------------------------------------

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
# Excel's short date and date-time (built-in formats 14 and 22) follow the computer's locale: shown as ISO.
_LOCALE_FORMATS = {"mm-dd-yy": "yyyy-mm-dd", "m/d/yy h:mm": "yyyy-mm-dd hh:mm"}
_TOKEN = re.compile(r'"[^"]*"?|\\.|_.|\*.|\[[^\]]*\]?|am/pm|a/p|e[+-]|general|([ymdhse])\1*|.', re.I | re.S)
_CORE = re.compile(r"([0#?,]*)(\.?)([0#?]*)(?:[eE]([+-])([0#]+))?")
_ZERO_DAY = dt.datetime(1899, 12, 30)  # Excel's serial 0, which a time of day or a duration counts from


def _display(value, number_format: str | None) -> str:
    """A cell's value as a spreadsheet with `number_format` shows it.

    Covered: General (no trailing ".0", 15 significant digits), fixed decimals and thousands, percentages,
    scientific notation, currency and other literal text (`$`, `"kr"`, `[$€-407]`), sections for negative
    numbers and zero (`#,##0;(#,##0);"-"`), dates and times (`yyyy mmmm dddd hh:mm:ss.0 AM/PM`, elapsed `[h]`),
    English month and day names, Excel's locale-dependent short date as ISO, booleans TRUE/FALSE.

    Not covered (the value shows as with General): fractions (`# ?/?`), digits with text between them
    (`000-00-0000`), conditions (`[>100]`), the text section (`@`), fill and padding widths (a fill of spaces
    shows one space), month names in other languages, calendars other than the Gregorian.

    >>> _display(0.125, "0.0%"), _display(0.5, "0%"), _display(1250, "#,##0.00"), _display(3.14159, "0.00")
    ('12.5%', '50%', '1,250.00', '3.14')
    >>> _display(1250, '"$"#,##0.00'), _display(-1250, "[$€-407] #,##0.00"), _display(1250, '#,##0 "kr"')
    ('$1,250.00', '-€ 1,250.00', '1,250 kr')
    >>> _display(-5, "#,##0.00;[Red](#,##0.00)"), _display(0, '_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_)')
    ('(5.00)', '$ -')
    >>> _display(12345.678, "0.00E+00"), _display(42, "00000"), _display(0.5, "#.##"), _display(2.5, "0")
    ('1.23E+04', '00042', '.5', '3')
    >>> _display(1234567, '#,##0.0,"k"'), _display(7, "# ?/?"), _display(-0.001, "0.00")
    ('1,234.6k', '7', '0.00')
    >>> d = dt.datetime(2024, 3, 15, 14, 5, 9)
    >>> _display(d, "yyyy-mm-dd"), _display(d, "dd/mm/yyyy hh:mm"), _display(d, "mm-dd-yy"), _display(d, "d mmmm yyyy")
    ('2024-03-15', '15/03/2024 14:05', '2024-03-15', '15 March 2024')
    >>> _display(dt.time(14, 5), "h:mm AM/PM"), _display(dt.timedelta(hours=30), "[h]:mm"), _display(d, "ddd d-mmm-yy")
    ('2:05 PM', '30:00', 'Fri 15-Mar-24')
    >>> _display(dt.time(9, 3, 7, 250000), "mm:ss.00"), _display(dt.date(2024, 3, 15), "General")
    ('03:07.25', '2024-03-15')
    >>> _display(True, "General"), _display(850.0, "General"), _display(0.1 + 0.2, None), _display(1.5e19, "General")
    ('TRUE', '850', '0.3', '1.5E+19')
    """
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    fmt = number_format or "General"
    try:
        if isinstance(value, (int, float)) and (date := _serial_date(fmt)):  # openpyxl reads most as dates already
            value = date(value)
        if isinstance(value, (int, float)):
            sections = _number_format(fmt)
            spec, minus = sections[0], value < 0
            if value < 0 and len(sections) > 1 and sections[1] is not _EMPTY:
                spec, minus = sections[1], False
            elif value == 0 and len(sections) > 2:
                spec = sections[2]
            if spec is not None:
                return _number(spec, value, minus)
        elif isinstance(value, (dt.datetime, dt.date, dt.time, dt.timedelta)):
            return _date(value, _date_format(_LOCALE_FORMATS.get(fmt.strip().lower(), fmt)))
    except (ValueError, ArithmeticError):
        pass  # a value the format cannot show (a date out of range): as General shows it
    return _general(value) if isinstance(value, (int, float)) else str(value)


@functools.lru_cache(maxsize=256)
def _serial_date(fmt: str):
    """How a number in a date or time format becomes the date or duration it stands for; None for a number."""
    from openpyxl.styles import numbers
    from openpyxl.utils.datetime import from_excel

    return functools.partial(from_excel, timedelta=numbers.is_timedelta_format(fmt)) if numbers.is_date_format(fmt) \
        else None


def _general(value: float) -> str:
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e15):
        return str(int(value))
    return format(value, ".15g").replace("e", "E")  # 15 digits, as Excel keeps: 0.1 + 0.2 shows 0.3


def _sections(fmt: str) -> list[list[str]]:
    """The format's sections (positive; negative; zero; text), each as its tokens."""
    sections: list[list[str]] = [[]]
    for token in (m.group() for m in _TOKEN.finditer(fmt)):
        sections.append([]) if token == ";" else sections[-1].append(token)
    return sections


def _literal(token: str) -> str:
    """What a token that is not a digit shows: a quoted text, an escaped character, a currency ([$€-407] shows
    "€"); padding as wide as a character (_x), a colour, a locale or a condition nothing."""
    head = token[0]
    if head in '"\\':
        return token.strip('"') if head == '"' else token[1:]
    if head in "_*":
        return " " if token == "* " else ""  # a fill of spaces parts a currency symbol from its number
    if head == "[":
        m = re.match(r"\[\$([^-\]]*)", token)
        return m.group(1) if m else ""
    return token


_EMPTY = ("text", "", "")  # a section with nothing in it shows nothing


@functools.lru_cache(maxsize=256)
def _number_format(fmt: str) -> tuple:
    """Each section of a number format, compiled once: ("text", shown), ("general", prefix, suffix),
    ("digits", prefix, suffix, factor, places, keep, min_int, thousands, point, exponent); None for a section
    this does not cover."""
    return tuple(_compile_number(tokens) for tokens in _sections(fmt)[:3])


def _compile_number(tokens: list[str]):
    if not tokens:
        return _EMPTY
    lowered = [t.lower() for t in tokens]
    if "general" in lowered:
        at = lowered.index("general")
        return ("general", "".join(map(_literal, tokens[:at])), "".join(map(_literal, tokens[at + 1:])))
    digits = [i for i, t in enumerate(tokens) if t in ("0", "#", "?", ".")]
    if "@" in tokens:
        return None  # the text section: a number in it shows as General
    if not digits:  # no digits: the section is text ("-" for zero)
        return ("text", "".join(map(_literal, tokens)).strip())
    first, last = digits[0], digits[-1]
    while last + 1 < len(tokens) and tokens[last + 1] == ",":  # "#,##0,": scaled by a thousand
        last += 1
    text = "".join(tokens[first:last + 1])
    core = _CORE.fullmatch(text.rstrip(","))
    if core is None or "/" in tokens:
        return None  # digits with text between them, fractions: not covered
    whole, point, fraction, exp_sign, exp = core.groups()
    scale = len(text) - len(text.rstrip(",")) + len(whole) - len(whole.rstrip(","))
    factor = Decimal(100) ** lowered.count("%") / Decimal(1000) ** scale
    whole = whole.rstrip(",")
    keep = len(fraction.rstrip("#?")) if "0" in fraction else 0  # "0.0#": at least one decimal shows
    exponent = (exp_sign, exp.count("0") or 1) if exp_sign else None
    return ("digits", "".join(map(_literal, tokens[:first])), "".join(map(_literal, tokens[last + 1:])), factor,
            len(fraction), keep, whole.count("0"), "," in whole, point, exponent)


def _number(spec: tuple, value: float, minus: bool) -> str:
    if spec[0] != "digits":
        return spec[1] if spec[0] == "text" else (("-" if minus else "") + spec[1] + _general(abs(value)) + spec[2])
    _, prefix, suffix, factor, places, keep, min_int, thousands, point, exponent = spec
    number = (Decimal(repr(abs(value))) if isinstance(value, float) else Decimal(abs(value))) * factor
    if exponent:
        mantissa, exp = f"{float(number):.{places}E}".split("E")
        sign = "-" if int(exp) < 0 else ("+" if exponent[0] == "+" else "")
        shown = f"{mantissa}E{sign}{str(abs(int(exp))).zfill(exponent[1])}"
    else:
        rounded = number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)  # Excel rounds half up
        int_part, _, frac_part = f"{rounded:f}".partition(".")
        frac_part = frac_part.rstrip("0").ljust(keep, "0")
        int_part = "" if int_part == "0" and min_int == 0 else int_part.zfill(min_int)
        if thousands and int_part:
            int_part = f"{int(int_part):,}"
        shown = int_part + point + frac_part
        minus = minus and bool(rounded)
    return (("-" if minus else "") + (prefix + shown + suffix).strip())


@functools.lru_cache(maxsize=256)
def _date_format(fmt: str) -> tuple[tuple[tuple[str, object], ...], int, bool]:
    """A date format's first section compiled once: (its parts as (what, how), digits of a second's fraction,
    whether hours count to 12). A `what` is "y" "m" "d" "w" (weekday) "h" "M" (minutes) "s" "f" (fraction)
    "p" (AM/PM) "[" (elapsed) or "" (literal text)."""
    tokens = _sections(fmt)[0]
    lowered = [t.lower() for t in tokens]
    kinds = [t[0] if t[0] in "ymdhs" else "" for t in lowered]
    twelve = any(t in ("am/pm", "a/p") for t in lowered)
    parts: list[tuple[str, object]] = []
    fraction, i = 0, 0
    while i < len(tokens):
        t, low, kind = tokens[i], lowered[i], kinds[i]
        if m := re.fullmatch(r"\[(h+|m+|s+)\]", low):
            parts.append(("[", (m.group(1)[0], len(m.group(1)))))
        elif kind == "m" and len(low) <= 2 and (next((k for k in reversed(kinds[:i]) if k), "") == "h"
                                                or next((k for k in kinds[i + 1:] if k), "") == "s"
                                                or any(re.fullmatch(r"\[h+\]", u) for u in lowered[:i])):
            parts.append(("M", len(low)))  # m after an hour or before seconds is the minutes
        elif kind == "d" and len(low) > 2:
            parts.append(("w", len(low)))
        elif kind:
            parts.append((kind, len(low)))
            if kind == "s" and i + 1 < len(tokens) and tokens[i + 1] == ".":
                fraction = sum(1 for _ in itertools.takewhile(lambda u: u == "0", tokens[i + 2:]))
                parts.append(("f", fraction))
                i += 1 + fraction
        elif low in ("am/pm", "a/p"):
            parts.append(("p", low == "am/pm"))
        elif low == "e":
            parts.append(("y", 4))
        else:
            parts.append(("", _literal(t)))
        i += 1
    return tuple(parts), fraction, twelve


def _date(value, compiled: tuple) -> str:
    parts, fraction, twelve = compiled
    if isinstance(value, (dt.timedelta, dt.time)):  # a duration, a time of day: from Excel's day 0
        moment = _ZERO_DAY + value if isinstance(value, dt.timedelta) else dt.datetime.combine(_ZERO_DAY, value)
    else:
        moment = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())
    if not any(what in "ymdwhMs[" for what, _ in parts if what):  # a number format on a date: ISO
        return moment.isoformat(sep=" ") if moment.time() != dt.time() else moment.date().isoformat()
    if moment.microsecond:  # rounded as it shows
        step = dt.timedelta(seconds=10 ** -fraction)
        moment = _ZERO_DAY + round((moment - _ZERO_DAY) / step) * step
    elapsed = (moment - _ZERO_DAY).total_seconds()
    out = []
    for what, how in parts:
        if what == "y":
            out.append(str(moment.year) if how > 2 else f"{moment.year % 100:02d}")
        elif what == "m":
            name = _MONTHS[moment.month - 1]
            out.append({1: str(moment.month), 2: f"{moment.month:02d}", 3: name[:3], 5: name[0]}.get(how, name))
        elif what == "d":
            out.append(f"{moment.day:0{how}d}")
        elif what == "w":
            out.append(_DAYS[moment.weekday()][:3] if how == 3 else _DAYS[moment.weekday()])
        elif what == "h":
            out.append(f"{(moment.hour % 12 or 12) if twelve else moment.hour:0{min(how, 2)}d}")
        elif what == "M":
            out.append(f"{moment.minute:0{how}d}")
        elif what == "s":
            out.append(f"{moment.second:0{min(how, 2)}d}")
        elif what == "f":
            out.append("." + f"{moment.microsecond:06d}"[:how] if how else ".")
        elif what == "p":
            out.append(("AM" if moment.hour < 12 else "PM")[:2 if how else 1])
        elif what == "[":  # elapsed hours, minutes or seconds
            out.append(str(int(elapsed // {"h": 3600, "m": 60, "s": 1}[how[0]])).zfill(how[1]))
        else:
            out.append(how)
    return "".join(out).strip()


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

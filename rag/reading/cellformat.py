"""How a spreadsheet cell shows: a value in its number format as the sheet displays it (12.5%, $1,250.00,
2024-03-15, TRUE), for the Excel reader (rag.reading.sheets).

- `display(value, number_format)`: General (no trailing ".0", 15 significant digits), fixed decimals and
  thousands, percentages, scientific notation, currency and other literal text, sections for negative numbers
  and zero, dates and times, booleans (its doc lists what it covers and what not);
- `shower(number_format)`: the same as a function of the value, the format compiled once (a large sheet's cells
  share a handful of formats).

What it does not do: read a file (the reader does), or show a number the way a non-English locale would.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re
from decimal import ROUND_HALF_UP, Decimal

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
# Excel's short date and date-time (built-in formats 14 and 22) follow the computer's locale: shown as ISO.
_LOCALE_FORMATS = {"mm-dd-yy": "yyyy-mm-dd", "m/d/yy h:mm": "yyyy-mm-dd hh:mm"}
_TOKEN = re.compile(r'"[^"]*"?|\\.|_.|\*.|\[[^\]]*\]?|am/pm|a/p|e[+-]|general|([ymdhse])\1*|.', re.I | re.S)
_CORE = re.compile(r"([0#?,]*)(\.?)([0#?]*)(?:[eE]([+-])([0#]+))?")
_ZERO_DAY = dt.datetime(1899, 12, 30)  # Excel's serial 0, which a time of day or a duration counts from


def display(value, number_format: str | None) -> str:
    """A cell's value as a spreadsheet with `number_format` shows it.

    Covered: General (no trailing ".0", 15 significant digits), fixed decimals and thousands, percentages,
    scientific notation, currency and other literal text (`$`, `"kr"`, `[$€-407]`), sections for negative
    numbers and zero (`#,##0;(#,##0);"-"`), dates and times (`yyyy mmmm dddd hh:mm:ss.0 AM/PM`, elapsed `[h]`),
    English month and day names, Excel's locale-dependent short date as ISO, booleans TRUE/FALSE.

    Not covered (the value shows as with General): fractions (`# ?/?`), digits with text between them
    (`000-00-0000`), conditions (`[>100]`), the text section (`@`), fill and padding widths (a fill of spaces
    shows one space), month names in other languages, calendars other than the Gregorian.

    >>> display(0.125, "0.0%"), display(0.5, "0%"), display(1250, "#,##0.00"), display(3.14159, "0.00")
    ('12.5%', '50%', '1,250.00', '3.14')
    >>> display(1250, '"$"#,##0.00'), display(-1250, "[$€-407] #,##0.00"), display(1250, '#,##0 "kr"')
    ('$1,250.00', '-€ 1,250.00', '1,250 kr')
    >>> display(-5, "#,##0.00;[Red](#,##0.00)"), display(0, '_("$"* #,##0.00_);_("$"* (#,##0.00);_("$"* "-"??_)')
    ('(5.00)', '$ -')
    >>> display(12345.678, "0.00E+00"), display(42, "00000"), display(0.5, "#.##"), display(2.5, "0")
    ('1.23E+04', '00042', '.5', '3')
    >>> display(1234567, '#,##0.0,"k"'), display(7, "# ?/?"), display(-0.001, "0.00")
    ('1,234.6k', '7', '0.00')
    >>> d = dt.datetime(2024, 3, 15, 14, 5, 9)
    >>> display(d, "yyyy-mm-dd"), display(d, "dd/mm/yyyy hh:mm"), display(d, "mm-dd-yy"), display(d, "d mmmm yyyy")
    ('2024-03-15', '15/03/2024 14:05', '2024-03-15', '15 March 2024')
    >>> display(dt.time(14, 5), "h:mm AM/PM"), display(dt.timedelta(hours=30), "[h]:mm"), display(d, "ddd d-mmm-yy")
    ('2:05 PM', '30:00', 'Fri 15-Mar-24')
    >>> display(dt.time(9, 3, 7, 250000), "mm:ss.00"), display(dt.date(2024, 3, 15), "General")
    ('03:07.25', '2024-03-15')
    >>> display(True, "General"), display(850.0, "General"), display(0.1 + 0.2, None), display(1.5e19, "General")
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
def shower(number_format: str):
    """A function that shows a cell's value (not None, not text) as `display(value, number_format)` does: for a
    number in a format of one section (General, "#,##0.00", "0.0%"), with the format compiled once rather than
    looked up for each cell.

    >>> shower("0.0%")(0.125), shower("#,##0.00")(-1250), shower("General")(True), shower("yyyy-mm-dd")(45366)
    ('12.5%', '-1,250.00', 'TRUE', '2024-03-15')
    """
    fmt = number_format or "General"

    def shown(value) -> str:
        return display(value, fmt)

    try:
        if _serial_date(fmt):
            return shown
        sections = _number_format(fmt)
    except Exception:  # a format `display` cannot compile: its own way, and its errors, each time
        return shown
    spec = sections[0]
    if len(sections) != 1 or spec is None:
        return shown

    def number(value) -> str:
        if value.__class__ is float or value.__class__ is int:
            try:
                return _number(spec, value, value < 0)
            except (ValueError, ArithmeticError):
                return _general(value)
        return display(value, fmt)

    return number


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

"""Word: a .docx (or macro-enabled .docm) document's text, read in document order into `Canonical`.

The archive is checked first (`rag.reading.archive.open_zip`: really a zip, whole, no password, no zip bomb),
then python-docx opens the checked bytes and its lxml tree is walked, because python-docx has no API for
most of what a reader needs (text boxes, footnotes, outline levels, content controls):

- the body's paragraphs and tables, in the order the document has them, content controls and custom XML
  opened up; a paragraph's text is its runs' text (hyperlinks, fields' results, tracked insertions), tabs
  and line breaks kept as spaces and line breaks;
- a heading is a paragraph whose style is "Heading 1".."Heading 9" (or based on one), or whose outline level
  (set on the paragraph or its style) is 1..9: it names a section; a "Title" paragraph is a paragraph, and
  the document's title when its properties name none;
- a list item is a block of its own, with "- " for a bullet and its number ("2.", "b)") for a numbered list;
- a table is a pipe table, its first row the header; a cell spanning columns is written once, a cell
  spanning rows in each of them, a nested table flattened into its cell;
- a text box is its own blocks, after the paragraph it is anchored in (a text box that Word also saves in
  its older VML form is read once);
- footnotes and endnotes come after the body, under "Footnotes" / "Endnotes", one block a note ("[1] ...");
  the body marks each reference "[1]", numbered in order of reference, as Word numbers them.

The title is the document's properties' title, else its "Title" paragraph, else its first heading, else the
file's name. A .docm is read as data: its content type is rewritten in memory so python-docx opens it, its
macros are emptied out of that copy, and nothing in it is ever run.

What it does not do: read the old binary .doc, headers, footers, comments, deleted text of tracked changes,
text inside charts or embedded objects, or a table of contents (it repeats the headings); keep formatting.

>>> import docx, io
>>> d = docx.Document(); _ = d.add_heading("Garden", 1); _ = d.add_paragraph("Tomatoes need sun.")
>>> _ = d.add_paragraph("Water daily.", style="List Bullet"); buf = io.BytesIO(); d.save(buf)
>>> doc = read(buf.getvalue(), "garden.docx", "docx", Limits())
>>> print(doc.text)
Garden
<BLANKLINE>
Tomatoes need sun.
<BLANKLINE>
- Water daily.
>>> doc.title, [(s.path, doc.text[s.start:s.end]) for s in doc.sections]
('Garden', [(('Garden',), 'Tomatoes need sun.\\n\\n- Water daily.')])
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

from lxml import etree

from rag.reading.archive import open_zip, read_member
from rag.reading.canonical import Canonical
from rag.reading.document import TITLE_MAX, ExtractionError, Extracted, Limits

# docx-2: headings keep their words' underscores (document.clean_heading).
VERSIONS = {"docx": "docx-2"}

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
_CORE = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"

(_P, _TBL, _TR, _TC, _T, _TAB, _PTAB, _BR, _CR, _NBH, _TXBX, _SDT, _SDT_CONTENT, _SDT_PR, _CUSTOM_XML, _PPR,
 _RPR, _DEL, _MOVE_FROM, _RUBY_TEXT, _FOOTNOTE_REF, _ENDNOTE_REF, _ALT_CHUNK, _VAL, _ID, _TYPE) = (_W + t for t in (
    "p", "tbl", "tr", "tc", "t", "tab", "ptab", "br", "cr", "noBreakHyphen", "txbxContent", "sdt", "sdtContent",
    "sdtPr", "customXml", "pPr", "rPr", "del", "moveFrom", "rt", "footnoteReference", "endnoteReference",
    "altChunk", "val", "id", "type"))
_ALT, _CHOICE, _FALLBACK = _MC + "AlternateContent", _MC + "Choice", _MC + "Fallback"
# No text, or text the document does not show (deleted, ruby annotations, the older copy of a drawing).
_SKIP = {_PPR, _RPR, _DEL, _MOVE_FROM, _RUBY_TEXT, _SDT_PR, _FALLBACK}

# The main part's content types python-docx refuses, though their XML is a Word document's.
_MAIN = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
_OTHER_MAINS = (b"application/vnd.ms-word.document.macroEnabled.main+xml",
                b"application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
                b"application/vnd.ms-word.template.macroEnabledTemplate.main+xml")
# A zip that is another format's: a member it always has, what it is, its suffix.
_OTHER_ZIPS = [("xl/workbook.xml", "an Excel workbook", ".xlsx"),
               ("ppt/presentation.xml", "a PowerPoint deck", ".pptx"),
               ("content.xml", "an OpenDocument file", ".odt, .ods or .odp"),
               ("META-INF/container.xml", "an e-book", ".epub")]
_NOTES = (("footnote", "Footnotes"), ("endnote", "Endnotes"))
_SEPARATORS = {"separator", "continuationSeparator", "continuationNotice"}  # the lines above notes, no notes
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """A Word document's canonical text (see the module's doc); `ExtractionError` when it cannot be read."""
    if kind not in VERSIONS:
        raise ValueError(f"the Word reader reads {sorted(VERSIONS)}, not {kind!r}")
    suffix = Path(name).suffix.lower()
    what = f"a Word document ({suffix if suffix in ('.docx', '.docm') else '.docx'})"
    document = _open(data, what)
    walk = _Walk(document, name, limits)
    body = document.element.find(_W + "body")
    if body is not None:
        walk.blocks(body)
    walk.notes()
    if not walk.c.chars:
        raise ExtractionError("the document holds no text")
    return walk.c.build(kind=kind, title=_core_title(document) or walk.title, version=VERSIONS[kind],
                        warnings=walk.warnings)


# --- the file ------------------------------------------------------------------------------------------------


def _open(data: bytes, what: str):
    import docx

    archive = open_zip(data, what)
    names = set(archive.namelist())
    other = next((f"its content is {kind}, though its name says {what}: rename it to {suffix}"
                  for member, kind, suffix in _OTHER_ZIPS if member in names and "word/document.xml" not in names), "")
    if other or "[Content_Types].xml" not in names or "_rels/.rels" not in names:
        raise ExtractionError(other or f"it is a zip archive, not {what}: it holds none of a Word document's parts")
    types = read_member(archive, "[Content_Types].xml")
    if any(t in types for t in _OTHER_MAINS):
        data = _as_docx(archive, types)
    try:
        return docx.Document(io.BytesIO(data))
    except ValueError as exc:
        if "content type is" in str(exc):  # python-docx: the main part is not a Word document's
            kind = str(exc).rsplit("content type is", 1)[1].strip(" '")
            raise ExtractionError(f"it is not {what}: its main part is of another kind ({kind[:80]})") from None
        raise ExtractionError(f"it is damaged: its parts cannot be read as {what} ({str(exc)[:120]})") from None
    except ExtractionError:
        raise
    except Exception as exc:  # KeyError (a missing part), XMLSyntaxError, BadZipFile (a bad checksum), ...
        detail = f"{type(exc).__name__}: {str(exc)[:120]}"
        raise ExtractionError(f"it is damaged: its parts cannot be read as {what} ({detail})") from None


def _as_docx(archive: zipfile.ZipFile, types: bytes) -> bytes:
    """The package as a plain .docx: python-docx refuses a macro-enabled document or a template by its main
    part's content type alone. Macros (vbaProject.bin) are emptied in this copy: they are never read, let
    alone run, and need not sit in memory."""
    for other in _OTHER_MAINS:
        types = types.replace(other, _MAIN)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if info.filename == "[Content_Types].xml":
                body = types
            elif info.filename.lower().endswith("vbaproject.bin"):
                body = b""
            else:
                body = read_member(archive, info.filename)
            copy.writestr(info.filename, body)
    return out.getvalue()


def _core_title(document) -> str:
    # Not `document.core_properties`: on a file without properties python-docx makes some, titled "Word Document".
    try:
        part = document.part.package.part_related_by(_CORE)
        return (part.core_properties.title or "").strip()
    except (KeyError, ValueError, AttributeError):
        return ""


def _xml(part, reltype: str):
    """The XML of the part `part` relates to by `reltype` ("styles", "footnotes", ...), or None."""
    try:
        target = part.part_related_by(_RELS + reltype)
    except (KeyError, ValueError):
        return None
    element = getattr(target, "element", None)
    if element is not None:
        return element
    try:  # a part python-docx keeps as bytes (footnotes, endnotes)
        return etree.fromstring(target.blob, _PARSER)
    except (etree.XMLSyntaxError, ValueError):
        raise ExtractionError(f"it is damaged: its {reltype} cannot be read") from None


def _int(element, default: int | None = None) -> int | None:
    try:
        return int(element.get(_VAL))
    except (AttributeError, TypeError, ValueError):
        return default


def _wrapped(element) -> list:
    """The containers a wrapper element keeps its content in: a content control's content (none while it shows
    its placeholder, or when it is a table of contents), custom XML's, an alternate content's first choice."""
    tag = element.tag
    if tag == _SDT:
        pr = element.find(_SDT_PR)
        if pr is not None and (pr.find(_W + "showingPlcHdr") is not None or any(
                g.get(_VAL) == "Table of Contents" for g in pr.iter(_W + "docPartGallery"))):
            return []
        return element.findall(_SDT_CONTENT)
    if tag == _CUSTOM_XML:
        return [element]
    if tag == _ALT:
        choice = element.find(_CHOICE)
        return [choice] if choice is not None else element.findall(_FALLBACK)
    return []


def _children(element, tag: str):
    """The children with `tag`, those inside wrappers too (a row in a content control)."""
    for child in element:
        if child.tag == tag:
            yield child
        else:
            for inner in _wrapped(child):
                yield from _children(inner, tag)


# --- styles and numbering ------------------------------------------------------------------------------------


def _styles(root) -> tuple[dict, str]:
    """({style id: (name, based on, outline level, numbering id, list level)}, the default paragraph style)."""
    styles, default = {}, ""
    if root is None:
        return styles, default
    for s in root.findall(_W + "style"):
        if s.get(_TYPE, "paragraph") != "paragraph":
            continue
        sid = s.get(_W + "styleId", "")
        name = s.find(_W + "name")
        based = s.find(_W + "basedOn")
        ppr = s.find(_PPR)
        num = ppr.find(_W + "numPr") if ppr is not None else None
        styles[sid] = ((name.get(_VAL, "") if name is not None else sid).strip().lower(),
                       based.get(_VAL) if based is not None else None,
                       _int(ppr.find(_W + "outlineLvl")) if ppr is not None else None,
                       num.find(_W + "numId").get(_VAL) if num is not None and num.find(_W + "numId") is not None
                       else None,
                       _int(num.find(_W + "ilvl")) if num is not None else None)
        if s.get(_W + "default") in ("1", "true", "on"):
            default = sid
    return styles, default


def _numbering(root) -> dict[str, dict[int, tuple[str, str, int]]]:
    """{numbering id: {list level: (number format, level text like "%1.", start)}}."""
    if root is None:
        return {}

    def levels(parent, into):
        for lvl in parent.findall(_W + "lvl"):
            level = _level_of(lvl)
            fmt = lvl.find(_W + "numFmt")
            into[level] = (fmt.get(_VAL, "decimal") if fmt is not None else "decimal",
                           (lvl.find(_W + "lvlText").get(_VAL, "") if lvl.find(_W + "lvlText") is not None else ""),
                           _int(lvl.find(_W + "start"), 1))
        return into

    abstract = {a.get(_W + "abstractNumId"): levels(a, {}) for a in root.findall(_W + "abstractNum")}
    nums = {}
    for num in root.findall(_W + "num"):
        ref = num.find(_W + "abstractNumId")
        mine = dict(abstract.get(ref.get(_VAL) if ref is not None else None, {}))
        for override in num.findall(_W + "lvlOverride"):  # a list that restarts, or redefines a level
            level = _level_of(override)
            levels(override, mine)
            start = _int(override.find(_W + "startOverride"))
            if start is not None and level in mine:
                mine[level] = mine[level][:2] + (start,)
        nums[num.get(_W + "numId")] = mine
    return nums


def _level_of(element) -> int:
    try:
        return max(0, min(8, int(element.get(_W + "ilvl", "0"))))
    except ValueError:
        return 0


def _number(n: int, fmt: str) -> str:
    """A list item's number in its list's format.

    >>> [_number(n, f) for n, f in [(3, "decimal"), (28, "lowerLetter"), (14, "upperRoman"), (7, "decimalZero")]]
    ['3', 'bb', 'XIV', '07']
    """
    if fmt in ("lowerLetter", "upperLetter") and 0 < n <= 780:  # past 30 z's, digits
        letter = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)  # as Word counts: y, z, aa, bb
        return letter.upper() if fmt == "upperLetter" else letter
    if fmt in ("lowerRoman", "upperRoman") and 0 < n < 4000:
        roman = ""
        for value, digits in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
                              (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
            count, n = divmod(n, value)
            roman += digits * count
        return roman.upper() if fmt == "upperRoman" else roman
    return f"{n:02d}" if fmt == "decimalZero" else str(n)


# --- the walk ------------------------------------------------------------------------------------------------


class _Walk:
    """One document's walk: what it meets goes to `self.c`, in document order."""

    def __init__(self, document, name: str, limits: Limits):
        self.c = Canonical(name, max_chars=limits.max_chars)
        part = document.part
        self.styles, self.default_style = _styles(_xml(part, "styles"))
        self.numbering = _numbering(_xml(part, "numbering"))
        self.counters: dict[str, list] = {}  # numbering id -> each level's last number
        self.note_parts = {kind: {} for kind, _ in _NOTES}  # kind -> {note id: note}, in the part's order
        for kind, _ in _NOTES:
            root = _xml(part, kind + "s")
            for note in root.findall(_W + kind) if root is not None else []:
                if note.get(_TYPE) not in _SEPARATORS:
                    self.note_parts[kind][note.get(_ID)] = note
        self.numbers = {kind: {} for kind, _ in _NOTES}  # kind -> {note id: its number}, in order of reference
        self.title = ""
        self.warnings: list[str] = []

    # blocks: the body's, a text box's, a note's

    def blocks(self, container, boxed: bool = False) -> None:
        for child in container:
            tag = child.tag
            if tag == _P:
                self.paragraph(child, boxed)
            elif tag == _TBL:
                self.c.table(self.rows(child))
            elif tag == _ALT_CHUNK:
                note = "a part of it imported from another file (altChunk) was not read"
                if note not in self.warnings:
                    self.warnings.append(note)
            else:
                for inner in _wrapped(child):
                    self.blocks(inner, boxed)

    def paragraph(self, p, boxed: bool) -> None:
        boxes: list = []
        text = self.inline(p, boxes)
        name, level, num_id, ilvl = self.role(p)
        if re.fullmatch(r"toc \d", name):  # a table of contents' line: the headings again, with page numbers
            return
        marker = self.marker(num_id, ilvl) if num_id else ""
        if level and not boxed and 0 < len(" ".join(text.split())) <= TITLE_MAX:
            self.c.heading((marker if marker != "- " else "") + text, level)
        else:
            if name == "title" and not boxed and not self.title:
                self.title = " ".join(text.split())
            self.c.paragraph(marker + text if text.strip() else "")
        for box in boxes:  # text boxes anchored here: after the paragraph's own text, each once
            self.blocks(box, boxed=True)

    def inline(self, element, boxes: list) -> str:
        """The text of a paragraph (or a cell's paragraph); the text boxes met in it go to `boxes`."""
        out: list[str] = []
        self._inline(element, out, boxes)
        return "".join(out)

    def _inline(self, element, out: list, boxes: list) -> None:
        for child in element:
            tag = child.tag
            if tag == _T:
                out.append(child.text or "")
            elif tag in (_TAB, _PTAB):
                out.append("\t")
            elif tag in (_BR, _CR):
                out.append("\n")
            elif tag == _NBH:
                out.append("-")
            elif tag in (_FOOTNOTE_REF, _ENDNOTE_REF):
                out.append(self.reference("footnote" if tag == _FOOTNOTE_REF else "endnote", child.get(_ID)))
            elif tag == _TXBX:
                boxes.append(child)
            elif tag in (_SDT, _ALT):
                for inner in _wrapped(child):
                    self._inline(inner, out, boxes)
            elif tag not in _SKIP:
                self._inline(child, out, boxes)

    def flat(self, container) -> str:
        """A container's text on a few lines, tables and text boxes in it flattened (a table cell, a note)."""
        parts = []
        for child in container:
            if child.tag == _P:
                boxes: list = []
                parts.append(self.inline(child, boxes))
                parts += [self.flat(box) for box in boxes]
            elif child.tag == _TBL:
                parts.append("; ".join(" ".join(c for c in row if c) for row in self.rows(child)))
            else:
                parts += [self.flat(inner) for inner in _wrapped(child)]
        return "\n".join(part for part in parts if part.strip())

    def rows(self, table) -> list[list[str]]:
        rows, above = [], {}  # above: a column's text, for the cells below that merge with it
        for tr in _children(table, _TR):
            row = [""] * min(64, _int(tr.find(f"{_W}trPr/{_W}gridBefore"), 0) or 0)
            for tc in _children(tr, _TC):
                span = max(1, min(64, _int(tc.find(f"{_W}tcPr/{_W}gridSpan"), 1) or 1))
                merge = tc.find(f"{_W}tcPr/{_W}vMerge")
                col = len(row)
                if merge is not None and merge.get(_VAL, "continue") == "continue":
                    text = above.get(col, "")  # a cell spanning rows: its text in each, so each row reads whole
                else:
                    text = above[col] = self.flat(tc)
                row += [text] + [""] * (span - 1)
            rows.append(row)
        return rows

    # what a paragraph is

    def role(self, p) -> tuple[str, int, str | None, int]:
        """(its style's name, its heading level or 0, its numbering id or None, its list level)."""
        ppr = p.find(_PPR)
        style = ppr.find(_W + "pStyle") if ppr is not None else None
        sid = style.get(_VAL, "") if style is not None else self.default_style
        chain, seen = [], set()
        while sid in self.styles and sid not in seen and len(chain) < 20:
            seen.add(sid)
            chain.append(self.styles[sid])
            sid = self.styles[sid][1]
        name = chain[0][0] if chain else ""
        level = None
        outline = _int(ppr.find(_W + "outlineLvl")) if ppr is not None else None
        if outline is not None:
            level = outline + 1 if 0 <= outline <= 8 else 0
        for s_name, _, s_outline, _, _ in chain:
            if level is not None:
                break
            heading = re.fullmatch(r"heading\s*([1-9])", s_name)
            if heading:
                level = int(heading[1])
            elif s_name == "title":
                level = 0
            elif s_outline is not None:
                level = s_outline + 1 if 0 <= s_outline <= 8 else 0
        num = ppr.find(_W + "numPr") if ppr is not None else None
        num_id = num.find(_W + "numId") if num is not None else None
        num_id = num_id.get(_VAL) if num_id is not None else next((s[3] for s in chain if s[3]), None)
        ilvl = _int(num.find(_W + "ilvl")) if num is not None else None
        ilvl = ilvl if ilvl is not None else next((s[4] for s in chain if s[4] is not None), 0)
        return name, level or 0, (num_id if num_id not in (None, "0") else None), max(0, min(8, ilvl))

    def marker(self, num_id: str, ilvl: int) -> str:
        """A list item's marker: "- " for a bullet, its number as the list writes it ("2.", "1.3", "b)")."""
        levels = self.numbering.get(num_id, {})
        if ilvl not in levels:
            return ""
        counts = self.counters.setdefault(num_id, [None] * 9)
        counts[ilvl] = levels[ilvl][2] if counts[ilvl] is None else counts[ilvl] + 1
        counts[ilvl + 1:] = [None] * (8 - ilvl)
        fmt, pattern, _ = levels[ilvl]
        if fmt == "bullet":
            return "- "
        if fmt == "none":
            return ""

        def number(m):
            k = int(m[1]) - 1
            k_fmt, _, k_start = levels.get(k, ("decimal", "", 1))
            return _number(counts[k] if counts[k] is not None else k_start, k_fmt)

        shown = re.sub(r"%([1-9])", number, pattern).strip()
        return shown + " " if shown else ""

    # notes

    def reference(self, kind: str, note_id: str | None) -> str:
        if note_id not in self.note_parts[kind]:
            return ""
        numbers = self.numbers[kind]
        numbers.setdefault(note_id, len(numbers) + 1)
        return f"[{numbers[note_id]}]"

    def notes(self) -> None:
        """Footnotes, then endnotes, after the body: a section each, one block a note, in number order (notes
        nothing refers to after them, numbered on: text is never lost)."""
        for kind, heading in _NOTES:
            numbers = self.numbers[kind]
            for note_id in self.note_parts[kind]:
                numbers.setdefault(note_id, len(numbers) + 1)
            entries = []
            for note_id, number in sorted(numbers.items(), key=lambda item: item[1]):
                text = self.flat(self.note_parts[kind][note_id])
                if text.strip():
                    entries.append(f"[{number}] {text}")
            if entries:
                self.c.heading(heading, 1)
                for entry in entries:
                    self.c.paragraph(entry)

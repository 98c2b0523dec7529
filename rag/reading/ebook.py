"""E-books (.epub): the chapters in reading order, each a section named by its table-of-contents entry.

The archive is checked first (`rag.reading.archive.open_zip`: really a zip, whole, no password, no zip bomb),
then ebooklib reads the checked bytes. The spine gives the reading order; each spine document's XHTML goes
through the web-page walk (`rag.reading.webpage.add_html`, all of its text kept: a book has no boilerplate),
under a heading from the table of contents: an entry nested `d` deep is a heading of level `d`, and the
chapter's own headings sit below it. A chapter whose first heading repeats its entry's title does not repeat
it. A spine document that no entry names goes on with the chapter before it (the second file of a chapter
split in two), or, before the first chapter, is named by its own headings. The book's title is its Dublin
Core title; its authors open the text ("Title, by Author"), so a question about who wrote it finds them.

What it does not do: decrypt (a DRM-protected book, whose META-INF/encryption.xml lists content files, is
refused with that reason; fonts obfuscated as EPUB allows are not DRM), read images, or run scripts.

>>> _toc_path("Text/../Text/ch%201.xhtml#s2")
'Text/ch 1.xhtml'
"""

from __future__ import annotations

import io
import posixpath
import warnings
from urllib.parse import unquote

from lxml import etree

from rag.reading.archive import open_zip, read_member
from rag.reading.canonical import Canonical
from rag.reading.document import ExtractionError, Extracted, Limits
from rag.reading.webpage import _add_html

# epub-2: headings keep their words' underscores (document.clean_heading).
VERSIONS = {"epub": "epub-2"}

_WHAT = "an e-book (.epub)"
_FONTS = (".ttf", ".otf", ".woff", ".woff2", ".eot")
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """An EPUB book: its spine's chapters in reading order (see the module's doc)."""
    archive = open_zip(data, _WHAT)
    names = set(archive.namelist())
    if "META-INF/container.xml" not in names:
        raise ExtractionError(f"it is not {_WHAT}: its archive has no META-INF/container.xml (it may be another "
                              "kind of zip archive renamed .epub)")
    if "META-INF/encryption.xml" in names and _drm(read_member(archive, "META-INF/encryption.xml")):
        raise ExtractionError("it is protected by DRM (encrypted content): it cannot be read")
    book = _load(data)
    title = _meta(book, "title")
    authors = ", ".join(dict.fromkeys(a for a in (_clean(v) for v, _ in _metadata(book, "creator")) if a))

    canon = Canonical(name, max_chars=limits.max_chars)
    if title and authors:
        canon.paragraph(f"{title}, by {authors}")
    entries = _toc_entries(getattr(book, "toc", []) or [])
    shown: set[int] = set()  # the entries already made headings
    level = 1  # where the open chapter's own headings go
    spine = [item for item in (_spine_item(book, ref) for ref in book.spine) if item is not None]
    if len(spine) > limits.max_pages:
        raise ExtractionError(f"the book has {len(spine):,} parts; the limit is {limits.max_pages:,} (max_pages): "
                              "not read")
    for item in spine:
        path = posixpath.normpath(item.file_name)
        entry = next((i for i, e in enumerate(entries) if e[2] == path and i not in shown), None)
        skip = ""
        if entry is not None:
            for i in entries[entry][3] + [entry]:  # the entries above it that no file opened yet, then its own
                if i not in shown:
                    shown.add(i)
                    canon.heading(entries[i][1], entries[i][0])
            depth, skip = entries[entry][0], entries[entry][1]
            level = depth + 1
        _add_html(canon, item.content or b"", main_only=False, level=level, skip_heading=skip)
    if not canon.chars:
        raise ExtractionError("the book has no text to read (it may be only images, such as a scanned book or "
                              "a comic)")
    return canon.build(kind=kind, title=title, version=VERSIONS["epub"])


def _load(data: bytes):
    """ebooklib's book from the checked bytes; a book it cannot read gets a reason."""
    from ebooklib import epub

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ebooklib warns about its own future defaults
            return epub.read_epub(io.BytesIO(data), {"ignore_ncx": True})
    except ExtractionError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the library on a bad book is a reason, not a crash
        detail = str(exc.args[-1]) if getattr(exc, "args", None) else type(exc).__name__
        raise ExtractionError(f"it is damaged or not a valid e-book: its package could not be read ({detail})") \
            from None


def _drm(xml: bytes) -> bool:
    """Whether encryption.xml encrypts anything but fonts (which EPUB lets a book obfuscate)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError:
        return True  # an encryption file that cannot be read: its content cannot be trusted to be readable
    if root is None:
        return False
    refs = [r.get("URI") or "" for r in root.iter(f"{_ENC}CipherReference")]
    return any(not unquote(u).lower().endswith(_FONTS) for u in refs)


def _spine_item(book, ref):
    from ebooklib import epub

    idref = ref[0] if isinstance(ref, tuple) else ref
    item = book.get_item_with_id(idref)
    # The navigation document is the table of contents as a page: its titles are the headings already.
    if item is None or isinstance(item, epub.EpubNav) or not isinstance(item, epub.EpubHtml):
        return None
    return item


def _toc_entries(toc, depth: int = 1, above: list[int] | None = None,
                 out: list | None = None) -> list[tuple[int, str, str | None, list[int]]]:
    """The table of contents in order: (depth, title, file, the entries above it), `file` None for a group
    entry that names no file."""
    from ebooklib import epub

    out = [] if out is None else out
    above = above or []
    for node in toc:
        children = []
        if isinstance(node, (tuple, list)) and len(node) == 2:
            node, children = node
        if isinstance(node, (tuple, list)):  # a list of entries nested without a title
            _toc_entries(node, depth, above, out)
            continue
        if not isinstance(node, (epub.Link, epub.Section, epub.EpubHtml)):
            continue
        title = _clean(getattr(node, "title", "") or "")
        href = getattr(node, "href", "") or getattr(node, "file_name", "") or ""
        index = len(out)
        if title:
            out.append((depth, title, _toc_path(href) if href else None, list(above)))
        _toc_entries(children, depth + 1 if title else depth, above + [index] if title else above, out)
    return out


def _toc_path(href: str) -> str:
    return posixpath.normpath(unquote(href.split("#", 1)[0]))


def _metadata(book, name: str) -> list:
    try:
        return book.get_metadata("DC", name) or []
    except Exception:  # noqa: BLE001 - metadata is optional
        return []


def _meta(book, name: str) -> str:
    for value, _ in _metadata(book, name):
        if _clean(value):
            return _clean(value)
    return ""


def _clean(value) -> str:
    return " ".join(str(value or "").split())

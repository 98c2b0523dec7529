"""Web pages saved from a browser (.html, .htm, .xhtml): the page's main content, not its menus, cookie banners,
sidebars and footers, as canonical text with its headings as sections.

trafilatura finds the main content (`_main_content`); its XML (`<head rend="h2">`, `<p>`, `<list><item>`,
`<quote>`, `<table><row><cell>`) is walked into a `Canonical` as headings, blocks and pipe tables. A page where
it finds none (a page of a few words) is read whole: the body's text, its scripts, styles, menus, headers,
footers and asides removed, so a small saved page still has its words in the index. The title is the page's
`<title>`, else its `og:title`, else its first heading; a saved page's leads with its site's name (`_site_title`). Bytes are decoded by the page's declared charset (a
byte-order mark, `<meta charset>`, or an XML declaration), else the one charset-normalizer finds.

`add_html` is the same walk for a reader whose file holds HTML (an e-book's chapters, an e-mail's body):
`main_only=False` keeps all of the body's text, since neither has boilerplate to remove.

What it does not do: fetch anything (no URL is ever given to a library, so no link, image, stylesheet or frame is
loaded), run anything (scripts are dropped unread; a script that writes text writes none here), or keep
formatting, links and images.

>>> from rag.reading.canonical import Canonical
>>> c = Canonical("mail.eml", max_chars=10_000)
>>> add_html(c, "<html><head><title>Rent</title><style>p{}</style></head><body><h1>March</h1>"
...             "<p>Rent is <b>850</b>.<br>Due on the 1st.</p><script>alert('x')</script></body></html>",
...          main_only=False, level=2)
'Rent'
>>> doc = c.build(kind="eml", title="", version="t")
>>> [(s.path, doc.text[s.start:s.end]) for s in doc.sections]
[(('March',), 'Rent is 850.\\nDue on the 1st.')]
"""

from __future__ import annotations

import codecs
import logging
import re

from lxml import etree, html as lxml_html

from rag.reading.archive import content_mismatch, sniff
from rag.reading.canonical import Canonical
from rag.reading.document import ExtractionError, Extracted, Limits

# html-2: the title leads with the site's name (`_site_title`), so a passage's header keeps it; html-3: headings
# keep their words' underscores (document.clean_heading).
VERSIONS = {"html": "html-3"}

# Never text: what a browser runs, embeds or asks the reader to fill in.
_NEVER = {"script", "style", "noscript", "template", "iframe", "frame", "frameset", "object", "embed", "applet",
          "canvas", "svg", "math", "form", "button", "input", "select", "option", "textarea", "link", "meta",
          "base", "head", "title", "nav", "img", "picture", "video", "audio", "source", "track", "map", "dialog"}
# Boilerplate of a whole page, dropped when the page is read without trafilatura (`_body_fallback`).
_FURNITURE = {"header", "footer", "aside", "menu"}
_BANNER = re.compile(r"^(cookie|consent|gdpr|newsletter|popup|modal|banner|navbar|menu|sidebar|breadcrumb|skip-?link)"
                     r"|(cookies?|consent|banner|navbar|menu|sidebar|breadcrumbs?)$", re.I)
_SMALL = 250  # characters: less main content than this is "a page of a few words" (trafilatura's own threshold)
_HIDDEN = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
# Elements that end the text before them and start a block of their own (HTML's, then trafilatura's XML's).
_BLOCKS = {"p", "div", "section", "article", "main", "body", "li", "dt", "dd", "ul", "ol", "dl", "blockquote",
           "figure", "figcaption", "caption", "address", "center", "details", "summary", "fieldset", "legend",
           "hr", "tr", "td", "th", "tbody", "thead", "tfoot", "html",
           "doc", "item", "list", "quote", "row", "cell", "note"}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_ROWS, _CELLS = {"tr", "row"}, {"td", "th", "cell"}
_TABLE_PARTS = {"thead", "tbody", "tfoot"}
# A table whose cells hold these is laid out with a table (an e-mail, an old page), not a table of data.
_LAYOUT = {"p", "div", "table", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "list", "head"}
_SPACES = re.compile(r"\s+")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_CHARSET = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
# Browsers read a page that declares Latin-1 or ASCII as Windows-1252 (its quotes and euro sign), and so do we.
_AS_BROWSERS_DO = {"latin_1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252"}

log = logging.getLogger(__name__)


def decode_html(data: bytes) -> str:
    """A page's text from its bytes: by its byte-order mark, else its declared charset, else UTF-8 when it is
    valid UTF-8, else the charset charset-normalizer finds.

    >>> decode_html('<meta charset="iso-8859-1"><p>Café</p>'.encode("latin-1"))
    '<meta charset="iso-8859-1"><p>Café</p>'
    """
    for bom, codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                       (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom):].decode(codec, errors="replace")
    head = data[:4096]
    declared = _XML_CHARSET.search(head) or _META_CHARSET.search(head)
    if declared:
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii")).name
        except (LookupError, UnicodeDecodeError):
            codec = ""
        if codec and not codec.startswith("utf-16"):  # bytes without a BOM that decode as ASCII are not UTF-16
            return data.decode(_AS_BROWSERS_DO.get(codec, codec), errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    found = list(from_bytes(data[:1 << 20]))
    if not found:
        return data.decode("cp1252", errors="replace")
    # A short text fits several Latin code pages about as well; an undeclared page is most often Windows-1252
    # (what browsers assume in the West), so it wins a near tie.
    near = [m for m in found if m.chaos <= found[0].chaos + 0.1]
    codec = "cp1252" if any("cp1252" in m.could_be_from_charset for m in near) else found[0].encoding
    return data.decode(codec, errors="replace")


def add_html(canon: Canonical, html: str | bytes, *, main_only: bool = True, level: int = 1) -> str:
    """Appends a page's content to `canon`, its headings `level - 1` deeper than the page has them, and returns
    the page's title ("" when it has none). `main_only` keeps the main content alone (trafilatura's), else
    the whole body's text; either way scripts, styles, forms and menus are never text."""
    return _add_html(canon, html, main_only=main_only, level=level)


def _add_html(canon: Canonical, html: str | bytes, *, main_only: bool = True, level: int = 1,
              skip_heading: str = "") -> str:
    # `skip_heading`: a first heading that repeats what the caller already made a heading (an e-book's chapter
    # title, from its table of contents) is not a heading again.
    root = _parse(decode_html(html) if isinstance(html, bytes) else html)
    if root is None:
        return ""
    title = _site_title(root) if main_only else _title(root)  # a saved page's site; not an e-mail's or a chapter's
    main = _main_content(root) if main_only else None
    body = root.find("body")
    body = body if body is not None else root
    _prune(body, furniture=main_only)
    if main is not None and len(_words(main)) < _SMALL:
        # trafilatura reads a page of a few words whole, its menu too; the body without its furniture is the
        # better text then, unless that is far longer (the page's main content is short, its furniture is not
        # marked as such).
        whole = len(_words(body))
        main = None if whole <= max(4 * len(_words(main)), 1500) else main
    if main is not None:
        _Walk(canon, level - 1, skip_heading, xml=True).block(main)
    else:
        _Walk(canon, level - 1, skip_heading).block(body)
    return title


def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """A saved web page: its main content (see the module's doc)."""
    if not data.strip():
        raise ExtractionError("the file is empty")
    if not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and sniff(data) not in ("html", "text"):
        raise ExtractionError(content_mismatch(data, "a web page (.html)"))
    # A page's markup is several times its text (a page saved whole holds its images too); past this, it is no
    # page a person saved to read, or a hostile one.
    if len(data) > max(min(20 * limits.max_chars, 64 << 20), 1 << 20):
        raise ExtractionError(f"the page is {len(data) / 2**20:,.0f} MB, too large for a web page's text "
                              f"(limit: {limits.max_chars:,} characters of text, max_chars): not read")
    canon = Canonical(name, max_chars=limits.max_chars)
    title = add_html(canon, data, main_only=True)
    if not canon.chars:
        raise ExtractionError("the page has no text to read (it may be only images, or be built by scripts, "
                              "which are not run)")
    return canon.build(kind=kind, title=title, version=VERSIONS["html"])


# --- the page --------------------------------------------------------------------------------------------------


def _parse(text: str) -> etree._Element | None:
    """The page's tree. XHTML that is well-formed XML is read as XML (an e-book's `<title/>` would swallow the
    whole page in an HTML parser), else as HTML; tag names lose their namespaces. Nothing is fetched: no DTD,
    no external entity, no network."""
    text = text.replace("\x00", "")
    root = None
    if _XML_DECL.match(text) or "http://www.w3.org/1999/xhtml" in text[:2048]:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                                 remove_comments=True, remove_pis=True)
        try:
            root = etree.fromstring(text.encode("utf-8"), parser)
        except etree.XMLSyntaxError:  # not well-formed (an HTML entity, an unclosed tag): read it as HTML
            root = None
        if root is not None:
            for el in root.iter():
                if isinstance(el.tag, str):
                    el.tag = etree.QName(el).localname.lower()
    if root is None:
        text = _XML_DECL.sub("", text, count=1)  # lxml refuses a str that declares an encoding
        if not text.strip():
            return None
        parser = lxml_html.HTMLParser(no_network=True, remove_comments=True, remove_pis=True, default_doctype=False)
        try:
            root = lxml_html.document_fromstring(text, parser=parser)
        except (etree.ParserError, etree.XMLSyntaxError, ValueError):
            return None
    return root


# What a page's title sets its site's name apart with ("Vectors - The Rust Programming Language", "Post · V8").
_SITE_SEPARATOR = re.compile(r"\s+(?:[|·•–—]|-{1,2}|::)\s+")


def _site_title(root: etree._Element) -> str:
    """The page's title with its site's name first ("V8 · Faster async functions"), so that the passage's header,
    which a long heading path shortens from each part's end, keeps the site's name (a trial's V8 blog page lost
    "· V8" there, and "the V8 blog" was refused as never mentioned). The site's name is its `og:site_name` (or
    `application-name`), else a short last part of its title. The title alone when neither is found.

    >>> page = lambda t, m="": _parse(f"<html><head><title>{t}</title>{m}</head><body><p>x</p></body></html>")
    >>> _site_title(page("Faster async functions and promises · V8"))
    'V8 · Faster async functions and promises'
    >>> _site_title(page("Vectors - The Rust Programming Language"))
    'The Rust Programming Language · Vectors'
    >>> _site_title(page("Welcome to Firefox", '<meta property="og:site_name" content="Mozilla">'))
    'Mozilla · Welcome to Firefox'
    >>> _site_title(page("Rent - March 2024 - paid late in the end")), _site_title(page("Mozilla Firefox"))
    ('Rent - March 2024 - paid late in the end', 'Mozilla Firefox')
    """
    title = _title(root)
    site = ""
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").lower() in ("og:site_name", "application-name"):
            site = _SPACES.sub(" ", meta.get("content") or "").strip()
            if site:
                break
    parts = _SITE_SEPARATOR.split(title)
    last = parts[-1]
    # A site's name is short and written as a name ("V8", "The Rust Programming Language"), not a phrase.
    if not site and len(parts) > 1 and len(last) <= 40 and len(last.split()) <= 5 and last[:1].isupper():
        site = last
    if not site or not title:
        return title or site
    if fold_name(site) in (fold_name(parts[0]), fold_name(title)):
        return title  # the title is the site's name ("Mozilla"), or starts with it
    rest = [p for p in parts if fold_name(p) != fold_name(site)]
    return f"{site} · {' - '.join(rest) if rest else title}"


def fold_name(text: str) -> str:
    return " ".join(text.casefold().split())


def _title(root: etree._Element) -> str:
    title = root.find(".//head/title")
    if title is None:
        title = root.find(".//title")
    text = _SPACES.sub(" ", "".join(title.itertext())).strip() if title is not None else ""
    if not text:
        for meta in root.iter("meta"):
            if (meta.get("property") or meta.get("name") or "").lower() in ("og:title", "twitter:title"):
                text = _SPACES.sub(" ", meta.get("content") or "").strip()
                if text:
                    break
    return text


def _main_content(root: etree._Element) -> etree._Element | None:
    """trafilatura's main content of the page as its XML tree, or None when it finds none."""
    import trafilatura

    try:
        found = trafilatura.bare_extraction(
            root, url=None, output_format="python", include_comments=False, include_tables=True,
            include_formatting=True, include_images=False, include_links=False, with_metadata=False,
            deduplicate=False)
    except Exception as exc:  # noqa: BLE001 - a page trafilatura cannot take is read whole instead
        log.debug("trafilatura failed: %s", exc)
        return None
    body = getattr(found, "body", None)
    if body is None or not "".join(body.itertext()).strip():
        return None
    return body


def _prune(root: etree._Element, *, furniture: bool) -> None:
    """Drops what is never text, hidden elements and, when `furniture`, a page's menus, headers, footers,
    asides and banners; each one's tail (the text after it) stays."""
    doomed = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            doomed.append(el)
            continue
        tag = el.tag.lower()
        if tag in _NEVER or el.get("hidden") is not None or _HIDDEN.search(el.get("style") or "") \
                or (el.get("aria-hidden") or "").lower() == "true":
            doomed.append(el)
        elif furniture and _furniture(el, tag):
            doomed.append(el)
    for el in doomed:
        parent = el.getparent()
        if parent is None or el is root:
            continue
        if el.tail:  # keep the text after the element, as a browser shows it
            prev = el.getprevious()
            if prev is not None:
                prev.tail = (prev.tail or "") + el.tail
            else:
                parent.text = (parent.text or "") + el.tail
        parent.remove(el)


def _furniture(el: etree._Element, tag: str) -> bool:
    """A page's menu, header, footer, aside or banner. An article's own header and footer (its title, its
    author) are the article's; an element named like a banner or menu is one unless it holds the article (a
    wrapper named "page-with-sidebar" holds the whole page)."""
    if tag in ("header", "footer"):
        return not any(a.tag in ("article", "main") for a in el.iterancestors() if isinstance(a.tag, str))
    if tag in _FURNITURE or (el.get("role") or "").lower() in ("navigation", "banner", "contentinfo"):
        return True
    named = any(_BANNER.search(word) for word in f"{el.get('id') or ''} {el.get('class') or ''}".split())
    return named and next(el.iterdescendants("article", "main", "h1"), None) is None


class _Walk:
    """Walks an HTML body or trafilatura's XML into a Canonical: inline text gathers into the open block; a block
    element ends it; headings, tables and preformatted text go in whole."""

    def __init__(self, canon: Canonical, offset: int, skip_heading: str = "", *, xml: bool = False):
        self.canon = canon
        self.pre = {"pre", "code"} if xml else {"pre"}  # trafilatura's <code> is a block, HTML's is inline
        self.offset = offset
        self.skip = _SPACES.sub(" ", skip_heading).strip().casefold()
        self.seen_heading = False
        self.buf: list[str] = []

    def flush(self) -> None:
        text = "".join(self.buf)
        self.buf = []
        if text.strip():
            self.canon.paragraph(text)

    def block(self, el: etree._Element) -> None:
        """`el`'s text and its children's, `el` taken as a block."""
        self.flush()
        self._inside(el)
        self.flush()

    def _inside(self, el: etree._Element) -> None:
        if el.text:
            self.buf.append(_SPACES.sub(" ", el.text))
        for child in el:
            if isinstance(child.tag, str):
                self._element(child)
            if child.tail:
                self.buf.append(_SPACES.sub(" ", child.tail))

    def _element(self, el: etree._Element) -> None:
        tag = el.tag.lower()
        level = _HEADINGS.get(tag) or (_rend_level(el) if tag == "head" else 0)
        if tag in _NEVER and tag != "head":
            return
        if level:
            self.flush()
            text = _SPACES.sub(" ", "".join(_text(el))).strip()
            first, self.seen_heading = not self.seen_heading, True
            if first and self.skip and text.casefold() == self.skip:
                return
            self.canon.heading(text, level + self.offset)
        elif tag in ("br", "lb"):
            self.buf.append("\n")
        elif tag in self.pre:
            self.flush()
            self.canon.paragraph("".join(_text(el)))
        elif tag == "table":
            self.flush()
            self._table(el)
        elif tag in _BLOCKS:
            self.block(el)
        else:  # inline: its text joins the open block
            self._inside(el)

    def _table(self, table: etree._Element) -> None:
        rows = [r for r in _rows(table)]
        if any(d.tag in _LAYOUT for r in rows for c in r for d in c.iter() if isinstance(d.tag, str) and d is not c):
            for r in rows:  # a table for layout: each cell is a block of the page
                for cell in r:
                    self.block(cell)
            return
        self.canon.table([[_SPACES.sub(" ", "".join(_text(c))).strip() for c in r] for r in rows])


def _rows(table: etree._Element) -> list[list[etree._Element]]:
    """The table's rows of cells, its head, body and foot alike, without the rows of a table inside it."""
    out = []
    for child in table:
        if not isinstance(child.tag, str):
            continue
        if child.tag in _TABLE_PARTS:
            out += _rows(child)
        elif child.tag in _ROWS:
            out.append([c for c in child if isinstance(c.tag, str) and c.tag in _CELLS])
    return out


def _text(el: etree._Element) -> list[str]:
    """An element's text, what is never text left out, line breaks kept."""
    out = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and child.tag not in _NEVER:
            out.append("\n" if child.tag in ("br", "lb") else "".join(_text(child)))
        out.append(child.tail or "")
    return out


def _words(el: etree._Element) -> str:
    return _SPACES.sub(" ", "".join(el.itertext())).strip()


def _rend_level(el: etree._Element) -> int:
    m = re.fullmatch(r"h([1-6])", el.get("rend") or "")
    return int(m.group(1)) if m else 2

"""The web-page reader: a saved page's main content, not its menu, cookie banner, scripts and footer."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.reading import webpage
from rag.reading.canonical import Canonical
from rag.reading.document import ExtractionError, Limits

ARTICLE = [
    "Tomatoes need at least six hours of direct sun every day to produce a good crop of fruit.",
    "Start seeds indoors about eight weeks before the last frost date in your area.",
    "Use well drained loam rich in organic matter, with a pH between 6.2 and 6.8 for the roots.",
    "Water deeply twice a week rather than a little every day, so that the roots grow down.",
    "Mulch keeps the soil moist and stops the lower leaves from catching blight after rain.",
]

SAVED_PAGE = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Growing Tomatoes at Home</title>
<link rel="stylesheet" href="http://example.com/site.css">
<style>body {{ color: #333 }} .x::after {{ content: "Styled words" }}</style>
<script src="http://example.com/tracker.js"></script>
<script>document.write("Script wrote this sentence");</script></head>
<body>
<header><nav><ul><li><a href="/">Home page</a></li><li><a href="/shop">Visit the shop</a></li>
<li><a href="/about">About our team</a></li></ul></nav></header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your experience on our site.
<button>Accept all</button></div>
<main><article>
<h1>Growing Tomatoes</h1>
<p>{ARTICLE[0]}</p><p>{ARTICLE[1]}</p>
<h2>Soil</h2><p>{ARTICLE[2]}</p>
<img src="http://example.com/tomato.jpg" alt="a tomato">
<h2>Watering</h2><p>{ARTICLE[3]}</p>
<table><tr><th>Variety</th><th>Days to harvest</th></tr><tr><td>Roma</td><td>75</td></tr>
<tr><td>Cherry</td><td>65</td></tr></table>
<iframe src="http://example.com/ad.html">Frame fallback words</iframe>
<h2>Mulching</h2><p>{ARTICLE[4]}</p>
<script>var note = "Another scripted string";</script>
</article></main>
<footer><p>Copyright 2024 Garden Blog Ltd. All rights reserved.</p></footer>
</body></html>"""


def _read(data: bytes | str, name: str = "page.html", **limits):
    data = data.encode("utf-8") if isinstance(data, str) else data
    doc = webpage.read(data, name, "html", Limits(**limits))
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip(), s
    return doc


def test_saved_page_keeps_the_article_and_drops_the_furniture():
    doc = _read(SAVED_PAGE)
    for paragraph in ARTICLE:
        assert paragraph in doc.text
    for furniture in ("Home page", "Visit the shop", "About our team", "We use cookies", "Accept all",
                      "Copyright", "All rights reserved", "Script wrote", "Another scripted", "document.write",
                      "Styled words", "color: #333", "Frame fallback", "http://", "a tomato"):
        assert furniture not in doc.text, furniture
    assert doc.title == "Growing Tomatoes at Home"
    assert doc.version == "html-3" and doc.kind == "html"
    paths = [s.path for s in doc.sections]
    assert paths == [("Growing Tomatoes",), ("Growing Tomatoes", "Soil"), ("Growing Tomatoes", "Watering"),
                     ("Growing Tomatoes", "Mulching")]
    body = {s.path[-1]: doc.text[s.start:s.end] for s in doc.sections}
    assert body["Soil"] == ARTICLE[2]
    assert body["Watering"].startswith(ARTICLE[3])
    assert "| Variety | Days to harvest |\n| --- | --- |\n| Roma | 75 |\n| Cherry | 65 |" in body["Watering"]


def test_latin1_page_is_decoded_by_its_meta_charset():
    page = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
            "<title>Crème brûlée</title></head><body><h1>Dessert</h1>"
            "<p>La crème brûlée est un dessert français à base de crème, de jaunes d'œufs et de sucre.</p>"
            "</body></html>").replace("œ", "oe")
    data = page.encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    doc = _read(data)
    assert "La crème brûlée est un dessert français" in doc.text
    assert doc.title == "Crème brûlée"


def test_undeclared_charset_is_detected():
    text = "Le café où nous déjeunions était fermé, à cause des travaux d'été qui duraient déjà."
    doc = _read(f"<html><body><p>{text}</p></body></html>".encode("cp1252"))
    assert text in doc.text


def test_a_page_of_a_few_words_is_read_whole_without_its_furniture():
    doc = _read("<html><head><title>Moved</title></head><body><nav><a href='/'>Home</a> <a href='/a'>About</a>"
                "</nav><p>Back soon.</p><footer>(c) 2024 Someone</footer></body></html>")
    assert doc.text == "Back soon."
    assert doc.title == "Moved"
    assert _read("Just a <b>note</b> here", name="note.htm").text == "Just a note here"
    # an article's own header is the article's; a wrapper named like a sidebar is not one
    doc = _read("<body><div class='page-with-sidebar'><article><header><h1>Closed today</h1></header>"
                "<p>The shop opens again on Monday.</p></article></div><div class='cookie-bar'>We use cookies."
                "</div></body>")
    assert doc.text == "Closed today\n\nThe shop opens again on Monday."


def test_a_suffix_that_lies_gets_a_reason():
    with pytest.raises(ExtractionError) as err:
        _read(b"%PDF-1.7\n1 0 obj << >> endobj\n")
    assert "PDF" in err.value.reason and "rename it to .pdf" in err.value.reason
    with pytest.raises(ExtractionError) as err:
        _read(b"PK\x03\x04" + b"\x00" * 40)
    assert "zip archive" in err.value.reason


def test_a_page_without_text_gets_a_reason():
    for page in ("", "<html><body><script>document.write('hi')</script><img src='http://x/y.png'></body></html>"):
        with pytest.raises(ExtractionError) as err:
            _read(page)
        assert "no text" in err.value.reason or "empty" in err.value.reason


def test_max_chars_stops_reading():
    with pytest.raises(ExtractionError) as err:
        _read(SAVED_PAGE, max_chars=200)
    assert "max_chars" in err.value.reason


def test_add_html_keeps_a_short_email_body():
    canon = Canonical("mail.eml", max_chars=10_000)
    canon.heading("Re: rent", 1)
    body = ("<html><head><style>p { margin: 0 }</style></head><body><div dir='ltr'>Hi Ann,<br><br>"
            "The rent for March is 850 euros.<br>Thanks, Bob</div>"
            "<div style='display:none'>preheader tracking words</div>"
            "<form><input value='typed'>Subscribe here</form><nav><a href='/'>Menu link</a></nav></body></html>")
    assert webpage.add_html(canon, body, main_only=False, level=2) == ""
    doc = canon.build(kind="eml", title="", version="t")
    assert "Hi Ann," in doc.text and "The rent for March is 850 euros.\nThanks, Bob" in doc.text
    for gone in ("margin", "preheader", "Subscribe", "typed", "Menu link"):
        assert gone not in doc.text
    assert [s.path for s in doc.sections] == [("Re: rent",)]


def test_add_html_offsets_headings_and_unrolls_layout_tables():
    canon = Canonical("mail.eml", max_chars=10_000)
    canon.heading("Newsletter", 1)
    page = ("<table><tr><td><h1>Spring sale</h1><p>All seeds half price.</p></td></tr>"
            "<tr><td><p>Offer ends <b>Friday</b>.</p></td></tr></table>")
    webpage.add_html(canon, page.encode(), main_only=False, level=2)
    doc = canon.build(kind="eml", title="", version="t")
    assert [(s.path, doc.text[s.start:s.end]) for s in doc.sections] == [
        (("Newsletter", "Spring sale"), "All seeds half price.\n\nOffer ends Friday.")]


def test_xhtml_with_an_empty_title_element():
    page = ('<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title/>'
            "</head><body><h1>Chapter One</h1><p>It was a bright cold day in April.</p></body></html>")
    canon = Canonical("c.xhtml", max_chars=10_000)
    assert webpage.add_html(canon, page.encode("utf-8"), main_only=False) == ""
    doc = canon.build(kind="epub", title="", version="t")
    assert doc.text == "Chapter One\n\nIt was a bright cold day in April."


def test_a_real_page_from_an_installed_package():
    # olefile (BSD licence; installed with msoffcrypto-tool, a test tool) ships its documentation as pandoc-made XHTML.
    import olefile

    path = Path(olefile.__file__).parent / "doc" / "Install.html"
    doc = _read(path.read_bytes(), name="Install.html")
    assert doc.title == "How to Download and Install olefile"
    assert "olefile requires Python 2.6, 2.7 or 3.x." in doc.text
    assert ("How to Download and Install olefile", "Download and Install") in [s.path for s in doc.sections]
    assert "bitbucket.org" not in doc.text


def test_a_saved_pages_site_name_stays_in_its_passages_header():
    # A trial's V8 blog page: its long title ended "· V8", and a deep heading path shortened the header from each
    # part's end, so "the V8 blog" was refused as never mentioned. The title now leads with the site's name.
    from rag.indexing.chunk import chunk_document

    page = ("<html><head><title>Understanding the bytecode interpreter and its register allocator in depth · V8"
            "</title></head><body><article><h1>Understanding the bytecode interpreter</h1><h2>Registers and the "
            "accumulator of the interpreter</h2><h3>How the register allocator chooses a register</h3><p>"
            + "The allocator keeps live values in registers and spills the rest to the stack frame. " * 6
            + "</p></article></body></html>")
    doc = _read(page)
    assert doc.title == "V8 · Understanding the bytecode interpreter and its register allocator in depth"
    [chunk] = chunk_document(doc, "d")
    assert chunk.text.startswith("[V8 · ") and "V8" not in chunk.content

"""The document viewer in a real browser (headless Debian Chromium, a real `streamlit run` on 127.0.0.1):
click a citation's [1] and see its passage marked; read the marks back from the PDF with pymupdf; a
passage across a page break marked on both pages; a reload shows the same view; a path outside the folder
is refused and nothing is served.
"""

from __future__ import annotations

import os
import re
import shutil
from urllib.parse import quote

import pymupdf
import pytest
from playwright.sync_api import Page, expect

from tests.test_browser import ROOT, UI_TIMEOUT_MS, ask, browser, new_app, open_app  # noqa: F401 (browser: a fixture)
from tests.test_viewer import SPAN_END, SPAN_START, squash, two_page_pdf

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    base = tmp_path_factory.mktemp("viewer-browser")
    docs = base / "docs"
    shutil.copytree(ROOT / "data", docs, ignore=shutil.ignore_patterns(".rag-index"))
    (docs / "ponta-azul.pdf").write_bytes(two_page_pdf())
    running = new_app(base, docs).start()
    yield running
    running.stop()


@pytest.fixture
def page(browser, app):  # noqa: F811
    context = browser.new_context(viewport={"width": 1440, "height": 1100})
    pg = context.new_page()
    pg.set_default_timeout(UI_TIMEOUT_MS)
    yield pg
    context.close()


def marks(page: Page) -> list[tuple[int, tuple[float, ...]]]:
    """(page, rectangle in PDF points) of every highlight drawn."""
    out = []
    for el in page.locator(".rag-mark").all():
        out.append((int(el.get_attribute("data-page")), tuple(float(x) for x in el.get_attribute("data-rect").split(","))))
    return out


def read_back(pdf: bytes, found) -> str:
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return squash(" ".join(doc[p - 1].get_textbox(pymupdf.Rect(r)) for p, r in found))


def wait_indexed(page: Page, app) -> None:
    open_app(page, app.url)
    expect(page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').filter(
        has_text="ponta-azul.pdf: indexed")).to_be_visible(timeout=300_000)


def test_click_1_opens_the_pdf_page_with_the_quote_marked(page, app, tmp_path):
    wait_indexed(page, app)
    ask(page, "When does the lighthouse keeper of Ponta Azul log the tide?")
    answer = page.locator('[data-testid="stChatMessage"]').last
    card = answer.get_by_text(re.compile(r"\[1\] Open ponta-azul\.pdf at the passage"))
    expect(card).to_be_visible()
    quote_text = squash(answer.locator('[data-testid="stText"]').first.inner_text())
    card.click()  # the card's link opens the viewer in this tab
    expect(page.locator(".rag-page")).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Page \d+ of 2"))).to_be_visible()
    pdf = (app.folder / "ponta-azul.pdf").read_bytes()
    found = marks(page)
    # The passage of [1] crosses the page break: both pages carry marks; this page shows its own.
    assert found and read_back(pdf, found) in quote_text
    shown = int(page.locator(".rag-page").get_attribute("data-page"))
    assert {p for p, _ in found} == {shown}
    assert "viewer" in page.url.lower() and "doc=ponta-azul.pdf" in page.url
    if os.environ.get("RAG_UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / "screenshot-viewer.png"), full_page=True)

    # The other page of the passage: its marks read back as the rest of the quote.
    other = page.get_by_role("button", name=re.compile("Next page" if shown == 1 else "Previous page"))
    other.click()
    expect(page.locator(f'.rag-page[data-page="{3 - shown}"]')).to_be_visible()
    both = sorted(found + marks(page))
    assert read_back(pdf, both) == quote_text
    assert squash(SPAN_START) in quote_text and squash(SPAN_END) in quote_text

    # A reload of the viewer's address shows the same view.
    url = page.url
    page.reload()
    expect(page.locator(f'.rag-page[data-page="{3 - shown}"]')).to_be_visible()
    assert page.url == url and sorted(marks(page)) == sorted(m for m in both if m[0] == 3 - shown)


def test_the_answers_number_links_to_the_viewer_at_a_markdown_passage(page, app):
    wait_indexed(page, app)
    ask(page, "How big can a file I send through the browser be?")
    answer = page.locator('[data-testid="stChatMessage"]').last
    link = answer.locator('a[href*="viewer?doc="]').first
    href = link.get_attribute("href")
    doc, start, end = (re.search(rf"{k}=([^&]+)", href)[1] for k in ("doc", "start", "end"))
    page.goto(f"{app.url}/viewer?doc={doc}&start={start}&end={end}")
    mark = page.locator("mark#rag-quote")
    expect(mark).to_be_visible()
    text = (app.folder / doc.replace("+", " ")).read_text(encoding="utf-8")
    assert mark.inner_text() == text[int(start):int(end)]
    # The link itself, as the new tab it opens would (a new session): the passage, and this chat behind Chat.
    tab = page.context.new_page()
    tab.goto(f"{app.url}/{href}")
    expect(tab.locator("mark#rag-quote")).to_be_visible()
    tab.locator('[data-testid="stSidebarNav"] a').filter(has_text="Chat").click()
    expect(tab.locator('[data-testid="stChatMessage"]').get_by_text(
        "How big can a file I send through the browser be?")).to_be_visible()
    tab.close()


@pytest.mark.parametrize("doc", ["../../../etc/passwd", "/etc/passwd", "..%2Fdocs%2Fuploading.md"])
def test_a_path_outside_the_folder_is_refused_and_nothing_is_served(page, app, doc):
    page.goto(f"{app.url}/viewer?doc={quote(doc, safe='%')}&start=0&end=10")
    expect(page.get_by_text(re.compile("not a document of this folder"))).to_be_visible(timeout=120_000)
    assert page.locator(".rag-page").count() == 0 and page.locator("mark#rag-quote").count() == 0
    assert "root:" not in page.content()

"""A Word letter, a spreadsheet and a slide deck dropped into the app in a real browser (headless Debian
Chromium, a real `streamlit run` on 127.0.0.1), each asked about at once, and each citation opened in the
viewer at exactly the quoted passage: the Word passage highlighted in its text, the sheet drawn as a table with
the cited rows highlighted and its A1 range in the header, the slide with the passage highlighted in it. The
files are written by their formats' own libraries (lab/samples.py). The sheet's answer shows its row as a
one-row table under the sheet's header.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from lab.samples import SAMPLES, write_docx, write_pptx, write_xlsx
from tests.test_browser import QUEUE_TIMEOUT, ask, browser, new_app, open_app  # noqa: F401 (browser: a fixture)
from tests.test_viewer_browser import page  # noqa: F401 (a fixture: a browser tab over this module's `app`)

pytestmark = pytest.mark.browser

MIME = {"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    base = tmp_path_factory.mktemp("formats-browser")
    made = base / "made"
    made.mkdir()
    for name, write in (("letter.docx", write_docx), ("budget.xlsx", write_xlsx), ("course.pptx", write_pptx)):
        write(made / name)
    running = new_app(base).start()
    running.made = made
    yield running
    running.stop()


def drop(page: Page, app, name: str) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]').set_input_files(
        files=[{"name": name, "mimeType": MIME[name.rsplit(".", 1)[1]], "buffer": (app.made / name).read_bytes()}])
    expect(page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').filter(
        has_text=re.compile(rf"{re.escape(name)}: indexed, \d+ chunk"))).to_be_visible(timeout=QUEUE_TIMEOUT * 1000)


def open_first_citation(page: Page, name: str, check=None) -> str:
    """Ask the sample's question, check [1] is the file (and `check(answer)`, when given), open it in the viewer;
    returns the quote shown ("" for a sheet's, shown as a table)."""
    ask(page, SAMPLES[name].question)
    answer = page.locator('[data-testid="stChatMessage"]').last
    card = answer.get_by_text(re.compile(rf"\[1\] Open {re.escape(name)} at the passage"))
    expect(card).to_be_visible()
    expect(answer.get_by_text(re.compile(rf"^\[1\] {re.escape(name)} · .*{re.escape(SAMPLES[name].locator)}"))).to_be_visible()
    if check is not None:
        check(answer)
    texts = answer.locator('[data-testid="stText"]')
    quote = texts.first.inner_text() if texts.count() else ""
    card.click()
    return quote


def sheet_card(answer) -> None:
    """A sheet's answer shows its row as a one-row table under the sheet's header, and its card names that row."""
    table = answer.locator('[data-testid="stTable"] table').first
    expect(table).to_be_visible()
    assert [h.inner_text().strip() for h in table.locator("thead th").all()][:2] == ["Month", "Rent"]
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(1)
    assert [c.inner_text().strip() for c in rows.first.locator("td").all()][:2] == ["March", "850"]
    # The card's range is that one row: its quote and its range agree (a trial's card named one row, quoted two).
    expect(answer.get_by_text(re.compile(r"^\[1\] budget\.xlsx · Budget!A4:F4 · "))).to_be_visible()


def squash(text: str) -> str:
    return " ".join(text.split())


def test_word_sheet_and_slides_open_at_their_quotes(page, app):
    open_app(page, app.url)
    for name in ("letter.docx", "budget.xlsx", "course.pptx"):
        drop(page, app, name)

    quote = open_first_citation(page, "letter.docx")
    mark = page.locator("mark#rag-quote")
    expect(mark).to_be_visible()
    assert squash(mark.inner_text()) == squash(quote) and "340 euros" in mark.inner_text()
    expect(page.get_by_text(re.compile(r"^Heating repair · characters \d+–\d+"))).to_be_visible()  # its section path

    page.go_back()
    open_app(page, app.url)
    quote = open_first_citation(page, "budget.xlsx", sheet_card)
    table = page.locator("table.rag-sheet")
    expect(table).to_be_visible()
    a1 = table.get_attribute("data-range")
    assert re.fullmatch(r"Budget!A\d+:F\d+", a1), a1
    cited = [int(r.get_attribute("data-row")) for r in table.locator("tr.rag-cited").all()]
    first, last = (int(x) for x in re.findall(r"\d+", a1))
    assert cited == list(range(first, last + 1)) and 4 in cited  # March is row 4, under the header in row 1
    march = table.locator('tr[data-row="4"]')
    expect(march).to_contain_text("March")
    expect(march).to_contain_text("850")
    assert quote == ""  # no markup quote: the card shows the row as a table (sheet_card)
    expect(table.locator("caption")).to_have_text(a1)
    url = page.url
    page.reload()  # a reload shows the same view
    expect(page.locator("table.rag-sheet")).to_have_attribute("data-range", a1)
    assert page.url == url

    open_app(page, app.url)
    quote = open_first_citation(page, "course.pptx")
    slide = page.locator(".rag-slide")
    expect(slide).to_be_visible()
    assert slide.get_attribute("data-place") == "slide 4"
    mark = slide.locator("mark#rag-quote")
    assert squash(mark.inner_text()) == squash(quote) and "60 percent" in mark.inner_text()
    expect(slide).to_contain_text("Grading")

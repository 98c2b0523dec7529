"""Conversations and scope in a real browser (headless chromium) on the real app (`streamlit run`, the sample
folder, the real model and Chroma), started, stopped and killed as tests/test_browser.py does.

- Three questions, the app's process stopped and started again: the conversation's URL shows every turn
  as before (answer, citations, retrieval table, refusal: each message's text, its tables opened), and the
  list in the sidebar is the same; rename, find, delete and undo work; the exported Markdown holds every
  citation's quote and place. Then the process is killed while a fourth question is being answered: after
  a restart the three turns stored before it are all there.
- With two documents chosen as the scope, every candidate comes from them (the JSON export's rows), a
  question another document answers is refused naming the scope, and cleared, *Ask again* answers it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.test_browser import (ANSWER_TIMEOUT_MS, CHROMIUM, LAUNCH_ARGS, ROOT, START_TIMEOUT, UI_TIMEOUT_MS, new_app,
                                open_app)

pytestmark = pytest.mark.browser

ANSWERED = "Where is the index stored by default?"  # getting-started.md answers it
REFUSED = "What is the capital of Peru?"
THIRD = "What does the threshold slider do?"
LIST = '[data-testid="stSidebar"] [data-testid="stElementContainer"][class*="st-key-conv-"]'
MESSAGES = '[data-testid="stChatMessage"]'
DOCS = sum(1 for p in (ROOT / "data").rglob("*") if p.suffix in (".md", ".txt", ".pdf") and ".rag-index" not in p.parts)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    base = tmp_path_factory.mktemp("conversations")
    shutil.copytree(ROOT / "data", base / "docs", ignore=shutil.ignore_patterns(".rag-index"))
    a = new_app(base, base / "docs").start()
    yield a
    if a.proc is not None:
        a.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        yield b
        b.close()


def fresh_page(browser, tmp_path: Path) -> Page:
    context = browser.new_context(viewport={"width": 1440, "height": 1100}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    return page


def turns_text(page: Page, n: int) -> list[str]:
    """Each message's text, every retrieval table opened (an earlier turn's is closed at first)."""
    expect(page.locator(MESSAGES)).to_have_count(2 * n, timeout=ANSWER_TIMEOUT_MS)
    for summary in page.locator('[data-testid="stExpander"] details:not([open]) summary').filter(
            has_text=re.compile(r"^Retrieval: ")).all():
        summary.click()
    expect(page.locator('[data-testid="stExpander"] details:not([open]) summary').filter(
        has_text=re.compile(r"^Retrieval: "))).to_have_count(0)
    expect(page.locator('[data-testid="stDataFrame"]')).to_have_count(n)
    page.wait_for_timeout(1500)  # the data grids paint after they appear
    return [m.inner_text() for m in page.locator(MESSAGES).all()]


def ask(page: Page, question: str) -> None:
    """Ask and wait for the turn's retrieval table (a refusal quotes the question: the first message holding it)."""
    n = page.locator(MESSAGES).count()
    box = page.locator('[data-testid="stChatInput"] textarea')
    box.fill(question)
    box.press("Enter")
    expect(page.locator(MESSAGES)).to_have_count(n + 2, timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(MESSAGES).last.get_by_text(re.compile(r"Retrieval: \d+ candidates"))).to_be_visible(
        timeout=ANSWER_TIMEOUT_MS)


def ready(page: Page, url: str) -> None:
    """The app open, with the sample folder indexed (a question asked before would be refused)."""
    open_app(page, url)
    expect(page.locator('[data-testid="stSidebar"]').get_by_text(f"{DOCS} documents indexed", exact=False)).to_be_visible(
        timeout=START_TIMEOUT * 1000)


def listed(page: Page) -> list[str]:
    return [b.inner_text().strip() for b in page.locator(LIST).all()]


def menu(page: Page) -> None:
    page.locator('[data-testid="stSidebar"]').get_by_text("This conversation").click()


def export(page: Page, key: str) -> str:
    menu(page)
    with page.expect_download() as download:
        page.locator(f".st-key-{key} button").click()
    page.keyboard.press("Escape")
    return Path(download.value.path()).read_text(encoding="utf-8")


def test_conversations_come_back_after_a_restart_and_a_kill(app, browser, tmp_path):
    page = fresh_page(browser, tmp_path)
    ready(page, app.url)
    for q in (ANSWERED, REFUSED, THIRD):
        ask(page, q)
    chat_id = re.search(r"chat=([0-9a-f]+)", page.url)[1]
    before = turns_text(page, 3)
    assert "refused" in before[3] and "Peru" in before[3]
    titles = listed(page)
    assert titles[0] == ANSWERED
    page.screenshot(path=str(tmp_path / "before.png"), full_page=True)

    app.stop()
    app.start()
    page = fresh_page(browser, tmp_path)
    page.goto(f"{app.url}/?chat={chat_id}")
    after = turns_text(page, 3)
    assert after == before
    assert listed(page) == titles

    # Rename, find, delete (and undo) in the sidebar.
    menu(page)
    page.locator(".st-key-conv_name input").fill("Index and threshold")
    page.locator(".st-key-conv_rename button").click()
    expect(page.locator(LIST).first).to_have_text("Index and threshold", use_inner_text=True)
    page.keyboard.press("Escape")
    page.locator(".st-key-conv_find input").fill("threshold slider")
    page.locator(".st-key-conv_find input").press("Enter")
    expect(page.locator(LIST)).to_have_count(1)
    page.locator(".st-key-conv_find input").fill("bluebird migration")
    page.locator(".st-key-conv_find input").press("Enter")
    expect(page.locator(LIST)).to_have_count(0)
    expect(page.get_by_text("No conversation holds those words.")).to_be_visible()
    page.locator(".st-key-conv_find input").fill("")
    page.locator(".st-key-conv_find input").press("Enter")

    # The Markdown export holds every citation's quote and place, as the cards show them.
    md = export(page, "conv_md")
    flat = " ".join(md.replace("\n> ", "\n").split())
    headers = page.locator(MESSAGES).get_by_text(re.compile(r"^\[\d+\] .* · cosine distance [0-9.]+$")).all()
    assert len(headers) >= 2
    for h in headers:
        n, doc, place, dist = re.match(r"\[(\d+)\] (\S+) · (.*) · cosine distance ([0-9.]+)$", h.inner_text().strip()).groups()
        assert f"[{n}] **{doc}** · {place} · cosine distance {dist}" in md
    for quote in page.locator(MESSAGES).locator('[data-testid="stVerticalBlockBorderWrapper"] [data-testid="stText"]').all():
        assert " ".join(quote.inner_text().split()) in flat
    assert "What is the capital of Peru?" in md and "NO ANSWER" in md

    menu(page)
    page.locator(".st-key-conv_delete button").click()
    expect(page.locator(MESSAGES)).to_have_count(0)
    expect(page.locator(LIST).filter(has_text="Index and threshold")).to_have_count(0)
    page.locator(".st-key-conv_undo button").click()
    expect(page.locator(LIST).first).to_have_text("Index and threshold", use_inner_text=True)
    expect(page.locator(MESSAGES)).to_have_count(6)

    # Killed while a fourth turn is being answered: the three stored before it are there after a restart.
    box = page.locator('[data-testid="stChatInput"] textarea')
    box.fill("Which error code means the folder cannot be read?")
    box.press("Enter")
    expect(page.locator(MESSAGES).filter(has_text="Which error code").first).to_be_visible()
    app.kill()
    app.start()
    page = fresh_page(browser, tmp_path)
    page.goto(f"{app.url}/?chat={chat_id}")
    expect(page.locator(MESSAGES).nth(5)).to_be_visible(timeout=START_TIMEOUT * 1000)
    texts = [m.inner_text() for m in page.locator(MESSAGES).all()]
    for i, q in enumerate((ANSWERED, REFUSED, THIRD)):
        assert q in texts[2 * i]
        # Its answer or refusal and its sources, as before (the table under it may be closed now).
        assert texts[2 * i + 1].splitlines()[:6] == before[2 * i + 1].splitlines()[:6]
    expect(page.locator(LIST).first).to_have_text("Index and threshold", use_inner_text=True)


def test_a_scope_of_two_documents_refuses_what_a_third_answers(app, browser, tmp_path):
    page = fresh_page(browser, tmp_path)
    ready(page, app.url)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Scope: the whole folder").click()
    for name in ("citations.md", "uploading.md"):
        field = page.locator(".st-key-scope_docs input")
        field.click()
        field.fill(name)
        field.press("Enter")
    page.keyboard.press("Escape")
    expect(sidebar.get_by_text("Scope: the 2 chosen documents (citations.md, uploading.md)")).to_be_visible()

    ask(page, ANSWERED)
    last = page.locator(MESSAGES).last
    expect(last.get_by_text("None of the 2 chosen documents (citations.md, uploading.md) answers this",
                            exact=False)).to_be_visible()
    rows = json.loads(export(page, "conv_json"))["turns"][0]
    assert rows["refused"] and rows["candidates"]
    assert {c["doc_name"] for c in rows["candidates"]} <= {"citations.md", "uploading.md"}
    assert rows["scope"]["scope"]["docs"] == ["citations.md", "uploading.md"]

    page.locator(".st-key-scope_clear button").click()
    expect(sidebar.get_by_text("Scope: the whole folder")).to_be_visible()
    page.locator(MESSAGES).last.get_by_role("button", name="Ask again").click()
    expect(page.locator(MESSAGES)).to_have_count(4, timeout=ANSWER_TIMEOUT_MS)
    again = page.locator(MESSAGES).last
    expect(again.get_by_text(re.compile(r"^\[1\] getting-started\.md · "))).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    expect(again.get_by_text("Asked again: now answered (before: refused)", exact=False)).to_be_visible()
    page.screenshot(path=str(tmp_path / "scope.png"), full_page=True)

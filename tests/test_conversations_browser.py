"""Conversations and scope in a real browser (headless chromium) on the real app (`streamlit run`, the sample
folder, the real model and Chroma), started, stopped and killed as tests/test_browser.py does.

- Three questions, the app's process killed and started again: the conversation's URL shows every turn
  as before (answer, citations, retrieval table, refusal: each message's text, its tables opened), and the
  list in the sidebar is the same; rename, find, delete and undo work; the exported Markdown holds every
  citation's quote and place. The restart is a kill while a fourth question is being answered: the turns
  stored before it are all there, drawn as before.
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
FOURTH = "Which error code means the folder cannot be read?"
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
    """Each message's text: the question, the answer or refusal, its sources and captions, its tables' labels
    (what a table holds is compared through the JSON export: its grid paints on a canvas). A table's body is
    left out, since the last turn's is open and an earlier one's closed."""
    expect(page.locator(MESSAGES)).to_have_count(2 * n, timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(MESSAGES).nth(2 * n - 1).get_by_text(re.compile(r"^Retrieval: "))).to_be_visible(
        timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_timeout(1500)
    texts = [m.evaluate("""m => { const c = m.cloneNode(true);
        c.querySelectorAll('[data-testid="stExpander"] details > :not(summary)').forEach(e => e.remove());
        return c.textContent; }""") for m in page.locator(MESSAGES).all()]
    return [re.sub(r"keyboard_arrow_(down|right)", "", t) for t in texts]


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
    shown = json.loads(export(page, "conv_json"))["turns"]
    assert [t["question"] for t in shown] == [ANSWERED, REFUSED, THIRD] and len(shown[0]["candidates"]) == 20

    # Killed while a fourth question is being answered (its message shows once it is searched and stored).
    box = page.locator('[data-testid="stChatInput"] textarea')
    box.fill(FOURTH)
    box.press("Enter")
    expect(page.locator(MESSAGES).filter(has_text=FOURTH).first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    app.kill()
    app.start()
    page = fresh_page(browser, tmp_path)
    page.goto(f"{app.url}/?chat={chat_id}")
    after = turns_text(page, 4)
    # Every turn stored before the kill, drawn as it was; the third now an earlier turn, which says the
    # threshold it was answered at. The fourth is answered now, from its stored search.
    (tmp_path / "turns.json").write_text(json.dumps({"before": before, "after": after}, indent=1))
    frozen = lambda texts: [re.sub(r" · answered at threshold [0-9.]+", "", t) for t in texts]  # noqa: E731
    assert frozen(after[:6]) == frozen(before)
    # The retrieval tables, answers, refusals and citations, as the screen showed them before and now.
    assert json.loads(export(page, "conv_json"))["turns"][:3] == shown
    assert FOURTH in after[6] and "Retrieval: 20 candidates" in after[7]
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
        card = h.locator('xpath=ancestor::div[@data-testid="stVerticalBlock"][1]')
        quote = card.locator('[data-testid="stText"]').first.inner_text()  # the passage's own words, as shown
        assert len(quote) > 40 and " ".join(quote.split()) in flat
    assert "What is the capital of Peru?" in md and "NO ANSWER" in md

    menu(page)
    page.locator(".st-key-conv_delete button").click()
    expect(page.locator(MESSAGES)).to_have_count(0)
    expect(page.locator(LIST).filter(has_text="Index and threshold")).to_have_count(0)
    page.locator(".st-key-conv_undo button").click()
    expect(page.locator(LIST).first).to_have_text("Index and threshold", use_inner_text=True)
    expect(page.locator(MESSAGES)).to_have_count(8)

    page.screenshot(path=str(tmp_path / "after.png"), full_page=True)


def test_a_scope_of_two_documents_refuses_what_a_third_answers(app, browser, tmp_path):
    page = fresh_page(browser, tmp_path)
    ready(page, app.url)
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_text("Scope: the whole folder")).to_be_visible()
    sidebar.get_by_text("Choose the scope").click()
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

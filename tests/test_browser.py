"""The app in a real browser: `streamlit run` on 127.0.0.1, driven by headless Debian chromium via Playwright.

Nothing is faked: the server is the real app over a copy of the sample folder (RAG_FOLDER / RAG_INDEX_DIR
on temporary folders), with the real model and a real Chroma store; the browser is /usr/bin/chromium
(installed by scripts/install-browser.sh; Playwright's own browser download is never used).

Screenshots go to the test's own temporary folder. With RAG_UPDATE_SCREENSHOT=1 the answered chat is also
copied to docs/screenshot-chat.png (the README's picture), so ordinary runs never touch the working tree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.conftest import free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
START_TIMEOUT = 180  # model load and the first sync of the folder, on a shared 2-core machine
UI_TIMEOUT_MS = 60_000
LOCAL_HOSTS = {"127.0.0.1", "localhost"}

HERON = ("# Heron field notes\n\n## Migration\n\nThe Zanzibar heron migrates every October to the salt lakes of "
         "Quarnelia. The colony counts about four hundred birds.\n")
HOSTILE = ("# Lighthouse notes\n\n## Keeper\n\nThe purple lighthouse keeper is named Oriol Vantablack. "
           "<img src=x onerror=alert(1)> <script>alert(2)</script> "
           "![x](http://example.invalid/pixel.png)\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser")
    docs = base / "docs"
    shutil.copytree(ROOT / "data", docs, ignore=shutil.ignore_patterns(".rag-index"))
    port = free_port()
    env = dict(os.environ, RAG_FOLDER=str(docs), RAG_INDEX_DIR=str(base / "index"),
               RAG_CONFIG=str(base / "none.toml"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    log = (base / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("streamlit did not start:\n" + (base / "streamlit.log").read_text()[-3000:])
        time.sleep(0.5)
    yield {"url": url, "folder": docs}
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1440, "height": 1100})
    pg = context.new_page()
    pg.set_default_timeout(UI_TIMEOUT_MS)
    yield pg
    context.close()


def open_app(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator('[data-testid="stChatInput"] textarea')).to_be_visible(timeout=START_TIMEOUT * 1000)
    expect(page.get_by_text("Chat with your folder", exact=True)).to_be_visible()


def upload(page: Page, name: str, text: str) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]').set_input_files(
        files=[{"name": name, "mimeType": "text/markdown", "buffer": text.encode()}])
    expect(page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').filter(
        has_text=f"{name}: indexed, 1 chunk")).to_be_visible()


def ask(page: Page, question: str) -> float:
    box = page.locator('[data-testid="stChatInput"] textarea')
    box.fill(question)
    t0 = time.perf_counter()
    box.press("Enter")
    expect(page.locator('[data-testid="stChatMessage"]').filter(has_text=question)).to_be_visible()
    expect(page.locator('[data-testid="stChatMessage"]').last.get_by_text(re.compile("Retrieval: \\d+ candidates"))).to_be_visible()
    return time.perf_counter() - t0


def test_upload_ask_read_citation_then_slide_to_refusal(page, server, tmp_path):
    open_app(page, server["url"])
    upload(page, "heron-notes.md", HERON)
    assert (server["folder"] / "heron-notes.md").read_text() == HERON

    seconds = ask(page, "When does the Zanzibar heron migrate?")
    answer = page.locator('[data-testid="stChatMessage"]').last
    first = answer.get_by_text(re.compile(r"^\[1\] ")).first
    expect(first).to_be_visible()
    cite = re.match(r"\[1\] (\S+) · .* · cosine distance ([0-9.]+)$", first.inner_text().strip())
    assert cite, first.inner_text()
    assert cite[1] == "heron-notes.md"
    distance = float(cite[2])
    # The slider starts at the threshold calibrated on this folder for English questions, and says so.
    slider = page.locator('[data-testid="stSlider"] input[type="range"]').first
    start = float(slider.input_value())
    expect(page.get_by_text(re.compile(r"^Calibrated for English: [0-9.]+, where"))).to_be_visible()
    assert 0.0 <= distance <= start
    expect(answer.get_by_text("Quarnelia", exact=False).first).to_be_visible()
    expect(answer.get_by_text("link: heron-notes.md#char=", exact=False)).to_be_visible()
    table = answer.locator('[data-testid="stDataFrame"]')
    expect(table).to_be_visible()
    page.wait_for_timeout(1000)  # the data grid paints after it appears
    page.screenshot(path=str(tmp_path / "chat-answer.png"), full_page=True)
    if os.environ.get("RAG_UPDATE_SCREENSHOT") == "1":
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copy(tmp_path / "chat-answer.png", ROOT / "docs" / "screenshot-chat.png")
    print(f"question answered on screen in {seconds:.2f} s (browser round trip)")

    # Move the slider down with the keyboard until the answer turns into the refusal.
    # After each few steps, wait until the page shows the answer or refusal for the slider's new value.
    refusal = page.get_by_text(re.compile(r"^NO ANSWER: nothing under cosine distance"))
    seen = []
    for _ in range(40):
        slider.focus()
        for _ in range(5):
            slider.press("ArrowLeft")
        value = f"{float(slider.input_value()):.3f}"
        seen.append(value)
        expect(page.get_by_text(re.compile(
            rf"^(Sources · threshold {value} ·|NO ANSWER: nothing under cosine distance {value} for)"))).to_be_visible()
        if refusal.count() or value == "0.000":
            break
    expect(refusal).to_be_visible()
    assert len(seen) > 5 and float(seen[0]) == pytest.approx(start - 0.025, abs=0.0051), seen  # 5 steps of 0.005
    expect(page.get_by_text(re.compile(r"^Set by you"))).to_be_visible()
    now = float(re.search(r"distance ([0-9.]+) for", refusal.inner_text())[1])
    assert now < distance, "the refusal appears only once the threshold is under the citation's distance"
    assert now > distance - 0.03, "the refusal shows as soon as the threshold passes under the distance"
    expect(page.get_by_text(re.compile(r"A threshold of [0-9.]+ would let heron-notes\.md through"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Closest candidate: heron-notes\.md"))).to_be_visible()
    assert answer.get_by_text(re.compile(r"^\[1\] ")).count() == 0
    page.screenshot(path=str(tmp_path / "chat-refusal.png"), full_page=True)
    assert (tmp_path / "chat-refusal.png").stat().st_size > 10_000


def test_hostile_document_renders_inert_and_nothing_leaves_loopback(page, server):
    dialogs: list[str] = []
    hosts: set[str] = set()

    def on_dialog(d):
        dialogs.append(d.message)
        d.dismiss()

    def on_request(req):
        u = urlparse(req.url)
        hosts.add(u.scheme if u.scheme in ("data", "blob") else u.hostname or "")

    page.on("dialog", on_dialog)
    page.on("request", on_request)
    open_app(page, server["url"])
    upload(page, "lighthouse.md", HOSTILE)
    ask(page, "Who is the purple lighthouse keeper?")
    answer = page.locator('[data-testid="stChatMessage"]').last
    expect(answer.get_by_text(re.compile(r"^\[1\] lighthouse\.md · "))).to_be_visible()
    # The quote shows the markup as the characters it is made of.
    quote = answer.locator('[data-testid="stText"]').filter(has_text="Oriol Vantablack").first
    assert "<img src=x onerror=alert(1)>" in quote.inner_text()
    assert "<script>alert(2)</script>" in quote.inner_text()
    assert "![x](http://example.invalid/pixel.png)" in quote.inner_text()
    page.wait_for_timeout(2000)  # time for any image load or handler to fire

    # The library page lists it, and stays on loopback too.
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Library").click()
    expect(page.get_by_text(re.compile(r"^\d+ documents \(\d+ indexed"))).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').first.get_by_text("lighthouse.md", exact=True)).to_have_count(1)
    page.wait_for_timeout(1000)

    assert dialogs == []
    assert page.locator('img[src="x"], img[src*="example.invalid"]').count() == 0
    assert page.locator("script", has_text="alert(2)").count() == 0
    assert hosts and hosts <= LOCAL_HOSTS | {"data", "blob"}, hosts

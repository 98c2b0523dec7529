"""The app in a real browser: `streamlit run` on 127.0.0.1, driven by headless Debian chromium via Playwright.

Nothing is faked: the server is the real app over a copy of the sample folder (RAG_FOLDER / RAG_INDEX_DIR
on temporary folders), with the real model and a real Chroma store; the browser is /usr/bin/chromium
(installed by scripts/install-browser.sh; Playwright's own browser download is never used).

Screenshots go to the test's own temporary folder. With RAG_UPDATE_SCREENSHOT=1 the answered chat is also
copied to docs/screenshot-chat.png (the README's picture), so ordinary runs never touch the working tree.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
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
ANSWER_TIMEOUT_MS = 300_000  # a turn's answer, drawn while the app may be indexing and calibrating (`ask_again`)
QUEUE_TIMEOUT = 600  # seconds for files to be indexed (a big PDF, the sample folder) on a shared, busy 2-core machine
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# expect() has its own default timeout (5 s), which page.set_default_timeout does not change: the queue
# indexes the sample folder first, so an upload's "indexed" alert can take longer than that here.
expect.set_options(timeout=UI_TIMEOUT_MS)

HERON = ("# Heron field notes\n\n## Migration\n\nThe Zanzibar heron migrates every October to the salt lakes of "
         "Quarnelia. The colony counts about four hundred birds.\n")
HOSTILE = ("# Lighthouse notes\n\n## Keeper\n\nThe purple lighthouse keeper is named Oriol Vantablack. "
           "<img src=x onerror=alert(1)> <script>alert(2)</script> "
           "![x](http://example.invalid/pixel.png)\n")


class App:
    """One `streamlit run` of the app on 127.0.0.1 over `folder`, its index in `index`; can be started again
    on the same folder and index after a stop or a SIGKILL."""

    def __init__(self, base: Path, folder: Path, index: Path):
        self.base, self.folder, self.index = base, folder, index
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.starts = 0

    def start(self) -> "App":
        port = free_port()
        self.starts += 1
        env = dict(os.environ, RAG_FOLDER=str(self.folder), RAG_INDEX_DIR=str(self.index),
                   RAG_CONFIG=str(self.base / "none.toml"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        logfile = self.base / f"streamlit-{self.starts}.log"
        with logfile.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"), "--server.headless",
                 "true", "--server.address", "127.0.0.1", "--server.port", str(port),
                 "--browser.gatherUsageStats", "false"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail("streamlit did not start:\n" + logfile.read_text()[-3000:])
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: no shutdown code of the app runs."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)
        self.proc = None


def new_app(base: Path, folder: Path | None = None) -> App:
    folder = folder or base / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    return App(base, folder, base / "index")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser")
    docs = base / "docs"
    shutil.copytree(ROOT / "data", docs, ignore=shutil.ignore_patterns(".rag-index"))
    app = new_app(base, docs).start()
    yield {"url": app.url, "folder": docs, "index": app.index}
    app.stop()


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
    # The queue indexes the sample folder first: on a busy machine that alone can take more than a minute.
    expect(page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').filter(
        has_text=f"{name}: indexed, 1 chunk")).to_be_visible(timeout=QUEUE_TIMEOUT * 1000)


def ask(page: Page, question: str) -> float:
    box = page.locator('[data-testid="stChatInput"] textarea')
    box.fill(question)
    t0 = time.perf_counter()
    box.press("Enter")
    expect(page.locator('[data-testid="stChatMessage"]').filter(has_text=question)).to_be_visible()
    expect(page.locator('[data-testid="stChatMessage"]').last.get_by_text(re.compile("Retrieval: \\d+ candidates"))).to_be_visible()
    return time.perf_counter() - t0


def lead_columns_in_view(table) -> None:
    """The retrieval table shows document, place, preview and verdict first, all four inside the grid's visible
    width with no horizontal scrolling (a trial at 1440 px found them past ten number columns, off screen)."""
    from app.chat_table import LEAD_COLUMNS, LEAD_WIDTHS  # what the page configures

    heads = [h.inner_text().strip() for h in table.locator('thead th, [role="columnheader"]').all()]
    assert heads[:4] == LEAD_COLUMNS, heads
    scroll_width, client_width, left = table.locator(".dvn-scroller").first.evaluate(
        "e => [e.scrollWidth, e.clientWidth, e.scrollLeft]")
    assert left == 0 and sum(LEAD_WIDTHS) <= client_width < scroll_width, (LEAD_WIDTHS, client_width, scroll_width)


def refusal_at_a_glance(message) -> str:
    """A refusal is its reason, one sentence and its best candidate before its Details; returns the best line."""
    shown = [e.inner_text().strip() for e in message.locator(
        '[data-testid="stMarkdown"], [data-testid="stText"], [data-testid="stExpander"]').all()]
    glance = shown[:next(i for i, x in enumerate(shown) if "Details: the closest passage" in x)]
    assert len(glance) == 3 and glance[1].startswith("NO ANSWER: ") and glance[2].startswith("Best candidate, "), glance
    # One sentence of why: nothing after its quoted question but the closing quote (or the name it quotes).
    assert re.fullmatch(r'NO ANSWER: [^\n]*"', glance[1]) or glance[1].endswith(" names"), glance[1]
    return glance[2]


def test_upload_ask_read_citation_then_slide_to_refusal(page, server, tmp_path):
    page.set_viewport_size({"width": 1280, "height": 800})  # a laptop's screen: the measure
    open_app(page, server["url"])
    # A type the folder does not take is refused by the app, with the types it does take (not by the
    # uploader's MIME filter, whose message named "application/vnd.openxmlformats…"), and nothing is saved.
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]').set_input_files(
        files=[{"name": "minutes.key", "mimeType": "application/x-iwork-keynote-sffkey",
                "buffer": b"PK\x03\x04 a Keynote deck"}])
    expect(page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').filter(
        has_text=re.compile(r"minutes\.key: failed, .*unsupported file type '\.key'; supported: .*\.docx.*\.md.*\.pdf"))).to_be_visible()
    assert not (server["folder"] / "minutes.key").exists()
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
    caption = page.get_by_text(re.compile(r"^Calibrated for English: [0-9.]+"))
    expect(caption).to_be_visible()
    assert "unrelated questions" not in caption.inner_text()  # the derivation is in its tooltip: a line, not ten
    assert 0.0 <= distance <= start
    expect(answer.get_by_text("Quarnelia", exact=False).first).to_be_visible()
    expect(answer.get_by_text("link: heron-notes.md#char=", exact=False)).to_be_visible()
    table = answer.locator('[data-testid="stDataFrame"]')
    expect(table).to_be_visible()
    page.wait_for_timeout(1000)  # the data grid paints after it appears
    lead_columns_in_view(table)
    answer.evaluate("e => e.scrollIntoView({block: 'start'})")  # the answer, its card and the table's first rows
    page.wait_for_timeout(500)
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
    # At a glance: the best candidate, the search's own first row, with what would let it through.
    expect(page.get_by_text(re.compile(r"^Best candidate, the search's first row: heron-notes\.md · .*: over threshold at "
                                       r"distance [0-9.]+; a threshold of [0-9.]+ would let it through\.$"))).to_be_visible()
    best = refusal_at_a_glance(answer)
    # The table re-renders after the refusal's text (one Streamlit run, drawn in parts): wait for its new verdict.
    expect(table.locator("tbody tr").first.locator("td").nth(3)).to_contain_text("over threshold")
    first_row = [c.inner_text() for c in table.locator("tbody tr").first.locator("td").all()]
    assert best.startswith(f"Best candidate, the search's first row: {first_row[0]} · {first_row[1]}: "), (best, first_row)
    assert first_row[3] in best  # the same one line as the table's verdict
    lead_columns_in_view(table)
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


# --- the indexing queue, in the browser -------------------------------------------------------------------
#
# The queue's truth is in the library's SQLite file (<index>/library.sqlite, table `queue(path, item JSON)`,
# table `documents(doc_id, path, record JSON)`); these tests read it directly, besides what the page shows.

ACTIVE_STATES = ("queued", "extracting", "embedding")
UPLOADER = '[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]'
WORDS = ("river harbour copper lantern meadow orchard granite falcon willow ember cobalt saffron tundra glacier "
         "canyon beacon quarry thistle marble juniper walrus pelican bramble cinder harvest lagoon prairie "
         "compass anchor ledger mosaic velvet quartz sparrow timber vessel cavern summit delta estuary").split()


def _read(index: Path, sql: str) -> list[tuple]:
    db_path = index / "library.sqlite"
    if not db_path.is_file():  # never create it: the app makes its own
        return []
    for attempt in range(20):
        try:
            db = sqlite3.connect(db_path, timeout=10)
            try:
                return db.execute(sql).fetchall()
            finally:
                db.close()
        except sqlite3.OperationalError:
            if attempt == 19:
                raise
            time.sleep(0.1)
    return []


def queue_rows(index: Path) -> dict[str, dict]:
    """The queue table: path -> item (state, runs, chunks, done, total, ...)."""
    return {path: json.loads(item) for path, item in _read(index, "SELECT path, item FROM queue")}


def doc_records(index: Path) -> dict[str, dict]:
    """The documents table: path -> record (doc_id, status, chunks, ...)."""
    return {r["path"]: r for r in (json.loads(raw) for (raw,) in _read(index, "SELECT record FROM documents"))}


def wait_until(check, timeout: float, what: str, interval: float = 0.25):
    """Poll `check()` until it returns something truthy (returned), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def settled(index: Path, paths) -> dict[str, dict] | None:
    """The rows of `paths` once every one of them exists and none is queued or running; else None."""
    rows = queue_rows(index)
    mine = {p: rows.get(p) for p in paths}
    if all(r is not None and r["state"] not in ACTIVE_STATES for r in mine.values()):
        return mine
    return None


def big_pdf(pages: int, chars: int = 1500, seed: int = 7) -> bytes:
    """A text PDF of `pages` pages, about `chars` characters of varied sentences each (pymupdf)."""
    import pymupdf

    rnd = random.Random(seed)
    doc = pymupdf.open()
    for n in range(pages):
        sentences: list[str] = []
        while sum(len(x) + 1 for x in sentences) < chars:
            w = rnd.sample(WORDS, 9)
            sentences.append(f"On page {n + 1} the {w[0]} near the {w[1]} kept {rnd.randint(2, 999)} {w[2]} and "
                             f"{w[3]} beside the {w[4]} {w[5]}, while {w[6]} {w[7]} met {w[8]}.")
        page = doc.new_page()
        page.insert_text((40, 50), "\n".join(textwrap.wrap(" ".join(sentences), 95)), fontsize=8)
    data = doc.tobytes()
    doc.close()
    return data


def note(i: int, paragraphs: int = 1) -> str:
    """A small Markdown file with one fact of its own (station i's registry code), and filler paragraphs."""
    rnd = random.Random(i)
    parts = [f"# Station {i}", f"The registry code of weather station {i} is QX-{1000 + 37 * i}."]
    for p in range(paragraphs - 1):
        parts.append(" ".join(f"Paragraph {p} of station {i} says the {rnd.choice(WORDS)} by the "
                              f"{rnd.choice(WORDS)} holds {rnd.randint(1, 999)} items." for _ in range(6)))
    return "\n\n".join(parts) + "\n"


def sidebar(page: Page):
    return page.locator('[data-testid="stSidebar"]')


def sidebar_alert(page: Page, text: str):
    return sidebar(page).locator('[data-testid="stAlert"]').filter(has_text=text)


def ask_again(page: Page, question: str) -> float:
    """Ask (the same question may already be on the page) and wait until this turn's answer is drawn.
    Returns the moment (time.perf_counter) the question was sent."""
    messages = page.locator('[data-testid="stChatMessage"]')
    before = messages.count()
    box = page.locator('[data-testid="stChatInput"] textarea')
    box.fill(question)
    box.press("Enter")
    sent = time.perf_counter()
    # What this asserts is that the turn is drawn, not how fast: a question asked as a file is dropped waits on the
    # app's indexing and calibration, which `make test`'s second worker shares the two cores with (seen: over 120 s).
    expect(messages).to_have_count(before + 2, timeout=ANSWER_TIMEOUT_MS)
    expect(messages.nth(before)).to_contain_text(question)
    expect(messages.last.get_by_text(re.compile(r"Retrieval: \d+ candidates"))).to_be_visible()
    return sent


@pytest.fixture
def tab(browser):
    """A fresh browser tab for tests that run their own server."""
    context = browser.new_context(viewport={"width": 1440, "height": 1100})
    pg = context.new_page()
    pg.set_default_timeout(UI_TIMEOUT_MS)
    yield pg
    context.close()


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    """Its own server over an empty folder, for the big-PDF tests (their files have their own names)."""
    app = new_app(tmp_path_factory.mktemp("queue-app")).start()
    yield app
    app.stop()


def wait_running(index: Path, name: str) -> dict:
    def running():
        row = queue_rows(index).get(name)
        if row is not None and row["state"] not in ("queued", "extracting", "embedding"):
            pytest.fail(f"{name} finished before it could be watched running: {row}")
        return row if row is not None and row["state"] in ("extracting", "embedding") else None

    return wait_until(running, QUEUE_TIMEOUT, f"{name} to be extracted or embedded", interval=0.1)


def test_queue_reload_while_a_big_pdf_is_indexed(tab, empty_app):
    index, name = empty_app.index, "reload-big.pdf"
    data = big_pdf(300)
    open_app(tab, empty_app.url)
    tab.locator(UPLOADER).set_input_files(files=[{"name": name, "mimeType": "application/pdf", "buffer": data}])
    before = wait_running(index, name)
    tab.reload()
    expect(tab.locator('[data-testid="stChatInput"] textarea')).to_be_visible(timeout=START_TIMEOUT * 1000)
    # After the reload the sidebar shows the file where it is: still running, or done.
    progress = re.compile(rf"{re.escape(name)}: (queued|extracting|embedding, \d+ of \d+ chunks|indexed, \d+ chunks)")
    expect(sidebar(tab).get_by_text(progress).first).to_be_visible()

    # It goes on from where it was (never back to the start) and finishes once.
    seen = [before]

    def done():
        row = queue_rows(index)[name]
        seen.append(row)
        return row if row["state"] not in ACTIVE_STATES else None

    row = wait_until(done, QUEUE_TIMEOUT, f"{name} to be indexed")
    order = {"queued": 0, "extracting": 1, "embedding": 2, "indexed": 3}
    steps = [(order.get(r["state"], 9), r["done"]) for r in seen]
    assert steps == sorted(steps), f"the file went backwards after the reload: {steps}"
    assert row["state"] == "indexed" and row["runs"] == 1, row
    assert row["chunks"] > 300 and row["total"] == row["chunks"] == row["done"], row
    rec = doc_records(index)[name]
    assert rec["status"] == "indexed" and rec["chunks"] == row["chunks"] and rec["pages"] == 300, rec
    expect(sidebar_alert(tab, f"{name}: indexed, {row['chunks']} chunks")).to_be_visible()


def test_queue_cancel_a_file_waiting_behind_a_big_pdf(tab, empty_app):
    index, big, small = empty_app.index, "cancel-big.pdf", "cancel-small.md"
    data = big_pdf(150, seed=11)  # big enough to keep the worker busy while the small one is cancelled
    open_app(tab, empty_app.url)
    tab.locator(UPLOADER).set_input_files(files=[{"name": big, "mimeType": "application/pdf", "buffer": data}])
    wait_running(index, big)
    tab.locator(UPLOADER).set_input_files(files=[
        {"name": small, "mimeType": "text/markdown", "buffer": note(99).encode()}])
    wait_until(lambda: queue_rows(index).get(small, {}).get("state") == "queued", UI_TIMEOUT_MS / 1000,
               f"{small} to wait in the queue")
    # Its own row in the sidebar panel (columns: the label, then its Cancel button).
    row = sidebar(tab).locator('[data-testid="stHorizontalBlock"]').filter(has_text=f"{small}: queued")
    expect(row).to_have_count(1)
    row.get_by_role("button", name="Cancel", exact=True).click()
    expect(sidebar_alert(tab, f"{small}: cancelled")).to_be_visible()
    assert queue_rows(index)[small]["state"] == "cancelled"
    assert queue_rows(index)[big]["state"] in ACTIVE_STATES, "the big file was not cancelled with it"

    rows = wait_until(lambda: settled(index, [big, small]), QUEUE_TIMEOUT, f"{big} to be indexed")
    assert rows[big]["state"] == "indexed" and rows[big]["runs"] == 1, rows[big]
    assert rows[small]["state"] == "cancelled" and rows[small]["runs"] == 0, rows[small]
    time.sleep(2)  # a folder rescan (the watcher) must not bring it back either
    assert queue_rows(index)[small]["state"] == "cancelled"
    rec = doc_records(index).get(small)
    assert rec is None or (rec["status"] != "indexed" and rec["chunks"] == 0), rec
    assert (empty_app.folder / small).is_file(), "cancelling keeps the uploaded file"
    expect(sidebar_alert(tab, f"{small}: cancelled")).to_be_visible()


def test_queue_sigkill_mid_embedding_then_restart_indexes_each_file_once(tab, tmp_path):
    app = new_app(tmp_path)
    names = [f"note-{i:02d}.md" for i in range(1, 41)]
    for i, n in enumerate(names, 1):  # 7 chunks each: most notes are written in a group before the PDF's
        (app.folder / n).write_text(note(i, paragraphs=8))
    big = "zz-large.pdf"  # sorts last: it is embedded with the last notes, after the first group is written
    (app.folder / big).write_bytes(big_pdf(120, seed=5))
    everything = names + [big]
    app.start()
    try:
        open_app(tab, app.url)  # the first session starts the engine and its queue

        def mid_way():
            rows = queue_rows(app.index)
            states = [r["state"] for r in rows.values()]
            if len(rows) == len(everything) and "indexed" in states and any(s in ACTIVE_STATES for s in states):
                return rows
            if len(rows) == len(everything) and not any(s in ACTIVE_STATES for s in states):
                pytest.fail("everything was indexed before the kill")
            return None

        wait_until(mid_way, QUEUE_TIMEOUT, "some files indexed and some still queued or embedded", interval=0.1)
        app.kill()
        at_kill = queue_rows(app.index)
        done_before = sorted(p for p, r in at_kill.items() if r["state"] == "indexed")
        active_at_kill = sorted(p for p, r in at_kill.items() if r["state"] in ACTIVE_STATES)
        assert done_before and active_at_kill, at_kill
        print(f"at the kill: {len(done_before)} indexed, {len(active_at_kill)} queued or running")

        app.start()
        tab.goto("about:blank")
        open_app(tab, app.url)
        rows = wait_until(lambda: settled(app.index, everything), QUEUE_TIMEOUT, "the queue to empty after the restart")
        expect(sidebar_alert(tab, re.compile(rf"{re.escape(big)}: indexed, \d+ chunks"))).to_be_visible()
    finally:
        app.stop()

    bad = {p: (r["state"], r["runs"]) for p, r in rows.items() if (r["state"], r["runs"]) != ("indexed", 1)}
    assert not bad, f"each file indexed exactly once: {bad}"
    records = doc_records(app.index)
    assert sorted(records) == sorted(everything)
    assert all(r["status"] == "indexed" for r in records.values()), {p: r["status"] for p, r in records.items()}
    assert all(records[p]["chunks"] == rows[p]["chunks"] for p in everything)

    # The store and the library agree, read after the server is gone.
    from rag.settings import load_settings
    from rag.indexing.store import ChunkStore

    settings = load_settings(config=tmp_path / "none.toml", env={}, folder=app.folder, index_dir=app.index)
    store = ChunkStore(settings, "all-MiniLM-L6-v2", 384)
    counts = store.chunk_counts()
    by_id = {r["doc_id"]: r for r in records.values()}
    assert set(counts) == set(by_id), "no chunks without an indexed record, no indexed record without chunks"
    wrong = {r["path"]: (r["chunks"], counts.get(d, 0)) for d, r in by_id.items() if r["chunks"] != counts.get(d, 0)}
    assert not wrong, f"records whose chunk count differs from the store (record, store): {wrong}"
    assert store.count() == sum(r["chunks"] for r in records.values())


# The two tests below drop files and, at once, ask (or switch pages). "at_once": right after the drop call,
# as a person might; "uploaded": once the browser has sent the files (each upload's PUT answered), which is
# still before they are saved or indexed; "saved" (page switch only): once the files are in the folder, so
# queued but not yet indexed. Each timing must end with every file saved and indexed once: the first two
# were lost before the app kept Streamlit's upload replies (ui_files.keep_upload_replies) and drew the uploader
# in the sidebar every page shares (see lost_drop_message).
DROP_TIMING = ["at_once", "uploaded"]
SWITCH_TIMING = ["at_once", "uploaded", "saved"]


def drop(page: Page, files: list[dict], wait_upload: bool) -> float:
    """Drop files on the sidebar uploader; returns when (perf_counter) the drop call returned. With
    `wait_upload`, returns once the browser has uploaded every file (its PUT to the server answered)."""
    puts: list[str] = []

    def on_response(r):
        if r.request.method == "PUT" and "/_stcore/upload_file/" in r.url:
            puts.append(r.url)

    page.on("response", on_response)
    try:
        page.locator(UPLOADER).set_input_files(files=files)
        dropped = time.perf_counter()
        deadline = time.monotonic() + UI_TIMEOUT_MS / 1000
        while wait_upload and len(puts) < len(files):
            if time.monotonic() > deadline:
                pytest.fail(f"the browser uploaded {len(puts)} of {len(files)} dropped files")
            page.wait_for_timeout(25)
    finally:
        page.remove_listener("response", on_response)
    return dropped


def lost_drop_message(what: str, timing: str) -> str:
    if timing == "at_once":
        why = ("Streamlit answers the uploader's file-URL request through the session's outgoing queue and "
               "clears that queue when a script run starts; ui_files.keep_upload_replies puts the reply back, and "
               "did not here: the browser never uploaded the file")
    else:
        why = ("every upload reached the server (its PUT answered), but no run saved it: the uploader's "
               "callback (ui_files.add_documents) did not run, on whatever page the next run drew")
    return f"{what} never reached the folder: the drop was lost ({why})"


def switch_page(page: Page, name: str, landmark) -> None:
    """Click a page in the sidebar's navigation and wait for `landmark` on it, clicking once more (as a
    person would) if the first click did not switch.

    Why a second click may be needed: Streamlit's front end (1.67) sends a widget's change with the page it
    last heard the server draw, and the server folds a request that arrives while a run is pending into the
    pending one, keeping the newer request's page. An upload that finishes between the click and the start
    of the new page's run therefore asks for the old page again, and the click is lost. That is Streamlit's
    race, not the app's; what this test is about (no dropped file lost on a page switch) is checked after.
    A page that never switches fails on the second click as well."""
    link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=name)
    link.click()
    try:
        expect(landmark).to_be_visible(timeout=15_000)
    except AssertionError:
        print(f"the switch to {name} was lost; clicking again")
        link.click()
        expect(landmark).to_be_visible()


@pytest.mark.parametrize("timing", SWITCH_TIMING)
def test_queue_thirty_files_dropped_then_a_page_switch(page, server, timing):
    index, folder = server["index"], server["folder"]
    names = [f"station-{timing}-{i:02d}.md" for i in range(1, 31)]
    offset = 100 * SWITCH_TIMING.index(timing)  # each run's facts are its own
    open_app(page, server["url"])
    drop(page, [{"name": n, "mimeType": "text/markdown", "buffer": note(offset + i).encode()}
                for i, n in enumerate(names, 1)], wait_upload=timing != "at_once")
    if timing == "saved":
        wait_until(lambda: all((folder / n).is_file() for n in names), UI_TIMEOUT_MS / 1000, "the 30 files saved")
        rows = queue_rows(index)
        print("indexed when switching:", sum(rows[n]["state"] == "indexed" for n in names if n in rows))
    # Straight to the Library and back, while the uploads are saved and queued.
    # The Library's counts are the landmark, not its heading: the race switch_page describes can also take
    # the page back to the chat after the Library's heading was drawn (seen once in CI), and then the
    # second click is what a person would do.
    switch_page(page, "Library", page.get_by_text(re.compile(r"^\d+ documents \(\d+ indexed")))
    switch_page(page, "Chat", page.get_by_text("Chat with your folder", exact=True))
    expect(page.locator('[data-testid="stChatInput"] textarea')).to_be_visible()

    wait_until(lambda: all((folder / n).is_file() for n in names), UI_TIMEOUT_MS / 1000,
               lost_drop_message(f"{sum((folder / n).is_file() for n in names)} of 30 saved; the rest", timing))
    rows = wait_until(lambda: settled(index, names), QUEUE_TIMEOUT, "the 30 files to leave the queue")
    bad = {p: (r["state"], r["runs"]) for p, r in rows.items() if (r["state"], r["runs"]) != ("indexed", 1)}
    assert not bad, f"each file indexed exactly once: {bad}"
    records = doc_records(index)
    indexed = [p for p in names if records.get(p, {}).get("status") == "indexed"]
    assert indexed == names, sorted(set(names) - set(indexed))
    assert all(records[p]["chunks"] == rows[p]["chunks"] == 1 for p in names)
    # The page, back on the chat, shows them done and nothing left to index.
    expect(sidebar_alert(page, re.compile(rf"station-{timing}-\d\d\.md: indexed, 1 chunk")).first).to_be_visible()
    expect(sidebar(page).get_by_text(re.compile(r"Indexing · \d+ files? to go"))).to_have_count(0)


TIMETABLES = {  # one fact per run, so that each run's answer can only come from its own file
    "at_once": ("night-train-timetable.md", "The night train from Velmora to Drustin leaves at 23:40 from "
                "platform nine and reaches Drustin at dawn.", "When does the night train from Velmora to "
                "Drustin leave?", "23:40"),
    "uploaded": ("morning-ferry-timetable.md", "The morning ferry from Caldera to Ostwick leaves at 06:15 from "
                 "pier four and docks at Ostwick by noon.", "When does the morning ferry from Caldera to "
                 "Ostwick leave?", "06:15"),
}


@pytest.mark.parametrize("timing", DROP_TIMING)
def test_queue_question_right_after_a_drop_then_answered_from_it(page, server, timing):
    index, folder = server["index"], server["folder"]
    name, fact, question, needle = TIMETABLES[timing]
    text = f"# Timetables\n\n## Departures\n\n{fact}\n"
    resent: list[float] = []  # the front end's note for an upload reply it had already used
    page.on("console", lambda m: resent.append(time.monotonic()) if "fileURLsResponse received for nonexistent"
            in m.text else None)
    open_app(page, server["url"])
    dropped = drop(page, [{"name": name, "mimeType": "text/markdown", "buffer": text.encode()}],
                   wait_upload=timing == "uploaded")
    # Asked at once, not waiting for the file to be indexed: answered from what is indexed by then.
    sent = ask_again(page, question)
    if timing == "at_once":
        assert sent - dropped < 1.0, f"the question went in {sent - dropped:.2f} s after the drop"
    print(f"question sent {sent - dropped:.2f} s after the drop ({timing})")

    wait_until(lambda: (folder / name).is_file(), UI_TIMEOUT_MS / 1000, lost_drop_message(name, timing))
    row = wait_until(lambda: settled(index, [name]), QUEUE_TIMEOUT, f"{name} to leave the queue")[name]
    expect(sidebar_alert(page, f"{name}: indexed, 1 chunk")).to_be_visible()
    assert (folder / name).read_text() == text
    assert row["state"] == "indexed" and row["runs"] == 1 and row["chunks"] == 1, row
    rec = doc_records(index)[name]
    assert rec["status"] == "indexed" and rec["chunks"] == 1, rec

    ask_again(page, question)
    answer = page.locator('[data-testid="stChatMessage"]').last
    first = answer.get_by_text(re.compile(r"^\[1\] ")).first
    expect(first).to_be_visible()
    cite = re.match(r"\[1\] (\S+) · .* · cosine distance ([0-9.]+)$", first.inner_text().strip())
    assert cite and cite[1] == name, first.inner_text()
    expect(answer.get_by_text(needle, exact=False).first).to_be_visible()
    # The upload's reply was sent to the browser once, not again after every message: kept in the queue
    # past a flush it came back 14 times a second for as long as the page was open.
    quiet_from = time.monotonic()
    page.wait_for_timeout(3000)
    late = [t for t in resent if t >= quiet_from]
    assert len(late) < 3, f"the upload reply was sent again {len(late)} times in 3 s ({len(resent)} in all)"


def test_an_idle_page_polls_slowly_and_still_shows_a_file_another_program_wrote(page, server):
    """The live panels redraw every second only while files are being indexed: an idle open tab asked the
    server for two reruns a second, for nothing. Idle, they still notice a file the watcher queued."""
    open_app(page, server["url"])
    expect(sidebar(page).get_by_text(re.compile(r"Indexing · \d+ files? to go"))).to_have_count(0, timeout=QUEUE_TIMEOUT * 1000)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    sent: list[float] = []  # the browser's messages to the server: each panel redraw is one
    cdp.on("Network.webSocketFrameSent", lambda e: sent.append(time.monotonic()))
    start = time.monotonic()
    page.wait_for_timeout(10_000)  # Playwright waits (not time.sleep), so that the events are delivered
    idle = [t for t in sent if t >= start]
    assert len(idle) <= 8, f"{len(idle)} rerun requests in 10 s of idling (one a second per panel was 20)"
    name = "written-by-another-program.md"
    (server["folder"] / name).write_text("# Kiln log\n\nThe kiln in the pottery shed is fired every second Tuesday.\n",
                                         encoding="utf-8")
    expect(sidebar_alert(page, f"{name}: indexed, 1 chunk")).to_be_visible(timeout=30_000)


def test_the_first_files_of_an_empty_folder_are_answered_at_the_threshold_they_calibrate(tab, tmp_path):
    """The page chooses its threshold when a run starts; a question asked right after the first drop on an
    empty folder starts with nothing indexed (the default, 0.675), waits for the file, and the file gives
    the folder its calibration. The answer and the slider must show the calibrated value at once, not the
    default until some later rerun."""
    app = new_app(tmp_path).start()
    try:
        open_app(tab, app.url)
        expect(sidebar(tab).get_by_text(re.compile(r"^Default 0\.675: nothing is indexed"))).to_be_visible()
        # 40 paragraphs: indexing takes longer than sending the question, so the question's run starts first.
        drop(tab, [{"name": "station-7.md", "mimeType": "text/markdown", "buffer": note(7, 40).encode()}],
             wait_upload=False)
        ask_again(tab, "What is the registry code of weather station 7?")
        answer = tab.locator('[data-testid="stChatMessage"]').last
        first = answer.inner_text()  # as first drawn
        if "QX-1259" not in first:
            # The question waits 20 s for the file; under `make test`'s second worker, indexing and the first
            # calibration took longer (seen once), so it was answered from nothing, as the app says. The page then
            # searches it again when the file lands, and that answer must be at the calibrated value.
            print("the file took longer than the question's wait: checking the answer searched again")
            expect(answer.get_by_text("QX-1259", exact=False).first).to_be_visible(timeout=QUEUE_TIMEOUT * 1000)
            first = answer.inner_text()
        sources = re.search(r"Sources · threshold ([0-9.]+)", first)
        caption = sidebar(tab).get_by_text(re.compile(r"^Calibrated for English: [0-9.]+"))
        expect(caption).to_be_visible()
        calibrated = re.match(r"Calibrated for English: ([0-9.]+)", caption.inner_text())[1]
        assert sources and sources[1] == calibrated, (answer.inner_text()[:300], calibrated)
        expect(answer.get_by_text("QX-1259", exact=False).first).to_be_visible()
    finally:
        app.stop()

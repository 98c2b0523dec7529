"""Benchmark the indexing queue under load: three browser sessions asking questions while 200 files index.

    .venv/bin/python bench/bench_queue.py                              # 100 files, 5 questions per session
    .venv/bin/python bench/bench_queue.py --files 200 --questions 10   # the full scenario
    .venv/bin/python bench/bench_queue.py --files 400 --port 8599 --after

The defaults are smaller than the scenario (200 files, 10 questions per session) because on the shared
2-core machine, under other people's load (load average 6 to 10), the full scenario took 22 minutes: the
200 files alone took 10 minutes to index. The defaults took 18 minutes under the same load (7 of them
starting the server and opening the sessions).

What runs, all real: `streamlit run streamlit_app.py` on 127.0.0.1 over a temporary copy of the sample
folder (data/), with RAG_FOLDER / RAG_INDEX_DIR / RAG_CONFIG set as tests/test_browser.py does; headless
Debian chromium (/usr/bin/chromium) driven by Playwright; the real model and a real Chroma store.

1. Start-up: one page opens the app, which starts the engine (queue worker and folder watcher); wait
   until the sample folder is indexed (the SQLite queue table `<index>/library.sqlite:queue` has no row
   queued, extracting or embedding).
2. Idle: three browser contexts (three Streamlit sessions) each ask N questions about the sample
   documents, interleaved round-robin. An answer is timed from pressing Enter until its retrieval
   expander ("Retrieval: N candidates") is visible, as test_browser's ask() does.
3. Busy: M new Markdown files (3 paragraphs of varied synthetic text, ~1,500 characters each) are written
   into the folder at once; the app's folder watcher queues them. While they index, the same three
   sessions keep asking the same questions. A background thread polls the queue table; indexing wall
   time runs from the end of the write to the last file's `indexed` row (its own timestamp). An answer
   counts as "during indexing" when its Enter was pressed before that moment.
   Every phase starts with "New chat" in each session: each rerun redraws the whole conversation, so the
   phases compare answers at the same conversation lengths. With --after, a second idle phase follows
   (a control for drift in the machine's load).
4. Bare model, after the server has stopped (other people's load may still compete): the same files, chunked
   exactly as the engine does, embedded with `Embedder.embed_batch` in batches of 256.

The three sessions are concurrent browser sessions against one server (each with its own 1-second queue
fragments running), but Playwright's sync API is driven from one Python thread, so their questions are
interleaved, not simultaneous: at most one question is in flight at a time. Figures print as Markdown;
every raw timing goes to bench/out/bench_queue.json, with the server's own search and answer times read
from each answer's caption and the CPU used per phase by the server, the browser and the rest of the
machine (other people's work on a shared machine shows there). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage",
               # three windows at once: none of them may have its timers throttled as a background page
               "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
               "--disable-backgrounding-occluded-windows"]
ACTIVE = ("queued", "extracting", "embedding")
LOAD_DIR = "bench-load"  # the new files go in this subfolder of the temporary folder

QUESTIONS = [
    "How do I upload a PDF?",
    "What does the threshold do?",
    "Where is the index stored by default?",
    "Why does the app refuse to answer?",
    "What happens when a file fails to index?",
    "How is the threshold calibrated?",
    "What is reciprocal rank fusion?",
    "What file types are supported?",
    "What is the upload size limit?",
    "Why wasn't my document found?",
    "What does the retrieval table show?",
    "What happens to scanned PDFs?",
]

TOPICS = {
    "garden": "soil compost seedling tomato trellis mulch pruning irrigation aphid harvest bed frost rose "
              "orchard pollinator greenhouse",
    "shipping": "harbour vessel cargo container crane berth manifest customs tide pilot tugboat freight "
                "ballast dock voyage",
    "finance": "ledger invoice audit payroll budget forecast accrual dividend liability expense revenue "
               "reconciliation quarter ledger",
    "geology": "glacier fossil sediment basalt canyon erosion strata quartz magma fault moraine delta "
               "limestone aquifer",
    "software": "compiler thread mutex cache latency endpoint schema migration rollback deploy kernel "
                "socket buffer parser",
    "medicine": "dosage symptom diagnosis vaccine clinic nurse triage allergy fracture antibiotic ward "
                "pulse infusion therapy",
}
GLUE = "the a of to and in for with on by after before during because while every each many few".split()


# --- small helpers ------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown")
    try:
        nproc = int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)
    except (OSError, ValueError, subprocess.CalledProcessError):
        nproc = len(os.sched_getaffinity(0))
    return {"nproc": nproc, "cpu": model, "python": platform.python_version(), "platform": platform.platform()}


def pct(xs: list[float], q: float) -> float:
    """Percentile with linear interpolation (numpy's default)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def paragraph(rng: random.Random, words: list[str], n_chars: int) -> str:
    out, size = [], 0
    while size < n_chars:
        sent = [rng.choice(words if rng.random() < 0.6 else GLUE) for _ in range(rng.randint(7, 16))]
        s = " ".join(sent).capitalize() + rng.choice([".", ".", ".", "?", ";"])
        out.append(s)
        size += len(s) + 1
    return " ".join(out)[:n_chars].rsplit(" ", 1)[0] + "."


def write_load(folder: Path, n: int, seed: int = 17) -> list[str]:
    """n Markdown files of ~1,500 characters (a title and 3 paragraphs under headings); their relative paths."""
    rng = random.Random(seed)
    target = folder / LOAD_DIR
    target.mkdir(parents=True, exist_ok=True)
    names = list(TOPICS)
    rels = []
    for i in range(n):
        topic = names[i % len(names)]
        words = TOPICS[topic].split() + TOPICS[names[(i * 7 + 3) % len(names)]].split()[:5]
        parts = [f"# {topic.capitalize()} note {i}\n"]
        for s in range(3):
            parts.append(f"## Part {s + 1}\n\n{paragraph(rng, words, rng.randint(430, 520))}\n")
        rel = f"{LOAD_DIR}/{topic}-{i:04d}.md"
        (folder / rel).write_text("\n".join(parts), encoding="utf-8")
        rels.append(rel)
    return rels


def queue_rows(db: Path) -> list[dict]:
    """The app's queue rows, read-only (the server writes them)."""
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return [json.loads(r[0]) for r in con.execute("SELECT item FROM queue")]
        finally:
            con.close()
    except sqlite3.OperationalError:  # the table is not there yet, or a write holds it for a moment
        return []


def document_chunks(db: Path, paths: set[str]) -> int | None:
    """Chunks the documents table records for these paths (a cross-check of the queue's counts)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            rows = con.execute("SELECT path, record FROM documents").fetchall()
        finally:
            con.close()
        return sum(int(json.loads(rec).get("chunks", 0)) for p, rec in rows if p in paths)
    except (sqlite3.OperationalError, ValueError, AttributeError):
        return None


class QueueMonitor(threading.Thread):
    """Polls the queue table for a set of paths until every one has a finished row."""

    def __init__(self, db: Path, paths: list[str], every: float = 0.25):
        super().__init__(name="queue-monitor", daemon=True)
        self.db, self.paths, self.every = db, set(paths), every
        self.done = threading.Event()
        self.stop = threading.Event()
        self.samples: list[dict] = []  # (time, counts by state) over the run
        self.rows: dict[str, dict] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            rows = {r["path"]: r for r in queue_rows(self.db) if r["path"] in self.paths}
            counts: dict[str, int] = {}
            for r in rows.values():
                counts[r["state"]] = counts.get(r["state"], 0) + 1
            self.samples.append({"t": time.time(), **counts})
            self.rows = rows
            if len(rows) == len(self.paths) and not any(r["state"] in ACTIVE for r in rows.values()):
                self.done.set()
                return
            self.stop.wait(self.every)


class CpuMeter:
    """CPU seconds used by the server, by this benchmark's browser (Playwright's driver and chromium, the
    descendants of this process other than the server) and by the whole machine, between two marks.
    On a shared machine the rest ("others") is load this benchmark does not control."""

    def __init__(self, server_pid: int):
        import psutil

        self.psutil = psutil
        self.server = psutil.Process(server_pid)
        self.me = psutil.Process()
        self._seen: dict[int, float] = {}  # browser processes' last CPU total (they come and go)

    def _cpu(self, p) -> float:
        t = p.cpu_times()
        return t.user + t.system

    def mark(self) -> dict:
        ps = self.psutil
        server_tree = {self.server.pid} | {c.pid for c in self.server.children(recursive=True)}
        for c in self.me.children(recursive=True):
            if c.pid in server_tree:
                continue
            try:
                self._seen[c.pid] = self._cpu(c)
            except ps.Error:
                pass
        browser = sum(self._seen.values())  # exited processes keep their last reading
        server = 0.0
        for pid in server_tree:
            try:
                server += self._cpu(ps.Process(pid))
            except ps.Error:
                pass
        m = ps.cpu_times()
        busy = sum(m) - m.idle - getattr(m, "iowait", 0.0) - getattr(m, "guest", 0.0) - getattr(m, "guest_nice", 0.0)
        return {"t": time.monotonic(), "server": server, "browser": browser, "bench": self._cpu(self.me),
                "machine": busy, "load1": os.getloadavg()[0]}

    @staticmethod
    def between(a: dict, b: dict) -> dict:
        """Cores used on average between two marks, by whom."""
        wall = b["t"] - a["t"]
        out = {k: (b[k] - a[k]) / wall for k in ("server", "browser", "bench", "machine")}
        out["others"] = max(0.0, out["machine"] - out["server"] - out["browser"] - out["bench"])
        out.update(wall_s=wall, load1_end=b["load1"])
        return out


# --- the server and the browser ----------------------------------------------------------------------

class Server:
    """`streamlit run streamlit_app.py` on a loopback port over `folder`; always stopped by `stop()`."""

    def __init__(self, base: Path, folder: Path, port: int, start_timeout: float):
        self.base, self.folder, self.port, self.start_timeout = base, folder, port, start_timeout
        self.index = base / "index"
        self.db = self.index / "library.sqlite"
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = base / "streamlit.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ, RAG_FOLDER=str(self.folder), RAG_INDEX_DIR=str(self.index),
                   RAG_CONFIG=str(self.base / "none.toml"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(self.port), "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer /_stcore/health in {self.start_timeout:.0f} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.5)

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None


def wait_indexed(db: Path, timeout: float, what: str) -> list[dict]:
    """Until the queue has rows and none is waiting or running; the rows."""
    deadline = time.monotonic() + timeout
    while True:
        rows = queue_rows(db)
        if rows and not any(r["state"] in ACTIVE for r in rows):
            return rows
        if time.monotonic() > deadline:
            states = {}
            for r in rows:
                states[r["state"]] = states.get(r["state"], 0) + 1
            raise TimeoutError(f"{what}: not indexed after {timeout:.0f} s (queue rows by state: {states or 'none'})")
        time.sleep(0.5)


def open_app(page, url: str, timeout_s: float) -> None:
    page.goto(url, timeout=timeout_s * 1000)
    page.locator('[data-testid="stChatInput"] textarea').wait_for(state="visible", timeout=timeout_s * 1000)
    page.get_by_text("Chat with your folder", exact=True).wait_for(state="visible", timeout=timeout_s * 1000)


# True once the chat holds at least `n` messages and the last one shows its retrieval expander's label.
ANSWERED_JS = """n => {
  const m = document.querySelectorAll('[data-testid="stChatMessage"]');
  if (m.length < n) return false;
  const last = m[m.length - 1];
  return /Retrieval: \\d+ candidates/.test(last.innerText || '');
}"""


# The answer's own caption: "search 68 ms (embed 66, bm25 1, ...) · extractive answer 191 ms · ...".
CAPTION_JS = """() => {
  const m = document.querySelectorAll('[data-testid="stChatMessage"]');
  const t = m.length ? m[m.length - 1].innerText : '';
  const x = t.match(/search (\\d+) ms \\(embed (\\d+)[^)]*\\)(?: · \\w+ answer (\\d+) ms)?/);
  return x ? [+x[1], +x[2], x[3] === undefined ? null : +x[3]] : null;
}"""


def ask(page, question: str, timeout_s: float) -> float:
    """Seconds from Enter until this question's answer shows its retrieval expander (cf. test_browser's ask).

    Questions repeat within a session, so the answer is found by position (each turn adds a user and an
    assistant message), not by its text; the page is polled every 25 ms in the page itself."""
    box = page.locator('[data-testid="stChatInput"] textarea')
    n0 = page.locator('[data-testid="stChatMessage"]').count()
    box.fill(question)
    t0 = time.perf_counter()
    box.press("Enter")
    page.wait_for_function(ANSWERED_JS, arg=n0 + 2, polling=25, timeout=timeout_s * 1000)
    return time.perf_counter() - t0


class Sessions:
    """Three (or n) browser contexts asking questions in turn, each answer timed."""

    def __init__(self, browser, url: str, n: int, ask_timeout: float, start_timeout: float):
        self.pages = []
        self.asked = [0] * n  # questions asked per session: the next question is the next in the list
        self.history: list[list[str]] = [[] for _ in range(n)]  # questions in each session's current chat
        self.ask_timeout = ask_timeout
        for _ in range(n):
            ctx = browser.new_context(viewport={"width": 1440, "height": 1100})
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            open_app(page, url, start_timeout)
            self.pages.append(page)
        self.errors: list[dict] = []

    def next_question(self, s: int) -> str:
        return QUESTIONS[(self.asked[s] + 4 * s) % len(QUESTIONS)]  # sessions start at different questions

    def ask_one(self, s: int, phase: str) -> dict | None:
        q = self.next_question(s)
        self.asked[s] += 1
        started = time.time()
        turn = len(self.history[s]) + 1
        try:
            secs = ask(self.pages[s], q, self.ask_timeout)
        except Exception as exc:  # noqa: BLE001  one lost answer is reported, not fatal (a few are)
            self.errors.append({"phase": phase, "session": s, "question": q, "started": started,
                                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"})
            if len(self.errors) > 5:
                raise RuntimeError(f"too many unanswered questions: {self.errors}") from exc
            return None
        ended = time.time()
        self.history[s].append(q)
        try:
            server = self.pages[s].evaluate(CAPTION_JS)  # the server's own timings for this answer
        except Exception:  # noqa: BLE001  optional detail
            server = None
        search_ms, embed_ms, answer_ms = server or (None, None, None)
        return {"phase": phase, "session": s, "question": q, "started": started, "ended": ended,
                "ms": secs * 1000, "turn": turn, "search_ms": search_ms,
                "embed_ms": embed_ms, "answer_ms": answer_ms}

    def new_chats(self) -> None:
        """Every session starts a new conversation (the sidebar's "New chat"): each rerun draws the whole
        conversation, so every phase starts from an empty chat and the phases compare like with like."""
        for s, page in enumerate(self.pages):
            page.locator('[data-testid="stSidebar"]').get_by_role("button", name="New chat").click()
            page.wait_for_function("""() => document.querySelectorAll('[data-testid="stChatMessage"]').length === 0""",
                                   polling=100, timeout=self.ask_timeout * 1000)
            self.history[s] = []

    def round_robin(self, phase: str, per_session: int) -> list[dict]:
        out = []
        for _ in range(per_session):
            for s in range(len(self.pages)):
                r = self.ask_one(s, phase)
                if r:
                    out.append(r)
        return out


# --- the bare model -----------------------------------------------------------------------------------

def bare_encode(folder: Path, rels: list[str], batch: int = 256) -> dict:
    """The same files chunked as the engine chunks them, embedded by the bare model (nothing else running)."""
    sys.path.insert(0, str(ROOT))
    t = time.perf_counter()
    import rag
    from rag.indexing.chunk import chunk_document, strategy
    from rag.indexing.indexer import doc_id_for
    from rag.reading.extract import extract

    embedder = rag.load_embedder()
    load_s = time.perf_counter() - t
    how = strategy("E", 512)
    texts = []
    for rel in rels:
        doc = extract(folder / rel, rel)
        texts += [c.text for c in chunk_document(doc, doc_id_for(rel), how)]
    embedder.embed_batch(texts[:32])  # warm-up: the app's model was warm too
    t = time.perf_counter()
    for at in range(0, len(texts), batch):
        embedder.embed_batch(texts[at:at + batch])
    encode_s = time.perf_counter() - t
    import torch

    return {"chunks": len(texts), "encode_s": encode_s, "chunks_per_s": len(texts) / encode_s,
            "model": embedder.name, "load_s": load_s, "torch_threads": torch.get_num_threads(), "batch": batch}


# --- the run ------------------------------------------------------------------------------------------

def summary(rows: list[dict]) -> dict:
    ms = [r["ms"] for r in rows]
    server = [r["search_ms"] + (r["answer_ms"] or 0) for r in rows if r.get("search_ms") is not None]
    return {"n": len(ms), "median_ms": pct(ms, 50), "p95_ms": pct(ms, 95),
            "mean_ms": sum(ms) / len(ms) if ms else float("nan"),
            "server_median_ms": pct(server, 50), "server_p95_ms": pct(server, 95)}


def run(args) -> dict:
    from playwright.sync_api import sync_playwright

    base = Path(tempfile.mkdtemp(prefix="bench-queue-"))
    folder = base / "docs"
    shutil.copytree(ROOT / "data", folder, ignore=shutil.ignore_patterns(".rag-index"))
    port = args.port or free_port()
    server = Server(base, folder, port, args.start_timeout)
    result: dict = {"machine": machine(), "questions": QUESTIONS,
                    "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                    "driving": "one Python thread drives all sessions round-robin (Playwright sync API); the "
                               "sessions are concurrent browser sessions, their questions interleaved, one in flight at a time"}
    monitor = None
    t_run = time.perf_counter()
    try:
        server.start()
        print(f"server up on {server.url} ({time.perf_counter() - t_run:.0f} s)", flush=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            try:
                first = browser.new_context().new_page()
                open_app(first, server.url, args.start_timeout)  # opens the engine: model, watcher, queue
                rows = wait_indexed(server.db, args.start_timeout, "the sample folder")
                first.context.close()
                print(f"sample folder indexed: {sum(r['state'] == 'indexed' for r in rows)} files "
                      f"({time.perf_counter() - t_run:.0f} s)", flush=True)

                sessions = Sessions(browser, server.url, args.sessions, args.ask_timeout, args.start_timeout)
                print(f"{args.sessions} sessions open ({time.perf_counter() - t_run:.0f} s)", flush=True)
                warm = sessions.round_robin("warm-up", 1)  # first render and calibration: not counted
                print(f"warm-up: {[round(r['ms']) for r in warm]} ms ({time.perf_counter() - t_run:.0f} s)", flush=True)

                meter = CpuMeter(server.proc.pid)
                sessions.new_chats()
                print(f"new chats ({time.perf_counter() - t_run:.0f} s)", flush=True)
                m0 = meter.mark()
                idle = sessions.round_robin("idle", args.questions)
                m1 = meter.mark()
                print(f"idle: {len(idle)} answers, median {summary(idle)['median_ms']:.0f} ms "
                      f"({time.perf_counter() - t_run:.0f} s)", flush=True)
                sessions.new_chats()
                m2 = meter.mark()

                # Busy: the files land in the folder at once; the watcher queues them.
                t_write0 = time.time()
                rels = write_load(folder, args.files, args.seed)
                t_write1 = time.time()
                monitor = QueueMonitor(server.db, rels)
                monitor.start()
                busy: list[dict] = []
                deadline = time.monotonic() + args.index_timeout
                s = 0
                while not monitor.done.is_set():
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{args.files} files not indexed after {args.index_timeout:.0f} s; "
                                           f"last states: {monitor.samples[-1] if monitor.samples else 'none'}")
                    r = sessions.ask_one(s, "busy")
                    if r:
                        busy.append(r)
                    s = (s + 1) % args.sessions
                m3 = meter.mark()
                if not monitor.done.wait(args.index_timeout):
                    raise TimeoutError("the queue monitor did not finish")
                final = monitor.rows
                indexed = [r for r in final.values() if r["state"] == "indexed"]
                failed = [r for r in final.values() if r["state"] != "indexed"]
                t_end = max((r["updated_at"] for r in indexed), default=time.time())
                t_first = min((r["enqueued_at"] for r in final.values()), default=t_write1)
                chunks = sum(int(r.get("chunks") or 0) for r in indexed)
                during = [r for r in busy if r["started"] < t_end]
                after_busy = [r for r in busy if r["started"] >= t_end]
                print(f"busy: {len(during)} answers during indexing (+{len(after_busy)} after), "
                      f"{len(indexed)} files / {chunks} chunks indexed in {t_end - t_write1:.1f} s "
                      f"({time.perf_counter() - t_run:.0f} s)", flush=True)

                after, cpu_after = [], None
                if args.after:
                    sessions.new_chats()
                    m4 = meter.mark()
                    after = sessions.round_robin("idle-after", args.questions)
                    cpu_after = CpuMeter.between(m4, meter.mark())
                result.update(
                    cpu_cores={"idle": CpuMeter.between(m0, m1), "busy": CpuMeter.between(m2, m3),
                               "idle_after": cpu_after},
                    warmup=warm, idle=idle, busy=during, busy_after_indexing=after_busy, idle_after=after,
                    errors=sessions.errors,
                    indexing={"files": len(rels), "indexed": len(indexed), "failed": [
                                  {"path": r["path"], "state": r["state"], "reason": r.get("reason", "")} for r in failed],
                              "chunks": chunks, "documents_table_chunks": document_chunks(server.db, set(rels)),
                              "write_s": t_write1 - t_write0, "wall_s": t_end - t_write1,
                              "from_first_queued_s": t_end - t_first, "watcher_delay_s": t_first - t_write1,
                              "chunks_per_s": chunks / (t_end - t_write1), "t_write_done": t_write1, "t_end": t_end,
                              "progress": monitor.samples})
            finally:
                browser.close()
    except BaseException:
        print(f"server log (tail):\n{server.log_tail(2000)}", file=sys.stderr)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        raise
    finally:
        if monitor is not None:
            monitor.stop.set()
        server.stop()
        result["server_log_tail"] = server.log_tail(2000)
    result["browser_phase_s"] = time.perf_counter() - t_run
    print(f"server stopped ({result['browser_phase_s']:.0f} s); bare-model baseline…", flush=True)
    try:
        result["bare"] = bare_encode(folder, rels)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    if args.keep:
        result["temp_dir"] = str(base)
    return result


def report(res: dict) -> None:
    m, ix, bare = res["machine"], res["indexing"], res["bare"]
    idle, busy, after = summary(res["idle"]), summary(res["busy"]), summary(res["idle_after"])
    a = res["args"]
    print(f"\nmachine: {m['nproc']} CPUs ({m['cpu']}), Python {m['python']}; model {bare['model']}, "
          f"{bare['torch_threads']} torch threads")
    print(f"{a['sessions']} browser sessions (contexts) on one `streamlit run` server, driven round-robin from one "
          "Python thread (Playwright sync API): concurrent sessions, questions interleaved, one in flight at a time.")
    print(f"answer = Enter until the answer's 'Retrieval: N candidates' expander is visible; "
          f"{ix['files']} Markdown files (~1,500 chars) written into the watched folder at once.\n")
    ratio = lambda x, y: x / y if y else float("nan")  # noqa: E731
    print("| answer latency | idle | during indexing | during / idle | idle after (control) |")
    print("|---|---:|---:|---:|---:|")
    for k, label in (("median_ms", "median ms"), ("p95_ms", "p95 ms")):
        ctrl = f"{after[k]:.0f}" if after["n"] else "—"
        print(f"| {label} | {idle[k]:.0f} | {busy[k]:.0f} | {ratio(busy[k], idle[k]):.2f} | {ctrl} |")
    for k, label in (("server_median_ms", "of which the server's search + answer, median ms"),
                     ("server_p95_ms", "of which the server's search + answer, p95 ms")):
        ctrl = f"{after[k]:.0f}" if after["n"] else "—"
        print(f"| {label} | {idle[k]:.0f} | {busy[k]:.0f} | {ratio(busy[k], idle[k]):.2f} | {ctrl} |")
    print(f"| answers timed | {idle['n']} | {busy['n']} | | {after['n'] or '—'} |")
    cpu = res["cpu_cores"]
    print(f"\nCPU cores in use (of {m['nproc']}), idle phase → during indexing: server "
          f"{cpu['idle']['server']:.2f} → {cpu['busy']['server']:.2f}, this benchmark's browser "
          f"{cpu['idle']['browser']:.2f} → {cpu['busy']['browser']:.2f}, other processes on the machine "
          f"{cpu['idle']['others']:.2f} → {cpu['busy']['others']:.2f}\n")
    print("| indexing | chunks | seconds | chunks/s |")
    print("|---|---:|---:|---:|")
    print(f"| through the app ({ix['indexed']}/{ix['files']} files; write → last indexed, "
          f"watcher delay {ix['watcher_delay_s']:.1f} s incl.) | {ix['chunks']} | {ix['wall_s']:.1f} | "
          f"{ix['chunks_per_s']:.1f} |")
    print(f"| bare model, embed_batch × {bare['batch']}, server stopped | {bare['chunks']} | {bare['encode_s']:.1f} | "
          f"{bare['chunks_per_s']:.1f} |")
    print(f"| app / bare throughput | | | {ratio(ix['chunks_per_s'], bare['chunks_per_s']):.2f} |")
    notes = []
    if ix["failed"]:
        notes.append(f"{len(ix['failed'])} files not indexed: {ix['failed'][:3]}")
    if ix["documents_table_chunks"] not in (None, ix["chunks"]):
        notes.append(f"documents table says {ix['documents_table_chunks']} chunks")
    if bare["chunks"] != ix["chunks"]:
        notes.append(f"bare chunking gave {bare['chunks']} chunks, the app {ix['chunks']}")
    if res["errors"]:
        notes.append(f"{len(res['errors'])} questions unanswered within {a['ask_timeout']:.0f} s: {res['errors']}")
    if res["busy_after_indexing"]:
        notes.append(f"{len(res['busy_after_indexing'])} busy-phase answer(s) started after the last file was "
                     "indexed: not counted")
    for n in notes:
        print(f"\nnote: {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100,
                    help="new Markdown files written during the busy phase (the scenario: 200)")
    ap.add_argument("--questions", type=int, default=5,
                    help="questions per session in the idle phase (the scenario: 10)")
    ap.add_argument("--sessions", type=int, default=3, help="browser sessions (contexts)")
    ap.add_argument("--port", type=int, default=0, help="server port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--after", action="store_true",
                    help="a second idle phase after indexing (a control for drift in the machine's load)")
    ap.add_argument("--start-timeout", type=float, default=240, help="seconds for the server and the first sync")
    ap.add_argument("--index-timeout", type=float, default=900, help="seconds for the new files to index")
    ap.add_argument("--ask-timeout", type=float, default=300, help="seconds for one answer")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (and the server log)")
    ap.add_argument("--out", type=Path, default=OUT / "bench_queue.json")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing: run scripts/install-browser.sh")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the server
    t = time.perf_counter()
    res = run(args)
    res["run_s"] = time.perf_counter() - t
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2, default=str))
    report(res)
    print(f"\nraw timings: {args.out}; run time {res['run_s']:.0f} s")


if __name__ == "__main__":
    main()

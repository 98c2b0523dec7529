"""The writer lock (`rag.indexing.library.WriterLock`) on its own: re-entrant in a thread, exclusive between threads,
between lock objects in one process and between processes; a timeout gives up and says so.

The engine-level tests (a writer process waiting while a reader in a third process answers) are in
test_hardening.py; these check the lock's edges quickly, without a model or an index.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag.indexing.library import WriterLock

ROOT = Path(__file__).resolve().parent.parent

# A second process tries the lock once (timeout 0) or waits for it, and prints what it got.
TRY = """
import sys
from pathlib import Path
from rag.indexing.library import WriterLock
lock = WriterLock(Path(sys.argv[1]))
got = lock.acquire(timeout=float(sys.argv[2]))
print("got" if got else "busy", flush=True)
if got:
    lock.release()
"""


def other_process(path, timeout: float) -> str:
    out = subprocess.run([sys.executable, "-c", TRY, str(path), str(timeout)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_reentrant_in_one_thread_and_released_by_the_outermost_release(tmp_path):
    lock, other = WriterLock(tmp_path / "w.lock"), WriterLock(tmp_path / "w.lock")
    with lock:
        with lock:
            assert lock.acquire(timeout=0)
            lock.release()
        assert not other.acquire(timeout=0)  # still held: one release per acquire
    assert other.acquire(timeout=0)
    other.release()


@pytest.mark.parametrize("timeout", [0, 0.2])
def test_another_thread_waits_then_gives_up(tmp_path, timeout):
    lock = WriterLock(tmp_path / "w.lock")
    got: list[bool] = []
    with lock:
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=timeout)))
        t.start()
        t.join(30)
    assert got == [False]
    # The failed try left nothing behind: the lock can be taken again, from another thread too.
    t = threading.Thread(target=lambda: (got.append(lock.acquire(timeout=0)), lock.release()))
    t.start()
    t.join(30)
    assert got == [False, True]


def test_a_waiting_thread_gets_the_lock_when_it_is_released(tmp_path):
    lock = WriterLock(tmp_path / "w.lock")
    waiting, got = threading.Event(), []

    def wait_for_it():
        waiting.set()
        got.append(lock.acquire())  # no timeout: waits for ever
        lock.release()

    lock.acquire()
    t = threading.Thread(target=wait_for_it)
    t.start()
    waiting.wait(10)
    assert got == []  # it cannot have the lock while we hold it
    lock.release()
    t.join(30)
    assert got == [True]


def test_exclusive_across_processes(tmp_path):
    path = tmp_path / "idx" / "writer.lock"
    lock = WriterLock(path)  # creates the folder
    assert path.parent.is_dir()
    with lock:
        assert other_process(path, 0.3) == "busy"
    assert other_process(path, 0) == "got"
    # And the other way round: a lock another process holds is not ours to take.
    holder = subprocess.Popen([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                               "from rag.indexing.library import WriterLock\nl = WriterLock(Path(sys.argv[1]))\n"
                               "l.acquire(); print('held', flush=True); sys.stdin.read()", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not lock.acquire(timeout=0)
    finally:
        holder.communicate("", timeout=60)  # closing its stdin ends it, and the OS drops its lock
    assert lock.acquire(timeout=0)
    lock.release()

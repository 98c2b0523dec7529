"""What `ui_files.keep_upload_replies` relies on in Streamlit's private message queue, checked on the real one.

The patch wraps `ForwardMsgQueue.clear` to keep a file upload's reply when a script run starts. It needs:
the queue's messages in a list named `_queue`; `clear(retain_lifecycle_msgs=...)` as the run-start clear
(`AppSession._clear_queue` passes True) and Streamlit's own version of it dropping the reply (else the patch
is not needed); `flush` emptying the queue through a plain `clear()` (the patch must not put replies back
there, or they are sent again after every send). Streamlit is pinned to the version this was written
against; a new version fails here first, before anything is lost in a browser.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue

from app import ui_files
ROOT = Path(__file__).resolve().parents[2]


def streamlit_clear():
    clear = ForwardMsgQueue.clear
    return getattr(clear, "original", clear)  # Streamlit's own, whether or not the app patched it already


def session_with_reply() -> SimpleNamespace:
    """What `AppSession._clear_queue` reads of a session: its browser queue, here holding an upload's reply
    and the end of the last run."""
    q = ForwardMsgQueue()
    reply = ForwardMsg()
    reply.file_urls_response.response_id = "drop-1"
    q.enqueue(reply)
    done = ForwardMsg()
    done.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    q.enqueue(done)
    return SimpleNamespace(_browser_queue=q)


def kinds(messages) -> list[str]:
    return [m.WhichOneof("type") for m in messages]


def test_the_pinned_streamlit_is_the_one_installed():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if re.match(r"streamlit\b", d)]
    assert re.fullmatch(r"streamlit==[\d.]+", pin), f"{pin}: the patch needs an exact pin"
    assert version("streamlit") == pin.split("==")[1]


def test_the_queue_still_has_what_the_patch_wraps():
    params = list(inspect.signature(streamlit_clear()).parameters.values())
    assert [p.name for p in params[:2]] == ["self", "retain_lifecycle_msgs"] and params[1].default is False
    q = ForwardMsgQueue()
    q.enqueue(ForwardMsg())
    assert isinstance(q._queue, list) and len(q._queue) == 1


def test_streamlit_alone_drops_an_upload_reply_when_a_run_starts(monkeypatch):
    monkeypatch.setattr(ForwardMsgQueue, "clear", streamlit_clear())
    session = session_with_reply()
    AppSession._clear_queue(session)  # what a run's start does
    assert kinds(session._browser_queue.flush()) == ["script_finished"]  # the reply is lost: why the patch


def test_with_the_patch_a_run_start_keeps_the_reply_and_a_flush_sends_it_once(monkeypatch):
    monkeypatch.setattr(ForwardMsgQueue, "clear", ForwardMsgQueue.clear)  # undone after the test
    ui_files.keep_upload_replies()
    assert ForwardMsgQueue.clear.keeps_upload_replies
    session = session_with_reply()
    AppSession._clear_queue(session)
    q = session._browser_queue
    assert sorted(kinds(q.flush())) == ["file_urls_response", "script_finished"]
    assert q.is_empty() and q.flush() == []  # never sent again


def test_flush_empties_the_queue_with_a_plain_clear(monkeypatch):
    calls = []
    original = streamlit_clear()

    def recording(self, *args, **kwargs):
        calls.append((args, kwargs))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ForwardMsgQueue, "clear", recording)
    session_with_reply()._browser_queue.flush()
    assert calls == [((), {})]  # not the run-start clear, which the patch changes


@pytest.mark.parametrize("retain", [False, True])
def test_the_patch_changes_nothing_but_the_reply(monkeypatch, retain):
    """Every other message is cleared or kept as Streamlit alone would."""
    ours, theirs = session_with_reply()._browser_queue, session_with_reply()._browser_queue
    monkeypatch.setattr(ForwardMsgQueue, "clear", ForwardMsgQueue.clear)
    ui_files.keep_upload_replies()
    ours.clear(retain_lifecycle_msgs=retain)
    streamlit_clear()(theirs, retain_lifecycle_msgs=retain)
    assert [k for k in kinds(ours._queue) if k != "file_urls_response"] == kinds(theirs._queue)
    assert ("file_urls_response" in kinds(ours._queue)) is retain

"""The chat in LLM answer mode, driven by AppTest against a local OpenAI-compatible server.

`FakeLLM` (from tests/test_llm.py) is the ONLY fake here, as everywhere in the project: no generative
model can be installed on this machine, so a small OpenAI-compatible HTTP server on 127.0.0.1 stands in
for the user's Ollama / llama.cpp / vLLM / LM Studio; it records every request and answers with the
reply the test queued. Everything else is real: the app, the MiniLM model, a Chroma store on disk over a
copy of the sample folder. The app is pointed at the server the way a person would: RAG_ANSWER_MODE and
RAG_LLM_BASE_URL in the environment.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import rag
from rag.deciding.citations import NO_ANSWER_SENTENCE
from rag.indexing.embed import count_tokens
from tests.conftest import threshold_slider
from tests.test_llm import FakeLLM, Reply, closed_port_url

ROOT = Path(__file__).resolve().parent.parent
from app import ui
APP = str(ROOT / "streamlit_app.py")
TIMEOUT = 180  # the first run loads the model and indexes the folder
UPLOAD_Q = "How big can a file I send through the browser be?"


@pytest.fixture(scope="module")
def fake():
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture(scope="module")
def engine(fake, tmp_path_factory) -> rag.Engine:
    base = tmp_path_factory.mktemp("app-llm")
    docs = base / "docs"
    shutil.copytree(ROOT / "data", docs, ignore=shutil.ignore_patterns(".rag-index"))
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {"RAG_FOLDER": docs, "RAG_INDEX_DIR": base / "index", "RAG_CONFIG": base / "none.toml",
                            "RAG_ANSWER_MODE": "llm", "RAG_LLM_BASE_URL": fake.url,
                            "RAG_LLM_MODEL": "test-model", "RAG_LLM_TIMEOUT_S": "10"}.items():
            mp.setenv(name, str(value))
        at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()  # opens the engine once; its queue indexes
        assert not at.exception, at.exception
        settings = rag.load_settings()
        engine = ui.open_workspace(ui.engine_key(settings), settings).engine
        assert engine.queue.wait_idle(300)
        yield engine


@pytest.fixture
def llm(fake, engine):
    fake.requests.clear()
    fake.replies.clear()
    return fake


def ask(question: str, threshold: float | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert at.sidebar.selectbox(key="answer_mode").value == "llm"
    if threshold is not None:
        threshold_slider(at).set_value(threshold).run()
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at


def plain(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def reply(at, i: int = -1):
    """The i-th answer of the chat (its assistant message)."""
    return [m for m in at.chat_message if m.name == "assistant"][i]


def answer_md(at, i: int = -1) -> str:
    """An answer's Markdown: the element just before its "Sources" heading."""
    msg = reply(at, i)
    heads = [k for k, m in enumerate(msg.markdown) if m.value.startswith("**Sources")]
    return msg.markdown[heads[-1] - 1].value


def cards(at) -> list[int]:
    """The numbers of the last answer's citation cards."""
    return [int(m[1]) for m in (re.match(r"\*\*\[(\d+)\]\*\* ", x.value) for x in reply(at).markdown) if m]


def posts(fake) -> list[dict]:
    return fake.posts()


def test_streamed_reply_is_shown_with_links_and_prompt_tokens(llm):
    llm.replies.append(Reply(["A single upload ", "may be at most ", "50 MB [1]."]))
    at = ask(UPLOAD_Q)
    (req,) = posts(llm)
    assert req["body"]["stream"] is True  # asked for, and answered with, server-sent events
    system, user = req["body"]["messages"]
    assert user["content"].rstrip().endswith(f"Question: {UPLOAD_Q}")
    # The pieces as streamed, joined, are the answer on the page; [1] links to the first citation card.
    assert re.sub(r"\(viewer\?[^)]+\)", "", plain(answer_md(at))) == "A single upload may be at most 50 MB [[1]]."
    assert 1 in cards(at) and '<span id="cite-1-1"></span>' in [m.value for m in at.markdown]
    tokens = count_tokens(system["content"]) + count_tokens(user["content"])
    assert f"prompt {tokens} tokens (tiktoken)" in [c.value for c in at.caption]
    assert not reply(at).warning and not reply(at).info  # no flags, no note
    assert any(c.value.startswith("search ") and " llm answer " in c.value for c in at.caption)


def test_out_of_range_number_and_uncited_sentence_are_flagged_beside_the_answer(llm):
    llm.replies.append(Reply(["A single upload may be at most 50 MB [1]. ",
                              "A PDF may have at most 2,000 pages [7]. ", "Bigger files are fine."]))
    at = ask(UPLOAD_Q, threshold=1.5)  # every distance passes: the support test and the cap decide
    k = len(cards(at))
    assert cards(at) == list(range(1, k + 1)) and 2 <= k <= 4
    (flags,) = [plain(w.value) for w in reply(at).warning]
    assert flags.startswith("Citation check:")
    assert f"- [7] is not one of the sources (1\u2013{k}): it has no link" in flags
    assert "- no citation: \u201cBigger files are fine.\u201d" in flags
    md = answer_md(at)
    assert md.count("](") == 1 and "[\\[1\\]](viewer?" in md  # [1] is a link to the viewer, [7] is not
    assert "\\[7\\]" in md and md.count("viewer?") == 1


def test_the_refusal_sentence_shows_as_a_refusal_with_the_sources_read(llm):
    llm.replies.append(Reply(["The documents do ", "not contain ", "the answer."]))
    at = ask(UPLOAD_Q, threshold=1.5)
    msg = reply(at)
    assert any("refused" in m.value and "the LLM found no answer" in m.value for m in msg.markdown)
    assert plain(answer_md(at)) == NO_ANSWER_SENTENCE
    k = len(cards(at))
    assert k >= 2 and cards(at) == list(range(1, k + 1))
    assert [plain(i.value) for i in msg.info] == [f"the LLM read sources 1\u2013{k} and found no answer in them"]
    assert any(m.value.startswith("**Sources the LLM read**") for m in msg.markdown)
    assert not msg.warning


def test_slider_reuses_the_answer_while_the_kept_passages_stay_the_same(llm, engine):
    at = ask(UPLOAD_Q)
    first = answer_md(at)
    assert len(posts(llm)) == 1
    searches = engine.searches
    frame = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    kept = sorted(frame[frame["verdict"].str.startswith("kept")]["distance"])
    assert len(kept) >= 2, "the question needs two kept passages for this test"
    # A threshold just over the farthest kept passage keeps the same passages: the answer is reused.
    same = round(-(-kept[-1] * 200 // 1) / 200, 3)  # the next slider step (0.005) at or above it
    assert kept[-1] <= same < 0.675
    threshold_slider(at).set_value(same).run()
    assert answer_md(at) == first and len(posts(llm)) == 1
    # Under the farthest kept passage: other passages, a new answer.
    fewer = round((kept[-1] - 0.0005) // 0.005 * 0.005, 3)
    assert kept[0] <= fewer < kept[-1]
    threshold_slider(at).set_value(fewer).run()
    assert len(posts(llm)) == 2
    assert len(cards(at)) == min(4, int((frame["distance"] <= fewer).sum()))
    # Back to the start: the first answer again, remembered, not asked for again.
    threshold_slider(at).set_value(0.675).run()
    assert answer_md(at) == first and len(posts(llm)) == 2
    assert engine.searches == searches, "moving the slider must not search again"
    # A new question asks once more; the earlier turn shows its answer without asking again.
    at.chat_input[0].set_value("What does the threshold slider do?").run()
    assert len(posts(llm)) == 3
    assert answer_md(at, 0) == first
    at.run()
    assert len(posts(llm)) == 3


def test_followup_is_rewritten_by_the_llm_and_shown(llm):
    at = ask("What is reciprocal rank fusion?")
    llm.requests.clear()
    llm.replies += [Reply(["What value of k does ", "reciprocal rank fusion use?"]), Reply(["It uses k = 60 [1]."])]
    at.chat_input[0].set_value("What value of k does it use?").run()
    rewrite, answer = posts(llm)
    asked = rewrite["body"]["messages"][1]["content"]
    assert "What is reciprocal rank fusion?" in asked and "What value of k does it use?" in asked
    assert [plain(c.value) for c in at.caption if c.value.startswith("Searched as")] == \
        ["Searched as: What value of k does reciprocal rank fusion use?"]
    assert answer["body"]["messages"][1]["content"].rstrip().endswith(
        "Question: What value of k does reciprocal rank fusion use?")
    # In extractive mode (chosen in the sidebar) no LLM is asked: the follow-up is joined to the question.
    llm.requests.clear()
    at.sidebar.selectbox(key="answer_mode").select("extractive").run()
    at.chat_input[0].set_value("And why does it use it?").run()
    assert not posts(llm)
    assert [plain(c.value) for c in reply(at).caption if c.value.startswith("Searched as")] == \
        ["Searched as: What value of k does reciprocal rank fusion use? And why does it use it?"]


def test_a_server_that_is_down_gives_the_clear_message_and_the_extractive_answer(llm, engine, monkeypatch):
    url = closed_port_url()
    monkeypatch.setenv("RAG_LLM_BASE_URL", url)
    at = ask(UPLOAD_Q)
    (note,) = [plain(w.value) for w in reply(at).warning]
    assert note == f"could not reach the LLM server at {url}: connection refused (is the server running?); " \
                   f"showing the extractive answer"
    # The extractive answer: exactly the sentences listed as chosen, each with its [n] linked to its card.
    block = next(m.value for m in reply(at).markdown if m.value.startswith("**Sentences chosen"))
    rows = re.findall(r"^- similarity \*\*[0-9.]+\*\* \(rank \d\) · source \*\*\[(\d+)\]\*\* · (.*)$", block, re.M)
    md = " ".join(plain(answer_md(at)).split())
    assert rows and re.sub(r"\(viewer\?[^)]+\)", "", md) == " ".join(f"{plain(text)} [[{n}]]" for n, text in rows)
    assert not [c for c in at.caption if "tokens (tiktoken)" in c.value]
    searches = engine.searches
    at.sidebar.selectbox(key="answer_mode").select("extractive").run()  # same passages, no note now
    assert not reply(at).warning and " ".join(plain(answer_md(at)).split()) == md and engine.searches == searches


def test_llm_mode_without_a_server_says_how_to_configure_one(llm, monkeypatch):
    monkeypatch.delenv("RAG_LLM_BASE_URL")
    at = ask(UPLOAD_Q)
    (how,) = [i.value for i in at.sidebar.info]
    assert "`llm_base_url` in rag.toml" in how and "`RAG_LLM_BASE_URL`" in how
    assert [plain(w.value) for w in reply(at).warning] == [
        'answer_mode is "llm" but llm_base_url is not set; showing the extractive answer']
    assert cards(at) and not posts(llm)

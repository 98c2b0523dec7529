"""Follow-up questions (`rag.searching.followup`) on edge inputs: empty questions, punctuation only, Portuguese,
long questions with a pronoun, histories with blanks; and the LLM rewrite's reply cleaning.

The rewrite's tests use `FakeLLM` from tests/test_llm.py, a small OpenAI-compatible server on 127.0.0.1
started by the test (no generative model can be installed on this machine).
"""

from __future__ import annotations

import pytest

from rag.searching.followup import followup_query, is_followup
from rag.answering.prompt import rewrite_followup
from rag.answering.llm import ChatClient, LLMError
from tests.test_llm import FakeLLM, Reply, closed_port_url


@pytest.mark.parametrize("question, followup", [
    ("", False),
    ("   ", False),
    ("?!...", False),
    ("Why?", True),  # three words or fewer
    ("What is SKU-88213?", False),  # ... unless one is a code: it names its subject in full
    ("And SKU-88213?", True),  # a connective still makes it a follow-up
    ("And the PDFs, how large can they be in the worst case?", True),  # opens with a connective
    ("ANDROID phones: how do I install the app there?", False),  # "and" inside a word is no connective
    ("E quanto aos ficheiros PDF?", True),
    ("Então?", True),
    ("How do I configure the reciprocal rank fusion constant for it?", False),  # a pronoun, but its own subject
    ("What happens to the rest?", True),
    ("Where is the index stored by default?", False),
])
def test_is_followup(question, followup):
    assert is_followup(question) is followup


@pytest.mark.parametrize("question, previous, query", [
    ("and for PDFs?", [], None),
    ("and for PDFs?", ["", "   "], None),  # blanks are not questions
    ("and for PDFs?", ["How big can an upload be?", ""], "How big can an upload be? and for PDFs?"),
    ("  Why?  ", ["  What is RRF?  "], "What is RRF? Why?"),
    ("What does ERR-4017 mean?", ["How big can an upload be?"], None),
    ("And why?", ["First?", "What is the default threshold?"], "What is the default threshold? And why?"),
    # A chain keeps its first question and the follow-up before this one, not every turn between.
    ("And the lead?", ["Hi?", "What is Heron?", "What is Heron? And the deadline?"],
     "What is Heron? And the deadline? And the lead?"),
    ("Capital of Peru?", ["What is Heron?", "What is Heron? And the deadline?",
                          "What is Heron? And the deadline? And the budget?"],
     "What is Heron? And the budget? Capital of Peru?"),
])
def test_followup_query(question, previous, query):
    assert followup_query(question, previous) == query


@pytest.fixture(scope="module")
def llm():
    server = FakeLLM()
    yield server
    server.close()


@pytest.mark.parametrize("reply, standalone", [
    (["Where are backup copies stored?"], "Where are backup copies stored?"),
    (["Standalone question: ", "\u201cWhere are backup copies stored?\u201d"], "Where are backup copies stored?"),
    (["\n\n  Where are they?\nBecause the earlier question was about backups."], "Where are they?"),
    (["   \n  "], None),
    (['""'], None),
    (["x" * 2000], None),  # an essay, not a question
])
def test_rewrite_followup_cleans_the_reply(llm, reply, standalone):
    llm.requests.clear()
    llm.replies.append(Reply(reply))
    client = ChatClient(llm.url, "test-model", timeout_s=5)
    earlier = ["", "one?", "two?", "When do backups run?"]
    assert rewrite_followup(client, "And where are they kept?", earlier) == standalone
    (post,) = llm.posts()
    asked = post["body"]["messages"][1]["content"]
    # The last three earlier questions that are questions, and the follow-up itself.
    assert asked == "Earlier questions:\n- one?\n- two?\n- When do backups run?\n\nLast question: And where are they kept?"
    assert post["body"]["temperature"] == 0


def test_rewrite_followup_without_earlier_questions_does_not_fail(llm):
    llm.replies.append(Reply(["Where are backup copies kept?"]))
    client = ChatClient(llm.url, "test-model", timeout_s=5)
    assert rewrite_followup(client, "And where are they kept?", []) == "Where are backup copies kept?"


def test_rewrite_followup_raises_when_the_server_is_down():
    with pytest.raises(LLMError, match="connection refused"):
        rewrite_followup(ChatClient(closed_port_url(), "m", timeout_s=5), "And where?", ["When do backups run?"])

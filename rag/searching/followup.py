"""Follow-up questions: which questions lean on the one before, and what to search for them instead.

A follow-up such as "What value of k does it use?" retrieves nothing useful on its own: its subject is
in the previous question. `is_followup()` is a plain rule (below, in full); `followup_query()` joins the
previous question in front of a follow-up so retrieval keeps its subject; `rag.answering.prompt.rewrite_followup()` asks an
LLM for a standalone question instead, when one is configured.

>>> is_followup("What value of k does it use?"), is_followup("What does ERR-4017 mean?")
(True, False)
>>> followup_query("and for PDFs?", ["How big can an upload be?"])
'How big can an upload be? and for PDFs?'
>>> followup_query("What does ERR-4017 mean?", ["How big can an upload be?"]) is None
True

What it does not do: search, answer, or keep the conversation (the engine passes the previous
questions in).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from rag.text.lexical import fold, is_code
from rag.searching.terms import FUNCTION_WORDS
from rag.text.words import every

# The rule, in full. With a previous question in the conversation, a question is a follow-up when:
#  1. it starts with a connective: "and", "also", "what about", "how about", "but", "or", "then",
#     "e", "e para", "e quanto", "quanto a", "mas", "também", "ou", "então" (the word files' `openers`;
#     an accent may be left out, "tambem", not put in: "É possível...?" is no "e"); or
#  2. it is short: three words or fewer ("Why?", "Any limits?", "In Portuguese?"), unless one of them is a
#     code ("What is SKU-88213?" names its subject in full); or
#  3. it leans on a referring word ("it", "they", "that", "the rest", "isso", "ele", ...: `referring`) and
#     names at most two content words of its own, words that are not `FUNCTION_WORDS` ("How do I fix it?",
#     "What value of k does it use?").
# A follow-up is searched with the previous question joined in front of it; everything else alone.
# (`Engine.search` then searches a follow-up alone after all when it names its own subject, no passage of
# the joined search holds enough of its own words, and one of its own search does: `names_own_subject`.)

# Each opener as its words, as written: matched on the question's first words (`_opens_with`).
_OPENERS = tuple(tuple(o.split()) for o in every("openers"))
_REFERRING = frozenset(fold(w) for w in every("referring"))
_FUNCTION = FUNCTION_WORDS
_DEMONSTRATIVES = frozenset(fold(w) for w in every("demonstratives"))
_WORD = re.compile(r"[^\W_][\w'’-]*", re.UNICODE)


def is_followup(question: str) -> bool:
    """Whether a question leans on the one before it (see the rule above).

    >>> [is_followup(q) for q in ("E para PDFs?", "Why?", "O que faço com isso?", "", "?!", "What is SKU-88213?")]
    [True, True, True, False, False, False]
    >>> is_followup("É possível pagar a renda em duas prestações?"), is_followup("Tambem para os PDFs da pasta?")
    (False, True)
    """
    written = [w.lower() for w in _WORD.findall(unicodedata.normalize("NFC", question))]
    words = [fold(w) for w in written]
    if not words:
        return False
    if any(_opens_with(written, o) for o in _OPENERS):
        return True
    if len(words) <= 3 and not any(is_code(w) for w in words):
        return True
    content = [w for w in words if w not in _FUNCTION and w not in _REFERRING]
    return any(w in _REFERRING for w in words) and len(content) <= 2


def _opens_with(written: list[str], opener: tuple[str, ...]) -> bool:
    """Whether the question's first words (lower case, as written) are the opener's, each as the opener
    writes it or without its accents: "tambem" opens with "também", but "é" (is) does not open with "e" (and).
    """
    return len(written) >= len(opener) and all(w in (o, fold(o)) for w, o in zip(written, opener))


def refers_back(question: str) -> bool:
    """Whether a question holds a referring word ("it", "that", "isso"...): its subject is elsewhere.

    >>> [refers_back(q) for q in ("And how do I fix it?", "Como resolvo isso?", "Capital of Peru?")]
    [True, True, False]
    """
    return any(fold(w) in _REFERRING for w in _WORD.findall(question))




def referred_words(question: str) -> set[str]:
    """The words a follow-up names only to point back at the question before it: the word right after a
    demonstrative ("that amount", "esse valor"), folded. "And under that amount?" after "Who approves
    invoices over 5,000 euros?" asks about 5,000 euros, not about whatever else the passage calls an
    amount ("a late fee on the outstanding amount").

    >>> sorted(referred_words("And under that amount?")), sorted(referred_words("E esse valor, quem o paga?"))
    (['amount'], ['valor'])
    >>> referred_words("Is that so?"), referred_words("And how many birds are in the colony?")
    (set(), set())
    """
    words = [fold(w) for w in _WORD.findall(question)]
    return {b for a, b in zip(words, words[1:]) if a in _DEMONSTRATIVES and b not in _FUNCTION}


def names_own_subject(question: str) -> bool:
    """Whether a question names its subject itself: no referring word, and two content words or more. Such
    a follow-up by its form ("And what does the slider change?") may be searched alone (`Engine.search`);
    one that leans on a referring word ("How do I fix it?") or says too little ("Any limits?") may not,
    since alone it would be answered from whatever else the folder says about fixing or limits.

    >>> [names_own_subject(q) for q in ("And what does the slider change?", "How do I fix it?", "Any limits?")]
    [True, False, False]
    """
    words = [fold(w) for w in _WORD.findall(question)]
    content = [w for w in words if w not in _FUNCTION and w not in _REFERRING]
    return not refers_back(question) and len(content) >= 2


def followup_query(question: str, previous: Sequence[str]) -> str | None:
    """What to search for a follow-up: the previous question joined in front of it; None when the
    question stands alone or there is nothing before it. Pass the previous turns' searched queries
    (`SearchResult.query`), so a chain of follow-ups keeps the first subject: the question that began the
    chain, the follow-up before this one, and this one (not every turn between, which a chain would pile
    up: "What is Project Heron? And the deadline? And the budget? Capital of Peru?").

    >>> followup_query("And the lead?", ["What is Project Heron?", "What is Project Heron? And the deadline?",
    ...                                  "What is Project Heron? And the deadline? And the budget?"])
    'What is Project Heron? And the budget? And the lead?'
    """
    prev = [p.strip() for p in previous if p and p.strip()]
    if not prev or not is_followup(question):
        return None
    # The chain's start: each joined query is the one before it, a space, and its own follow-up.
    start = len(prev) - 1
    while start > 0 and prev[start].startswith(prev[start - 1] + " "):
        start -= 1
    if start == len(prev) - 1:
        return f"{prev[-1]} {question.strip()}"
    return f"{prev[start]} {prev[-1][len(prev[-2]) + 1:]} {question.strip()}"







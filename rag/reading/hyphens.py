"""Hyphens at the end of a line: which join a broken word ("exam-\\nple": "example") and which belong to the word
("state-of-the-\\nart", "R-\\nCNN"). The PDF reader and the OCR reader both meet lines a page broke.

What it does not do: know a language's words (a lower-case compound broken at its own hyphen and printed nowhere
else is joined), or hyphenate anything.
"""

from __future__ import annotations

import re

LINE_END_HYPHEN = re.compile(r"(\w)-\n(\w)")


def line_end_hyphen(text: str, m: re.Match, compounds: frozenset[str] = frozenset()) -> str:
    r"""What a hyphen at the end of a line (matched by LINE_END_HYPHEN in `text`) becomes: the two letters
    joined ("exam-\nple": "example"), or joined with the hyphen kept when it is part of the word: the word
    before it already holds one ("state-of-the-\nart"), a capital or a digit stands beside it ("R-\nCNN",
    "COVID-\n19", "Anglo-\nSaxon"), or the document prints the word with its hyphen inside a line
    (`compounds`: "test-\ntime" where "test-time" is printed whole elsewhere). A lower-case compound broken at
    its own hyphen and printed nowhere else cannot be told from a broken word without a dictionary, and is
    joined.

    >>> t = "exam-\nple, state-of-the-\nart and Fast R-\nCNN, no test-\ntime"
    >>> LINE_END_HYPHEN.sub(lambda m: line_end_hyphen(t, m, frozenset({"test-time"})), t)
    'example, state-of-the-art and Fast R-CNN, no test-time'
    """
    left = re.search(r"[\w-]*$", text[:m.start() + 1]).group()
    beside = m.group(1) + m.group(2)
    right = re.compile(r"\w*").match(text, m.end() - 1).group()
    keep = "-" in left or any(c.isupper() or c.isdigit() for c in beside) or f"{left}-{right}".lower() in compounds
    return m.group(1) + ("-" if keep else "") + m.group(2)


_COMPOUND = re.compile(r"\w+(?:-\w+)+")


def compounds(lines) -> frozenset[str]:
    """The hyphenated words ("two-stage") printed inside the given lines, lower-cased: a line-end hyphen
    that splits one of them keeps it (`line_end_hyphen`). A word broken at a line's end ("test-") is none.

    >>> sorted(compounds(["a two-stage and test-", "time detector, R-CNN"]))
    ['r-cnn', 'two-stage']
    """
    return frozenset(w.lower() for ln in lines if "-" in ln for w in _COMPOUND.findall(ln))

"""Document text as inert Markdown, and one-line previews: pure functions with no Streamlit import.

Anything that comes from a document or a generator (answers, quotes, names, sections, flags) goes through
`md_escape` before it reaches Markdown, so it shows as typed and fetches nothing. `one_line` flattens a
passage for a table cell.

Not here: deciding what is drawn (`chat_view`) or drawing it (the pages, `ui`).
"""

from __future__ import annotations

import string

_PUNCT = set(string.punctuation)


def md_escape(text: str) -> str:
    """Markdown that renders as exactly `text`: every ASCII punctuation character is backslash-escaped.

    CommonMark lets any ASCII punctuation be escaped, so no `<tag>`, `![image](url)`, `[link](url)`,
    `$math$`, `:color[directive]` or emphasis survives: the text shows as typed and fetches nothing.

    >>> print(md_escape("![x](y) <b>"))
    \\!\\[x\\]\\(y\\) \\<b\\>
    """
    return "".join("\\" + ch if ch in _PUNCT else ch for ch in text)


def one_line(text: str, limit: int = 90) -> str:
    """`text` on one line, whitespace folded, cut with an ellipsis past `limit` characters.

    >>> one_line("Uploading\\n\\n  a PDF", 40), one_line("abcdefghij", 6)
    ('Uploading a PDF', 'abcde…')
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"

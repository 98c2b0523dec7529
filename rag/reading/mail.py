"""E-mail: a message (.eml) or a mailbox of messages (.mbox) becomes canonical text, one place per message, so a
citation names the message it quotes ('message "Rent for May" from Ana Lima, 2024-05-03').

Each message is a heading (its subject) and, inside its place, a block of its header lines (From, To, Cc, Date,
Subject and the names of its attachments), then its body: the text/plain part, or, for a message with only HTML,
the HTML through the web-page reader (`rag.reading.webpage.add_html`), which drops scripts. Then each attachment
the app reads, under a heading "Attachment: <file name>", its own sections as deeper headings, read by the
reader of its type (the dispatcher's `read_attachment`). A forwarded message attached whole (message/rfc822)
is text of blocks marked "Forwarded message:".

What a person quoted is marked, not mixed with what they wrote (`_split_quoted`): lines starting with ">", the
"On … wrote:" line before them, and a top-posted original under a separator ("-----Original Message-----", an
Outlook "From: … Sent: …" block, "Begin forwarded message:") become blocks starting "Quoted:", so a passage of
the person's own words is never the quote; in HTML, <blockquote> and Gmail's, Thunderbird's and Outlook's quote
containers are (after the body's other text). The attribution lines are matched with mail-parser-reply's
patterns, in every language it knows. A quote is kept even when it repeats a message of the same mailbox (it is
marked, never dropped): nothing a person may need is lost, and the original message is its own place anyway.

What it does not do: fetch anything (remote images, links), run anything (scripts, attachments), or read an
attachment of a type the app does not read (it is named in the header block, nothing more) or a forwarded
message's attachments. An unknown or wrong charset is decoded with replacement characters. A mailbox is split on
its "From " lines as `mailbox.mbox` splits it, in memory (`_split_mbox`: no temporary file).

>>> raw = (b"From: Ana Lima <ana@example.org>\\nTo: bob@example.org\\nSubject: Rent for May\\n"
...        b"Date: Fri, 03 May 2024 10:00:00 +0100\\n\\nIt is 850 euros.\\n\\nOn Thu, Bob wrote:\\n> How much?\\n")
>>> doc = read(raw, "rent.eml", "eml", Limits())
>>> [block.split("\\n")[0] for block in doc.text.split("\\n\\n")]  # each block's first line
['Rent for May', 'From: Ana Lima <ana@example.org>', 'It is 850 euros.', 'Quoted: On Thu, Bob wrote:']
>>> doc.title, doc.places[0].label, doc.text[doc.places[0].start:].startswith("From: Ana")
('Rent for May', 'message "Rent for May" from Ana Lima, 2024-05-03', True)
"""

from __future__ import annotations

import bisect
import functools
import re
from email import policy
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesParser
from email.utils import parseaddr, parsedate_to_datetime
from pathlib import PurePosixPath, PureWindowsPath
from typing import Callable

from rag.reading.canonical import Canonical
from rag.reading.document import ExtractionError, Extracted, Limits

VERSIONS = {"eml": "eml-2", "mbox": "mbox-2"}  # 2: headings keep their words' underscores (document.clean_heading)

ReadAttachment = Callable[[bytes, str], "Extracted | None"]

_HEADERS = ("From", "To", "Cc", "Date", "Subject")
# Any of these at the top of a file says it is a message; a text file of "Key: value" lines is not one.
_MAIL_HEADERS = {"from", "to", "cc", "subject", "date", "message-id", "received", "return-path", "delivered-to",
                 "mime-version", "sender", "reply-to", "in-reply-to"}
_HEADER_MAX = 500  # characters of one header line: a To of 300 addresses is noise in a passage
_QUOTE_BLOCK = 1200  # a long quote is cut into blocks of about this size at its paragraphs, each one marked
_MAX_DEPTH = 30  # multiparts nested deeper than this are not read (a hostile message could nest thousands)
_FROM_LINE = re.compile(rb"^From ", re.MULTILINE)
# A body's "From " line is written ">From " in a mailbox (and ">From " as ">>From "): read back as it was written,
# as mboxrd reads it, so it is not taken for a quote.
_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)
_SURROGATES = re.compile("[\udc80-\udcff]")
_QUOTE_MARKS = re.compile(r"^(?:> ?)+")
# A mail client's header block above a quoted message starts with its From line; two lines such as "To: …" and
# "Date: …" in a person's own text are no quote (mail-parser-reply takes any two).
_NOT_A_HEADER_START = re.compile(r"[ \t*]*(?:To|Date|Subject|Cc|Sent)[ \t*]*:", re.IGNORECASE)
# Separators mail clients put above a forwarded message, which mail-parser-reply does not know.
_FORWARD_SEPARATOR = r"(^-{2,} ?(?:Forwarded message|Mensagem encaminhada|Message transféré) ?-{2,}$|" \
                     r"^Begin forwarded message:$)"


def read(data: bytes, name: str, kind: str, limits: Limits,
         read_attachment: ReadAttachment | None = None) -> Extracted:
    """The message (kind "eml") or mailbox ("mbox") in `data`; `read_attachment(data, filename)` reads an
    attachment (None: a type the app does not read; ExtractionError: a broken one)."""
    if kind == "mbox":
        raws = _split_mbox(data)
        if not raws:
            raise ExtractionError("the mailbox holds no messages")
        if len(raws) > limits.max_pages:
            raise ExtractionError(f"the mailbox has {len(raws):,} messages; the limit is {limits.max_pages:,} "
                                  f"(max_pages)")
    else:
        raws = [data]
    canon = Canonical(name, max_chars=limits.max_chars)
    warnings: list[str] = []
    title = ""
    for raw in raws:
        msg = _parse(raw)
        if msg is None:
            if len(raws) == 1:
                raise ExtractionError("not an e-mail: the file does not start with mail headers (From, To, "
                                      "Subject, Date)")
            warnings.append("a part of the mailbox that is not an e-mail message was skipped")
            continue
        subject = _add_message(canon, msg, limits, read_attachment, warnings)
        title = title or subject
    if not canon.chars:
        raise ExtractionError("not a mailbox: none of its messages starts with mail headers (From, To, Subject)")
    if kind == "mbox":
        title = f"{_stem(name)} ({len(raws)} message{'s' if len(raws) != 1 else ''})"
    return canon.build(kind=kind, title=title or _stem(name), version=VERSIONS[kind], warnings=warnings)


# --- the file ---------------------------------------------------------------------------------------------------

def _split_mbox(data: bytes) -> list[bytes]:
    """The messages of an mbox, as `mailbox.mbox` finds them: each line that starts with "From " begins one (that
    line is the envelope, not the message), and it ends at the line break before the next; text before the first
    is not a message. A body's ">From " line is unescaped. A file with no "From " line is one message (an .eml
    named .mbox).

    >>> _split_mbox(b"From a@b Mon\\nSubject: x\\n\\nHi\\n>From here\\n\\nFrom c@d Tue\\nSubject: y\\n\\nHo\\n")
    [b'Subject: x\\n\\nHi\\nFrom here\\n', b'Subject: y\\n\\nHo\\n']
    """
    starts = [m.start() for m in _FROM_LINE.finditer(data)]
    if not starts:
        return [data] if data.strip() else []
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(data)
        chunk = data[start:end]
        body = chunk[chunk.find(b"\n") + 1:] if b"\n" in chunk else b""
        if body.endswith(b"\r\n\r\n"):  # the blank line before the next "From " belongs to the file, not the message
            body = body[:-2]
        elif body.endswith(b"\n\n"):
            body = body[:-1]
        out.append(_ESCAPED_FROM.sub(rb"\1", body))
    return out


def _parse(raw: bytes) -> Message | None:
    """The message, or None when `raw` does not start with mail headers.

    Parsed with the compat32 policy, its headers decoded by `_decode_header` when read: policy.default parses
    a header again with its header registry each time it is read, and that made reading a mailbox eight times
    slower for the same text (its address parser, content manager and `get_body` are not needed here)."""
    try:
        msg = BytesParser(policy=policy.compat32).parsebytes(raw)
    except Exception:  # the parser records defects rather than raising; anything else is not a message we read
        return None
    keys = {k.lower() for k in msg.keys()}
    return msg if keys & _MAIL_HEADERS else None


def _stem(name: str) -> str:
    return PurePosixPath(name).stem or name


# --- one message --------------------------------------------------------------------------------------------------

def _add_message(canon: Canonical, msg: Message, limits: Limits, read_attachment: ReadAttachment | None,
                 warnings: list[str]) -> str:
    """Appends the message; returns its subject."""
    heads = {h: _header(msg, h) for h in _HEADERS}
    subject = heads["Subject"]
    texts, htmls, attachments, forwards = _collect(msg)
    canon.heading(subject or "(no subject)", 1)
    with canon.place(_label(heads)):
        # In the text, in no passage: a passage opening "Date: … Subject: …" was quoted as the message's answer.
        canon.aside(_header_block(heads, attachments))
        if texts:
            for text in texts:
                _add_plain(canon, text)
        else:
            for html in htmls:
                _add_html_body(canon, html, limits)
        for inner in forwards:
            _add_marked(canon, "Forwarded message:", _forward_text(inner, limits))
        for filename, payload in attachments:
            _add_attachment(canon, filename, payload, subject, read_attachment, warnings)
    return subject


def _header_block(heads: dict[str, str], attachments: list[tuple[str, bytes]]) -> str:
    lines = [f"{h}: {v[:_HEADER_MAX]}" for h in _HEADERS if (v := heads[h])]
    if attachments:
        lines.append("Attachments: " + ", ".join(dict.fromkeys(f for f, _ in attachments)))
    return "\n".join(lines)


def _label(heads: dict[str, str]) -> str:
    """'message "Subject" from Name, 2024-05-03', each part only when the message has it."""
    subject = heads["Subject"]
    label = f'message "{subject[:60].rstrip() + ("…" if len(subject) > 60 else "")}"' if subject else "message"
    name, addr = parseaddr(heads["From"])
    if sender := " ".join((name or addr).split()):
        label += f" from {sender[:60]}"
    if day := _iso_date(heads["Date"]):
        label += f", {day}"
    return label


def _iso_date(value: str) -> str:
    """The date of a Date header as the sender wrote it (their own time zone), ISO; "" when it is not a date."""
    try:
        return parsedate_to_datetime(value).date().isoformat() if value else ""
    except (TypeError, ValueError, IndexError, OverflowError):
        return ""


def _header(msg: Message, name: str) -> str:
    """A header's decoded, unfolded value (the first of its name); "" when absent."""
    name = name.lower()
    return next((_decode_header(v) for k, v in msg.raw_items() if k.lower() == name), "")


def _decode_header(value) -> str:
    r"""A header's text: its raw 8-bit bytes read as UTF-8 (else Windows-1252), its RFC 2047 encoded words
    decoded (an unknown charset's with replacement characters), folded lines unfolded; never failing.

    >>> _decode_header("=?utf-8?q?Caf=C3=A9?= at\n =?iso-8859-1?q?s=E9ance?="), _decode_header("Ren\udcc3\udca9")
    ('Café at séance', 'René')
    """
    value = str(value)
    if _SURROGATES.search(value):  # bytes the parser could not read as ASCII, kept as surrogates
        raw = value.encode("utf-8", "surrogateescape")
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            value = raw.decode("cp1252", errors="replace")
    if "=?" in value:
        try:
            value = str(make_header(decode_header(value)))
        except (LookupError, UnicodeError):  # an encoded word in an unknown charset, or not in its own
            value = " ".join(_decode(c, cs) if isinstance(c, bytes) else c for c, cs in decode_header(value))
        except (HeaderParseError, ValueError, IndexError):  # not an encoded word after all: as it stands
            pass
    return " ".join(value.split())


def _collect(msg: Message):
    """The message's parts in order: (plain texts, HTML texts, attachments as (filename, bytes), forwarded
    messages). Of a multipart/alternative only one version is read, the plain text one when there is one."""
    texts, htmls, forwards, attachments = [], [], [], []  # str, str, Message, (filename, bytes)

    def walk(part: Message, level: int) -> None:
        ctype = part.get_content_type()
        if ctype == "message/rfc822" or (ctype.startswith("message/") and part.is_multipart()):
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(inner, Message):
                forwards.append(inner)
            return
        if part.is_multipart():
            if level >= _MAX_DEPTH:
                return
            kids = [k for k in (part.get_payload() or []) if isinstance(k, Message)]
            if ctype == "multipart/alternative" and kids:
                kids = [_best_alternative(kids)]
            for kid in kids:
                walk(kid, level + 1)
            return
        filename = _filename(part)
        if filename:
            attachments.append((filename, part.get_payload(decode=True) or b""))
        elif ctype in ("text/plain", "text/html") and part.get_content_disposition() != "attachment":
            (texts if ctype == "text/plain" else htmls).append(_text(part))

    walk(msg, 0)
    return texts, htmls, attachments, forwards


def _best_alternative(kids: list[Message]) -> Message:
    """The plain text version, else the HTML one (itself, or a multipart/related holding it), else the last."""
    def holds(kid: Message, want: str) -> bool:
        inner = kid.get_payload() if kid.is_multipart() else []
        return kid.get_content_type() == want or any(isinstance(p, Message) and p.get_content_type() == want
                                                      for p in inner)
    return next((k for want in ("text/plain", "text/html") for k in kids if holds(k, want)), kids[-1])


def _filename(part: Message) -> str:
    """The attachment's file name without any folder a sender put in it; "" for a part without one."""
    try:
        name = _decode_header(part.get_filename() or "")
    except Exception:  # a Content-Disposition the parser cannot take apart: no file name
        return ""
    return " ".join(PureWindowsPath(name).name.split())  # "C:\\x\\a.docx" and "../a.docx" both name a.docx


def _text(part: Message) -> str:
    return _decode(part.get_payload(decode=True) or b"", part.get_content_charset()).replace("\r\n", "\n")


def _decode(payload: bytes, charset: str | None) -> str:
    """Bytes in their declared charset, else UTF-8, else Windows-1252; never failing: a byte that does not
    decode becomes a replacement character."""
    for candidate in ([charset] if charset else []) + ["utf-8"]:
        try:
            return payload.decode(candidate)
        except (LookupError, UnicodeError, ValueError):
            continue
    try:
        return payload.decode(charset or "cp1252", errors="replace")
    except (LookupError, UnicodeError, ValueError):  # an unknown charset, or a codec with no "replace"
        return payload.decode("utf-8", errors="replace")


# --- the body ---------------------------------------------------------------------------------------------------

def _add_plain(canon: Canonical, text: str) -> None:
    for quoted, segment in _split_quoted(text):
        if quoted:
            _add_marked(canon, "Quoted:", segment)
        else:
            for para in re.split(r"\n\s*\n", segment):
                canon.paragraph(para)


def _add_marked(canon: Canonical, mark: str, text: str) -> None:
    """`text` as blocks of about _QUOTE_BLOCK characters, cut at its paragraphs, each starting with `mark`, so
    every passage holding a piece of it says what it is."""
    block = ""
    for para in re.split(r"\n\s*\n", text):
        para = "\n".join(line for line in para.split("\n") if line.strip())
        if not para:
            continue
        if block and len(block) + len(para) > _QUOTE_BLOCK:
            canon.paragraph(f"{mark} {block}")
            block = ""
        block = f"{block}\n{para}" if block else para
    if block:
        canon.paragraph(f"{mark} {block}")


@functools.lru_cache(maxsize=1)
def _quote_header() -> re.Pattern:
    """mail-parser-reply's patterns for the line above a quote ("On … wrote:", "Am … schrieb:", an Outlook
    "From: … Sent: …" block, "-----Original Message-----"), in every language it knows, and ours."""
    from mailparser_reply.constants import MAIL_LANGUAGES
    from mailparser_reply.parser import EmailMessage as ReplyMessage

    pattern = ReplyMessage(text="", languages=list(MAIL_LANGUAGES)).HEADER_REGEX.pattern
    return re.compile(f"{pattern}|{_FORWARD_SEPARATOR}", re.MULTILINE | re.IGNORECASE)


def _split_quoted(text: str) -> list[tuple[bool, str]]:
    r"""The body as (quoted, text) segments in order. Quoted: lines starting with ">" (their marks removed); the
    attribution line(s) just above them ("On … wrote:"); and everything from a separator line that is not
    followed by ">" lines (a top-posted reply's original, a forwarded message) to the end. An answer written
    between quoted lines stays the person's own.

    >>> _split_quoted("Yes.\n\nOn Fri, Bob wrote:\n> Can we meet?\n> Monday?\nI can.\n")
    [(False, 'Yes.\n'), (True, 'On Fri, Bob wrote:\nCan we meet?\nMonday?'), (False, 'I can.\n')]
    >>> _split_quoted("Sure.\n\n-----Original Message-----\nFrom: Bob\nSent: Friday\n\nIs it yes?")
    [(False, 'Sure.\n'), (True, '-----Original Message-----\nFrom: Bob\nSent: Friday\n\nIs it yes?')]
    """
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    quoted = [bool(_QUOTE_MARKS.match(line.lstrip())) for line in lines]
    rx, i = _quote_header(), 0
    while i < len(lines):
        # The pattern is tried at line starts alone, and only where this line or the next has a colon or a
        # dash rule (every header has one): tried at every character it costs 1.5 µs a character.
        if quoted[i] or not any(c in "\n".join(lines[i:i + 2]) for c in (":", "\uff1a", "-----")):
            i += 1
            continue
        m = rx.match(text, starts[i])
        if m is None or m.end() <= starts[i] or _NOT_A_HEADER_START.match(text, starts[i]):
            i += 1  # no header; or "To: … Date: …" lines of the person's own text
            continue
        last = bisect.bisect_right(starts, m.end() - 1) - 1
        after = next((j for j in range(last + 1, len(lines)) if lines[j].strip()), None)
        if after is None or not quoted[after]:  # the original below a top-posted reply: the rest of the message
            quoted[i:] = [True] * (len(lines) - i)
            break
        quoted[i:last + 1] = [True] * (last + 1 - i)  # the attribution of the quote below it
        i = last + 1
    # A blank line between two quoted lines is the quote's own.
    for i in range(1, len(lines) - 1):
        if not lines[i].strip() and quoted[i - 1] and any(quoted[j] for j in range(i + 1, min(i + 3, len(lines)))
                                                          if lines[j].strip()):
            quoted[i] = True
    segments: list[tuple[bool, list[str]]] = []
    for line, q in zip(lines, quoted):
        line = _QUOTE_MARKS.sub("", line.lstrip()) if q else line
        if segments and segments[-1][0] == q:
            segments[-1][1].append(line)
        else:
            segments.append((q, [line]))
    texts = [(q, "\n".join(seg)) for q, seg in segments]
    return [(q, s.strip("\n") if q else s) for q, s in texts if s.strip()]


def _add_html_body(canon: Canonical, html: str, limits: Limits) -> None:
    from rag.reading.webpage import add_html  # imported when an HTML-only message comes: it is slow to import

    main, quotes = _split_html_quotes(html)
    add_html(canon, main, main_only=False, level=2)
    for quote in quotes:
        _add_marked(canon, "Quoted:", _html_text(quote, limits))


# Where mail clients put the quoted message in HTML: <blockquote>, Gmail's and Thunderbird's containers with the
# "On … wrote:" line above it; Outlook's reply header, after which the rest of its parent is the original.
_HTML_QUOTES = "//blockquote | //*[contains(concat(' ', normalize-space(@class), ' '), ' gmail_quote ')]" \
               " | //*[contains(concat(' ', normalize-space(@class), ' '), ' moz-cite-prefix ')]"
_HTML_OUTLOOK = "//*[@id='divRplyFwdMsg' or @id='appendonsend']"


def _split_html_quotes(html: str) -> tuple[str, list[str]]:
    """(the HTML without its quotes, the quotes' HTML in order); the HTML as given when it holds no quote."""
    low = html.lower()
    if not any(k in low for k in ("blockquote", "gmail_quote", "moz-cite", "divrplyfwdmsg", "appendonsend")):
        return html, []
    try:
        import lxml.html

        root = lxml.html.document_fromstring(html)
        picked = []
        for el in root.xpath(_HTML_QUOTES):
            if not any(a in picked for a in el.iterancestors()):
                picked.append(el)
        for el in root.xpath(_HTML_OUTLOOK)[:1]:
            if not any(a in picked for a in el.iterancestors()):
                picked += [el] + [s for s in el.itersiblings() if s not in picked]
        quotes = [lxml.html.tostring(el, encoding="unicode", with_tail=False) for el in picked]
        for el in picked:
            el.drop_tree()  # the text after it (its tail) stays where it was: it is not the quote's
        return lxml.html.tostring(root, encoding="unicode"), quotes
    except Exception:  # HTML lxml cannot take apart: read it whole, quotes unmarked, rather than not at all
        return html, []


def _html_text(html: str, limits: Limits) -> str:
    """The text of a piece of HTML, as the web-page reader reads it (scripts dropped), its blocks apart."""
    from rag.reading.webpage import add_html

    scratch = Canonical("quote.html", max_chars=limits.max_chars)
    try:
        add_html(scratch, html, main_only=False, level=2)
        return scratch.build(kind="html", title="", version="").text
    except ExtractionError:
        return ""


def _forward_text(inner: Message, limits: Limits) -> str:
    """A forwarded message's header lines and body text (its quotes and all: the whole of it is marked)."""
    texts, htmls, attachments, _ = _collect(inner)  # a forward inside a forward: not read
    head = _header_block({h: _header(inner, h) for h in _HEADERS}, attachments)
    body = "\n\n".join(texts) if texts else "\n\n".join(_html_text(h, limits) for h in htmls)
    return head + "\n\n" + body


# --- attachments -------------------------------------------------------------------------------------------------

def _add_attachment(canon: Canonical, filename: str, payload: bytes, subject: str,
                    read_attachment: ReadAttachment | None, warnings: list[str]) -> None:
    if read_attachment is None:
        return
    where = f'attachment {filename} of message "{subject or "(no subject)"}"'
    try:
        doc = read_attachment(payload, filename)
    except ExtractionError as exc:
        warnings.append(f"{where}: {exc.reason}")
        return
    except Exception as exc:  # a reader's bug must not cost the mailbox its other messages
        warnings.append(f"{where}: could not be read ({type(exc).__name__})")
        return
    if doc is None or not doc.text.strip():
        return
    if canon.chars + len(doc.text) + 100 > canon.max_chars:
        warnings.append(f"{where}: not read, the text would pass the limit of {canon.max_chars:,} characters "
                        f"(max_chars)")
        return
    canon.heading(f"Attachment: {filename}", 2)
    _add_document(canon, doc, filename)


def _add_document(canon: Canonical, doc: Extracted, filename: str) -> None:
    """The attachment's sections under its heading: their headings one level deeper (3 and on), their text
    cut into blocks at blank lines. Text outside every section (its title line) is not repeated."""
    sections = sorted(doc.sections, key=lambda s: s.start)
    if not sections:
        for para in re.split(r"\n\s*\n", doc.text):
            canon.paragraph(para)
        return
    shown: tuple[str, ...] = ()
    for s in sections:
        path = tuple(s.path)
        same = 0
        while same < min(len(path), len(shown)) and path[same] == shown[same]:
            same += 1
        if same == len(path) and len(shown) > len(path):
            # back to a shallower section: its heading again, so the text is not taken for the deeper one's
            if path:
                same -= 1
            else:
                canon.heading(f"Attachment: {filename}", 2)
        for depth in range(same, len(path)):
            canon.heading(path[depth], 3 + depth)
        shown = path
        for para in re.split(r"\n\s*\n", doc.text[s.start:s.end]):
            canon.paragraph(para)

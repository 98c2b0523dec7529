"""The e-mail reader (rag.reading.mail): messages built with the standard library's `email` and `mailbox`, read
back as canonical text with one place per message."""

from __future__ import annotations

import mailbox
import socket
import time
from email.message import EmailMessage

import pytest

from rag.reading import mail, markdown
from rag.reading.document import ExtractionError, Extracted, Limits

DATE = "Fri, 03 May 2024 10:00:00 +0100"


def _message(subject="Rent for May", sender="Ana Lima <ana@example.org>", body="The rent is 850 euros.\n",
             date=DATE, to="Bob Reis <bob@example.org>", cc=None) -> EmailMessage:
    m = EmailMessage()
    m["From"] = sender
    m["To"] = to
    if cc:
        m["Cc"] = cc
    if date:
        m["Date"] = date
    if subject is not None:
        m["Subject"] = subject
    if body is not None:
        m.set_content(body)
    return m


def _read_attachment(data: bytes, filename: str) -> Extracted | None:
    """The dispatcher's part, small: Markdown and plain text read by their reader, anything else not read."""
    if filename.endswith(".md"):
        return markdown.read_markdown(markdown.decode_text(data), filename)
    if filename.endswith(".txt"):
        return markdown.read_plain(markdown.decode_text(data), filename)
    return None


def _read(m, name="m.eml", kind="eml", limits=Limits(), read_attachment=_read_attachment) -> Extracted:
    data = m if isinstance(m, bytes) else bytes(m)
    doc = mail.read(data, name, kind, limits, read_attachment=read_attachment)
    _check_ranges(doc)
    return doc


def _check_ranges(doc: Extracted) -> None:
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip(), s
    for p in doc.places:
        assert 0 <= p.start < p.end <= len(doc.text) and doc.text[p.start:p.end].strip(), p
    assert all(a.end <= b.start for a, b in zip(doc.places, doc.places[1:]))


def _place_text(doc: Extracted, i: int = 0) -> str:
    p = doc.places[i]
    return doc.text[p.start:p.end]


def _path_of(doc: Extracted, phrase: str) -> tuple[str, ...]:
    at = doc.text.index(phrase)
    return next(s.path for s in doc.sections if s.start <= at < s.end)


def _blocks(text: str) -> list[str]:
    return text.split("\n\n")


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test: nothing in a message is ever fetched."""
    def refuse(*args, **kwargs):
        raise AssertionError("the reader tried to open a network connection")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_plain_message_is_one_place_with_its_header_and_body():
    body = "Hello Bob,\n\nThe rent is 850 euros.\nDue on the 1st.\n"
    doc = _read(_message(cc="Carla <carla@example.org>", body=body))
    assert doc.kind == "eml" and doc.title == "Rent for May" and doc.version == "eml-2"
    assert [p.label for p in doc.places] == ['message "Rent for May" from Ana Lima, 2024-05-03']
    inside = _place_text(doc)
    assert _blocks(inside) == [
        "From: Ana Lima <ana@example.org>\nTo: Bob Reis <bob@example.org>\nCc: Carla <carla@example.org>\n"
        f"Date: {DATE}\nSubject: Rent for May",
        "Hello Bob,",
        "The rent is 850 euros.\nDue on the 1st.",
    ]
    assert doc.text.startswith("Rent for May\n\n")  # the subject heads the message, outside its place
    assert [s.path for s in doc.sections] == [("Rent for May",)]
    assert doc.place_of(doc.text.index("850"), doc.text.index("850") + 3) == doc.places[0].label


def test_label_without_name_or_date_uses_the_address_and_leaves_the_date_out():
    doc = _read(_message(sender="ana@example.org", date=None, subject=None))
    assert doc.places[0].label == "message from ana@example.org"
    assert doc.text.startswith("(no subject)\n\n") and doc.title == "m"


def test_html_only_message_is_read_without_scripts_or_remote_images(no_network):
    m = _message(body=None)
    m.set_content('<html><head><script>var secret = "SCRIPTWORD";</script></head><body>'
                  '<h1>Invoice</h1><p>Please pay <b>120 euros</b> by Friday.</p>'
                  '<img src="http://tracker.example.com/pixel.png?id=42" alt="">'
                  '<script>document.write("WRITTENWORD")</script></body></html>', subtype="html")
    doc = _read(m)
    inside = _place_text(doc)
    assert "Please pay 120 euros by Friday." in inside
    assert "SCRIPTWORD" not in doc.text and "WRITTENWORD" not in doc.text and "tracker" not in doc.text
    assert ("Rent for May", "Invoice") in [s.path for s in doc.sections]  # the HTML's h1 under the subject


def test_alternative_reads_the_plain_text_version_only():
    m = _message(body="Plain version: the meeting is at 10.\n")
    m.add_alternative("<p>HTML version: the meeting is at 10.</p>", subtype="html")
    doc = _read(m)
    assert "Plain version: the meeting is at 10." in _place_text(doc)
    assert "HTML version" not in doc.text


def test_quoted_reply_is_marked_and_apart_from_the_answer():
    body = ("Yes, Monday at 10 works for me.\n\nAna\n\n"
            "On Thu, 2 May 2024 at 18:00, Bob Reis <bob@example.org> wrote:\n"
            "> Can we meet on Tuesday instead?\n>\n> Bob\n")
    doc = _read(_message(subject="Re: Meeting", body=body))
    blocks = _blocks(_place_text(doc))
    assert blocks[1:3] == ["Yes, Monday at 10 works for me.", "Ana"]
    assert blocks[3] == ("Quoted: On Thu, 2 May 2024 at 18:00, Bob Reis <bob@example.org> wrote:\n"
                         "Can we meet on Tuesday instead?\nBob")
    assert not any("Tuesday" in b for b in blocks if not b.startswith("Quoted:"))


def test_inline_answers_stay_the_writers_own_and_a_top_posted_original_is_quoted():
    body = "Hi,\n> What is the rent?\nIt is 850.\n> And the deposit?\nTwo months.\n"
    assert _blocks(_place_text(_read(_message(body=body))))[1:] == [
        "Hi,", "Quoted: What is the rent?", "It is 850.", "Quoted: And the deposit?", "Two months."]
    body = ("Agreed.\n\n-----Original Message-----\nFrom: Bob Reis\nSent: Thursday, May 2, 2024 6:00 PM\n"
            "To: Ana Lima\nSubject: Deposit\n\nIs two months fine?\n")
    blocks = _blocks(_place_text(_read(_message(body=body))))
    assert blocks[1] == "Agreed." and blocks[2].startswith("Quoted: -----Original Message-----\nFrom: Bob Reis")
    assert "Is two months fine?" in blocks[2] and len(blocks) == 3


def test_html_quote_is_marked():
    m = _message(body=None)
    m.set_content('<p>I agree with the plan.</p><div class="gmail_quote"><div class="gmail_attr">On Thu, Bob '
                  'wrote:<br></div><blockquote class="gmail_quote">Shall we <b>sign</b> the lease?'
                  '<script>alert("QUOTESCRIPT")</script></blockquote></div>', subtype="html")
    blocks = _blocks(_place_text(_read(m)))
    assert blocks[1] == "I agree with the plan."
    assert blocks[2].startswith("Quoted: On Thu, Bob wrote:") and "Shall we sign the lease?" in blocks[2]
    assert "QUOTESCRIPT" not in "".join(blocks)


def test_attachments_are_read_under_the_message_and_an_unsupported_one_is_ignored():
    seen = []

    def read_attachment(data, filename):
        seen.append((filename, data))
        return _read_attachment(data, filename)

    m = _message(subject="Plans", body="Both files attached.\n")
    m.add_attachment("Checklist for the move.\n\nBook the van for Saturday.\n", filename="notes.txt")
    m.add_attachment("# Budget\n\nIntro line.\n\n## Costs\n\nRent 850.\n\n### Water\n\nWater 20.\n\n## Dates\n\n"
                     "Move on June 1st.\n", subtype="markdown", filename="budget.md")
    exe = b"MZ\x90\x00\x03\x00\x00\x00 this program cannot be run in DOS mode"
    m.add_attachment(exe, maintype="application", subtype="x-msdownload", filename="setup.exe")
    doc = _read(m, read_attachment=read_attachment)
    assert [f for f, _ in seen] == ["notes.txt", "budget.md", "setup.exe"] and seen[2][1] == exe
    inside = _place_text(doc)
    assert "Book the van for Saturday." in inside and "Move on June 1st." in inside
    assert "DOS mode" not in doc.text and doc.warnings == []
    assert "Attachments: notes.txt, budget.md, setup.exe" in inside  # named, even the one not read
    assert _path_of(doc, "Rent 850.") == ("Plans", "Attachment: budget.md", "Costs")
    assert _path_of(doc, "Water 20.") == ("Plans", "Attachment: budget.md", "Costs", "Water")
    assert _path_of(doc, "Move on June 1st.") == ("Plans", "Attachment: budget.md", "Dates")
    assert _path_of(doc, "Book the van for Saturday.") == ("Plans", "Attachment: notes.txt")
    assert _path_of(doc, "Both files attached.") == ("Plans",)
    spot = doc.text.index("Rent 850.")
    assert doc.place_of(spot, spot + 9) == 'message "Plans" from Ana Lima, 2024-05-03'


def test_a_broken_attachment_is_a_warning_and_the_message_still_reads():
    m = _message(subject="Report", body="See the report.\n")
    m.add_attachment(b"\xff\xfe\x00broken", maintype="text", subtype="plain", filename="report.txt")
    doc = _read(m)
    assert "See the report." in _place_text(doc)
    assert len(doc.warnings) == 1
    assert doc.warnings[0].startswith('attachment report.txt of message "Report": binary file')


def test_forwarded_message_part_is_a_marked_block():
    inner = _message(subject="Lease", sender="Landlord <l@example.org>", body="The lease starts on June 1st.\n")
    m = _message(subject="Fwd: Lease", body="See below.\n")
    m.add_attachment(inner)  # message/rfc822
    blocks = _blocks(_place_text(_read(m)))
    assert blocks[1] == "See below."
    assert blocks[2].startswith("Forwarded message: From: Landlord <l@example.org>")
    assert "Subject: Lease" in blocks[2] and "The lease starts on June 1st." in blocks[2]


def test_unknown_and_wrong_charsets_are_decoded_with_replacements():
    raw = (b"From: ana@example.org\nSubject: Odd\nContent-Type: text/plain; charset=x-no-such-charset\n\n"
           b"Caf\xe9 at 10.\n")
    doc = _read(raw)
    assert "Caf\ufffd at 10." in doc.text
    raw = b"From: ana@example.org\nSubject: Latin\nContent-Type: text/plain; charset=utf-8\n\nCaf\xe9 ok.\n"
    assert "Caf\ufffd ok." in _read(raw).text
    raw = b"From: ana@example.org\nSubject: None\n\nCaf\xe9 ok.\n"  # no charset, not UTF-8: Windows-1252
    assert "Caf\u00e9 ok." in _read(raw).text


def test_encoded_headers_and_file_names_are_decoded():
    m = _message(subject="Renda de março — €850", sender="João Pequeño <joao@example.pt>", body="Olá.\n")
    m.add_attachment("Contrato assinado.\n", filename="contrato março.txt")
    raw = bytes(m)
    assert b"=?utf-8?" in raw and "março".encode() not in raw.split(b"\n\n")[0]  # the headers are encoded
    doc = _read(raw)
    assert doc.title == "Renda de março — €850"
    assert doc.places[0].label == 'message "Renda de março — €850" from João Pequeño, 2024-05-03'
    assert "Attachment: contrato março.txt" in doc.text and "Contrato assinado." in doc.text


def _mbox(tmp_path, messages, name="box.mbox") -> bytes:
    path = tmp_path / name
    box = mailbox.mbox(path)
    for m in messages:
        box.add(m)
    box.flush()
    box.close()
    return path.read_bytes()


def test_mbox_has_one_place_per_message(tmp_path):
    people = ["Ana Lima", "Bob Reis", "Carla Dias", "Duarte Sá", "Eva Nunes"]
    msgs = [_message(subject=f"Topic {i}", sender=f"{who} <p{i}@example.org>", date=f"Mon, 0{i + 1} Apr 2024 "
                     f"09:00:00 +0000", body=f"Body of message {i}.\nFrom the start, it was clear.\n")
            for i, who in enumerate(people)]
    doc = _read(_mbox(tmp_path, msgs), "box.mbox", "mbox")
    assert doc.title == "box (5 messages)" and doc.kind == "mbox" and doc.version == "mbox-2"
    assert [p.label for p in doc.places] == [f'message "Topic {i}" from {who}, 2024-04-0{i + 1}'
                                             for i, who in enumerate(people)]
    for i in range(5):
        inside = _place_text(doc, i)
        # mbox escapes a body's "From " line as ">From ": read back as it was written, not as a quote
        assert f"Body of message {i}.\nFrom the start, it was clear." in inside
        assert all(f"message {j}." not in inside for j in range(5) if j != i)
    assert doc.text.index("Topic 1") < doc.text.index("Body of message 1") < doc.text.index("Topic 2")


def test_bad_inputs_have_reasons(tmp_path):
    with pytest.raises(ExtractionError, match="not an e-mail"):
        mail.read(b"%PDF-1.7\n1 0 obj\n<< >>\nendobj\n", "x.eml", "eml", Limits())
    with pytest.raises(ExtractionError, match="not an e-mail"):
        mail.read(b"Shopping list\n\nmilk, bread\n", "list.eml", "eml", Limits())
    with pytest.raises(ExtractionError, match="not an e-mail"):
        mail.read(b"From the desk of the director\n\nNo headers here.\n", "memo.mbox", "mbox", Limits())
    with pytest.raises(ExtractionError, match="holds no messages"):
        mail.read(_mbox(tmp_path, [], "empty.mbox") + b"\n\n", "empty.mbox", "mbox", Limits())
    five = _mbox(tmp_path, [_message(subject=f"S{i}") for i in range(5)])
    with pytest.raises(ExtractionError, match=r"mailbox has 5 messages; the limit is 3 \(max_pages\)"):
        mail.read(five, "box.mbox", "mbox", Limits(max_pages=3))
    with pytest.raises(ExtractionError, match="max_chars"):
        mail.read(bytes(_message(body="word " * 5000)), "big.eml", "eml", Limits(max_chars=2000))


def test_an_attachment_past_the_character_limit_is_left_out_with_a_warning():
    m = _message(subject="Big", body="Short note.\n")
    m.add_attachment("long line of text\n\n" * 300, filename="big.txt")
    doc = _read(m, limits=Limits(max_chars=3000))
    assert "Short note." in doc.text and "long line" not in doc.text
    assert doc.warnings and "big.txt" in doc.warnings[0] and "max_chars" in doc.warnings[0]


def test_hostile_nesting_does_not_crash():
    m = _message(subject="Nested", body="Top level text.\n")
    raw = bytes(m).replace(b"Content-Type: text/plain", b"Content-Type: multipart/mixed; boundary=b0\n"
                           b"X-Filler: text/plain", 1)
    parts = b"".join(f"--b{i}\nContent-Type: multipart/mixed; boundary=b{i + 1}\n\n".encode() for i in range(300))
    raw = raw.split(b"\n\n", 1)[0] + b"\n\n" + parts
    doc = mail.read(raw, "n.eml", "eml", Limits(), read_attachment=_read_attachment)
    assert doc.places and doc.places[0].label.startswith('message "Nested"')


def test_speed_of_a_large_mailbox(tmp_path):
    body = ("Hello,\n\nThe meeting is at 10:00 in room 4. Please bring the report: it is due on Friday.\n\n"
            "Thanks,\nAna\n\nOn Thu, Bob wrote:\n> Where do we meet?\n")
    msgs = [_message(subject=f"Meeting {i}", body=body) for i in range(1000)]
    data = _mbox(tmp_path, msgs)
    start = time.perf_counter()
    doc = mail.read(data, "big.mbox", "mbox", Limits())
    took = time.perf_counter() - start
    assert len(doc.places) == 1000
    print(f"\nmail reader: {1000 / took:,.0f} messages/second ({len(data) / took / 2**20:.1f} MB/s)")

"""What a file really is, and its zip archive opened safely: the checks every reader of a zipped format (Word,
OpenDocument, e-books, slides, spreadsheets) makes before its library reads a byte.

- `sniff(data)` names a file's content from its first bytes ("pdf", "zip", "ole", "html", "text", ...), so a
  file whose suffix lies about its content gets a reason that says what it is.
- `open_zip(data, what)` opens an archive only when it is one, is whole, is not protected by a password, and
  unpacks to at most `MAX_UNPACKED` bytes: a zip bomb is refused from its directory, before anything is
  decompressed (Python's zipfile never writes more than a member's declared size).

What it does not do: read any format (the readers do), or decrypt anything.

>>> sniff(b"%PDF-1.7 ..."), sniff(b"PK\\x03\\x04..."), sniff(b"<!DOCTYPE html><html>"), sniff(b"Rent: 850")
('pdf', 'zip', 'html', 'text')
>>> open_zip(b"%PDF-1.7 ...", "a Word document (.docx)")
Traceback (most recent call last):
...
rag.reading.document.ExtractionError: its content is a PDF, though its name says a Word document (.docx): rename it to .pdf
"""

from __future__ import annotations

import io
import zipfile

from rag.reading.document import ExtractionError

# The most an archive may unpack to. A 100,000-row workbook's sheet is about 30 MB of XML; a 300-page Word
# report with its images about 60 MB. A file past this is a zip bomb or no personal document.
MAX_UNPACKED = 512 * 1024 * 1024
# The most one member may grow by, as a ratio of its packed size, once it is large: XML packs 10-30 times; a
# bomb packs a thousand times and more.
MAX_RATIO = 200
_RATIO_FROM = 16 * 1024 * 1024

_MAGIC = [
    (b"%PDF-", "pdf"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),  # an empty archive
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "ole"),  # the old binary Office formats, and encrypted Office files
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF8", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"\x1f\x8b", "gzip"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!", "rar"),
]
_NAMES = {"pdf": "a PDF", "zip": "a zip archive", "ole": "an old binary Office file (.doc, .xls or .ppt)",
          "png": "a PNG image", "jpeg": "a JPEG image", "gif": "a GIF image", "tiff": "a TIFF image",
          "gzip": "a gzip archive", "7z": "a 7-Zip archive", "rar": "a RAR archive", "html": "a web page",
          "text": "plain text", "binary": "binary data"}
_RENAME = {"pdf": ".pdf", "html": ".html", "text": ".txt"}
# An encrypted Office file is an OLE container with this stream (its name in UTF-16).
_ENCRYPTED = "EncryptedPackage".encode("utf-16-le")


def sniff(data: bytes) -> str:
    """The content's kind from its first bytes: one of `_NAMES`' keys."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in head[:512]:
        return "html"
    if b"\x00" in data[:8192]:
        return "binary"
    return "text"


def content_mismatch(data: bytes, what: str) -> str:
    """The reason a file whose content is not `what` gives, naming what it is instead."""
    kind = sniff(data)
    if kind == "ole":
        if _ENCRYPTED in data[:1 << 20] or _ENCRYPTED in data:
            return "it is protected by a password: open it, save a copy without the password, and add that copy"
        return f"it is in the old binary Office format, though its name says {what}: open it and save it as {what}"
    rename = f": rename it to {_RENAME[kind]}" if kind in _RENAME else ""
    return f"its content is {_NAMES.get(kind, 'something else')}, though its name says {what}{rename}"


def open_zip(data: bytes, what: str) -> zipfile.ZipFile:
    """The archive, checked (see the module's doc); `what` names the format in reasons ("a Word document (.docx)")."""
    if sniff(data) != "zip":
        raise ExtractionError(content_mismatch(data, what) if sniff(data) not in ("binary",) else
                              f"it is not {what}: its content is damaged or of another kind")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ExtractionError(f"it is damaged or truncated: {what} is a zip archive, and this one cannot be "
                              f"opened ({exc})") from None
    members = archive.infolist()
    total = sum(m.file_size for m in members)
    if total > MAX_UNPACKED:
        raise ExtractionError(f"it unpacks to {total / 2**20:,.0f} MB, more than the {MAX_UNPACKED // 2**20} MB "
                              "a document may (a zip bomb, or no personal document): not read")
    for m in members:
        if m.file_size > _RATIO_FROM and m.file_size > MAX_RATIO * max(1, m.compress_size):
            raise ExtractionError(f"its part {m.filename!r} unpacks {m.file_size // max(1, m.compress_size):,} "
                                  f"times its packed size (a zip bomb): not read")
        if m.flag_bits & 0x1:
            raise ExtractionError("it is protected by a password: open it, save a copy without the password, "
                                  "and add that copy")
    return archive


def read_member(archive: zipfile.ZipFile, member: str) -> bytes:
    """One member's bytes; a member whose bytes do not match its checksum (a damaged file) gets a reason."""
    try:
        return archive.read(member)
    except KeyError:
        raise ExtractionError(f"it is damaged: its part {member!r} is missing") from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise ExtractionError(f"it is damaged or truncated: its part {member!r} cannot be read ({exc})") from None

"""Uploads: putting a file someone gave into the folder, under a safe name, never over another file silently.

`save_upload` writes the bytes into the folder (under the writer lock, so no sync reads a half-made
conflict decision) and returns the name it used. It does not index the file: the caller queues or indexes
it (`Engine.enqueue`, `Engine.index_files`) like any other file of the folder.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from rag.extract import SUPPORTED, kind_of
from rag.library import WriterLock


class UploadError(ValueError):
    """An upload that was not saved; the message says why and what to do."""


class UploadConflict(UploadError):
    """Another file already has this name: the person chooses to replace it or keep both."""

    def __init__(self, message: str, existing: str):
        super().__init__(message)
        self.existing = existing


def safe_name(name: str) -> str:
    """A file name that is only a name: no directories, no control characters, no leading dots.

    >>> safe_name("../../etc/passwd.md"), safe_name("C:\\\\x\\\\notes .md"), safe_name("a\\x00b?.txt")
    ('passwd.md', 'notes.md', 'a_b_.txt')
    """
    name = unicodedata.normalize("NFC", name)
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch if ch.isprintable() and ch not in '<>:"|?*' else "_" for ch in name).strip().lstrip(".")
    stem, dot, ext = name.rpartition(".")
    if dot:
        name = stem[: 120].rstrip() + "." + ext[:10]
    else:
        name = name[:130]
    return name or "upload"


def save_upload(folder: Path, name: str, data: bytes, *, lock: WriterLock, max_upload_mb: int,
                on_conflict: str = "ask") -> str:
    """Save uploaded bytes into `folder` under a safe name; returns the relative path.

    The same name with the same bytes is a no-op. Another file under that name (up to case and
    Unicode normalisation) is never overwritten silently: `on_conflict` is "ask" (raise
    `UploadError`, so the UI can ask), "replace", or "rename" (keep both: `report-2.pdf`).
    """
    if on_conflict not in ("ask", "replace", "rename"):
        raise ValueError(f"on_conflict must be one of 'ask', 'replace', 'rename', got {on_conflict!r}")
    limit = max_upload_mb * 1024 * 1024
    if len(data) > limit:
        raise UploadError(f"{name}: {len(data) / 1048576:.1f} MB is over the upload limit of {max_upload_mb} MB")
    clean = safe_name(name)
    if kind_of(clean) is None:
        raise UploadError(f"{clean}: unsupported type; supported: {', '.join(sorted(SUPPORTED))}")
    target = (folder / clean).resolve()
    if target.parent != folder.resolve():
        raise UploadError(f"{name}: not a plain file name")
    with lock:
        existing = _existing_variant(folder, clean)
        if existing is not None:
            if existing.read_bytes() == data:
                return existing.name
            if on_conflict == "ask":
                raise UploadConflict(f"a different file named {existing.name} is already in the folder; "
                                     f"replace it, or keep both", existing.name)
            if on_conflict == "replace":
                target = existing
            else:
                stem, ext = os.path.splitext(clean)
                n = 2
                while _existing_variant(folder, f"{stem}-{n}{ext}") is not None:
                    n += 1
                target = folder.resolve() / f"{stem}-{n}{ext}"
        tmp = target.with_name(f".{target.name}.part")
        tmp.write_bytes(data)
        os.replace(tmp, target)  # never a half-written file under the real name
    return target.name


def _existing_variant(folder: Path, name: str) -> Path | None:
    """A file already in the folder whose name equals `name` up to case and Unicode normalisation."""
    key = unicodedata.normalize("NFC", name).casefold()
    for p in folder.iterdir():
        if p.is_file() and unicodedata.normalize("NFC", p.name).casefold() == key:
            return p
    return None


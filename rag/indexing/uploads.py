"""Uploads: putting a file someone gave into the folder, under a safe name, never over another file silently.

`save_upload` writes the bytes into the folder (under the writer lock, so no sync reads a half-made
conflict decision) and returns the name it used. It does not index the file: the caller queues or indexes
it (`Engine.enqueue`, `Engine.index_files`) like any other file of the folder.

An upload whose name a different file already has waits for the person's choice (replace it, keep both, or
cancel). Its bytes wait on disk, beside the index (`hold`, `held`, `peek`, `release`), not in one browser
session: a reload, another tab or a restart of the app still asks, and the file is never lost meanwhile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from rag.reading.extract import refusal
from rag.indexing.library import WriterLock


class UploadError(ValueError):
    """An upload that was not saved; the message says why and what to do."""


class UploadConflict(UploadError):
    """Another file already has this name: the person chooses to replace it or keep both."""

    def __init__(self, message: str, existing: str, held: "HeldUpload | None" = None):
        super().__init__(message)
        self.existing = existing
        self.held = held  # where its bytes wait for the choice, when the caller gave `held_dir`


@dataclass(frozen=True)
class HeldUpload:
    """An upload waiting for the replace-or-keep choice: `name` (safe) is taken in the folder by `existing`."""

    id: str
    name: str
    existing: str
    size: int

    @property
    def message(self) -> str:
        return f"a different file named {self.existing} is already in the folder; replace it, or keep both"


def hold(held_dir: Path, name: str, data: bytes, existing: str) -> HeldUpload:
    """Keep an upload's bytes until the person chooses (`release`). The same name and bytes held twice are one.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> h = hold(d, "notes.md", b"new", "Notes.md"); h.name, h.size, held(d) == [h]
    ('notes.md', 3, True)
    >>> peek(d, h.id), release(d, h.id), held(d)
    (('notes.md', b'new'), None, [])
    """
    clean = safe_name(name)
    key = hashlib.sha256(clean.encode() + b"\0" + data).hexdigest()[:16]
    box = held_dir / key
    box.mkdir(parents=True, exist_ok=True)
    tmp = box / ".part"
    tmp.write_bytes(data)
    os.replace(tmp, box / clean)  # whole or not there
    (box / ".existing").write_text(existing, encoding="utf-8")
    return HeldUpload(key, clean, existing, len(data))


def held(held_dir: Path) -> list[HeldUpload]:
    """The uploads waiting for a choice, oldest first."""
    out = []
    boxes = sorted((b for b in held_dir.iterdir() if b.is_dir()), key=lambda b: b.stat().st_mtime) \
        if held_dir.is_dir() else []
    for box in boxes:
        files = [f for f in box.iterdir() if f.is_file() and not f.name.startswith(".")]
        if len(files) == 1:
            marker = box / ".existing"
            existing = marker.read_text(encoding="utf-8") if marker.exists() else files[0].name
            out.append(HeldUpload(box.name, files[0].name, existing, files[0].stat().st_size))
    return out


def release(held_dir: Path, held_id: str) -> None:
    """Stop holding an upload: call it once its bytes (`peek`) are saved, or refused for good."""
    if any(h.id == held_id for h in held(held_dir)):
        shutil.rmtree(held_dir / held_id, ignore_errors=True)


def peek(held_dir: Path, held_id: str) -> tuple[str, bytes]:
    """A held upload's name and bytes, still held. `KeyError` when there is none of that id."""
    match = [h for h in held(held_dir) if h.id == held_id]
    if not match:
        raise KeyError(f"no upload waiting under {held_id!r}")
    return match[0].name, (held_dir / held_id / match[0].name).read_bytes()


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
                on_conflict: str = "ask", held_dir: Path | None = None) -> str:
    """Save uploaded bytes into `folder` under a safe name; returns the relative path.

    The same name with the same bytes is a no-op. Another file under that name (up to case and
    Unicode normalisation) is never overwritten silently: `on_conflict` is "ask" (raise
    `UploadConflict`, so the UI can ask; with `held_dir`, the bytes wait there: `hold`), "replace",
    or "rename" (keep both: `report-2.pdf`).
    """
    if on_conflict not in ("ask", "replace", "rename"):
        raise ValueError(f"on_conflict must be one of 'ask', 'replace', 'rename', got {on_conflict!r}")
    limit = max_upload_mb * 1024 * 1024
    if len(data) > limit:
        raise UploadError(f"{name}: {len(data) / 1048576:.1f} MB is over the upload limit of {max_upload_mb} MB")
    clean = safe_name(name)
    if reason := refusal(clean):
        raise UploadError(f"{clean}: {reason}")
    target = (folder / clean).resolve()
    if target.parent != folder.resolve():
        raise UploadError(f"{name}: not a plain file name")
    with lock:
        if same := already_there(folder, clean, data):
            return same
        existing = _existing_variant(folder, clean)
        if existing is not None:
            if on_conflict == "ask":
                waiting = hold(held_dir, clean, data, existing.name) if held_dir is not None else None
                raise UploadConflict(f"a different file named {existing.name} is already in the folder; "
                                     f"replace it, or keep both", existing.name, waiting)
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


def already_there(folder: Path, name: str, data: bytes) -> str | None:
    """The folder's file that these bytes under this name would be (up to case and Unicode normalisation),
    when it holds the same bytes: saving them changes nothing. None otherwise."""
    existing = _existing_variant(folder, safe_name(name))
    return existing.name if existing is not None and existing.read_bytes() == data else None


def _existing_variant(folder: Path, name: str) -> Path | None:
    """A file already in the folder whose name equals `name` up to case and Unicode normalisation."""
    key = unicodedata.normalize("NFC", name).casefold()
    for p in folder.iterdir():
        if p.is_file() and unicodedata.normalize("NFC", p.name).casefold() == key:
            return p
    return None


"""Benchmark a file dropped while a folder is indexed for the first time: how long until it can be asked about.

    .venv/bin/python bench/bench_drop.py                     # 200 files, the drop 5 s after the start
    .venv/bin/python bench/bench_drop.py --files 400 --after 10 --json bench/out/bench_drop.json
    .venv/bin/python bench/bench_drop.py --after-indexed     # the drop as the folder's last file is indexed

What runs, all real (the engine, no browser): a temporary folder of N synthetic Markdown notes
(`bench_queue.write_load`: ~1,500 characters, 3 chunks each), a real Engine on it (MiniLM, the multilingual
side as configured, Chroma on disk), started as the app starts it (`Engine.start`: the worker and a rescan
that queues every file, source "folder"). `--after` seconds later (or, with `--after-indexed`, the moment the
folder's last file is indexed, when the worker calibrates the folder) a new note is written into the folder and
queued as the app queues a drop in the sidebar (`Engine.enqueue(..., source="upload")`). Timed: from the drop
to the note's `indexed` row; the folder's own indexing (start to its last file); how many of the folder's
files were indexed after the note; then one search for the note's content, whose first candidate must be the
note. Run it on two commits to compare (the figures depend on the machine's load: read them side by side).

What it does not do: time the chat's answer (bench_queue.py does, in a browser) or the calibration.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import rag  # noqa: E402
from bench_queue import machine, write_load  # noqa: E402

NOTE = ("# Boat club\n\nMembers book a sailing dinghy at the harbour office two days ahead; a booking costs twelve "
        "euros for a half day. Life jackets hang on the left wall of the blue boathouse.\n")
QUESTION = "How much does it cost to book a dinghy at the boat club?"


def run(files: int, after: float, after_indexed: bool = False) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-drop-"))
    try:
        folder = tmp / "docs"
        folder.mkdir()
        write_load(folder, files)
        settings = rag.load_settings(config=tmp / "none.toml", env={}, folder=folder, index_dir=tmp / "index")
        engine = rag.Engine(settings)
        t0 = time.monotonic()
        engine.start(watch=False)
        if after_indexed:
            while engine.indexing() or not engine.queue.items():
                time.sleep(0.01)
        else:
            time.sleep(max(after - (time.monotonic() - t0), 0))
        (folder / "boat-club.md").write_text(NOTE, encoding="utf-8")
        dropped = time.monotonic()
        engine.enqueue(["boat-club.md"], source="upload")
        note_at = None
        while engine.indexing():
            item = engine.queue.get("boat-club.md")
            if note_at is None and item is not None and item.state == "indexed":
                note_at = time.monotonic()
            time.sleep(0.02)
        done = time.monotonic()
        items = engine.queue.items()
        note = next(i for i in items if i.path == "boat-club.md")
        note_at = note_at or done
        later = sum(1 for i in items if i.path != "boat-club.md" and i.updated_at > note.updated_at)
        top = engine.search(QUESTION).candidates[0].doc_name
        engine.close()
        return {"files": files, "after_s": round(dropped - t0, 2), "drop_to_indexed_s": round(note_at - dropped, 2),
                "folder_indexing_s": round(done - t0, 2), "folder_files_indexed_after_the_note": later,
                "first_candidate": top, "chunks": sum(i.chunks for i in items)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--after", type=float, default=5.0, help="seconds after the start the note is dropped")
    ap.add_argument("--after-indexed", action="store_true",
                    help="drop the note the moment the folder's last file is indexed (during its calibration)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    res = run(args.files, args.after, args.after_indexed)
    res["machine"] = machine()
    print(json.dumps(res, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

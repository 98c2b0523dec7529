"""Peak memory while indexing one large PDF: does it stay bounded as the PDF grows?

    .venv/bin/python bench/bench_memory.py --pages 50 500

Each size runs in a fresh process: load the model, note the resident set, index a PDF of N pages
(about 2,000 characters of prose per page, written here with pymupdf), note the peak. The figure that
matters is the growth over the loaded model, per page: roughly constant means memory grows with the
document's text (which is held once) and not with its page count or chunk count times the vectors.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out" / "memory"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import rag
from rag import Engine, load_settings
folder, index = Path(sys.argv[1]), Path(sys.argv[2])
rag.load_embedder().embed_batch(["warm up"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
engine = Engine(load_settings(env={}, folder=folder, index_dir=index))
t = time.perf_counter()
report = engine.sync()
secs = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024, "chunks": report.embedded, "seconds": secs,
                  "status": [o.status for o in report.outcomes]}))
"""


def make_pdf(path: Path, pages: int) -> None:
    import pymupdf

    rng = random.Random(pages)
    words = "valve pump sensor ledger invoice warranty harbour signal glacier turbine policy report".split()
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page()
        y = 60
        for _ in range(4):
            para = " ".join(rng.choice(words) for _ in range(80)).capitalize() + "."
            page.insert_textbox(pymupdf.Rect(60, y, 540, y + 180), para, fontsize=10)
            y += 185
    doc.save(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, nargs="+", default=[50, 500])
    args = ap.parse_args()
    rows = []
    for n in args.pages:
        folder = OUT / f"pdf-{n}" / "docs"
        folder.mkdir(parents=True, exist_ok=True)
        make_pdf(folder / f"big-{n}.pdf", n)
        index = OUT / f"pdf-{n}" / "index"
        subprocess.run(["rm", "-rf", str(index)], check=True)
        out = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(index)], capture_output=True, text=True,
                             check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1]) | {"pages": n}
        rows.append(row)
    print("| PDF pages | chunks | index s | RSS after model load MB | peak RSS MB | growth MB | growth per page KB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        growth = r["peak_mb"] - r["base_mb"]
        print(f"| {r['pages']} | {r['chunks']} | {r['seconds']:.0f} | {r['base_mb']:.0f} | {r['peak_mb']:.0f} | "
              f"{growth:.0f} | {growth * 1024 / r['pages']:.0f} |")
    (OUT / "bench_memory.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

"""What reading a PDF costs per page, now and at an earlier commit, measured in one run.

Writes a PDF with pymupdf (`--pages` pages, each a title line, an abstract across the page, two columns of
wrapped prose with ligatures, a running header and a page number), then times `rag.reading.extract.extract_bytes`
(what indexing does per file) and `rag.reading.viewer.pdf_layout` (what the viewer does to mark a passage) with this
working tree's code and with `--ref`'s (checked out by `git archive` into a temporary folder), alternating
the two `--rounds` times so the machine's noise falls on both. Reports the median ms per page of each, and
the ratio.

    .venv/bin/python bench/bench_pdf.py [--pages 200] [--ref 3afc1e5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TIMER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from rag.reading.extract import extract_bytes
from rag.reading.viewer import pdf_layout
data = open(sys.argv[2], "rb").read()
t0 = time.perf_counter(); doc = extract_bytes(data, "bench.pdf", max_pages=100000); t1 = time.perf_counter()
pdf_layout(data); t2 = time.perf_counter()
print(json.dumps({"extract": t1 - t0, "layout": t2 - t1, "chars": len(doc.text)}))
"""

PROSE = ("The estuary's classiﬁcation follows the tide, and the oyster ﬂats move with it. Farmers lift the "
         "trays before the ﬁrst frost and put them back in March, when the water is neither too fresh nor too "
         "salty. ")


def build(pages: int) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    for n in range(1, pages + 1):
        page = doc.new_page()
        kw = {"fontname": "dv", "fontsize": 10}
        page.insert_font(fontname="dv", fontfile=font)
        page.insert_text((72, 40), f"Field notes on estuaries {n}", fontname="dv", fontsize=8)
        page.insert_textbox(pymupdf.Rect(72, 70, 523, 120), f"Part {n}. " + PROSE, **kw)
        page.insert_textbox(pymupdf.Rect(72, 130, 290, 780), PROSE * 6, **kw)
        page.insert_textbox(pymupdf.Rect(305, 130, 523, 780), PROSE * 6, **kw)
        page.insert_text((290, 815), str(n), fontname="dv", fontsize=8)
    data = doc.tobytes()
    doc.close()
    return data


def tree_at(ref: str, into: Path) -> Path:
    """The repository's rag/ package at `ref`, unpacked under `into`."""
    raw = subprocess.run(["git", "archive", ref, "rag"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(raw)) as tar:
        tar.extractall(into, filter="data")
    return into


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--ref", default="3afc1e5", help="the commit to compare with (default: before the PDF work)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "bench.pdf"
        pdf.write_bytes(build(args.pages))
        trees = {"now": ROOT, args.ref: tree_at(args.ref, Path(tmp) / "ref")}
        runs: dict[str, list[dict]] = {k: [] for k in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                out = subprocess.run([sys.executable, "-c", TIMER, str(tree), str(pdf)], capture_output=True,
                                     text=True, check=True).stdout
                runs[name].append(json.loads(out.strip().splitlines()[-1]))
    report = {"machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "pages": args.pages}
    for name, rs in runs.items():
        report[name] = {k: round(1000 * statistics.median(r[k] for r in rs) / args.pages, 2) for k in ("extract", "layout")}
    for k in ("extract", "layout"):
        report[f"{k} ratio now/{args.ref}"] = round(report["now"][k] / report[args.ref][k], 2)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""OCR's cost on this machine: seconds per page and peak memory for a full A4 page of text scanned at 300 dpi as an
image-only PDF and photographed (a JPEG turned by 93°: a quarter turn and a skew of 3°), and a restart halfway
through a 50-page scan (the reading killed once 25 pages are in the OCR cache, then run again with the cache:
only the pages not done are recognised).

Each case runs in a process of its own (the image cases read three times there, the best time counts, the
first reading's time in brackets: it pays for the first calls); the memory is the
process's resident peak, and that peak above what it held after importing the reader and loading the language
identifier (as the app has), and Tesseract's own peak on the page (it runs as a child process, a page at a time).

    .venv/bin/python bench/ocr.py          # about four minutes on two cores
    .venv/bin/python bench/ocr.py --pages 10 --stop 5
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Runs in the child: read one file `times` times, print what it cost. argv: path, kind, cache folder or "-", times.
CHILD = r"""
import json, re, sys, time
from pathlib import Path
from rag.reading import ocr, pdf
from rag.reading.document import Limits
from rag.text.languages import document_language
path, kind, cache = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
calls = []
real = ocr.recognise
ocr.recognise = lambda image, langs=ocr.DEFAULT_LANGS: calls.append(1) or real(image, langs)
import numpy, pymupdf, PIL.Image  # what the readers import when they first read
ocr.available()
document_language("The tenant pays the rent on the first day of each month.")  # the app has its model loaded
def peak():  # VmHWM: this process's resident peak since its exec (ru_maxrss keeps the parent's from the fork)
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
before = peak()
reader = pdf if kind == "pdf" else ocr
times = []
for _ in range(int(sys.argv[4])):  # the first reading pays for first calls (Tesseract's language list, ...)
    t = time.perf_counter()
    doc = reader.read(path.read_bytes(), path.name, kind, Limits(ocr_cache=None if cache == "-" else Path(cache)))
    times.append(time.perf_counter() - t)
print(json.dumps({"seconds": min(times), "first": times[0], "pages": doc.ocr_pages, "recognised": len(calls),
                  "chars": len(doc.text),
                  "words": len(doc.ocr_words),
                  "confidence": sum(w.confidence for w in doc.ocr_words) / max(1, len(doc.ocr_words)),
                  "rss_mb": peak(), "rss_above_import_mb": peak() - before}))
"""
# Tesseract's own peak on one page, from a bare process (ru_maxrss of children: Tesseract's, or this small
# process's at the fork).
TESSERACT = r"""
import os, resource, subprocess, sys
subprocess.run(["tesseract", sys.argv[1], "stdout", "-l", "eng", "tsv"], capture_output=True, check=True,
               env={**os.environ, "OMP_THREAD_LIMIT": "1"})
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""


def page_text(n: int, total: int) -> list[str]:
    """A full page of the tests' letter, its sentences in an order of its own (so no two pages look alike)."""
    from tests.unit.ocr_pages import EN, MORE

    rng = random.Random(n)
    sentences = (EN + MORE) * 3
    rng.shuffle(sentences)
    return [f"Tenancy agreement, page {n} of {total}"] + [" ".join(sentences[i:i + 5]) for i in range(0, 30, 5)]


def run(path: Path, kind: str, cache: Path | None = None, times: int = 1) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), kind, str(cache) if cache else "-", str(times)],
                         capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def tesseract_peak(image_path: Path) -> float:
    out = subprocess.run([sys.executable, "-c", TESSERACT, str(image_path)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50, help="pages of the scan read halfway (50)")
    parser.add_argument("--stop", type=int, default=25, help="pages done when the first reading is killed (25)")
    args = parser.parse_args()
    from tests.unit.ocr_pages import photo, render, scanned_pdf

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        page = render(page_text(1, 1), dpi=300, pt=11, height_in=11.69)
        (tmp / "scan.pdf").write_bytes(scanned_pdf([page]))
        (tmp / "photo.jpg").write_bytes(photo(page, turn=93))
        page.save(tmp / "page.png")
        print("| case | s/page (first reading) | words | mean confidence | peak RSS (MB) | above import (MB) |")
        print("| --- | --- | --- | --- | --- | --- |")
        for label, name, kind in (("image-only PDF, A4 at 300 dpi", "scan.pdf", "pdf"),
                                  ("photo, JPEG turned 93°", "photo.jpg", "image")):
            best = run(tmp / name, kind, times=3)
            print(f"| {label} | {best['seconds'] / best['pages']:.2f} ({best['first']:.2f}) | {best['words']} | "
                  f"{best['confidence']:.1f} | {best['rss_mb']:.0f} | {best['rss_above_import_mb']:.0f} |")
        peak = tesseract_peak(tmp / "page.png")
        print(f"\nTesseract's own peak on the page (eng, one process per page): {peak:.0f} MB")

        scan, cache = tmp / "scan50.pdf", tmp / "cache"
        scan.write_bytes(scanned_pdf([render(page_text(n, args.pages), dpi=300, pt=11, height_in=11.69)
                                      for n in range(1, args.pages + 1)]))
        t = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(scan), "pdf", str(cache), "1"], cwd=ROOT,
                                 stdout=subprocess.DEVNULL)
        while len(list(cache.glob("*/*.json"))) < args.stop and child.poll() is None:
            time.sleep(0.05)
        child.kill()  # the indexer's process dies halfway
        child.wait()
        first = time.perf_counter() - t
        done = len(list(cache.glob("*/*.json")))
        second = run(scan, "pdf", cache)
        print(f"\n{args.pages}-page scan: killed after {first:.0f} s with {done} pages in the cache "
              f"({first / max(1, done):.2f} s/page); the restart recognised {second['recognised']} pages "
              f"(the other {second['pages'] - second['recognised']} from the cache) in {second['seconds']:.0f} s, "
              f"peak RSS {second['rss_mb']:.0f} MB ({second['rss_above_import_mb']:.0f} MB above import)")


if __name__ == "__main__":
    main()

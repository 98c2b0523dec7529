"""Where OCR's confidence stops vouching for a passage: scans of passage-sized text (two sentences of a letter) made
here at 100-200 dpi, 8-10 pt, from clean to blurred and speckled, read by Tesseract (`rag.reading.ocr`); for each,
the mean word confidence and the character error rate against the source. The bar (`OCR_LOW`, rag.settings's
Tuning) is chosen on the odd-numbered scans, as the confidence under which a passage's CER is over 2% most often
for the fewest clean passages flagged, and reported on the even-numbered ones.

    .venv/bin/python bench/ocr_confidence.py      # about three minutes on two cores
"""

from __future__ import annotations

import io
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag.reading import ocr  # noqa: E402
from rag.reading.document import Limits  # noqa: E402
from tests.unit.ocr_pages import EN, MORE, cer, degrade, render  # noqa: E402

BAD = 0.02  # a passage whose CER is over this misquotes about one word in ten


def scans():
    texts = EN + MORE
    # From clean to the edge of "OCR found no text" (past it there is nothing to quote): measured, the mild
    # and the worst steps of a first grid were all either perfect or unreadable.
    grid = itertools.product((200, 150, 100), (10, 8), ((0.8, 15), (1.1, 22), (1.3, 28), (1.5, 34)))
    for i, (dpi, pt, (blur, noise)) in enumerate(grid):
        source = [texts[i % len(texts)], texts[(i + 3) % len(texts)]]
        image = render(source, dpi=dpi, pt=pt)
        if blur:
            image = degrade(image, blur=blur * dpi / 300, noise=noise, seed=i)
        yield i, f"{dpi} dpi, {pt} pt, blur {blur}, noise {noise}", " ".join(source), image


def measure():
    rows = []
    for i, label, source, image in scans():
        out = io.BytesIO()
        image.save(out, format="PNG")
        try:
            doc = ocr.read(out.getvalue(), "scan.png", "image", Limits())
            conf = doc.ocr_confidence(0, len(doc.text))[0]
            rows.append((i, label, conf, cer(source, doc.text)))
        except Exception as exc:  # no text found: refused, nothing to quote, nothing to flag
            print(f"  {label}: {exc}", file=sys.stderr)
    return rows


def flagged(rows, bar):
    bad = [r for r in rows if r[3] > BAD]
    good = [r for r in rows if r[3] <= BAD]
    return (sum(1 for r in bad if r[2] < bar) / max(1, len(bad)), sum(1 for r in good if r[2] < bar) / max(1, len(good)),
            len(bad), len(good))


def main() -> None:
    rows = measure()
    print("| scan | mean confidence | CER |\n|---|---:|---:|")
    for i, label, conf, err in rows:
        print(f"| {i}: {label} | {conf:.1f} | {err:.1%} |")
    choose = [r for r in rows if r[0] % 2]
    report = [r for r in rows if not r[0] % 2]
    # The bar: most bad passages flagged, less the clean ones flagged, on the choosing half.
    bars = sorted({round(r[2]) + 0.5 for r in choose} | {50.0, 60.0, 70.0, 80.0})
    best = max(bars, key=lambda b: (flagged(choose, b)[0] - flagged(choose, b)[1], -b))
    for name, part in (("chosen on (odd scans)", choose), ("reported on (even scans)", report)):
        caught, false, nbad, ngood = flagged(part, best)
        print(f"\nbar {best:.1f}, {name}: {caught:.0%} of {nbad} passages with CER > {BAD:.0%} flagged, "
              f"{false:.0%} of {ngood} clean ones")


if __name__ == "__main__":
    main()

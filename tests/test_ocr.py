"""OCR's slower checks, with the real Tesseract (rag.reading.ocr; the fast ones are tests/unit/test_read_ocr.py):
a photo of a page turned by 90° and skewed by 3°, at 300 and 150 dpi; an image-only PDF at 150 dpi; whether the
least confident words hold the errors; and a restart halfway through a scan, which reads only the pages not done.
The figures are printed (`pytest -s`): the README and bench/ocr.py quote them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag.reading import ocr, pdf
from rag.reading.document import Limits
from tests.unit.ocr_pages import (EN, MORE, cer, degrade, errors_by_confidence, lowest_decile_share, photo, png,
                                  render, scanned_pdf)

pytestmark = pytest.mark.slow  # real Tesseract: `make test` installs it (scripts/install-ocr.sh); missing, these fail
SOURCE = EN + MORE
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("dpi", [300, 150])
def test_a_photo_turned_and_skewed_is_read(dpi):
    data = photo(render(SOURCE, dpi=dpi), turn=93)
    t = time.perf_counter()
    doc = ocr.read(data, "photo.jpg", "image", Limits())
    rate = cer(" ".join(SOURCE), doc.text)
    print(f"\nphoto turned 93°, {dpi} dpi: CER {rate:.4f}, {time.perf_counter() - t:.2f} s, "
          f"mean confidence {sum(w.confidence for w in doc.ocr_words) / len(doc.ocr_words):.1f}")
    if dpi == 300:
        assert rate <= 0.02
        for sentence in SOURCE:
            assert sentence in doc.text
    else:
        assert rate <= 0.05
    assert "Margaret Olsen" in doc.text and "0161 496 0734" in doc.text


@pytest.mark.parametrize("dpi", [300, 150])
def test_an_image_only_pdf_at_two_resolutions(dpi):
    doc = pdf.read(scanned_pdf([render(SOURCE, dpi=dpi)]), "scan.pdf", "pdf", Limits())
    rate = cer(" ".join(SOURCE), doc.text)
    print(f"\nimage-only PDF scanned at {dpi} dpi: CER {rate:.4f}")
    assert rate <= (0.02 if dpi == 300 else 0.05) and doc.ocr_pages == 1


def test_the_least_confident_words_hold_the_errors():
    doc = ocr.read(png(degrade(render(SOURCE, dpi=150, pt=8), blur=1.2, noise=20)), "poor.png", "image", Limits())
    ranked = errors_by_confidence(" ".join(SOURCE).split(),
                                  [(doc.text[w.start:w.end], w.confidence) for w in doc.ocr_words])
    share, wrong = lowest_decile_share(ranked)
    right = [c for c, bad in ranked if not bad]
    bad = [c for c, bad in ranked if bad]
    print(f"\npoor scan: CER {cer(' '.join(SOURCE), doc.text):.4f}; {wrong} of {len(ranked)} words wrong; the "
          f"tenth least confident words hold {share:.0%} of the errors; mean confidence {sum(bad) / len(bad):.1f} "
          f"(wrong) against {sum(right) / len(right):.1f} (right)")
    assert wrong >= 5  # the page is poor enough to tell
    assert sum(bad) / len(bad) < sum(right) / len(right) - 10
    assert share >= 0.3  # three times what chance gives


def test_a_restart_halfway_reads_only_the_pages_not_done(tmp_path, monkeypatch):
    pages = [render([SOURCE[i], SOURCE[i + 1]], dpi=200, height_in=3) for i in range(6)]
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scanned_pdf(pages))
    cache = tmp_path / "cache"
    code = ("import sys; from pathlib import Path; from rag.reading import pdf; "
            "from rag.reading.document import Limits; "
            "pdf.read(Path(sys.argv[1]).read_bytes(), 'scan.pdf', 'pdf', Limits(ocr_cache=Path(sys.argv[2])))")
    child = subprocess.Popen([sys.executable, "-c", code, str(scan), str(cache)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while len(list(cache.glob("*/*.json"))) < 3 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        child.kill()  # the indexer's process dies halfway through the scan
        child.wait()
    done = len(list(cache.glob("*/*.json")))
    assert 3 <= done < 6
    calls = []
    real = ocr.recognise
    monkeypatch.setattr(ocr, "recognise", lambda image, langs=ocr.DEFAULT_LANGS: calls.append(1) or real(image, langs))
    doc = pdf.read(scan.read_bytes(), "scan.pdf", "pdf", Limits(ocr_cache=cache))
    print(f"\nrestart: {done} of 6 pages were done; the second reading recognised {len(calls)}")
    assert len(calls) == 6 - done and doc.ocr_pages == 6
    assert all(s in doc.text for s in SOURCE[:7])


def test_a_scan_dropped_in_the_folder_is_answered_with_its_confidence_and_marked_on_its_page(make_engine, tmp_path,
                                                                                              monkeypatch):
    # The whole way: a scanned letter (an image-only PDF) and a photographed page (PNG) in a folder, indexed by
    # the engine; a question answered from the right sentence; the citation and the viewer say it came from
    # OCR and how sure it was; the viewer marks the quote on the page image from the recognised words' boxes.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "letter-scan.pdf").write_bytes(scanned_pdf([render(EN[:3])]))
    (folder / "receipt.png").write_bytes(png(render(MORE[:2])))
    (folder / "keys-photo.jpg").write_bytes(photo(render(MORE[2:4], dpi=150)))  # turned by 93°, at 150 dpi
    engine = make_engine(folder)
    report = engine.sync()
    assert [o.status for o in report.outcomes] == ["indexed"] * 3, report.outcomes
    assert any(p.name.endswith(".json") for p in engine.settings.ocr_cache.rglob("*")), "the pages' words are kept"
    for question, name, words in (("How long does the landlord take to return the deposit?", "letter-scan.pdf",
                                   "returned within thirty days"),
                                  ("How much was the boiler service invoice?", "receipt.png", "186.40 euros"),
                                  ("What does the small brass key open?", "keys-photo.jpg", "opens the letterbox")):
        citation = engine.ask(question, threshold=0.9).gated.citations[0]
        assert citation.doc_name == name and words in citation.quote, (name, citation.quote)
        assert citation.ocr_confidence is not None and citation.ocr_confidence > 85.5
        located = engine.locate(citation.doc_name, citation.start, citation.end, version=citation.version)
        assert not located.problem and located.quote == citation.quote
        assert located.marks and located.marks[0].page == 1 and located.ocr[0] == pytest.approx(citation.ocr_confidence, abs=0.1)
    # One image in the viewer page: drawn with its marks, and no page controls (a trial's photo read "Page 1 of 1"
    # between a Previous and a Next that did nothing).
    from tests.test_viewer import viewer

    at = viewer(engine, monkeypatch, doc=citation.doc_name, start=str(citation.start), end=str(citation.end))
    assert not at.exception, at.exception
    assert "rag-mark" in next(h.proto.body for h in at.get("html"))
    assert not [b for b in at.button if b.label in ("Previous page", "Next page")]
    assert not [m for m in at.markdown if " of 1 · " in m.value]

"""OCR (rag.reading.ocr, and rag.reading.pdf's scanned pages) with the real Tesseract, on pages the tests make:
text rendered in DejaVu Serif, saved as PNG, as an image-only PDF, beside real text pages. No mock: counts of
recognised pages come from a spy around `ocr.recognise` that calls the real one."""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from rag.reading import ocr, pdf
from rag.reading.document import ExtractionError, Limits
from rag.reading.viewer import marks_for, pdf_layout
from tests.unit.ocr_pages import EN, PT, cer, png, render, scanned_pdf

# Real Tesseract: `make check` and `make test` install it (scripts/install-ocr.sh); missing, these fail, not skip.


@pytest.fixture
def recognised(monkeypatch):
    """The pages recognised during the test (each a call of the real `ocr.recognise`)."""
    calls = []
    real = ocr.recognise

    def spy(image, langs=ocr.DEFAULT_LANGS):
        calls.append(image.size)
        return real(image, langs)

    monkeypatch.setattr(ocr, "recognise", spy)
    return calls


@pytest.fixture(scope="module")
def page300():
    return render(EN[:3], dpi=300)


def _check_ranges(doc):
    assert doc.sections and all(doc.text[s.start:s.end].strip() for s in doc.sections)
    assert [w.start for w in doc.ocr_words] == sorted(w.start for w in doc.ocr_words)
    for w in doc.ocr_words:
        word = doc.text[w.start:w.end]
        assert word and word == word.strip() and 0 <= w.confidence <= 100


def test_a_png_page_is_read_with_its_words_confidences_and_boxes(page300, recognised, tmp_path):
    doc = ocr.read(png(page300), "notice.png", "image", Limits(ocr_cache=tmp_path))
    assert (doc.kind, doc.version, doc.title, doc.ocr_pages) == ("image", "image-2", "notice", 1)
    for sentence in EN[:3]:
        assert sentence in doc.text
    assert cer(" ".join(EN[:3]), doc.text) <= 0.02
    _check_ranges(doc)
    first = doc.ocr_words[0]
    assert doc.text[first.start:first.end] == "The" and first.page == 1
    x0, y0, x1, y1 = first.box  # drawn at (300, 300): one inch in, at 300 dpi
    assert 290 <= x0 <= 310 and 295 <= y0 <= 330 and x1 > x0 and y1 > y0
    assert all(0 <= w.box[0] < w.box[2] <= page300.width and 0 <= w.box[1] < w.box[3] <= page300.height
               for w in doc.ocr_words)
    assert len(recognised) == 1
    # The cache: read again, nothing is recognised; the same words come back.
    again = ocr.read(png(page300), "notice.png", "image", Limits(ocr_cache=tmp_path))
    assert len(recognised) == 1 and again.text == doc.text and again.ocr_words == doc.ocr_words


def test_an_image_only_pdf_is_read_by_ocr_and_its_words_are_boxed_in_points(page300, tmp_path):
    data = scanned_pdf([page300])
    doc = pdf.read(data, "scan.pdf", "pdf", Limits(ocr_cache=tmp_path))
    assert (doc.version, doc.pages, doc.ocr_pages, doc.empty_pages) == ("pdf-8", 1, 1, 0)
    for sentence in EN[:3]:
        assert sentence in doc.text
    _check_ranges(doc)
    first = doc.ocr_words[0]
    # The image covers the A4 page (595 x 842 pt): the word drawn an inch in is about 72 pt in.
    assert doc.text[first.start:first.end] == "The" and first.page == 1
    assert 60 <= first.box[0] <= 80 and first.box[2] < 120
    assert all(0 <= w.box[0] < w.box[2] <= 595.5 and 0 <= w.box[1] < w.box[3] <= 842.5 for w in doc.ocr_words)
    # The viewer rebuilds the same text (from the cache), each recognised character boxed by its word.
    text, boxes = pdf_layout(data, tmp_path)
    assert text == doc.text
    start = doc.text.index("The tenant pays")
    marks = marks_for(boxes[start:start + len("The tenant pays")])
    assert [m.page for m in marks] == [1] and len(marks[0].rects) == 1  # one line: one rectangle
    x0, y0, x1, y1 = marks[0].rects[0]
    assert (x0, y0) == first.box[:2] and 130 < x1 < 250 and y1 - y0 < 15


def test_only_the_scanned_page_of_a_pdf_is_ocrd(page300, recognised):
    words = "This page has a real text layer, written by the PDF's producer, and it is read as it is. " * 3
    data = scanned_pdf([page300], text_pages={0: "First. " + words, 2: "Last. " + words})
    doc = pdf.read(data, "mixed.pdf", "pdf", Limits())
    assert len(recognised) == 1 and doc.ocr_pages == 1 and doc.pages == 3
    assert doc.text.startswith("First. This page") and "Last. This page" in doc.text
    assert EN[0] in doc.text and {w.page for w in doc.ocr_words} == {2}
    scanned = doc.text[doc.page_starts[1]:doc.page_starts[2]]
    assert doc.text[doc.ocr_words[0].start:doc.ocr_words[-1].end] in scanned
    assert pdf_layout(data)[0] == doc.text  # the viewer recognises the page again: the same text


def test_a_portuguese_page_is_read_with_portuguese_data():
    doc = ocr.read(png(render(PT, dpi=300)), "carta.png", "image", Limits())
    assert "ação" in doc.text and "informações" in doc.text and "informação" in doc.text


def test_a_multi_page_tiff_has_a_section_per_page():
    from PIL import Image

    pages = [render([EN[0]], dpi=200, height_in=2.5), Image.new("L", (400, 300), 255),
             render([EN[4]], dpi=200, height_in=2.5)]
    out = io.BytesIO()
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_deflate")
    doc = ocr.read(out.getvalue(), "letters.tiff", "image", Limits())
    assert [s.path for s in doc.sections] == [("Page 1",), ("Page 3",)]
    assert [doc.text[s.start:s.end] for s in doc.sections] == [EN[0], EN[4]]
    assert (doc.pages, doc.empty_pages, doc.ocr_pages) == (3, 1, 3)
    assert doc.page_at(doc.text.index("ninety")) == 3 and {w.page for w in doc.ocr_words} == {1, 3}


# --- bad input ---------------------------------------------------------------------------------------------------

def _png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("side", [40000, 10000])
def test_a_gigapixel_image_is_refused_before_decoding(side, recognised):
    with pytest.warns() if side == 10000 else _nothing():  # PIL warns past its own limit, then we refuse
        with pytest.raises(ExtractionError) as err:
            ocr.read(_png_header(side, side), "huge.png", "image", Limits())
    assert err.value.reason == (f"the image is {side:,} × {side:,} pixels; the limit is {ocr.MAX_MEGAPIXELS} "
                                f"megapixels: not decoded")
    assert not recognised


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_truncated_jpeg_says_so(page300):
    out = io.BytesIO()
    page300.save(out, "JPEG", quality=80)
    with pytest.raises(ExtractionError, match="the image is truncated"):
        ocr.read(out.getvalue()[: len(out.getvalue()) // 2], "scan.jpg", "image", Limits())


def test_a_photo_with_no_text():
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (900, 600), (120, 160, 200))
    draw = ImageDraw.Draw(image)
    for i in range(8):
        draw.ellipse((60 * i, 40 * i, 60 * i + 200, 40 * i + 150), fill=(30 * i, 200 - 20 * i, 90))
    out = io.BytesIO()
    image.save(out, "JPEG")
    with pytest.raises(ExtractionError, match="^OCR found no text on this image$"):
        ocr.read(out.getvalue(), "holiday.jpg", "image", Limits())


def test_a_tiff_of_hundreds_of_pages_stops_at_the_page_limit(recognised):
    from PIL import Image

    tiny = [Image.new("L", (8, 8), 255) for _ in range(300)]
    out = io.BytesIO()
    tiny[0].save(out, "TIFF", save_all=True, append_images=tiny[1:])
    with pytest.raises(ExtractionError, match=r"the TIFF has 300 pages; the limit is 200 \(max_pages\)"):
        ocr.read(out.getvalue(), "archive.tif", "image", Limits(max_pages=200))
    assert not recognised


@pytest.mark.parametrize("data, reason", [(b"", "the file is empty"), (b"%PDF-1.7 not an image", "not a PNG, JPEG")])
def test_what_is_no_image_says_so(data, reason):
    with pytest.raises(ExtractionError, match=reason):
        ocr.read(data, "x.png", "image", Limits())


def test_without_tesseract_images_fail_and_scans_say_why(monkeypatch, page300):
    import pytesseract

    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "/nonexistent/tesseract")
    ocr.available.cache_clear()
    try:
        assert ocr.available() == ocr.MISSING
        with pytest.raises(ExtractionError, match="^OCR is not installed"):
            ocr.read(png(page300), "notice.png", "image", Limits())
        with pytest.raises(ExtractionError) as err:
            pdf.read(scanned_pdf([page300]), "scan.pdf", "pdf", Limits())
        assert err.value.reason.startswith("no extractable text on any of its 1 page(s): a scanned or image-only PDF")
        assert "OCR is not installed" in err.value.reason and "scripts/install-ocr.sh" in err.value.reason
        mixed = pdf.read(scanned_pdf([page300], {0: "A real text page. " * 5}), "m.pdf", "pdf", Limits())
        assert mixed.empty_pages == 1 and "1 scanned page(s) not read: OCR is not installed" in mixed.warnings[0]
    finally:
        monkeypatch.undo()
        ocr.available.cache_clear()
    assert ocr.available() is None


def test_blank_pages_are_not_ocrd(recognised):
    import pymupdf

    doc = pymupdf.open()
    for _ in range(30):
        doc.new_page()
    with pytest.raises(ExtractionError, match=r"no extractable text on any of its 30 page\(s\): its pages are blank"):
        pdf.read(doc.tobytes(), "blank.pdf", "pdf", Limits())
    assert not recognised

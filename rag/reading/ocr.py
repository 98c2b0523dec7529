"""OCR: the words of a scanned page or a photographed document, each with Tesseract's confidence in it and its box
on the page, read by Tesseract (Debian's package, installed by scripts/install-ocr.sh) through pytesseract.

`recognise(image, langs)` reads one page (an image file's picture, a PDF page rendered by `rag.reading.pdf`):

- in grey, scaled down to at most `MAX_SIDE` pixels (a 600-dpi scan costs four times a 300-dpi one's time);
- turned upright and level first: the ink's row and column profiles (numpy, 50 ms) tell lines that run down
  the page (a photo turned by 90°) and the skew (the angle whose rows are sharpest, to 0.1°, within ±6°). A
  page on its side is turned as Tesseract's orientation detection (OSD) says, or by a quarter turn when OSD
  cannot tell (a few words); a first reading under `RECHECK` mean confidence is read again the other way up
  (OSD said 270 for a 100-dpi photo turned by 90), then through a 3-pixel median filter (a noisy 150-dpi
  page: no word at all, filtered a CER of 0.1%), the more confident reading kept;
- with the first of `langs`; when the language of what it read (`rag.text.languages`) is another of `langs`,
  again with that language's data alone, kept when Tesseract is more confident. Measured on this module's
  test pages (12-pt DejaVu Serif, 300 dpi, 2 cores): a language's own data reads it best and fastest (CER 0
  for de, fr, it, es; with eng 3.4%, 1.9%, 1.0%, 2.0%, pt 6.6%: "ação" read "acao"), and the six together
  ("eng+por+spa+deu+fra+ita") cost 1.6× eng's time and still read German at 3.4% (Tesseract tries the first
  language first). So an English page costs one reading, another language two;
- by Tesseract on one thread (OMP_THREAD_LIMIT=1, for Tesseract only): on two cores its OpenMP threads made
  a page 4× slower (10 s against 2.3 s). A full A4 page (537 words) takes 2.4 s, a photo of it turned by
  93° 3.8 s (bench/ocr.py).

A word's box is in the pixels of the image as given (before turning and scaling), so the app can draw it on
the page a person sees. `recognise_cached` keeps each page's words in a folder, by the hash of the page's
pixels, so a restart reads only the pages not done. `read` reads image files (PNG, JPEG, TIFF with its pages,
WebP): paragraphs as blocks of the canonical text, lines joined with spaces, a word broken at a line's end
joined again; `Extracted.ocr_words` holds each word's range in the text, its confidence and its box.

What it does not do: read handwriting well, tables as tables, or text in a picture's margins Tesseract does not
find; install Tesseract (`available()` says what is missing); read a GIF or a camera's raw file.

>>> text, spans = _join_lines([["Rent", "is", "paid", "in", "ad-"], ["vance", "by", "R-"], ["CNN."]])
>>> text, [text[s:e] for s, e in spans]
('Rent is paid in advance by R-CNN.', ['Rent', 'is', 'paid', 'in', 'ad', 'vance', 'by', 'R-', 'CNN.'])
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import re
import tempfile
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

from rag.reading.canonical import Canonical, clean_block
from rag.reading.document import ExtractionError, Extracted, Limits, OcrWord, Section

VERSION = "ocr-1"  # of the recognition: part of the cache's key
VERSIONS = {"image": "image-2"}  # 2: a title keeps its words' underscores ("scan_001": document.clean_heading)
SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")
DEFAULT_LANGS = "eng+por+spa+deu+fra+ita"  # the first is read first; the others when the text is in them
MAX_MEGAPIXELS = 80  # a bigger picture is refused before it is decoded (a 600-dpi A3 scan is 70)
MAX_SIDE = 4200  # pixels: a bigger page is scaled down first (an A4 page at 360 dpi)
RECHECK = 70.0  # a first reading less confident than this has its orientation checked by OSD
TIMEOUT = 300  # seconds one Tesseract run may take
MISSING = ("OCR is not installed (Tesseract is missing): scanned pages and images are not read; "
           "run scripts/install-ocr.sh")
# rag.text.languages' codes -> Tesseract's language data.
_TESSERACT = {"en": "eng", "pt": "por", "es": "spa", "de": "deu", "fr": "fra", "it": "ita", "nl": "nld",
              "da": "dan", "sv": "swe", "no": "nor", "ru": "rus", "tr": "tur", "ca": "cat", "fi": "fin",
              "pl": "pol", "cs": "ces", "ro": "ron", "hu": "hun", "el": "ell", "id": "ind"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\ufeff]")


@dataclass(frozen=True)
class Word:
    text: str
    confidence: float  # Tesseract's, 0-100
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the pixels of the image as given
    block: int  # Tesseract's block, paragraph and line numbers: words of one paragraph share (block, par)
    par: int
    line: int


@dataclass
class Recognised:
    words: list[Word]
    width: int  # the image's, as given
    height: int
    lang: str = ""  # the language data that read the words
    turned: float = 0.0  # degrees (counter-clockwise) the image was turned by before reading: orientation and skew


@dataclass
class Paragraph:
    text: str  # its lines joined with single spaces: a block of the canonical text as it is
    words: list[tuple[int, int, float, tuple[int, int, int, int]]]  # (start, end) in `text`, confidence, box
    box: tuple[int, int, int, int]
    line_height: float  # pixels, the median of its lines'


def _tesseract():
    import pytesseract
    import pytesseract.pytesseract as runner

    # pytesseract starts each Tesseract with its module's `environ`: OMP_THREAD_LIMIT=1 there, and for Tesseract
    # alone (set in os.environ, torch in this process would lose its threads).
    runner.environ = {**os.environ, "OMP_THREAD_LIMIT": os.environ.get("OMP_THREAD_LIMIT", "1")}
    return pytesseract


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """None when Tesseract works here; else why not, for a person (said once; the rest of the folder is read)."""
    try:
        tess = _tesseract()
        tess.get_tesseract_version()
        langs = _installed()
    except ImportError:
        return MISSING.replace("Tesseract", "pytesseract")
    except Exception:  # TesseractNotFoundError, a binary that does not run
        return MISSING
    if not langs:
        return "OCR has no language data (Tesseract's packages are incomplete); run scripts/install-ocr.sh"
    return None


@functools.lru_cache(maxsize=1)
def _installed() -> tuple[str, ...]:
    return tuple(lang for lang in _tesseract().get_languages(config="") if lang not in ("osd", "equ"))


def tesseract_langs(codes, first: str = "en") -> str:
    """Tesseract's `langs` for languages named as rag.text.languages names them (the folder's), `first` first,
    keeping those whose data is installed: ["pt", "en"] -> "eng+por"; DEFAULT_LANGS when none is."""
    wanted = [first] + [c for c in codes if c != first]
    found = [_TESSERACT[c] for c in wanted if _TESSERACT.get(c) in _installed()]
    return "+".join(dict.fromkeys(found)) or DEFAULT_LANGS


# --- reading a page ----------------------------------------------------------------------------------------------

def recognise(image, langs: str = DEFAULT_LANGS) -> Recognised:
    """The words on `image` (a PIL image), orientation and skew corrected first; `langs`: Tesseract's language
    codes joined by "+", the first read first (see the module's doc)."""
    gray = _gray(image)
    width, height = gray.size
    scale = min(1.0, MAX_SIDE / max(width, height))
    work = gray.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.LANCZOS) \
        if scale < 1 else gray
    choices = [c for c in langs.split("+") if c in _installed()] or list(_installed()[:1])
    down = _lines_run_down(work)
    turn = _osd(work) if down else 0
    turn = 90 if down and turn not in (90, 270) else turn  # OSD could not tell: a quarter turn, then the other
    data = _read(work, _straight(work, turn), choices[0])
    if _mean(data[0]) < RECHECK:  # upside down, OSD wrong (it can be, on a small picture), or a poor page
        other = (turn + 180) % 360 if down else _osd(work)
        if other != turn:
            again = _read(work, _straight(work, other), choices[0])
            data = again if _mean(again[0]) > _mean(data[0]) else data
    if _mean(data[0]) < RECHECK:  # a noisy scan: Tesseract's threshold makes the specks words, or nothing
        work = work.filter(ImageFilter.MedianFilter(3))
        again = _read(work, data[1], choices[0])
        data = again if _mean(again[0]) > _mean(data[0]) else data
    words, angle = data
    lang = choices[0]
    other = _TESSERACT.get(_language(words), "")
    if other in choices and other != lang:
        again = _read(work, angle, other)
        if _mean(again[0]) > _mean(words):
            words, lang = again[0], other
    if scale < 1:
        words = [Word(w.text, w.confidence, _scaled(w.box, 1 / scale, width, height), w.block, w.par, w.line)
                 for w in words]
    return Recognised(words, width, height, lang, angle)


def _gray(image):
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("L")
    if image.mode.startswith("I"):  # 16-bit grey: its top byte
        return image.convert("I").point(lambda v: v * (1 / 256)).convert("L")
    return image.convert("L")


def _read(work, angle: float, lang: str) -> tuple[list[Word], float]:
    """Tesseract's words on `work` turned by `angle` degrees, their boxes back in `work`'s pixels."""
    from pytesseract import Output

    turned, back = _turn(work, angle)
    tess = _tesseract()
    try:
        d = tess.image_to_data(turned, lang=lang, output_type=Output.DICT, timeout=TIMEOUT)
    except tess.TesseractError as exc:
        raise ExtractionError(f"Tesseract failed on the page: {exc.message or exc}") from None
    except RuntimeError:  # pytesseract's timeout
        raise ExtractionError(f"OCR took longer than {TIMEOUT} s on a page and was stopped") from None
    words = []
    for i, raw in enumerate(d["text"]):
        text = _CONTROL.sub("", unicodedata.normalize("NFC", str(raw))).strip()
        text = "".join(text.split())
        conf = float(d["conf"][i])
        if not text or conf < 0:
            continue
        x, y, w, h = d["left"][i], d["top"][i], d["width"][i], d["height"][i]
        box = _scaled(back((x, y, x + w, y + h)), 1.0, *work.size)
        words.append(Word(text, round(conf, 1), box, d["block_num"][i], d["par_num"][i], d["line_num"][i]))
    return words, angle


def _mean(words: list[Word]) -> float:
    return sum(w.confidence for w in words) / len(words) if words else 0.0


def _language(words: list[Word]) -> str:
    from rag.text.languages import document_language

    return document_language(" ".join(w.text for w in words)) if len(words) >= 5 else ""


def _osd(work) -> int:
    """Degrees (clockwise) Tesseract's orientation detection says the page must turn to stand upright; 0 when it
    cannot tell (too few letters: OSD refuses a page of a few words)."""
    try:
        osd = _tesseract().image_to_osd(_thumb(work, 2000), output_type="dict", timeout=TIMEOUT)
    except Exception:  # TesseractError "Too few characters", a timeout: the page stays as it is
        return 0
    return int(osd.get("rotate", 0)) % 360 if float(osd.get("orientation_conf", 0)) >= 1.0 else 0


def _straight(work, turn: int) -> float:
    """The angle (degrees, counter-clockwise) that turns `work` upright (`turn`, clockwise, from OSD) and level."""
    small, _ = _turn(_thumb(work), -turn)
    return -turn - _skew(small)[1]


def _thumb(image, side: int = 1200):
    small = image.copy()
    small.thumbnail((side, side))  # (the copy costs a page's pixels for a moment: thumbnail works in place)
    return small


def _ink(small):
    """The dark pixels' (row, column) coordinates, at most 80,000 of them (Otsu's threshold)."""
    a = np.asarray(small, dtype=np.uint8)
    hist = np.bincount(a.ravel(), minlength=256).astype(float)
    p = hist / max(1.0, hist.sum())
    w, mu = np.cumsum(p), np.cumsum(p * np.arange(256))
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mu[-1] * w - mu) ** 2 / (w * (1 - w))
    thr = int(np.nanargmax(between)) if np.isfinite(between).any() else 128
    ys, xs = np.nonzero(a <= thr)
    if len(ys) > 80_000:
        pick = np.random.default_rng(0).choice(len(ys), 80_000, replace=False)
        ys, xs = ys[pick], xs[pick]
    return ys.astype(float), xs.astype(float)


def _sharpest(ys, xs, angles) -> tuple[float, float]:
    """(score, angle): the angle (degrees) at which the rows of ink are sharpest (the sum of squared row counts:
    text lines and the gaps between them), when the ink is turned back by it."""
    best = (-1.0, 0.0)
    if len(ys) < 50:
        return best
    for a in angles:
        r = math.radians(a)
        p = ys * math.cos(r) + xs * math.sin(r)
        h = np.bincount((p - p.min()).astype(np.int64)).astype(float)
        best = max(best, (float((h * h).sum()), round(float(a), 2)))
    return best


def _skew(small) -> tuple[float, float]:
    """(score, degrees counter-clockwise the text lines are turned by), within ±6°, to a tenth of a degree."""
    ys, xs = _ink(small)
    _, coarse = _sharpest(ys, xs, np.arange(-6, 6.01, 0.5))
    return _sharpest(ys, xs, np.arange(coarse - 0.5, coarse + 0.51, 0.1))


def _lines_run_down(work) -> bool:
    """Whether the text lines run down the page (it lies on its side): the ink's columns are sharper than its rows."""
    ys, xs = _ink(_thumb(work))
    angles = np.arange(-6, 6.01, 0.5)
    rows, cols = _sharpest(ys, xs, angles)[0], _sharpest(xs, ys, angles)[0]
    return cols > 1.1 * rows


def _turn(image, angle: float):
    """`image` turned by `angle` degrees counter-clockwise around its centre, grown to hold all of it, on white;
    and the function that takes a box of the turned image back to the box of `image` holding it. The affine
    matrix is PIL's own `rotate(expand=True)`'s, computed here so that the way back is exact."""
    if abs(angle) < 0.05:
        return image, lambda box: box
    w, h = image.size
    a = -math.radians(angle)
    m = [math.cos(a), math.sin(a), 0.0, -math.sin(a), math.cos(a), 0.0]
    cx, cy = w / 2, h / 2
    m[2], m[5] = m[0] * -cx + m[1] * -cy + cx, m[3] * -cx + m[4] * -cy + cy
    xs, ys = zip(*[(m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5])
                   for x, y in ((0, 0), (w, 0), (w, h), (0, h))])
    nw, nh = math.ceil(max(xs)) - math.floor(min(xs)), math.ceil(max(ys)) - math.floor(min(ys))
    m[2], m[5] = m[0] * -(nw - w) / 2 + m[1] * -(nh - h) / 2 + m[2], m[3] * -(nw - w) / 2 + m[4] * -(nh - h) / 2 + m[5]
    # (Turning a scan by an exact quarter turn with NEAREST keeps its pixels as they are.)
    resample = Image.NEAREST if abs(angle) % 90 < 0.05 else Image.BILINEAR
    turned = image.transform((nw, nh), Image.AFFINE, m, resample, fillcolor=255)

    def back(box):
        corners = [(box[0], box[1]), (box[2], box[1]), (box[2], box[3]), (box[0], box[3])]
        px = [m[0] * x + m[1] * y + m[2] for x, y in corners]
        py = [m[3] * x + m[4] * y + m[5] for x, y in corners]
        return (min(px), min(py), max(px), max(py))

    return turned, back


def _scaled(box, k: float, width: int, height: int) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = (v * k for v in box)
    return (max(0, math.floor(x0)), max(0, math.floor(y0)), min(width, math.ceil(x1)), min(height, math.ceil(y1)))


# --- the cache ---------------------------------------------------------------------------------------------------

def recognise_cached(image, langs: str, cache: Path | None) -> tuple[Recognised, bool]:
    """`recognise(image, langs)`, kept in `cache` (a folder; None: no cache) under the hash of the image's
    pixels, the OCR's version and `langs`; (the words, whether they came from the cache)."""
    if cache is None:
        return recognise(image, langs), False
    h = hashlib.sha256(f"{VERSION}|{_version()}|{langs}|{image.mode}|{image.size}|".encode())
    h.update(image.tobytes())
    key = h.hexdigest()
    path = Path(cache) / key[:2] / f"{key}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        words = [Word(w[0], w[1], tuple(w[2]), w[3], w[4], w[5]) for w in kept["words"]]
        return Recognised(words, kept["width"], kept["height"], kept["lang"], kept["turned"]), True
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        pass  # not there yet, or damaged: read the page again
    rec = recognise(image, langs)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = asdict(rec)
    body["words"] = [[w.text, w.confidence, list(w.box), w.block, w.par, w.line] for w in rec.words]
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:  # written whole, then renamed: a crash leaves no half file
        json.dump(body, f, ensure_ascii=False)
    os.replace(tmp, path)
    return rec, False


@functools.lru_cache(maxsize=1)
def _version() -> str:
    return str(_tesseract().get_tesseract_version())


# --- words into text ---------------------------------------------------------------------------------------------

def paragraphs(rec: Recognised) -> list[Paragraph]:
    """The recognised words as paragraphs (Tesseract's), in its reading order."""
    from rag.reading.hyphens import compounds

    known = compounds(w.text for w in rec.words)  # "segunda-feira" printed whole: kept whole at a line's end
    groups: dict[tuple[int, int], dict[int, list[Word]]] = {}
    for w in rec.words:
        groups.setdefault((w.block, w.par), {}).setdefault(w.line, []).append(w)
    out = []
    for lines in groups.values():
        ordered = [lines[k] for k in sorted(lines)]
        text, spans = _join_lines([[w.text for w in line] for line in ordered], known)
        flat = [w for line in ordered for w in line]
        if not any(c.isalnum() for c in text):
            continue
        heights = sorted(max(w.box[3] for w in line) - min(w.box[1] for w in line) for line in ordered)
        box = (min(w.box[0] for w in flat), min(w.box[1] for w in flat), max(w.box[2] for w in flat),
               max(w.box[3] for w in flat))
        out.append(Paragraph(text, [(s, e, w.confidence, w.box) for (s, e), w in zip(spans, flat)], box,
                             float(heights[len(heights) // 2])))
    return out


def _join_lines(lines: list[list[str]], known: frozenset[str] = frozenset()) -> tuple[str, list[tuple[int, int]]]:
    """A paragraph's lines of words as one line of text, and each word's (start, end) in it: words and lines
    joined with a space, a word broken at a line's end joined again (as rag.reading.pdf joins a PDF's lines;
    `known`: the page's own hyphenated words, kept with their hyphen)."""
    from rag.reading.hyphens import LINE_END_HYPHEN, line_end_hyphen

    text, spans = "", []
    for n, line in enumerate(lines):
        for i, word in enumerate(line):
            if text and i == 0 and n and len(text) > 1 and text.endswith("-"):
                probe = text + "\n" + word
                m = LINE_END_HYPHEN.search(probe, len(text) - 2)
                if m and m.start() == len(text) - 2:
                    joined = line_end_hyphen(probe, m, known)
                    if len(joined) == 2:  # the hyphen goes: the word before it ends a character earlier
                        text = text[:-1]
                        s, e = spans[-1]
                        spans[-1] = (s, e - 1)
                    spans.append((len(text), len(text) + len(word)))
                    text += word
                    continue
            if text:
                text += " "
            spans.append((len(text), len(text) + len(word)))
            text += word
    return text, spans


# --- image files -------------------------------------------------------------------------------------------------

def read(data: bytes, name: str, kind: str, limits: Limits) -> Extracted:
    """An image file's text by OCR: one page, or a TIFF's pages each a section ("Page 2")."""
    reason = available()
    if reason:
        raise ExtractionError(reason)
    image = _open(data)
    count = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1  # a GIF's or WebP's frames are no pages
    if count > limits.max_pages:
        raise ExtractionError(f"the TIFF has {count:,} pages; the limit is {limits.max_pages:,} (max_pages)")
    canon = Canonical(name, max_chars=limits.max_chars)
    words: list[OcrWord] = []
    page_spans: list[tuple[int, int, int]] = []  # (page, start, end) of each page with text
    for page in range(1, count + 1):
        frame = _frame(image, page - 1, count)
        rec, _ = recognise_cached(frame, DEFAULT_LANGS, limits.ocr_cache)
        del frame
        first = None
        for para in paragraphs(rec):
            assert clean_block(para.text) == para.text, para.text  # the block stays as built: offsets hold
            span = canon.paragraph(para.text)
            first = span[0] if first is None else first
            words += [OcrWord(span[0] + s, span[0] + e, conf, page, box) for s, e, conf, box in para.words]
        if first is not None:
            page_spans.append((page, first, canon.chars))
    if not page_spans:
        raise ExtractionError("OCR found no text on this image" if count == 1 else
                              f"OCR found no text on any of its {count} pages")
    doc = canon.build(kind="image", title="", version=VERSIONS["image"], ocr_words=words, ocr_pages=count,
                      pages=count, empty_pages=count - len(page_spans))
    if count > 1:
        doc.sections = [Section(s, e, (f"Page {p}",)) for p, s, e in page_spans]
        # (a page with no text starts where the next one does)
        doc.page_starts = [next((s for q, s, _ in page_spans if q >= p), len(doc.text)) for p in range(1, count + 1)]
    return doc


def _open(data: bytes):
    """The image's header read (not its pixels): a picture too big to decode is refused here."""
    if not data:
        raise ExtractionError("the file is empty (0 bytes)")
    try:
        image = Image.open(io.BytesIO(data), formats=["PNG", "JPEG", "TIFF", "WEBP"])
    except Image.DecompressionBombError:  # PIL refuses past twice its own limit, before saying the size
        _too_big(_header_size(data))
    except UnidentifiedImageError:
        raise ExtractionError("not a PNG, JPEG, TIFF or WebP image (damaged, or another kind named as one)") from None
    except Exception as exc:
        raise ExtractionError(f"the image's header cannot be read (damaged?): {exc}") from None
    _check_size(image.size)
    return image


def _check_size(size: tuple[int, int]) -> None:
    if size[0] * size[1] > MAX_MEGAPIXELS * 1_000_000:
        _too_big(size)


def _too_big(size: tuple[int, int] | None):
    shown = f"{size[0]:,} × {size[1]:,} pixels" if size else "more pixels than can be decoded"
    raise ExtractionError(f"the image is {shown}; the limit is {MAX_MEGAPIXELS} megapixels: not decoded")


def _header_size(data: bytes) -> tuple[int, int] | None:
    Image.init()
    for fmt in ("PNG", "JPEG", "TIFF", "WEBP"):
        factory, accept = Image.OPEN[fmt]
        if accept is None or accept(data[:16]):
            try:
                return factory(io.BytesIO(data)).size
            except Exception:
                continue
    return None


def _frame(image, index: int, count: int):
    """Page `index` of the image, decoded (its own size checked first: a TIFF's pages differ), as it is shown
    (a photo's EXIF orientation applied)."""
    try:
        if count > 1:
            image.seek(index)
            _check_size(image.size)
        image.load()
        return ImageOps.exif_transpose(image) if count == 1 else image
    except ExtractionError:
        raise
    except Exception as exc:  # OSError "image file is truncated", a broken data stream, SyntaxError, zlib
        where = f"page {index + 1} of the image" if count > 1 else "the image"
        if "truncated" in str(exc) or isinstance(exc, EOFError):
            raise ExtractionError(f"{where} is truncated (the file ends before the picture does: a download or "
                                  f"copy that did not finish?): it cannot be decoded") from None
        raise ExtractionError(f"{where} is damaged and cannot be decoded: {exc}") from None

"""Pages for the OCR tests and bench/ocr.py, made here: text rendered to an image in a real font (DejaVu Serif,
Debian's fonts-dejavu-core), saved as PNG, as an image-only PDF, as a JPEG "photo" turned and skewed; and the
character error rate of a reading against its source.

>>> cer("The rent is due.", "The rent is due.") , round(cer("The rent is due.", "Tne rent is due"), 3)
(0.0, 0.125)
>>> errors_by_confidence(["a", "b", "c"], [("a", 90.0), ("x", 20.0), ("c", 95.0)])
[(20.0, True), (90.0, False), (95.0, False)]
"""

from __future__ import annotations

import difflib
import io
import textwrap
from pathlib import Path

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")

EN = [
    "The tenant pays the rent on the first day of each month by bank transfer.",
    "A deposit of two months of rent is held by the landlord and returned within thirty days after the keys "
    "are handed back.",
    "Pets are allowed only with written permission, and the garden must be kept tidy during the summer.",
    "Repairs to the heating system are the landlord's duty; the tenant reports any fault within three days.",
    "The contract can be ended by either party with ninety days of notice, given in writing.",
]
# More of the same letter, every word once (so that a reading's words align with the source's one to one).
MORE = [
    "Invoice 2024-117 of 14 March: boiler service, 186.40 euros, paid by card at the office on Baker Street.",
    "Meter readings are sent before the fifth; a missed reading is estimated from last winter's average use.",
    "Keys: three for the front door, one for the cellar, and a small brass key that opens the letterbox.",
    "Questions about this agreement go to Margaret Olsen, phone 0161 496 0734, on weekdays from nine to five.",
    "Smoking is forbidden indoors; candles must never be left burning unattended in any room of the flat.",
]
PT = [
    "A informação sobre a ação judicial foi enviada ao cliente na segunda-feira.",
    "As informações pessoais são guardadas com segurança e não são partilhadas sem autorização.",
    "O pagamento da renda é feito até ao dia oito de cada mês, por transferência bancária.",
]


def render(paragraphs: list[str], dpi: int = 300, pt: float = 12, width_in: float = 8.27,
           height_in: float | None = None):
    """The paragraphs set in DejaVu Serif, `pt` points, on a white page `width_in` inches wide (margins of
    an inch), at `dpi`: a grey PIL image, as tall as the text needs unless `height_in` says."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(FONT), round(pt * dpi / 72))
    chars = int((width_in - 2) * 72 / (pt * 0.52))  # DejaVu Serif's mean advance is about half an em
    lines = [[*textwrap.wrap(p, chars), ""] for p in paragraphs]
    step = round(pt * dpi / 72 * 1.45)
    height = round(height_in * dpi) if height_in else 2 * dpi + step * sum(len(x) for x in lines)
    image = Image.new("L", (round(width_in * dpi), height), 255)
    draw = ImageDraw.Draw(image)
    y = dpi
    for para in lines:
        for line in para:
            draw.text((dpi, y), line, font=font, fill=0)
            y += step
    return image


def png(image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def photo(image, turn: float = 93.0, quality: int = 85) -> bytes:
    """A JPEG of `image` turned by `turn` degrees counter-clockwise (90 and a skew of 3), on white."""
    from PIL import Image

    turned = image.rotate(turn, expand=True, fillcolor=255, resample=Image.BICUBIC)
    out = io.BytesIO()
    turned.convert("RGB").save(out, "JPEG", quality=quality)
    return out.getvalue()


def scanned_pdf(images, text_pages: dict[int, str] | None = None) -> bytes:
    """A PDF whose pages are the images (each inserted over a whole A4 page, no text layer), with real text
    pages put in at the given 0-based positions."""
    import pymupdf

    doc = pymupdf.open()
    images = list(images)
    text_pages = text_pages or {}
    for n in range(len(images) + len(text_pages)):
        page = doc.new_page(width=595, height=842)
        if n in text_pages:
            page.insert_textbox(pymupdf.Rect(72, 72, 523, 770), text_pages[n], fontsize=11)
        else:
            page.insert_image(page.rect, stream=png(images.pop(0)))
    return doc.tobytes(deflate=True, garbage=3)  # compressed, as a scanner writes it (raw, a page is 8.7 MB)


def levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def cer(source: str, read: str) -> float:
    """Character error rate: edit distance over the source's length, runs of white space counted as one."""
    source, read = " ".join(source.split()), " ".join(read.split())
    return levenshtein(source, read) / max(1, len(source))


def errors_by_confidence(source_words: list[str], read: list[tuple[str, float]]) -> list[tuple[float, bool]]:
    """Each read word's (confidence, wrong?), lowest confidence first: a word is right when difflib aligns it
    with the same word of the source."""
    matcher = difflib.SequenceMatcher(None, source_words, [w for w, _ in read], autojunk=False)
    right = {j for a, b, size in matcher.get_matching_blocks() for j in range(b, b + size)}
    return sorted((conf, j not in right) for j, (_, conf) in enumerate(read))


def lowest_decile_share(ranked: list[tuple[float, bool]]) -> tuple[float, int]:
    """(share of the wrong words that are among the tenth least confident words, how many are wrong)."""
    wrong = sum(1 for _, bad in ranked if bad)
    if not wrong:
        return 0.0, 0
    tenth = max(1, len(ranked) // 10)
    return sum(1 for _, bad in ranked[:tenth] if bad) / wrong, wrong


def degrade(image, blur: float = 1.2, noise: float = 20.0, seed: int = 0):
    """A poor scan of `image`: blurred, greyed (contrast 0.7) and speckled with Gaussian noise of `noise` levels."""
    import numpy as np
    from PIL import Image, ImageFilter

    soft = image.filter(ImageFilter.GaussianBlur(blur))
    a = np.asarray(soft, dtype=float) * 0.7 + 50 + np.random.default_rng(seed).normal(0, noise, soft.size[::-1])
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))

"""Extraction speed and peak memory per format, on files of realistic size written here with each format's own
library: a 100-page report in Word and in OpenDocument, a 50-slide deck in both, a 100,000-row sheet in Excel
and as CSV, a 20,000-row OpenDocument sheet, a saved web page, a 20-chapter e-book, a 1,000-message mailbox,
and a 100-page PDF (today's reader, the yardstick: no format should be slower per character).

Each file is read in a process of its own, three times; the best time counts, and the peak memory is the
process's resident peak above what it held after importing the reader.

    .venv/bin/python bench/formats.py            # prints a Markdown table (docs/benchmarks.md)
    .venv/bin/python bench/formats.py --keep DIR # and keeps the files written
"""

from __future__ import annotations

import argparse
import json
import mailbox
import random
import resource
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ("the report shows that water use in the district rose by a fifth over the year while the budget for "
         "repairs stayed flat and the council asked for new meters in every building before the winter").split()


def sentence(rng: random.Random, n: int = 18) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(5))


def write_docx(path: Path, pages: int = 100) -> int:
    import docx

    rng, d = random.Random(1), docx.Document()
    for p in range(pages):
        d.add_heading(f"Chapter {p + 1}", level=1 if p % 10 == 0 else 2)
        for _ in range(4):
            d.add_paragraph(paragraph(rng))
        if p % 5 == 0:
            t = d.add_table(rows=5, cols=4)
            for r in range(5):
                for c in range(4):
                    t.cell(r, c).text = f"cell {r}-{c}"
    d.save(path)
    return pages


def write_odt(path: Path, pages: int = 100) -> int:
    from odfdo import Document, Header, Paragraph

    rng, d = random.Random(1), Document("text")
    for p in range(pages):
        d.body.append(Header(1, f"Chapter {p + 1}"))
        for _ in range(4):
            d.body.append(Paragraph(paragraph(rng)))
    d.save(path)
    return pages


def write_pptx(path: Path, slides: int = 50) -> int:
    from pptx import Presentation

    rng, deck = random.Random(1), Presentation()
    for i in range(slides):
        s = deck.slides.add_slide(deck.slide_layouts[1])
        s.shapes.title.text = f"Topic {i + 1}"
        s.placeholders[1].text = "\n".join(sentence(rng, 10) for _ in range(5))
        s.notes_slide.notes_text_frame.text = paragraph(rng)
    deck.save(path)
    return slides


def write_odp(path: Path, slides: int = 50) -> int:
    from odfdo import Document, DrawPage, Frame

    rng, d = random.Random(1), Document("presentation")
    d.body.clear()  # the template's empty first slide
    for i in range(slides):
        page = DrawPage(f"p{i}", name=f"p{i}")
        page.append(Frame.text_frame(f"Topic {i + 1}", size=("20cm", "3cm"), position=("2cm", "1cm"),
                                     presentation_class="title"))
        page.append(Frame.text_frame(paragraph(rng), size=("20cm", "10cm"), position=("2cm", "5cm")))
        d.body.append(page)
    d.save(path)
    return slides


def write_xlsx(path: Path, rows: int = 100_000) -> int:
    # XlsxWriter, as Excel saves a workbook: text in the shared strings table (openpyxl's write-only mode writes
    # every string inline, which no spreadsheet program does and which costs openpyxl's reader twice the time).
    import xlsxwriter

    rng = random.Random(1)
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Ledger")
    money, share = wb.add_format({"num_format": "#,##0.00"}), wb.add_format({"num_format": "0.0%"})
    ws.write_row(0, 0, ["Date", "Account", "Description", "Amount", "Share", "Paid"])
    for i in range(rows):
        ws.write_string(i + 1, 0, f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}")
        ws.write_string(i + 1, 1, f"ACC-{rng.randint(1000, 9999)}")
        ws.write_string(i + 1, 2, " ".join(rng.choice(WORDS) for _ in range(4)))
        ws.write_number(i + 1, 3, round(rng.uniform(1, 2000), 2), money)
        ws.write_number(i + 1, 4, rng.random(), share)
        ws.write_string(i + 1, 5, "yes" if i % 3 else "no")
    wb.close()
    return rows


def write_ods(path: Path, rows: int = 20_000) -> int:
    from odfdo import Document, Table

    rng, d = random.Random(1), Document("spreadsheet")
    t = Table("Ledger")
    t.set_values([["Date", "Account", "Description", "Amount"]] +
                 [[f"2024-{1 + i % 12:02d}-01", f"ACC-{rng.randint(1000, 9999)}",
                   " ".join(rng.choice(WORDS) for _ in range(4)), round(rng.uniform(1, 2000), 2)] for i in range(rows)])
    d.body.clear()
    d.body.append(t)
    d.save(path)
    return rows


def write_csv(path: Path, rows: int = 100_000) -> int:
    rng = random.Random(1)
    lines = ["Date;Account;Description;Amount"] + [
        f"2024-{1 + i % 12:02d}-01;ACC-{rng.randint(1000, 9999)};{' '.join(rng.choice(WORDS) for _ in range(4))};"
        f"{rng.uniform(1, 2000):.2f}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rows


def write_html(path: Path, sections: int = 40) -> int:
    rng = random.Random(1)
    body = "".join(f"<h2>Part {i + 1}</h2>" + "".join(f"<p>{paragraph(rng)}</p>" for _ in range(4))
                   for i in range(sections))
    path.write_text(f"<html><head><title>Long article</title></head><body><nav><a href='/'>Home</a></nav>"
                    f"<article><h1>Long article</h1>{body}</article><footer>Copyright</footer></body></html>",
                    encoding="utf-8")
    return sections


def write_epub(path: Path, chapters: int = 20) -> int:
    from ebooklib import epub

    rng, book = random.Random(1), epub.EpubBook()
    book.set_identifier("bench")
    book.set_title("Bench book")
    book.set_language("en")
    items = []
    for i in range(chapters):
        c = epub.EpubHtml(title=f"Chapter {i + 1}", file_name=f"c{i}.xhtml", lang="en")
        c.content = f"<html><body><h1>Chapter {i + 1}</h1>" + "".join(f"<p>{paragraph(rng)}</p>" for _ in range(25)) \
            + "</body></html>"
        book.add_item(c)
        items.append(c)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = items
    epub.write_epub(str(path), book)
    return chapters


def write_mbox(path: Path, messages: int = 1000) -> int:
    rng, box = random.Random(1), mailbox.mbox(path)
    for i in range(messages):
        m = EmailMessage()
        m["Subject"], m["From"], m["To"] = f"Update {i}", f"Person {i % 40} <p{i % 40}@example.org>", "me@example.org"
        m["Date"] = f"Tue, {1 + i % 28:02d} May 2024 09:{i % 60:02d}:00 +0000"
        m.set_content(paragraph(rng) + "\n\n" + paragraph(rng))
        box.add(m)
    box.flush()
    box.close()
    return messages


def write_pdf(path: Path, pages: int = 100) -> int:
    import pymupdf

    rng, doc = random.Random(1), pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 523, 770), "\n\n".join(paragraph(rng) for _ in range(4)), fontsize=11)
    doc.save(path)
    return pages


FILES = [("report.docx", write_docx, "pages"), ("report.odt", write_odt, "pages"), ("deck.pptx", write_pptx, "slides"),
         ("deck.odp", write_odp, "slides"), ("ledger.xlsx", write_xlsx, "rows"), ("ledger.ods", write_ods, "rows"),
         ("ledger.csv", write_csv, "rows"), ("article.html", write_html, "sections"),
         ("book.epub", write_epub, "chapters"), ("mail.mbox", write_mbox, "messages"), ("report.pdf", write_pdf, "pages")]


def one(path: Path) -> dict:
    """Read one file three times in this process: the best time, and the resident peak over the import's."""
    from rag.reading.extract import _reader, extract, kind_of

    _reader(kind_of(path.name))  # the reader's import is not the reading
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        doc = extract(path, max_chars=50_000_000, max_pages=100_000)
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": min(times), "chars": len(doc.text), "peak_mb": (peak - base) / 1024, "bytes": path.stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-formats-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, write, unit in FILES:
        units = write(folder / name)
        out = json.loads(subprocess.run([sys.executable, __file__, "--one", str(folder / name)], check=True,
                                        capture_output=True, text=True).stdout)
        rows.append((name, units, unit, out))
    pdf = next(o for n, _, _, o in rows if n.endswith(".pdf"))
    pdf_rate = pdf["chars"] / pdf["seconds"]
    print("| file | size | read in | per second | characters/s | vs PDF per character | peak memory |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, units, unit, o in rows:
        rate = o["chars"] / o["seconds"]
        print(f"| {name} ({units:,} {unit}) | {o['bytes'] / 1e6:.1f} MB | {o['seconds']:.2f} s | "
              f"{units / o['seconds']:,.0f} {unit} | {rate:,.0f} | {rate / pdf_rate:.1f}× | {o['peak_mb']:.0f} MB |")


if __name__ == "__main__":
    main()

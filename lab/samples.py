"""A folder of one small document per format the app reads, each written with its format's own library, and
a question per document with where its answer sits: for the readers' end-to-end tests, the browser tests and
a person's first try (`python -m lab.samples FOLDER`).

Each document holds one fact no other one does, so a question about it has one right passage:

>>> sorted(SAMPLES)[:3]
['budget.xlsx', 'club.mbox', 'contacts.csv']
>>> SAMPLES["budget.xlsx"].question
'How much was the rent in March?'

What it does not do: measure anything (tests/test_formats.py and bench/formats.py do), or write large files
(bench/formats.py writes those).
"""

from __future__ import annotations

import mailbox
import sys
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path


@dataclass(frozen=True)
class Sample:
    question: str
    quote: str  # words the cited passage holds
    locator: str  # what the citation's locator starts with or holds


SAMPLES: dict[str, Sample] = {
    "letter.docx": Sample("How much did the boiler repair cost?", "340 euros", "Heating repair"),
    "minutes.odt": Sample("How many apple trees will the committee plant?", "forty apple trees", "Decisions"),
    "lighthouse.html": Sample("When did the lighthouse keepers log the weather?", "logged the weather at midnight",
                              "The keepers"),
    "voyage.epub": Sample("What cargo did the fishing boat Esperança bring back?", "cargo of sardines",
                          "The harbour"),
    "course.pptx": Sample("How much does the final exam count towards the grade?", "60 percent", "slide 4"),
    "volcanoes.odp": Sample("When did Mount Fogo last erupt?", "November 2014", "slide 3"),
    "budget.xlsx": Sample("How much was the rent in March?", "Month: March | Rent: 850", "Budget!A"),
    "travel.ods": Sample("How much did the train ticket to Porto cost?", "Porto", "Travel!A"),
    "contacts.csv": Sample("What is the phone number of the piano teacher?", "piano teacher", "contacts!A"),
    "readings.tsv": Sample("What was the water meter reading in June?", "Month: June", "readings!A"),
    "plumber.eml": Sample("When will the plumber come to replace the kitchen tap?", "Thursday at 9",
                          'message "Plumber visit'),
    "club.mbox": Sample("Which book will the book club read next?", "Os Maias", 'message "Book club'),
}

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def write_docx(path: Path) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = "Letter to the landlord"
    d.add_heading("Heating repair", level=1)
    d.add_paragraph("The boiler in the flat at Rua das Flores 45 stopped heating water in January. It was repaired "
                    "on 12 February by Caldeiras Lima, and the repair cost 340 euros, invoice attached.")
    d.add_heading("Next steps", level=2)
    d.add_paragraph("Please transfer the amount to the usual account before the end of the month.",
                    style="List Bullet")
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Item", "Cost"), ("Labour", "200 euros"), ("Parts", "140 euros")]):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    d.add_paragraph("With kind regards, Marta")
    d.save(path)


def write_odt(path: Path) -> None:
    from odfdo import Document, Header, Paragraph

    d = Document("text")
    d.meta.title = "Garden committee minutes"
    body = d.body
    body.append(Header(1, "Decisions"))
    body.append(Paragraph("The committee agreed to plant forty apple trees along the northern fence in April, "
                          "paid from the spring fund."))
    body.append(Header(1, "Other business"))
    body.append(Paragraph("The compost bins will be emptied on the first Saturday of every month."))
    d.save(path)


def write_html(path: Path) -> None:
    path.write_text("""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Life on the Berlengas</title>
<script>document.write("tracking pixel loaded")</script></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop our souvenirs</a></li><li><a href="/about">About us</a></li></ul></nav>
<div class="cookie-banner">We use cookies to improve your experience. Accept all cookies or manage preferences.</div>
<article><h1>Life on the Berlengas</h1>
<p>The Berlengas are a small archipelago off the coast of Peniche, reached by boat in about forty minutes.</p>
<h2>The keepers</h2>
<p>Lighthouse keepers on the island lit the lamp every evening at sunset and logged the weather at midnight,
writing the wind and the state of the sea in a bound book.</p>
<p>Supplies came by boat once a week, weather permitting, and in winter the keepers often waited a month.</p>
<h2>The fort</h2><p>The fort of São João Baptista was built in the seventeenth century on a rock joined to the
island by a narrow bridge.</p>
<img src="http://example.invalid/track.gif"></article>
<footer>Copyright 2024 Island Stories Ltd. All rights reserved. Privacy policy. Terms of use.</footer>
</body></html>""", encoding="utf-8")


def write_epub(path: Path) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("sample-voyage")
    book.set_title("A voyage home")
    book.set_language("en")
    book.add_author("A. Writer")
    chapters = [("The departure", "<p>The crew left Nazaré at dawn, with the nets mended and the hold empty.</p>"),
                ("The harbour", "<p>The fishing boat Esperança returned to the harbour with a cargo of sardines "
                                "just before the storm broke over the bay.</p>"),
                ("The storm", "<p>The storm lasted three days, and no boat left the harbour until it passed.</p>")]
    items = []
    for i, (title, body) in enumerate(chapters, start=1):
        c = epub.EpubHtml(title=title, file_name=f"chap_{i}.xhtml", lang="en")
        c.content = f"<html><body><h1>{title}</h1>{body}</body></html>"
        book.add_item(c)
        items.append(c)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(path), book)


def write_pptx(path: Path) -> None:
    from pptx import Presentation

    deck = Presentation()
    deck.core_properties.title = "Statistics 101"
    slides = [("Statistics 101", "Autumn term"), ("Lectures", "Tuesdays and Thursdays at 10 in room B2"),
              ("Reading", "Chapters 1 to 6 of the course book"),
              ("Grading", "The final exam counts for 60 percent of the grade; the project counts for 40 percent."),
              ("Office hours", "Wednesdays from 2 to 4 pm")]
    for i, (title, text) in enumerate(slides):
        s = deck.slides.add_slide(deck.slide_layouts[0 if i == 0 else 1])
        s.shapes.title.text = title
        s.placeholders[1].text = text
        if title == "Grading":
            s.notes_slide.notes_text_frame.text = "Remind them that the project is done in pairs."
    deck.save(path)


def write_odp(path: Path) -> None:
    from odfdo import Document, DrawPage, Frame

    d = Document("presentation")
    d.body.clear()  # the template's empty first slide
    d.meta.title = "Islands of fire"
    for i, (title, text) in enumerate([("Islands of fire", "A short tour of Cape Verde's volcanoes"),
                                       ("Santo Antão", "Green valleys carved into old craters"),
                                       ("Volcanoes", "Mount Fogo last erupted in November 2014 and destroyed two "
                                                     "villages in its crater.")], start=1):
        page = DrawPage(f"page{i}", name=f"page{i}")
        page.append(Frame.text_frame(title, size=("20cm", "3cm"), position=("2cm", "1cm"), presentation_class="title"))
        page.append(Frame.text_frame(text, size=("20cm", "10cm"), position=("2cm", "5cm")))
        d.body.append(page)
    d.save(path)


def write_xlsx(path: Path) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Budget"
    ws.append(["Month", "Rent", "Electricity", "Water", "Internet", "Paid"])
    for i, month in enumerate(MONTHS):
        ws.append([month, 850 if i < 6 else 900, 40 + i, 18, 30, "yes" if i < 11 else "no"])
    notes = wb.create_sheet("Notes")
    notes.append(["Note"])
    notes.append(["The rent rose in July, as the lease allows once a year."])
    wb.save(path)


def write_ods(path: Path) -> None:
    from odfdo import Document, Table

    d = Document("spreadsheet")
    t = Table("Travel")
    t.set_values([["Date", "Trip", "Cost"], ["2024-03-02", "Train ticket to Porto", "32 euros"],
                  ["2024-03-09", "Bus to Braga", "9 euros"], ["2024-04-12", "Flight to Madeira", "120 euros"]])
    d.body.clear()
    d.body.append(t)
    d.save(path)


def write_csv(path: Path) -> None:
    rows = ["Name;Role;Phone;City", "Joana Reis;piano teacher;912 345 678;Lisboa", "Rui Matos;dentist;213 456 789;Porto",
            "Inês Faria;plumber;934 111 222;Coimbra"]
    path.write_bytes("\n".join(rows).encode("cp1252") + b"\n")


def write_tsv(path: Path) -> None:
    rows = ["Month\tWater meter\tGas meter"] + [f"{m}\t{1200 + 11 * i}\t{300 + 7 * i}" for i, m in enumerate(MONTHS)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def message(subject: str, sender: str, to: str, body: str, date: str = "Tue, 07 May 2024 09:15:00 +0100") -> EmailMessage:
    m = EmailMessage()
    m["Subject"], m["From"], m["To"], m["Date"] = subject, sender, to, date
    m.set_content(body)
    return m


def write_eml(path: Path) -> None:
    m = message("Plumber visit on Thursday", "Ana Costa <ana@example.org>", "marta@example.org",
                "Hi Marta,\n\nThe plumber will come on Thursday at 9 in the morning to replace the kitchen tap. "
                "Please leave the key with the neighbour.\n\nAna")
    path.write_bytes(bytes(m))


def write_mbox(path: Path) -> None:
    box = mailbox.mbox(path)
    for subject, body in [("Book club: next title", "We voted, and the next book will be Os Maias by Eça de "
                                                    "Queirós. We meet on the last Friday of the month."),
                          ("Cinema on Sunday", "Shall we see the new documentary about the Tagus estuary?"),
                          ("Recipe", "The soup needs two leeks, four potatoes and a handful of coriander.")]:
        box.add(message(subject, "Rita <rita@example.org>", "club@example.org", body))
    box.flush()
    box.close()


WRITERS = {"letter.docx": write_docx, "minutes.odt": write_odt, "lighthouse.html": write_html,
           "voyage.epub": write_epub, "course.pptx": write_pptx, "volcanoes.odp": write_odp,
           "budget.xlsx": write_xlsx, "travel.ods": write_ods, "contacts.csv": write_csv, "readings.tsv": write_tsv,
           "plumber.eml": write_eml, "club.mbox": write_mbox}


def write_all(folder: Path) -> dict[str, Sample]:
    """Write every sample into `folder`; returns the samples by file name."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, write in WRITERS.items():
        write(folder / name)
    return SAMPLES


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "samples")
    write_all(out)
    for name, s in SAMPLES.items():
        print(f"{name:16} {s.question}")

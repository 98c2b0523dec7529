"""Every format the app reads, end to end: a folder of one document per format (written by each format's own
library, lab/samples.py), indexed by the real engine and model into a real Chroma store; a question per document
answered from the right passage with the right locator, and the viewer opening each citation at exactly the
quoted passage. Then a folder of bad inputs, each failed with its own reason while the rest indexes.
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lab.samples import SAMPLES, write_all, write_docx, write_pptx, write_xlsx

ROOT = Path(__file__).resolve().parent.parent


def passages(engine, path: str) -> str:
    """The indexed passages of a document, as the indexer cuts them (the same reader, the same chunker)."""
    from rag.indexing.chunk import chunk_document
    from rag.reading.extract import extract

    return " ".join(c.content for c in chunk_document(extract(engine.folder / path), "d", engine.indexer.strategy))


@pytest.fixture(scope="module")
def formats_engine(tmp_path_factory, embedder):
    import rag

    folder = tmp_path_factory.mktemp("formats") / "docs"
    write_all(folder)
    settings = rag.load_settings(config=folder / "none.toml", env={}, folder=folder,
                                 index_dir=tmp_path_factory.mktemp("formats-index"))
    engine = rag.Engine(settings, embedder=embedder)
    report = engine.sync()
    yield engine, report
    engine.close()


def test_every_format_is_indexed(formats_engine):
    engine, report = formats_engine
    status = {o.path: (o.status, o.reason) for o in report.outcomes}
    assert {name: s for name, s in status.items() if s[0] != "indexed"} == {}
    assert set(status) == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_question_per_format_is_answered_from_its_passage_and_opened_at_it(formats_engine, name):
    engine, _ = formats_engine
    sample = SAMPLES[name]
    turn = engine.ask(sample.question, threshold=0.9)
    assert turn.gated.citations, (name, [(c.doc_name, c.distance) for c in turn.gated.candidates[:4]])
    first = turn.gated.citations[0]
    assert first.doc_name == name, (name, [(c.doc_name, c.locator) for c in turn.gated.citations])
    assert sample.quote in first.quote, (name, first.quote)
    assert sample.locator in first.locator, (name, first.locator)
    located = engine.locate(first.doc_name, first.start, first.end, version=first.version)
    assert not located.problem, located.problem
    assert located.quote == first.quote  # canonical[start:end] is the quote, in every format
    if name.endswith((".xlsx", ".ods", ".csv", ".tsv")):
        assert located.place == first.locator.split(" · ")[0]
        cited = [p for p in located.rows if p.start < first.end and p.end > first.start]
        assert cited and all(p.label == located.place.split("!")[0].strip("'") for p in cited)
    if name.endswith((".pptx", ".odp", ".eml", ".mbox")):
        a, b = located.region
        assert a <= first.start < first.end <= b and located.place in first.locator


def test_the_rent_in_march_is_quoted_with_its_header_and_its_range(formats_engine):
    engine, _ = formats_engine
    turn = engine.ask("How much was the rent in March?", threshold=0.9)
    first = turn.gated.citations[0]
    assert "Month: March | Rent: 850" in first.quote
    located = engine.locate(first.doc_name, first.start, first.end)
    march = next(p for p in located.rows if p.cells[0] == "March")
    assert march.row == 4 and first.locator.startswith("Budget!A")
    top, bottom = first.locator.split("!A")[1].split(":")
    assert int(top) <= 4 <= int(bottom[1:]) and bottom.startswith("F")


def test_a_saved_pages_menu_banner_and_footer_are_in_no_passage(formats_engine):
    engine, _ = formats_engine
    text = passages(engine, "lighthouse.html")
    for boilerplate in ("Shop our souvenirs", "We use cookies", "All rights reserved", "tracking pixel"):
        assert boilerplate not in text
    for paragraph in ("reached by boat in about forty minutes", "logged the weather at midnight",
                      "built in the seventeenth century"):
        assert paragraph in text


def _bad_inputs(folder: Path) -> dict[str, str]:
    """Bad files, each with words its reason must hold."""
    from msoffcrypto.format.ooxml import OOXMLFile

    folder.mkdir(parents=True, exist_ok=True)
    write_docx(folder / "plain.docx")
    with open(folder / "plain.docx", "rb") as src, open(folder / "locked.docx", "wb") as out:
        OOXMLFile(src).encrypt("secret", out)
    (folder / "plain.docx").unlink()
    write_xlsx(folder / "whole.xlsx")
    data = (folder / "whole.xlsx").read_bytes()
    (folder / "cut.xlsx").write_bytes(data[: len(data) // 2])
    (folder / "whole.xlsx").unlink()
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        with z.open("ppt/slides/slide1.xml", "w", force_zip64=True) as member:
            zeros = b"\0" * (1 << 20)
            for _ in range(600):
                member.write(zeros)
    (folder / "bomb.pptx").write_bytes(bomb.getvalue())
    (folder / "report.docx").write_bytes(b"%PDF-1.4\n% a PDF wearing a Word name\n")
    (folder / "old.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504)
    (folder / "page.html").write_text("<html><head><title>Hi</title><script>alert('run')</script></head><body>"
                                      "<p>The community garden opens at eight on Saturdays, all year round.</p>"
                                      "<img src='http://example.invalid/a.png'></body></html>", encoding="utf-8")
    (folder / "good.md").write_text("# Notes\n\nThe library closes at six on Fridays.\n", encoding="utf-8")
    # Scans: a JPEG cut in half, an image whose header claims 40,000 × 40,000 pixels, a photo with no text.
    from PIL import Image

    from tests.unit.ocr_pages import EN, render
    from tests.unit.test_read_ocr import _png_header

    photo = io.BytesIO()
    render(EN[:1], dpi=150).save(photo, "JPEG", quality=80)
    (folder / "cut.jpg").write_bytes(photo.getvalue()[: len(photo.getvalue()) // 2])
    (folder / "huge.png").write_bytes(_png_header(40000, 40000))
    Image.new("RGB", (400, 300), (120, 160, 200)).save(folder / "sky.png")
    return {"locked.docx": "password", "cut.xlsx": "damaged or truncated", "bomb.pptx": "zip bomb",
            "report.docx": "content is a PDF", "old.xls": "save it as .xlsx", "cut.jpg": "truncated",
            "huge.png": "megapixels: not decoded", "sky.png": "OCR found no text"}


def test_bad_inputs_each_fail_with_their_own_reason_and_the_rest_indexes(make_engine, tmp_path):
    folder = tmp_path / "bad"
    expected = _bad_inputs(folder)
    engine = make_engine(folder)
    report = engine.sync()
    status = {o.path: (o.status, o.reason) for o in report.outcomes}
    for name, words in expected.items():
        assert status[name][0] == "failed" and words in status[name][1], (name, status[name])
    assert status["good.md"][0] == "indexed" and status["page.html"][0] == "indexed"
    records = {d.path: d for d in engine.documents()}
    assert all(records[n].status == "failed" and records[n].reason for n in expected)
    chunks = passages(engine, "page.html")
    assert "opens at eight" in chunks and "alert" not in chunks and "example.invalid" not in chunks
    # `rag status` says the same, a line per file
    out = subprocess.run([sys.executable, "-m", "rag.cli", "--folder", str(folder), "--index-dir",
                          str(engine.settings.index_dir), "status"], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    for name, words in expected.items():
        line = next(line for line in out.splitlines() if f" {name} " in line)
        assert line.startswith("failed") and words in line, line
    assert "reads Markdown, Plain text, PDF, Word" in out


def test_a_macro_enabled_workbook_is_read_as_data(make_engine, tmp_path):
    folder = tmp_path / "macro"
    folder.mkdir()
    write_xlsx(folder / "plain.xlsx")
    with zipfile.ZipFile(folder / "plain.xlsx") as src, zipfile.ZipFile(folder / "budget.xlsm", "w") as out:
        for item in src.infolist():
            out.writestr(item, src.read(item))
        out.writestr("xl/vbaProject.bin", b"Attribute VB_Name = \"Module1\"\nSub AutoOpen(): Shell \"calc\": End Sub")
    (folder / "plain.xlsx").unlink()
    engine = make_engine(folder)
    report = engine.sync()
    assert [o.status for o in report.outcomes] == ["indexed"]
    turn = engine.ask("How much was the rent in March?", threshold=0.9)
    assert "Month: March | Rent: 850" in turn.gated.citations[0].quote
    assert "AutoOpen" not in passages(engine, "budget.xlsm")


def test_slides_are_cited_by_their_number(make_engine, tmp_path):
    folder = tmp_path / "deck"
    folder.mkdir()
    write_pptx(folder / "course.pptx")
    engine = make_engine(folder)
    engine.sync()
    c = engine.ask("Is the project done in pairs?", threshold=0.9).gated.citations[0]
    assert c.locator.startswith("slide 4") and "pairs" in c.quote  # speaker notes are in the slide's place


@pytest.mark.parametrize("name, sheet", [("visit.xlsx", "Budget"), ("visit.csv", "visit")])
def test_an_answer_quoting_one_row_is_cited_at_that_row(make_engine, tmp_path, name, sheet):
    """A sheet's passage holds several rows; an answer quoting one of them names that row's range on its
    citation ("Budget!A4:C4"), not the passage's ("Budget!A1:C5"). The gate's citation, the retrieval's
    passage, keeps the passage's range."""
    import openpyxl

    rows = [["Item", "Cost", "Note"], ["Entry fee", "12 euros", "paid at the gate"],
            ["Parking", "5 euros", "per car and day"], ["Guided tour", "30 euros", "booked a week ahead"],
            ["Lunch", "15 euros", "at the museum café"]]
    folder = tmp_path / "sheets"
    folder.mkdir()
    if name.endswith(".xlsx"):
        wb = openpyxl.Workbook()
        wb.active.title = sheet
        for r in rows:
            wb.active.append(r)
        wb.save(folder / name)
    else:
        (folder / name).write_text("\n".join(",".join(r) for r in rows) + "\n", encoding="utf-8")
    engine = make_engine(folder)
    engine.sync()
    turn = engine.ask("How much does the guided tour cost?", threshold=0.9)
    assert "Guided tour" in turn.answer.text and "Parking" not in turn.answer.text, turn.answer.text
    first = turn.answer.citations[0]
    assert first.place == first.locator == f"{sheet}!A4:C4", (first.place, first.locator)
    whole = turn.gated.citations[0]
    assert whole.place == f"{sheet}!A1:C5" and whole.quote == first.quote  # one passage holds every row

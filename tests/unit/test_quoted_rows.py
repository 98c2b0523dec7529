"""A sheet's passage cited at the rows its answer quotes: the rows the chunker keeps with each passage
(`Extracted.row_marks`, `Chunk.rows`), and the range they name for a part of it (`rows_place`, `quoted_place`,
`as_quoted`). Real readers and the real chunker, no model."""

from __future__ import annotations

import dataclasses
import io

import pytest

from rag.deciding.citations import Citation, as_quoted, quoted_place
from rag.indexing.chunk import chunk_document
from rag.indexing.store import chunk_metadata
from rag.reading.document import rows_place
from rag.reading.extract import extract_bytes

ROWS = [["Item", "Cost", "Note"], ["Entry fee", "12 euros", "paid at the gate"], ["Parking", "5 euros", ""],
        ["Guided tour", "30 euros", "booked a week ahead"], ["Lunch", "15 euros", "at the museum café"]]


def workbook(sheet: str, rows=ROWS) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = sheet
    for r in rows:
        wb.active.append(r)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def csv_bytes(rows=ROWS) -> bytes:
    return ("\n".join(",".join(r) for r in rows) + "\n").encode()


def citation(chunk, n: int = 1, section: str = "") -> Citation:
    locator = f"{chunk.place} · {section}" if section else chunk.place
    return Citation(n, chunk.id, "d", "visit.xlsx", "visit", locator, "", "", chunk.content, 0.2, chunk.start,
                    chunk.end, None, section=section, place=chunk.place, rows=chunk.rows)


@pytest.mark.parametrize("name, data", [("visit.xlsx", workbook("Budget")), ("visit.csv", csv_bytes()),
                                        ("q.xlsx", workbook("Q1 costs"))])
def test_each_row_of_a_passage_is_named_as_the_reader_names_it(name, data):
    doc = extract_bytes(data, name)
    [chunk] = chunk_document(doc, "d")  # every row in one passage
    assert chunk.place.endswith("!A1:C5") and len(chunk.rows.split()) == 5
    for p in doc.places:
        span = (p.start - chunk.start, p.end - chunk.start)
        assert rows_place(chunk.place, chunk.rows, *span) == doc.place_of(p.start, p.end)
        assert quoted_place(citation(chunk), *span) == doc.place_of(p.start, p.end)
    four = doc.places[3]
    assert quoted_place(citation(chunk), four.start - chunk.start + 4, four.end - chunk.start - 2) \
        == doc.place_of(four.start, four.end)  # a part of a row names the whole row
    assert quoted_place(citation(chunk), doc.places[1].start - chunk.start, four.end - chunk.start) \
        == doc.place_of(doc.places[1].start, four.end)  # rows 2 to 4
    assert doc.place_of(four.start, four.end) in ("Budget!A4:C4", "visit!A4:C4", "'Q1 costs'!A4:C4")


def test_a_row_shorter_than_the_others_keeps_its_own_last_column():
    doc = extract_bytes(workbook("Budget", [["Item", "Cost", "Note"], ["Parking", "5 euros"], ["Lunch", "15", "café"]]),
                        "b.xlsx")
    [chunk] = chunk_document(doc, "d")
    parking = doc.places[1]
    assert quoted_place(citation(chunk), parking.start - chunk.start, parking.end - chunk.start) == "Budget!A2:B2"


def test_a_passage_indexed_without_its_rows_and_other_formats_keep_their_own_place():
    doc = extract_bytes(csv_bytes(), "visit.csv")
    [chunk] = chunk_document(doc, "d")
    old = dataclasses.replace(citation(chunk), rows="")  # a passage indexed before passages kept their rows
    assert quoted_place(old, 0, 10) == "visit!A1:C5"
    md = chunk_document(extract_bytes(b"# Guide\n\nUploads stop at 50 MB.\n", "guide.md"), "d")[0]
    assert (md.place, md.rows) == ("", "") and "rows" not in chunk_metadata(md, {})
    assert chunk_metadata(chunk, {})["rows"] == chunk.rows
    assert rows_place("slide 4", "", 0, 5) == "slide 4"


def test_a_citation_is_placed_at_the_rows_its_quotes_touch_and_keeps_its_passage():
    doc = extract_bytes(workbook("Budget"), "visit.xlsx")
    [chunk] = chunk_document(doc, "d")
    tour, lunch = doc.places[3], doc.places[4]
    one, two = citation(chunk, 1, section="Costs"), citation(chunk, 2)
    out = as_quoted([one, two], [(1, tour.start - chunk.start, tour.end - chunk.start)])
    assert (out[0].place, out[0].locator) == ("Budget!A4:C4", "Budget!A4:C4 · Costs")
    assert (out[0].quote, out[0].start, out[0].end) == (one.quote, one.start, one.end)  # the passage, whole
    assert out[1] == two  # nothing of it quoted
    both = as_quoted([one], [(1, tour.start - chunk.start, tour.end - chunk.start),
                             (1, lunch.start - chunk.start, lunch.end - chunk.start)])
    assert both[0].place == "Budget!A4:C5"

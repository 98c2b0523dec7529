"""The viewer: a citation's passage located exactly in its document (real PDFs written here with pymupdf,
real Markdown, the real engine and model), read back from the page to check the marks, refused paths,
a file changed since indexing; and the viewer page through AppTest.
"""

from __future__ import annotations

import html
import re
import unicodedata
from pathlib import Path

import pymupdf
import pytest
from streamlit.testing.v1 import AppTest

from app import ui
from rag import ViewerError
from rag.reading.pdf import text_flags

ROOT = Path(__file__).resolve().parent.parent
VIEWER = str(ROOT / "app" / "pages" / "viewer.py")

TIDE = "The lighthouse keeper of Ponta Azul logs the tide at 04:40 every morning."
SPAN_END = "Its lamp was electrified in 1931, and the keeper's cottage became a museum."
SPAN_START = "The tower stands on a granite spur above the harbour."


def squash(text: str) -> str:
    return " ".join(text.split())


def two_page_pdf() -> bytes:
    doc = pymupdf.open()
    p1 = doc.new_page()
    p1.insert_text((72, 72), "Field notes on coastal stations.", fontsize=11)
    p1.insert_text((72, 100), "The harbour office opens at nine.", fontsize=11)
    p1.insert_text((72, 760), SPAN_START, fontsize=11)  # the last line of page 1 ...
    p2 = doc.new_page()
    p2.insert_text((72, 72), SPAN_END, fontsize=11)  # ... and the first of page 2: one passage, two pages
    p2.insert_text((72, 140), TIDE, fontsize=11)
    doc.set_toc([[1, "Ponta Azul", 1]])  # one section over both pages (without an outline, each page is one)
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture
def indexed(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ponta-azul.pdf").write_bytes(two_page_pdf())
    (folder / "guide.md").write_text("# Guide\n\n## Uploads\n\nDrop files in the sidebar.\n\n## Limits\n\n"
                                     "A single upload may be at most 50 MB, and a PDF at most 2,000 pages.\n",
                                     encoding="utf-8")
    engine = make_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    return engine


def chunk_holding(engine, text: str):
    return next(c for c in engine.snapshot.chunks if squash(text) in squash(c.content))


def read_back(data: bytes, marks) -> str:
    """The text under each highlight rectangle, read from the page by pymupdf, in order."""
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return squash(" ".join(doc[m.page - 1].get_textbox(pymupdf.Rect(r)) for m in marks for r in m.rects))


def test_pdf_marks_are_exactly_the_quoted_characters_on_both_pages(indexed):
    c = chunk_holding(indexed, SPAN_END)
    assert squash(SPAN_START) in squash(c.content)  # the chunk runs across the page break
    located = indexed.locate("ponta-azul.pdf", int(c.meta["start"]), int(c.meta["end"]))
    assert not located.problem and located.quote == c.content
    assert [m.page for m in located.marks] == [1, 2]
    assert read_back(indexed.document_bytes("ponta-azul.pdf"), located.marks) == squash(c.content)
    # A single sentence inside it: its own characters only, not its neighbours'.
    s = c.content.index("granite")
    located = indexed.locate("ponta-azul.pdf", int(c.meta["start"]) + s, int(c.meta["start"]) + s + len("granite spur"))
    assert [m.page for m in located.marks] == [1] and len(located.marks[0].rects) == 1
    assert read_back(indexed.document_bytes("ponta-azul.pdf"), located.marks) == "granite spur"


DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
TYPESET = [  # as LaTeX output holds them: ligature glyphs, accents as combining marks, a Greek question mark
    "The classi\ufb01cation of estuary \ufb02ows depends on the tide and the e\ufb00ect of the wind.",
    "Le cafe\u0301 du port ouvre a\u0300 six heures\u037e the ferry waits for it.",
    "Each o\ufb03ce keeps its own \ufb01les of the crossings.",
]


def typeset_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="dv", fontfile=str(DEJAVU))  # a font that has the ligature glyphs
    for i, line in enumerate(TYPESET):
        page.insert_text((72, 72 + 60 * i), line, fontname="dv", fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


def test_a_typeset_pdf_is_searched_by_the_words_people_type_and_every_passage_is_marked(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "estuary.pdf").write_bytes(typeset_pdf())
    engine = make_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    chunks = list(engine.snapshot.chunks)  # the folder holds this one PDF
    assert chunks
    assert not any(re.search("[\ufb00-\ufb06]", c.content) for c in chunks)  # no ligature character left
    text = " ".join(c.content for c in chunks)
    assert all(w in text for w in ("classification", "flows", "effect", "office", "files", "café", "à", "heures;"))
    top = engine.search("classification of flows").candidates[0]
    assert top.doc_name == "estuary.pdf" and top.bm25_rank == 1  # the typed word matches the printed one
    data = engine.document_bytes("estuary.pdf")
    for c in chunks:  # the viewer marks every passage: its text is the extractor's, character for character
        located = engine.locate("estuary.pdf", int(c.meta["start"]), int(c.meta["end"]))
        assert not located.problem and located.quote == c.content
        printed = unicodedata.normalize("NFKC", read_back(data, located.marks))  # the page prints the glyphs
        assert printed == unicodedata.normalize("NFKC", squash(c.content))


def test_markdown_passage_is_the_quote_with_its_section(indexed):
    c = chunk_holding(indexed, "50 MB")
    located = indexed.locate("guide.md", int(c.meta["start"]), int(c.meta["end"]))
    assert located.quote == c.content and located.section == "Limits" and located.marks == []
    assert located.fragment == f"#char={c.meta['start']},{c.meta['end']}"


@pytest.mark.parametrize("path", ["../guide.md", "/etc/passwd", "docs/../guide.md", "missing.md", "", "guide.md\x00"])
def test_paths_that_are_not_documents_of_the_folder_are_refused(indexed, path):
    with pytest.raises(ViewerError, match="not a document of this folder"):
        indexed.locate(path, 0, 5)
    with pytest.raises(ViewerError):
        indexed.document_bytes(path)


def test_a_range_outside_the_text_is_refused(indexed):
    with pytest.raises(ViewerError, match="not in guide.md"):
        indexed.locate("guide.md", 10, 10_000_000)


def test_a_file_changed_since_indexing_is_not_marked(indexed):
    c = chunk_holding(indexed, "50 MB")
    (indexed.folder / "guide.md").write_text("# Guide\n\nEverything was rewritten.\n", encoding="utf-8")
    located = indexed.locate("guide.md", int(c.meta["start"]), int(c.meta["end"]))
    assert located.changed and "changed since it was indexed" in located.problem
    assert located.quote == "" and located.marks == []


def viewer(indexed, monkeypatch, **params) -> AppTest:
    monkeypatch.setenv("RAG_FOLDER", str(indexed.folder))
    monkeypatch.setenv("RAG_INDEX_DIR", str(indexed.settings.index_path))
    monkeypatch.setenv("RAG_CONFIG", str(indexed.folder.parent / "none.toml"))
    at = AppTest.from_file(VIEWER, default_timeout=180)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_viewer_page_marks_a_markdown_passage_and_refuses_a_path_outside(indexed, monkeypatch):
    c = chunk_holding(indexed, "50 MB")
    at = viewer(indexed, monkeypatch, doc="guide.md", start=c.meta["start"], end=c.meta["end"])
    assert not at.exception, at.exception
    body = next(h.proto.body for h in at.get("html"))
    marked = re.search(r'<mark id="rag-quote"[^>]*>(.*?)</mark>', body, re.S)
    assert marked and html.unescape(marked.group(1)) == c.content
    assert any("Limits" in cap.value for cap in at.caption)

    refused = viewer(indexed, monkeypatch, doc="../../etc/passwd", start="0", end="10")
    assert any("not a document of this folder" in e.value for e in refused.error)
    assert not refused.get("html")  # nothing served


def test_viewer_page_draws_the_pdf_page_with_the_marks(indexed, monkeypatch):
    c = chunk_holding(indexed, TIDE)
    s = int(c.meta["start"]) + c.content.index(TIDE)
    at = viewer(indexed, monkeypatch, doc="ponta-azul.pdf", start=str(s), end=str(s + len(TIDE)))
    assert not at.exception, at.exception
    body = next(h.proto.body for h in at.get("html"))
    assert 'data-page="2"' in body and "data:image/png;base64," in body
    rects = [tuple(float(x) for x in r.split(",")) for r in re.findall(r'data-rect="([^"]+)"', body)]
    assert rects
    with pymupdf.open(stream=indexed.document_bytes("ponta-azul.pdf"), filetype="pdf") as doc:
        assert squash(" ".join(doc[1].get_textbox(pymupdf.Rect(r)) for r in rects)) == TIDE


def test_viewer_page_says_a_changed_file_changed_and_offers_a_reindex(indexed, monkeypatch):
    c = chunk_holding(indexed, "50 MB")
    (indexed.folder / "guide.md").write_text("# Guide\n\nEverything was rewritten.\n", encoding="utf-8")
    at = viewer(indexed, monkeypatch, doc="guide.md", start=c.meta["start"], end=c.meta["end"])
    assert not at.exception, at.exception
    assert any("changed since it was indexed" in w.value for w in at.warning)
    assert not at.get("html")  # no mark, no text: the offsets belong to the old text
    at.button(key="viewer_reindex").click().run()
    # Queued (the app's own engine over this index may already be working on it).
    assert indexed.queue.get("guide.md").state in ("queued", "extracting", "embedding", "indexed")


def test_a_citation_from_an_earlier_version_is_not_marked_in_the_new_text(indexed, monkeypatch):
    # A user trial: an old answer's link into garden.md, after the file was edited and indexed again, marked
    # the same character range of the new text (spilling into the next heading) beside a quote the page no
    # longer held. The link carries the quoted version; the viewer compares it with the indexed one.
    turn = indexed.ask("How large may a single upload be?", threshold=1.0)
    cited = next(c for c in turn.gated.citations if c.doc_name == "guide.md")
    record = indexed.document("guide.md")
    assert cited.version == record.content_hash
    params = ui.viewer_params(cited)
    assert params["v"] == record.content_hash[:ui.VERSION_CHARS]
    now = indexed.locate("guide.md", cited.start, cited.end, version=params["v"])
    assert now.quote == cited.quote and not now.outdated and not now.problem

    (indexed.folder / "guide.md").write_text(
        "# Guide\n\n## Uploads\n\nDrop files in the sidebar, or attach them to a question.\n\n## Limits\n\n"
        "A single upload may be at most 80 MB.\n", encoding="utf-8")
    indexed.sync()
    assert indexed.document("guide.md").content_hash != record.content_hash  # indexed again
    old = indexed.locate("guide.md", cited.start, cited.end, version=params["v"])
    assert old.outdated and "changed since this answer quoted it" in old.problem
    assert old.quote == "" and old.marks == []
    at = viewer(indexed, monkeypatch, doc="guide.md", start=str(cited.start), end=str(cited.end), v=params["v"])
    assert not at.exception, at.exception
    assert any("changed since this answer quoted it" in w.value for w in at.warning)
    assert any("Ask the question again" in c.value for c in at.caption)
    assert not at.get("html")  # nothing marked


def test_a_failed_document_is_named_as_failed_with_its_reason(indexed):
    (indexed.folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf" + bytes(range(256)))
    indexed.sync()
    assert next(d for d in indexed.documents() if d.path == "broken.pdf").status == "failed"
    with pytest.raises(ViewerError, match=r"'broken.pdf' could not be indexed \(.+\); nothing is shown"):
        indexed.locate("broken.pdf", 0, 5)


PAPER = ROOT / "tests" / "fixtures" / "pdf" / "two-column-paper.pdf"  # LaTeX's output: see its .tex


def test_a_latex_two_column_paper_is_found_by_typed_words_and_every_passage_is_marked(make_engine, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "paper.pdf").write_bytes(PAPER.read_bytes())
    engine = make_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    chunks = list(engine.snapshot.chunks)  # the folder holds this one PDF
    assert len(chunks) > 15
    top = engine.search("lightweight classification head").candidates[0]  # "classiﬁcation" on the page
    assert top.bm25_rank == 1 and "classification head" in top.content
    data = engine.document_bytes("paper.pdf")
    unmarked = re.compile(r"[\s|-]")  # the extractor's cell gaps, and a line-end hyphen it dropped
    with pymupdf.open(stream=data, filetype="pdf") as pdf:  # read back as the extractor reads (the equation's
        pages = [(p, p.get_textpage(flags=text_flags())) for p in pdf]  # sum signs read differently otherwise)
        for c in chunks:  # both columns, the footnotes, the table: each passage marked, character for character
            located = engine.locate("paper.pdf", int(c.meta["start"]), int(c.meta["end"]))
            assert not located.problem and located.quote == c.content
            printed = " ".join(pages[m.page - 1][0].get_textbox(pymupdf.Rect(r), textpage=pages[m.page - 1][1])
                               for m in located.marks for r in m.rects)
            printed, quoted = unmarked.sub("", printed), unmarked.sub("", c.content)
            if "∈" in quoted:  # the equation: its stacked lines' rectangles overlap, so each reads some twice
                assert set(quoted) <= set(printed), c.content
            else:
                assert printed == quoted, c.content
    quote = "the first R-CNN classified warped proposals"  # its hyphen kept at a line's end: marked on both lines
    c = chunk_holding(engine, quote)
    at = int(c.meta["start"]) + c.content.index(quote)
    located = engine.locate("paper.pdf", at, at + len(quote))
    assert [m.page for m in located.marks] == [1] and len(located.marks[0].rects) == 2
    assert read_back(data, located.marks) == quote

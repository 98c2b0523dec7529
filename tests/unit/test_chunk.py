"""rag/indexing/chunk.py on hand-made documents: strategies, headers, spans and sentences, no model."""

from __future__ import annotations

import pytest

from rag.indexing.chunk import (HEADER_MAX, chunk_document, header_for, paragraphs, prose_sentences, sentences, strategy,
                       unwrap)
from rag.reading.document import Extracted, Section

STRATEGY_NAMES = list("ABCDEF")


def doc(text: str, sections: list[Section] | None = None, title: str = "Guide",
        page_starts: list[int] | None = None) -> Extracted:
    """A document as the extractor would give it, made by hand: one untitled section by default."""
    return Extracted(name="guide.md", kind="md", title=title, text=text,
                     sections=sections if sections is not None else [Section(0, len(text), ())],
                     version="test", page_starts=page_starts or [])


def spans(text: str, found: list[tuple[int, int]]) -> list[str]:
    return [text[s:e] for s, e in found]


def test_an_unknown_strategy_lists_the_valid_names():
    with pytest.raises(ValueError, match="choose one of A, B, C, D, E, F"):
        strategy("Z")


@pytest.mark.parametrize("name", STRATEGY_NAMES)
def test_each_strategy_cuts_at_boundaries_or_blindly_with_its_header_and_overlap(name):
    how = strategy(name, budget=300)
    assert (how.boundaries, how.header, how.overlap > 0) == (name not in "AB", name in "EF", name in "BDF")
    assert how.version.endswith(f"/{name}/300")


@pytest.mark.parametrize("title, path, expected", [
    ("Guide", (), "[Guide]"),
    ("Guide", ("Limits", "Uploads"), "[Guide > Limits > Uploads]"),
    ("", ("Limits",), "[Limits]"),
    ("", (), "[]"),
    ("Manual do inquilino", ("Cláusula 3ª", "Renda"), "[Manual do inquilino > Cláusula 3ª > Renda]"),
])
def test_header_names_the_title_and_the_section_path(title, path, expected):
    assert header_for(title, path) == expected


def test_a_long_header_is_capped_by_shortening_its_longest_part():
    header = header_for("T" * 300, ("Short", "S" * 200))
    assert len(header) <= HEADER_MAX
    assert "> Short >" in header and "…" in header


@pytest.mark.parametrize("name", STRATEGY_NAMES)
@pytest.mark.parametrize("text", [
    "One line.",
    "Olá, mundo! Ça va? 日本語のテキスト。\n\nZweiter Absatz mit Umlauten: äöü.",
    "word " * 400,
    "x" * 1500,  # no space to cut at: cut at the budget
])
def test_content_is_always_the_documents_own_slice(name, text):
    chunks = chunk_document(doc(text), "d", name)
    assert chunks
    for i, c in enumerate(chunks):
        assert c.content == text[c.start:c.end]
        assert c.text.endswith(c.content)
        assert (c.id, c.index, c.doc_id) == (f"d-{i:05d}", i, "d")
        assert c.content == c.content.strip()


@pytest.mark.parametrize("name", ["A", "C", "E"])
def test_no_chunk_is_longer_than_the_budget(name):
    text = ("A sentence that goes on for a while. " * 30 + "\n\n") * 3 + "y" * 700
    for c in chunk_document(doc(text), "d", strategy(name, budget=200)):
        assert len(c.content) <= 200


def test_only_header_strategies_embed_the_section_path():
    text = "Uploads stop at 50 MB."
    d = doc(text, [Section(0, len(text), ("Limits",))])
    assert [c.text for c in chunk_document(d, "d", "E")] == ["[Guide > Limits]\n" + text]
    assert [c.text for c in chunk_document(d, "d", "C")] == [text]
    assert chunk_document(d, "d", "C")[0].section == "Limits"


def test_paragraphs_that_fit_are_packed_and_never_cut():
    paras = ["First paragraph here.", "Second one, also short.", "Third."]
    text = "\n\n".join(paras)
    assert [c.content for c in chunk_document(doc(text), "d")] == [text]
    small = strategy("E", budget=30)
    assert [c.content for c in chunk_document(doc(text), "d", small)] == paras


def test_each_section_is_chunked_apart():
    text = "Alpha text.\n\nBeta text."
    d = doc(text, [Section(0, 11, ("A",)), Section(13, len(text), ("B",))])
    assert [(c.section, c.content) for c in chunk_document(d, "d")] == [("A", "Alpha text."), ("B", "Beta text.")]


def test_rows_of_a_long_table_are_chunks_of_their_own_carrying_the_header():
    head = "| Code | Meaning |\n|---|---|"
    rows = [f"| ERR-{i:04d} | {'the upload failed because ' * 3}{i} |" for i in range(8)]
    text = head + "\n" + "\n".join(rows)
    chunks = chunk_document(doc(text), "d", strategy("E", budget=200))
    assert len(chunks) == len(rows)
    assert chunks[0].content.startswith(head)  # the first row holds the header itself
    for c, row in zip(chunks[1:], rows[1:]):
        assert c.content == row
        assert c.text == "[Guide]\n" + head + "\n" + row


def test_overlap_starts_on_a_word_and_repeats_the_end_of_the_chunk_before():
    text = " ".join(f"w{i}." for i in range(200))
    chunks = chunk_document(doc(text), "d", strategy("D", budget=100))
    assert len(chunks) > 2
    for before, after in zip(chunks, chunks[1:]):
        assert after.start < before.end  # they overlap
        assert text[after.start - 1].isspace()  # on a word's first letter


def test_pages_come_from_the_documents_page_starts():
    text = "Page one text.\n\nPage two text."
    d = doc(text, page_starts=[0, 16])
    chunks = chunk_document(d, "d", strategy("E", budget=15))
    assert [(c.page, c.page_end) for c in chunks] == [(1, 1), (2, 2)]
    assert chunk_document(doc(text), "d")[0].page is None  # a text document has no pages


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("   \n\n  ", []),
    ("One", ["One"]),
    ("Olá. Tudo bem? Sim…  Ótimo!", ["Olá.", "Tudo bem?", "Sim…", "Ótimo!"]),
    ("Line one\nLine two", ["Line one", "Line two"]),
    ("Version 2.5 is out. It works.", ["Version 2.5 is out.", "It works."]),
    ("Prof. Lima e a Sra. Costa chegaram. Depois saíram.", ["Prof. Lima e a Sra. Costa chegaram.", "Depois saíram."]),
])
def test_sentences(text, expected):
    assert spans(text, sentences(text)) == expected


def test_sentences_of_a_slice_are_offsets_in_the_whole_text():
    text = "Skip this. Keep one. Keep two."
    assert spans(text, sentences(text, 11)) == ["Keep one.", "Keep two."]


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("a\n\n\n\nb", ["a", "b"]),
    ("  padded  \n \t \n next ", ["padded", "next"]),
    ("one paragraph\nwith two lines", ["one paragraph\nwith two lines"]),
])
def test_paragraphs(text, expected):
    assert spans(text, paragraphs(text, 0, len(text))) == expected


@pytest.mark.parametrize("text, expected", [
    ("", ""),
    ("no break", "no break"),
    ("a sentence that\ngoes on", "a sentence that goes on"),
    ("Ends here.\nnext line", "Ends here.\nnext line"),  # a sentence end stays a break
    ("Heading\nNext Capitalised", "Heading\nNext Capitalised"),
    ("uma frase que\n\ncontinua", "uma frase que continua"),
])
def test_unwrap_joins_only_lines_that_wrap_a_sentence(text, expected):
    assert unwrap(text) == expected


def test_prose_sentences_keep_a_wrapped_sentence_whole():
    text = "It does not answer\nfrom weak material. Next."
    assert spans(text, prose_sentences(text)) == ["It does not answer\nfrom weak material.", "Next."]

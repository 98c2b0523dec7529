"""The e-book reader: an EPUB written by ebooklib, read back chapter by chapter in reading order."""

from __future__ import annotations

import io
import zipfile

import pytest
from ebooklib import epub

from rag.reading import ebook
from rag.reading.document import ExtractionError, Limits

CHAPTERS = [
    ("Spring", "<h1>Spring</h1><p>Sow peas in March, once the soil can be worked.</p>"
               "<h2>Seeds</h2><p>Buy fresh seed every year for the best germination.</p>"),
    ("Summer", "<h1>Summer</h1><p>Water tomatoes deeply twice a week.</p><script>document.write('x')</script>"),
    ("Autumn", "<h1>Harvest time</h1><p>Harvest squash before the first frost.</p>"),
]


def _book(path, *, toc="flat", nav=True, extra_spine=False) -> bytes:
    book = epub.EpubBook()
    book.set_identifier("garden-year-1")
    book.set_title("The Garden Year")
    book.set_language("en")
    book.add_author("Ann Gardener")
    chapters = []
    for i, (title, body) in enumerate(CHAPTERS, 1):
        c = epub.EpubHtml(title=title, file_name=f"Text/chap_{i}.xhtml", lang="en")
        c.content = body
        book.add_item(c)
        chapters.append(c)
    if toc == "nested":
        book.toc = [(epub.Section("Part One"), [chapters[0], chapters[1]]), chapters[2]]
    else:
        book.toc = [epub.Link(c.file_name, c.title, c.id) for c in chapters]
    spine = list(chapters)
    if extra_spine:  # the second half of chapter 1, in a file of its own that the contents do not list
        more = epub.EpubHtml(title="", file_name="Text/chap_1b.xhtml", lang="en")
        more.content = "<p>Thin the seedlings when they have two true leaves.</p>"
        book.add_item(more)
        spine.insert(1, more)
    book.add_item(epub.EpubNcx())
    if nav:
        book.add_item(epub.EpubNav())
        spine.insert(0, "nav")
    book.spine = spine
    epub.write_epub(str(path), book)
    return path.read_bytes()


def _read(data: bytes, name: str = "book.epub", **limits):
    doc = ebook.read(data, name, "epub", Limits(**limits))
    for s in doc.sections:
        assert doc.text[s.start:s.end].strip(), s
    return doc


def test_three_chapters_in_reading_order(tmp_path):
    doc = _read(_book(tmp_path / "b.epub"))
    assert doc.title == "The Garden Year" and doc.version == "epub-2" and doc.kind == "epub"
    assert doc.text.startswith("The Garden Year, by Ann Gardener\n\nSpring\n\n")
    sections = [(s.path, doc.text[s.start:s.end]) for s in doc.sections]
    assert sections == [
        ((), "The Garden Year, by Ann Gardener"),
        (("Spring",), "Sow peas in March, once the soil can be worked."),
        (("Spring", "Seeds"), "Buy fresh seed every year for the best germination."),
        (("Summer",), "Water tomatoes deeply twice a week."),
        # its first heading differs from its contents entry: it sits under the entry
        (("Autumn", "Harvest time"), "Harvest squash before the first frost."),
    ]
    assert doc.text.count("Spring") == 1  # neither the navigation page nor the chapter's <h1> repeats it
    assert "document.write" not in doc.text


def test_nested_contents_from_the_ncx(tmp_path):
    doc = _read(_book(tmp_path / "b.epub", toc="nested", nav=False))
    assert [s.path for s in doc.sections] == [(), ("Part One", "Spring"), ("Part One", "Spring", "Seeds"),
                                              ("Part One", "Summer"), ("Autumn", "Harvest time")]


def test_a_file_not_in_the_contents_continues_the_chapter(tmp_path):
    doc = _read(_book(tmp_path / "b.epub", extra_spine=True))
    seeds = next(s for s in doc.sections if s.path == ("Spring", "Seeds"))
    assert doc.text[seeds.start:seeds.end] == ("Buy fresh seed every year for the best germination.\n\n"
                                                "Thin the seedlings when they have two true leaves.")
    assert doc.text.index("Thin the seedlings") < doc.text.index("Summer")


def _with_member(data: bytes, name: str, content: str) -> bytes:
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a") as z:
        z.writestr(name, content)
    return out.getvalue()


def _encryption(*uris: str) -> str:
    refs = "".join(
        '<enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
        f'<enc:CipherData><enc:CipherReference URI="{u}"/></enc:CipherData></enc:EncryptedData>' for u in uris)
    return ('<?xml version="1.0"?><encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            f'xmlns:enc="http://www.w3.org/2001/04/xmlenc#">{refs}</encryption>')


def test_drm_protected_book_is_refused(tmp_path):
    data = _with_member(_book(tmp_path / "b.epub"), "META-INF/encryption.xml",
                        _encryption("EPUB/Text/chap_1.xhtml", "EPUB/Fonts/serif.otf"))
    with pytest.raises(ExtractionError) as err:
        _read(data)
    assert err.value.reason == "it is protected by DRM (encrypted content): it cannot be read"


def test_obfuscated_fonts_are_not_drm(tmp_path):
    data = _with_member(_book(tmp_path / "b.epub"), "META-INF/encryption.xml", _encryption("EPUB/Fonts/serif.otf"))
    assert "Sow peas in March" in _read(data).text


def test_bad_files_get_reasons(tmp_path):
    data = _book(tmp_path / "b.epub")
    with pytest.raises(ExtractionError) as err:
        _read(b"%PDF-1.7\n1 0 obj << >> endobj\n")
    assert "PDF" in err.value.reason and "e-book" in err.value.reason
    with pytest.raises(ExtractionError) as err:
        _read(data[: len(data) // 2])
    assert "damaged or truncated" in err.value.reason
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("notes.txt", "not a book")
    with pytest.raises(ExtractionError) as err:
        _read(plain.getvalue())
    assert "container.xml" in err.value.reason
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(broken, "w") as z:
        for m in src.infolist():
            if not m.filename.endswith(".opf"):
                z.writestr(m, src.read(m))
    with pytest.raises(ExtractionError) as err:
        _read(broken.getvalue())
    assert "damaged or not a valid e-book" in err.value.reason


def test_limits(tmp_path):
    data = _book(tmp_path / "b.epub")
    with pytest.raises(ExtractionError) as err:
        _read(data, max_chars=100)
    assert "max_chars" in err.value.reason
    with pytest.raises(ExtractionError) as err:
        _read(data, max_pages=2)
    assert "max_pages" in err.value.reason

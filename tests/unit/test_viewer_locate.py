"""rag/reading/viewer.py without an index: `locate` on a hand-written file and a hand-made library record, and the
rectangles `marks_for` draws from character boxes."""

from __future__ import annotations

import hashlib

import pytest

from rag.indexing.library import DocRecord
from rag.reading.viewer import Mark, ViewerError, locate, marks_for

TEXT = "# Guide\n\n## Limits\n\nUploads stop at 50 MB.\n"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "guide.md").write_text(TEXT, encoding="utf-8")
    return tmp_path


def record(path: str = "guide.md", text: str = TEXT) -> DocRecord:
    return DocRecord("d1", path, "md", "indexed", content_hash=hashlib.sha256(text.encode()).hexdigest(), title="Guide")


def test_a_markdown_range_is_its_quote_in_its_section(folder):
    start = TEXT.index("Uploads")
    found = locate(folder, record(), start, start + 7)
    assert (found.quote, found.section, found.problem, found.fragment) == ("Uploads", "Limits", "", f"#char={start},{start + 7}")


@pytest.mark.parametrize("start, end", [(-1, 3), (5, 5), (0, len(TEXT) + 1)])
def test_a_range_outside_the_text_is_refused(folder, start, end):
    with pytest.raises(ViewerError, match="are not in guide.md"):
        locate(folder, record(), start, end)


@pytest.mark.parametrize("path", ["../guide.md", "/etc/passwd"])
def test_a_path_outside_the_folder_is_refused(folder, path):
    with pytest.raises(ViewerError, match="is not inside the folder"):
        locate(folder, record(path), 0, 1)


def test_a_changed_file_is_not_marked(folder):
    (folder / "guide.md").write_text(TEXT + "More.\n", encoding="utf-8")
    found = locate(folder, record(), 0, 5)
    assert found.changed and found.quote == "" and "changed since it was indexed" in found.problem


def test_a_citation_of_an_earlier_version_is_not_marked(folder):
    found = locate(folder, record(), 0, 5, version="0" * 12)
    assert found.outdated and found.quote == ""


def test_a_missing_file_says_it_cannot_be_read(folder):
    (folder / "guide.md").unlink()
    assert locate(folder, record(), 0, 5).problem.startswith("the file cannot be read")


@pytest.mark.parametrize("boxes, expected", [
    ([], []),
    ([None], []),
    ([(1, (10, 100, 20, 112))], [Mark(1, [(10, 100, 20, 112)])]),
    ([(1, (10, 100, 20, 112)), None, (1, (25, 100, 30, 112)), (2, (10, 50, 20, 62))],
     [Mark(1, [(10, 100, 30, 112)]), Mark(2, [(10, 50, 20, 62)])]),  # one rectangle per line, per page
])
def test_marks_for(boxes, expected):
    assert marks_for(boxes) == expected

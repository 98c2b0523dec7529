"""rag/indexing/library.py on a real SQLite file in a temporary folder: records, the queue's rows, the index
folder's marker. (`WriterLock` has its worked example in the module.)"""

from __future__ import annotations

import pytest

from rag.indexing.library import INDEX_MARKER, DocRecord, Library, Stamp, is_index_dir, mark_index_dir


@pytest.fixture
def library(tmp_path):
    lib = Library(tmp_path / "index" / "library.sqlite")
    yield lib
    lib.close()


def record(doc_id: str, path: str, status: str = "indexed", **kw) -> DocRecord:
    return DocRecord(doc_id=doc_id, path=path, kind="md", status=status, **kw)


def test_an_empty_library_has_no_documents(library):
    assert (library.all(), library.status_counts(), library.get("nope")) == ([], {}, None)


def test_a_record_comes_back_as_it_was_written_stamp_and_unicode_included(library):
    rec = record("d1", "notas/ação.md", title="Ação", chunks=3, warnings=["one"],
                 stamp=Stamp("all-MiniLM-L6-v2", 384, "chunk-3/E/512", "md-2"))
    library.put(rec)
    assert library.get("d1") == rec
    assert library.get("d1").name == "ação.md"
    assert rec.stamp.label() == "all-MiniLM-L6-v2 (384d) · chunk-3/E/512 · md-2"


def test_one_path_holds_one_record(library):
    library.put(record("old", "a.md"))
    library.put(record("new", "a.md"))
    assert [r.doc_id for r in library.all()] == ["new"]


def test_records_are_listed_by_path_and_counted_by_status(library):
    library.put(record("3", "c.md", "failed", reason="empty"), record("1", "a.md"), record("2", "b.md", "stale"))
    assert [r.path for r in library.all()] == ["a.md", "b.md", "c.md"]
    assert library.status_counts() == {"indexed": 1, "stale": 1, "failed": 1}
    library.remove("3")
    assert library.status_counts() == {"indexed": 1, "stale": 1}


def test_a_failed_write_leaves_nothing_half_written(library):
    with pytest.raises(TypeError):
        library.put(record("1", "a.md"), record("2", "b.md", warnings=[object()]))  # not JSON
    assert library.all() == []


def test_the_queue_keeps_one_row_per_path(library):
    library.queue_put({"path": "a.md", "state": "waiting"}, {"path": "b.md", "state": "waiting"})
    library.queue_put({"path": "a.md", "state": "done"})
    assert library.queue_get("a.md") == {"path": "a.md", "state": "done"}
    library.queue_delete("a.md")
    assert (library.queue_get("a.md"), library.queue_all()) == (None, [{"path": "b.md", "state": "waiting"}])


def test_a_new_or_empty_folder_is_marked_as_an_index(tmp_path):
    mark_index_dir(tmp_path / "new", folder="docs")
    assert is_index_dir(tmp_path / "new")
    assert "for the folder docs" in (tmp_path / "new" / INDEX_MARKER).read_text(encoding="utf-8")


def test_a_folder_holding_other_things_is_never_marked(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.md").write_text("my work", encoding="utf-8")
    mark_index_dir(tmp_path / "mine")
    assert not is_index_dir(tmp_path / "mine")
    assert not (tmp_path / "mine" / INDEX_MARKER).exists()


def test_an_index_from_before_the_marker_is_known_by_what_it_holds(tmp_path):
    old = tmp_path / "old"
    Library(old / "library.sqlite").close()
    assert is_index_dir(old)
    (old / "notes.txt").write_text("not an index's", encoding="utf-8")
    assert not is_index_dir(old)

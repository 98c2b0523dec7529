"""The engine end to end with real parts: MiniLM, a Chroma store on disk, bm25s, PDFs written here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pymupdf
import pytest

import rag
from rag import KEPT, OVER, gate
from rag.deciding.rule import CAPPED
from tests.conftest import CountingGenerator

ERR_DOC = """# Device errors

## Codes

The controller reports ERR-4017 when the calibration table is missing.

## Power

Unplug the unit for ten seconds before restarting it.
"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    p = folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def write_pdf(path: Path, paragraphs_by_page: list[list[str]]) -> Path:
    doc = pymupdf.open()
    for paras in paragraphs_by_page:
        page = doc.new_page()
        y = 72
        for p in paras:
            page.insert_textbox(pymupdf.Rect(72, y, 520, y + 150), p, fontsize=11)
            y += 160
    doc.save(path)
    return path


def synced(make, folder: Path, files: dict[str, str], **settings) -> rag.Engine:
    """Write these files into `folder`, open an engine on it and index them."""
    for name, text in files.items():
        write(folder, name, text)
    engine = make(folder, **settings)
    engine.sync()
    return engine


# --- vectors and distances --------------------------------------------------------------------------

def test_vectors_are_unit_and_distances_are_cosine(sample_engine):
    store = sample_engine.store
    got = store.collection.get(include=["embeddings"], limit=50)
    vecs = np.asarray(got["embeddings"], dtype=np.float64)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = sample_engine.embedder.embed_batch(["how do I upload a file?"])[0].astype(np.float64)
    res = store.collection.query(query_embeddings=[q.astype(np.float32)], n_results=10, include=["distances", "embeddings"])
    for d, v in zip(res["distances"][0], np.asarray(res["embeddings"][0], dtype=np.float64)):
        assert abs(d - (1 - q @ v)) < 1e-6
        assert abs(d - np.sum((q - v) ** 2) / 2) < 1e-6


def test_counting_word_pieces_waits_for_an_encoding_in_another_thread(embedder):
    """The tokenizer's truncation and padding are state each call sets: counting while another thread
    encodes gave that batch rows of unequal length ("Unable to create tensor", a crash of the page seen in
    CI while the queue indexed). Counting now waits for the model's lock, as encoding does."""
    import threading

    texts = [" ".join(["word"] * n) for n in (3, 17, 40)]
    done = threading.Event()
    counted: list[list[int]] = []
    with embedder._lock:  # an encoding in progress
        worker = threading.Thread(target=lambda: (counted.append(embedder.count_wordpieces(texts)), done.set()))
        worker.start()
        assert not done.wait(0.5), "counted while the model was encoding"
    assert done.wait(30) and counted == [[5, 19, 42]]  # [CLS] + words + [SEP]
    # And encoding and counting from two threads at once give whole batches.
    errors: list[str] = []

    def encode():
        try:
            for _ in range(20):
                assert embedder.embed_batch(texts * 10).shape == (30, embedder.dimension)
        except Exception as e:  # noqa: BLE001 (any failure is the finding)
            errors.append(repr(e))

    t = threading.Thread(target=encode)
    t.start()
    while t.is_alive():
        embedder.count_wordpieces(texts * 20)
    assert errors == []


def test_every_candidate_has_ranks_and_a_distance(sample_engine):
    result = sample_engine.search("What happens when nothing passes the threshold?")
    assert len(result.candidates) == sample_engine.settings.candidates
    assert [c.fused_rank for c in result.candidates] == list(range(1, len(result.candidates) + 1))
    assert all(c.dense_rank or c.bm25_rank or c.side_rank for c in result.candidates)
    bm25_only = [c for c in result.candidates if c.dense_rank is None]
    q = sample_engine.embedder.embed_batch([result.query])[0]
    for c in bm25_only:  # their distance comes from the stored vector
        v = sample_engine.store.vectors([c.chunk_id])[c.chunk_id]
        assert abs(c.distance - (1 - float(q @ v))) < 1e-5
    # Fused scores fall within each ranking: the question's own (rows 1..kept_first) and feedback's (the rest).
    k = result.kept_first
    assert 0 < k < len(result.candidates)
    for part in (result.candidates[:k], result.candidates[k:]):
        fused = [c.fused_score for c in part]
        assert fused == sorted(fused, reverse=True)


# --- the gate -----------------------------------------------------------------------------------------

def test_refusal_at_zero_reaches_no_generator_and_generous_threshold_cites(sample_engine):
    gen = CountingGenerator()
    turn = sample_engine.ask("How do I upload files?", threshold=0.0, generator=gen)
    assert gen.calls == 0
    assert turn.answer.refused
    assert turn.answer.text == 'NO ANSWER: nothing under cosine distance 0.000 for "How do I upload files?"'
    assert turn.gated.closest is not None and turn.gated.needed_threshold == turn.gated.closest.distance
    assert all(v == OVER for v in turn.gated.verdicts)  # the threshold bounds the multilingual cut too

    searches = sample_engine.searches
    regated = gate(turn.result, 1.0, 4)  # moving the slider: same candidates, no new search
    assert sample_engine.searches == searches
    assert [v for v in regated.verdicts].count(KEPT) == 4
    assert regated.verdicts.count(CAPPED) == len(regated.candidates) - 4 - regated.verdicts.count(OVER)
    ans = sample_engine.answer(regated)
    assert not ans.refused and "[1]" in ans.text
    for c in regated.citations:
        assert c.quote and c.distance <= 1.0
        doc = sample_engine.folder / c.doc_name
        if c.page is None:
            assert doc.read_text(encoding="utf-8").replace("\r\n", "\n")[c.start:c.end] == c.quote
            assert c.link.endswith(f"#char={c.start},{c.end}")
        else:
            assert c.link.endswith(f"#page={c.page}") and c.locator.startswith("p")


def test_extractive_answer_is_made_of_quoted_sentences(sample_engine):
    turn = sample_engine.ask("Which file types can the app read?", threshold=0.9)
    assert not turn.answer.refused
    quotes = {c.n: " ".join(c.quote.split()) for c in turn.gated.citations}  # words kept, line breaks not
    for chosen in turn.answer.chosen:
        assert chosen.text in quotes[chosen.n]
        assert f"{chosen.text} [{chosen.n}]" in turn.answer.text


def test_a_pdf_without_headings_is_cited_by_its_pages_once(make_engine, tmp_path):
    # No outline and one font size: each page is a section named "Page N" (rag.reading.pdf). The citation says
    # "p. 2", not "p. 2 · Page 2"; a PDF with headings still names its section beside the page.
    folder = tmp_path / "docs"
    folder.mkdir()
    write_pdf(folder / "pump.pdf", [["The blue pump is installed in the basement next to the boiler."],
                                    ["The warranty covers the blue pump for three years from the date of purchase."]])
    engine = make_engine(folder)
    engine.sync()
    turn = engine.ask("How long does the warranty cover the blue pump?", threshold=0.9)
    c = next(c for c in turn.gated.citations if "warranty" in c.quote)
    assert c.page == 2 and c.locator == "p. 2", c.locator
    assert turn.result.candidates[0].section.startswith("Page ")  # the table still shows the page section


def test_exact_code_is_found_through_bm25(store_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "errors.md", ERR_DOC)
    for i in range(6):
        write(folder, f"filler-{i}.md", f"# Filler {i}\n\n## Part\n\nDevices report errors and codes in many ways, topic {i}.\n")
    engine = store_engine(folder)
    engine.sync()
    result = engine.search("ERR-4017")
    top = result.candidates[0]
    assert top.doc_name == "errors.md" and "ERR-4017" in top.content
    assert top.bm25_rank == 1


# --- the library and the folder --------------------------------------------------------------------

def test_bad_input_matrix_fails_each_with_a_reason_and_keeps_the_rest(store_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "good.md", ERR_DOC)
    write_pdf(folder / "good.pdf", [["The warranty covers the blue pump for three years from purchase."]])
    write(folder, "corrupt.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 20)
    enc = pymupdf.open(folder / "good.pdf")
    enc.save(folder / "encrypted.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="ow")
    write(folder, "empty.pdf", b"")
    img = pymupdf.open()
    page = img.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pix.clear_with(120)
    page.insert_image(pymupdf.Rect(50, 50, 200, 200), pixmap=pix)
    img.save(folder / "scan.pdf")
    write(folder, "binary.txt", b"\x00\x01\x02binary")
    write(folder, "latin1.md", "Devolução em 30 dias".encode("latin-1"))
    write(folder, "slides.pptx", b"PK\x03\x04")  # a deck cut short: fails with its reason
    write(folder, "photo.heic", b"ftypheic")
    write(folder, "letter.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
    engine = store_engine(folder)
    report = engine.sync()
    status = {o.path: (o.status, o.reason) for o in report.outcomes}
    assert status["good.md"][0] == "indexed" and status["good.pdf"][0] == "indexed"
    expected = {"corrupt.pdf": "not a readable PDF", "encrypted.pdf": "password", "empty.pdf": "empty",
                "scan.pdf": "image-only", "binary.txt": "binary", "latin1.md": "not UTF-8", "slides.pptx": "damaged or truncated",
                "photo.heic": "unsupported", "letter.doc": "save it as .docx"}
    for name, words in expected.items():
        st, reason = status[name]
        assert st in ("failed", "skipped") and words in reason, (name, st, reason)
    records = {r.path: r for r in engine.documents()}
    assert records["corrupt.pdf"].status == "failed" and records["corrupt.pdf"].chunks == 0
    assert "photo.heic" not in records  # unsupported files are skipped, not recorded
    assert records["slides.pptx"].status == "failed" and records["letter.doc"].status == "failed"
    assert engine.search("ERR-4017 calibration table").candidates[0].doc_name == "good.md"
    assert engine.search("warranty blue pump").candidates[0].doc_name == "good.pdf"


def test_second_sync_embeds_nothing_and_changes_are_picked_up(store_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "a.md", ERR_DOC)
    write(folder, "b.txt", "Notes\n\nThe garden needs water every morning in summer.\n")
    engine = store_engine(folder)
    first = engine.sync()
    assert first.count("indexed") == 2 and first.embedded > 0
    again = engine.sync()
    assert again.embedded == 0 and again.count("unchanged") == 2
    write(folder, "b.txt", "Notes\n\nThe garden needs water every evening in autumn.\n")
    third = engine.sync()
    assert third.count("indexed") == 1 and third.count("unchanged") == 1
    assert "evening" in engine.search("when to water the garden").candidates[0].content
    rec = {r.path: r for r in engine.documents()}["b.txt"]
    assert rec.chunks == len(engine.store.doc_chunk_ids(rec.doc_id)) == 1


def test_deleted_file_leaves_both_indexes(store_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "keep.md", "# Keep\n\n## A\n\nThe lighthouse keeper logs every ship at night.\n")
    gone = write(folder, "gone.md", ERR_DOC)
    engine = store_engine(folder)
    engine.sync()
    doc_id = rag.indexing.indexer.doc_id_for("gone.md")
    assert engine.store.doc_chunk_ids(doc_id)
    gone.unlink()
    report = engine.sync()
    assert report.count("removed") == 1
    assert engine.store.doc_chunk_ids(doc_id) == []
    assert all(c.doc_id != doc_id for c in engine.snapshot.chunks)
    assert all(c.doc_name != "gone.md" for c in engine.search("ERR-4017").candidates)
    assert engine.library.get(doc_id) is None
    # remove() from the library view does the same for a file still on disk
    keep_id = rag.indexing.indexer.doc_id_for("keep.md")
    engine.remove(keep_id)
    assert engine.store.doc_chunk_ids(keep_id) == [] and engine.snapshot.chunks == []


def indexed_then_reopened(store_engine, tmp_path, **changes):
    """Index one document, close, and open the same index again with other settings."""
    folder = tmp_path / "docs"
    write(folder, "a.md", ERR_DOC)
    engine = store_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    first = engine.documents()[0]
    engine.close()
    return first, store_engine(folder, index_dir=tmp_path / "idx", **changes)


def test_changed_chunker_marks_stale_and_reindexes(store_engine, tmp_path):
    old, engine2 = indexed_then_reopened(store_engine, tmp_path, chunk_strategy="C")
    rec = engine2.documents()[0]
    assert rec.status == "stale" and rec.stamp == old.stamp
    assert engine2.search("ERR-4017").candidates  # stale documents stay searchable until re-indexed
    report = engine2.sync()
    assert report.count("indexed") == 1
    new = engine2.documents()[0]
    assert new.status == "indexed" and new.stamp.chunker != old.stamp.chunker and "/C/" in new.stamp.chunker


def test_model_chosen_by_path_marks_stale_and_reindexes(store_engine, tmp_path, embedder):
    """A second model directory built from the installed MiniLM's files under another name."""
    other = tmp_path / "my-minilm-copy"
    shutil.copytree(embedder.path, other)
    _, engine2 = indexed_then_reopened(store_engine, tmp_path, model=str(other))
    assert engine2.embedder.name == f"my-minilm-copy-{rag.indexing.embed.model_fingerprint(other)}"
    rec = engine2.documents()[0]
    assert rec.status == "stale"
    assert engine2.snapshot.chunks == []  # the other model's vectors are never compared with this one's
    engine2.sync()
    rec = engine2.documents()[0]
    assert rec.status == "indexed" and rec.stamp.model == engine2.embedder.name
    assert engine2.search("ERR-4017").candidates[0].doc_name == "a.md"
    names = [getattr(c, "name", c) for c in engine2.store.client.list_collections()]
    names = [n for n in names if n.startswith(engine2.settings.server.collection_prefix + "-")]
    # The old model's collection is gone once nothing needs it; the multilingual side's stays.
    assert sorted(names) == sorted([engine2.store.name, engine2.indexer.side_store.name])


def test_a_model_by_path_is_stamped_by_its_content_not_its_folder_name(embedder, tmp_path):
    one, two = tmp_path / "v1" / "model", tmp_path / "v2" / "model"
    shutil.copytree(embedder.path, one)
    shutil.copytree(embedder.path, two)
    assert rag.indexing.embed.resolve_model(str(one))[0] == rag.indexing.embed.resolve_model(str(two))[0]  # the same model
    config = json.loads((two / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6  # another training's config, same folder name
    (two / "config.json").write_text(json.dumps(config))
    a, b = rag.indexing.embed.resolve_model(str(one))[0], rag.indexing.embed.resolve_model(str(two))[0]
    assert a != b and a.startswith("model-") and b.startswith("model-")


def test_pending_work_from_a_crash_is_undone_at_start(store_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "a.md", ERR_DOC)
    engine = store_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    rec = engine.documents()[0]
    rec.status = "pending"  # as if the process died between writing chunks and recording them
    engine.library.put(rec)
    engine.close()
    engine2 = store_engine(folder, index_dir=tmp_path / "idx")
    assert engine2.store.doc_chunk_ids(rec.doc_id) == []  # undone: no half document in the store
    assert engine2.snapshot.chunks == []
    report = engine2.sync()
    assert report.count("indexed") == 1
    assert engine2.documents()[0].status == "indexed"


def test_record_claiming_chunks_it_lacks_is_repaired_at_start_and_reindexed(store_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "a.md", ERR_DOC)
    write(folder, "b.md", "# B\n\n## Tides\n\nThe tide tables are printed every Monday.\n")
    engine = store_engine(folder, index_dir=tmp_path / "idx")
    engine.sync()
    a = engine.library.get(rag.indexing.indexer.doc_id_for("a.md"))
    ids = engine.store.doc_chunk_ids(a.doc_id)
    assert a.status == "indexed" and a.chunks == len(ids) >= 2
    # As if a process died between deleting chunks and updating the record: the record says indexed
    # and claims all its chunks; the store holds only some of them.
    engine.store.collection.delete(ids=ids[:1])
    engine.close()
    engine2 = store_engine(folder, index_dir=tmp_path / "idx")
    rec = engine2.library.get(a.doc_id)
    assert rec.status == "pending" and rec.content_hash == ""  # repaired at start-up...
    assert engine2.store.doc_chunk_ids(a.doc_id) == []  # ...its remaining chunks gone: no half document
    assert {c.doc_id for c in engine2.snapshot.chunks} == {rag.indexing.indexer.doc_id_for("b.md")}
    report = engine2.sync()
    assert sorted((o.path, o.status) for o in report.outcomes) == [("a.md", "indexed"), ("b.md", "unchanged")]
    rec = engine2.library.get(a.doc_id)
    assert rec.status == "indexed" and rec.chunks == a.chunks == len(engine2.store.doc_chunk_ids(a.doc_id))
    assert engine2.search("ERR-4017").candidates[0].doc_name == "a.md"


def test_upload_names_are_safe_and_conflicts_ask(make_engine, tmp_path):
    engine = make_engine(tmp_path / "docs")
    assert engine.save_upload("../../evil.md", b"# Evil\n\nText.\n") == "evil.md"
    assert (tmp_path / "docs" / "evil.md").exists() and not (tmp_path / "evil.md").exists()
    assert engine.save_upload("evil.md", b"# Evil\n\nText.\n") == "evil.md"  # same bytes: nothing to ask
    with pytest.raises(rag.UploadConflict, match="already in the folder") as conflict:
        engine.save_upload("EVIL.md", b"other bytes")
    assert conflict.value.existing == "evil.md"
    assert engine.save_upload("evil.md", b"other", on_conflict="rename") == "evil-2.md"
    assert engine.save_upload("evil.md", b"replaced", on_conflict="replace") == "evil.md"
    assert (tmp_path / "docs" / "evil.md").read_bytes() == b"replaced"
    with pytest.raises(rag.UploadError, match="unsupported"):
        engine.save_upload("x.exe", b"MZ")
    small = make_engine(tmp_path / "docs2", max_upload_mb=1)
    with pytest.raises(rag.UploadError, match="upload limit of 1 MB"):
        small.save_upload("big.txt", b"x" * (1024 * 1024 + 1))


def test_an_upload_waiting_for_the_replace_or_keep_choice_survives_a_restart_and_a_rebuild(make_engine, tmp_path):
    """Its bytes wait beside the index, not in one browser session: a reload, another tab, a restart of the
    app or `rag index --rebuild` still has them, until the person replaces, keeps both or cancels."""
    docs, index = tmp_path / "docs", tmp_path / "idx"
    engine = make_engine(docs, index_dir=index)
    engine.save_upload("minutes.md", b"# Minutes\n\nThe old minutes.\n")
    with pytest.raises(rag.UploadConflict) as conflict:
        engine.save_upload("Minutes.md", b"# Minutes\n\nThe new minutes.\n")
    waiting = conflict.value.held
    assert waiting is not None and waiting.name == "Minutes.md" and waiting.existing == "minutes.md"
    engine.close()
    (tmp_path / "none.toml").touch()
    # In its own process, as a person runs it (Chroma keeps a deleted store open within one process).
    env = dict(os.environ, RAG_FOLDER=str(docs), RAG_INDEX_DIR=str(index), RAG_CONFIG=str(tmp_path / "none.toml"))
    subprocess.run([sys.executable, "-m", "rag.cli", "index", "--rebuild"], env=env, check=True,
                   capture_output=True, cwd=Path(__file__).resolve().parent.parent, timeout=600)
    again = make_engine(docs, index_dir=index)
    assert again.held_uploads() == [waiting]
    assert (docs / "minutes.md").read_bytes() == b"# Minutes\n\nThe old minutes.\n"  # nothing replaced meanwhile
    with pytest.raises(ValueError, match="'replace', 'rename', 'cancel'"):
        again.resolve_upload(waiting.id, "overwrite")
    assert again.held_uploads() == [waiting]
    assert again.resolve_upload(waiting.id, "rename") == "Minutes-2.md"
    assert (docs / "Minutes-2.md").read_bytes() == b"# Minutes\n\nThe new minutes.\n"
    assert again.held_uploads() == []
    with pytest.raises(KeyError):
        again.resolve_upload(waiting.id, "rename")  # another tab chose first
    # Cancel drops it, and nothing reaches the folder.
    with pytest.raises(rag.UploadConflict):
        again.save_upload("minutes.md", b"# Minutes\n\nA third text.\n")
    (third,) = again.held_uploads()
    assert again.resolve_upload(third.id, "cancel") is None
    assert again.held_uploads() == [] and sorted(p.name for p in docs.iterdir()) == ["Minutes-2.md", "minutes.md"]


def test_truncation_and_header_share_are_reported(make_engine, tmp_path):
    folder = tmp_path / "docs"
    long_sentence = ",".join("qwertyuiop" * 60)  # punctuation-dense: about one word-piece per character
    write(folder, "long.md", f"# Long\n\n## Part\n\n{long_sentence}\n")
    engine = make_engine(folder)
    engine.sync()
    rec = engine.documents()[0]
    pieces = engine.embedder.count_wordpieces([c.text for c in engine.snapshot.chunks])
    assert rec.truncated == sum(1 for n in pieces if n > 256) > 0
    assert any("encoder window" in w for w in rec.warnings)
    assert 0 < rec.header_share < 0.5


def test_filter_by_document_applies_before_search(store_engine, tmp_path):
    engine = synced(store_engine, tmp_path / "docs", {
        "errors.md": ERR_DOC, "garden.md": "# Garden\n\n## Water\n\nWater the tomatoes every morning.\n"})
    garden = rag.indexing.indexer.doc_id_for("garden.md")
    result = engine.search("ERR-4017", doc_ids=[garden])
    assert result.candidates and {c.doc_name for c in result.candidates} == {"garden.md"}


def test_question_during_indexing_sees_only_whole_documents(store_engine, tmp_path):
    folder = tmp_path / "docs"
    engine = synced(store_engine, folder, {"a.md": ERR_DOC})
    before = engine.snapshot
    # Write a document's chunks to the store the way the indexer does, but stop before recording it.
    write(folder, "b.md", "# B\n\n## X\n\nThe ERR-4017 code also appears in the second manual.\n")
    rec, chunks = engine.indexer._prepare("b.md")
    engine.library.put(rec)  # pending
    engine.store.add(chunks, engine.embedder.embed_batch([c.text for c in chunks]), {"lang": "en"})
    engine.reload()
    assert all(c.doc_name == "a.md" for c in engine.search("ERR-4017 second manual").candidates)
    assert len(engine.snapshot.chunks) == len(before.chunks)


PT_NOTE = """# Notas da loja

## Devoluções

As devoluções são aceites até trinta dias depois da compra, com o talão e a embalagem original.

## Entregas

As encomendas são entregues em dois a quatro dias úteis em Portugal continental, e o envio é gratuito acima de cinquenta euros.
"""


def test_language_warning_for_a_portuguese_folder_and_not_an_english_one(make_engine, tmp_path):
    pt = tmp_path / "pt"
    write(pt, "loja.md", PT_NOTE)
    write(pt, "short.md", "# Short\n\n## A\n\nThe pump is blue.\n")
    engine = make_engine(pt)
    engine.sync()
    assert engine.stats().languages.get("pt", 0) > engine.stats().languages.get("en", 0)
    warning = engine.language_warning()
    assert warning and "Portuguese" in warning and "calibrate" in warning and "multilingual" in warning
    # The dense side weighs less for a question in a language the model does not read, asked of a folder
    # that holds that language (BM25 matches its words).
    assert engine.search("devoluções").weights == {"dense": 0.1, "bm25": 0.4,
                                                   "multilingual": engine.settings.tuning.multilingual_weight}
    en = tmp_path / "en"
    write(en, "errors.md", ERR_DOC)
    english = make_engine(en, index_dir=tmp_path / "idx-en")
    english.sync()
    assert english.language_warning() is None
    assert english.search("ERR-4017").weights == {"dense": 0.6, "bm25": 0.4,
                                                  "multilingual": english.settings.tuning.multilingual_weight_read}
    # A model whose card (or setting) covers Portuguese does not warn.
    engine.embedder.languages, saved = ("en", "pt"), engine.embedder.languages
    try:
        assert engine.language_warning() is None
    finally:
        engine.embedder.languages = saved


def test_portuguese_variants_match_through_bm25(make_engine, tmp_path):
    engine = synced(make_engine, tmp_path / "docs", {"loja.md": PT_NOTE, "errors.md": ERR_DOC})
    for q in ("devolucoes", "devolução", "DEVOLUCAO aceite", "entregas gratuitas"):
        top = engine.search(q).candidates[0]
        assert top.doc_name == "loja.md" and top.bm25_rank == 1, q


def test_per_language_threshold_applies_to_questions_in_that_language(make_engine, tmp_path):
    folder = tmp_path / "docs"
    write(folder, "loja.md", PT_NOTE)
    write(folder, "errors.md", ERR_DOC)
    plain = make_engine(folder, index_dir=tmp_path / "a")
    plain.sync()
    pt_q, en_q = "Quantos dias tenho para fazer uma devolução?", "What does the controller report when the calibration table is missing?"
    pt_turn, en_turn = plain.ask(pt_q), plain.ask(en_q)
    assert not pt_turn.answer.refused and not en_turn.answer.refused
    # A Portuguese threshold under the closest Portuguese distance refuses; English questions keep the default.
    strict = pt_turn.gated.closest.distance - 0.01
    split = make_engine(folder, index_dir=tmp_path / "a", language_thresholds=f"pt={strict:.3f}")
    assert split.threshold_for(pt_q) == pytest.approx(strict, abs=1e-3)
    assert split.threshold_for(en_q) == plain.calibrated().threshold("en")  # English keeps its calibrated value
    refused = split.ask(pt_q)
    assert refused.answer.refused and f"{strict:.3f}" in refused.answer.text
    assert not split.ask(en_q).answer.refused
    with pytest.raises(ValueError, match="LANG=DISTANCE"):
        rag.load_settings(env={}, language_thresholds="pt:0.4").thresholds_by_language


def test_embed_cached_gives_the_same_vectors_and_skips_the_model_on_a_repeat(embedder, monkeypatch):
    texts = ["The pump is blue.", "Devoluções em trinta dias.", "The pump is blue."]
    direct = embedder.embed_batch(texts)
    first = embedder.embed_cached(texts)
    assert np.allclose(first, direct, atol=1e-6)
    calls = []
    real = embedder.embed_batch
    monkeypatch.setattr(embedder, "embed_batch", lambda t: calls.append(list(t)) or real(t))
    again = embedder.embed_cached(texts + ["A new sentence."])
    assert calls == [["A new sentence."]]  # only the text it had not seen
    assert np.allclose(again[:3], direct, atol=1e-6)
    assert embedder.embed_cached([]).shape == (0, embedder.dimension)


def test_resync_reads_only_files_whose_size_or_time_changed(make_engine, tmp_path, monkeypatch):
    folder = tmp_path / "docs"
    a = write(folder, "a.md", ERR_DOC)
    write(folder, "b.md", "# B\n\n## X\n\nThe tide tables are printed every Monday.\n")
    engine = make_engine(folder)
    engine.sync()
    read: list[str] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or real(self))
    assert engine.sync().embedded == 0 and read == []  # nothing touched: nothing read
    later = a.stat().st_mtime_ns + 5_000_000_000
    os.utime(a, ns=(later, later))  # touched, same bytes: read and compared, not re-indexed
    report = engine.sync()
    assert read == ["a.md"] and report.embedded == 0 and report.count("unchanged") == 2
    read.clear()
    assert engine.sync().embedded == 0 and read == []  # its new time is remembered

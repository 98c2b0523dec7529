"""The Streamlit app driven by AppTest: chat, live threshold slider, uploads, library page.

Everything is real: the app loads the real MiniLM model and indexes a copy of the sample folder (data/)
into a real Chroma store in a temporary folder (RAG_FOLDER / RAG_INDEX_DIR). PDFs are written with
pymupdf. The engine sits behind `st.cache_resource`, so all tests of this module share one engine; the
test reaches the same engine through `ui.open_workspace` to count searches.
"""

from __future__ import annotations

import re
import shutil
from urllib.parse import parse_qs, urlparse
import tomllib
from pathlib import Path

import pymupdf
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import rag
from rag.deciding.explain import refusal_text
from tests.conftest import threshold_slider

ROOT = Path(__file__).resolve().parent.parent
from app import ui
from app import ui_files
APP = str(ROOT / "streamlit_app.py")
LIBRARY = str(ROOT / "app" / "pages" / "library.py")
TIMEOUT = 180  # the first run loads the model and indexes the folder; AppTest's default is 3 s
QUESTION = "Where is the index stored by default?"
NEEDLE = "the index is stored in a hidden folder named .rag-index inside the folder you chose"
FACT = "The Zanzibar heron migrates every October to the salt lakes of Quarnelia."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("app")
    docs = base / "docs"
    shutil.copytree(ROOT / "data", docs, ignore=shutil.ignore_patterns(".rag-index"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAG_FOLDER", str(docs))
        mp.setenv("RAG_INDEX_DIR", str(base / "index"))
        mp.setenv("RAG_CONFIG", str(base / "none.toml"))  # no rag.toml of the working tree leaks in
        yield docs


@pytest.fixture(scope="module")
def engine(folder) -> rag.Engine:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()  # opens the engine once; its queue indexes
    assert not at.exception, at.exception
    engine = workspace_engine(rag.load_settings())
    assert engine.queue.wait_idle(300)
    return engine


def workspace_engine(settings: rag.Settings) -> rag.Engine:
    """The engine the app opened for these settings (the same `st.cache_resource` entry)."""
    return ui.open_workspace(ui.engine_key(settings), settings).engine


def alerts(at, kind: str) -> list[str]:
    return [plain(a.value) for a in getattr(at.sidebar, kind)]


def app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=TIMEOUT)


def plain(markdown: str) -> str:
    """Escaped Markdown back to the characters it shows."""
    return re.sub(r"\\(.)", r"\1", markdown)


def markdowns(at) -> list[str]:
    return [plain(m.value) for m in at.markdown]


def citations(at) -> list[tuple[int, str, float]]:
    """(n, document, distance) of every citation header on the page."""
    out = []
    for m in markdowns(at):
        hit = re.match(r"\*\*\[(\d+)\]\*\* (.+?) · .* · cosine distance \*\*([0-9.]+)\*\*$", m)
        if hit:
            out.append((int(hit[1]), hit[2], float(hit[3])))
    return out


def viewer_links(at) -> dict[int, tuple[str, int, int]]:
    """n -> (document, start, end) of each citation card's link to the viewer."""
    out = {}
    for link in at.get("page_link"):
        hit = re.match(r"\[(\d+)\] Open ", link.proto.label)
        if hit:
            q = dict(link.proto.query_string and parse_qs(link.proto.query_string) or {})
            out[int(hit[1])] = (q["doc"][0], int(q["start"][0]), int(q["end"][0]))
    return out


def tables(at) -> list:
    """The retrieval tables on the page, one per answer."""
    return [d.value for d in at.dataframe if "verdict" in d.value.columns]


LABELS = (rag.KEPT, rag.CAPPED, rag.OVER, rag.UNSUPPORTED, rag.OFF_SUBJECT, rag.JUDGED_OUT, rag.WEIGHED_OUT)


def labels(frame):
    """The gate's verdict of each row: the label its one-line verdict starts with ("over threshold at ...")."""
    return frame["verdict"].map(lambda cell: next(v for v in LABELS if cell.startswith(v)))


def chosen(at) -> list[tuple[int, float, int, str]]:
    """(n, similarity, rank, sentence) of the last answer's "Sentences chosen" list."""
    block = [m.value for m in at.markdown if m.value.startswith("**Sentences chosen")][-1]
    rows = re.findall(r"^- similarity \*\*([0-9.]+)\*\* \(rank (\d+)\) · source \*\*\[(\d+)\]\*\* · (.*)$", block, re.M)
    return [(int(n), float(sim), int(rank), plain(text)) for sim, rank, n, text in rows]


def table(at):
    return tables(at)[-1]  # the retrieval table of the last turn


def pdf_bytes(*pages: str) -> bytes:
    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 520, 770), text, fontsize=11)
    data = doc.tobytes()
    doc.close()
    return data


def test_question_shows_answer_citations_distances_and_table(engine):
    at = app().run()
    before = engine.searches
    at.chat_input[0].set_value(QUESTION).run()
    assert not at.exception, at.exception
    assert engine.searches == before + 1

    # The slider starts at the threshold calibrated on this folder for the question's language, and says so.
    threshold = threshold_slider(at).value
    assert threshold == pytest.approx(engine.calibrated().threshold("en"))
    assert any(plain(c.value).startswith("Calibrated for English:") for c in at.sidebar.caption)
    cites = citations(at)
    assert 1 <= len(cites) <= 4
    assert [n for n, _, _ in cites] == list(range(1, len(cites) + 1))
    assert all(d <= threshold for _, _, d in cites)
    assert "getting-started.md" in {doc for _, doc, _ in cites}
    # The quotes are the chunks' own text, shown as plain text; the needle is in one of them.
    assert any(NEEDLE in " ".join(t.value.split()) for t in at.text)
    # The answer carries [n] markers, each a link to its citation card on this page (turn 1).
    # Each [n] opens the viewer at its citation's passage: the document and the quote's character range.
    answer = next(m.value for m in at.markdown if "](viewer?" in m.value)
    ranges = {n: r for n, r in viewer_links(at).items()}
    links = re.findall(r"\[\\\[(\d+)\\\]\]\((viewer\?[^)]+)\)", answer)
    assert links and {int(n) for n, _ in links} <= {n for n, _, _ in cites}
    for n, url in links:
        q = parse_qs(urlparse(url).query)
        assert (q["doc"][0], int(q["start"][0]), int(q["end"][0])) == ranges[int(n)]
    assert not re.search(r"\]\((?!viewer\?)", answer)  # no other link, and the words stay escaped
    anchors = {m.value for m in at.markdown if m.value.startswith("<span id=")}
    assert anchors == {f'<span id="cite-1-{n}"></span>' for n, _, _ in cites}
    # Which sentences were chosen and why: each is a sentence of its source's quote, with its similarity
    # to the question; ranks follow the similarities.
    picked = chosen(at)
    assert 1 <= len(picked) <= 3
    quotes = {n: " ".join(t.value.split()) for (n, _, _), t in zip(cites, at.text)}
    words = " ".join(plain(answer).split())
    for n, sim, _, sentence in picked:
        assert sentence in quotes[n] and 0.0 < sim <= 1.0
    # The answer is exactly the listed sentences, in that order, each with its [n] linked to its card.
    assert re.sub(r"\]\(viewer\?[^)]+\)", "]", words) == " ".join(f"{sentence} [[{n}]]" for n, _, _, sentence in picked)
    assert [r for _, _, r, _ in sorted(picked, key=lambda p: -p[1])] == list(range(1, len(picked) + 1))
    # Links carry a character fragment for text files.
    assert any(re.fullmatch(r"link: .+\.md#char=\d+,\d+", plain(c.value)) for c in at.caption)

    frame = table(at)
    # A source the answer does not cite says so on its card; a cited one does not.
    quoted = {n for n, _, _, _ in picked}
    uncited = {int(m[1]) for c in at.caption if (m := re.match(r"\[(\d+)\] passed the tests, but the answer does not cite it",
                                                                plain(c.value)))}
    assert uncited == {n for n, _, _ in cites} - quoted

    # What a person scans first: document, place, preview and the verdict in one line; the numbers after.
    assert list(frame.columns) == ["document", "place", "preview", "verdict", "fused", "score", "dense", "BM25",
                                   "multilingual", "multi distance", "distance", "margin", "support", "needs", "lacks"]
    assert len(frame) == 20
    assert list(frame["fused"]) == list(range(1, 21))
    # The fused rank follows the fused score: the first `feedback` rows by the first search's, the rest by the
    # second search's (from the first rows), each on its own scale.
    stay = engine.settings.tuning.feedback
    for part in (list(frame["score"])[:stay], list(frame["score"])[stay:]):
        assert part == sorted(part, reverse=True)
    # Each side's rank, or a dash for a row that side did not return (never "None" or an empty cell).
    for side in ("dense", "BM25", "multilingual"):
        assert all(r == "–" or r.isdigit() for r in frame[side]), list(frame[side])
    assert "–" in set(frame["dense"]) | set(frame["BM25"])  # 20 fused from two top-20 lists: some come from one side
    # The fusion's weights are a derivation: in the evidence line's tooltip, not a caption of their own.
    assert any("Fused: z-scores, weights dense 0.6 · BM25 0.4" in plain(c.proto.help) for c in at.caption)
    assert any(plain(c.value).startswith("Evidence: cosine distance ≤") for c in at.caption)
    kept = frame[labels(frame) == "kept"]
    assert len(kept) == len(cites)
    assert sorted(round(d, 3) for d in kept["distance"]) == sorted(d for _, _, d in cites)
    over = frame[labels(frame) == "over threshold"]
    assert (over["distance"] > threshold).all() and (frame[labels(frame) != "over threshold"]["distance"] <= threshold).all()
    # Every row under the threshold that was not kept failed the support test, and says which words it lacks.
    lacking = frame[labels(frame) == "lacks the question's words"]
    assert (lacking["lacks"].str.len() > 0).all() and (kept["support"] > 0).all()
    # Each row's needed share is shown: the kept ones hold it (support is floored to whole percents).
    assert (kept["support"] >= kept["needs"] - 0.01).all() and frame["needs"].between(0, 1).all()


def test_slider_regates_without_searching_again(engine):
    at = app().run()
    at.chat_input[0].set_value(QUESTION).run()
    searches = engine.searches
    closest = float(table(at)["distance"].min())

    threshold_slider(at).set_value(0.0).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.text] == [refusal_text(0.0, QUESTION)]  # the engine's text, exactly
    assert citations(at) == []
    texts = markdowns(at)
    # At a glance, the search's own first row, with what would let it through; the nearest one click away.
    first = table(at)["document"].iloc[0]
    assert any(m.startswith(f"Best candidate, the search's first row: **{first}**") and "would let it through" in m
               for m in texts), texts
    needed = next(float(m.split("**")[1]) for m in texts if m.startswith("A threshold of"))
    assert needed >= closest
    assert set(labels(table(at))) == {"over threshold"}  # the threshold bounds the multilingual cut too
    assert any(plain(c.value).startswith("Set by you") for c in at.sidebar.caption)

    # The threshold the refusal names lets a passage through: the nearest one that holds the question's words.
    threshold_slider(at).set_value(needed).run()
    assert len(citations(at)) >= 1
    # (The refusal names the distance rounded up to three places, a card rounds it: the two differ by 0.001 at most.)
    assert needed - 0.001 - 1e-9 <= max(d for _, _, d in citations(at)) <= needed + 1e-9

    # The button puts the calibrated threshold back.
    at.sidebar.button(key="threshold_reset").click().run()
    assert threshold_slider(at).value == pytest.approx(engine.calibrated().threshold("en"))
    assert len(citations(at)) >= 2
    assert not any(t.value.startswith("NO ANSWER") for t in at.text)
    assert engine.searches == searches, "moving the slider must not search again"

    # The chunk cap: one chunk at most, the others under the threshold are marked as over the cap.
    at.sidebar.number_input(key="max_chunks").set_value(1).run()
    assert len(citations(at)) == 1
    assert "under threshold, over cap" in set(labels(table(at)))
    assert engine.searches == searches

    # A different number of candidates is a new search of the same question.
    at.sidebar.number_input(key="candidates").set_value(5).run()
    assert engine.searches == searches + 1
    assert len(table(at)) == 5


def test_follow_up_keeps_history_and_new_chat_clears_it(engine):
    """A follow-up without its subject ("What value of k does it use?", from tests/test_answer.py) is
    searched together with the question before it, says so, and finds what its standalone form finds."""
    at = app().run()
    at.chat_input[0].set_value(QUESTION).run()
    at.chat_input[0].set_value("What is reciprocal rank fusion?").run()
    users = [plain(m.markdown[0].value) for m in at.chat_message if m.name == "user"]
    assert users == [QUESTION, "What is reciprocal rank fusion?"]
    assert len(tables(at)) == 2  # one retrieval table per answer
    searches = engine.searches
    at.chat_input[0].set_value("What value of k does it use?").run()
    assert engine.searches == searches + 1
    searched = [plain(c.value) for c in at.caption if c.value.startswith("Searched as")]
    assert searched == ["Searched as: What is reciprocal rank fusion? What value of k does it use?"], searched
    assert len(tables(at)) == 3
    followup_top = citations(at.chat_message[-1])[0][1]

    at.sidebar.button(key="new_chat").click().run()  # New chat
    assert len(at.chat_message) == 0 and len(at.dataframe) == 0
    at.chat_input[0].set_value("What value of k does reciprocal rank fusion use?").run()
    assert citations(at)[0][1] == followup_top
    at.sidebar.button(key="new_chat").click().run()
    at.chat_input[0].set_value("What value of k does it use?").run()  # no conversation: searched as asked
    assert not [c for c in at.caption if c.value.startswith("Searched as")]


def test_a_turn_left_unfrozen_by_an_overlapping_run_still_renders(engine):
    """Two runs of one chat can overlap (a second tab or a reconnecting browser on the same chat): a turn
    one of them appended may become an earlier turn without the settings an earlier turn keeps. Seen by
    hand as a KeyError in place of the chat; now such a turn is frozen at the settings shown."""
    at = app().run()
    at.chat_input[0].set_value(QUESTION).run()
    at.chat_input[0].set_value("What is reciprocal rank fusion?").run()
    first = at.session_state["turns"][0]
    for key in ("threshold", "max_chunks", "mode", "rule"):
        first.pop(key)
    first["live"] = True
    at.run()
    assert not at.exception, at.exception
    assert len([m for m in at.chat_message if m.name == "assistant"]) == 2
    assert at.session_state["turns"][0]["threshold"] is not None
    at.chat_input[0].set_value("What value of k does it use?").run()
    assert not at.exception, at.exception
    assert len(tables(at)) == 3


def test_switching_folder_opens_its_own_index(engine, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "moths.md").write_text("# Moths\n\nThe lunar moth of Quarnelia only flies under a full moon.\n")
    at = app().run()
    at.chat_input[0].set_value(QUESTION).run()
    at.sidebar.text_input(key="folder_input").set_value(str(tmp_path / "missing")).run()
    assert any("is not a folder" in plain(e.value) for e in at.sidebar.error)
    assert not (tmp_path / "missing").exists()

    at.sidebar.text_input(key="folder_input").set_value(str(other)).run()
    assert not at.exception, at.exception
    assert len(at.chat_message) == 0  # a new folder starts a new chat
    assert (other / ".rag-index").is_dir()  # its own index, not the configured folder's index_dir
    assert workspace_engine(rag.load_settings().replace(folder=other.resolve(), index_dir=None)).queue.wait_idle(120)
    at.chat_input[0].set_value("When does the lunar moth fly?").run()
    assert [doc for _, doc, _ in citations(at)] == ["moths.md"]
    assert set(table(at)["document"]) == {"moths.md"}


def test_upload_good_and_corrupt_then_library_lists_both(engine, folder):
    at = app().run()
    good = pdf_bytes("Field notes.\n\n" + FACT + " The colony counts about four hundred birds.")
    corrupt = b"%PDF-1.7\n" + bytes(range(256)) * 20  # a PDF header over garbage: no document in it
    at.sidebar.file_uploader(key="uploader").set_value(
        [("heron notes.pdf", good, "application/pdf"), ("broken.pdf", corrupt, "application/pdf")]).run()
    assert not at.exception, at.exception
    assert engine.queue.wait_idle(120)
    at.run()  # the queue panel redraws (every second in a browser; here, on this run)
    ok, bad = alerts(at, "success"), alerts(at, "error")
    assert "heron notes.pdf: indexed, 1 chunk" in ok, (ok, bad)
    assert len(bad) == 1 and bad[0].startswith("broken.pdf: failed, ") and len(bad[0]) > len("broken.pdf: failed, ") + 5
    assert any(b.label == "Retry" for b in at.sidebar.button)  # a failure stays listed, with a retry
    assert (folder / "heron notes.pdf").read_bytes() == good
    records = {d.path: d for d in engine.documents()}
    assert records["heron notes.pdf"].status == "indexed" and records["broken.pdf"].status == "failed"
    indexed_at = records["heron notes.pdf"].indexed_at

    # Reruns do not process the same uploads again.
    at.run()
    assert engine.queue.wait_idle(60)
    assert {d.path: d for d in engine.documents()}["heron notes.pdf"].indexed_at == indexed_at
    assert engine.queue.get("heron notes.pdf").runs == 1 and len(alerts(at, "error")) == 1

    # The new document answers, with a page link.
    at.chat_input[0].set_value("When does the Zanzibar heron migrate?").run()
    cites = citations(at)
    assert cites and cites[0][1] == "heron notes.pdf"
    assert any(plain(c.value) == "link: heron%20notes.pdf#page=1" for c in at.caption)

    lib = AppTest.from_file(LIBRARY, default_timeout=TIMEOUT).run()
    assert not lib.exception, lib.exception
    frame = lib.dataframe[0].value
    rows = {r["name"]: r for r in frame.to_dict("records")}
    assert rows["heron notes.pdf"]["status"] == "indexed" and rows["heron notes.pdf"]["chunks"] == 1
    assert rows["heron notes.pdf"]["pages"] == "1" and rows["heron notes.pdf"]["chars"] > len(FACT)
    assert rows["citations.md"]["pages"] == "–"  # not "None": a Markdown file has no pages
    assert rows["broken.pdf"]["status"] == "failed" and rows["broken.pdf"]["reason"] == bad[0].split("failed, ", 1)[1]
    assert rows["threshold-and-refusals.pdf"]["stamp"].startswith("all-MiniLM-L6-v2 (384d)")
    summary = plain(lib.markdown[0].value)
    stats = engine.stats()
    assert f"{stats.documents} documents" in summary and f"{stats.chunks} chunks" in summary
    assert "all-MiniLM-L6-v2" in summary
    # Below it, the folder's languages by name and share, and what is weaker in Portuguese.
    line = next(plain(c.value) for c in lib.caption if plain(c.value).startswith("Languages:"))
    assert re.match(r"Languages: English \d+%, Portuguese \d+%\. In Portuguese: all-MiniLM-L6-v2 reads English only",
                    line), line


def test_a_question_asked_with_a_drop_waits_for_the_dropped_file(engine, folder):
    """Drop a file in the sidebar and ask about it in the same breath: the question waits for this session's
    file to be indexed (as for an attachment) and is answered from it, instead of being refused."""
    at = app().run()
    notes = pdf_bytes("Ferry timetable.\n\nThe ferry to Cacilhas leaves Cais do Sodre every 20 minutes on weekdays.")
    at.sidebar.file_uploader(key="uploader").set_value([("ferry.pdf", notes, "application/pdf")])
    at.chat_input[0].set_value("How often does the ferry to Cacilhas leave on weekdays?").run()
    assert not at.exception, at.exception
    assert engine.queue.get("ferry.pdf").state == "indexed"
    assert citations(at) and citations(at)[0][1] == "ferry.pdf"
    at.chat_input[0].set_value("What is reciprocal rank fusion?").run()
    assert at.session_state["session_uploads"] == []  # indexed: forgotten, later questions do not wait for it


def test_library_retry_and_delete(engine, folder):
    (folder / "later.pdf").write_bytes(b"not a pdf at all")
    lib = AppTest.from_file(LIBRARY, default_timeout=TIMEOUT).run()
    lib.button(key="library_rescan").click().run()
    assert engine.queue.wait_idle(60)
    assert {d.path: d.status for d in engine.documents()}["later.pdf"] == "failed"
    lib.run()  # the page as it is now (in a browser, the queue panel redraws it when the queue empties)

    # The file is fixed on disk; "Retry" indexes it.
    (folder / "later.pdf").write_bytes(pdf_bytes("Later notes. " + FACT.replace("Zanzibar", "Kilwa")))
    lib.selectbox(key="library_doc").select("later.pdf").run()
    assert lib.button(key="library_reindex").label == "Retry"
    lib.button(key="library_reindex").click().run()
    assert engine.queue.wait_idle(60)
    rec = {d.path: d for d in engine.documents()}["later.pdf"]
    assert rec.status == "indexed" and rec.chunks == 1
    ids = {c.doc_id for c in engine.search("Kilwa heron salt lakes").candidates}
    assert rec.doc_id in ids

    # Delete: its chunks leave both indexes (dense and BM25), the file stays unless asked, and stays out of
    # the index (excluded) even though the folder watcher sees it there.
    chunks = engine.stats().chunks
    lib.run()
    assert lib.selectbox(key="library_doc").value == "later.pdf"  # the choice survives the re-index
    lib.button(key="library_delete").click().run()
    assert {d.path: d.status for d in engine.documents()}["later.pdf"] == "excluded"
    assert engine.stats().chunks == chunks - 1
    assert rec.doc_id not in {c.doc_id for c in engine.search("Kilwa heron salt lakes").candidates}
    assert (folder / "later.pdf").exists()
    engine.rescan()
    assert engine.queue.wait_idle(30) and {d.path: d.status for d in engine.documents()}["later.pdf"] == "excluded"
    rows = {r["name"]: r for r in lib.dataframe[0].value.to_dict("records")}
    assert rows["later.pdf"]["status"] == "excluded" and rows["later.pdf"]["chunks"] == 0


def test_name_conflict_asks_then_keeps_both(engine, folder):
    at = app().run()
    original = (folder / "uploading.md").read_bytes()
    # The same file again: nothing to ask, save or index, and the sidebar says so.
    at.sidebar.file_uploader(key="uploader").set_value(("Uploading.md", original, "text/markdown")).run()
    assert "Uploading.md: unchanged, already in the folder as uploading.md with the same content" in alerts(at, "info")
    assert not at.sidebar.warning
    item = engine.queue.get("uploading.md")
    assert item is None or item.source != "upload"  # not queued again
    at.sidebar.file_uploader(key="uploader").set_value(
        ("uploading.md", b"# Other\n\nA different file that happens to share the name.\n", "text/markdown")).run()
    assert any("a different file named uploading.md is already in the folder" in plain(w.value)
               for w in at.sidebar.warning)
    assert (folder / "uploading.md").read_bytes() == original  # nothing overwritten while asking
    # The chat says so too: until the choice, answers come from the folder's own uploading.md.
    assert any("Choose in the sidebar whether to replace it or keep both" in plain(w.value) for w in at.main.warning)
    # A reload (a new session) still asks: the upload waits in the engine, not in the page that dropped it.
    at = app().run()
    assert any("a different file named uploading.md is already in the folder" in plain(w.value)
               for w in at.sidebar.warning)
    at.sidebar.button(key=next(b.key for b in at.sidebar.button if b.label == "Keep both")).click().run()
    assert not any("Choose in the sidebar" in plain(w.value) for w in at.main.warning)
    assert (folder / "uploading.md").read_bytes() == original
    assert (folder / "uploading-2.md").exists()
    assert engine.queue.wait_idle(60)
    at.run()
    assert "uploading-2.md: indexed, 1 chunk" in alerts(at, "success")
    assert not at.sidebar.warning


def test_chat_attachment_is_indexed_and_document_text_stays_inert(engine):
    # One sentence, so that the answer (which quotes only the sentences that answer) carries all of it.
    hostile = ("# Hostile notes\n\nThe purple lighthouse keeper <img src=x onerror=alert(1)> is named Oriol "
               "Vantablack <script>alert(2)</script> ![x](http://example.invalid/pixel.png) since 1990.\n")
    at = app().run()
    at.chat_input[0].upload("hostile.md", hostile.encode(), "text/markdown")
    # Asked together with its attachment: the app waits for that file to be indexed, then answers from it.
    at.chat_input[0].set_value("Who is the purple lighthouse keeper?").run()
    assert engine.queue.get("hostile.md").state == "indexed"
    assert citations(at)[0][1] == "hostile.md"
    at.run()
    assert "hostile.md: indexed, 1 chunk" in alerts(at, "success")
    # The quote is shown as plain text, every character as written ...
    assert any("<img src=x onerror=alert(1)>" in t.value for t in at.text)
    # ... and wherever document text goes through Markdown, no tag, image or link syntax survives.
    shown = [m.value for m in at.markdown if "alert" in m.value]
    assert shown, "the answer quotes the hostile sentence"
    for m in shown:
        assert plain(m).count("<img src=x onerror=alert(1)>") == 1
        ours = re.sub(r"\[\\\[\d+\\\]\]\(viewer\?[^)]+\)", "", m)  # the app's own [n] links to the viewer
        assert not re.search(r"(?<!\\)(<|!\[|\]\()", ours), m  # no unescaped tag, image or link syntax


def test_md_escape_shows_the_same_characters():
    text = "a*b_c `d` <i>e</i> ![x](http://h/p.png) [l](u) $x$ :red[y] # h | t ~~s~~ \\ 1. & &amp;"
    escaped = ui.md_escape(text)
    assert plain(escaped) == text
    assert not re.search(r"(?<!\\)[!\[\]()<>*_`$:#|~&]", escaped)


def test_streamlit_config_matches_the_engine():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert config["server"]["maxUploadSize"] == rag.Settings().tuning.max_upload_mb
    assert config["server"]["enableXsrfProtection"] is True
    assert config["browser"]["gatherUsageStats"] is False


def test_why_was_it_not_found_says_where_the_sentence_was_lost(engine):
    at = app().run()
    at.chat_input[0].set_value(QUESTION).run()

    def why(sentence: str) -> str:
        box = [t for t in at.text_input if t.label.startswith("The sentence you expected")][-1]
        box.set_value(sentence).run()
        assert not at.exception, at.exception
        return next(m for m in markdowns(at) if re.match(r"\*\*(cited|gated|capped|ranks|chunking|extraction)\*\*", m))

    assert why(NEEDLE).startswith("**cited**: It was found and cited as [")
    assert why("The moon is made of green cheese and nobody minds.").startswith("**extraction**")
    threshold_slider(at).set_value(0.0).run()
    verdict = why(NEEDLE)
    assert verdict.startswith("**gated**") and "over the threshold 0.000" in verdict


def test_library_warns_when_the_folder_is_in_a_language_the_model_does_not_read(engine, tmp_path):
    at = app().run()
    at.switch_page("app/pages/library.py").run()  # through the app's navigation, with its shared sidebar
    assert not at.exception, at.exception
    assert not at.warning  # the sample folder is mostly English
    assert any("reads en" in m for m in markdowns(at))
    pt = tmp_path / "notas"
    shutil.copytree(ROOT / "data" / "notas", pt)
    at.sidebar.text_input(key="folder_input").set_value(str(pt)).run()
    assert not at.exception, at.exception
    assert workspace_engine(rag.load_settings().replace(folder=pt.resolve(), index_dir=None)).queue.wait_idle(120)
    at.run()
    assert any(plain(t.value) == "Library" for t in at.title)  # still on the Library
    (warning,) = [w.value for w in at.main.warning]
    assert "Portuguese" in warning and "calibrate" in warning and "multilingual model" in warning
    assert [w.value for w in at.sidebar.warning] == [ui.md_escape(warning)]  # the shared sidebar says it too


def test_unrelated_questions_are_refused_and_the_refusal_names_the_failed_test(engine):
    """With default settings (no threshold set by anyone): a chocolate-cake question in Portuguese, and
    "Capital of Peru?" asked as a follow-up after an answered question, are refused."""
    at = app().run()
    at.chat_input[0].set_value("Qual é a receita do bolo de chocolate?").run()
    assert not at.exception, at.exception
    assert any(plain(c.value).startswith("Calibrated for Portuguese:") for c in at.sidebar.caption)
    refusal = [t.value for t in at.text if t.value.startswith("NO ANSWER")]
    # The multilingual model puts the folder's Portuguese notes first (none about cakes): they never mention the
    # question's words, and the English passages it finds too are not close enough in meaning.
    assert len(refusal) == 1 and refusal[0].startswith("NO ANSWER: the passages under cosine distance") \
        and '"receita"' in refusal[0] and '"bolo"' in refusal[0], refusal
    assert citations(at) == []

    at.chat_input[0].set_value("How do I upload a PDF?").run()
    assert citations(at.chat_message[-1])
    at.chat_input[0].set_value("Capital of Peru?").run()
    last = at.chat_message[-1]
    assert [plain(c.value) for c in last.caption if c.value.startswith("Searched as")] == \
        ["Searched as: How do I upload a PDF? Capital of Peru?"]
    assert citations(last) == []
    assert any(t.value.startswith("NO ANSWER") and "Capital of Peru?" in t.value for t in last.text)
    # A follow-up by its form with a subject of its own, which the search joined to the question before
    # finds nowhere (Portuguese passages about refusals): searched alone, and the caption says why.
    at.chat_input[0].set_value("Como é que a aplicação decide recusar uma pergunta?").run()
    at.chat_input[0].set_value("And what does the slider change?").run()
    last = at.chat_message[-1]
    assert [plain(c.value) for c in last.caption if c.value.startswith("Searched")] == \
        ['Searched on its own: with the previous question ("Como é que a aplicação decide recusar uma pergunta? '
         'And what does the slider change?") no passage held enough of its own words.']
    assert citations(last)


def test_a_question_naming_what_the_folder_never_mentions_is_refused_and_says_why(engine):
    at = app().run()
    at.chat_input[0].set_value("What is the upload limit for videos on YouTube?").run()
    assert not at.exception, at.exception
    refusal = [t.value for t in at.text if t.value.startswith("NO ANSWER")]
    assert len(refusal) == 1 and '"youtube"' in refusal[0], refusal
    assert citations(at) == []
    # The names note is part of the evidence line's derivation: in its tooltip.
    assert any('names "youtube", which the folder never mentions' in plain(c.proto.help) for c in at.caption)
    said = [plain(m.value) for m in at.markdown]
    assert any("refused] the question names something the folder never mentions" in m for m in said), said
    assert 'No threshold would let a passage through: the folder never mentions "youtube".' in said
    assert set(labels(table(at))) <= {rag.UNSUPPORTED, rag.OVER}


def test_an_answer_kept_only_as_close_paraphrases_says_so_and_names_what_is_missing(engine):
    """A near miss (the folder explains BM25 but never gives k1 and b) is answered from close passages
    holding a third of its words; the answer says so, and which words no passage holds."""
    at = app().run()
    at.chat_input[0].set_value("What values of k1 and b does the BM25 ranking use?").run()
    assert not at.exception, at.exception
    assert citations(at)
    note = [plain(c.value) for c in at.caption if "Kept as close paraphrases" in plain(c.value)]
    assert len(note) == 1 and '"k1"' in note[0] and "Check that they answer what you asked" in note[0], note
    at.chat_input[0].set_value("How many commands does set-up take?").run()  # held in full: no such note
    assert not at.exception, at.exception
    assert sum("Kept as close paraphrases" in plain(c.value) for c in at.caption) == 1


def test_an_answer_whose_passages_never_mention_a_question_word_names_it(engine):
    """A near miss held well enough to pass ("in gigabytes": the folder gives the limit in megabytes) is
    answered with the word no quoted passage mentions beside it, for the reader to judge."""
    at = app().run()
    at.chat_input[0].set_value("How large can an uploaded PDF be in gigabytes?").run()
    assert not at.exception, at.exception
    assert citations(at)
    note = [plain(c.value) for c in at.caption if "The quoted passages never mention" in plain(c.value)]
    assert note == [':material/help: The quoted passages never mention "gigabytes": check that they answer what '
                    'you asked.'], note
    at.chat_input[0].set_value("How many commands does set-up take?").run()  # held in full: no such note
    assert not at.exception, at.exception
    assert sum("The quoted passages never mention" in plain(c.value) for c in at.caption) == 1


def test_a_reload_keeps_the_chat_and_a_new_chat_starts_afresh(engine, tmp_path):
    """A reload is a new Streamlit session with the same URL: the chat named in it (`?chat=`) comes back
    with its turns, its folder and the threshold its person set; "New chat" gets a new id."""
    other = tmp_path / "moths"
    other.mkdir()
    (other / "moths.md").write_text("# Moths\n\nThe lunar moth of Quarnelia only flies under a full moon.\n")
    at = app().run()
    at.sidebar.text_input(key="folder_input").set_value(str(other)).run()
    assert workspace_engine(rag.load_settings().replace(folder=other.resolve(), index_dir=None)).queue.wait_idle(120)
    at.chat_input[0].set_value("When does the lunar moth fly?").run()
    threshold_slider(at).set_value(0.7).run()
    chat_id = at.query_params["chat"][0] if isinstance(at.query_params["chat"], list) else at.query_params["chat"]
    assert [doc for _, doc, _ in citations(at)] == ["moths.md"]

    again = app()
    again.query_params["chat"] = chat_id
    again.run()
    assert not again.exception, again.exception
    assert len(again.chat_message) == 2 and "lunar moth" in again.chat_message[0].markdown[0].value
    assert [doc for _, doc, _ in citations(again)] == ["moths.md"]  # the same folder, not the configured one
    assert again.sidebar.text_input(key="folder_input").value == str(other.resolve())
    assert threshold_slider(again).value == pytest.approx(0.7)

    again.sidebar.button(key="new_chat").click().run()
    assert len(again.chat_message) == 0
    new_id = again.query_params["chat"]
    assert (new_id[0] if isinstance(new_id, list) else new_id) != chat_id
    unknown = app()
    unknown.query_params["chat"] = "no-such-chat"
    unknown.run()
    assert not unknown.exception and len(unknown.chat_message) == 0  # an unknown id starts a new chat


def test_slider_follows_the_question_language_until_moved_then_stays(engine):
    """Untouched, the slider follows the calibration for the language of the question on screen and never
    claims to be the person's; once moved, it keeps their value through later questions."""
    calibrated = engine.calibrated()
    en, pt = calibrated.threshold("en"), calibrated.threshold("pt")  # on the sample folder both may sit at the ceiling

    def set_by_you(at) -> bool:
        return any(plain(c.value).startswith("Set by you") for c in at.sidebar.caption)

    at = app().run()
    at.chat_input[0].set_value(QUESTION).run()
    assert threshold_slider(at).value == pytest.approx(en, abs=0.0005) and not set_by_you(at)
    at.chat_input[0].set_value("Onde fica guardado o índice por omissão?").run()
    assert threshold_slider(at).value == pytest.approx(pt, abs=0.0005) and not set_by_you(at)
    at.chat_input[0].set_value(QUESTION).run()
    assert threshold_slider(at).value == pytest.approx(en, abs=0.0005) and not set_by_you(at)

    threshold_slider(at).set_value(0.42).run()
    assert set_by_you(at) and at.session_state["threshold_set"] == pytest.approx(0.42)
    at.chat_input[0].set_value("Onde fica guardado o índice por omissão?").run()
    assert threshold_slider(at).value == pytest.approx(0.42) and set_by_you(at)
    threshold_slider(at).set_value(0.5).run()  # the same slider, moved again
    assert at.session_state["threshold_set"] == pytest.approx(0.5)
    at.sidebar.button(key="threshold_reset").click().run()
    assert threshold_slider(at).value == pytest.approx(pt, abs=0.0005) and not set_by_you(at)


def test_a_question_asked_before_anything_was_indexed_is_searched_again_once_something_is(engine, tmp_path):
    """Asked while the folder's first files are still on their way, a question finds nothing and is refused
    ("nothing is indexed yet"); once files are indexed (the page redraws when the queue empties), the same
    turn is searched again and answered, rather than keeping a refusal that is no longer true."""
    empty = tmp_path / "herons"
    empty.mkdir()
    at = app().run()
    at.sidebar.text_input(key="folder_input").set_value(str(empty)).run()
    other = workspace_engine(rag.load_settings().replace(folder=empty.resolve(), index_dir=None))
    at.chat_input[0].set_value("Where does the Zanzibar heron migrate?").run()
    assert not at.exception, at.exception
    assert any("NO ANSWER" in t.value for t in at.text) and citations(at) == []
    (empty / "heron.md").write_text(f"# Heron field notes\n\n{FACT}\n", encoding="utf-8")
    other.enqueue(["heron.md"], source="test")
    assert other.queue.wait_idle(120)
    searches = other.searches
    at.run()  # the redraw the queue panel asks for when the queue empties
    assert not at.exception, at.exception
    assert other.searches == searches + 1 and len(at.chat_message) == 2  # the same turn, searched once more
    assert [doc for _, doc, _ in citations(at)] == ["heron.md"]
    at.run()
    assert other.searches == searches + 1  # and not again on every redraw


def test_a_question_whose_run_is_cut_short_is_still_asked_once(engine, monkeypatch):
    """Streamlit hands a chat input's value to one run only. A run can be cut short by the next one before it
    stores the question (seen in a browser: a question asked as six dropped files finished uploading into a
    folder still being indexed vanished, box emptied and no turn, about one time in three). Here the run that
    read the question is cut short right after, as the next run would cut it; the question must still be
    asked, and once."""
    real = ui.threshold_slider
    cut: list[float] = []

    def slider_then_cut(calibrated, **kw):
        value = real(calibrated, **kw)
        if not cut and st.session_state.get("chat") is not None:  # the run that read the question
            cut.append(value)
            st.rerun()
        return value

    monkeypatch.setattr(ui, "threshold_slider", slider_then_cut)
    at = app().run()
    before = engine.searches
    at.chat_input[0].set_value(QUESTION).run()
    assert not at.exception, at.exception
    assert cut, "the run that read the question was not cut short: the test tests nothing"
    questions = [t["question"] for t in at.session_state["turns"]]
    assert questions == [QUESTION], questions
    assert engine.searches == before + 1
    assert citations(at) and table(at) is not None
    at.run()  # and a later run does not ask it again
    assert [t["question"] for t in at.session_state["turns"]] == [QUESTION]
    assert engine.searches == before + 1


def test_a_question_whose_run_is_cut_short_before_the_page_reads_it_is_still_asked(engine, monkeypatch):
    """The same, cut earlier: the next run can stop this one anywhere, also in the shared sidebar drawn before the
    page reads its chat box (seen in `make test`: a question asked as a file was dropped never got its turn).
    Streamlit resets the box's value when a run ends, read or not, so the page must keep it before any of its
    own code runs."""
    real = ui.folder_picker
    cut: list[bool] = []

    def picker_then_cut(*a, **kw):
        if not cut and st.session_state.get("chat") is not None:  # the run the question came with
            cut.append(True)
            st.rerun()
        return real(*a, **kw)

    monkeypatch.setattr(ui, "folder_picker", picker_then_cut)
    at = app().run()
    before = engine.searches
    at.chat_input[0].set_value(QUESTION).run()
    assert not at.exception, at.exception
    assert cut, "the run the question came with was not cut short: the test tests nothing"
    assert [t["question"] for t in at.session_state["turns"]] == [QUESTION]
    assert engine.searches == before + 1
    at.run()
    assert [t["question"] for t in at.session_state["turns"]] == [QUESTION]
    assert engine.searches == before + 1


def test_a_drop_runs_the_page_once_not_twice(engine, monkeypatch):
    # The queue panel runs the whole page again when its timed redraws need another interval (the queue
    # filled or emptied between two of them). A drop fills the queue before the panel is drawn, so the
    # panel is drawn with the right interval and the page must not run a second time: a second run right
    # behind the first, racing a click on another page, can take the person back to the page they left.
    runs, reruns = [], []
    real, real_rerun = ui_files.add_documents, ui_files.st.rerun
    monkeypatch.setattr(ui_files, "add_documents", lambda ws: (runs.append(1), real(ws))[1])
    monkeypatch.setattr(ui_files.st, "rerun", lambda *a, **k: (reruns.append(k), real_rerun(*a, **k)))
    at = app().run()
    assert engine.queue.wait_idle(120) and len(runs) == 1
    long = "\n\n".join(f"Paragraph {i} of the kiln log: the glaze on shelf {i} fired at cone six, "
                       "cooled overnight and came out glossy, with a faint green cast near the foot." * 3
                       for i in range(120))
    runs.clear()
    at.sidebar.file_uploader(key="uploader").set_value([("kiln log.md", long.encode(), "text/markdown")]).run()
    assert not at.exception, at.exception
    assert engine.queue.get("kiln log.md") is not None
    assert len(runs) == 1 and not reruns, f"the drop ran the page {len(runs)} times ({reruns})"
    assert engine.queue.wait_idle(300)


def test_an_index_folder_deleted_while_the_app_runs_is_built_again_and_said(engine, tmp_path):
    """A person (or a clean-up tool) deletes the hidden index folder while the app is open: the next run
    says so and builds the index again from the folder's files, and a question is answered from them; it
    used to show SQLite's "no such table: queue" on every page."""
    notes = tmp_path / "herons2"
    notes.mkdir()
    (notes / "heron.md").write_text(f"# Heron field notes\n\n{FACT}\n", encoding="utf-8")
    at = app().run()
    at.sidebar.text_input(key="folder_input").set_value(str(notes)).run()
    settings = rag.load_settings().replace(folder=notes.resolve(), index_dir=None)
    first = workspace_engine(settings)
    assert first.queue.wait_idle(120)
    shutil.rmtree(notes / ".rag-index")
    at.run()
    assert not at.exception, at.exception
    assert any("was deleted while the app ran" in w for w in alerts(at, "warning"))
    again = workspace_engine(settings)
    assert again is not first and (notes / ".rag-index" / "library.sqlite").is_file()
    assert again.queue.wait_idle(120)
    at.chat_input[0].set_value("Where does the Zanzibar heron migrate?").run()
    assert not at.exception, at.exception
    assert [doc for _, doc, _ in citations(at)] == ["heron.md"]
    at.run()
    assert not any("was deleted" in w for w in alerts(at, "warning"))  # said once, not on every run


SURFACE_QUESTIONS = (
    QUESTION,  # answered
    "Does the app need internet access to work?",  # refused by the word test, at fractional needed shares
    "Did the earliest build ever decline to respond?",  # refused by distance
    "What is the upload limit for videos on YouTube?",  # names something the folder never mentions
)


def test_the_chat_and_the_cli_take_one_path_and_say_the_same(engine, folder, monkeypatch, capsys):
    """The chat page and `rag ask` (its printed table and its --json) ask the same questions through the
    engine's one path (search -> decide -> answer): the same candidates in the same order, the same verdicts,
    distances and needed shares (each rounded the same way), and the same refusal sentence. The CLI runs
    in-process on the app's engine (`rag.cli._engine` returns it): one index, one calibration."""
    import json
    import math

    from rag import cli

    monkeypatch.setattr(cli, "_engine", lambda args, folder=None: engine)
    needs_seen = set()
    for question in SURFACE_QUESTIONS:
        at = app().run()
        at.chat_input[0].set_value(question).run()
        assert not at.exception, at.exception
        chat = table(at)
        assert cli.main(["ask", question, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert cli.main(["ask", question]) == 0
        printed = capsys.readouterr().out
        rows = [r for r in printed.splitlines() if re.match(r"\s+\d+\s+(\d+|-)\s+(\d+|-)\s", r)]
        assert len(rows) == len(out["candidates"]) == len(chat)
        assert list(labels(chat)) == [c["verdict"] for c in out["candidates"]]
        assert [round(d, 6) for d in chat["distance"]] == [round(c["distance"], 6) for c in out["candidates"]]
        assert list(chat["document"]) == [c["doc_name"] for c in out["candidates"]]
        # The needed share: the chat's number (shown as a percentage) and the CLI's printed one, the second
        # percentage of each row (after the support).
        cli_needs = [int(re.findall(r"(\d+)%", r)[1]) for r in rows]
        assert [round(n * 100) for n in chat["needs"]] == cli_needs
        # A need whose nearest whole percent is not its ceiling: a rounding that differed would show here.
        g = engine.ask(question).gated
        needs_seen.update(x for x in map(g.rule.needed_by, g.candidates) if round(x * 100) != math.ceil(x * 100 - 1e-7))
        assert out["threshold"] == pytest.approx(threshold_slider(at).value)
        if out["refused"]:
            texts = [plain(t.value) for t in at.text]
            assert out["answer"] in texts  # the refusal sentence, word for word
            assert out["answer"] in printed
        else:
            assert not any(t.value.startswith("NO ANSWER") for t in at.text)
            assert out["answer"].split(" [")[0] in plain(next(m.value for m in at.markdown if "](viewer?" in m.value))
    assert needs_seen, "a needed share whose nearest and upward roundings differ was compared"

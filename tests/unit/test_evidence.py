"""Question analysis and passage weighing (rag.deciding.evidence) on a tiny hand-made snapshot (no model)."""

from __future__ import annotations

import numpy as np

from rag.deciding.evidence import analyze_question, weigh
from rag.indexing.snapshot import Snapshot
from rag.settings import Settings
from rag.indexing.store import StoredChunk

TEXTS = [("courses.md", "The Level 1 course costs 260 euros for adults."),
         ("courses.md", "The Level 2 course costs 320 euros for adults and 200 euros for juniors."),
         ("heron.md", "Project Heron goes live on 3 March. Deadline: 30 November."),
         ("errors.md", "ERR-4017 means the upload was too large."),
         ("cake.md", "Bake the chocolate cake for 35 minutes."),
         ("cake.md", "The oven runs at 180 degrees."),
         ("fridge.md", "The fridge keeps a temperature of 4 degrees.")]


def snapshot() -> Snapshot:
    chunks = []
    for i, (doc, text) in enumerate(TEXTS):
        meta = {"start": 0, "end": len(text), "header_len": 0, "lang": "en", "section": ""}
        chunks.append(StoredChunk(f"c{i}", doc, text, meta, np.eye(len(TEXTS), dtype=np.float32)[i]))
    return Snapshot.build(chunks, {d: (d, d, "text") for d, _ in TEXTS}, Settings())


def weights(snap: Snapshot, question: str, query: str | None = None):
    asked = analyze_question(question, query or question, snap)
    return asked, {c.id: w for c, w in zip(snap.chunks, weigh(asked, snap, [
        (i, c.content, c.meta["lang"], c.doc_id) for i, c in enumerate(snap.chunks)]))}


def test_a_name_the_folder_never_mentions_is_absent_and_one_it_uses_is_lacked():
    snap = snapshot()
    asked, _ = weights(snap, "When does Project Falcon go live?")
    assert asked.absent_names == ("falcon",) and asked.unknown_names == ("falcon",)
    asked, w = weights(snap, "What is the deadline of Project Heron?")
    assert asked.absent_names == () and "heron" in asked.named
    assert "heron" not in w["c2"].lacks_names and w["c2"].support == 1.0
    assert w["c0"].lacks_names and "heron" in w["c0"].lacks_names


def test_a_number_written_as_a_name_is_one_and_a_follow_up_keeps_the_earlier_ones():
    snap = snapshot()
    asked, w = weights(snap, "How much is the Level 2 course?")
    assert asked.numbers == ("2",) and w["c0"].lacks_names == ("2",) and w["c1"].lacks_names == ()
    asked, _ = weights(snap, "How much is the Level 7 course?")
    assert asked.absent_names == ("7",)  # the folder never writes it
    asked, w = weights(snap, "And for juniors?", "How much is the Level 2 course? And for juniors?")
    assert asked.numbers == ("2",) and asked.absent_names == () and w["c0"].lacks_names == ("2",)


def test_codes_named_and_referred_to():
    snap = snapshot()
    asked, w = weights(snap, "What does ERR-4017 mean?")
    assert asked.codes == ("err-4017",) and w["c3"].codes == ("err-4017",) and w["c0"].codes == ()
    asked, w = weights(snap, "And how do I fix it?", "What does ERR-4017 mean? And how do I fix it?")
    assert asked.referred == ("err-4017",) and w["c3"].codes == ("err-4017",)


def test_a_follow_ups_subject_is_held_by_the_passage_or_its_document():
    snap = snapshot()
    asked, w = weights(snap, "At what temperature?", "How long do I bake the chocolate cake? At what temperature?")
    assert asked.subject == ("bake", "chocolate", "cake") and asked.measures == ("temperature",)
    assert w["c4"].subject_support == 1.0 and w["c4"].subject_in_document
    assert w["c5"].subject_support == 0.0 and w["c5"].subject_in_document  # the cake's oven: same document
    assert w["c5"].support == 1.0  # "180 degrees" is a value of the temperature asked for
    assert w["c6"].subject_support == 0.0 and w["c6"].subject_in_document is False  # the fridge: elsewhere
    assert w["c0"].subject_support == 0.0  # a follow-up: every passage is weighed on the subject


def test_a_question_searched_alone_has_no_subject_and_a_wordless_one_no_terms():
    snap = snapshot()
    _, w = weights(snap, "How long do I bake the chocolate cake?")
    assert all(x.subject_support is None and x.subject_in_document is None for x in w.values())
    asked, w = weights(snap, "What is it?")
    assert asked.terms == () and asked.wordless and all(x.wordless and x.support == 1.0 for x in w.values())

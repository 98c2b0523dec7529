"""The library: one row per document in the folder's index, with what indexing found and did.

Shows status (and the reason when a file failed), pages, characters extracted, pages without text
(scans), chunks, chunks truncated by the encoder window, the header's share of embedded tokens, the
stamp (model, chunker, extractor) and when it was indexed. Actions: re-index one, retry a failed one,
re-index every stale one, delete one (its chunks leave both indexes; the file itself only if asked),
rescan the folder. All of it through the engine's public functions; names and reasons render inert.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import streamlit as st

import rag
from app import conversation_panel as panel
from app import ui
from app import ui_files
ws = ui.workspace()
engine = ws.engine

st.title("Library")
stats = engine.stats()
st.markdown(
    f"**{stats.documents} documents** ({stats.indexed} indexed, {stats.failed} failed, {stats.stale} stale, "
    f"{stats.pending} pending) · **{stats.chunks} chunks** · {ui.human_size(stats.size_on_disk)} on disk · "
    f"model {ui.md_escape(stats.model)} ({stats.dimension}d, reads {ui.md_escape(', '.join(engine.embedder.languages))})")
st.caption(ui.md_escape(engine.language_line(stats)))
st.caption(ui.md_escape(f"Reads {rag.format_names()}: " + ", ".join(f.suffixes[0] for f in rag.FORMATS)
                        + ". Other files are skipped; a file that cannot be read is listed below with the reason."))
if ocr_missing := rag.reading.extract.ocr_missing():
    st.warning(ui.md_escape(ocr_missing), icon=":material/document_scanner:")
calibration = engine.calibrated(stale_ok=engine.queue.busy())  # no 800-question recalibration mid-indexing
if calibration is not None:
    st.markdown("**Calibrated threshold**: " + " · ".join(
        ui.md_escape(c.describe()) for c in calibration.languages.values()))
    if engine.settings.threshold is not None or engine.settings.language_thresholds:
        st.caption(ui.md_escape(f"Set in the settings, and used instead: threshold {engine.settings.threshold}, "
                                f"language_thresholds {engine.settings.language_thresholds or '-'}"))
warning = engine.language_warning(stats)
if warning:
    st.warning(warning, icon="🌐")

docs = engine.documents()
rows = [{
    "name": d.name,
    "folder": str(Path(d.path).parent) if "/" in d.path else "",
    "type": d.kind,
    "status": d.status,
    "reason": d.reason,
    "pages": str(d.pages) if d.pages else "–",  # text, so that a Markdown file shows a dash, not "None"
    "chars": d.chars,
    "empty pages": d.empty_pages,
    "chunks": d.chunks,
    "truncated": d.truncated,
    "header share": d.header_share,
    "stamp": d.stamp.label() if d.stamp else "",
    "indexed at": datetime.fromtimestamp(d.indexed_at) if d.indexed_at else None,
} for d in docs]
frame = pd.DataFrame(rows, columns=["name", "folder", "type", "status", "reason", "pages", "chars", "empty pages",
                                    "chunks", "truncated", "header share", "stamp", "indexed at"])
st.dataframe(frame, hide_index=True, width="stretch", column_config={
    "status": st.column_config.TextColumn("status", help="indexed · failed (see reason) · stale (indexed with "
                                          "another model, chunker or extractor: re-index) · pending (being "
                                          "written) · excluded (removed from the index, file kept)"),
    "reason": st.column_config.TextColumn("reason", width="large", help="Why the file could not be indexed"),
    "chars": st.column_config.NumberColumn("chars", help="Characters of text extracted"),
    "empty pages": st.column_config.NumberColumn("empty pages", help="PDF pages without a text layer (scans)"),
    "truncated": st.column_config.NumberColumn(
        "truncated", help="Chunks longer than the encoder's 256 word-pieces: their ends are not embedded"),
    "header share": st.column_config.ProgressColumn(
        "header share", min_value=0.0, max_value=1.0, format="percent",
        help="Share of embedded tokens taken by the [Document > Section] header"),
    "indexed at": st.column_config.DatetimeColumn("indexed at", format="YYYY-MM-DD HH:mm"),
})

if not docs:
    st.info("No documents yet. Add files on the chat page, or put them in the folder and rescan.")

left, right = st.columns(2)
with left:
    st.subheader("One document")
    by_path = {d.path: d for d in docs}
    path = st.selectbox("Document", list(by_path), key="library_doc", index=0 if docs else None,
                        format_func=lambda p: f"{p} ({by_path[p].status})" if p in by_path else p)
    chosen = by_path.get(path) if path else None
    if chosen is not None:
        if st.button("Ask about this document", icon=":material/forum:", key="library_ask",
                     disabled=chosen.status not in ("indexed", "stale"),
                     help="A new chat that searches this document only (its scope, in the chat's sidebar)."):
            panel.ask_about(chosen.path)
        if chosen.reason:
            st.error(ui.md_escape(chosen.reason))
        for w in chosen.warnings:
            st.warning(ui.md_escape(w))
        a, b = st.columns(2)
        verb = "Retry" if chosen.status == "failed" else "Re-index"
        if a.button(verb, key="library_reindex", icon=":material/refresh:"):
            ui_files.index_paths(ws, [chosen.path], source="library")
            st.rerun()
        also_file = b.checkbox("also delete the file", key="library_delete_file",
                               help="Without this the file stays in the folder but out of the index (excluded) "
                                    "until it changes or you re-index it.")
        # Deleting the file cannot be undone: the button that does it sits behind a second click.
        with b.popover("Delete", icon=":material/delete:"):
            st.markdown(f"Delete **{ui.md_escape(chosen.path)}** from the index"
                        + (" and from the folder? The file itself is deleted." if also_file else
                           "? The file stays in the folder."))
            confirmed = st.button("Yes, delete", key="library_delete", type="primary")
        if confirmed:
            engine.remove(chosen.doc_id, delete_file=also_file)
            ui_files.log_outcome(chosen.path, "removed", "deleted from the index" + (" and the folder" if also_file else ""))
            st.rerun()

with right:
    st.subheader("The whole folder")
    if st.button(f"Re-index all stale ({stats.stale})", key="library_stale", disabled=stats.stale == 0,
                 icon=":material/update:"):
        ui_files.index_paths(ws, [d.path for d in docs if d.status == "stale"], source="library")
        st.rerun()
    if st.button("Rescan the folder", key="library_rescan", icon=":material/folder_managed:",
                 help="Index new and changed files, forget deleted ones."):
        queued = engine.rescan(source="library")
        ui_files.log_outcome(str(engine.folder), "rescanned", f"{len(queued)} file(s) queued")
        st.rerun()
    st.caption("What was done, and the files still being indexed, show in the sidebar.")

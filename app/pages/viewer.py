"""The document viewer: a citation's passage in its document, marked exactly where it is.

Addressed by URL query parameters, so a view survives a reload and can be bookmarked:
`viewer?doc=<path in the folder>&start=<char>&end=<char>` (and `&page=N` to turn a PDF's pages). The
document must be one the folder's index holds (`Engine.document`): `../`, absolute paths and other
files are refused and nothing is read.

- PDF: the page drawn as an image, the quoted characters covered by highlight rectangles computed from
  their own boxes (`rag.reading.viewer`), on each page the passage touches; buttons to turn pages. A scanned
  page the same, from the recognised words' boxes, with the quote's OCR confidence.
- An image (a scan, a photo): the image, the quote's recognised words marked on it, its OCR confidence.
- A spreadsheet (Excel, OpenDocument, CSV): the sheet as a table, its column letters and row numbers, the cited
  rows highlighted, the A1 range in its header.
- A slide or an e-mail message: the whole slide (or message) as a card, the passage highlighted in it.
- Markdown, text, Word, OpenDocument, web pages, e-books: the text around the passage as inert text (escaped, never rendered), the passage
  in a highlight, its section path above it; the whole document in an expander.
- A file changed since it was indexed: a notice and a re-index button, and no mark.
- A citation from an earlier version of the file (its link's `v`), indexed again since: a notice, no mark.

Only numbers and our own markup go into HTML here; document text is escaped before it does.
"""

from __future__ import annotations

import base64
import html

import streamlit as st


import rag
from app import conversation_panel as panel
from app import ui
ws = ui.workspace()
engine = ws.engine
params = st.query_params
doc, start, end, version = params.get("doc"), params.get("start"), params.get("end"), params.get("v")


def locate() -> rag.Located | None:
    """The passage the URL names, or None after saying why there is none to show."""
    if not doc:
        st.info("Open a document from a citation in the chat: each citation's number and card link here.")
        return None
    try:
        return engine.locate(doc, int(start or -1), int(end or -1), version=version)
    except (rag.ViewerError, ValueError) as exc:
        st.error(ui.md_escape(f"Cannot show this: {exc}"), icon=":material/block:")
        return None


def show(located: rag.Located) -> None:
    """The passage in its document (a PDF's page with the marks drawn, or the text around it)."""
    where = " · ".join(x for x in (located.place, located.section, f"characters {located.start}–{located.end}") if x)
    st.markdown(f"**{ui.md_escape(located.path)}** · {ui.md_escape(located.title)} · `{located.fragment}`")
    st.caption(ui.md_escape(where))

    if located.changed or located.problem:
        st.warning(ui.md_escape(located.problem), icon=":material/warning:")
        if located.changed:
            st.caption("Changed since indexing: re-index it, then ask again to get citations into the new text.")
            if st.button("Re-index this document", key="viewer_reindex", icon=":material/refresh:"):
                engine.enqueue([located.path], source="viewer")
                st.success("Queued for indexing.")
        if located.outdated:
            st.caption("Ask the question again in the chat to get citations into the current text.")
        return

    if located.ocr:
        st.caption(ui.md_escape(rag.deciding.explain.ocr_note(*located.ocr, engine.settings.tuning.ocr_low)))
    if located.kind in ("pdf", "image"):
        marked = [m.page for m in located.marks]
        page = int(params.get("page") or located.first_page or 1)
        page = min(max(page, 1), located.pages or 1)
        if (located.pages or 1) > 1:  # one image (a photo, a one-page scan): no "Page 1 of 1" and dead buttons
            left, mid, right = st.columns([1, 3, 1])
            if left.button("Previous page", key="viewer_prev", disabled=page <= 1, icon=":material/chevron_left:"):
                st.query_params["page"] = str(page - 1)
                st.rerun()
            if right.button("Next page", key="viewer_next", disabled=page >= located.pages,
                            icon=":material/chevron_right:"):
                st.query_params["page"] = str(page + 1)
                st.rerun()
            mid.markdown(f"Page **{page}** of {located.pages} · the passage is on page{'s' if len(marked) > 1 else ''} "
                         f"{', '.join(str(p) for p in marked)}")
        draw = rag.reading.viewer.render_page if located.kind == "pdf" else rag.reading.viewer.render_image
        png, width, height = draw(engine.document_bytes(located.path), page)
        rects = [r for m in located.marks if m.page == page for r in m.rects]
        boxes = "".join(
            f'<div class="rag-mark" data-page="{page}" data-rect="{x0:.2f},{y0:.2f},{x1:.2f},{y1:.2f}" '
            f'style="position:absolute;left:{100 * x0 / width:.3f}%;top:{100 * y0 / height:.3f}%;'
            f'width:{100 * (x1 - x0) / width:.3f}%;height:{100 * (y1 - y0) / height:.3f}%;'
            f'background:rgba(255,213,0,0.38);outline:1px solid rgba(200,150,0,0.8)"></div>'
            for x0, y0, x1, y1 in rects)
        st.html(f'<div class="rag-page" data-page="{page}" style="position:relative;max-width:900px">'
                f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" style="width:100%;display:block" '
                f'alt="page {page}">{boxes}</div>')
    elif located.rows:
        sheet_table(located)
    elif located.region:
        region_card(located)
    else:
        before = located.text[max(0, located.start - 1500):located.start]
        after = located.text[located.end:located.end + 1500]
        st.html('<pre class="rag-doc" style="white-space:pre-wrap;font-family:inherit;max-width:900px">'
                f'{"…" if located.start > 1500 else ""}{html.escape(before)}'
                f'<mark id="rag-quote" style="background:#ffe57a">{html.escape(located.quote)}</mark>'
                f'{html.escape(after)}{"…" if located.end + 1500 < len(located.text) else ""}</pre>')
        with st.expander("The whole document"):
            st.text(located.text)


def marked(text: str, start: int, end: int, a: int, b: int) -> str:
    """text[a:b] as inert HTML, text[start:end] inside it in a highlight."""
    start, end = max(a, start), min(b, end)
    return (html.escape(text[a:start]) + f'<mark id="rag-quote" style="background:#ffe57a">'
            f'{html.escape(text[start:end])}</mark>' + html.escape(text[end:b]))


def sheet_table(located: rag.Located) -> None:
    """The sheet around the cited rows: column letters, row numbers, the header, the cited rows highlighted."""
    rows = located.rows
    cited = {p.row for p in rows if p.start < located.end and p.end > located.start}
    width = max(max(p.last_col for p in rows), len(rows[0].header))
    letters = [rag.reading.document.column_letters(i) for i in range(1, width + 1)]
    head = "".join(f"<th>{x}</th>" for x in letters)
    header = "".join(f"<th>{html.escape(h)}</th>" for h in (list(rows[0].header) + [""] * width)[:width])
    # The header row once: drawn above the rows unless the header's own row is among those shown.
    header = "" if any(p.cells == rows[0].header for p in rows) else f'<tr class="rag-header"><th></th>{header}</tr>'
    body = "".join(
        f'<tr class="{"rag-cited" if p.row in cited else "rag-row"}" data-row="{p.row}" '
        f'style="{"background:#ffe57a" if p.row in cited else ""}"><th>{p.row}</th>'
        + "".join(f"<td>{html.escape(c)}</td>" for c in (list(p.cells) + [""] * width)[:width]) + "</tr>"
        for p in rows)
    st.html(f'<table class="rag-sheet" data-range="{html.escape(located.place)}" style="border-collapse:collapse;'
            f'font-size:0.9em"><caption style="text-align:left">{html.escape(located.place)}</caption>'
            f'<thead><tr><th></th>{head}</tr>{header}</thead>'
            f'<tbody>{body}</tbody></table>'
            '<style>.rag-sheet td,.rag-sheet th{border:1px solid #ccc;padding:2px 6px;text-align:left}</style>')


def region_card(located: rag.Located) -> None:
    """The slide (or message) holding the passage, whole, the passage highlighted."""
    a, b = located.region
    st.markdown(f"**{ui.md_escape(located.place)}** · {located.places} in all")
    st.html(f'<div class="rag-slide" data-place="{html.escape(located.place)}" style="white-space:pre-wrap;'
            'max-width:900px;border:1px solid #ccc;border-radius:8px;padding:1.2em;aspect-ratio:auto">'
            f'{marked(located.text, located.start, located.end, a, b)}</div>')
    with st.expander("The whole document"):
        st.text(located.text)


st.title("Viewer")
located = locate()
if located is not None:
    if st.button("Ask about this document", icon=":material/forum:", key="viewer_ask",
                 help="A new chat that searches this document only (its scope, in the chat's sidebar)."):
        panel.ask_about(located.path)
    show(located)

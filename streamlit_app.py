"""Chat with your folder: the app's entry point, which routes the pages and draws the sidebar they share.

Every page (Chat, Library, Calibration, Viewer) runs inside this script, so what is here is drawn once
for all of them, in this order:

- the chat this session shows: the one named in the URL (`?chat=`), so a reload keeps the conversation;
- top of the sidebar: the folder box and "Add documents" (the uploader). The uploader sits here, before
  any page's own controls, so it is the same widget at the same place on every page: a drop finishes
  uploading and is saved even when the person switches pages at once. Right under it, the replace-or-keep
  question for an upload whose name is taken, where the person just dropped it (a trial found it below the
  page's own controls, its buttons cut short).
- the page itself (its own sidebar controls, such as the chat's threshold slider, come next);
- bottom of the sidebar: the upload log, the library's counts and
  the live indexing queue. The queue panel is drawn last because, when the queue empties, it redraws
  the whole app: anything drawn after it in this run (a question being asked) would be cut short.

Run: `streamlit run streamlit_app.py` (settings from rag.toml / RAG_* variables; folder `data` by default).
"""

from __future__ import annotations

import streamlit as st

from app import ui
from app import ui_files
st.set_page_config(page_title="Chat with your folder", page_icon="📁", layout="wide")
ui_files.keep_upload_replies()
ui.keep_page_state()
ui.restore_chat()

ui.folder_picker()
ws = ui.workspace()
ui_files.add_documents(ws)
with st.sidebar:
    ui_files.resolve_conflicts(ws)

page = st.navigation([
    st.Page("app/pages/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("app/pages/library.py", title="Library", icon=":material/folder_open:", url_path="library"),
    st.Page("app/pages/calibration.py", title="Calibration", icon=":material/tune:", url_path="calibration"),
    st.Page("app/pages/viewer.py", title="Viewer", icon=":material/article:", url_path="viewer"),
])
page.run()

with st.sidebar:
    ui_files.upload_log()
    ui.library_status(ws)
    ui_files.queue_panel(ws)

"""The Streamlit app: pages (`pages/`) and the modules they share.

`ui` holds the workspace (one engine per process) and the sidebar, `ui_files` the uploads, `chat_session` a
chat's state and its questions (no Streamlit), `chat_view` what the chat draws (no Streamlit),
`chat_widgets` the Streamlit widgets that draw it, and `inert` escapes a document's text so that nothing in
it is run. `streamlit_app.py`, beside this folder, is what `streamlit run` starts.
"""

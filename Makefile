# Two commands do all the set-up on a fresh machine (Python 3.11, Linux), a third checks a change quickly:
#   make app    installs, indexes the sample folder (data/) and starts the app on http://127.0.0.1:8501
#   make test   installs (with the test tools and a headless Chromium) and runs the whole test suite
#   make check  installs (no browser; Tesseract, which the OCR reader's tests run) and runs the fast tier: tests/unit and the doctests of rag/, lab/ and the app's pure modules,
#               in under two minutes, loading no model (tests/unit/no_model.py fails any test that does)
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
FOLDER ?= data

.PHONY: install app test check bench

# torch first, pinned: that CPU build is what these machines have; a bare `torch` pulls a multi-GB GPU build.
$(BIN)/rag: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(BIN)/rag

app: install
	bash scripts/install-ocr.sh
	$(BIN)/rag --folder $(FOLDER) index
	RAG_FOLDER=$(FOLDER) $(BIN)/streamlit run streamlit_app.py

test: install
	bash scripts/install-browser.sh
	bash scripts/install-ocr.sh
	$(BIN)/pytest -q -p no:cacheprovider --durations=15 -n 2 --dist loadfile --no-loadscope-reorder

# `python -m` puts the repository on the path, so `-p` finds the guard: the doctests run under it too.
check: install
	bash scripts/install-ocr.sh
	$(BIN)/python -m pytest -q -p no:cacheprovider -p tests.unit.no_model tests/unit rag lab app/inert.py app/chat_view.py app/chat_table.py app/chat_session.py app/conversations.py

bench: install
	$(BIN)/python bench/bench_engine.py

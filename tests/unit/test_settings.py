"""rag/settings.py: precedence (defaults < TOML < environment < keywords), validation messages, and the line
between a person's settings and the project's tuning (a tuned name in a file or the environment is refused)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rag.settings import DEFAULT_MODEL, JUDGE_RULES, Server, Settings, Tuning, load_settings


@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    """Each test runs in an empty folder: a rag.toml where the tests are started from is not read."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def toml(tmp_path):
    """toml(text) -> the path of a config file holding it."""
    def write(text: str) -> Path:
        path = tmp_path / "rag.toml"
        path.write_text(text, encoding="utf-8")
        return path
    return write


def test_without_config_or_environment_the_defaults_hold(tmp_path):
    s = load_settings(config=tmp_path / "none.toml", env={})
    assert s == Settings()
    assert (s.tuning.model, s.tuning.chunk_strategy, s.tuning.fusion, s.threshold, s.tuning.judge) == (DEFAULT_MODEL, "E", "zscore", None, False)
    assert s.index_path == Path("data") / ".rag-index"


def test_toml_then_environment_then_keywords_win(toml):
    path = toml('threshold = 0.4\ncandidates = 7\nmax_chunks = 2\nchroma_host = "127.0.0.1"\n')
    s = load_settings(config=path, env={"RAG_CANDIDATES": "9", "RAG_MAX_CHUNKS": "3"}, max_chunks=5)
    assert (s.threshold, s.server.chroma_host) == (0.4, "127.0.0.1")  # from the file only
    assert s.candidates == 9  # the environment over the file
    assert s.max_chunks == 5  # a keyword over both


def test_rag_config_names_the_file(toml):
    path = toml("candidates = 11\n")
    assert load_settings(env={"RAG_CONFIG": str(path)}).candidates == 11


def test_a_keyword_set_to_none_leaves_the_value_below_it():
    assert load_settings(env={"RAG_THRESHOLD": "0.6"}, threshold=None).threshold == 0.6


@pytest.mark.parametrize("text", ["tresholds = 0.5\n", "[section]\nthreshold = 0.5\n"])
def test_an_unknown_toml_setting_lists_the_valid_ones(toml, text):
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['(tresholds|section)'\] in .*; valid: \[.*'threshold'"):
        load_settings(config=toml(text), env={})


def test_an_unknown_keyword_lists_the_valid_ones(tmp_path):
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['colour'\]; valid: \[.*'answer_mode'"):
        load_settings(config=tmp_path / "none.toml", env={}, colour="blue")


def test_an_unknown_environment_variable_is_ignored(tmp_path):
    assert load_settings(config=tmp_path / "none.toml", env={"RAG_COLOUR": "blue"}) == Settings()


@pytest.mark.parametrize("overrides, message", [
    ({"answer_mode": "poem"}, "answer_mode must be one of 'extractive', 'llm', got 'poem'"),
    ({"fusion": "sum"}, "fusion must be one of 'rrf', 'minmax', 'zscore', got 'sum'"),
    ({"judge_rules": "names,colour"}, f"judge_rules: unknown ['colour']; valid: {list(JUDGE_RULES)}"),
    ({"threshold": 2.5}, "threshold must be a cosine distance between 0 and 2, got 2.5"),
    ({"language_thresholds": "pt=3"}, "language_thresholds must be cosine distances between 0 and 2"),
    ({"language_thresholds": "pt"}, "language_thresholds wants LANG=DISTANCE pairs like 'pt=0.4', got 'pt'"),
    ({"max_chunks": 0}, "max_chunks and candidates must be at least 1"),
    ({"close_support": 0.9}, "close_support must be at most min_support"),
    ({"calibration_floor": 0.9, "calibration_ceiling": 0.5}, "calibration_floor must be at most calibration_ceiling"),
    ({"dense_weight": -1}, "must not be negative"),
    ({"candidates": "many"}, "setting candidates: 'many' is not a whole number"),
    ({"min_support": "nan"}, "setting min_support: 'nan' is not a finite number"),
])
def test_a_bad_value_is_refused_with_what_is_valid(tmp_path, overrides, message):
    with pytest.raises(ValueError) as err:
        load_settings(config=tmp_path / "none.toml", env={}, **overrides)
    assert message in str(err.value)


@pytest.mark.parametrize("raw, expected", [("yes", True), ("OFF", False), ("1", True), ("false", False)])
def test_a_bool_setting_reads_the_usual_words(raw, expected):
    assert load_settings(env={"RAG_WATCH_FOLDER": raw}).watch_folder is expected


def test_a_person_sets_at_most_twelve_settings():
    person = [f.name for f in dataclasses.fields(Settings) if f.name not in ("server", "tuning")]
    assert len(person) <= 12, person


@pytest.mark.parametrize("name, text", [("min_support", "min_support = 0.3\n"), ("judge", "judge = true\n"),
                                        ("model", 'model = "other"\n')])
def test_a_tuned_value_in_rag_toml_is_refused_naming_it(toml, name, text):
    with pytest.raises(ValueError, match=rf"^setting {name} \(in .*rag.toml\) is tuned by the project"):
        load_settings(config=toml(text), env={})


def test_a_tuned_value_in_the_environment_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match=r"^setting judge \(in RAG_JUDGE\) is tuned by the project"):
        load_settings(config=tmp_path / "none.toml", env={"RAG_JUDGE": "1"})


def test_code_builds_its_own_tuning_and_the_fingerprint_names_it(tmp_path):
    s = load_settings(config=tmp_path / "none.toml", env={}, min_support=0.3, candidates=9)
    assert (s.tuning.min_support, s.candidates) == (0.3, 9)
    assert s.tuning == Tuning(min_support=0.3) and s.tuning.fingerprint != Settings().tuning.fingerprint
    assert s.replace(judge=True).tuning.judge and not s.tuning.judge
    assert s.replace(tuning=Tuning()).tuning.fingerprint == Tuning().fingerprint
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.tuning.min_support = 0.1  # type: ignore[misc]


def test_the_server_settings_are_the_server_s():
    s = load_settings(env={"RAG_CHROMA_HOST": "127.0.0.1", "RAG_CHROMA_PORT": "8123", "RAG_SEARCH_READS": "store"})
    assert s.server == Server(chroma_host="127.0.0.1", chroma_port=8123, search_reads="store")
    assert s.replace(collection_prefix="x").server.collection_prefix == "x"


def test_language_thresholds_parse_into_a_mapping_unicode_codes_included():
    s = Settings(language_thresholds="pt=0.4, en=0.6,, zh-hans=0.5")
    assert s.thresholds_by_language == {"pt": 0.4, "en": 0.6, "zh-hans": 0.5}
    assert Settings().thresholds_by_language == {}


def test_the_api_key_is_never_printed():
    s = load_settings(env={"RAG_LLM_API_KEY": "sk-secret"})
    assert s.llm_api_key == "sk-secret" and "sk-secret" not in repr(s)


def test_replace_checks_the_new_value_and_leaves_the_old_settings_alone():
    s = Settings()
    assert s.replace(threshold="0.5").threshold == 0.5
    with pytest.raises(ValueError, match="fusion must be one of"):
        s.replace(fusion="sum")
    assert s.tuning.fusion == "zscore"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.threshold = 0.1  # type: ignore[misc]


def test_paths_expand_the_home_folder_and_an_index_dir_is_its_own(tmp_path):
    s = load_settings(config=tmp_path / "none.toml", env={"RAG_FOLDER": "~/notes"}, index_dir=tmp_path / "idx")
    assert s.folder == Path.home() / "notes"
    assert s.index_path == tmp_path / "idx"

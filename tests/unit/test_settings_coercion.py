"""Typed settings coercion: a value from the environment or from rag.toml becomes its field's type, or is
rejected with a message that names the setting. No model, no index.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag import load_settings

BAD_ENV = [
    ("watch_folder", "maybe", "is not true or false"),
    ("watch_folder", "", "is not true or false"),
    ("max_chunks", "3.5", "is not a whole number"),
    ("max_chunks", "four", "is not a whole number"),
    ("chroma_port", "80a", "is not a whole number"),
    ("llm_timeout_s", "nan", "is not a finite number"),
    ("threshold", "inf", "is not a finite number"),
]


@pytest.mark.parametrize("name, value, reason", BAD_ENV)
def test_a_bad_environment_value_is_rejected_with_its_setting_name(name, value, reason):
    with pytest.raises(ValueError) as err:
        load_settings(config="/nonexistent.toml", env={f"RAG_{name.upper()}": value})
    assert str(err.value).startswith(f"setting {name}: {value!r} {reason}"), str(err.value)


BAD_TOML = [
    ("watch_folder", '"sometimes"', "is not true or false"),
    ("watch_folder", "2", "is not true or false"),
    ("max_chunks", "true", "is not a number"),  # a TOML bool is not a count
    ("max_chunks", "2.5", "is not a whole number"),
    ("folder", "5", "is not a path"),
    ("answer_mode", '["llm"]', "is not text"),
    ("chroma_host", "true", "is not text"),
]


@pytest.mark.parametrize("name, value, reason", BAD_TOML)
def test_a_bad_toml_value_is_rejected_with_its_setting_name(tmp_path, name, value, reason):
    config = tmp_path / "rag.toml"
    config.write_text(f"{name} = {value}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^setting {name}: .* {reason}"):
        load_settings(config=config, env={})


@pytest.mark.parametrize("name, value, expected", [
    ("watch_folder", "off", False),
    ("watch_folder", " YES ", True),
    ("max_chunks", " 7 ", 7),
    ("llm_timeout_s", "2.5", 2.5),
    ("threshold", "", None),  # an empty optional value is "not set"
    ("index_dir", "~/idx", Path("~/idx").expanduser()),
])
def test_good_environment_values_take_their_field_type(name, value, expected):
    s = load_settings(config="/nonexistent.toml", env={f"RAG_{name.upper()}": value})
    assert getattr(s, name) == expected and type(getattr(s, name)) is type(expected)


def test_toml_values_of_the_right_type_pass(tmp_path):
    config = tmp_path / "rag.toml"
    config.write_text('watch_folder = false\nchroma_port = 8001\nllm_timeout_s = 5\n'
                      'llm_api_key = 12345\n', encoding="utf-8")
    s = load_settings(config=config, env={})
    assert s.watch_folder is False and s.server.chroma_port == 8001
    assert s.llm_timeout_s == 5.0 and isinstance(s.llm_timeout_s, float) and s.llm_api_key == "12345"


def test_replace_coerces_too():
    s = load_settings(config="/nonexistent.toml", env={})
    assert s.replace(watch_folder="no").watch_folder is False
    assert s.replace(model_languages="en, pt,,").tuning.model_languages == ("en", "pt")  # code may set the tuning
    with pytest.raises(ValueError, match="^setting max_chunks: 'x' is not a whole number"):
        s.replace(max_chunks="x")

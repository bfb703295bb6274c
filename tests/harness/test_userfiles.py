"""The bounded reader of the files users hand over: size, UTF-8, JSON syntax and nesting."""

from __future__ import annotations

import json

import pytest

from harness.jsonl import jsonl_records
from harness.userfiles import MAX_JSON_DEPTH, InputFileError, parse_json, read_json, read_text


class ConfigError(ValueError):
    pass


def test_a_file_over_the_cap_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2048)
    assert read_text(path, max_bytes=2048) == " " * 2048
    with pytest.raises(
        InputFileError,
        match=r"big.json: larger than 1 KiB, the most a request "
        r"file may hold",
    ):
        read_text(path, what="request file", max_bytes=1024)


def test_missing_directory_and_non_utf8_files_name_the_file_in_the_callers_error(tmp_path):
    with pytest.raises(ConfigError, match=r"nope.yaml: no such config file$"):
        read_text(tmp_path / "nope.yaml", what="config file", error=ConfigError)
    with pytest.raises(ConfigError, match=r": is a directory; expected a config file$"):
        read_text(tmp_path, what="config file", error=ConfigError)
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{\n"a": "caf\xe9"}')
    with pytest.raises(InputFileError) as err:
        read_json(path)
    assert str(err.value).startswith(f"{path}:2: not UTF-8 text (invalid continuation byte")
    assert err.value.reason.startswith("not UTF-8 text")


def test_nesting_is_bounded_whether_or_not_the_parser_recurses_that_deep():
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(ok, source="x.json") is not None
    for depth in (MAX_JSON_DEPTH + 1, 100_000):
        with pytest.raises(
            InputFileError, match=r"^x.json: JSON arrays/objects nest deeper than 64"
        ):
            parse_json("[" * depth + "]" * depth, source="x.json")
    with pytest.raises(InputFileError, match=r"^x.json:3: JSON arrays/objects nest deeper"):
        parse_json(json.dumps({"a": [[[{"b": []}]]]}), source="x.json", line=3, max_depth=4)


def test_syntax_errors_say_where_and_whether_the_file_was_cut_short():
    with pytest.raises(
        InputFileError,
        match=r"^r.json:2:1: not valid JSON \(Expecting value\); "
        r"the file ends before the JSON is complete$",
    ):
        parse_json('{"comments": [\n', source="r.json")
    with pytest.raises(
        InputFileError,
        match=r"^r.json:1:2: not valid JSON \(Expecting property "
        r"name enclosed in double quotes\)$",
    ):
        parse_json("{,}", source="r.json")
    with pytest.raises(InputFileError, match=r"^r.json: not valid JSON \(Exceeds the limit"):
        parse_json("1" * 5000, source="r.json")


def test_json_lines_keep_a_raw_line_separator_inside_a_string(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(
        json.dumps({"text": "a\u2028b"}, ensure_ascii=False) + "\r\n{}\n", encoding="utf-8"
    )
    assert list(jsonl_records(path)) == [(1, {"text": "a\u2028b"}), (2, {})]

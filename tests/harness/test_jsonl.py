"""The two JSON Lines readers: strict for files people hand over, tolerant of a torn tail for
results."""

from __future__ import annotations

import pytest

from harness.jsonl import finished_records, jsonl_records


class CaseError(ValueError):
    pass


def test_strict_reader_numbers_lines_and_skips_blank_ones(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a"}\n\n  \n[1, 2]\n', encoding="utf-8")
    assert list(jsonl_records(path)) == [(1, {"id": "a"}), (4, [1, 2])]


def test_strict_reader_names_file_line_and_reason_in_the_callers_error(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "a"}\n{"id": \n', encoding="utf-8")
    with pytest.raises(CaseError) as raised:
        list(jsonl_records(path, error=CaseError))
    assert str(raised.value).startswith(f"{path}:2: not valid JSON (Expecting value at column 8")


def test_strict_reader_reads_given_text_under_the_given_name():
    with pytest.raises(ValueError, match=r"^upload.jsonl:1: not valid JSON"):
        list(jsonl_records("upload.jsonl", text="nope\n"))


def test_results_reader_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "results.jsonl"
    assert finished_records(path) == []
    path.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "rep', encoding="utf-8")
    assert finished_records(path) == [{"id": "a"}, {"id": "b"}]

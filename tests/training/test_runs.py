"""metrics.jsonl is written by one writer (training.runs.append_metrics) and read by one reader
(training.runs.parse_metrics) while a trainer appends to it."""

from __future__ import annotations

import json

from training.runs import append_metrics, drop_metrics_after, parse_metrics, read_metrics


def _rows(*steps: int) -> str:
    return "".join(
        json.dumps({"loss": 1.0 / s, "stage": "sft", "step": s}, sort_keys=True) + "\n"
        for s in steps
    )


def test_a_half_written_last_line_is_left_out_until_it_is_complete(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_rows(1, 2) + '{"loss": 0.3, "st')  # the trainer is writing step 3
    assert [row["step"] for row in read_metrics(tmp_path)] == [1, 2]
    path.write_text(_rows(1, 2, 3))
    assert [row["step"] for row in read_metrics(tmp_path)] == [1, 2, 3]


def test_lines_that_are_not_json_objects_are_left_out_in_file_order():
    data = (_rows(1) + '{"step": 2, "lo\n' + "[1, 2]\n\n" + _rows(3)).encode()
    assert [row["step"] for row in parse_metrics(data)] == [1, 3]
    assert parse_metrics(b"") == [] and parse_metrics(b"\n\n") == []


def test_a_missing_file_has_no_rows(tmp_path):
    assert read_metrics(tmp_path) == []


def test_resume_drops_the_rows_after_the_checkpoint_and_a_line_torn_by_the_kill(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_rows(1, 2, 3, 4) + '{"loss": 0.2, "stage": "sft", "st')
    drop_metrics_after(path, 2)
    assert path.read_text() == _rows(1, 2)


def test_the_writer_appends_one_sorted_line_a_row_that_the_reader_reads_back(tmp_path):
    path = tmp_path / "metrics.jsonl"
    for step in (1, 2):
        append_metrics(path, {"step": step, "stage": "sft", "loss": 1.0 / step})
    assert path.read_text() == _rows(1, 2)
    assert read_metrics(tmp_path) == [
        {"loss": 1.0, "stage": "sft", "step": 1},
        {"loss": 0.5, "stage": "sft", "step": 2},
    ]

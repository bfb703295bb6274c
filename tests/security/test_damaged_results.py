"""Issue 41 item 12: damaged results files are clear errors naming the file and line.

``evaluation report`` on a binary ``results.jsonl`` ended in a ``UnicodeDecodeError`` traceback (an
unbounded ``read_text``), and ``evaluation compare`` on a row without ``id`` in a ``KeyError``.
Through the real entry point, ``python -m evaluation``, as a subprocess.
"""

from __future__ import annotations

import json
import os

from harness.jsonl import finished_records
from tests import cli

ROW = {"id": "c1", "category": "price", "verdict": {"accuracy": 1, "effectiveness": 1, "avg": 1}}


def test_report_on_a_binary_results_file_names_the_file_and_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_bytes(
        json.dumps(ROW).encode() + b"\n" + os.urandom(64).replace(b"\n", b"") + b"\n"
    )
    done = cli.run("evaluation", "report", str(run))
    assert done.returncode == 2, done.stdout
    assert f"error: {run / 'results.jsonl'}:2: not UTF-8 text" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_compare_on_a_row_without_an_id_names_the_file_and_line(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
    (a / "results.jsonl").write_text(json.dumps(ROW) + "\n")
    (b / "results.jsonl").write_text(
        json.dumps(ROW) + "\n" + json.dumps({"category": "price"}) + "\n"
    )
    done = cli.run("evaluation", "compare", str(a), str(b))
    assert done.returncode == 2, done.stdout
    assert (
        f"error: {b / 'results.jsonl'}:2: an object without "
        "'id'; each line of a results file is a JSON "
        "object with the 'id' of the case it scored"
    ) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_only_finished_lines_are_read(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(
        json.dumps(ROW).encode() + b"\n" + b'{"id": "c2", "note": "\xe4\xbd'
    )  # torn mid-character
    assert finished_records(path) == [ROW]

"""The held-out edit benchmark: error-count reduction of a stage's edits under two models, with
intervals."""

from __future__ import annotations

import json

import pytest

from evaluation.edit_transfer import edit_transfer, edit_transfer_markdown
from tests.cli import run


def _rows(failing: set[int], n: int = 40, split: str | None = "heldout") -> list[dict]:
    return [
        {"id": f"c{i}", "split": split, "accuracy": 0 if i in failing else 1, "effectiveness": 1.0}
        for i in range(n)
    ]


def _models():
    # model A: 10 errors, the edits fix 2 (20%); model B: the same 10 errors, the edits fix 5 (50%)
    before = set(range(10))
    return {
        "fixed-harness-sft": (_rows(before), _rows(before - {0, 1})),
        "hat": (_rows(before), _rows(before - {0, 1, 2, 3, 4})),
    }


def test_reduction_per_model_and_their_paired_difference():
    result = edit_transfer(models=_models(), resamples=2000)
    a, b = result["models"]["fixed-harness-sft"], result["models"]["hat"]
    assert (a["errors_parent"], a["errors_candidate"], a["reduction_pct"]) == (10, 8, 20.0)
    assert (b["errors_parent"], b["errors_candidate"], b["reduction_pct"]) == (10, 5, 50.0)
    assert a["low"] <= 20.0 <= a["high"] and b["low"] <= 50.0 <= b["high"]
    diff = result["difference"]
    assert diff["of"] == "hat - fixed-harness-sft" and diff["delta_pct"] == 30.0
    # B fixes every case A fixes and three more: drawn together, no resample can make A look better
    assert 0.0 <= diff["low"] <= 30.0 <= diff["high"]
    assert result["n"] == 40 and result["left_out"] == 0
    text = edit_transfer_markdown(result)
    assert (
        "| hat | 10 | 5 | 50.0% |" in text
        and "Difference (hat - fixed-harness-sft): +30.0 points" in text
    )


def test_only_the_held_out_split_counts_and_missing_cases_are_counted():
    models = _models()
    dev = [dict(r, id=f"d{r['id']}", split="dev", accuracy=0) for r in _rows(set())]
    parent, candidate = models["hat"]
    models["hat"] = (parent + dev, candidate[:-3] + dev)
    result = edit_transfer(models=models, resamples=500)
    assert result["n"] == 37 and result["left_out"] == 3


def test_no_error_to_reduce_and_bad_input_are_said():
    clean = {"a": (_rows(set()), _rows(set())), "b": (_rows({1}), _rows(set()))}
    result = edit_transfer(models=clean, resamples=200)
    assert result["models"]["a"]["reduction_pct"] is None and result["difference"] is None
    assert "no error to reduce" in edit_transfer_markdown(result)
    with pytest.raises(ValueError, match="two models, got 1"):
        edit_transfer(models={"a": clean["a"]})
    with pytest.raises(ValueError, match="share no case of the held-out split"):
        edit_transfer(models={"a": (_rows(set(), split="dev"), _rows(set())), "b": clean["b"]})


def _write_run(folder, rows):
    folder.mkdir()
    (folder / "results.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "id": r["id"],
                    "category": "product_qa",
                    "verdict": {
                        "accuracy": r["accuracy"],
                        "effectiveness": 1.0,
                        "avg": (r["accuracy"] + 1) / 2,
                    },
                }
            )
            + "\n"
            for r in rows
        )
    )
    return str(folder)


def test_the_cli_reads_four_run_folders(tmp_path):
    models = _models()
    args = []
    for name, (parent, candidate) in models.items():
        args += [
            "--model",
            name,
            _write_run(tmp_path / f"{name}-p", parent),
            _write_run(tmp_path / f"{name}-c", candidate),
        ]
    done = run(
        "evaluation",
        "edit-transfer",
        *args,
        "--resamples",
        "500",
        "--out",
        str(tmp_path / "bench.md"),
    )
    assert done.returncode == 0, done.stderr
    assert (
        "| fixed-harness-sft | 10 | 8 | 20.0% |" in done.stdout
        and "| hat | 10 | 5 | 50.0% |" in done.stdout
    )
    assert json.loads((tmp_path / "bench.json").read_text())["difference"]["delta_pct"] == 30.0
    one = run("evaluation", "edit-transfer", *args[:4])
    assert one.returncode == 2 and "give exactly two" in one.stderr
    missing = run(
        "evaluation", "edit-transfer", *args[:4], "--model", "x", str(tmp_path / "nope"), args[3]
    )
    assert (
        missing.returncode == 2
        and "no results file" in missing.stderr
        and "Traceback" not in missing.stderr
    )

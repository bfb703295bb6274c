"""A run's progress folder: committed after each part, resumed from on another machine (issue 49's
CPU continuation), on the tiny model with a LoRA adapter."""

from __future__ import annotations

import json

import pytest

from harness import adapters
from tests.training.conftest import price_examples
from training.runs import read_metrics, read_model_card
from training.sft_config import SFTStageConfig
from training.sft_trainer import run_sft
from training.trajectory_data import write_examples


def lora_config(tmp_path, out: str, **fields) -> SFTStageConfig:
    examples = tmp_path / "examples.jsonl"
    if not examples.is_file():
        write_examples(price_examples(8), examples)
    defaults = dict(
        model="tiny",
        output_dir=str(tmp_path / out),
        examples=str(examples),
        max_steps=4,
        stop_after_steps=2,
        save_steps=10,
        learning_rate=1e-3,
        lora_rank=4,
        lora_target_modules=["q_proj", "v_proj"],
        progress_dir=str(tmp_path / "progress"),
    )
    return SFTStageConfig(**{**defaults, **fields})


def test_a_part_leaves_a_committable_progress_folder_that_another_machine_resumes(tmp_path):
    run_sft(lora_config(tmp_path, "machine-a"))
    progress = tmp_path / "progress"
    checkpoint = progress / "checkpoint-2"
    facts = json.loads((progress / "progress.json").read_text())
    assert facts["step"] == 2 and facts["max_steps"] == 4 and facts["stage"] == "sft"
    assert (
        facts["examples_sha256"]
        == read_model_card(tmp_path / "machine-a")["data"]["examples_sha256"]
    )
    # small enough to commit: the adapter, not Adam's state nor the tokenizer
    assert "optimizer.pt" in facts["left_out"]
    assert (tmp_path / "machine-a" / "checkpoint-2" / "optimizer.pt").is_file()
    assert not (checkpoint / "optimizer.pt").exists()
    assert not (checkpoint / "tokenizer.json").exists()
    assert not (checkpoint / "README.md").exists()  # PEFT's template, naming this machine's cache
    assert {p.name for p in progress.iterdir()} >= {"config.json", "metrics.jsonl"}
    # it loads as an adapter too (its base named as in final/), so the gate can check it
    assert adapters.is_adapter(checkpoint) and adapters.adapter_problem(checkpoint) is None

    # another machine: a fresh run folder, the committed progress folder
    run_sft(lora_config(tmp_path, "machine-b", stop_after_steps=4))
    rows = [r for r in read_metrics(tmp_path / "machine-b") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]  # 1-2 carried in its metrics, 3-4 trained
    # the schedule goes on at step 3 (linear decay over 4 steps: 1e-3 * 2/4), not from its start
    assert rows[2]["learning_rate"] == pytest.approx(5e-4)
    assert read_model_card(tmp_path / "machine-b")["steps"] == 4
    assert [p.name for p in progress.glob("checkpoint-*")] == ["checkpoint-4"]
    assert json.loads((progress / "progress.json").read_text())["step"] == 4


def test_a_run_folder_further_on_than_the_progress_folder_is_not_overwritten(tmp_path):
    run_sft(lora_config(tmp_path, "run"))
    progress = tmp_path / "progress"  # made an older export, as from a stale commit
    (progress / "checkpoint-2").rename(progress / "checkpoint-1")
    (progress / "progress.json").write_text(json.dumps({"step": 1}))
    # the stop checkpoint is the run's own: loaded, nothing trained, no import over it
    run_sft(lora_config(tmp_path, "run"))
    assert [r["step"] for r in read_metrics(tmp_path / "run") if "loss" in r] == [1, 2]
    assert json.loads((tmp_path / "progress" / "progress.json").read_text())["step"] == 2


def test_progress_trained_on_other_examples_is_refused_before_anything_is_copied(tmp_path):
    run_sft(lora_config(tmp_path, "machine-a"))
    other = tmp_path / "other.jsonl"
    write_examples(price_examples(5), other)
    config = lora_config(tmp_path, "machine-b", examples=str(other), stop_after_steps=4)
    with pytest.raises(ValueError, match=r"progress: its checkpoint was trained on examples"):
        run_sft(config)
    assert not list((tmp_path / "machine-b").glob("checkpoint-*"))
    assert json.loads((tmp_path / "progress" / "progress.json").read_text())["step"] == 2


def test_the_mtp_stage_refuses_a_progress_folder_by_name():
    from training.mtp_config import MTPStageConfig

    problem = MTPStageConfig(progress_dir="p").check()
    assert problem.startswith("progress_dir:")


def test_a_damaged_progress_file_is_an_error_naming_it(tmp_path):
    from training.runs import read_progress

    (tmp_path / "progress.json").write_text("{torn")
    with pytest.raises(ValueError, match=r"progress.json: not valid JSON"):
        read_progress(tmp_path)
    (tmp_path / "progress.json").write_text('{"step": "20"}')
    with pytest.raises(ValueError, match=r"progress.json: 'step' must be .* got '20'"):
        read_progress(tmp_path)

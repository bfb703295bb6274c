"""``python -m training``: configs from files and flags, errors, and the resumable pipeline."""

from __future__ import annotations

import json

from tests.training.conftest import price_examples
from training.cli import main


def _examples_file(tmp_path):
    path = tmp_path / "examples.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in price_examples(4)))
    return path


def test_sft_from_yaml_with_flag_override(tmp_path, tiny_dir):
    config = tmp_path / "sft.yaml"
    config.write_text(
        f"model: tiny\nexamples: {_examples_file(tmp_path)}\nmax_steps: 5\n"
        f"output_dir: {tmp_path / 'run'}\nreport_to: [none]\n"
    )
    assert main(["sft", "--config", str(config), "--max-steps", "1", "--save-steps", "1"]) == 0
    resolved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert resolved["max_steps"] == 1 and resolved["examples"].endswith("examples.jsonl")
    assert (tmp_path / "run" / "final" / "model.safetensors").is_file()


def test_bad_config_is_reported_with_file_and_line(tmp_path, capsys):
    config = tmp_path / "rl.yaml"
    config.write_text("model: tiny\nnum_generations: 1\n")
    assert main(["rl", "--config", str(config)]) == 2
    assert "num_generations: GRPO needs at least 2" in capsys.readouterr().err
    config.write_text("model: tiny\nlearning_rat: 0.1\n")
    assert main(["opd", "--config", str(config)]) == 2
    assert f"{config}:2: learning_rat: unknown field" in capsys.readouterr().err


def test_pipeline_chains_stages_and_skips_finished_ones(tmp_path, tiny_dir):
    from training.runs import read_model_card

    config = tmp_path / "pipeline.yaml"
    root = tmp_path / "pipe"
    config.write_text(
        f"model: tiny\noutput_dir: {root}\nstages: [sft, opd]\n"
        f"sft:\n  examples: {_examples_file(tmp_path)}\n  max_steps: 1\n  save_steps: 1\n"
        "opd:\n  max_steps: 1\n  save_steps: 1\n  max_completion_length: 8\n  max_prompts: 4\n"
    )
    assert main(["pipeline", "--config", str(config)]) == 0
    opd_card = read_model_card(root / "opd")
    assert opd_card["parent_checkpoint"] == str(root / "sft" / "final")
    assert opd_card["base_model"].endswith("smollm2-tiny-random")
    written = (root / "opd" / "model_card.json").stat().st_mtime_ns
    assert main(["pipeline", "--config", str(config)]) == 0  # both stages finished: nothing reruns
    assert (root / "opd" / "model_card.json").stat().st_mtime_ns == written
    assert json.loads((root / "pipeline_state.json").read_text())["final_model"] == str(
        root / "opd" / "final"
    )

"""Stage configs load from YAML/JSON and reject mistakes with file, line and field."""

from __future__ import annotations

import json

import pytest

from harness.config_schema import ConfigError, fields_of, load_config
from training.opd_config import OPDStageConfig
from training.rl_config import RLStageConfig
from training.sft_config import SFTStageConfig


def test_yaml_config_loads_and_converts(tmp_path):
    path = tmp_path / "sft.yaml"
    path.write_text(
        "model: tiny\nmax_steps: 3\nlearning_rate: 1e-4\nreport_to: [tensorboard]\n"
        "hsa_variants: 0\n"
    )
    config = load_config(SFTStageConfig, path)
    assert (config.model, config.max_steps, config.learning_rate) == ("tiny", 3, 1e-4)
    assert config.report_to == ["tensorboard"]
    assert config.hsa_variants == 0
    assert config.keep_retry_fraction == 0.1  # default


def test_json_config_loads(tmp_path):
    path = tmp_path / "opd.json"
    path.write_text(json.dumps({"model": "tiny", "beta": 1.0, "max_prompts": 10}))
    config = load_config(OPDStageConfig, path)
    assert config.max_prompts == 10 and config.beta == 1.0


def test_unknown_field_names_line_and_valid_fields(tmp_path):
    path = tmp_path / "sft.yaml"
    path.write_text("model: tiny\n\nmax_step: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(SFTStageConfig, path)
    message = str(err.value)
    assert f"{path}:3: max_step" in message
    assert "max_steps" in message  # the valid fields are listed


def test_wrong_type_and_out_of_range_values(tmp_path):
    path = tmp_path / "rl.yaml"
    path.write_text("max_steps: many\n")
    with pytest.raises(ConfigError, match=r"rl.yaml:1: max_steps: expected an integer"):
        load_config(RLStageConfig, path)
    path.write_text("keep_retry_fraction: 1.5\n")
    with pytest.raises(ConfigError, match="keep_retry_fraction"):
        load_config(SFTStageConfig, path)


def test_every_field_has_help_text():
    for cls in (SFTStageConfig, OPDStageConfig, RLStageConfig):
        empty = [f.name for f in fields_of(cls) if not f.help.strip()]
        assert not empty, f"{cls.__name__} fields without help: {empty}"


def test_the_shipped_example_configs_load():
    from pathlib import Path

    shipped = sorted((Path(__file__).resolve().parents[2] / "examples" / "training").glob("*.yaml"))
    assert shipped
    for path in shipped:
        config = load_config(SFTStageConfig, path)
        assert config.check() == "", path
    first = load_config(SFTStageConfig, shipped[0].with_name("demo-sft-1.yaml"))
    second = load_config(SFTStageConfig, shipped[0].with_name("demo-sft-2.yaml"))
    assert (first.model, first.hsa_variants) == ("local", 0)
    assert second.model == f"{first.output_dir}/final"  # stage 2 goes on from stage 1's model
    assert second.examples == f"{first.output_dir}/examples.jsonl" and second.pack_turns


def test_stop_after_steps_beyond_max_steps_names_its_line(tmp_path):
    path = tmp_path / "sft.yaml"
    path.write_text("model: tiny\nmax_steps: 10\nstop_after_steps: 20\n")
    with pytest.raises(
        ConfigError, match=r"sft.yaml:3: stop_after_steps: must be between 0 \(off\) and max_steps"
    ):
        load_config(SFTStageConfig, path)

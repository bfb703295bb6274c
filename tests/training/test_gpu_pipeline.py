"""The prepared GPU run (training.gpu) end to end in its smoke mode: the same code, every stage of
both pipelines and the robustness check, on CPU with the tiny model."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_the_smoke_run_trains_both_pipelines_and_checks_them(tmp_path, capsys):
    from training.gpu.pipeline import main

    assert main(["--out", str(tmp_path), "--smoke"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["smoke"] is True and summary["device"] == "cpu"
    for name in ("hat", "fixed"):
        pipeline = summary["pipelines"][name]
        assert (tmp_path / name / "rl" / "final").is_dir()
        for stage in ("sft", "opd", "rl"):
            cell = pipeline["stages"][stage]
            assert cell["tokens_per_s"] > 0 and cell["mfu"] is None  # no peak known on CPU
        check = summary["checks"][name]["summary"]
        assert check["full"]["seen"]["n"] == check["full"]["unseen"]["n"] == 1
    hat_data = json.loads((tmp_path / "hat" / "sft" / "data_report.json").read_text())
    fixed_data = json.loads((tmp_path / "fixed" / "sft" / "data_report.json").read_text())
    assert hat_data["hsa_mode"] == "randomized" and "hsa_mode" not in fixed_data
    resolved = json.loads((tmp_path / "hat" / "sft" / "config.json").read_text())
    assert resolved["padding_free"] is True and resolved["hsa_mode"] == "randomized"
    out = capsys.readouterr().out
    assert "| hat | sft |" in out and "MFU" in out

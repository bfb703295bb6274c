"""LoRA adapters (lora_rank): a stage saves only the adapter, which every route then runs.

On the tiny model: the run's final/ holds the adapter and its base record; the registry's
fingerprint covers the adapter's files and its base; resolving it gives a merged checkpoint whose
outputs are the base's plus the adapter's (checked against PEFT's own forward); a wrong base, a
missing file or a bad rank is a CheckpointError naming the file.
"""

from __future__ import annotations

import json
import shutil

import pytest

from harness import adapters
from harness.checkpoints import CheckpointError, checkpoint_problem, fingerprint, resolve_checkpoint
from training.runs import is_finished, read_model_card


def test_a_lora_run_saves_only_the_adapter_and_names_its_base(lora_run, tiny_dir):
    final = lora_run / "final"
    assert (final / "adapter_model.safetensors").is_file() and not (
        final / "model.safetensors"
    ).exists()
    base = json.loads((final / adapters.BASE_FILE).read_text())
    assert base["base"] == str(tiny_dir) and base["fingerprint"] == fingerprint(tiny_dir)
    assert json.loads((final / adapters.ADAPTER_CONFIG).read_text())[
        "base_model_name_or_path"
    ] == str(tiny_dir)
    card = read_model_card(lora_run)
    assert card["extra"]["adapter"]["rank"] == 4 and card["extra"]["adapter"]["alpha"] == 8
    assert is_finished(lora_run) and checkpoint_problem(final) is None


def test_the_merged_checkpoint_computes_what_peft_computes(lora_run, tiny_dir):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    merged_dir = resolve_checkpoint(str(lora_run / "final"))
    assert merged_dir != lora_run / "final" and (merged_dir / "model.safetensors").is_file()
    assert resolve_checkpoint(str(lora_run / "final")) == merged_dir  # built once
    ids = torch.tensor([[1, 42, 314, 2718, 99, 7]])
    with torch.no_grad():
        merged = AutoModelForCausalLM.from_pretrained(merged_dir)(ids).logits
        peft = PeftModel.from_pretrained(
            AutoModelForCausalLM.from_pretrained(tiny_dir), str(lora_run / "final")
        )(ids).logits
        base = AutoModelForCausalLM.from_pretrained(tiny_dir)(ids).logits
    assert torch.allclose(merged, peft, atol=1e-5)
    assert not torch.allclose(merged, base, atol=1e-3)  # the adapter changed the model


def test_the_fingerprint_covers_the_adapter_and_its_base(lora_run, tmp_path):
    copy = tmp_path / "adapter"
    shutil.copytree(lora_run / "final", copy)
    before = fingerprint(copy)
    record = json.loads((copy / adapters.BASE_FILE).read_text())
    record["fingerprint"] = "0" * 64  # same files but another base
    (copy / adapters.BASE_FILE).write_text(json.dumps(record))
    assert fingerprint(copy) != before
    with pytest.raises(
        CheckpointError, match=r"adapter_base.json: the adapter was trained on .* not the same base"
    ):
        resolve_checkpoint(str(copy))


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda d: (d / "adapter_model.safetensors").unlink(),
            r"has adapter_config.json but no adapter weights",
        ),
        (
            lambda d: (d / adapters.BASE_FILE).unlink(),
            r"has no adapter_base.json naming the base model",
        ),
        (
            lambda d: (d / adapters.ADAPTER_CONFIG).write_text(
                json.dumps({**json.loads((d / adapters.ADAPTER_CONFIG).read_text()), "r": 0})
            ),
            r"adapter_config.json: r \(the LoRA rank\) must be a whole number of 1 or more, got 0",
        ),
        (
            lambda d: (d / adapters.ADAPTER_CONFIG).write_text("{not json"),
            r"adapter_config.json: not valid JSON",
        ),
    ],
)
def test_a_damaged_adapter_is_an_error_naming_the_file(lora_run, tmp_path, damage, message):
    copy = tmp_path / "adapter"
    shutil.copytree(lora_run / "final", copy)
    damage(copy)
    assert checkpoint_problem(copy)  # the registry's check says why, too
    with pytest.raises(CheckpointError, match=message):
        resolve_checkpoint(str(copy))


def test_lora_settings_are_checked():
    from training.sft_config import SFTStageConfig

    assert SFTStageConfig(lora_rank=-1).check().startswith("lora_rank:")
    assert SFTStageConfig(lora_rank=8, lora_dropout=1.0).check().startswith("lora_dropout:")
    assert (
        SFTStageConfig(lora_rank=8, lora_target_modules=[])
        .check()
        .startswith("lora_target_modules:")
    )
    assert SFTStageConfig(lora_rank=8).peft_config().lora_alpha == 16


def test_prepare_merges_and_exports_once_and_sglang_serves_the_merged_folder(lora_run, capsys):
    from serving.__main__ import main as serving_main

    adapter = str(lora_run / "final")
    assert serving_main(["prepare", adapter, "--quantization", "Q8_0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[prepare]") and "LoRA adapter; merging it with its base" in lines[0]
    gguf = lines[-1].split()[1]
    assert gguf.endswith(".Q8_0.gguf") and resolve_checkpoint(adapter).name in gguf
    assert serving_main(["sglang-command", "--model", adapter, "--json"]) == 0
    out = capsys.readouterr()
    argv = json.loads(out.out)
    assert argv[argv.index("--model-path") + 1] == str(resolve_checkpoint(adapter))
    assert argv[argv.index("--served-model-name") + 1] == "final"
    assert "a LoRA adapter; serving it merged with its base" in out.err


@pytest.mark.slow
def test_a_draft_head_adapted_to_an_adapter_passes_the_check_releases_and_the_launcher_make(
    lora_run, tmp_path
):
    """``python -m training mtp --model ADAPTER`` adapts a head to the merged policy the adapter
    runs as; the check a release and ``sglang-command --draft-head`` make, given the adapter folder,
    accepts that head."""
    import subprocess
    import sys

    from serving.sglang import check_draft_head
    from tests.artefacts import TINY_MTP_ARGS

    adapter = lora_run / "final"
    args = list(TINY_MTP_ARGS)
    args[args.index("--model") + 1] = str(adapter)
    args[args.index("--max-steps") + 1] = "2"
    done = subprocess.run(
        [sys.executable, "-m", "training", "mtp", *args, "--output-dir", str(tmp_path / "mtp")],
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    head = tmp_path / "mtp" / "final"
    card = json.loads((head / "card.json").read_text())
    assert card["policy_fingerprint"] == fingerprint(resolve_checkpoint(str(adapter)))
    algorithm, problems = check_draft_head(head, adapter)
    assert problems == [] and algorithm == "EAGLE"


def test_an_adapter_trained_on_an_adapter_names_that_folder_not_its_merged_copy(lora_run, tmp_path):
    """A continuation trains a new adapter on a shipped one merged with its base: its record names
    the shipped folder (as committed) by fingerprint, not the merge in this machine's model cache,
    so the adapter loads on another machine."""
    from tests.training.conftest import price_examples
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    shipped = tmp_path / "shipped"
    shutil.copytree(lora_run / "final", shipped)
    run_sft(
        SFTStageConfig(
            model=str(shipped),
            output_dir=str(tmp_path / "continued"),
            max_steps=1,
            save_steps=1,
            learning_rate=1e-3,
            lora_rank=4,
            lora_target_modules=["q_proj"],
        ),
        examples=price_examples(),
    )
    final = tmp_path / "continued" / "final"
    record = json.loads((final / adapters.BASE_FILE).read_text())
    assert record["base"] == str(shipped) and "fingerprint" not in record
    assert record["adapter_fingerprint"] == adapters.adapter_fingerprint(shipped)
    assert adapters.resolve_base(final) == resolve_checkpoint(str(shipped))  # merged first
    assert (resolve_checkpoint(str(final)) / "model.safetensors").is_file()
    (shipped / adapters.BASE_FILE).write_text(
        json.dumps(
            {**json.loads((shipped / adapters.BASE_FILE).read_text()), "fingerprint": "0" * 64}
        )
    )
    with pytest.raises(CheckpointError, match=r"trained on the adapter .* not the same base"):
        adapters.resolve_base(final)
    shutil.rmtree(shipped)
    with pytest.raises(CheckpointError, match=r"trained on the adapter .*, which is not here"):
        adapters.resolve_base(final)

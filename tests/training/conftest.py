"""Shared fixtures for the training tests: the tiny model and a tiny SFT run."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_dir():
    from harness.policies.models import tiny_model_dir

    return tiny_model_dir()


def price_examples(n: int = 6) -> list[dict]:
    return [{"prompt": [{"role": "system", "content": "You host a live stream."},
                        {"role": "user", "content": f"How much is link {i}?"}],
             "completion": [{"role": "assistant",
                             "content": f'<tool_call>{{"name": "get_product_info_by_link_id", '
                                        f'"arguments": {{"link_id": {i}}}}}</tool_call>'}]}
            for i in range(1, n + 1)]


@pytest.fixture(scope="session")
def sft_run(tmp_path_factory, tiny_dir):
    """A two-step SFT run on the tiny model (shared by the tests that need a trained checkpoint)."""
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    out = tmp_path_factory.mktemp("sft")
    config = SFTStageConfig(model="tiny", output_dir=str(out), max_steps=2, save_steps=1,
                            learning_rate=1e-3)
    run_sft(config, examples=price_examples())
    return out

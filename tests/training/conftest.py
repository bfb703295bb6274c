"""Shared fixtures for the training tests: the tiny model and a tiny SFT run."""

from __future__ import annotations

import pytest

from tests import artefacts


@pytest.fixture(scope="session")
def tiny_dir():
    from harness.model_cache import tiny_model_dir

    return tiny_model_dir()


def price_examples(n: int = 6) -> list[dict]:
    return [
        {
            "prompt": [
                {"role": "system", "content": "You host a live stream."},
                {"role": "user", "content": f"How much is link {i}?"},
            ],
            "completion": [
                {
                    "role": "assistant",
                    "content": f'<tool_call>{{"name": "get_product_info_by_link_id", '
                    f'"arguments": {{"link_id": {i}}}}}</tool_call>',
                }
            ],
        }
        for i in range(1, n + 1)
    ]


def case_examples(cases: int = 6, *, harnesses: tuple[str, ...] = ("original",)) -> list[dict]:
    """Per-turn examples of 2-turn trajectories (tool call, then the reply), one per case and
    Harness, with the meta the data builder writes (case_id, harness, turn): turn 1's context
    extends turn 0's."""
    examples = []
    for i in range(1, cases + 1):
        for harness in harnesses:
            meta = {
                "case_id": f"c{i}",
                "harness": harness,
                "harness_digest": harness,
                "teacher": "gold-replay",
            }
            prompt = [
                {"role": "system", "content": f"You host a live stream ({harness})."},
                {"role": "user", "content": f"How much is link {i}?"},
            ]
            call = {
                "role": "assistant",
                "content": f'<tool_call>{{"name": "get_product_info_by_link_id", '
                f'"arguments": {{"link_id": {i}}}}}</tool_call>',
            }
            result = {
                "role": "user",
                "content": f'<tool_response>{{"price": {10 * i}}}</tool_response>',
            }
            examples.append({"prompt": prompt, "completion": [call], "meta": {**meta, "turn": 0}})
            examples.append(
                {
                    "prompt": [*prompt, call, result],
                    "completion": [{"role": "assistant", "content": f"Link {i} is {10 * i} yuan."}],
                    "meta": {**meta, "turn": 1},
                }
            )
    return examples


@pytest.fixture(scope="session")
def sft_run(tmp_path_factory, tiny_dir):
    """A two-step SFT run on the tiny model, built once per test run (tests/artefacts.py) and shared
    by the tests that need a trained checkpoint; a test that changes it works on a copy."""
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    def build(out):
        run_sft(
            SFTStageConfig(
                model="tiny", output_dir=str(out), max_steps=2, save_steps=1, learning_rate=1e-3
            ),
            examples=price_examples(),
        )

    return artefacts.build_once(tmp_path_factory, "tiny-sft", build)


@pytest.fixture(scope="session")
def lora_run(tmp_path_factory, tiny_dir):
    """A two-step SFT run of a rank-4 LoRA adapter on the tiny model (built once, like sft_run)."""
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    def build(out):
        run_sft(
            SFTStageConfig(
                model="tiny",
                output_dir=str(out),
                max_steps=2,
                save_steps=2,
                learning_rate=5e-2,
                lora_rank=4,
                lora_target_modules=["q_proj", "v_proj", "down_proj"],
            ),
            examples=price_examples(),
        )

    return artefacts.build_once(tmp_path_factory, "tiny-lora-sft", build)


@pytest.fixture(scope="session")
def lora_adapter(lora_run):
    return lora_run / "final"

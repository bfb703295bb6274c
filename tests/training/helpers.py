"""Checks shared by the stage tests: weights changed, checkpoint answers through the runtime."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file


def weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(Path(model_dir) / "model.safetensors"))


def changed_tensors(before: Path, after: Path) -> list[str]:
    old, new = weights(before), weights(after)
    assert old.keys() == new.keys()
    return [name for name in old if not torch.equal(old[name], new[name])]


def answer_with_runtime(model_dir: Path):
    """Run one demo request through the agent runtime with the checkpoint as the local policy."""
    from harness import demo_harness_dir, load_dir
    from harness.policies import GenerationSettings, make_policy
    from harness.runtime import Agent

    policy = make_policy(f"local:{model_dir}", settings=GenerationSettings(max_new_tokens=12))
    request = {
        "id": "t-1",
        "mode": "single",
        "comments": [{"user": "v1", "text": "How much is link 3?"}],
        "room": {"current_link_id": 1, "shelf": [1, 2, 3]},
    }
    with Agent(bundle=load_dir(demo_harness_dir()), policy=policy, connect_mcp=False) as agent:
        return agent.run(request)

"""Real trajectory records for the traffic tests: the demo Harness answering world cases with the
deterministic shortcut policy (``studio.evolution.scripted``), as a deployment's agent records
them."""

from __future__ import annotations

import copy
import functools
from typing import Any


@functools.cache
def _dev_world(seed: int) -> tuple[list[dict[str, Any]], Any]:
    from evaluation.world.sets import build_sets

    built = build_sets(seed=seed)
    return built["sets"]["dev"], built["catalogue"]


def world_cases(n: int, *, seed: int = 7) -> tuple[list[dict[str, Any]], Any]:
    """The first ``n`` dev cases of a generated world, and its catalogue: the world is generated
    once per process and seed (a third of a second each time, asked for by many tests), and each
    call gets its own copies to change."""
    dev, catalogue = _dev_world(seed)
    return copy.deepcopy(dev[:n]), copy.deepcopy(catalogue)


def agent_trajectories(cases: list[dict[str, Any]], *, catalogue) -> list[dict[str, Any]]:
    """Each case answered by the demo Harness under the shortcut policy: ``Trajectory.to_dict()``
    records."""
    from evaluation.cases import case_request
    from harness import demo_harness_dir, load_dir
    from harness.policies.scripted import ScriptedPolicy
    from harness.runtime import Agent
    from studio.evolution.scripted import case_script

    policy = ScriptedPolicy({case["id"]: case_script(case) for case in cases})
    with Agent(
        bundle=load_dir(demo_harness_dir()), policy=policy, catalogue=catalogue, connect_mcp=False
    ) as agent:
        return [agent.run(case_request(case)).to_dict() for case in cases]

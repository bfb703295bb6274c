"""Fixtures for the runtime tests: the demo Harness, variants of it, agents on scripts."""

from __future__ import annotations

import pytest

from harness import demo_harness_dir, load_dir
from harness.livestream import demo_catalogue
from harness.policies import ScriptedPolicy
from harness.runtime import Agent

from .helpers import price_request


@pytest.fixture(scope="session")
def demo_bundle():
    return load_dir(demo_harness_dir())


@pytest.fixture
def run_script(demo_bundle):
    """Run one request with a scripted policy; MCP is off unless connect_mcp=True."""
    agents = []

    def run(script, request=None, *, bundle=None, connect_mcp=False, **agent_kwargs):
        policy = ScriptedPolicy(script)
        agent = Agent(
            bundle=bundle or demo_bundle,
            policy=policy,
            catalogue=demo_catalogue(),
            connect_mcp=connect_mcp,
            **agent_kwargs,
        )
        agents.append(agent)
        traj = agent.run(request or price_request())
        return traj, policy

    yield run
    for agent in agents:
        agent.close()

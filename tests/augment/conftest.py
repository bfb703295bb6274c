"""Fixtures for the HSA tests: the demo Harness, gold cases and their recorded trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import demo_harness_dir, load_dir

DATA = Path(__file__).parent / "testdata"


@pytest.fixture(scope="session")
def demo_bundle():
    return load_dir(demo_harness_dir())


@pytest.fixture(scope="session")
def gold_cases() -> list[dict]:
    from evaluation.cases import load_cases

    return load_cases(DATA / "gold_cases.jsonl")


@pytest.fixture(scope="session")
def gold_scripts() -> dict[str, list]:
    return json.loads((DATA / "gold_scripts.json").read_text(encoding="utf-8"))


def every_skill_and_tool_cases(bundle) -> list[dict]:
    """One synthetic case per skill (as its gold skill) that also calls every tool."""
    calls = [{"name": t.name, "arguments": {}} for t in bundle.tools]
    cases = []
    for name, skill in sorted(bundle.skills.items()):
        key = "reply_skills" if skill.kind == "reply" else "strategy_skills"
        cases.append(
            {
                "format": "hs-case/1",
                "id": f"all-{name}",
                "category": "product_qa",
                "comments": [{"user": "u", "text": "hello"}],
                "gold": {
                    "route": "public",
                    key: [name],
                    "tool_calls": calls,
                    "tool_order": [t.name for t in bundle.tools],
                },
            }
        )
    return cases

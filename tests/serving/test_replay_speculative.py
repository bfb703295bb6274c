"""The CPU serving route with a draft head: the server decodes speculatively, its outputs equal the
route without the head (greedy), and the replay reports the acceptance of each concurrency level."""

from __future__ import annotations

import json

import httpx
import pytest
import torch

from harness import demo_harness_dir
from harness.model_cache import tiny_model_dir
from harness.policies import GenerationSettings
from harness.policies.openai_chat import OpenAIChatPolicy
from serving.endpoint import GenerationSettings as ReplaySettings
from serving.endpoint import open_endpoint
from serving.engine.draft_head import DraftHead
from serving.engine.policy import load_model
from serving.metrics import speculative_level
from serving.profiles import ProfileError, profile_from_mapping
from serving.replay import ReplayPlan
from serving.service import replay_run
from tests import artefacts

pytestmark = pytest.mark.slow

SYSTEM = "You are the host of a live stream. Answer with the catalogue's facts. " * 20


@pytest.fixture(scope="module")
def head_dir(tmp_path_factory):
    model, _ = load_model(tiny_model_dir())
    torch.manual_seed(0)
    return str(
        DraftHead.for_policy(model).save(
            tmp_path_factory.mktemp("head") / "head", policy_config=model.config, card={}
        )
    )


def _profile(head: str | None):
    mapping = {"engine": "local", "checkpoint": "tiny", "threads": 1}
    if head:
        mapping["draft_head"] = head
    return profile_from_mapping("tiny-engine" + ("-mtp" if head else ""), mapping, source="test")


def test_a_draft_head_is_a_local_or_sglang_setting():
    with pytest.raises(
        ProfileError, match="draft_head: only engines sglang and local serve a draft head"
    ):
        profile_from_mapping(
            "p", {"engine": "transformers", "checkpoint": "tiny", "draft_head": "/h"}, source="f"
        )


def test_the_engine_server_with_a_head_answers_as_without_and_counts_acceptance(head_dir, tmp_path):
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "how much is link 3?"},
    ]
    settings = GenerationSettings(temperature=0.0, max_new_tokens=16)
    texts = {}
    for head in (None, head_dir):
        with open_endpoint(profile=_profile(head), log_dir=tmp_path / str(bool(head))) as endpoint:
            client = OpenAIChatPolicy(
                base_url=endpoint.base_url, model=endpoint.model, settings=settings
            )
            texts[head] = client.generate(messages).text
            counters = endpoint.speculative_counters()
            if head:
                assert endpoint.checkpoint["draft_head"] == head_dir
                assert counters["counts"]["cycles"] >= 1 and counters["counts"]["drafted"] >= 3
                assert counters["avg_spec_accept_length"] >= 1.0
                models = httpx.get(f"{endpoint.base_url}/models").json()["data"][0]
                assert models["engine"]["draft_head"] == head_dir
            else:
                assert counters is None
    assert texts[None] == texts[head_dir]


def test_the_replay_reports_the_acceptance_per_level(head_dir, tmp_path, tmp_path_factory):
    cases = artefacts.replay_cases(tmp_path_factory, 3)
    run = replay_run(
        profile=_profile(head_dir),
        harness_dir=demo_harness_dir(),
        cases_path=cases,
        plan=ReplayPlan(concurrency=(1, 2), warmup=1, measured=2, request_timeout_s=90),
        settings=ReplaySettings(temperature=1.0, top_p=0.95, max_tokens=8),
        out_root=tmp_path / "runs",
        run_id="spec",
    )
    summary = json.loads((run / "summary.json").read_text())
    for level in ("1", "2"):
        spec = summary["levels"][level]["speculative"]
        assert spec["source"] == "engine counters" and spec["cycles"] > 0
        assert (
            1.0 <= spec["acceptance_length"] <= 4.0
            and len(spec["acceptance_rate_per_position"]) == 3
        )
    assert "Speculative decoding (MTP draft head)" in (run / "table.md").read_text()


def test_level_figures_are_the_difference_of_the_counters():
    before = {
        "counts": {
            "cycles": 10,
            "drafted": 30,
            "accepted": 15,
            "acceptance_rate_per_position": [0.8, 0.5, 0.2],
        }
    }
    after = {
        "counts": {
            "cycles": 30,
            "drafted": 90,
            "accepted": 55,
            "acceptance_rate_per_position": [0.9, 0.6, 0.3],
        }
    }
    level = speculative_level(before, after)
    assert level["cycles"] == 20 and level["accepted"] == 40
    assert level["acceptance_length"] == 3.0 and level["acceptance_rate"] == round(40 / 60, 4)
    assert level["acceptance_rate_per_position"] == [0.95, 0.65, 0.35]
    assert speculative_level(None, {"avg_spec_accept_length": 3.1, "counts": None}) == {
        "acceptance_length": 3.1,
        "source": "avg_spec_accept_length",
    }
    assert speculative_level(after, after) is None and speculative_level(None, None) is None

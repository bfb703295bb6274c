"""OpenAIChatPolicy against a real ``transformers serve`` process with the tiny model."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from harness.livestream import demo_catalogue
from harness.model_cache import tiny_model_dir
from harness.policies import GenerationSettings, PolicyError, make_policy
from harness.runtime import Agent

from .helpers import price_request, with_constraints

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served_tiny(tmp_path_factory):
    model = str(tiny_model_dir())
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "transformers.cli.transformers",
                "serve",
                model,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--device",
                "cpu",
                "--no-continuous-batching",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            pytest.fail(f"transformers serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"transformers serve did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)
    yield f"{base}/v1", model
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_streamed_call_records_client_observed_timings(served_tiny):
    base_url, model = served_tiny
    policy = make_policy(
        f"openai:{base_url}:{model}",
        settings=GenerationSettings(max_new_tokens=12, temperature=0.0),
    )
    out = policy.generate([{"role": "user", "content": "Hello there"}])
    assert out.output_tokens >= 2 and out.input_tokens > 0
    assert out.ttft_s is not None and 0 < out.ttft_s <= out.latency_s
    assert out.decode_tokens_per_s and out.decode_tokens_per_s > 0
    assert isinstance(out.text, str)


def test_agent_run_through_the_server_completes(served_tiny, demo_bundle):
    base_url, model = served_tiny
    policy = make_policy(
        f"openai:{base_url}:{model}", settings=GenerationSettings(max_new_tokens=8)
    )
    with Agent(
        bundle=demo_bundle, policy=policy, catalogue=demo_catalogue(), connect_mcp=False
    ) as agent:
        traj = agent.run(price_request())
    # a random model never loads a reply skill: the stop gate holds until the limits end it
    assert traj.outcome in ("fallback", "suppressed")
    assert traj.model_calls and all(m.error is None for m in traj.model_calls)
    assert traj.model_calls[0].ttft_s is not None
    assert traj.timings["ttft_first_call_s"] == traj.model_calls[0].ttft_s


def test_unreachable_server_is_a_policy_error():
    policy = make_policy(f"openai:http://127.0.0.1:{free_port()}/v1:none")
    with pytest.raises(PolicyError, match="APIConnectionError"):
        policy.generate([{"role": "user", "content": "hi"}])


def test_bad_policy_spec_says_what_is_valid():
    with pytest.raises(ValueError, match="expected openai:BASE_URL:MODEL"):
        make_policy("openai:localhost")
    with pytest.raises(ValueError, match="valid: local | tiny"):
        make_policy("gpt")


def test_hung_server_call_ends_within_the_trajectory_budget(demo_bundle):
    """A server that accepts the connection but never answers: the budget still holds."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        bundle = with_constraints(demo_bundle, trajectory_budget_s=1)
        policy = make_policy(f"openai:http://127.0.0.1:{port}/v1:none")
        started = time.monotonic()
        with Agent(
            bundle=bundle, policy=policy, catalogue=demo_catalogue(), connect_mcp=False
        ) as agent:
            traj = agent.run(price_request())
        assert time.monotonic() - started < 3
        assert traj.outcome == "fallback" and "trajectory budget of 1 s" in traj.outcome_reason
        assert "Timeout" in traj.model_calls[0].error
    finally:
        listener.close()

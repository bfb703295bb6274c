"""How a trajectory becomes the replay's request status, and the policy a replay's agent calls."""

import pytest

from harness.policies import PolicyError
from serving.agent_runner import _is_project_mcp_server, outcome_from_trajectory


def _traj(outcome, reason="", calls=None, tools=None):
    return {
        "outcome": outcome,
        "outcome_reason": reason,
        "rounds": 2,
        "route": "public",
        "reply": "Hi there",
        "model_calls": calls
        if calls is not None
        else [
            {
                "ttft_s": 0.1,
                "latency_s": 0.5,
                "input_tokens": 900,
                "output_tokens": 20,
                "error": None,
            }
        ],
        "tool_calls": tools or [],
    }


def test_reply_and_silence_are_ok():
    assert outcome_from_trajectory(_traj("replied")).status == "ok"
    assert outcome_from_trajectory(_traj("silent")).status == "ok"


def test_harness_fallback_is_its_own_status():
    out = outcome_from_trajectory(
        _traj("fallback", "trajectory budget of 10 s used up during round 3")
    )
    assert out.status == "fallback" and "budget" in out.error


def test_a_dead_endpoint_is_an_error_even_if_the_harness_answered_with_a_fallback():
    calls = [
        {
            "ttft_s": None,
            "latency_s": 0.01,
            "input_tokens": 0,
            "output_tokens": 0,
            "error": "http://127.0.0.1:1/v1: APIConnectionError: Connection error.",
        }
    ] * 2
    out = outcome_from_trajectory(_traj("fallback", "model call failed", calls=calls))
    assert (
        out.status == "error"
        and "every model call failed" in out.error
        and "APIConnectionError" in out.error
    )


def test_runtime_errors_are_errors_and_counts_are_kept():
    tools = [
        {"name": "get_product_info_by_link_id", "error": None},
        {"name": "calculate_promotion", "error": "timed out after 5 s"},
    ]
    out = outcome_from_trajectory(_traj("fallback", "runtime error: KeyError: 'x'", tools=tools))
    assert out.status == "error" and out.tool_calls == 2 and out.tool_errors == 1
    assert out.reply_chars == len("Hi there") and out.calls[0]["input_tokens"] == 900


def test_project_mcp_server_commands_are_recognised():
    assert _is_project_mcp_server(("python", "-m", "harness", "serve-mcp"))
    assert _is_project_mcp_server(("python", "-m", "harness.mcp_server"))
    assert not _is_project_mcp_server(("npx", "some-other-mcp"))


def test_the_replays_policy_sends_its_sampling_and_the_engines_fields(tmp_path):
    """The replay's agent gets its policy from the one factory (``make_policy``, role ``replay``):
    the endpoint's model, key and name, the 120 s timeout, and for ``transformers serve`` the
    ``generation_config`` that makes the replay's sampling take effect, in every request's body."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from serving.agent_runner import replay_policy
    from serving.endpoint import Endpoint, GenerationSettings
    from serving.profiles import ServingProfile

    bodies = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            bodies[-1]["authorization"] = self.headers.get("Authorization")
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "seen"}}')

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = Endpoint(
            profile=ServingProfile(name="cpu-transformers", engine="transformers"),
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            model="org/model:q8",
            api_key="EMPTY",
            checkpoint={"name": "x", "path": str(tmp_path)},
        )
        settings = GenerationSettings(temperature=0.7, top_p=0.9, max_tokens=32, seed=5)
        policy, policy_settings = replay_policy(endpoint=endpoint, settings=settings)
        assert policy.name == "transformers:cpu-transformers"
        assert policy.client.timeout == 120.0 and policy.client.max_retries == 0
        assert (policy_settings.max_new_tokens, policy_settings.seed) == (32, 5)
        with pytest.raises(PolicyError):
            policy.generate([{"role": "user", "content": "hi"}], settings=policy_settings)
    finally:
        server.shutdown()
    (body,) = bodies
    assert body["model"] == "org/model:q8" and body["seed"] == 5 and body["temperature"] == 0.7
    assert body["authorization"] == "Bearer EMPTY"
    assert json.loads(body["generation_config"]) == {
        "do_sample": True,
        "temperature": 0.7,
        "top_p": 0.9,
        "max_new_tokens": 32,
    }

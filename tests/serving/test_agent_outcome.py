"""How a trajectory becomes the replay's request status."""

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


def test_extra_body_survives_the_per_call_client_copies():
    from openai import OpenAI

    from serving.agent_runner import _add_extra_body

    client = _add_extra_body(
        OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x"), {"generation_config": "{}"}
    )
    for c in (
        client,
        client.with_options(timeout=3.0),
        client.with_options(timeout=3.0).with_options(timeout=1.0),
    ):
        create = c.chat.completions.create
        assert create.keywords == {"extra_body": {"generation_config": "{}"}}

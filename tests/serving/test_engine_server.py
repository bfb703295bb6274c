"""The CPU serving route on the local engine: a real server process, the agent's own client, clear
400s."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

from harness.model_cache import tiny_model_dir
from harness.policies import GenerationSettings
from harness.policies.openai_chat import OpenAIChatPolicy
from serving.endpoint import open_endpoint
from serving.engine_server import BadRequest, parse_body
from serving.llama_cpp import LlamaCppPolicy
from serving.profiles import ProfileError, profile_from_mapping, resolve_route

SYSTEM = "You are the host of a live stream. Answer with the catalogue's facts. " * 20


def test_body_fields_are_checked_by_name():
    ok = parse_body(
        json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        model_id="m",
        max_tokens_cap=64,
    )
    assert ok["max_tokens"] == 64 and ok["temperature"] == 1.0 and not ok["stream"]
    cases = {
        b"[1": "body: not JSON",
        b"[]": "body: expected a JSON object",
        b'{"model": "other", "messages": [{"role": "user"}]}': "model: 'other' is not served here",
        b'{"messages": []}': "messages: expected a non-empty list",
        b'{"messages": [{"role": "root"}]}': "messages[0].role",
        b'{"messages": [{"role": "user", "content": 5}]}': "messages[0].content: expected a string",
        b'{"messages": [{"role": "user"}], "max_tokens": 100000}': (
            "max_tokens: expected an integer from 1 to 64"
        ),
        b'{"messages": [{"role": "user"}], "max_tokens": true}': "max_tokens",
        b'{"messages": [{"role": "user"}], "temperature": "hot"}': (
            "temperature: expected a number from 0.0 to 2.0"
        ),
        b'{"messages": [{"role": "user"}], "top_p": 0}': "top_p: expected a number above 0",
        b'{"messages": [{"role": "user"}], "seed": 1.5}': "seed: expected an integer",
        b'{"messages": [{"role": "user"}], "seed": 10000000000000000000000000000000000000000}': (
            "seed: expected an integer from 0 to 4294967295"
        ),
        b'{"messages": [{"role": "user"}], "tools": {}}': "tools: expected a list",
        b"x" * (5 << 20): "over the 4194304 byte limit",
    }
    for raw, message in cases.items():
        with pytest.raises(BadRequest, match=message.replace("[", r"\[").replace("(", r"\(")):
            parse_body(raw, model_id="m", max_tokens_cap=64)


def test_profiles_of_the_local_engine_are_checked():
    assert (
        resolve_route("cpu-engine").engine == "local"
        and resolve_route("cpu-engine").quantization == "gguf"
    )
    assert resolve_route("cpu-engine-int8").quantization == "int8"
    assert (
        resolve_route("local:tiny").checkpoint == "tiny"
        and resolve_route("local:tiny").quantization == "gguf"
    )
    with pytest.raises(
        ProfileError,
        match="quantization: 'int4' is not one of gguf, F32, F16, Q8_0, Q5_0, Q4_1, "
        "Q4_0, none, int8",
    ):
        profile_from_mapping(
            "p", {"engine": "local", "checkpoint": "tiny", "quantization": "int4"}, source="f.yaml"
        )
    with pytest.raises(ProfileError, match="only engine local quantizes"):
        profile_from_mapping(
            "p",
            {"engine": "transformers", "checkpoint": "tiny", "quantization": "int8"},
            source="f.yaml",
        )
    with pytest.raises(ProfileError, match="base_url: not used by engine local"):
        profile_from_mapping(
            "p", {"engine": "local", "checkpoint": "tiny", "base_url": "http://x/v1"}, source="f"
        )


@pytest.mark.slow
def test_the_served_engine_answers_the_agent_client_as_the_in_process_engine_does(tmp_path):
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "how much is link 3?"},
    ]
    settings = GenerationSettings(temperature=0.0, max_new_tokens=12)
    local = LlamaCppPolicy(tiny_model_dir(), settings=settings).generate(
        messages
    )  # the same GGUF in process
    with open_endpoint(profile=resolve_route("cpu-engine-tiny"), log_dir=tmp_path) as endpoint:
        environ = Path(f"/proc/{endpoint.server_pid}/environ").read_bytes().split(b"\0")
        assert b"OMP_NUM_THREADS=1" in environ and b"HF_HUB_OFFLINE=1" in environ
        client = OpenAIChatPolicy(
            base_url=endpoint.base_url, model=endpoint.model, settings=settings
        )
        client.begin_request("a")
        first = client.generate(messages)
        client.begin_request("b")  # its first call tells the server that request "a" is over
        second = client.generate(
            messages[:1] + [{"role": "user", "content": "is link 5 in stock?"}]
        )
        info = httpx.get(endpoint.base_url.removesuffix("/v1") + "/get_server_info").json()[
            "internal_states"
        ][0]
        assert (info["agent_requests_open"], info["agent_requests_ended"]) == (1, 1), info
        assert first.text == local.text and first.output_tokens == 12
        assert first.ttft_s is not None and first.finish_reason == "length"
        assert second.output_tokens == 12
        # the budget bounds the whole stream, not each read: a long reply (about 4 s of the tiny
        # model on a quiet 2-core machine) is cut at the time left, once its first tokens have
        # arrived (the budget leaves a loaded machine time for them: 0.5 s did not always)
        import time

        long = OpenAIChatPolicy(
            base_url=endpoint.base_url,
            model=endpoint.model,
            settings=GenerationSettings(temperature=0.0, max_new_tokens=2000),
        )
        started = time.perf_counter()
        cut = long.generate(messages, timeout_s=1.0)
        assert cut.finish_reason == "timeout" and 0 < cut.output_tokens < 2000
        assert time.perf_counter() - started < 2.5
        bad = httpx.post(
            f"{endpoint.base_url}/chat/completions", json={"messages": [{"role": "x"}]}
        )
        assert bad.status_code == 400 and "messages[0].role" in bad.json()["error"]["message"]
        bad = httpx.post(
            f"{endpoint.base_url}/chat/completions",
            json={"messages": messages},
            headers={"X-Harness-Request-Ended": "../x"},
        )
        assert bad.status_code == 400
        assert (
            bad.json()["error"]["message"]
            == "X-Harness-Request-Ended: expected 1-64 letters, digits, '-' or '_'"
        )
        pid = endpoint.server_pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "Uvicorn running" in (tmp_path / "engine-server.log").read_text()


def test_streamed_text_deltas_add_up_to_the_decoded_text():
    from serving.engine.policy import load_model
    from serving.engine_server.app import TextStream

    _model, tokenizer = load_model(tiny_model_dir())
    text = "Prix: 12,50 € — «très bien» 价格 👍🏽 ok\n  done"
    ids = tokenizer.encode(text)
    stream = TextStream(tokenizer)
    deltas = [stream.push(ids[i : i + 2]) for i in range(0, len(ids), 2)]
    assert "".join(deltas) == tokenizer.decode(ids, skip_special_tokens=True)
    assert not any("\ufffd" in d for d in deltas)

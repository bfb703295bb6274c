"""The CPU engine server is bounded (issue 28, item 5), over HTTP against a real server process on
the tiny model: an over-long prompt is a 400 before any work and does not hold up another client; a
body is refused by its Content-Length before it is read; a half-sent body is dropped at the read
timeout and connections are capped; a huge seed is a 400; a client that leaves stops its request."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from serving.endpoint import open_endpoint
from serving.profiles import profile_from_mapping

pytestmark = pytest.mark.slow

MAX_CONNECTIONS = 6
READ_TIMEOUT_S = 1.5


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    profile = profile_from_mapping(
        "bounded-tiny",
        {
            "engine": "local",
            "checkpoint": "tiny",
            "threads": 1,
            "extra_args": [
                "--max-connections",
                str(MAX_CONNECTIONS),
                "--read-timeout",
                str(READ_TIMEOUT_S),
            ],
        },
        source="test",
    )
    with open_endpoint(profile=profile, log_dir=tmp_path_factory.mktemp("engine")) as endpoint:
        yield endpoint


def _chat(endpoint, content: str, **extra) -> dict:
    return {"model": endpoint.model, "messages": [{"role": "user", "content": content}], **extra}


def _raw(endpoint) -> socket.socket:
    parts = urlsplit(endpoint.base_url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def _status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0


def test_a_prompt_longer_than_the_context_is_refused_before_any_work(server):
    url = f"{server.base_url}/chat/completions"
    started = time.perf_counter()
    huge = httpx.post(url, json=_chat(server, "price? " * 150_000), timeout=60)  # ~1 MB
    assert huge.status_code == 400 and "context holds" in huge.json()["error"]["message"]
    assert time.perf_counter() - started < 10
    over = httpx.post(
        url, json=_chat(server, "link 3 price " * 900), timeout=60
    )  # ~2,700 tokens, 11 KB
    assert over.status_code == 400
    assert (
        "the prompt is" in over.json()["error"]["message"] and "the context holds 2048" in over.text
    )
    started = time.perf_counter()
    small = httpx.post(url, json=_chat(server, "hi", max_tokens=2, temperature=0), timeout=60)
    assert small.status_code == 200 and small.json()["usage"]["completion_tokens"] == 2
    assert time.perf_counter() - started < 10


def test_a_body_over_the_cap_is_refused_by_its_content_length_unread(server):
    sock = _raw(server)
    with sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 419430400\r\n\r\n{"messages":'
        )
        assert _status(sock) == 413


def test_a_half_sent_body_is_dropped_and_connections_are_capped(server):
    url = f"{server.base_url}/chat/completions"
    held = []
    for _ in range(MAX_CONNECTIONS - 1):  # uvicorn refuses the connection that reaches the cap
        sock = _raw(server)
        sock.sendall(
            b'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mes'
        )
        held.append(sock)
    try:
        time.sleep(0.3)  # the server has their headers: each holds a request slot
        assert (
            httpx.post(url, json=_chat(server, "hi", max_tokens=2), timeout=30).status_code == 503
        )
        started = time.perf_counter()
        assert [_status(sock) for sock in held] == [408] * (MAX_CONNECTIONS - 1)
        assert time.perf_counter() - started < READ_TIMEOUT_S + 5
    finally:
        for sock in held:
            sock.close()
    ok = httpx.post(url, json=_chat(server, "hi", max_tokens=2, temperature=0), timeout=30)
    assert ok.status_code == 200


def test_a_huge_seed_is_a_400_naming_the_field(server):
    response = httpx.post(
        f"{server.base_url}/chat/completions", json=_chat(server, "hi", seed=10**40), timeout=30
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "seed: expected an integer from 0 to 4294967295"


def test_a_client_that_leaves_stops_its_request(server):
    info = f"{server.base_url.removesuffix('/v1')}/get_server_info"

    def decoded() -> int:
        return httpx.get(info, timeout=30).json()["internal_states"][0]["decode_tokens"]

    before = decoded()
    with httpx.stream(
        "POST",
        f"{server.base_url}/chat/completions",
        timeout=30,
        json=_chat(server, "tell me everything " * 50, max_tokens=1800, temperature=0, stream=True),
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if '"content"' in line and '"content": ""' not in line:
                break  # a token arrived: leave
    deadline = time.perf_counter() + 10
    while decoded() == before and time.perf_counter() < deadline:
        time.sleep(0.1)  # the stopped request is counted when llama.cpp ends it
    first = decoded()
    time.sleep(1.0)
    assert decoded() == first, "the request went on decoding after its client left"
    assert first - before < 1800

"""Issue 41 item 7: unfinished request headers cannot hold the engine server's slots.

64 sockets that sent only a request line and a ``Host`` header held every slot of the CPU route's
server, and every other client got 503 for 30 s or more. Now a request's headers must arrive within
``--header-timeout`` (then 408 and the connection closes) and one client address holds at most
``--max-connections-per-client`` connections. Over HTTP against a real ``python -m serving
engine-server`` process on the tiny model; the hostile client connects from 127.0.0.2, another
loopback address, so that the well-behaved client on 127.0.0.1 is a different client.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

from serving.endpoint import open_endpoint
from serving.profiles import profile_from_mapping

pytestmark = pytest.mark.slow

HEADER_TIMEOUT_S = 2.0
PER_CLIENT = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    profile = profile_from_mapping(
        "slow-headers-tiny",
        {
            "engine": "local",
            "checkpoint": "tiny",
            "threads": 1,
            "extra_args": [
                "--header-timeout",
                str(HEADER_TIMEOUT_S),
                "--max-connections-per-client",
                str(PER_CLIENT),
            ],
        },
        source="test",
    )
    with open_endpoint(profile=profile, log_dir=tmp_path_factory.mktemp("engine")) as endpoint:
        yield endpoint


def _slow_client(endpoint) -> socket.socket:
    """A connection from 127.0.0.2 that sends a request line and a Host header, and nothing more."""
    parts = urlsplit(endpoint.base_url)
    sock = socket.create_connection(
        (parts.hostname, parts.port), timeout=30, source_address=("127.0.0.2", 0)
    )
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
    return sock


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return data


def test_sixty_four_unfinished_headers_do_not_keep_another_client_out(server):
    url = f"{server.base_url}/chat/completions"
    body = {
        "model": server.model,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 2,
        "temperature": 0,
    }
    slow = [_slow_client(server) for _ in range(64)]
    try:
        started = time.perf_counter()
        served = httpx.post(url, json=body, timeout=60)
        assert served.status_code == 200, served.text
        assert (
            time.perf_counter() - started < HEADER_TIMEOUT_S
        )  # served at once, not after the timeout
        answers = [_answer(sock) for sock in slow]
        refused = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
        timed_out = [a for a in answers if a.startswith(b"HTTP/1.1 408")]
        assert len(refused) == 64 - PER_CLIENT and b"the limit per client" in refused[0]
        assert (
            len(timed_out) == PER_CLIENT
            and b"request headers not received within 2 s" in timed_out[0]
        )
        assert time.perf_counter() - started < HEADER_TIMEOUT_S + 5
    finally:
        for sock in slow:
            sock.close()
    # the slots came back: the hostile address itself may connect again
    again = socket.create_connection(
        (urlsplit(server.base_url).hostname, urlsplit(server.base_url).port),
        timeout=30,
        source_address=("127.0.0.2", 0),
    )
    with again:
        again.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _answer(again).startswith(b"HTTP/1.1 200")


def test_the_flags_refuse_values_that_are_not_positive():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "serving", "engine-server", "tiny", "--header-timeout", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--header-timeout: '0': give a number above 0" in done.stderr

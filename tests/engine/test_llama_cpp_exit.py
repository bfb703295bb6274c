"""Every process that runs the llama.cpp route exits cleanly after a call cut at its budget: the
CLI, the engine server on SIGTERM and a Celery worker on shutdown (tests/studio/test_jobs.py) exit
0, never SIGABRT or SIGSEGV.

A call's caller has its answer at the budget, but llama.cpp works on until its next prefill batch or
token, up to a second or more on a loaded machine; a process that exited then aborted ("FATAL:
exception not rethrown", exit 134) or crashed (139). On the tiny model that window is milliseconds,
so each process here runs with ``slow_llama/sitecustomize.py``: llama.cpp goes on computing for
``SLOW_LLAMA_STOP_S`` seconds after it is told to stop, as the default model does on 2 busy cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from serving.transformers_server import free_port
from tests.engine.slow_llama import ROOT, late_stop_env

pytestmark = pytest.mark.slow  # each starts a process that loads the tiny model (5-15 s)


def _late_stop_env(**kwargs: float) -> dict[str, str]:
    return {**os.environ, **late_stop_env(**kwargs)}


def test_the_cli_exits_0_after_a_call_cut_at_its_budget():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--request",
            "examples/requests/product_price.json",
            "--policy",
            "tiny",
            "--budget-s",
            "3",
            "--max-new-tokens",
            "2000",
        ],
        # round 1's prefill is held past the budget: on a fast machine the tiny model finished its
        # rounds inside 3 s and the test saw no cut call (CI: four rounds in 2.65 s)
        cwd=ROOT,
        env=_late_stop_env(first_event_s=4.0),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "trajectory budget of 3 s used up during round 1" in done.stdout, (
        done.stdout + done.stderr
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"


def test_the_engine_server_exits_0_on_sigterm_after_a_call_cut_at_its_budget(tmp_path):
    port = free_port()
    log = tmp_path / "engine-server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "serving",
                "engine-server",
                "tiny",
                "--port",
                str(port),
                "--quantization",
                "F32",
                "--threads",
                "1",
            ],
            cwd=ROOT,
            env=_late_stop_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        model = httpx.get(f"{base}/v1/models").json()["data"][0]["id"]
        body = {
            "model": model,
            "stream": True,
            "max_tokens": 1000,
            "temperature": 0,
            "messages": [{"role": "user", "content": "Tell me about the kettle on link 3. " * 40}],
        }
        with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=60) as response:
            chunks = response.iter_lines()
            assert json.loads(next(line for line in chunks if line.startswith("data:"))[5:])[
                "choices"
            ]
        # the client went away at its budget: the server cancels the call; llama.cpp is still
        # computing
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert code == 0, f"exit {code}: {log.read_text()[-2000:]}"

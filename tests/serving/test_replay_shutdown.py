"""Stopping a replay (SIGTERM) stops the servers it started and marks the run aborted."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import demo_harness_dir

pytestmark = pytest.mark.slow


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_mid_run_stops_transformers_serve_and_the_mcp_server(tmp_path):
    from harness.model_cache import tiny_model_dir

    tiny_model_dir()
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "request": {"comments": ["how much is link 1?"]}}) + "\n"
            for i in range(40)
        )
    )
    runs = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "serving",
            "replay",
            "--route",
            "cpu-tiny",
            "--harness",
            str(demo_harness_dir()),
            "--cases",
            str(cases),
            "--concurrency",
            "1",
            "--warmup",
            "0",
            "--measured",
            "40",
            "--max-tokens",
            "8",
            "--out",
            str(runs),
            "--run-id",
            "stopped",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    meta_path = runs / "stopped" / "run.json"
    deadline = time.monotonic() + 120
    meta = {}
    while time.monotonic() < deadline and proc.poll() is None:
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text())
            if meta.get("services") and (runs / "stopped" / "requests.jsonl").stat().st_size > 0:
                break
        time.sleep(0.2)
    assert meta.get("services"), proc.communicate()[0].decode()[-2000:]
    server_pid = meta["route"]["server_pid"]
    mcp_pid = meta["services"]["mcp_servers"]["marketing"]["pid"]
    assert _alive(server_pid) and _alive(mcp_pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (_alive(server_pid) or _alive(mcp_pid)):
        time.sleep(0.2)
    assert not _alive(server_pid) and not _alive(mcp_pid)
    meta = json.loads(meta_path.read_text())
    assert meta["status"] == "aborted" and "SystemExit" in meta["error"]
    assert (runs / "stopped" / "summary.json").is_file()  # what was measured so far is kept

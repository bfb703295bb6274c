"""scripts/services.sh as its callers use it: `service_env=$(bash scripts/services.sh)`.

The command substitution returns only when every holder of its pipe has closed
it, so a daemon that inherits the pipe makes the caller hang for ever. That is
how CI once sat for 90 minutes after "Removed stale pid file.".
"""

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="redis-server is installed by scripts/bootstrap.sh"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_starting_redis_returns_only_the_export_lines_and_does_not_hang():
    port = _free_port()
    caller = 'service_env=$(bash scripts/services.sh) && printf "%s" "$service_env"'
    try:
        done = subprocess.run(
            ["bash", "-c", caller],
            cwd=ROOT,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "REDIS_PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        password = (ROOT / "var" / "redis.password").read_text().strip()
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True,
                       env={"PATH": "/usr/bin:/bin", "REDISCLI_AUTH": password})
    assert done.returncode == 0, done.stderr
    # the password scripts/services.sh made once and keeps in var/ (docs/security.md)
    assert done.stdout == f"export REDIS_URL=redis://:{password}@127.0.0.1:{port}/0"


def test_a_redis_that_cannot_start_fails_the_caller_with_the_reason():
    caller = "service_env=$(bash scripts/services.sh) && echo reached"
    done = subprocess.run(
        ["bash", "-c", caller],
        cwd=ROOT,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "REDIS_PORT": "70000"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "reached" not in done.stdout
    assert "70000" in done.stderr  # redis-server says what is wrong with the port


def test_a_redis_already_running_without_a_password_is_used_with_a_warning():
    port = _free_port()
    subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "yes",
                    "--save", "", "--appendonly", "no"], check=True, capture_output=True)
    try:
        for _ in range(50):
            if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True).stdout.strip():
                break
            time.sleep(0.1)
        done = subprocess.run(["bash", "-c", "service_env=$(bash scripts/services.sh) && printf %s \"$service_env\""],
                              cwd=ROOT, env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                                             "REDIS_PORT": str(port)},
                              capture_output=True, text=True, timeout=30)
    finally:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"export REDIS_URL=redis://127.0.0.1:{port}/0"
    assert f"WARNING: the Redis on port {port} has no password" in done.stderr

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


def _wait_for_redis(port: int) -> None:
    """Until the Redis started on ``port`` answers (PONG, or NOAUTH when it wants a password)."""
    for _ in range(50):
        if subprocess.run(
            ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True
        ).stdout.strip():
            return
        time.sleep(0.1)


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
        subprocess.run(
            ["redis-cli", "-p", str(port), "shutdown", "nosave"],
            capture_output=True,
            env={"PATH": "/usr/bin:/bin", "REDISCLI_AUTH": password},
        )
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
    subprocess.run(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        check=True,
        capture_output=True,
    )
    try:
        _wait_for_redis(port)
        done = subprocess.run(
            ["bash", "-c", 'service_env=$(bash scripts/services.sh) && printf %s "$service_env"'],
            cwd=ROOT,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "REDIS_PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"export REDIS_URL=redis://127.0.0.1:{port}/0"
    assert f"WARNING: the Redis on port {port} has no password" in done.stderr


def test_a_redis_with_another_checkouts_password_is_named_with_the_way_out():
    port = _free_port()
    # owner-only config, as services.sh writes it: the password stays off the command line
    conf = ROOT / "var" / f"other-redis-{port}.conf"
    conf.write_text(
        f'port {port}\nbind 127.0.0.1\nrequirepass another-checkouts\ndaemonize yes\nsave ""\n'
    )
    subprocess.run(["redis-server", str(conf)], check=True, capture_output=True)
    try:
        _wait_for_redis(port)
        done = subprocess.run(
            ["bash", "-c", "service_env=$(bash scripts/services.sh) && echo reached"],
            cwd=ROOT,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "REDIS_PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        subprocess.run(
            ["redis-cli", "-p", str(port), "shutdown", "nosave"],
            capture_output=True,
            env={"PATH": "/usr/bin:/bin", "REDISCLI_AUTH": "another-checkouts"},
        )
        conf.unlink()
    assert done.returncode != 0 and "reached" not in done.stdout
    assert "a Redis with another password" in done.stderr and "set REDIS_PORT" in done.stderr


@pytest.mark.skipif(
    shutil.which("pg_createcluster") is None or shutil.which("su") is None,
    reason="PostgreSQL is installed by scripts/bootstrap.sh --postgres",
)
def test_a_postgres_role_with_a_password_this_checkout_does_not_know_is_taken_over():
    """CI's clean clone met a cluster kept from an earlier machine image whose `harness` role had
    another password: services.sh stopped there and the whole run failed in 70 s. It administers the
    cluster as its superuser, so it gives the role this checkout's password and says so."""
    cluster = f"hs-test-{_free_port()}"
    version = sorted(p.name for p in Path("/usr/lib/postgresql").iterdir())[-1]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "REDIS_PORT": str(_free_port()),
        "HS_PG_CLUSTER": cluster,
    }
    script = 'service_env=$(bash scripts/services.sh postgres) && printf %s "$service_env"'
    try:
        first = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert first.returncode == 0, first.stderr
        port = next(
            line.split()[2]
            for line in subprocess.run(
                ["pg_lsclusters", "-h"], capture_output=True, text=True
            ).stdout.splitlines()
            if line.split()[:2] == [version, cluster]
        )
        subprocess.run(
            ["su", "postgres", "-c", f"psql -p {port} -q"],
            input="alter role harness password 'elsewhere';\n",
            text=True,
            check=True,
            capture_output=True,
        )
        again = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        password = (ROOT / "var" / "postgres.password").read_text().strip()
        logged_in = subprocess.run(
            [
                "psql",
                "-h",
                "127.0.0.1",
                "-p",
                port,
                "-U",
                "harness",
                "-d",
                "harness_studio",
                "-qtAc",
                "select 1",
            ],
            env={"PATH": "/usr/bin:/bin", "PGPASSWORD": password},
            capture_output=True,
            text=True,
        )
    finally:
        redis_password = (ROOT / "var" / "redis.password").read_text().strip()
        subprocess.run(
            ["redis-cli", "-p", env["REDIS_PORT"], "shutdown", "nosave"],
            capture_output=True,
            env={"PATH": "/usr/bin:/bin", "REDISCLI_AUTH": redis_password},
        )
        subprocess.run(["pg_dropcluster", "--stop", version, cluster], capture_output=True)
    assert again.returncode == 0, again.stderr
    assert "had a password other than var/postgres.password's" in again.stderr
    url = next(line for line in again.stdout.splitlines() if "DATABASE_URL" in line).split("=", 1)[
        1
    ]
    assert url == f"postgres://harness:{password}@127.0.0.1:{port}/harness_studio"
    assert logged_in.stdout.strip() == "1", logged_in.stderr

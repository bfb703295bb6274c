"""Issue 41 item 4: the demo is not open to the network.

The demo's web server listened on 0.0.0.0:8000 with the passwords the README publishes,
``var/studio.sqlite3`` was 0644 (stored secrets and session keys readable by any local user), Redis
had no password and PostgreSQL's was ``harness``. Runs the real ``scripts/demo.sh`` and
``scripts/services.sh`` in a copy of the scripts, with a real redis-server, and a stand-in for the
virtualenv's python that records how each command was started (umask, ALLOWED_HOSTS, REDIS_URL) and
serves the address gunicorn is given (``WEB_HOST``:``PORT``, which studio/gunicorn_conf.py binds)
with a plain HTTP listener, so what is checked is the script's own doing: the address it binds, the
modes it leaves, the passwords it makes.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="redis-server is installed by scripts/bootstrap.sh"
)

FAKE_PYTHON = f"""#!/usr/bin/env bash
printf '%s|%s|%s|%s\\n' "$(umask)" "$ALLOWED_HOSTS" "$REDIS_URL" "$*" >>var/calls.log
case "$*" in
  *gunicorn*) printf '%s:%s\n' "$WEB_HOST" "$PORT" >>var/bind.log
              exec {sys.executable} -m http.server --bind "$WEB_HOST" "$PORT" ;;
  *celery*) exec sleep 600 ;;
  *) touch var/made-by-"$2" 2>/dev/null; exit 0 ;;
esac
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _outside_address() -> str | None:
    """This machine's address on its network (not loopback), or None when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(
                ("10.255.255.255", 1)
            )  # no packet is sent: this only picks the outgoing interface
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def demo_tree(tmp_path):
    (tmp_path / "scripts").mkdir()
    for name in ("demo.sh", "services.sh", "web.sh"):
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    (tmp_path / "scripts" / "bootstrap.sh").write_text("exit 0\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    os.chmod(var, 0o755)
    database = var / "studio.sqlite3"  # as an earlier demo under umask 022 left it
    database.write_text("")
    database.chmod(0o644)
    return tmp_path


def _env(**extra) -> dict:
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), **extra}


def test_the_demo_listens_on_loopback_with_private_files_and_passwords(demo_tree):
    port, redis_port = _free_port(), _free_port()
    demo = subprocess.Popen(
        ["bash", "scripts/demo.sh"],
        cwd=demo_tree,
        start_new_session=True,
        env=_env(PORT=str(port), REDIS_PORT=str(redis_port)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    password_file = demo_tree / "var" / "redis.password"
    try:
        deadline = time.monotonic() + 60
        while not _answers("127.0.0.1", port):
            assert demo.poll() is None, demo.stdout.read()
            assert time.monotonic() < deadline, "the demo's web server did not start"
            time.sleep(0.2)
        outside = _outside_address()
        if outside is not None:
            assert not _answers(outside, port), f"the web server answers on {outside}:{port}"

        var = demo_tree / "var"
        assert stat.S_IMODE(var.stat().st_mode) == 0o700
        for path in [var / "studio.sqlite3", password_file, *var.glob("made-by-*")]:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        calls = [line.split("|") for line in (var / "calls.log").read_text().splitlines()]
        password = password_file.read_text().strip()
        assert len(password) == 32
        for mask, allowed_hosts, redis_url, _args in calls:
            assert mask == "0077"
            assert allowed_hosts == "127.0.0.1,localhost"
            assert redis_url == f"redis://:{password}@127.0.0.1:{redis_port}/0"
        assert any("-m gunicorn -c studio/gunicorn_conf.py" in args for *_, args in calls)
        # people's jobs and follow-on work on workers of their own (docs/workers.md)
        workers = [args for *_, args in calls if "-m celery -A studio worker" in args]
        assert any("--queues studio " in args and "--beat" in args for args in workers), workers
        assert any("--queues follow-on " in args for args in workers), workers
        assert (var / "bind.log").read_text().split() == [f"127.0.0.1:{port}"]

        anonymous = subprocess.run(
            ["redis-cli", "-p", str(redis_port), "get", "x"], capture_output=True, text=True
        )
        assert "NOAUTH" in anonymous.stdout + anonymous.stderr
        listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert password not in listing  # the password is not on any command line
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGTERM)
            demo.wait(timeout=30)
        subprocess.run(
            ["redis-cli", "-p", str(redis_port), "shutdown", "nosave"],
            capture_output=True,
            env=_env(
                REDISCLI_AUTH=password_file.read_text().strip() if password_file.exists() else ""
            ),
        )


def test_listening_on_every_interface_needs_the_host_names(demo_tree):
    redis_port = _free_port()
    done = subprocess.run(
        ["bash", "scripts/demo.sh"],
        cwd=demo_tree,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(HOST="0.0.0.0", PORT=str(_free_port()), REDIS_PORT=str(redis_port)),
    )
    password_file = demo_tree / "var" / "redis.password"
    subprocess.run(
        ["redis-cli", "-p", str(redis_port), "shutdown", "nosave"],
        capture_output=True,
        env=_env(REDISCLI_AUTH=password_file.read_text().strip() if password_file.exists() else ""),
    )
    assert done.returncode == 2
    assert "set ALLOWED_HOSTS to the host names it is reached by" in done.stderr


def test_any_command_leaves_var_owner_only(tmp_path):
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    os.chmod(var, 0o755)
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(
            PYTHONPATH=str(ROOT),
            DJANGO_SETTINGS_MODULE="studio.settings",
            HARNESS_STUDIO_VAR=str(var),
        ),
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(var.stat().st_mode) == 0o700

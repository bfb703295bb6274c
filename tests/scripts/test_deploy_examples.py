"""examples/deploy/ (docs/deploy.md) stays runnable as the code moves: the units and the container
start the server, the workers and beat the way scripts/web.sh and scripts/demo.sh do, and copy
only what the repository has. tests/studio/test_web_server.py runs the command itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "examples" / "deploy"
SERVER = "-m gunicorn -c studio/gunicorn_conf.py studio.wsgi:application"


def _unit(name: str) -> dict[str, list[str]]:
    """A systemd unit's settings, each name with every value it is given."""
    settings: dict[str, list[str]] = {}
    for line in (DEPLOY / name).read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def test_the_web_unit_and_the_container_start_the_server_scripts_web_sh_starts():
    assert SERVER in (ROOT / "scripts" / "web.sh").read_text()
    web = _unit("harness-studio-web.service")
    assert web["ExecStart"] == [f"/srv/harness-studio/.venv/bin/python {SERVER}"]
    assert any("collectstatic --noinput" in step for step in web["ExecStartPre"])
    cmd = re.search(r"^CMD (\[.*\])$", (DEPLOY / "Containerfile").read_text(), re.M).group(1)
    assert " ".join(json.loads(cmd)) == f"python {SERVER}"
    for path in re.findall(r"[\w/]+\.py", SERVER):
        assert (ROOT / path).is_file(), path


@pytest.mark.parametrize(
    "unit, command",
    [
        ("harness-studio-worker.service", "-m celery -A studio worker --queues studio"),
        (
            "harness-studio-follow-on-worker.service",
            "-m celery -A studio worker --queues follow-on",
        ),
        ("harness-studio-beat.service", "-m celery -A studio beat"),
    ],
)
def test_the_worker_units_start_celery_on_the_studio_app(unit, command):
    settings = _unit(unit)
    assert command in settings["ExecStart"][0]
    assert settings["EnvironmentFile"] == ["/etc/harness-studio/production.env"]


def test_the_container_copies_only_what_the_repository_has_and_collects_at_build_time():
    recipe = (DEPLOY / "Containerfile").read_text()
    sources = [
        part for line in re.findall(r"^COPY (.+)$", recipe, re.M) for part in line.split()[:-1]
    ]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), (
            f"Containerfile copies {source}, which the repository does not have"
        )
    # every package pyproject.toml installs is copied before `pip install .`
    packages = re.search(r"include = \[(.*?)\]", (ROOT / "pyproject.toml").read_text()).group(1)
    for package in re.findall(r'"(\w+)\*"', packages):
        assert package in sources, (
            f"pyproject.toml installs {package}, which the Containerfile does not copy"
        )
    assert re.search(r"^RUN .*\n?.*manage.py collectstatic --noinput", recipe, re.M)
    assert "STATIC_MANIFEST=1" in recipe

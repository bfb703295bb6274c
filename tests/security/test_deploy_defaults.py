"""Production-safe defaults (issue 14, finding 4).

With no environment asking for it the studio runs with DEBUG off, so a missing
page or a crash shows the project's own pages and never Django's debug page
(every URL pattern, the settings, a traceback). The shipped production example
(examples/production.env) passes Django's deployment checklist as it stands,
once a SECRET_KEY is filled in, and the studio refuses to start in production
without a strong one.

These run the studio in a subprocess with a clean environment: the test
process itself always has DEBUG forced off by pytest-django, so only a fresh
process shows what a deployment gets by default.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_ENV = ROOT / "examples" / "production.env"

# What Django's debug pages show and the project's pages must not.
INTERNALS = (
    "Using the URLconf",
    "api/v1/",
    "INSTALLED_APPS",
    "ROOT_URLCONF",
    "Traceback",
    "SECRET_KEY",
    "settings.py",
    "DEBUG = True",
)

_PROBE = r"""
import json, sys, types
import django
from django.conf import settings
from django.urls import include, path

django.setup()


def crash(request):
    raise RuntimeError("an internal detail no visitor may see")


urls = types.ModuleType("probe_urls")
urls.urlpatterns = [path("probe/crash/", crash), path("", include("studio.urls"))]
sys.modules["probe_urls"] = urls
settings.ROOT_URLCONF = "probe_urls"

from django.test import Client

client = Client(raise_request_exception=False)
pages = {}
for name, url, extra in [("404", "/no-such-page/", {}), ("500", "/probe/crash/", {}),
                         ("400", "/", {"HTTP_HOST": "evil.example"})]:
    response = client.get(url, **extra)
    pages[name] = {"status": response.status_code, "body": response.content.decode()}
print(json.dumps({"debug": settings.DEBUG, "pages": pages}))
"""


def _clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment with nothing a developer's shell might have set (no DEBUG, no SECRET_KEY)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        **extra,
        "HARNESS_STUDIO_VAR": str(tmp_path / "var"),
    }


def _probe(tmp_path: Path, **extra: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=_clean_env(tmp_path, **extra),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _production_env() -> dict[str, str]:
    """examples/production.env as a dict, comments and blank lines skipped."""
    values = {}
    for number, line in enumerate(PRODUCTION_ENV.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        assert sep, f"{PRODUCTION_ENV}:{number}: expected NAME=value"
        values[name.strip()] = value.strip()
    return values


def _manage(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        env=_clean_env(tmp_path, **env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def default_probe(tmp_path_factory) -> dict:
    """What a fresh process with no environment asking for anything shows: one probe (a studio
    process started in Python, about a second) read by every test of the defaults."""
    return _probe(tmp_path_factory.mktemp("default-probe"))


def test_debug_is_off_unless_the_environment_turns_it_on(tmp_path, default_probe):
    assert default_probe["debug"] is False
    assert _probe(tmp_path, DEBUG="1")["debug"] is True


@pytest.mark.parametrize(
    "status, heading",
    [("404", "Not found"), ("500", "Something went wrong"), ("400", "Bad request")],
)
def test_error_pages_are_the_projects_and_show_no_internals(default_probe, status, heading):
    page = default_probe["pages"][status]
    assert page["status"] == int(status)
    assert heading in page["body"] and "Harness Studio" in page["body"]
    assert "an internal detail" not in page["body"]
    for internal in INTERNALS:
        assert internal not in page["body"], f"{status} page shows {internal!r}"


@pytest.mark.django_db
def test_the_forbidden_page_names_the_roles_and_no_internals(personas):
    client = Client(raise_request_exception=False)
    client.force_login(personas.outsider)
    response = client.get("/endpoints/new/")
    body = response.content.decode()
    assert response.status_code == 403
    assert "Not allowed" in body and "ask an admin" in body.lower()
    assert not any(internal in body for internal in INTERNALS)


@pytest.mark.django_db
def test_a_failed_csrf_check_shows_the_projects_page(personas):
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(personas.operator)
    response = client.post("/accounts/tokens/", {"name": "x"})
    body = response.content.decode()
    assert response.status_code == 403
    assert "Harness Studio" in body and "reload the page" in body.lower()
    assert "CSRF_FAILURE_VIEW" not in body and "Traceback" not in body


def test_the_production_example_passes_the_deployment_checklist(tmp_path):
    env = _production_env()
    assert env["SECRET_KEY"] == "", "the example must not ship a secret"
    env["SECRET_KEY"] = secrets.token_urlsafe(50)
    result = _manage(tmp_path, env, "check", "--deploy")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output
    assert "WARNING" not in output and "?: (security." not in output


@pytest.mark.parametrize(
    "secret, reason",
    [
        ("", "SECRET_KEY is required"),
        ("short-key", "SECRET_KEY is too weak"),
        ("a" * 60, "SECRET_KEY is too weak"),
    ],
)
def test_production_refuses_a_missing_or_weak_secret_key(tmp_path, secret, reason):
    env = {**_production_env(), "SECRET_KEY": secret}
    result = _manage(tmp_path, env, "check")
    assert result.returncode != 0
    assert reason in result.stderr
    assert "secrets.token_urlsafe(50)" in result.stderr  # says how to make one


def test_production_refuses_debug_and_missing_hosts(tmp_path):
    env = {**_production_env(), "SECRET_KEY": secrets.token_urlsafe(50)}
    debug = _manage(tmp_path, {**env, "DEBUG": "1"}, "check")
    assert (
        debug.returncode != 0
        and "DEBUG must be off when HARNESS_STUDIO_PRODUCTION is on" in debug.stderr
    )
    no_hosts = _manage(tmp_path, {**env, "ALLOWED_HOSTS": ""}, "check")
    assert no_hosts.returncode != 0 and "ALLOWED_HOSTS must name" in no_hosts.stderr


def test_a_local_run_without_a_secret_key_makes_one_private_key_and_keeps_it(tmp_path):
    script = "from django.conf import settings; print(settings.SECRET_KEY)"
    runs = [
        subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {script}"],
            env=_clean_env(tmp_path),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        for _ in range(2)
    ]
    keys = [run.stdout.strip() for run in runs]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr[-2000:]
    key_file = tmp_path / "var" / "secret_key"
    assert keys[0] == keys[1] == key_file.read_text().strip()  # the web server and workers share it
    assert len(keys[0]) >= 50
    assert key_file.stat().st_mode & 0o777 == 0o600

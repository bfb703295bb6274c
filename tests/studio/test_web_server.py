"""The studio as production serves it: scripts/web.sh (collectstatic, then gunicorn with
studio/gunicorn_conf.py) started as a real process from examples/production.env's settings.

A browser reaches it through the TLS proxy docs/deploy.md puts in front, so every request
here carries the proxy's ``X-Forwarded-Proto: https`` and the client keeps the cookies the
proxy's browser would (they are Secure, so a plain-HTTP cookie jar would drop them).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from http.cookies import SimpleCookie
from pathlib import Path

import httpx
import pytest

from tests.security.test_deploy_defaults import _production_env

pytestmark = pytest.mark.slow  # starts Django and gunicorn processes (10-30 s on 2 cores)

ROOT = Path(__file__).resolve().parents[2]
USERNAME, PASSWORD = "olivia", "olivia-operator-password"
A_YEAR = "max-age=315360000"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_env(var: Path, port: int) -> dict[str, str]:
    env = {
        **_production_env(),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    env.pop("DATABASE_URL")  # SQLite under the test's own folder
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(var),
        "PYTHONPATH": str(ROOT),
        "VENV": str(Path(sys.executable).parent.parent),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        **env,
        "HARNESS_STUDIO_VAR": str(var),
        "PORT": str(port),
        "WEB_WORKERS": "2",
        "WEB_THREADS": "2",
        "LOG_LEVEL": "WARNING",
    }


class ProxiedBrowser:
    """Requests as they arrive from the HTTPS proxy: the forwarded scheme, and the browser's
    cookies."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cookies: dict[str, str] = {}
        self.set_cookie_headers: list[str] = []
        self.http = httpx.Client(base_url=base_url, timeout=30, follow_redirects=False)

    def request(self, method: str, url: str, **kwargs) -> httpx.Response:
        headers = {"X-Forwarded-Proto": "https", **kwargs.pop("headers", {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        response = self.http.request(method, url, headers=headers, **kwargs)
        for header in response.headers.get_list("set-cookie"):
            self.set_cookie_headers.append(header)
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response

    def sign_in(self, username: str, password: str) -> httpx.Response:
        form = self.request("GET", "/accounts/login/")
        assert form.status_code == 200, form.text[:500]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        origin = self.base_url.replace("http://", "https://")
        return self.request(
            "POST",
            "/accounts/login/",
            headers={"Origin": origin, "Referer": origin + "/accounts/login/"},
            data={
                "csrfmiddlewaretoken": token,
                "username": username,
                "password": password,
                "next": "/",
            },
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    var = tmp_path_factory.mktemp("web-var")
    port = _free_port()
    env = _server_env(var, port)
    prepare = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', verbosity=0); "
        "from studio.accounts.roles import OPERATOR; from "
        "studio.accounts.services import user_create; "
        f"user_create(username={USERNAME!r}, password={PASSWORD!r}, roles=[OPERATOR])"
    )
    done = subprocess.run(
        [sys.executable, "-c", prepare],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    log = (var / "web.log").open("w")
    process = subprocess.Popen(
        ["bash", "scripts/web.sh"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(base_url + "/accounts/login/", timeout=5)
            break
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(
                    "scripts/web.sh did not answer on "
                    f"{base_url}:\n{(var / 'web.log').read_text()[-3000:]}"
                )
            time.sleep(0.3)
    yield process, base_url, var
    if process.poll() is None:
        process.kill()
        process.wait(10)
    log.close()


def test_an_operator_signs_in_through_the_real_server(server):
    process, base_url, var = server
    browser = ProxiedBrowser(base_url)
    signed_in = browser.sign_in(USERNAME, PASSWORD)
    assert signed_in.status_code == 302 and signed_in.headers["location"] == "/"
    home = browser.request("GET", "/")
    assert home.status_code == 200
    assert f'<span class="user">{USERNAME}</span>' in home.text
    assert home.headers["server"] == "gunicorn"
    # production settings: the session and CSRF cookies never travel over plain HTTP
    session = next(h for h in browser.set_cookie_headers if h.startswith("sessionid="))
    assert "Secure" in session and "HttpOnly" in session
    assert home.headers["strict-transport-security"].startswith("max-age=31536000")


def test_a_wrong_password_is_the_sign_in_page_again(server):
    process, base_url, var = server
    refused = ProxiedBrowser(base_url).sign_in(USERNAME, "not-the-password")
    assert refused.status_code == 200
    assert "Your username and password did not match" in refused.text


def test_static_files_have_hashed_names_gzip_and_a_years_cache(server):
    process, base_url, var = server
    browser = ProxiedBrowser(base_url)
    page = browser.request("GET", "/accounts/login/").text
    css = re.search(r'href="(/static/studio/studio\.[0-9a-f]{12}\.css)"', page)
    htmx = re.search(r'src="(/static/vendor/htmx-2\.0\.11\.min\.[0-9a-f]{12}\.js)"', page)
    assert css and htmx, page[:1500]
    for url in (css.group(1), htmx.group(1)):
        response = browser.request("GET", url, headers={"Accept-Encoding": "gzip"})
        assert response.status_code == 200, url
        assert response.headers["content-encoding"] == "gzip"
        assert (
            A_YEAR in response.headers["cache-control"]
            and "immutable" in response.headers["cache-control"]
        )
    # the dashboards' Chart.js is collected under its hash too (it once named a missing source map)
    charts = list((var / "staticfiles" / "vendor").glob("chart-4.4.7.umd.min.*.js"))
    assert len(charts) == 1
    chart = browser.request("GET", f"/static/vendor/{charts[0].name}")
    assert chart.status_code == 200 and b"sourceMappingURL" not in chart.content
    # an unhashed name may change under the same URL: cached briefly, not for a year
    plain = browser.request("GET", "/static/studio/studio.css")
    assert plain.status_code == 200 and A_YEAR not in plain.headers["cache-control"]


def test_plain_http_is_sent_to_https(server):
    process, base_url, var = server
    response = httpx.get(base_url + "/accounts/login/", follow_redirects=False)
    assert response.status_code == 301
    assert response.headers["location"].startswith("https://127.0.0.1")


def test_sigterm_stops_the_server_cleanly(server):
    """What Ctrl-C in scripts/demo.sh and `systemctl stop` send: the workers finish and the master
    exits 0."""
    process, base_url, var = server
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=40) == 0
    log = (var / "web.log").read_text()
    assert "Shutting down: Master" in log
    assert "Traceback" not in log
    with pytest.raises(httpx.TransportError):
        httpx.get(base_url + "/accounts/login/", timeout=5)


def test_gunicorn_refuses_to_start_without_collected_static_files(tmp_path):
    env = _server_env(tmp_path, _free_port())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "studio/gunicorn_conf.py",
            "studio.wsgi:application",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert f"{tmp_path / 'staticfiles' / 'staticfiles.json'} is missing" in done.stderr
    assert "python manage.py collectstatic --noinput" in done.stderr

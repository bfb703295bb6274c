"""Issue 41 item 9: sign-in is throttled.

30 wrong admin passwords in 12 s were all answered and the right one still worked. Past
SIGN_IN_MAX_FAILURES failures for a username within the window, the sign-in page answers 429 without
checking the password; another username is not held up; a success clears the name's failures.
Through the sign-in page with the test client, as a browser posts it.
"""

from __future__ import annotations

import pytest

from studio.accounts.models import SignInFailure
from tests.personas import PASSWORD

pytestmark = pytest.mark.django_db


def _sign_in(client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password, "next": ""})


def test_wrong_passwords_lock_the_name_and_the_right_one_waits(client, personas, settings):
    from studio import settings as defaults

    assert settings.SIGN_IN_MAX_FAILURES == defaults.SIGN_IN_MAX_FAILURES == 5
    answers = [_sign_in(client, "ada", f"guess-{i}").status_code for i in range(30)]
    assert answers[:5] == [200] * 5 and set(answers[5:]) == {429}
    assert (
        SignInFailure.objects.filter(username="ada").count() == 5
    )  # refused attempts are not even checked
    locked = _sign_in(client, "ada", PASSWORD)
    page = locked.content.decode()
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    assert (
        "Too many failed sign-ins for the username &#x27;ada&#x27;: 5 in the last 15 minutes"
        in page
    )
    assert "Try again in 15 minute(s)" in page
    assert _sign_in(client, "ADA ", PASSWORD).status_code == 429  # the same name, spelled otherwise

    other = _sign_in(client, "olivia", PASSWORD)
    assert other.status_code == 302  # another name from the same address still signs in


def test_the_lock_ends_with_the_window_and_a_success_clears_the_failures(
    client, personas, settings
):
    from datetime import timedelta

    from django.utils import timezone

    for i in range(4):
        _sign_in(client, "rafael", f"guess-{i}")
    assert _sign_in(client, "rafael", PASSWORD).status_code == 302
    assert not SignInFailure.objects.filter(username="rafael").exists()

    client.logout()
    for i in range(5):
        _sign_in(client, "mei", f"guess-{i}")
    assert _sign_in(client, "mei", PASSWORD).status_code == 429
    SignInFailure.objects.update(
        at=timezone.now() - timedelta(seconds=settings.SIGN_IN_WINDOW_S + 1)
    )
    assert _sign_in(client, "mei", PASSWORD).status_code == 302


def test_production_cookies_are_secure_with_a_shorter_session():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(root),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
    }
    for line in (root / "examples" / "production.env").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            env[name] = value
    env["SECRET_KEY"] = "k" * 10 + "abcdefghij" * 5
    probe = (
        "from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_AGE)"
    )
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {probe}"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["True", "True", "28800"], done.stderr

"""Issue 50 findings 1 and 2: sign-in throttling that holds behind the documented proxy.

1. Behind the nginx of docs/deploy.md every visitor's socket address is 127.0.0.1: 20 wrong
   passwords under made-up names, then olivia's right password got 429. The client address now
   comes from ``TRUSTED_PROXY_HOPS`` trusted proxies' ``X-Forwarded-For`` (never from the header
   without the setting), and too many failures from one address delay its attempts instead of
   refusing them: only a name's own failures lock it.
2. The throttle counted the name as typed; Django signs in with its NFKC form, so look-alike names
   (``ｍｅｉ``, ``mｅi``, ``𝐦ei``) each got 5 more guesses at ``mei``. It counts Django's name now.

Through the sign-in page with the test client, as the proxy forwards a browser's post.
"""

from __future__ import annotations

import time

import pytest

from studio.accounts.models import SignInFailure
from tests.personas import PASSWORD

pytestmark = pytest.mark.django_db

PROXY = "127.0.0.1"


def _sign_in(client, username: str, password: str, *, forwarded_for: str | None = None):
    headers = {"REMOTE_ADDR": PROXY}
    if forwarded_for is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return client.post(
        "/accounts/login/",
        {"username": username, "password": password, "next": ""},
        **headers,
    )


def test_made_up_names_from_one_address_do_not_lock_out_a_real_account(client, personas, settings):
    settings.SIGN_IN_ADDRESS_DELAY_S = 0.3
    answers = [
        _sign_in(client, f"nobody-{i}", "guess", forwarded_for="203.0.113.9").status_code
        for i in range(25)
    ]
    assert set(answers) == {200}  # each made-up name is under its own limit
    started = time.monotonic()
    signed_in = _sign_in(client, "olivia", PASSWORD, forwarded_for="203.0.113.9")
    waited = time.monotonic() - started
    assert signed_in.status_code == 302 and "_auth_user_id" in client.session
    assert waited >= 0.3  # the address's failures cost a delay, not a wall


def test_the_address_comes_from_the_trusted_hops_only(client, personas, settings):
    settings.SIGN_IN_ADDRESS_DELAY_S = 0.3
    assert settings.TRUSTED_PROXY_HOPS == 0  # the default: no header is believed
    _sign_in(client, "nobody", "guess", forwarded_for="198.51.100.1")
    assert SignInFailure.objects.get().address == PROXY

    settings.TRUSTED_PROXY_HOPS = 1
    SignInFailure.objects.all().delete()
    # nginx appends the address it received from; a forged first entry is not believed
    _sign_in(client, "nobody", "guess", forwarded_for="10.9.9.9, 203.0.113.9")
    assert SignInFailure.objects.get().address == "203.0.113.9"
    for i in range(4 * settings.SIGN_IN_MAX_FAILURES):
        _sign_in(client, f"nobody-{i}", "guess", forwarded_for=f"10.0.0.{i}, 203.0.113.9")

    started = time.monotonic()
    other = _sign_in(client, "mei", PASSWORD, forwarded_for="198.51.100.7")
    assert other.status_code == 302 and time.monotonic() - started < 0.3  # another visitor
    client.logout()
    started = time.monotonic()
    same = _sign_in(client, "rafael", PASSWORD, forwarded_for="203.0.113.9")
    assert same.status_code == 302 and time.monotonic() - started >= 0.3

    # a request that did not pass the trusted proxy (no header) is counted under its socket address
    client.logout()
    SignInFailure.objects.all().delete()
    _sign_in(client, "nobody", "guess")
    assert SignInFailure.objects.get().address == PROXY


def test_a_real_accounts_own_failures_still_lock_it(client, personas, settings):
    settings.TRUSTED_PROXY_HOPS = 1
    for i in range(5):
        _sign_in(client, "olivia", f"guess-{i}", forwarded_for=f"203.0.113.{i}")
    locked = _sign_in(client, "olivia", PASSWORD, forwarded_for="198.51.100.7")
    assert locked.status_code == 429 and "_auth_user_id" not in client.session


@pytest.mark.parametrize("look_alike", ["ｍｅｉ", "mｅi", "𝐦ei", " MEI "])
def test_look_alike_names_count_against_the_name_django_signs_in(client, personas, look_alike):
    for i in range(5):
        _sign_in(client, "mei", f"guess-{i}")
    refused = _sign_in(client, look_alike, f"guess-{look_alike}")
    assert refused.status_code == 429
    right = _sign_in(client, look_alike, PASSWORD)
    assert right.status_code == 429 and "_auth_user_id" not in client.session
    assert SignInFailure.objects.filter(username="mei").count() == 5


def test_failures_under_a_look_alike_lock_the_real_name(client, personas):
    for i in range(5):
        assert _sign_in(client, ["ｍｅｉ", "mｅi", "𝐦ei"][i % 3], f"guess-{i}").status_code == 200
    assert _sign_in(client, "mei", PASSWORD).status_code == 429


def test_the_defaults_read_no_header_and_the_production_example_names_its_proxy():
    from pathlib import Path

    from studio import settings as defaults

    assert defaults.TRUSTED_PROXY_HOPS == 0 and defaults.SIGN_IN_ADDRESS_DELAY_S == 2.0
    example = Path(__file__).resolve().parents[2] / "examples" / "production.env"
    lines = example.read_text().splitlines()
    assert "TRUSTED_PROXY_HOPS=1" in lines and "SIGN_IN_ADDRESS_DELAY_S=2" in lines

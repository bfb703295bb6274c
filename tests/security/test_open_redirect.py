"""No view redirects off-site because of a `next` the request carries (issue 14, finding 5).

Every view that reads a redirect target from the request is posted each of the
usual open-redirect spellings; the answer must stay on this site.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.test import Client

from tests.personas import PASSWORD

pytestmark = pytest.mark.django_db

OFF_SITE = [
    "https://example.com/x",
    "http://example.com",
    "//example.com",
    "/\\example.com",
    "\\\\example.com",
    "https:example.com",
    "javascript:alert(1)",
    " https://example.com/x",
]


def _assert_on_site(response, expected_path: str | None = None):
    assert response.status_code == 302
    location = response["Location"]
    parts = urlsplit(location)
    assert not parts.scheme and not parts.netloc, location
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location
    if expected_path is not None:
        assert parts.path == expected_path


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("target", OFF_SITE)
def test_a_label_move_never_redirects_off_site(personas, demo_version, target):
    response = _client(personas.reviewer).post(
        "/h/livestream-avatar/labels/move/",
        {"label": "staging", "version": demo_version.number, "reason": "qa", "next": target},
    )
    _assert_on_site(response, "/h/livestream-avatar/")
    assert (
        demo_version.harness.labels.get(name="staging").version == demo_version
    )  # the move itself happened


def test_a_label_move_keeps_an_on_site_next(personas, demo_version):
    response = _client(personas.reviewer).post(
        "/h/livestream-avatar/labels/move/",
        {
            "label": "staging",
            "version": demo_version.number,
            "reason": "qa",
            "next": "/h/livestream-avatar/v/1/?x=1",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/h/livestream-avatar/v/1/?x=1"


@pytest.mark.parametrize("target", OFF_SITE)
def test_signing_in_never_redirects_off_site(personas, target):
    response = Client().post(
        "/accounts/login/", {"username": "olivia", "password": PASSWORD, "next": target}
    )
    _assert_on_site(response, "/")


@pytest.mark.parametrize("target", OFF_SITE)
def test_signing_out_never_redirects_off_site(personas, target):
    response = _client(personas.operator).post("/accounts/logout/", {"next": target})
    _assert_on_site(response, "/accounts/login/")

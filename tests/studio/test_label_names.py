"""Label names are ASCII slugs, like the URLs that name them (a 'café' label would break its
page)."""

import pytest
from studio_testing import client_for

from studio.harnesses.models import Label

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["café", "ｓｔａｇｉｎｇ", "a b", "x" * 41])
def test_a_label_name_outside_the_url_slug_is_refused(personas, demo_version, name):
    client = client_for(personas.operator)
    page = client.post(
        "/h/livestream-avatar/labels/move/",
        {"label": name, "version": demo_version.number, "reason": "try"},
        follow=True,
    )
    assert page.status_code == 200
    assert "label: use 1-40 of a-z, 0-9, &#x27;-&#x27; or &#x27;_&#x27;" in page.content.decode()
    assert not Label.objects.exclude(name="production").exists()
    assert client.get("/h/livestream-avatar/").status_code == 200


def test_a_slug_label_is_moved(personas, demo_version):
    client_for(personas.operator).post(
        "/h/livestream-avatar/labels/move/",
        {"label": "Canary-EU", "version": demo_version.number, "reason": ""},
    )
    assert Label.objects.get(name="canary-eu").version == demo_version


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("2x", "version: expected a whole number, got &#x27;2x&#x27;"),
        ("", "version: expected a whole number, got nothing"),
    ],
)
def test_a_version_that_is_no_number_is_named_and_nothing_moves(
    personas, demo_version, version, message
):
    page = client_for(personas.operator).post(
        "/h/livestream-avatar/labels/move/",
        {"label": "staging", "version": version, "reason": ""},
        follow=True,
    )
    assert message in page.content.decode()
    assert not Label.objects.exclude(name="production").exists()

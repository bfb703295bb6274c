"""manage.py seed_demo: the local demo's roles, users, Harness and endpoint; safe to run twice."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group
from django.core.management import call_command

from studio.endpoints.models import ModelEndpoint
from studio.harnesses.models import Harness, HarnessVersion, Label

pytestmark = pytest.mark.django_db


def test_seed_demo_twice_gives_one_harness_version_label_and_endpoint(fast_passwords):
    first, second = StringIO(), StringIO()
    call_command("seed_demo", stdout=first)
    call_command("seed_demo", stdout=second)
    assert set(Group.objects.values_list("name", flat=True)) >= {
        "operator",
        "reviewer",
        "ml_engineer",
        "admin",
    }
    assert Harness.objects.count() == 1 and HarnessVersion.objects.count() == 1
    production = Label.objects.get(name="production")
    assert production.version.number == 1 and production.moves.count() == 1
    assert ModelEndpoint.objects.filter(name="local-default", route="local").count() == 1
    assert "v1 imported" in first.getvalue() and "already present" in second.getvalue()
    for username, password in [
        ("olivia", "olivia-operator"),
        ("rafael", "rafael-reviewer"),
        ("mei", "mei-ml-engineer"),
        ("admin", "admin-harness"),
    ]:
        assert f"{username:<8} password {password}" in second.getvalue()
        assert authenticate(username=username, password=password) is not None
    assert authenticate(username="olivia", password="x") is None


def test_the_demo_serves_the_shipped_adapter_by_default_and_the_base_stays_one_choice_away(
    fast_passwords, client
):
    from django.conf import settings

    from studio.endpoints.selectors import endpoint_default

    out = StringIO()
    call_command("seed_demo", stdout=out)
    adapter = ModelEndpoint.objects.get(name="demo-adapter")
    assert adapter.route == "local" and adapter.model == str(
        settings.BASE_DIR / "models" / "demo-adapter"
    )
    assert adapter.policy_spec == f"local:{adapter.model}"
    assert "demo-adapter (" in out.getvalue() and "chosen by default" in out.getvalue()
    assert endpoint_default() == adapter
    client.login(username="mei", password="mei-ml-engineer")
    page = client.get("/playground/").content.decode()
    assert f'<option value="{adapter.pk}" selected>demo-adapter</option>' in page
    assert ">local-default</option>" in page  # the untrained base, for comparison
    # a moved checkout: seeding again points the endpoint at this checkout's adapter
    ModelEndpoint.objects.filter(pk=adapter.pk).update(model="/elsewhere/models/demo-adapter")
    call_command("seed_demo", stdout=StringIO())
    adapter.refresh_from_db()
    assert adapter.model == str(settings.BASE_DIR / "models" / "demo-adapter")

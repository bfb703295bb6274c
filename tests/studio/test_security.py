"""CSRF on every form; harness content is inert text in every page."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from studio_testing import client_for

from studio.harnesses.services import draft_create, draft_file_save

pytestmark = pytest.mark.django_db


def test_every_post_form_on_every_page_carries_a_csrf_token(personas, demo_version):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.admin, title="t"
    )
    client = client_for(personas.admin)
    pages = [
        "/",
        "/import/",
        "/drafts/",
        "/h/livestream-avatar/",
        "/h/livestream-avatar/v/1/",
        f"/drafts/{draft.pk}/",
        f"/drafts/{draft.pk}/?path=hooks.yaml",
        f"/drafts/{draft.pk}/changes/",
        "/jobs/",
        "/endpoints/",
        "/endpoints/new/",
        "/playground/",
        "/accounts/tokens/",
    ]
    forms_seen = 0
    for url in pages:
        page = client.get(url).content.decode()
        for form in re.findall(r"<form[^>]*method=\"post\"[^>]*>.*?</form>", page, flags=re.S):
            forms_seen += 1
            assert "csrfmiddlewaretoken" in form, f"{url}: {form[:200]}"
    assert forms_seen > 15


def test_a_post_without_the_csrf_token_is_refused(personas, demo_version):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="t"
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.operator)
    response = client.post(
        f"/drafts/{draft.pk}/save/", {"path": "tools.yaml", "text": "x", "revision": 1}
    )
    assert response.status_code == 403
    draft.refresh_from_db()
    assert draft.revision == 1


def test_a_script_in_a_skill_is_inert_on_the_version_page(personas, demo_version):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="t"
    )
    path = "skills/chillchat/SKILL.md"
    payload = "\n<script>document.title='owned'</script>\n<a href=\"javascript:alert(1)\">x</a>\n"
    draft_file_save(
        draft=draft,
        path=path,
        text=draft.files[path] + payload,
        base_revision=1,
        actor=personas.operator,
    )
    page = client_for(personas.operator).get(f"/drafts/{draft.pk}/?path={path}").content.decode()
    assert "<script>document.title" not in page and 'href="javascript:' not in page


@pytest.mark.parametrize(
    "path",
    [
        "/training/runs/{run}/metrics.json?points=" + "1" * 5000,
        "/training/runs/{run}/metrics.json?points=²",
        "/training/checkpoints/compare/?a=²&b=1",
        "/replay/compare/?a=²&b=1",
        "/replay/compare/?a="
        + "9" * 40
        + "&b=1",  # a is read first: no run id of the test database matters
        "/h/livestream-avatar/diff/?a=99999999999999999999&b=1",
        "/h/livestream-avatar/diff/?a=²&b=1",
    ],
)
def test_numbers_in_urls_that_no_integer_reader_takes_are_a_400(
    personas, demo_version, settings, tmp_path, path
):
    from studio.releases.testing import trained_checkpoint

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    run = trained_checkpoint(tmp_path / "runs" / "run-1")
    response = client_for(personas.operator).get(path.replace("{run}", str(run.pk)))
    assert response.status_code == 400

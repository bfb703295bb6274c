"""A draft can be tried before it is committed (issue 29, item 6): the editor links to the
playground with the draft, and the run uses the draft's files as they were when it started, not a
version's."""

from __future__ import annotations

import pytest
from studio_testing import client_for

from studio.harnesses.services import draft_create, draft_file_save
from studio.jobs.models import Job
from tests.studio.test_playground import scripted_endpoint  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db
SKILL = "skills/item_qa/SKILL.md"
REQUEST = (
    '{"id": "pg", "comments": ["x"], "room": {"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]}}'
)


def test_the_playground_runs_an_open_draft_as_it_was_when_started(
    personas,
    demo_version,
    scripted_endpoint,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    draft = draft_create(
        harness=demo_version.harness,
        base_version=demo_version,
        owner=personas.operator,
        title="try a shorter rule",
    )
    edited = draft.files[SKILL].rstrip("\n") + "\n- Mention the shelf number once.\n"
    draft = draft_file_save(
        draft=draft, path=SKILL, text=edited, base_revision=draft.revision, actor=personas.operator
    ).draft
    operator = client_for(personas.operator)
    assert (
        f'href="/playground/?draft={draft.pk}" id="try-draft"'
        in operator.get(f"/drafts/{draft.pk}/").content.decode()
    )
    page = operator.get(f"/playground/?draft={draft.pk}").content.decode()
    assert (
        'id="playground-draft"' in page and f"draft #{draft.pk}" in page and "not committed" in page
    )

    with django_capture_on_commit_callbacks(execute=True):
        operator.post(
            "/playground/",
            {
                "draft": draft.pk,
                "version": "",
                "endpoint": scripted_endpoint.pk,
                "comment": "How much is product #3?",
                "request_json": REQUEST,
            },
        )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    assert job.params["files"][SKILL] == edited and job.params["draft_id"] == draft.pk
    assert job.title.startswith(
        f"Playground: draft #{draft.pk} (revision {draft.revision}, from livestream-avatar v1)"
    )
    assert job.result["version"].startswith(f"draft #{draft.pk}")


def test_a_draft_that_is_not_open_is_refused_naming_the_field(
    personas,
    demo_version,
    scripted_endpoint,  # noqa: F811 (the fixture, imported above)
):
    page = (
        client_for(personas.operator)
        .post(
            "/playground/",
            {"draft": "999999", "endpoint": scripted_endpoint.pk, "request_json": REQUEST},
        )
        .content.decode()
    )
    assert "draft: &#x27;999999&#x27; is not an open draft" in page
    assert not Job.objects.exists()

"""What a release's decision says (issue 29, item 8): the business gate of a version with no parent
is judged against the production version, a release of a version that is not production says so, and
a refused approval speaks of approving a release, not of promoting a Harness."""

from __future__ import annotations

import pytest
from studio_testing import client_for, edit_skill_rule

from studio.harnesses.models import Label
from studio.harnesses.services import harness_version_create
from studio.releases.models import Release
from studio.releases.testing import trained_checkpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkpoint(settings, tmp_path):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    return trained_checkpoint(tmp_path / "runs" / "run-ckpt")


def _draft(personas, checkpoint, version) -> Release:
    client_for(personas.ml_engineer).post(
        "/releases/new/",
        {
            "checkpoint": str(checkpoint.final_dir),
            "draft_head": "",
            "notes": "",
            "action": "draft",
            "harness_version": f"{version.harness.name}@v{version.number}",
        },
    )
    return Release.objects.order_by("-pk").first()


def _business(release: Release) -> dict:
    return {g["name"]: g for g in release.gates}["business regression"]


def test_a_first_version_is_judged_against_production_and_a_release_of_another_version_says_so(
    personas, demo_version, demo_files, checkpoint
):
    v2 = harness_version_create(
        harness=demo_version.harness,
        files=edit_skill_rule(demo_files),
        author=personas.operator,
        message="v2",
        parent=demo_version,
    )
    gate = _business(_draft(personas, checkpoint, demo_version))  # nothing in production yet
    assert gate["status"] == "pass" and "no version is in production yet" in gate["detail"]

    Label.objects.create(harness=demo_version.harness, name=Label.PRODUCTION, version=v2)
    gate = _business(_draft(personas, checkpoint, demo_version))
    assert gate["status"] == "no data"
    assert gate["detail"].startswith(
        "v1 has no parent, so it is judged against the production version (v2)"
    )
    assert _business(_draft(personas, checkpoint, v2)) == {
        **gate,
        "status": "pass",
        "detail": (
            "v2 is the production version: its replies are what "
            "production gives now, so it cannot regress against it"
        ),
    }

    Label.objects.filter(name=Label.PRODUCTION).update(version=demo_version)
    v3 = harness_version_create(
        harness=demo_version.harness,
        files=edit_skill_rule(edit_skill_rule(demo_files), marker="Always"),
        author=personas.operator,
        message="v3",
        parent=v2,
    )
    gate = _business(_draft(personas, checkpoint, v3))
    assert gate["detail"] == (
        "v3 has not been evaluated against its parent in an evolution stage; note that "
        "production is v1, not v3"
    )


def test_a_refused_approval_speaks_of_approving_the_release(personas, demo_version, checkpoint):
    release = _draft(personas, checkpoint, demo_version)
    page = (
        client_for(personas.reviewer)
        .post(
            f"/releases/{release.pk}/decide/",
            {"decision": "approve", "reason": "looks fine", "override_reason": ""},
        )
        .content.decode()
    )
    assert (
        "Approving a release needs every gate to pass; "
        "to approve it anyway, a reviewer must write why" in page
    )
    assert "Promotion to production" not in page
    # issue 38 item 10: the refusal starts with what was refused, not with the form field's name
    assert (
        '<li data-field="override_reason">release gates did not pass: ' in page
        and "override_reason:" not in page
    )
    assert Release.objects.get(pk=release.pk).status == Release.DRAFT

"""Versions are immutable and content-addressed; labels move with history; all of it audited."""

import io
import zipfile

import pytest
from django.core.exceptions import PermissionDenied
from studio_testing import client_for, edit_skill_rule

from studio.audit.models import AuditEvent
from studio.harnesses.bundles import BundleArchiveError, files_from_zip, files_to_zip
from studio.harnesses.models import HarnessVersion, Label, LabelMove
from studio.harnesses.selectors import version_files
from studio.harnesses.services import (
    DuplicateVersion,
    InvalidBundle,
    StudioError,
    harness_import,
    harness_version_create,
    label_move,
    label_rollback,
)

pytestmark = pytest.mark.django_db


def test_import_creates_harness_and_identical_content_is_recognised(personas, demo_files):
    first = harness_import(files=demo_files, author=personas.operator, message="first")
    again = harness_import(files=demo_files, author=personas.operator, message="again")
    assert first.created and first.harness_created
    assert not again.created and again.version.pk == first.version.pk
    assert first.version.number == 1 and len(first.version.digest) == 64
    assert version_files(version=first.version) == demo_files


def test_versions_are_immutable(demo_version):
    demo_version.message = "rewritten history"
    with pytest.raises(ValueError, match="immutable"):
        demo_version.save()


def test_new_version_numbers_parent_and_shared_blobs(personas, demo_version, demo_files):
    changed = edit_skill_rule(demo_files)
    v2 = harness_version_create(
        harness=demo_version.harness,
        files=changed,
        author=personas.operator,
        message="rule",
        parent=demo_version,
    )
    assert (v2.number, v2.parent, v2.author) == (2, demo_version, personas.operator)
    differing = [p for p in v2.tree if v2.tree[p] != demo_version.tree[p]]
    assert differing == ["skills/item_qa/SKILL.md"]
    with pytest.raises(DuplicateVersion, match="identical to livestream-avatar v2"):
        harness_version_create(
            harness=demo_version.harness,
            files=changed,
            author=personas.operator,
            message="again",
            parent=v2,
        )


def test_invalid_files_never_become_a_version(personas, demo_version, demo_files):
    broken = dict(demo_files)
    broken["skills/item_qa/SKILL.md"] = broken["skills/item_qa/SKILL.md"].replace(
        "kind: reply", "kind: sometimes"
    )
    with pytest.raises(InvalidBundle) as caught:
        harness_version_create(
            harness=demo_version.harness,
            files=broken,
            author=personas.operator,
            message="x",
            parent=demo_version,
        )
    assert any(p.file == "skills/item_qa/SKILL.md" and p.line > 1 for p in caught.value.problems)
    assert HarnessVersion.objects.count() == 1


def test_production_needs_a_reviewer_and_a_reason(personas, demo_version):
    harness = demo_version.harness
    with pytest.raises(PermissionDenied, match="reviewer"):
        label_move(
            harness=harness,
            name="production",
            version=demo_version,
            actor=personas.operator,
            reason="ship it",
        )
    with pytest.raises(StudioError, match="reason: say why"):
        label_move(
            harness=harness,
            name="production",
            version=demo_version,
            actor=personas.reviewer,
            reason="  ",
        )
    label = label_move(
        harness=harness,
        name="production",
        version=demo_version,
        actor=personas.reviewer,
        reason="QA passed",
    )
    move = LabelMove.objects.get(label=label)
    assert (move.kind, move.moved_by, move.reason) == ("promote", personas.reviewer, "QA passed")
    # operators may move staging
    label_move(
        harness=harness, name="staging", version=demo_version, actor=personas.operator, reason=""
    )


def test_rollback_moves_the_label_back_and_records_it(personas, demo_version, demo_files):
    harness = demo_version.harness
    v2 = harness_version_create(
        harness=harness,
        files=edit_skill_rule(demo_files),
        author=personas.operator,
        message="rule",
        parent=demo_version,
    )
    label_move(
        harness=harness,
        name="production",
        version=demo_version,
        actor=personas.reviewer,
        reason="v1",
    )
    label_move(
        harness=harness, name="production", version=v2, actor=personas.reviewer, reason="v2 better"
    )
    label = label_rollback(
        label=Label.objects.get(name="production"), actor=personas.reviewer, reason="v2 regressed"
    )
    assert label.version == demo_version
    kinds = list(label.moves.values_list("kind", flat=True))
    assert kinds == ["rollback", "promote", "promote"]
    actions = set(AuditEvent.objects.filter(harness=harness).values_list("action", flat=True))
    assert {"version.create", "label.promote", "label.rollback"} <= actions


def test_zip_export_then_import_round_trips_to_the_same_digest(personas, demo_version):
    client = client_for(personas.reviewer)
    response = client.get(f"/h/livestream-avatar/v/{demo_version.number}/export.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    assert "livestream-avatar/manifest.yaml" in names
    files = files_from_zip(response.content, max_bytes=10**7)
    assert (
        harness_import(files=files, author=personas.operator, message="re-import").version
        == demo_version
    )


def test_zip_import_through_the_page_shows_every_problem(personas, demo_files):
    broken = dict(demo_files)
    broken["tools.yaml"] = "tools: [\n"
    data = files_to_zip(broken, folder="bundle")
    client = client_for(personas.operator)
    response = client.post(
        "/import/", {"bundle": io.BytesIO(data), "message": "broken"}, format="multipart"
    )
    assert response.status_code == 400
    assert b"tools.yaml" in response.content
    assert HarnessVersion.objects.count() == 0


def test_zip_with_path_traversal_or_binary_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../evil.yaml", "x")
    with pytest.raises(BundleArchiveError, match="must be relative"):
        files_from_zip(buffer.getvalue(), max_bytes=1000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.yaml", b"\xff\xfe\x00")
    with pytest.raises(BundleArchiveError, match="manifest.yaml: not UTF-8"):
        files_from_zip(buffer.getvalue(), max_bytes=1000)
    with pytest.raises(BundleArchiveError, match="not a .zip"):
        files_from_zip(b"hello", max_bytes=1000)


def test_home_lists_harnesses_with_their_labels(personas, demo_version):
    label_move(
        harness=demo_version.harness,
        name="production",
        version=demo_version,
        actor=personas.reviewer,
        reason="go",
    )
    page = client_for(personas.ml_engineer).get("/").content.decode()
    assert "livestream-avatar" in page and "production → v1" in page


def test_custom_labels_and_label_name_rules(personas, demo_version):
    client = client_for(personas.operator)
    client.post(
        "/h/livestream-avatar/labels/move/", {"label": "canary-eu", "version": 1, "reason": ""}
    )
    assert Label.objects.get(name="canary-eu").version == demo_version
    page = client.post(
        "/h/livestream-avatar/labels/move/",
        {"label": "Not A Label!", "version": 1, "reason": ""},
        follow=True,
    ).content.decode()
    assert "label: use 1-40 of a-z, 0-9" in page
    assert not Label.objects.filter(name__icontains="not").exists()


def test_the_harness_page_lists_versions_newest_first_fifty_per_page(
    personas, demo_version, demo_files
):
    files, parent = demo_files, demo_version
    for n in range(2, 53):
        files = edit_skill_rule(files, marker=f"Rule {n}:")
        parent = harness_version_create(
            harness=demo_version.harness,
            files=files,
            author=personas.operator,
            message=f"m{n}",
            parent=parent,
        )
    client = client_for(personas.reviewer)
    first = client.get("/h/livestream-avatar/").content.decode()
    assert "52 in all" in first and "page 1 of 2" in first
    assert first.index(">v52<") < first.index(">v51<") and ">v2<" not in first
    second = client.get("/h/livestream-avatar/?page=2").content.decode()
    assert ">v2<" in second and ">v1<" in second and ">v52<" not in second

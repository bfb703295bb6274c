"""Issue 41 item 6: a signature vouches for a decision, made once when the reviewer decides.

The manifest was signed anew from the database on every download, so a row set to ``approved`` in
the database alone (no decider, no audit event) downloaded as a validly signed manifest, and a
missing key file was silently replaced by a new key, breaking every earlier signature. Through the
studio's decide and download views, and the GPU host's ``sglang-command --release`` as a subprocess.
"""

from __future__ import annotations

import json

import pytest

from serving.release import key_id
from studio.audit.models import AuditEvent
from studio.releases.models import Release
from tests.security import test_release_integrity as integrity
from tests.security.test_release_integrity import _approve, _download, _draft, _launch
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db
checkpoint = integrity.checkpoint  # the fixture: a finished SFT run holding the tiny model


@pytest.fixture(autouse=True)
def own_key(settings, tmp_path):
    settings.RELEASE_SIGNING_KEY = tmp_path / "keys" / "release-signing-key.pem"
    return settings.RELEASE_SIGNING_KEY


def test_an_approval_in_the_database_alone_downloads_unsigned_and_does_not_launch(
    personas, demo_version, checkpoint, tmp_path
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    release = Release.objects.get()
    Release.objects.filter(pk=release.pk).update(
        status=Release.APPROVED
    )  # no decider, no audit event
    manifest, key = _download(personas, release, tmp_path)
    assert "signature" not in json.loads(manifest.read_text())
    done = _launch(manifest, key)
    assert done.returncode == 2 and "signature: missing" in done.stderr, done.stderr


def test_the_decision_signs_once_and_downloads_serve_those_bytes(
    personas, demo_version, checkpoint, tmp_path
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    release = Release.objects.get()
    _approve(personas, release)
    first, key = _download(personas, release, tmp_path)
    signed = json.loads(first.read_text())
    event = AuditEvent.objects.get(action="release.approve")
    assert event.data["key_id"] == signed["signature"]["key_id"]
    from studio.releases.signing import release_signing_key

    assert event.data["key_id"] == key_id(release_signing_key().public_key())
    # the row changes after the decision: the download is still what was signed, and still launches
    Release.objects.filter(pk=release.pk).update(
        notes="edited after approval", decision_reason="something else"
    )
    again = client_for(personas.operator).get(f"/releases/{release.pk}/manifest.json").content
    assert json.loads(again) == signed
    assert _launch(first, key).returncode == 0


def test_a_missing_key_after_signing_is_an_error_never_a_new_key(
    personas, demo_version, checkpoint, own_key, settings
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    _approve(personas, Release.objects.get())
    own_key.unlink()
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    second = Release.objects.filter(status=Release.DRAFT).get()
    refused = client_for(personas.reviewer).post(
        f"/releases/{second.pk}/decide/",
        {
            "decision": "approve",
            "reason": "gated by hand",
            "override_reason": "no runs in this test",
        },
    )
    page = refused.content.decode()
    assert refused.status_code == 400
    assert (
        "does not exist, but 1 release(s) were signed with a key" in page
        and "restore the key file" in page
    )
    assert not own_key.exists()
    assert Release.objects.get(pk=second.pk).status == Release.DRAFT
    public = client_for(personas.operator).get("/releases/signing-key.pem")
    assert public.status_code == 503 and b"RELEASE_SIGNING_KEY" in public.content


def test_in_production_a_missing_key_is_an_error_that_says_how_to_provide_one(settings, own_key):
    from django.core.exceptions import ImproperlyConfigured

    from studio.releases.signing import release_signing_key

    settings.PRODUCTION = True
    with pytest.raises(
        ImproperlyConfigured, match="does not exist; restore the key file from a backup"
    ):
        release_signing_key()
    assert not own_key.exists()


def test_releases_decided_before_the_change_are_signed_once_only_with_their_decision_on_record(
    personas, demo_version, checkpoint, tmp_path
):
    from django.core.management import call_command

    assert _draft(personas, demo_version, checkpoint).status_code == 302
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    recorded, forged = Release.objects.order_by("pk")
    _approve(personas, recorded)
    Release.objects.filter(pk=recorded.pk).update(
        signed_manifest=None
    )  # as decided before this change
    Release.objects.filter(pk=forged.pk).update(status=Release.APPROVED)  # the database alone
    import io

    out, err = io.StringIO(), io.StringIO()
    call_command("release_sign_decided", stdout=out, stderr=err)
    assert out.getvalue().strip() == f"signed 1 release(s): #{recorded.pk}"
    assert f"release #{forged.pk}: approved with no decider; left unsigned" in err.getvalue()
    manifest, key = _download(personas, recorded, tmp_path)
    assert _launch(manifest, key).returncode == 0
    forged_manifest, _ = _download(personas, forged, tmp_path)
    assert "signature: missing" in _launch(forged_manifest, key).stderr

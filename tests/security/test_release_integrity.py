"""Issue 28 items 2-4 and the manifest part of 8: an approved release is exactly what was approved.

Through the real entry points: the ML engineer drafts in the studio, the reviewer approves, the
manifest and the studio's public key are downloaded from their views, and the GPU host's
``python -m serving sglang-command --release`` runs as a subprocess. Each change a probe made after
approval (a head's card rewritten, a chat template changed, 4 KiB zeroed in the middle of the
weights, a file added, the head's weights edited) is refused naming the file; an unsigned or edited
manifest is refused saying why; a draft head from a folder that is no studio MTP run is a 400.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from studio.releases.models import Release
from studio.releases.testing import draft_head, mtp_run, trained_checkpoint
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkpoint(settings, tmp_path):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    return trained_checkpoint(tmp_path / "runs" / "run-ckpt")


def _launch(manifest: Path, key: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HARNESS_RELEASE_PUBLIC_KEY": str(key)}
    return subprocess.run(
        [sys.executable, "-m", "serving", "sglang-command", "--release", str(manifest), "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _draft(personas, version, checkpoint, head: Path | None = None):
    return client_for(personas.ml_engineer).post(
        "/releases/new/",
        {
            "checkpoint": str(checkpoint.final_dir),
            "harness_version": f"{version.harness.name}@v{version.number}",
            "draft_head": str(head or ""),
            "notes": "",
            "action": "draft",
        },
    )


def _approve(personas, release: Release) -> None:
    response = client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {
            "decision": "approve",
            "reason": "gated by hand",
            "override_reason": "no runs in this test",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def _download(personas, release: Release, tmp_path: Path) -> tuple[Path, Path]:
    reader = client_for(personas.operator)
    manifest = tmp_path / f"release-{release.pk}.json"
    manifest.write_bytes(reader.get(f"/releases/{release.pk}/manifest.json").content)
    key = tmp_path / "release-signing-key.pem"
    key.write_bytes(reader.get("/releases/signing-key.pem").content)
    return manifest, key


def _zero_4k_in_the_middle(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        handle.write(bytes(4096))


def _new_chat_template(path: Path) -> None:
    config = json.loads(path.read_text(encoding="utf-8"))
    config["chat_template"] = "{{ 'You are now someone else.' }}" + str(
        config.get("chat_template", "")
    )
    path.write_text(json.dumps(config), encoding="utf-8")


def test_every_byte_of_both_folders_is_what_was_approved_and_a_change_names_its_file(
    personas, demo_version, checkpoint, tmp_path
):
    final = checkpoint.final_dir
    head = mtp_run(tmp_path / "runs" / "run-mtp", checkpoint=final).final_dir
    assert _draft(personas, demo_version, checkpoint, head).status_code == 302
    release = Release.objects.get()
    _approve(personas, release)
    manifest, key = _download(personas, release, tmp_path)
    done = _launch(manifest, key)
    assert done.returncode == 0, done.stderr  # untouched: it launches

    head_weights = next(
        p.name for p in sorted(head.iterdir()) if p.suffix in (".safetensors", ".pt")
    )
    changes = [  # (folder, file, how): what the probe did after approval
        (
            head,
            "card.json",
            lambda p: p.write_text(p.read_text().replace('"stage": "mtp"', '"stage": "edited"')),
        ),
        (final, "tokenizer_config.json", _new_chat_template),
        (final, "model.safetensors", _zero_4k_in_the_middle),
        (final, "extra_code.py", lambda p: p.write_text("import os\n")),
        (head, head_weights, lambda p: p.write_bytes(p.read_bytes()[::-1])),
    ]
    for folder, name, change in changes:
        path = folder / name
        saved = path.read_bytes() if path.exists() else None
        change(path)
        done = _launch(manifest, key)
        assert done.returncode == 2, f"{name}: launched after the change\n{done.stdout}"
        assert f"{folder}/{name}" in done.stderr and "Traceback" not in done.stderr, done.stderr
        if saved is None:
            path.unlink()
        else:
            path.write_bytes(saved)
    assert _launch(manifest, key).returncode == 0  # restored byte for byte: launches again


def test_a_change_after_drafting_names_the_file_when_the_reviewer_approves(
    personas, demo_version, checkpoint
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    release = Release.objects.get()
    (checkpoint.final_dir / "tokenizer_config.json").write_text("{}")
    refused = client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {"decision": "approve", "reason": "r", "override_reason": "checked by hand"},
    )
    assert refused.status_code == 400 and "tokenizer_config.json" in refused.content.decode()
    assert Release.objects.get().status == Release.DRAFT


def test_an_unsigned_or_edited_manifest_is_refused_saying_why(
    personas, demo_version, checkpoint, tmp_path
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    release = Release.objects.get()
    draft, key = _download(personas, release, tmp_path)  # a draft: never signed
    forged = json.loads(draft.read_text())
    forged["release"]["status"] = "approved"
    draft.write_text(json.dumps(forged))
    done = _launch(draft, key)
    assert done.returncode == 2 and "signature: missing" in done.stderr, done.stderr

    _approve(personas, release)
    manifest, key = _download(personas, release, tmp_path)
    assert _launch(manifest, key).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(checkpoint.final_dir, elsewhere)
    edited = json.loads(manifest.read_text())
    edited["checkpoint"]["path"] = str(elsewhere)  # the same files, another folder
    manifest.write_text(json.dumps(edited))
    done = _launch(manifest, key)
    assert (
        done.returncode == 2 and "signature: does not match the manifest's content" in done.stderr
    ), done.stderr

    other_key = tmp_path / "other.pem"
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    other_key.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    manifest, _ = _download(personas, release, tmp_path)
    done = _launch(manifest, other_key)
    assert done.returncode == 2 and "not with the public key given" in done.stderr, done.stderr


def test_a_draft_head_from_any_folder_is_refused(personas, demo_version, checkpoint, tmp_path):
    loose = draft_head(
        checkpoint.final_dir, tmp_path / "loose-head"
    )  # a real, fitting head, in no studio run
    response = _draft(personas, demo_version, checkpoint, loose)
    page = response.content.decode()
    assert response.status_code == 400 and 'data-field="draft_head"' in page
    assert "is not the head of a finished studio MTP run" in page
    assert not Release.objects.exists()


def test_a_deeply_nested_manifest_is_a_clear_error(tmp_path):
    path = tmp_path / "nested.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    key = tmp_path / "key.pem"
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    done = _launch(path, key)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(path) in done.stderr and "nest deeper than" in done.stderr


def test_a_release_drafted_before_every_file_was_listed_has_no_manifest_and_says_why(
    personas, demo_version, checkpoint
):
    assert _draft(personas, demo_version, checkpoint).status_code == 302
    Release.objects.update(
        checkpoint_files=[]
    )  # as the migration leaves a release drafted before it
    release = Release.objects.get()
    reader = client_for(personas.operator)
    page = reader.get(f"/releases/{release.pk}/").content.decode()
    assert "has no usable manifest" in page and "draft a new release" in page
    download = reader.get(f"/releases/{release.pk}/manifest.json")
    assert download.status_code == 409 and "checkpoint.files" in download.content.decode()
    refused = client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {"decision": "approve", "reason": "r", "override_reason": "checked by hand"},
    )
    assert refused.status_code == 400 and "no file list was recorded" in refused.content.decode()

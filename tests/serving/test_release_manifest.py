"""`python -m serving sglang-command --release FILE`: the launch command of an approved release,
through the real command line. An unapproved manifest, a file of the checkpoint or head changed on
disk since approval, a broken or oversized file are refused with a message naming the field and a
non-zero exit, never a traceback. The manifests are signed with a key made here, as the studio signs
its own (tests/security/test_release_integrity.py goes through the studio)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import torch

from harness.model_cache import tiny_model_dir
from serving.engine.draft_head import DraftHead
from serving.engine.policy import load_model
from serving.release import (
    FORMAT,
    MAX_MANIFEST_BYTES,
    ReleaseManifestError,
    folder_entry,
    folder_fingerprint,
    manifest_text,
    read_manifest,
    sign_manifest,
    write_manifest,
)
from tests import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory):
    """A checkpoint (the tiny model) and an eagle draft head adapted to it."""
    base = tmp_path_factory.mktemp("release")
    checkpoint = base / "policy"
    shutil.copytree(tiny_model_dir(), checkpoint)
    model, _ = load_model(checkpoint)
    torch.manual_seed(0)
    card = {
        "stage": "mtp",
        "policy": str(checkpoint),
        "policy_fingerprint": folder_fingerprint(checkpoint),
    }
    DraftHead.for_policy(model).save(base / "head", policy_config=model.config, card=card)
    return base


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    """(private key, public key file) standing for the studio's signing key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    private = Ed25519PrivateKey.generate()
    public = tmp_path_factory.mktemp("key") / "release-signing-key.pem"
    public.write_bytes(
        private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


def _manifest(base: Path, *, status: str = "approved", head: bool = True, key=None) -> dict:
    checkpoint, draft = base / "policy", base / "head"
    manifest = {
        "format": FORMAT,
        "release": {
            "id": 7,
            "status": status,
            "drafted_by": "mei",
            "drafted_at": "2026-12-02T06:00:00+00:00",
            "decided_by": "rafael" if status != "draft" else None,
            "decided_at": None,
            "reason": "ok",
            "override_reason": "",
        },
        "checkpoint": {**folder_entry(checkpoint), "run_id": 4},
        "draft_head": {
            **folder_entry(draft),
            "card": json.loads((draft / "card.json").read_text()),
            "token_map": None,
        }
        if head
        else None,
        "harness": {"name": "livestream-avatar", "number": 2, "digest": "a" * 64},
        "gates": [
            {
                "name": "latency",
                "status": "pass",
                "detail": "worst level C=2: wall P95 3.10 s",
                "run_id": 9,
            }
        ],
    }
    return sign_manifest(manifest, key[0]) if key else manifest


def _cli(*args: str, key=None, subprocess: bool = False) -> CompletedProcess:
    """``python -m serving sglang-command ARGS`` (its main in process; ``subprocess=True``: a real
    one)."""
    if key is not None:
        args = (*args, "--release-key", str(key[1]))
    return (cli.run if subprocess else cli.call)("serving", "sglang-command", *args)


def test_an_approved_manifest_gives_the_launch_command_with_its_model_and_draft_head(
    release_dir, tmp_path, key
):
    path = write_manifest(tmp_path / "release-7.json", _manifest(release_dir, key=key))
    done = _cli(
        "--release", str(path), "--json", key=key, subprocess=True
    )  # exit code and output as a GPU host sees them
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)
    assert argv[argv.index("--model-path") + 1] == str(release_dir / "policy")
    assert argv[argv.index("--speculative-draft-model-path") + 1] == str(release_dir / "head")
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE"  # the head's layout picks it

    without_head = write_manifest(
        tmp_path / "no-head.json", _manifest(release_dir, head=False, key=key)
    )
    done = _cli("--release", str(without_head), "--json", key=key)
    assert done.returncode == 0, done.stderr
    assert "--speculative-draft-model-path" not in json.loads(done.stdout)


def test_an_unapproved_manifest_is_refused_and_the_key_is_required(release_dir, tmp_path, key):
    path = write_manifest(tmp_path / "draft.json", _manifest(release_dir, status="draft", key=key))
    done = _cli("--release", str(path), key=key)
    assert done.returncode == 2 and done.stdout == ""
    assert (
        "release.status: release #7 is draft, not approved" in done.stderr
        and "Traceback" not in done.stderr
    )
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_RELEASE_PUBLIC_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "serving", "sglang-command", "--release", str(path)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--release needs the studio's release public key" in done.stderr


def test_a_checkpoint_or_head_changed_since_approval_is_refused(release_dir, tmp_path, key):
    base = tmp_path / "copy"
    shutil.copytree(release_dir, base)
    path = write_manifest(tmp_path / "release.json", _manifest(base, key=key))
    (base / "policy" / "generation_config.json").write_text(
        '{"temperature": 0.2}'
    )  # retrained in place
    (base / "head" / "config.json").write_text((base / "head" / "config.json").read_text() + " ")
    done = _cli("--release", str(path), key=key)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"checkpoint.files: {base / 'policy'}/generation_config.json: size" in done.stderr
    assert f"draft_head.files: {base / 'head'}/config.json: size" in done.stderr
    assert f"checkpoint: {base / 'policy'} is not the folder that was approved" in done.stderr
    shutil.rmtree(base / "head")
    done = _cli("--release", str(path), key=key)
    assert f"draft_head.path: {base / 'head'} is not a folder on this host" in done.stderr


def test_broken_manifests_name_the_file_and_each_field(release_dir, tmp_path, key):
    broken = _manifest(release_dir)
    broken["checkpoint"]["fingerprint"] = "abc"
    broken["release"]["status"] = "shipped"
    del broken["harness"]["number"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    done = _cli("--release", str(path), key=key)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}: not a usable release manifest" in done.stderr
    for field in (
        "checkpoint.fingerprint: expected a sha256",
        "release.status: expected one of draft, approved",
        "harness.number: expected an integer",
    ):
        assert field in done.stderr
    (tmp_path / "not.json").write_text("{")
    assert "not valid JSON" in _cli("--release", str(tmp_path / "not.json"), key=key).stderr
    assert (
        "no such release manifest"
        in _cli("--release", str(tmp_path / "missing.json"), key=key).stderr
    )
    done = _cli("--release", str(path), "--model", "/models/other", key=key)
    assert (
        done.returncode == 2
        and "--release names the checkpoint and draft head; drop --model" in done.stderr
    )


def test_reading_is_bounded_and_writing_validates(release_dir, tmp_path):
    big = tmp_path / "big.json"
    big.write_text(" " * (MAX_MANIFEST_BYTES + 1))
    with pytest.raises(ReleaseManifestError, match="larger than 1 MiB"):
        read_manifest(big)
    with pytest.raises(ReleaseManifestError, match="format: expected 'harness-release/2'"):
        manifest_text({**_manifest(release_dir), "format": "v0"})
    good = write_manifest(tmp_path / "good.json", _manifest(release_dir))
    assert read_manifest(good) == _manifest(release_dir)


def test_a_release_approved_over_any_gate_status_the_studio_gives_is_a_valid_manifest(release_dir):
    """A reviewer may approve over a gate that said "not enough data" or "unreadable" (with a
    written override); the manifest's check knew only pass, fail and no data, so the launcher
    refused such a release as malformed. It now reads the statuses from evaluation.gates, where
    the gates are made."""
    from evaluation.gates import STATUSES
    from serving.release import manifest_problems

    for status in STATUSES:
        manifest = _manifest(release_dir)
        manifest["gates"][0]["status"] = status
        assert manifest_problems(manifest) == [], status
    manifest = _manifest(release_dir)
    manifest["gates"][0]["status"] = "maybe"
    assert manifest_problems(manifest) == [
        f"gates[0]: expected {{name, status ({', '.join(STATUSES)}), detail}}"
    ]

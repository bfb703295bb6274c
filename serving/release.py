"""The release manifest: which checkpoint, draft head and Harness version go to production, and why.

A manifest is one JSON file written by the studio (``studio.releases``) when a release is drafted
and decided, and read by ``python -m serving sglang-command --release FILE`` on the GPU host:

    {"format": "harness-release/2",
     "release": {"id": 3, "status": "approved", "drafted_by": "mei", "drafted_at": "...",
                 "decided_by": "rafael", "decided_at": "...", "reason": "...", "override_reason":
                 ""},
     "checkpoint": {"path": "/runs/run-4/sft/final", "fingerprint": "<sha256>", "run_id": 4,
                    "files": [{"name": "config.json", "size": 861, "sha256": "<sha256>"}, ...]},
     "draft_head": null | {"path": "/runs/run-5/mtp/final", "fingerprint": "<sha256>", "files":
     [...],
                           "card": {...}, "token_map": "hot_token_map.pt" | null},
     "harness": {"name": "livestream-avatar", "number": 2, "digest": "<sha256>"}, "gates": [{"name":
     "latency", "status": "pass", "detail": "...", "run_id": 7, "stage_id": null}, ...], "gates_at":
     "...", "signature": {"algorithm": "ed25519", "key_id": "<16 hex>", "value": "<base64>"}}

``files`` lists every file of the folder with its size and the sha256 of all its bytes
(``harness.checkpoints.folder_files``; ``fingerprint`` is the digest of that list), so the launcher
refuses any changed, added or removed file and names it. The studio signs a manifest when a reviewer
decides it (Ed25519 over ``signed_bytes``: the manifest without its signature, as canonical JSON);
the GPU host holds the studio's public key and the launcher refuses an unsigned manifest (a draft,
or one edited to say "approved") and one whose content changed after signing. Reading is bounded
in size and nesting, and every problem names its field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluation.gates import STATUSES as GATE_STATUSES  # the statuses the gates are made with
from harness.checkpoints import (
    MAX_FILES,
    CheckpointError,
    files_differences,
    files_fingerprint,
    fingerprint,
    folder_files,
)

FORMAT = "harness-release/2"
SIGNATURE_ALGORITHM = "ed25519"
PUBLIC_KEY_ENV = "HARNESS_RELEASE_PUBLIC_KEY"
MAX_MANIFEST_BYTES = 1 << 20  # a manifest is a few KB; a larger file is not one
STATUSES = ("draft", "approved", "rejected")


class ReleaseManifestError(ValueError):
    """A manifest that cannot be used; lists every problem, each naming its field."""

    def __init__(self, where: str, problems: list[str]):
        self.problems = problems
        super().__init__(
            f"{where}: not a usable release manifest:\n" + "\n".join(f"  - {p}" for p in problems)
        )


def _text(data: dict, key: str, where: str, problems: list[str], *, empty: bool = False) -> None:
    value = data.get(key)
    if not isinstance(value, str) or (not empty and not value):
        problems.append(
            f"{where}.{key}: expected {'a' if empty else 'a non-empty'} string, got {value!r:.60}"
        )


def _is_sha(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _sha(data: dict, key: str, where: str, problems: list[str]) -> None:
    value = data.get(key)
    if not _is_sha(value):
        problems.append(
            f"{where}.{key}: expected a sha256 hex digest (64 characters), got {value!r:.70}"
        )


def _files(entry: dict, where: str, problems: list[str]) -> None:
    """``files``: every file of the folder as {name, size, sha256}, matching the recorded
    fingerprint."""
    files = entry.get("files")
    if not isinstance(files, list) or not files or len(files) > MAX_FILES:
        problems.append(
            f"{where}.files: expected the list of the folder's files (1 to {MAX_FILES} of "
            "{name, size, sha256}); a manifest from before releases recorded every file is not "
            "launched: draft and approve a new release"
        )
        return
    for i, item in enumerate(files):
        if not (
            isinstance(item, dict)
            and isinstance(item.get("name"), str)
            and item["name"]
            and isinstance(item.get("size"), int)
            and not isinstance(item["size"], bool)
            and item["size"] >= 0
            and _is_sha(item.get("sha256"))
        ):
            problems.append(f"{where}.files[{i}]: expected {{name, size (bytes), sha256 (64 hex)}}")
            return
    if _is_sha(entry.get("fingerprint")) and files_fingerprint(files) != entry["fingerprint"]:
        problems.append(
            f"{where}.fingerprint: does not match {where}.files (the digest of the file list)"
        )


def manifest_problems(data: Any) -> list[str]:
    """Every problem of a manifest's content, each naming its field ('' list when it is valid)."""
    if not isinstance(data, dict):
        return [f"(top level): expected a JSON object, got {type(data).__name__}"]
    problems: list[str] = []
    if data.get("format") != FORMAT:
        problems.append(f"format: expected {FORMAT!r}, got {data.get('format')!r:.60}")
    release = data.get("release")
    if not isinstance(release, dict):
        problems.append("release: expected an object with id, status, drafted_by, ...")
    else:
        if not isinstance(release.get("id"), int):
            problems.append(f"release.id: expected an integer, got {release.get('id')!r:.60}")
        if release.get("status") not in STATUSES:
            problems.append(
                f"release.status: expected one of {', '.join(STATUSES)}, "
                f"got {release.get('status')!r:.60}"
            )
        for key in ("drafted_by", "drafted_at"):
            _text(release, key, "release", problems)
    checkpoint = data.get("checkpoint")
    if not isinstance(checkpoint, dict):
        problems.append("checkpoint: expected an object with path and fingerprint")
    else:
        _text(checkpoint, "path", "checkpoint", problems)
        _sha(checkpoint, "fingerprint", "checkpoint", problems)
        _files(checkpoint, "checkpoint", problems)
    head = data.get("draft_head")
    if head is not None and not isinstance(head, dict):
        problems.append("draft_head: expected null or an object with path, fingerprint and card")
    elif isinstance(head, dict):
        _text(head, "path", "draft_head", problems)
        _sha(head, "fingerprint", "draft_head", problems)
        _files(head, "draft_head", problems)
        if not isinstance(head.get("card"), dict):
            problems.append("draft_head.card: expected the head's card.json (an object)")
        if head.get("token_map") is not None and not isinstance(head.get("token_map"), str):
            problems.append(
                "draft_head.token_map: expected null or a file name in the head's folder"
            )
    harness = data.get("harness")
    if not isinstance(harness, dict):
        problems.append("harness: expected an object with name, number and digest")
    else:
        _text(harness, "name", "harness", problems)
        if not isinstance(harness.get("number"), int):
            problems.append(
                f"harness.number: expected an integer, got {harness.get('number')!r:.60}"
            )
        _sha(harness, "digest", "harness", problems)
    gates = data.get("gates")
    if not isinstance(gates, list):
        problems.append("gates: expected a list of {name, status, detail, run_id}")
    else:
        for i, gate in enumerate(gates):
            if (
                not isinstance(gate, dict)
                or gate.get("status") not in GATE_STATUSES
                or not isinstance(gate.get("name"), str)
            ):
                problems.append(
                    f"gates[{i}]: expected {{name, status ({', '.join(GATE_STATUSES)}), detail}}"
                )
    signature = data.get("signature")
    if signature is not None and not (
        isinstance(signature, dict)
        and signature.get("algorithm") == SIGNATURE_ALGORITHM
        and isinstance(signature.get("key_id"), str)
        and isinstance(signature.get("value"), str)
    ):
        problems.append(
            "signature: expected null or {algorithm: "
            f"{SIGNATURE_ALGORITHM}, key_id, value (base64)}}"
        )
    return problems


def manifest_text(data: dict[str, Any]) -> str:
    """The manifest as the file holds it; ReleaseManifestError if the content is not a valid
    manifest."""
    problems = manifest_problems(data)
    if problems:
        raise ReleaseManifestError("manifest", problems)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_manifest(path: str | Path, data: dict[str, Any]) -> Path:
    path = Path(path)
    text = manifest_text(data)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest(path: str | Path) -> dict[str, Any]:
    """A manifest file's content, validated; ReleaseManifestError naming the file and each bad
    field."""
    from harness.userfiles import InputFileError, read_json

    try:
        data = read_json(path, what="release manifest", max_bytes=MAX_MANIFEST_BYTES)
    except InputFileError as exc:
        raise ReleaseManifestError(str(path), [str(exc)]) from None
    problems = manifest_problems(data)
    if problems:
        raise ReleaseManifestError(str(path), problems)
    return data


def folder_fingerprint(path: str | Path) -> str:
    """The fingerprint the manifest records for a checkpoint or draft-head folder."""
    return fingerprint(path)


def folder_entry(path: str | Path) -> dict[str, Any]:
    """What a manifest records of a folder: its path, every file (name, size, sha256) and their
    fingerprint."""
    files = folder_files(path)
    return {
        "path": str(path),
        "fingerprint": files_fingerprint(files),
        "files": [f.to_dict() for f in files],
    }


# -- the signature
# ---------------------------------------------------------------------------------------


def signed_bytes(data: dict[str, Any]) -> bytes:
    """What is signed: the manifest without its signature, as canonical JSON (sorted keys, no
    spaces)."""
    body = {key: value for key, value in data.items() if key != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def key_id(public_key) -> str:
    """A short name of an Ed25519 public key: the first 16 hex digits of the sha256 of its raw
    bytes."""
    import hashlib

    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return hashlib.sha256(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()[:16]


def sign_manifest(data: dict[str, Any], private_key) -> dict[str, Any]:
    """The manifest with its Ed25519 signature (``private_key``: cryptography's
    Ed25519PrivateKey)."""
    import base64

    value = base64.b64encode(private_key.sign(signed_bytes(data))).decode()
    return {
        **data,
        "signature": {
            "algorithm": SIGNATURE_ALGORITHM,
            "key_id": key_id(private_key.public_key()),
            "value": value,
        },
    }


def load_public_key(path: str | Path):
    """The studio's Ed25519 public key from a PEM file; ReleaseManifestError naming the file."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    from harness.userfiles import InputFileError, read_text

    try:
        text = read_text(path, what="public key file", max_bytes=64 * 1024)
        key = load_pem_public_key(text.encode())
    except InputFileError as exc:
        raise ReleaseManifestError(str(path), [str(exc)]) from None
    except ValueError as exc:
        raise ReleaseManifestError(str(path), [f"not a PEM public key ({exc})"]) from None
    if not isinstance(key, Ed25519PublicKey):
        raise ReleaseManifestError(
            str(path), [f"an {type(key).__name__}, not the studio's Ed25519 public key"]
        )
    return key


def signature_problems(data: dict[str, Any], public_key) -> list[str]:
    """Why the manifest is not one the studio signed with ``public_key`` (empty when it is)."""
    import base64
    import binascii

    from cryptography.exceptions import InvalidSignature

    signature = data.get("signature")
    if signature is None:
        return [
            "signature: missing: the studio signs a manifest "
            "when a reviewer decides the release; a draft, "
            "or a file written by hand, is never launched "
            "(download it again from the release's page)"
        ]
    if signature["key_id"] != key_id(public_key):
        return [
            f"signature: made with key {signature['key_id'][:16]!r}, not with the public key given "
            f"({key_id(public_key)}); give the public key of the studio that decided the release"
        ]
    try:
        public_key.verify(base64.b64decode(signature["value"], validate=True), signed_bytes(data))
    except (InvalidSignature, binascii.Error, ValueError):
        return [
            "signature: does not match the manifest's content: "
            "the file was changed after the studio signed "
            "it (a status, a path or a digest edited); download it again from the release's page"
        ]
    return []


def launch_problems(data: dict[str, Any], public_key) -> list[str]:
    """Why a valid manifest must not be launched on this host: not signed by the studio's key, not
    approved, or a file of its checkpoint or draft head on disk differs from what was approved (each
    file named)."""
    problems = signature_problems(data, public_key)
    if problems:
        return problems  # nothing else in an unsigned or altered file can be trusted
    release = data["release"]
    if release["status"] != "approved":
        problems.append(
            f"release.status: release #{release['id']} is "
            f"{release['status']}, not approved; a reviewer "
            f"approves it in the studio (/releases/{release['id']}/) "
            "and the manifest is downloaded again"
        )
    for key in ("checkpoint", "draft_head"):
        entry = data.get(key)
        if entry is None:
            continue
        folder = Path(entry["path"])
        try:
            now = folder_files(folder)
        except CheckpointError as exc:
            problems.append(
                f"{key}.path: {exc}; copy the folder the manifest names here (same path)"
            )
            continue
        changed = files_differences(entry["files"], now)
        problems += [f"{key}.files: {folder}/{change}" for change in changed[:20]]
        if len(changed) > 20:
            problems.append(f"{key}.files: ... and {len(changed) - 20} more files differ")
        if changed:
            problems.append(
                f"{key}: {folder} is not the folder that was "
                "approved; copy the approved files again, "
                "or draft and approve a new release for it"
            )
    return problems

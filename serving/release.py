"""The release manifest: which checkpoint, draft head and Harness version go to production, and why.

A manifest is one JSON file written by the studio (``studio.releases``) when a release is drafted
and decided, and read by ``python -m serving sglang-command --release FILE`` on the GPU host:

    {"format": "harness-release/1",
     "release": {"id": 3, "status": "approved", "drafted_by": "mei", "drafted_at": "...",
                 "decided_by": "rafael", "decided_at": "...", "reason": "...", "override_reason": ""},
     "checkpoint": {"path": "/runs/run-4/sft/final", "fingerprint": "<sha256>", "run_id": 4},
     "draft_head": null | {"path": "/runs/run-5/mtp/final", "fingerprint": "<sha256>", "card": {...},
                           "token_map": "hot_token_map.pt" | null},
     "harness": {"name": "livestream-avatar", "number": 2, "digest": "<sha256>"},
     "gates": [{"name": "latency", "status": "pass", "detail": "...", "run_id": 7, "stage_id": null}, ...],
     "gates_at": "..."}

Fingerprints are ``serving.endpoint.checkpoint_info``'s (the one the draft head's card and the
replay record use), so the launcher can tell that the folder on disk is still the model that was
gated and approved. Reading is bounded in size and every problem names its field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.checkpoints import CheckpointError

FORMAT = "harness-release/1"
MAX_MANIFEST_BYTES = 1 << 20  # a manifest is a few KB; a larger file is not one
STATUSES = ("draft", "approved", "rejected")
GATE_STATUSES = ("pass", "fail", "no data")


class ReleaseManifestError(ValueError):
    """A manifest that cannot be used; lists every problem, each naming its field."""

    def __init__(self, where: str, problems: list[str]):
        self.problems = problems
        super().__init__(f"{where}: not a usable release manifest:\n" + "\n".join(f"  - {p}" for p in problems))


def _text(data: dict, key: str, where: str, problems: list[str], *, empty: bool = False) -> None:
    value = data.get(key)
    if not isinstance(value, str) or (not empty and not value):
        problems.append(f"{where}.{key}: expected {'a' if empty else 'a non-empty'} string, got {value!r:.60}")


def _sha(data: dict, key: str, where: str, problems: list[str]) -> None:
    value = data.get(key)
    if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
        problems.append(f"{where}.{key}: expected a sha256 hex digest (64 characters), got {value!r:.70}")


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
            problems.append(f"release.status: expected one of {', '.join(STATUSES)}, got {release.get('status')!r:.60}")
        for key in ("drafted_by", "drafted_at"):
            _text(release, key, "release", problems)
    checkpoint = data.get("checkpoint")
    if not isinstance(checkpoint, dict):
        problems.append("checkpoint: expected an object with path and fingerprint")
    else:
        _text(checkpoint, "path", "checkpoint", problems)
        _sha(checkpoint, "fingerprint", "checkpoint", problems)
    head = data.get("draft_head")
    if head is not None and not isinstance(head, dict):
        problems.append("draft_head: expected null or an object with path, fingerprint and card")
    elif isinstance(head, dict):
        _text(head, "path", "draft_head", problems)
        _sha(head, "fingerprint", "draft_head", problems)
        if not isinstance(head.get("card"), dict):
            problems.append("draft_head.card: expected the head's card.json (an object)")
        if head.get("token_map") is not None and not isinstance(head.get("token_map"), str):
            problems.append("draft_head.token_map: expected null or a file name in the head's folder")
    harness = data.get("harness")
    if not isinstance(harness, dict):
        problems.append("harness: expected an object with name, number and digest")
    else:
        _text(harness, "name", "harness", problems)
        if not isinstance(harness.get("number"), int):
            problems.append(f"harness.number: expected an integer, got {harness.get('number')!r:.60}")
        _sha(harness, "digest", "harness", problems)
    gates = data.get("gates")
    if not isinstance(gates, list):
        problems.append("gates: expected a list of {name, status, detail, run_id}")
    else:
        for i, gate in enumerate(gates):
            if not isinstance(gate, dict) or gate.get("status") not in GATE_STATUSES or not isinstance(
                    gate.get("name"), str):
                problems.append(f"gates[{i}]: expected {{name, status ({', '.join(GATE_STATUSES)}), detail}}")
    return problems


def manifest_text(data: dict[str, Any]) -> str:
    """The manifest as the file holds it; ReleaseManifestError if the content is not a valid manifest."""
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
    """A manifest file's content, validated; ReleaseManifestError naming the file and each bad field."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise ReleaseManifestError(str(path), [f"cannot be read ({exc.strerror or exc})"]) from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ReleaseManifestError(str(path), [f"larger than {MAX_MANIFEST_BYTES // 1024} KiB; a manifest is a few KB"])
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReleaseManifestError(str(path), [f"not JSON ({exc})"]) from None
    problems = manifest_problems(data)
    if problems:
        raise ReleaseManifestError(str(path), problems)
    return data


def folder_fingerprint(path: str | Path) -> str:
    """The fingerprint the manifest records for a checkpoint or draft-head folder."""
    from harness.checkpoints import fingerprint

    return fingerprint(path)


def launch_problems(data: dict[str, Any]) -> list[str]:
    """Why a valid manifest must not be launched on this host: not approved, or its checkpoint or draft
    head on disk is no longer what was approved."""
    problems = []
    release = data["release"]
    if release["status"] != "approved":
        problems.append(f"release.status: release #{release['id']} is {release['status']}, not approved; a reviewer "
                        f"approves it in the studio (/releases/{release['id']}/) and the manifest is downloaded again")
    for key in ("checkpoint", "draft_head"):
        entry = data.get(key)
        if entry is None:
            continue
        folder = Path(entry["path"])
        if not (folder / "config.json").is_file():
            problems.append(f"{key}.path: {folder} has no config.json on this host; copy the folder the manifest "
                            "names here (same path)")
            continue
        try:
            now = folder_fingerprint(folder)
        except CheckpointError as exc:
            problems.append(f"{key}.path: cannot be read on this host ({exc})")
            continue
        if now != entry["fingerprint"]:
            problems.append(f"{key}.fingerprint: {folder} is not the folder that was approved (fingerprint now "
                            f"{now[:12]}, recorded {entry['fingerprint'][:12]}): it was changed or retrained since; "
                            "draft and approve a new release for it")
    return problems

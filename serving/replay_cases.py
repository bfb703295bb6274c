"""Replay case files: the fixed requests a deployment replay sends, and their digest.

A case file is JSON Lines (one case per line) or a JSON list. Two shapes are read:
evaluation's case format (`"format": "hs-case/1"`, the request fields at top
level, validated with evaluation.cases; the replay set of the synthetic world is
one), or a mapping with an `id` and a `request` (a harness.livestream request).
Either way each case comes back with `id` and `request` (the request mapping the
agent answers) beside its other fields. The first
`warmup` cases warm the server up, the next `measured` are measured (docs/architecture.md §10:
10 + 100 of 110). The manifest digest is sha256 over the canonical JSON of the
cases actually used, so two runs with the same digest replayed the same requests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.jsonl import jsonl_records
from harness.userfiles import MAX_LINES_BYTES, parse_json, read_text


class CaseFileError(ValueError):
    """A replay case file that cannot be used; the message names file and line."""


@dataclass(frozen=True)
class CaseManifest:
    """The cases of one replay, split into warm-up and measured, with their digest."""

    path: str
    file_sha256: str
    warmup: list[dict[str, Any]]
    measured: list[dict[str, Any]]
    catalogue_path: str | None = None
    """The catalogue every case refers to (resolved beside the case file), if any."""

    @property
    def digest(self) -> str:
        return manifest_digest(self.warmup + self.measured)

    def describe(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "file_sha256": self.file_sha256,
            "digest": self.digest,
            "catalogue": self.catalogue_path,
            "catalogue_sha256": (
                hashlib.sha256(Path(self.catalogue_path).read_bytes()).hexdigest()
                if self.catalogue_path
                else None
            ),
            "warmup_ids": [c["id"] for c in self.warmup],
            "measured_ids": [c["id"] for c in self.measured],
        }


def manifest_digest(cases: list[dict[str, Any]]) -> str:
    canonical = json.dumps(cases, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_cases(path: str | Path) -> list[dict[str, Any]]:
    """All cases of a file, normalised to {'id': str, 'request': {...}, ...}."""
    path = Path(path)
    text = read_text(path, what="case file", max_bytes=MAX_LINES_BYTES, error=CaseFileError)
    raw: list[tuple[int, Any]] = []
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = parse_json(text, source=str(path), what="case file", error=CaseFileError)
        raw = [(0, item) for item in items]
    else:
        raw = list(jsonl_records(path, error=CaseFileError, text=text))
    cases = []
    seen: dict[str, int] = {}
    for position, (lineno, item) in enumerate(raw):
        where = f"{path}:{lineno}" if lineno else f"{path}: item {position}"
        if not isinstance(item, dict):
            raise CaseFileError(
                f"{where}: expected a JSON object per case, got {type(item).__name__}"
            )
        case_id = item.get("id", item.get("case_id"))
        if case_id is None:
            raise CaseFileError(f"{where}: field 'id' is missing; every case needs a unique id")
        case_id = str(case_id)
        if case_id in seen:
            raise CaseFileError(
                f"{where}: id {case_id!r} repeats the case at position {seen[case_id]}"
            )
        seen[case_id] = position
        if item.get("format") == "hs-case/1":
            request = _evaluation_case_request(item, where)
        else:
            request = item.get("request", item)
        if not isinstance(request, dict):
            raise CaseFileError(f"{where}: field 'request' must be an object")
        case = dict(item)
        case["id"] = case_id
        case["request"] = request
        cases.append(case)
    if not cases:
        raise CaseFileError(f"{path}: no cases in the file")
    return cases


def _evaluation_case_request(item: dict[str, Any], where: str) -> dict[str, Any]:
    from evaluation.cases import REQUEST_FIELDS, validate_case

    problems = validate_case(item)
    if problems:
        listed = "; ".join(f"{field or '<case>'}: {message}" for field, message in problems[:10])
        raise CaseFileError(f"{where}: not a valid hs-case/1 case: {listed}")
    request = {k: item[k] for k in REQUEST_FIELDS if k in item}
    request["intent"] = item["category"]
    return request


def load_manifest(path: str | Path, *, warmup: int, measured: int) -> CaseManifest:
    """The first `warmup` + `measured` cases of a file; errors if it has fewer."""
    path = Path(path)
    cases = load_cases(path)
    need = warmup + measured
    if len(cases) < need:
        raise CaseFileError(
            f"{path}: has {len(cases)} cases, but --warmup "
            f"{warmup} + --measured {measured} needs {need}; "
            "lower them or generate a larger case file"
        )
    if all(isinstance(c.get("replay"), dict) and "order" in c["replay"] for c in cases):
        cases.sort(key=lambda c: c["replay"]["order"])  # the replay set's own order
    used = cases[:need]
    return CaseManifest(
        path=str(path),
        file_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        warmup=used[:warmup],
        measured=used[warmup:],
        catalogue_path=_shared_catalogue(path, used),
    )


def _shared_catalogue(path: Path, cases: list[dict[str, Any]]) -> str | None:
    """The one catalogue file the cases name (relative to the case file), or None.

    Cases that name none are answered from the same catalogue as the rest.
    """
    names = {c.get("catalogue") for c in cases} - {None}
    if not names:
        return None
    if len(names) > 1:
        raise CaseFileError(
            f"{path}: the cases name different catalogues {sorted(map(str, names))}; "
            "a replay serves one catalogue, so split the file"
        )
    (name,) = names
    if not isinstance(name, str):
        raise CaseFileError(f"{path}: field 'catalogue' must be a file name, got {name!r}")
    resolved = (path.parent / name).resolve()
    if not resolved.is_file():
        raise CaseFileError(f"{path}: the cases' catalogue {name} is not at {resolved}")
    return str(resolved)

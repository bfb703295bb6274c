"""The studio's one doorway into the Harness format library (harness/).

Everything here delegates to `harness`; the studio never parses Harness files
itself. Zip import/export lives here too because it is about files, not rows.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness import Bundle, HarnessValidationError, Problem, load_mapping, validate_mapping


@dataclass(frozen=True)
class BundleSummary:
    name: str
    skills: int
    reply_skills: int
    strategy_skills: int
    tools: int
    hooks: int

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def bundle_load(files: dict[str, str]) -> Bundle:
    """Load a {path: text} mapping; raises HarnessValidationError listing every problem."""
    return load_mapping(files)


def bundle_problems(files: dict[str, str]) -> list[Problem]:
    """Every problem in the mapping (empty when valid); never raises for bad input."""
    return list(validate_mapping(files))


def bundle_summary(bundle: Bundle) -> BundleSummary:
    kinds = [skill.kind for skill in bundle.skills.values()]
    return BundleSummary(
        name=bundle.name,
        skills=len(kinds),
        reply_skills=kinds.count("reply"),
        strategy_skills=kinds.count("strategy"),
        tools=len(bundle.tools),
        hooks=len(bundle.hooks),
    )


class BundleArchiveError(ValueError):
    """A .zip that cannot be a Harness bundle; the message says which entry and why."""


def files_from_zip(data: bytes, *, max_bytes: int) -> dict[str, str]:
    """Read a bundle .zip (its files at the root or under one top folder) into {path: text}."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise BundleArchiveError("the upload is not a .zip file") from None
    entries = [info for info in archive.infolist() if not info.is_dir()]
    if not entries:
        raise BundleArchiveError("the .zip is empty; it should hold manifest.yaml, skills/, tools.yaml, ...")
    if sum(info.file_size for info in entries) > max_bytes:
        raise BundleArchiveError(f"the .zip unpacks to more than {max_bytes} bytes")
    names = [PurePosixPath(info.filename) for info in entries]
    for name in names:
        if name.is_absolute() or ".." in name.parts:
            raise BundleArchiveError(f"{name}: paths inside the .zip must be relative and stay inside it")
    tops = {name.parts[0] for name in names}
    strip = len(tops) == 1 and all(len(name.parts) > 1 for name in names) and "manifest.yaml" not in tops
    files: dict[str, str] = {}
    for info, name in zip(entries, names, strict=True):
        rel = PurePosixPath(*name.parts[1:]) if strip else name
        if any(part.startswith(".") or part == "__MACOSX" for part in rel.parts):
            continue  # editor and OS litter (.DS_Store, __MACOSX/), never part of a bundle
        try:
            files[str(rel)] = archive.read(info).decode("utf-8")
        except UnicodeDecodeError:
            raise BundleArchiveError(f"{rel}: not UTF-8 text; a Harness bundle holds only text files") from None
    return files


def files_to_zip(files: dict[str, str], *, folder: str) -> bytes:
    """A .zip holding the bundle directory `folder/` with every file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{folder}/{path}", date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path])
    return buffer.getvalue()


__all__ = [
    "Bundle",
    "BundleArchiveError",
    "BundleSummary",
    "HarnessValidationError",
    "Problem",
    "bundle_load",
    "bundle_problems",
    "bundle_summary",
    "files_from_zip",
    "files_to_zip",
]

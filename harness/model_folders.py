"""Plain model folders: the names of the model cache's models, what makes a folder a checkpoint
transformers can load (config.json and weights), and every file's digest.

The layer under ``harness.adapters`` and ``harness.checkpoints`` (docs/architecture.md §1): an
adapter's base is a plain folder, and ``harness.checkpoints`` dispatches between the two. The rest
of the project calls ``harness.checkpoints``, which exports what it needs of this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import model_cache
from harness.model_cache import CheckpointError

# What save_pretrained writes: one weights file, or an index naming the shards.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
DEFAULT_NAMES = ("local", "default")
TINY_NAMES = ("tiny",)
MAX_FILES = 10_000  # a checkpoint or draft head holds a few dozen files
_CHUNK = 1 << 20


def plain_checkpoint_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a model folder with config.json and weights (one sentence), or None."""
    path = Path(path)
    try:
        if not path.exists():
            return f"{path} does not exist"
        if not path.is_dir():
            return f"{path} is a file, not a checkpoint folder"
        if not (path / "config.json").is_file():
            return f"{path} has no config.json"
        if not any((path / name).is_file() for name in WEIGHT_FILES):
            hint = (
                "; a training run keeps its model in final/"
                if (path / "final" / "config.json").is_file()
                else ""
            )
            return f"{path} has config.json but no weights ({', '.join(WEIGHT_FILES)}){hint}"
    except OSError as error:
        return f"{path} cannot be read: {error.strerror or error}"
    return None


def resolve_plain_checkpoint(name: str) -> Path:
    """``local`` / ``default`` -> the default model, ``tiny`` -> the tiny model (both built on first
    use), else a plain checkpoint folder (absolute); CheckpointError saying what would be valid."""
    if name in (*DEFAULT_NAMES, model_cache.DEFAULT_MODEL_NAME):
        return model_cache.default_model_dir()  # builds on first use
    if name in (*TINY_NAMES, model_cache.TINY_MODEL_NAME):
        return model_cache.tiny_model_dir()
    path = Path(name).expanduser()
    problem = plain_checkpoint_problem(path) if name else "no name given"
    if problem:
        raise CheckpointError(
            f"{name!r} is not a model ({problem}): expected 'local', 'tiny', a checkpoint folder "
            "with config.json and weights, or a LoRA adapter folder (harness.adapters)"
        )
    return path.resolve()


@dataclass(frozen=True)
class FileDigest:
    """One file of a folder: its path relative to the folder (with /), size in bytes, sha256 of its
    bytes."""

    name: str
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


_DIGESTS: OrderedDict[tuple, str] = OrderedDict()
_DIGESTS_LOCK = threading.Lock()
_DIGESTS_KEPT = 4096


def _file_sha256(path: Path, expected: os.stat_result) -> str:
    key = (
        str(path),
        expected.st_dev,
        expected.st_ino,
        expected.st_size,
        expected.st_mtime_ns,
        expected.st_ctime_ns,
    )
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
        if known is not None:
            _DIGESTS.move_to_end(key)
            return known
    # O_NONBLOCK: a FIFO swapped in after the stat must not block the reader
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        now = os.fstat(handle.fileno())
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
            expected.st_dev,
            expected.st_ino,
        ):
            raise CheckpointError(f"{path} changed while it was read; read the folder again")
        digest = hashlib.sha256()
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    value = digest.hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[key] = value
        while len(_DIGESTS) > _DIGESTS_KEPT:
            _DIGESTS.popitem(last=False)
    return value


def folder_files(path: str | Path) -> list[FileDigest]:
    """Every file under ``path`` (sub-folders included) with its size and full sha256, sorted by
    name.

    CheckpointError names the entry when the folder is missing or is itself a link, holds a symbolic
    link (to a file or a folder: the bytes would live outside the folder that was checked and
    approved), a FIFO, socket or device, more than MAX_FILES files, or a file that cannot be
    read."""
    root = Path(path)
    try:
        if root.is_symlink():
            raise CheckpointError(
                f"{root} is a symbolic link to {os.readlink(root)}; give the folder itself"
            )
        if not root.is_dir():
            raise CheckpointError(f"{root} is not a folder on this host")
    except OSError as error:
        raise CheckpointError(f"{root} cannot be read: {error.strerror or error}") from None
    entries: list[FileDigest] = []

    def refuse(error: OSError):
        raise CheckpointError(f"{error.filename or root} cannot be read: {error.strerror or error}")

    try:
        for folder, dirs, files in os.walk(root, onerror=refuse):
            dirs.sort()
            for name in dirs:
                if os.path.islink(os.path.join(folder, name)):
                    raise CheckpointError(
                        f"{Path(folder, name)} is a link to a folder; copy the files in instead"
                    )
            for name in sorted(files):
                full = Path(folder, name)
                if (
                    full.is_symlink()
                ):  # a link's bytes live elsewhere, and can change there after approval
                    raise CheckpointError(
                        f"{full} is a symbolic link to {os.readlink(full)}; copy the file in "
                        "instead (a checkpoint folder holds its own files)"
                    )
                info = full.stat()
                if not stat.S_ISREG(info.st_mode):
                    raise CheckpointError(
                        f"{full} is not a regular file (a FIFO, socket or device); remove it"
                    )
                entries.append(
                    FileDigest(
                        full.relative_to(root).as_posix(), info.st_size, _file_sha256(full, info)
                    )
                )
                if len(entries) > MAX_FILES:
                    raise CheckpointError(
                        f"{root} holds more than {MAX_FILES} files; not a checkpoint folder"
                    )
    except OSError as error:
        raise CheckpointError(
            f"{error.filename or root} cannot be read: {error.strerror or error}"
        ) from None
    return sorted(entries, key=lambda entry: entry.name)


def files_fingerprint(files: list[FileDigest] | list[dict[str, Any]]) -> str:
    """sha256 of the sorted (name, size, sha256) list: one number for a folder's every byte."""
    rows = sorted(
        (
            [f.name, f.size, f.sha256]
            if isinstance(f, FileDigest)
            else [f["name"], f["size"], f["sha256"]]
            for f in files
        ),
        key=lambda row: row[0],
    )
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def files_differences(recorded: list[dict[str, Any]], now: list[FileDigest]) -> list[str]:
    """Each file that differs between a recorded list and the folder now, named (empty when
    identical)."""
    before = {entry["name"]: entry for entry in recorded}
    after = {entry.name: entry for entry in now}
    problems = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if new is None:
            problems.append(f"{name}: removed")
        elif old is None:
            problems.append(f"{name}: added ({new.size} bytes)")
        elif old["size"] != new.size:
            problems.append(f"{name}: size {old['size']} -> {new.size} bytes")
        elif old["sha256"] != new.sha256:
            problems.append(
                f"{name}: content changed (sha256 {old['sha256'][:12]} -> {new.sha256[:12]})"
            )
    return problems

"""Checkpoint folders: resolve a name, check a folder, fingerprint every file. One error type.

Every library that takes a model (``harness run --policy local``, training, evaluation, the serving
routes, ``engine-server``, ``sglang-command``, the studio's registry and releases) goes through
this module, so a name means the same model everywhere and a fingerprint is the same number
everywhere:

- ``resolve_checkpoint(name)``: ``local`` / ``default`` -> the default model, ``tiny`` -> the tiny
  test model (both from ``harness.model_cache``), else a checkpoint folder; a LoRA
  adapter folder resolves to its base merged with it (``harness.adapters``), built once;
- ``checkpoint_problem(path)``: why a folder is not a checkpoint transformers can load (one
  sentence), or None; ``is_checkpoint(path)`` the same as a yes or no, and
  ``checkpoint_config(path)`` its ``config.json``. No other module tests a folder for
  ``config.json``;
- ``folder_files(path)``: every file under a folder as (name, size, sha256 of every byte), sorted by
  name; ``fingerprint`` is the sha256 of that list, so any changed, added, removed or renamed file
  changes it, and ``files_differences`` names which. Digests are kept in memory per file, keyed by
  its device, inode, size, modification and change times (the change time cannot be set back by a
  user), so a page that fingerprints the same folders again reads nothing.

A folder holding a link to another folder, a FIFO or a device is refused rather than followed or
opened (opening a FIFO would block).

The layering: ``harness.model_folders`` knows plain model folders (names, weights, digests);
``harness.adapters`` builds on it (an adapter's base is a plain folder); this module builds on both
and is what the rest of the project calls, so no import circle joins the three.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import adapters

# the one error type of model folders: defined in the model cache, below this module; raised by all
# three
from harness.model_cache import CheckpointError
from harness.model_folders import (
    DEFAULT_NAMES,
    MAX_FILES,
    TINY_NAMES,
    WEIGHT_FILES,
    FileDigest,
    files_differences,
    files_fingerprint,
    folder_files,
    plain_checkpoint_problem,
    resolve_plain_checkpoint,
)

__all__ = [
    "DEFAULT_NAMES",
    "MAX_FILES",
    "TINY_NAMES",
    "WEIGHT_FILES",
    "CheckpointError",
    "FileDigest",
    "checkpoint_config",
    "checkpoint_info",
    "checkpoint_problem",
    "files_differences",
    "files_fingerprint",
    "fingerprint",
    "folder_files",
    "is_checkpoint",
    "resolve_checkpoint",
]


def checkpoint_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a checkpoint folder transformers can load (one sentence), or None if it
    is one: a LoRA adapter folder is checked as one (``harness.adapters``), any other as a plain
    model folder."""
    path = Path(path)
    try:
        if path.is_dir() and adapters.is_adapter(path):
            return adapters.adapter_problem(path)
    except OSError as error:
        return f"{path} cannot be read: {error.strerror or error}"
    return plain_checkpoint_problem(path)


def is_checkpoint(path: str | Path | None) -> bool:
    """Whether ``path`` is a checkpoint folder (config.json and weights) or a LoRA adapter
    folder."""
    return path is not None and checkpoint_problem(path) is None


def checkpoint_config(path: str | Path) -> dict[str, Any]:
    """The model's ``config.json`` as a dict; CheckpointError when the folder is no checkpoint (no
    weights), a LoRA adapter folder (its config is its base's: ``resolve_checkpoint`` merges them)
    or the file is not a JSON object."""
    path = Path(path)
    problem = checkpoint_problem(path)
    if problem:
        raise CheckpointError(problem)
    if adapters.is_adapter(path):
        raise CheckpointError(
            f"{path} is a LoRA adapter: its model config is its base's (resolve_checkpoint "
            "merges the two)"
        )
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path / 'config.json'}: not readable JSON ({error})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path / 'config.json'}: not a JSON object")
    return config


def resolve_checkpoint(name: str) -> Path:
    """``local`` / ``default`` -> the default model, ``tiny`` -> the tiny model, else a checkpoint
    folder (absolute); a LoRA adapter folder -> its base merged with it, built once into the model
    cache; CheckpointError saying what would be valid."""
    path = Path(name).expanduser()
    if name and path.is_dir() and adapters.is_adapter(path):
        problem = adapters.adapter_problem(path)
        if problem:
            raise CheckpointError(
                f"{name!r} is not a model ({problem}): expected 'local', 'tiny', a checkpoint "
                "folder with config.json and weights, or a LoRA adapter folder (harness.adapters)"
            )
        return adapters.merged_checkpoint(path)  # base + adapter, merged once into the model cache
    return resolve_plain_checkpoint(name)


def fingerprint(path: str | Path) -> str:
    """The folder's fingerprint (``files_fingerprint`` of ``folder_files``); an adapter folder's
    covers its base's identity too (``harness.adapters.adapter_fingerprint``)."""
    if adapters.is_adapter(path):
        return adapters.adapter_fingerprint(path)
    return files_fingerprint(folder_files(path))


def checkpoint_info(path: str | Path, *, label: str | None = None) -> dict[str, Any]:
    """Name, path and fingerprint of a local checkpoint (what replays record and head cards
    name)."""
    path = Path(path)
    return {"name": label or path.name, "path": str(path), "fingerprint": fingerprint(path)}

"""The Harness: an editable bundle of skills, tools, prompt blocks and hooks.

This package is a pure library (no Django). Its top level is the Harness
format: load, validate, dump, digest and diff bundles. The agent runtime that
runs a request under a bundle lives in :mod:`harness.runtime`.
"""

from __future__ import annotations

from pathlib import Path

from harness.bundle import (
    Bundle,
    dump_dir,
    files_digest,
    load_dir,
    load_mapping,
    read_dir,
    validate_mapping,
)
from harness.errors import HarnessValidationError, Problem


def demo_harness_dir() -> Path:
    """The shipped demo Harness ``livestream-avatar`` (package data)."""
    return Path(__file__).parent / "demo" / "livestream-avatar"


__all__ = [
    "Bundle",
    "HarnessValidationError",
    "Problem",
    "demo_harness_dir",
    "dump_dir",
    "files_digest",
    "load_dir",
    "load_mapping",
    "read_dir",
    "validate_mapping",
]

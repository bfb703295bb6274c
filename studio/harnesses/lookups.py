"""Small helpers the harness views share: parsing numbers, finding objects, ordering files."""

from __future__ import annotations

from harness.numbers import decimal_int
from studio.harnesses import selectors
from studio.harnesses.models import Harness, HarnessVersion
from studio.harnesses.services import StudioError
from studio.lookups import found_or_404

FILE_ORDER = ("manifest.yaml", "prompt.yaml", "tools.yaml", "hooks.yaml")


def parse_int(value: str | None, *, field: str) -> int:
    number = decimal_int(value, max_digits=18)  # a database integer holds 18 digits
    if number is None:
        raise StudioError(f"{field}: expected a whole number, got {str(value)[:40]!r}")
    return number


def file_sort_key(path: str) -> tuple:
    return (FILE_ORDER.index(path) if path in FILE_ORDER else len(FILE_ORDER), path)


def file_kind(path: str) -> str:
    if path.endswith("SKILL.md"):
        return "skill"
    return {
        "tools.yaml": "tools",
        "hooks.yaml": "hooks",
        "prompt.yaml": "prompt",
        "manifest.yaml": "manifest",
    }.get(path, "other")


def harness_or_404(name: str) -> Harness:
    return found_or_404(selectors.harness_get, f"no Harness named {name!r}", name=name)


def version_or_404(harness: Harness, number: int) -> HarnessVersion:
    return found_or_404(
        selectors.version_get,
        f"{harness.name} has no version {number}",
        harness=harness,
        number=number,
    )

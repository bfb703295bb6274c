"""The mistakes a user can make with Harness writes; each message says what would be valid."""

from __future__ import annotations

from studio.errors import StudioError
from studio.harnesses.bundles import Problem
from studio.harnesses.models import HarnessVersion

__all__ = ["DuplicateVersion", "InvalidBundle", "StudioError"]


class InvalidBundle(StudioError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(
            "; ".join(str(p) for p in problems[:5]) + (" ..." if len(problems) > 5 else "")
        )


class DuplicateVersion(StudioError):
    def __init__(self, version: HarnessVersion):
        self.version = version
        super().__init__(f"these files are identical to {version} (digest {version.digest[:12]})")

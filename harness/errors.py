"""Validation problems and the one exception the Harness format raises.

Every user mistake in a Harness bundle becomes a :class:`Problem` that names the
file, the line (1-based; 0 when the problem belongs to the whole file or the
bundle), the field and what would be valid. Parsers collect problems instead of
stopping at the first one, so an operator sees everything wrong in one save.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in a bundle, printable as ``file:line: field: message``."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.message}"

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


class HarnessValidationError(ValueError):
    """Raised when a bundle has problems; ``problems`` lists every one of them."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        head = f"{len(self.problems)} problem(s) in the Harness bundle"
        super().__init__(head + ":\n" + "\n".join(f"  {p}" for p in self.problems))

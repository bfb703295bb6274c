"""Field-path validation helpers shared by the live-room domain model.

Every user-facing JSON document here (requests, catalogues) is checked by a
``FieldReader`` that collects *all* problems with a path such as
``room.shelf[2]`` before anything is built, so a user sees every mistake at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldProblem:
    """One problem in a JSON document: where it is and what would be valid."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


class DocumentValidationError(ValueError):
    """A JSON document (request or catalogue) failed validation; lists every problem."""

    def __init__(self, problems: list[FieldProblem], *, source: str = "request") -> None:
        self.problems = list(problems)
        self.source = source
        lines = "\n".join(f"  {source}: {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in {source}:\n{lines}")


class FieldReader:
    """Reads typed fields out of nested dicts, recording problems instead of raising."""

    def __init__(self) -> None:
        self.problems: list[FieldProblem] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(FieldProblem(path, message))

    @staticmethod
    def join(base: str, key: str | int) -> str:
        if isinstance(key, int):
            return f"{base}[{key}]"
        return f"{base}.{key}" if base else key

    def mapping(self, value: Any, path: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"must be a JSON object, got {_kind(value)}")
            return None
        return value

    def unknown_keys(self, data: dict[str, Any], path: str, allowed: set[str]) -> None:
        for key in data:
            if key not in allowed:
                self.problem(
                    self.join(path, key),
                    f"unknown field; valid fields are {', '.join(sorted(allowed))}",
                )

    def string(
        self,
        data: dict[str, Any],
        key: str,
        path: str,
        *,
        required: bool = True,
        default: str = "",
        allow_empty: bool = False,
    ) -> str:
        where = self.join(path, key)
        if key not in data or data[key] is None:
            if required:
                self.problem(where, "is required (a string)")
            return default
        value = data[key]
        if not isinstance(value, str):
            self.problem(where, f"must be a string, got {_kind(value)}")
            return default
        if not allow_empty and not value.strip():
            self.problem(where, "must not be empty")
        return value

    def integer(
        self,
        data: dict[str, Any],
        key: str,
        path: str,
        *,
        required: bool = True,
        default: int | None = None,
        minimum: int | None = None,
    ) -> int | None:
        where = self.join(path, key)
        if key not in data or data[key] is None:
            if required:
                self.problem(where, "is required (an integer)")
            return default
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(where, f"must be an integer, got {_kind(value)}")
            return default
        if minimum is not None and value < minimum:
            self.problem(where, f"must be >= {minimum}, got {value}")
            return default
        return value

    def number(
        self,
        data: dict[str, Any],
        key: str,
        path: str,
        *,
        required: bool = True,
        default: float | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> float | None:
        where = self.join(path, key)
        if key not in data or data[key] is None:
            if required:
                self.problem(where, "is required (a number)")
            return default
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(where, f"must be a number, got {_kind(value)}")
            return default
        if minimum is not None and value < minimum:
            self.problem(where, f"must be >= {minimum}, got {value}")
            return default
        if maximum is not None and value > maximum:
            self.problem(where, f"must be <= {maximum}, got {value}")
            return default
        return float(value)

    def choice(
        self,
        data: dict[str, Any],
        key: str,
        path: str,
        choices: tuple[str, ...],
        *,
        required: bool = True,
        default: str = "",
    ) -> str:
        where = self.join(path, key)
        if key not in data or data[key] is None:
            if required:
                self.problem(where, f"is required; one of {', '.join(choices)}")
            return default
        value = data[key]
        if value not in choices:
            self.problem(where, f"must be one of {', '.join(choices)}, got {value!r}")
            return default
        return value

    def listing(
        self, data: dict[str, Any], key: str, path: str, *, required: bool = False
    ) -> list[Any]:
        where = self.join(path, key)
        if key not in data or data[key] is None:
            if required:
                self.problem(where, "is required (a JSON array)")
            return []
        value = data[key]
        if not isinstance(value, list):
            self.problem(where, f"must be a JSON array, got {_kind(value)}")
            return []
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__

"""Seeded failure injection for tool calls: timeout, malformed result, permission denied.

Used by tests, robustness evaluation and the RL simulator. Draws are made from a
random generator seeded with ``(seed, request id)``, so a request gets the same
failures whatever order or concurrency the requests run in.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

FAILURE_KINDS = ("timeout", "malformed", "permission_denied")


@dataclass(frozen=True)
class FailureInjection:
    """Rates (0-1) per failure kind, a seed, and which tools may fail (a regex, default all data
    tools)."""

    timeout: float = 0.0
    malformed: float = 0.0
    permission_denied: float = 0.0
    seed: int = 0
    tools: str | None = None

    def __post_init__(self) -> None:
        for kind in FAILURE_KINDS:
            rate = getattr(self, kind)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"failure rate {kind}={rate} must be between 0 and 1")
        if self.timeout + self.malformed + self.permission_denied > 1.0:
            raise ValueError("failure rates must add up to at most 1")

    @property
    def active(self) -> bool:
        return self.timeout + self.malformed + self.permission_denied > 0

    @classmethod
    def parse(cls, text: str) -> FailureInjection:
        """From ``timeout=0.1,malformed=0.05,permission_denied=0.05,seed=7``."""
        values: dict[str, float | int | str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep or key not in (*FAILURE_KINDS, "seed", "tools"):
                raise ValueError(
                    f"bad failure setting {part!r}; use kind=rate with kinds "
                    f"{', '.join(FAILURE_KINDS)}, plus seed=N and tools=REGEX"
                )
            values[key] = int(value) if key == "seed" else value if key == "tools" else float(value)
        return cls(**values)  # type: ignore[arg-type]


class FailureInjector:
    """Draws the failure (or none) for each tool call of one request."""

    def __init__(self, config: FailureInjection, request_id: str) -> None:
        self.config = config
        self.rng = random.Random(f"{config.seed}:{request_id}")

    def draw(self, tool_name: str) -> str | None:
        if not self.config.active:
            return None
        if self.config.tools and not re.fullmatch(self.config.tools, tool_name):
            return None
        x = self.rng.random()
        for kind in FAILURE_KINDS:
            rate = getattr(self.config, kind)
            if x < rate:
                return kind
            x -= rate
        return None

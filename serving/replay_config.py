"""The deployment replay's settings (docs/architecture.md §10): one dataclass that ``python -m
serving replay``'s flags and the studio's replay form are both built from
(``harness/config_schema.py``), with one set of defaults, help texts and ranges.

Every field is a flag (``--max-tokens``); ``check()`` names the first field out of range, and the
CLI refuses it with that message as the studio's form does. The sampling ``seed``, the run
folder's name ``run_id`` and the deployment a run ``post``s its trajectories to are fields too, so
the studio's replay form sets them as the command line does. What only a command line has (the
runs folder ``--out``, which the studio owns, ``--profiles``, ``--trust-harness-commands``) stays in
the CLI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.config_schema import to_argv
from harness.runtime.traffic import TOKEN_ENV, url_problem

DEMO_HARNESS = "demo"
#: A run folder's name: what ``--run-id`` may be (one folder under the runs folder, never a path).
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass
class ReplayConfig:
    """The deployment replay: fixed cases at fixed concurrency, the complete agent per request."""

    route: str = field(
        default="cpu-engine",
        metadata={
            "kind": "route",
            "help": (
                "Serving route: a profile from `python -m serving "
                "profiles` (cpu-engine, cpu-engine-tiny, gpu-sglang, ...), "
                "transformers:CHECKPOINT, local:CHECKPOINT, "
                "sglang:URL:MODEL or openai:URL:MODEL[:KEY_ENV]."
            ),
        },
    )
    harness: str = field(
        default=DEMO_HARNESS,
        metadata={
            "kind": "harness",
            "help": (
                "Harness the agent runs under: 'demo' (the shipped "
                "livestream-avatar) or a Harness folder; the studio "
                "also takes a studio version, NAME@vN."
            ),
        },
    )
    cases: str = field(
        default="",
        metadata={
            "kind": "file",
            "help": (
                "Replay case file (JSONL or a JSON list); `python -m "
                "evaluation generate` writes data/world/replay.jsonl, "
                "`manage.py seed_evolution_demo` the studio demo's 110 cases."
            ),
        },
    )
    concurrency: list[int] = field(
        default_factory=lambda: [1, 2, 4, 8],
        metadata={"help": ("Concurrency levels, comma-separated: C requests in flight at once.")},
    )
    warmup: int = field(default=10, metadata={"help": "Warm-up cases per level (not measured)."})
    measured: int = field(default=100, metadata={"help": "Measured cases per level."})
    temperature: float = field(
        default=1.0, metadata={"help": "Sampling temperature of every model call."}
    )
    top_p: float = field(
        default=0.95, metadata={"help": "Nucleus sampling share of every model call."}
    )
    max_tokens: int = field(default=256, metadata={"help": "Most new tokens per model call."})
    request_timeout: float = field(
        default=60.0, metadata={"help": "Seconds before a request counts as timed out."}
    )
    sla: float = field(
        default=15.0, metadata={"help": "Latency bound of the attainment share, in seconds."}
    )
    seed: int | None = field(
        default=None,
        metadata={"help": "Sampling seed sent with every model call (empty: none)."},
    )
    run_id: str = field(
        default="",
        metadata={
            "help": (
                "Name of the run folder: letters, digits, '.', '_' and '-' (empty: "
                "time-route-random on the command line, 'replay' in a studio run's folder)."
            )
        },
    )
    post: str = field(
        default="",
        metadata={
            "help": (
                "Also post every request's trajectory to a studio deployment: its trajectories "
                "URL, e.g. http://studio:8000/api/v1/deployments/staging/trajectories/ (the token "
                f"is ${TOKEN_ENV} where the replay runs; empty: post nothing)."
            )
        },
    )

    def check(self) -> str:
        """The first problem, as ``field: what is wrong``, or ''."""
        if not self.route.strip():
            return (
                "route: give a profile name or ENGINE:CHECKPOINT "
                "(python -m serving profiles lists them)"
            )
        if not self.cases.strip():
            return "cases: give a replay case file (JSONL or a JSON list)"
        if not self.concurrency or any(not 1 <= c <= 256 for c in self.concurrency):
            return "concurrency: give levels between 1 and 256, e.g. 1,2,4,8"
        if not 0 <= self.warmup <= 10000:
            return f"warmup: must be between 0 and 10000, got {self.warmup}"
        if not 1 <= self.measured <= 10000:
            return f"measured: must be between 1 and 10000, got {self.measured}"
        if not 0 <= self.temperature <= 2:
            return f"temperature: must be between 0 and 2, got {self.temperature:g}"
        if not 0 < self.top_p <= 1:
            return f"top_p: must be above 0 and at most 1, got {self.top_p:g}"
        if not 1 <= self.max_tokens <= 32768:
            return f"max_tokens: must be between 1 and 32768, got {self.max_tokens}"
        for name in ("request_timeout", "sla"):
            if not 0 < getattr(self, name) <= 3600:
                return (
                    f"{name}: must be above 0 and at most 3600 seconds, got {getattr(self, name):g}"
                )
        if self.run_id and not RUN_ID.match(self.run_id):
            return (
                f"run_id: {self.run_id[:60]!r} is not a folder name: use up to 128 letters, "
                "digits, '.', '_' and '-', starting with a letter or digit"
            )
        if self.post and (problem := url_problem(self.post)):
            return f"post: {problem}"
        return ""

    def argv(self, *, out: str) -> list[str]:
        """``python -m serving replay`` with these settings (after ``python -m``); the fields left
        empty are left out, as a person would type it."""
        optional = ("harness", "seed", "run_id", "post")
        return ["serving", "replay", *to_argv(self, omit_defaults=optional), "--out", out]

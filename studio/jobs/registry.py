"""The registry of job kinds: name -> label and the function a worker runs.

An app registers its kinds in <app>/job_kinds.py with @job_kind. The function
receives a JobContext (progress, log, params) and returns a JSON-able result.
It raises JobFailed for a failure it can explain in one line; anything else it
raises is a bug, logged with its traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class JobFailed(Exception):
    """A failure the job kind has explained: the job fails with this one line, logged without a traceback."""


class JobContext(Protocol):
    job_id: int
    params: dict[str, Any]

    def progress(self, percent: int, message: str | None = None) -> None: ...

    def log(self, line: str) -> None: ...


@dataclass(frozen=True)
class JobKind:
    name: str
    label: str
    run: Callable[[JobContext], Any]
    # How the job page shows a result: a template included with the context `present(result)` returns.
    result_template: str | None = None
    present: Callable[[Any], dict] | None = None


JOB_KINDS: dict[str, JobKind] = {}


def job_kind(
    name: str, *, label: str, result_template: str | None = None, present: Callable[[Any], dict] | None = None
) -> Callable:
    def register(run: Callable[[JobContext], Any]) -> Callable[[JobContext], Any]:
        if name in JOB_KINDS and JOB_KINDS[name].run is not run:
            raise ValueError(f"job kind {name!r} is registered twice")
        JOB_KINDS[name] = JobKind(name=name, label=label, run=run, result_template=result_template, present=present)
        return run

    return register

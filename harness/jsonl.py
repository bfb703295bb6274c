"""Reading JSON Lines files: case sets, examples, trajectories, per-item results.

Two readers, for the two kinds of file the project keeps:

- :func:`jsonl_records` for files a person wrote or handed over (a case set, an
  examples file): every non-blank line must be JSON, and the first bad one
  raises the caller's error class naming ``file:line`` and the parser's reason;
- :func:`finished_records` for append-only results files the project writes
  itself as each item finishes: a line torn by a killed run is skipped, so the
  run resumes and does that item again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def jsonl_records(path: str | Path, *, error: type[Exception] = ValueError,
                  text: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of ``path`` (or of ``text``, named as ``path``).

    A line that is not JSON raises ``error("PATH:LINE: not valid JSON (REASON)")``.
    """
    if text is None:
        text = Path(path).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from None


def finished_records(path: str | Path) -> list[Any]:
    """The complete records of an append-only results file; [] when it does not exist yet."""
    path = Path(path)
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill; its item runs again
    return records

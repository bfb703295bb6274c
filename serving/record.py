"""The run record of a deployment replay: one folder per run.

    runs/serving/<run_id>/
      run.json         what ran: run id, checkpoint, Harness digest, case manifest
                       digest, route, concurrency levels, generation settings,
                       timeouts, host, start/end times (per level too)
      requests.jsonl   every request's raw timings, one JSON object per line,
                       written as each request finishes
      summary.json     the metrics per concurrency level (serving.metrics)
      table.md         the Table-5-style Markdown table
      latency_cdf.png  wall-clock latency CDF per concurrency level
      transformers-serve.log, mcp-<server>.log   the managed processes' logs

The summary is always recomputed from requests.jsonl, so the raw timings and the
reported figures cannot drift apart.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from harness.jsonl import jsonl_records
from harness.userfiles import read_text
from serving.metrics import DEFAULT_SLA_S, summarise_by_concurrency

DEFAULT_RUNS_DIR = Path("runs/serving")


class RunRecordError(ValueError):
    """A run folder that is missing or incomplete."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_run_id(route: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe_route = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in route)[:40]
    return f"{stamp}-{safe_route}-{secrets.token_hex(3)}"


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: on a shared CPU box they explain slow runs."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def host_info() -> dict[str, Any]:
    """The machine a run measured on (the replay client's host)."""
    versions = {}
    for package in ("torch", "transformers", "openai", "mcp"):
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": load_average(),
        "python": platform.python_version(),
        "packages": versions,
    }


class RunWriter:
    """Writes one run folder; record() is safe to call from worker threads."""

    def __init__(self, *, root: str | Path, run_id: str):
        self.run_id = run_id
        self.dir = Path(root) / run_id
        Path(root).mkdir(parents=True, exist_ok=True)
        try:
            self.dir.mkdir()
        except FileExistsError:
            raise RunRecordError(
                f"{self.dir}: a run with this id exists; choose another --run-id"
            ) from None
        self._lock = threading.Lock()
        self._requests = open(self.dir / "requests.jsonl", "a", encoding="utf-8")  # noqa: SIM115

    def record(self, record: dict[str, Any]) -> None:
        line = json.dumps({"run_id": self.run_id, **record}, ensure_ascii=False, sort_keys=True)
        with self._lock:
            if self._requests.closed:
                # a request abandoned by an aborted run finished late: not part of the record
                return
            self._requests.write(line + "\n")
            self._requests.flush()

    def write_json(self, name: str, data: dict[str, Any]) -> Path:
        path = self.dir / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(
            json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8"
        )
        tmp.replace(path)
        return path

    def close(self) -> None:
        with self._lock:
            if not self._requests.closed:
                self._requests.close()


@dataclass(frozen=True)
class RequestsRead:
    """The records read from a run's requests.jsonl, and how much of the file they are."""

    records: list[dict[str, Any]]
    bytes_read: int
    """Up to the end of the last complete line read: a line being written (a running replay)
    or past ``max_bytes`` is not part of it."""
    bytes_total: int
    max_bytes: int | None = None

    @property
    def capped(self) -> bool:
        """The file is larger than the reader was allowed to read: the records are its first
        ones."""
        return self.max_bytes is not None and self.bytes_total > self.max_bytes


def read_requests_upto(run_dir: str | Path, *, max_bytes: int | None) -> RequestsRead:
    """The request records of a run; with ``max_bytes`` only those in the file's first ``max_bytes``
    bytes (memory and time stay bounded however large the file), an incomplete last line left out.
    A line that is not JSON raises RunRecordError naming requests.jsonl and the line."""
    path = Path(run_dir) / "requests.jsonl"
    if not path.is_file():
        raise RunRecordError(f"{run_dir}: no requests.jsonl; is this a replay run folder?")
    total = path.stat().st_size
    if max_bytes is None:
        records = [record for _, record in jsonl_records(path, error=RunRecordError)]
        return RequestsRead(records, total, total)
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes)
    except OSError as exc:
        raise RunRecordError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    data = data[: data.rfind(b"\n") + 1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RunRecordError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None
    records = [record for _, record in jsonl_records(path, error=RunRecordError, text=text)]
    return RequestsRead(records, len(data), total, max_bytes)


def read_requests(run_dir: str | Path) -> list[dict[str, Any]]:
    return read_requests_upto(run_dir, max_bytes=None).records


def build_summary(*, run_meta: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json content: identity of the run plus metrics per concurrency level."""
    sla_s = run_meta.get("sla_s", DEFAULT_SLA_S)
    levels = summarise_by_concurrency(records, sla_s=sla_s)
    for level in (
        run_meta.get("levels") or []
    ):  # the server's speculative-decoding figures per level
        if level.get("speculative") and level.get("concurrency") in levels:
            levels[level["concurrency"]]["speculative"] = level["speculative"]
    return {
        "run_id": run_meta["run_id"],
        "route": run_meta["route"]["route"],
        "engine": run_meta["route"]["engine"],
        "checkpoint": (run_meta["route"].get("checkpoint") or {}).get("name"),
        "harness_digest": run_meta["harness"]["digest"],
        "case_manifest_digest": run_meta["cases"]["digest"],
        "generation": run_meta["generation"],
        "sla_s": sla_s,
        "levels": {str(c): m for c, m in levels.items()},
    }


def resolve_run_dir(run: str | Path, *, root: str | Path = DEFAULT_RUNS_DIR) -> Path:
    """A run folder from a path or a run id under `root`."""
    path = Path(run)
    if path.is_dir():
        return path
    candidate = Path(root) / str(run)
    if candidate.is_dir():
        return candidate
    raise RunRecordError(f"run {run}: neither a folder nor a run id under {root}")


@dataclass(frozen=True)
class RunRead:
    """A run folder as read: run.json, the request records read and the summary recomputed from
    them."""

    dir: Path
    meta: dict[str, Any]
    requests: RequestsRead
    summary: dict[str, Any]


MAX_RUN_JSON_BYTES = 4 * 1024 * 1024


def read_run(
    run: str | Path, *, root: str | Path = DEFAULT_RUNS_DIR, max_request_bytes: int | None = None
) -> RunRead:
    """run.json, the request records (the first ``max_request_bytes`` of them when given) and the
    summary of those records. RunRecordError says why a folder cannot be read."""
    run_dir = resolve_run_dir(run, root=root)
    meta_path = run_dir / "run.json"
    if not meta_path.is_file():
        raise RunRecordError(f"{run_dir}: no run.json; the run did not finish writing its record")
    text = read_text(
        meta_path, what="run record", max_bytes=MAX_RUN_JSON_BYTES, error=RunRecordError
    )
    try:
        meta = json.loads(text)
    except ValueError as exc:
        raise RunRecordError(
            f"{meta_path}: not valid JSON ({exc}); the run record is damaged"
        ) from None
    if not isinstance(meta, dict):
        raise RunRecordError(
            f"{meta_path}: not a run record (a JSON object); the run record is damaged"
        )
    if "route" not in meta:
        if meta.get("status") == "running":
            raise RunRecordError(
                f"{run_dir}: the replay is still opening its route; nothing is measured yet"
            )
        raise RunRecordError(
            f"{run_dir}: the run stopped before its route "
            f"opened ({meta.get('error')}); nothing was measured"
        )
    requests = read_requests_upto(run_dir, max_bytes=max_request_bytes)
    try:
        summary = build_summary(run_meta=meta, records=requests.records)
    except (KeyError, TypeError, ValueError) as exc:
        raise RunRecordError(
            f"{run_dir}: run.json or requests.jsonl lacks a field the metrics need "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return RunRead(run_dir, meta, requests, summary)


def load_run(
    run: str | Path, *, root: str | Path = DEFAULT_RUNS_DIR
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(run.json, summary) of a run; the summary is recomputed from requests.jsonl."""
    read = read_run(run, root=root)
    return read.meta, read.summary


def read_replay_timing(data: dict[str, Any], *, source: str):
    """The ``replay`` block of a replay run's summary as the latency gate's evidence
    (``evaluation.gates.ReplayTiming``); ``evaluation.gates.EvidenceError`` naming the field on a
    shape this reader does not know."""
    from evaluation.gates import NUMBER, EvidenceError, ReplayTiming, field_of
    from serving.metrics import fallback_warning

    levels = field_of(data, "levels", dict, source)
    p95: dict[str, float | None] = {}
    for level, block in levels.items():
        if not isinstance(block, dict):
            raise EvidenceError(
                f"{source}: field 'levels.{level}' is {type(block).__name__}, expected an object"
            )
        value = block.get("wall_p95_s")
        if value is not None and (isinstance(value, bool) or not isinstance(value, NUMBER)):
            raise EvidenceError(
                f"{source}: field 'levels.{level}.wall_p95_s' is {type(value).__name__}, "
                "expected a number or null"
            )
        p95[str(level)] = None if value is None else float(value)
    digest = data.get("harness_digest")
    return ReplayTiming(
        wall_p95_s=p95,
        fallback_warning=fallback_warning(levels),
        harness_digest=digest if isinstance(digest, str) else "",
    )

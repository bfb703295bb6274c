"""Service functions of serving/: run a deployment replay, compare two runs.

These are what the CLI (and the studio's replay jobs) call. `replay_run` opens the
serving route, replays the case manifest at every concurrency level with the
complete agent, writes the run record (serving.record) and its chart and table,
and returns the run folder.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.runtime.traffic import TrafficPoster
from serving.charts import latency_cdf_png, table_markdown
from serving.compare import compare_summaries, comparison_markdown
from serving.endpoint import GenerationSettings, open_endpoint
from serving.metrics import speculative_level
from serving.profiles import ServingProfile
from serving.record import (
    DEFAULT_RUNS_DIR,
    RunWriter,
    build_summary,
    host_info,
    load_average,
    load_run,
    new_run_id,
    read_requests,
    utc_now,
)
from serving.replay import ReplayPlan, WorkerFactory, run_level
from serving.replay_cases import load_manifest

FactoryBuilder = Callable[..., WorkerFactory]
"""(endpoint=, bundle=, settings=, context=) -> WorkerFactory; agent_runner.agent_worker_factory by
default. `services(endpoint=, bundle=, run_dir=, catalogue_path=)` is a context manager for what all
requests of a run share (the MCP server process); its value is passed as `context`."""


def _post_traffic(traffic: TrafficPoster, say: Callable[[str], None]) -> dict[str, Any]:
    """Post what is left and say how it went; a studio that refused is recorded, not a failed
    replay."""
    from harness.runtime.traffic import TrafficPostError

    try:
        result = traffic.flush()
    except TrafficPostError as error:
        say(f"posting trajectories: {error}")
        return {"url": traffic.url, "stored": len(traffic.stored), "error": str(error)}
    say(
        f"posted to {traffic.url}: {len(result['stored'])} "
        f"stored, {len(result['duplicates'])} already there"
    )
    return {
        "url": traffic.url,
        "stored": len(result["stored"]),
        "duplicates": len(result["duplicates"]),
    }


def replay_run(
    *,
    profile: ServingProfile,
    harness_dir: str | Path,
    cases_path: str | Path,
    plan: ReplayPlan,
    settings: GenerationSettings,
    out_root: str | Path = DEFAULT_RUNS_DIR,
    run_id: str | None = None,
    factory_builder: FactoryBuilder | None = None,
    services: Callable[..., Any] | None = None,
    progress: Callable[[str], None] | None = None,
    trust_harness_commands: bool = False,
    traffic: TrafficPoster | None = None,
) -> Path:
    """Replay `cases_path` against `profile` under the Harness in `harness_dir`; returns the run
    folder.

    The Harness's MCP servers are checked against the MCP registry before the route starts
    (``McpServerRefused``); its inline server commands run only with ``trust_harness_commands``.
    ``traffic``: every request's trajectory is also posted to a studio deployment, with the served
    model."""
    from harness import load_dir
    from harness.mcp_registry import McpRegistry

    say = progress or (lambda _msg: None)
    bundle = load_dir(harness_dir)  # raises HarnessValidationError listing every problem
    McpRegistry.default().resolve(
        bundle.tool_registry, trust_harness_commands=trust_harness_commands
    )
    manifest = load_manifest(cases_path, warmup=plan.warmup, measured=plan.measured)
    if factory_builder is None:
        from serving import agent_runner

        factory_builder = agent_runner.agent_worker_factory
        services = services or functools.partial(
            agent_runner.shared_services, trust_harness_commands=trust_harness_commands
        )
    services = services or (lambda **_kw: contextlib.nullcontext(None))
    run_id = run_id or new_run_id(profile.name)
    writer = RunWriter(root=out_root, run_id=run_id)
    say(f"run {run_id}: {writer.dir}")
    meta: dict[str, Any] = {
        "run_id": run_id,
        "status": "running",
        "harness": {
            "name": bundle.name,
            "digest": bundle.digest,
            "dir": str(Path(harness_dir).resolve()),
        },
        "cases": manifest.describe(),
        "concurrency": list(plan.concurrency),
        "warmup": plan.warmup,
        "measured": plan.measured,
        "generation": settings.describe(),
        "timeouts": {
            "request_timeout_s": plan.request_timeout_s,
            "tool_timeout_s": bundle.constraints.get("tool_timeout_s"),
            "max_rounds": bundle.constraints.get("max_rounds"),
            "trajectory_budget_s": bundle.constraints.get("trajectory_budget_s"),
        },
        "sla_s": plan.sla_s,
        "host": host_info(),
        "started_at": utc_now(),
        "levels": [],
    }
    try:
        with open_endpoint(profile=profile, log_dir=writer.dir) as endpoint:
            meta["route"] = endpoint.describe()
            writer.write_json("run.json", meta)
            say(
                f"route {profile.name}: {endpoint.engine} at "
                f"{endpoint.base_url} serving {endpoint.model}"
            )
            with services(
                endpoint=endpoint,
                bundle=bundle,
                run_dir=writer.dir,
                catalogue_path=manifest.catalogue_path,
            ) as context:
                meta["services"] = context.describe() if hasattr(context, "describe") else None
                if traffic is not None:
                    traffic.model = {
                        k: v
                        for k, v in {
                            "name": endpoint.model,
                            "fingerprint": (endpoint.checkpoint or {}).get("fingerprint"),
                        }.items()
                        if v
                    }
                    context.traffic = traffic
                writer.write_json("run.json", meta)
                for level in plan.concurrency:
                    factory = factory_builder(
                        endpoint=endpoint, bundle=bundle, settings=settings, context=context
                    )
                    level_meta = {"concurrency": level, "started_at": utc_now()}
                    spec_before = endpoint.speculative_counters()
                    say(
                        f"C={level}: {len(manifest.warmup)} warm-up + "
                        f"{len(manifest.measured)} measured requests"
                    )
                    records = run_level(
                        concurrency=level,
                        warmup_cases=manifest.warmup,
                        measured_cases=manifest.measured,
                        worker_factory=factory,
                        request_timeout_s=plan.request_timeout_s,
                        on_record=lambda record: (
                            writer.record(record),
                            say(_progress_line(record)),
                        ),
                    )
                    level_meta["ended_at"] = utc_now()
                    level_meta["load_average"] = load_average()
                    level_meta["failed"] = sum(1 for r in records if not r["ok"])
                    speculative = speculative_level(spec_before, endpoint.speculative_counters())
                    if speculative:
                        level_meta["speculative"] = speculative
                    meta["levels"].append(level_meta)
                    writer.write_json("run.json", meta)
        meta["status"] = "finished"
        if traffic is not None:
            meta["traffic"] = _post_traffic(traffic, say)
    except BaseException as exc:
        meta["status"] = "aborted"
        meta["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        meta["ended_at"] = utc_now()
        writer.close()
        writer.write_json("run.json", meta)  # an aborted run keeps its record and its error
        if "route" in meta:
            _write_outputs(writer.dir, meta)
    return writer.dir


def _progress_line(record: dict[str, Any]) -> str:
    took = record.get("wall_s") or record.get("elapsed_s") or 0.0
    return (
        f"  C={record['concurrency']} {record['phase']:<8} {record['case_id']}: {record['status']} "
        f"in {took:.2f} s, {len(record.get('calls') or [])} model call(s)"
    )


def _write_outputs(run_dir: Path, meta: dict[str, Any]) -> None:
    records = read_requests(run_dir)
    summary = build_summary(run_meta=meta, records=records)
    (run_dir / "summary.json").write_text(_json(summary), encoding="utf-8")
    (run_dir / "table.md").write_text(table_markdown(summary), encoding="utf-8")
    if any(r.get("phase") == "measured" for r in records):
        latency_cdf_png(
            records=records,
            path=run_dir / "latency_cdf.png",
            title=f"{meta['run_id']} ({meta['route']['route']})",
            sla_s=meta["sla_s"],
        )


def rebuild_outputs(run: str | Path, *, root: str | Path = DEFAULT_RUNS_DIR) -> Path:
    """Recompute summary.json, table.md and the chart of a run from its requests.jsonl."""
    from serving.record import resolve_run_dir

    run_dir = resolve_run_dir(run, root=root)
    meta, _ = load_run(run_dir)
    _write_outputs(run_dir, meta)
    return run_dir


def runs_compare(
    *, run_a: str | Path, run_b: str | Path, root: str | Path = DEFAULT_RUNS_DIR
) -> tuple[dict, str]:
    """(comparison dict, Markdown) of two runs; ratios are B / A per metric and level."""
    _, a = load_run(run_a, root=root)
    _, b = load_run(run_b, root=root)
    comparison = compare_summaries(a, b)
    return comparison, comparison_markdown(comparison, a, b)


def runs_list(*, root: str | Path = DEFAULT_RUNS_DIR) -> list[dict[str, Any]]:
    """Every run folder under `root`, newest first: id, status, route, checkpoint, levels, times."""
    rows = []
    for meta_path in Path(root).glob("*/run.json"):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a run being written right now
        route = meta.get("route") or {}
        rows.append(
            {
                "run_id": meta.get("run_id", meta_path.parent.name),
                "status": meta.get("status"),
                "route": route.get("route"),
                "checkpoint": (route.get("checkpoint") or {}).get("name"),
                "concurrency": meta.get("concurrency"),
                "measured": meta.get("measured"),
                "started_at": meta.get("started_at"),
                "ended_at": meta.get("ended_at"),
                "error": meta.get("error"),
                "path": str(meta_path.parent),
            }
        )
    rows.sort(key=lambda r: r["started_at"] or "", reverse=True)
    return rows


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

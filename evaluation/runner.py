"""Runs a case set through the agent runtime under a Harness and a policy, judges every reply.

Per-case results are appended to ``OUT/results.jsonl`` as each case finishes
(trajectory and verdict included), so a killed run resumes where it stopped:
a re-run with the same ``--out`` skips the ids already there. ``OUT/run.json``
pins the Harness digest and the case file's sha256; resuming with a different
Harness or set is refused. At the end the report is written: ``report.json``,
``report.md`` and ``category_bars.png``.

Each case is scored by ``evaluation.scoring.CaseScorer`` (the case's Harness
variant, canned tools, the version's judge settings); this module only stores
rows and resumes. Concurrency: each worker thread has its own policy and
scorer (policies keep per-request state), so ``concurrency`` workers run cases
in parallel.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation import report as R
from evaluation.cases import load_cases
from evaluation.scoring import CaseScorer, judge_for
from evaluation.summary import summarize
from harness.jsonl import finished_lines
from harness.mcp_registry import McpRegistry
from harness.userfiles import InputFileError

RESULTS = "results.jsonl"


class RunConfigError(ValueError):
    """The output folder holds a run that does not match this one."""


@dataclass
class RunOutcome:
    out: Path
    done: int
    skipped: int
    summary: dict[str, Any]


def load_results(path: Path) -> list[dict]:
    """Finished rows of a results file; a torn last line (killed mid-write) is ignored. A row that
    is not an object with the ``id`` of its case is an InputFileError naming ``file:line`` (not a
    KeyError later)."""
    rows = []
    for number, row in finished_lines(path, what="results file"):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not row["id"]:
            shown = (
                "an object without 'id'"
                if isinstance(row, dict)
                else f"a JSON {type(row).__name__}"
            )
            raise InputFileError(
                f"{path}:{number}: {shown}; each line of a results file is a JSON object with "
                "the 'id' of the case it scored, as 'evaluation run' writes it"
            )
        rows.append(row)
    return rows


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve_catalogue(set_path: Path, cases: list[dict]):
    from harness.livestream.catalogue import Catalogue

    names = {c.get("catalogue") for c in cases if c.get("catalogue")}
    if len(names) > 1:
        raise ValueError(
            f"{set_path}: cases name several catalogues {sorted(names)}; one set, one catalogue"
        )
    if names:
        path = (set_path.parent / names.pop()).resolve()
        if not path.exists():
            raise FileNotFoundError(
                f"{set_path}: catalogue file {path} named by the cases does not exist"
            )
        return Catalogue.load(path)
    return None  # the Agent's default: the demo catalogue


def run_set(
    *,
    harness_dir: str | Path,
    set_path: str | Path,
    policy: str,
    out: str | Path,
    judge: str = "programmatic",
    concurrency: int = 1,
    limit: int | None = None,
    progress: bool = True,
    policy_factory: Callable[[], Any] | None = None,
    connect_mcp: bool = True,
    max_new_tokens: int | None = None,
    trajectory_budget_s: float | None = None,
    mcp_registry: McpRegistry | None = None,
    trust_harness_commands: bool = False,
) -> RunOutcome:
    """Evaluate ``set_path`` under the Harness at ``harness_dir`` with ``policy``; resumable.

    The Harness's MCP servers are resolved against ``mcp_registry`` (default: the CLIs')
    before any case runs; an unregistered or untrusted inline one raises ``McpServerRefused``."""
    from harness import load_dir
    from harness.policies import make_policy

    set_path, out = Path(set_path), Path(out)
    bundle = load_dir(harness_dir)
    mcp_registry = mcp_registry if mcp_registry is not None else McpRegistry.default()
    if connect_mcp:
        mcp_registry.resolve(bundle.tool_registry, trust_harness_commands=trust_harness_commands)
    mcp = {"mcp_registry": mcp_registry, "trust_harness_commands": trust_harness_commands}
    cases = load_cases(set_path)[:limit] if limit else load_cases(set_path)
    catalogue = resolve_catalogue(set_path, cases)
    config = {
        "harness_dir": str(harness_dir),
        "harness_name": bundle.name,
        "harness_digest": bundle.digest,
        "set": str(set_path),
        "set_name": set_path.stem,
        "set_sha256": _sha256(set_path),
        "policy": policy,
        "judge": judge,
        "limit": limit,
        "cases": len(cases),
        "max_new_tokens": max_new_tokens,
        "concurrency": concurrency,
        "trajectory_budget_s": trajectory_budget_s
        or bundle.prompt.constraints.get("trajectory_budget_s"),
    }
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / "run.json"
    if run_file.exists():
        old = json.loads(run_file.read_text(encoding="utf-8"))
        for key in ("harness_digest", "set_sha256", "policy", "judge"):
            if old.get(key) != config[key]:
                raise RunConfigError(
                    f"{out} holds a run with a different {key} "
                    f"({old.get(key)!r} != {config[key]!r}); "
                    "use a new --out folder"
                )
        config["started_at"] = old.get("started_at")
    else:
        config["started_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        run_file.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    results_path = out / RESULTS
    done_rows = load_results(results_path)
    done_ids = {row["id"] for row in done_rows}
    todo = [c for c in cases if c["id"] not in done_ids]

    judge_obj = judge_for(bundle, catalogue=catalogue or _demo_catalogue(), spec=judge)
    if policy_factory is None:
        from harness.policies import GenerationSettings

        settings = GenerationSettings(max_new_tokens=max_new_tokens) if max_new_tokens else None
        policy_factory = lambda: make_policy(policy, settings=settings)  # noqa: E731
    factory = policy_factory
    local = threading.local()
    scorers: list[CaseScorer] = []
    write_lock = threading.Lock()
    # rewrite the file without a torn tail before appending
    if results_path.exists():
        results_path.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in done_rows), encoding="utf-8"
        )

    def run_one(case: dict) -> dict:
        if not hasattr(local, "scorer"):
            local.scorer = CaseScorer.for_bundle(
                bundle=bundle,
                policy=factory(),
                catalogue=catalogue,
                judge=judge_obj,
                connect_mcp=connect_mcp,
                trajectory_budget_s=trajectory_budget_s,
                **mcp,
            )
            scorers.append(local.scorer)
        row = local.scorer.score(case)
        with write_lock, results_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            handle.flush()
        return row

    from tqdm import tqdm

    bar = tqdm(
        total=len(cases), initial=len(cases) - len(todo), desc=set_path.stem, disable=not progress
    )
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futures = [pool.submit(run_one, case) for case in todo]
            for future in as_completed(futures):
                future.result()
                bar.update(1)
    finally:
        bar.close()
        for scorer in scorers:
            scorer.close()
    rows = load_results(results_path)
    order = {c["id"]: i for i, c in enumerate(cases)}
    rows = sorted((r for r in rows if r["id"] in order), key=lambda r: order[r["id"]])
    config["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    summary = write_report(out=out, rows=rows, config=config)
    return RunOutcome(out=out, done=len(todo), skipped=len(done_ids), summary=summary)


def rejudge_run(*, run: str | Path, judge: str | None = None) -> list[dict]:
    """Score a run's stored replies and trajectories again (after a judge change), in place.

    ``results.jsonl`` is rewritten atomically; the model is not called.
    """
    from harness import load_dir

    run = Path(run)
    config = json.loads((run / "run.json").read_text(encoding="utf-8"))
    set_path = Path(config["set"])
    cases = {c["id"]: c for c in load_cases(set_path)}
    catalogue = resolve_catalogue(set_path, list(cases.values())) or _demo_catalogue()
    bundle = load_dir(config["harness_dir"])
    judge_obj = judge_for(bundle, catalogue=catalogue, spec=judge or config["judge"])
    rows = load_results(run / RESULTS)
    for row in rows:
        if row.get("error") or row["id"] not in cases:
            continue
        verdict = judge_obj.judge(
            case=cases[row["id"]],
            reply=row.get("reply", ""),
            route=row.get("route", "public"),
            trajectory=row.get("trajectory"),
        )
        row["verdict"] = verdict.to_dict()
    tmp = run / (RESULTS + ".tmp")
    tmp.write_text(
        "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows),
        encoding="utf-8",
    )
    tmp.replace(run / RESULTS)
    return rows


def _demo_catalogue():
    from harness.livestream import demo_catalogue

    return demo_catalogue()


def write_report(*, out: Path, rows: list[dict], config: dict) -> dict[str, Any]:
    summary = summarize(rows, config=config)
    (out / "report.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(R.markdown(summary), encoding="utf-8")
    R.category_chart(summary, out / "category_bars.png")
    return summary

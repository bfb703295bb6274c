"""Run rows whose folders hold what the real commands write, for the release tests.

A checkpoint is the tiny test model copied into ``RUN/sft/final``; a replay run's folder holds a
replay record written with ``serving.record``'s ``RunWriter`` and read back by the studio's own
reader (``read_folder_summary``: ``load_run`` recomputes the summary from the request timings);
an evaluation run's folder holds ``eval/summary.json`` written by ``training.runs.update_json``
in the shape ``training.self_eval`` writes. The gates read these rows exactly as they read runs
the workers ran.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.utils import timezone

from studio.jobs.models import Job
from studio.training.models import TrainingRun


def _run(
    *, kind: str, folder: Path, model: str = "", harness_version=None, steps=None, config=None
) -> TrainingRun:
    now = timezone.now()
    job = Job.objects.create(
        kind=f"test_{kind}",
        title=f"{kind} for a release test",
        status=Job.SUCCEEDED,
        params={},
        started_at=now,
        finished_at=now,
    )
    folder.mkdir(parents=True, exist_ok=True)
    return TrainingRun.objects.create(
        kind=kind,
        title=f"{kind} run",
        folder=str(folder),
        config_digest="0" * 64,
        model=model,
        harness_version=harness_version,
        job=job,
        steps=steps or [],
        config=config or {},
    )


def _read_summary(run: TrainingRun) -> TrainingRun:
    from studio.training.selectors import read_folder_summary

    run.summary = read_folder_summary(run=run)
    run.save(update_fields=["summary"])
    return run


def trained_checkpoint(folder: Path) -> TrainingRun:
    """A finished SFT run whose final/ is the tiny test model (so fingerprints and head checks are
    real)."""
    from harness.model_cache import tiny_model_dir

    final = folder / "sft" / "final"
    shutil.copytree(tiny_model_dir(), final)
    return _run(
        kind=TrainingRun.SFT,
        folder=folder,
        model="tiny",
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 1}},
    )


def replay_run(
    folder: Path,
    *,
    checkpoint: Path,
    walls: dict[int, list[float]],
    harness_version=None,
    harness_digest: str = "",
    route: str = "",
    status: str = "answered",
) -> TrainingRun:
    """A finished replay run that served ``checkpoint``: ``walls`` are the measured requests' wall
    times per concurrency level. Its Harness is ``harness_version`` (the row), or only
    ``harness_digest`` (a replay started with the demo Harness folder). ``status="fallback"``: every
    request ended in the Harness's fallback reply (as the driver records it: ok, counted apart)."""
    from harness.checkpoints import checkpoint_info
    from serving.record import RunWriter, utc_now

    route = route or f"local:{checkpoint}"
    run = _run(kind=TrainingRun.REPLAY, folder=folder, model=route, harness_version=harness_version)
    writer = RunWriter(root=folder, run_id="replay")
    for level, times in walls.items():
        for i, wall in enumerate(times):
            writer.record(
                {
                    "phase": "measured",
                    "concurrency": level,
                    "case_id": f"c{i}",
                    "ok": True,
                    "status": status,
                    "wall_s": wall,
                    "calls": [],
                    "has_trajectory": True,
                }
            )
    writer.close()
    digest = harness_version.digest if harness_version is not None else harness_digest
    writer.write_json(
        "run.json",
        {
            "run_id": "replay",
            "started_at": utc_now(),
            "ended_at": utc_now(),
            "status": "finished",
            "route": {
                "route": route,
                "engine": "local",
                "checkpoint": checkpoint_info(Path(checkpoint)),
            },
            "harness": {"digest": digest},
            "cases": {"digest": "0" * 64},
            "generation": {},
            "concurrency": sorted(walls),
            "levels": [{"concurrency": c} for c in sorted(walls)],
            "sla_s": 15.0,
        },
    )
    return _read_summary(run)


def _passes(share: float, n: int) -> list[bool]:
    passed = round(share / 100 * n)
    return [True] * passed + [False] * (n - passed)


def ifeval_run(
    folder: Path,
    *,
    model: Path,
    prompt_strict: float,
    n: int = 5,
    base_strict: float | None = None,
    base_model: str = "tiny",
) -> TrainingRun:
    """A finished checkpoint evaluation of ``model`` on the generated instruction-following set
    (``prompt_strict`` in percent, over ``n`` prompts) with its base's answers to the same prompts
    (``base_strict``, the same as ``prompt_strict`` unless given), as ``training.self_eval`` writes
    it."""
    from evaluation.ifeval import describe_source, load_ifeval_prompts
    from training.runs import update_json

    run = _run(kind=TrainingRun.EVAL, folder=folder, model=str(model))
    (folder / "eval").mkdir(parents=True, exist_ok=True)
    base_strict = prompt_strict if base_strict is None else base_strict
    mine, theirs = _passes(prompt_strict, n), _passes(base_strict, n)
    update_json(
        folder / "eval" / "summary.json",
        lambda current: current.update(
            {
                "model": str(model),
                "ifeval": {
                    "n": n,
                    "prompt_strict": 100 * sum(mine) / n,
                    "inst_strict": prompt_strict,
                    "per_prompt": mine,
                    "set": describe_source(prompts=load_ifeval_prompts(limit=n)),
                    "base": {
                        "model": base_model,
                        "n": n,
                        "prompt_strict": 100 * sum(theirs) / n,
                        "per_prompt": theirs,
                    },
                },
            }
        ),
    )
    return _read_summary(run)


def draft_head(checkpoint: Path, out: Path, *, card: dict | None = None) -> Path:
    """An adapted-shape draft head for ``checkpoint`` (fresh weights), its card naming
    ``checkpoint`` unless ``card`` says otherwise (a stale head names another policy)."""
    import torch

    from harness.checkpoints import checkpoint_info
    from serving.engine.draft_head import DraftHead
    from serving.engine.policy import load_model

    model, _ = load_model(checkpoint)
    torch.manual_seed(0)
    head = DraftHead.for_policy(model)
    card = (
        card
        if card is not None
        else {
            "stage": "mtp",
            "policy": str(checkpoint),
            "policy_fingerprint": checkpoint_info(Path(checkpoint))["fingerprint"],
        }
    )
    return head.save(out, policy_config=model.config, card=card)


def mtp_run(folder: Path, *, checkpoint: Path, card: dict | None = None) -> TrainingRun:
    """A finished studio MTP run whose final/ is a draft head for ``checkpoint`` (see
    ``draft_head``)."""
    run = _run(
        kind=TrainingRun.MTP,
        folder=folder,
        model=str(checkpoint),
        steps=[{"name": "mtp", "argv": [], "config_file": "mtp.yaml", "output": "mtp"}],
        config={"mtp": {}},
    )
    draft_head(checkpoint, run.final_dir, card=card)
    (run.final_dir.parent / "model_card.json").write_text('{"stage": "mtp"}\n', encoding="utf-8")
    return run

"""Writes for training runs: start one (folder, config files, commands, job), resume, run it, make
an endpoint.

``run_start`` writes the run folder the commands read (each step's YAML config, a studio Harness
version's files) and the row, then queues its job, all or nothing. The job (``run_execute``) runs
each step's command as written (``studio.training.runner``), reports progress and time left from
the metrics the trainers write, and records what the folder holds when it ends. A cancelled or
failed training run resumes from its last checkpoint: the same commands again, as the command
line would (``resume: true``; ``training.stage_common.start_stage`` finds the checkpoint).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import shlex
import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from harness.checkpoints import is_checkpoint
from harness.config_schema import dump_config
from studio.audit.services import audit_record
from studio.jobs.models import Job
from studio.jobs.registry import JobContext, JobFailed
from studio.jobs.services import job_create
from studio.training.configs import CONFIG_CLASSES, HARNESS_REF, harness_version
from studio.training.models import TrainingRun
from studio.training.presets import Preset, recipe_steps

JOB_KIND = {
    "sft": "train_sft",
    "opd": "train_opd",
    "rl": "train_rl",
    "pipeline": "train_pipeline",
    "mtp": "train_mtp",
    "ablation": "ablation_run",
    "eval": "checkpoint_eval",
    "replay": "replay_run",
}


class RunRefused(ValueError):
    """The run cannot start or resume; the message says why."""


# -- starting
# ------------------------------------------------------------------------------------------


def config_digest(*, config: dict[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def _write_harness(folder: Path, value: str):
    """A studio version's files as a Harness folder of the run (the commands take folders)."""
    from studio.harnesses.selectors import version_files

    version = harness_version(value)
    target = (folder / "harness" / version.harness.name).resolve()
    for path, text in version_files(version=version).items():
        file = (target / path).resolve()
        if not file.is_relative_to(
            target
        ):  # a stored bundle's paths are checked at import; stay sure
            raise RunRefused(f"harness: {value} has a file outside its folder ({path!r})")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    return version, str(target)


def _plan_steps(
    *, kind: str, config: Any, folder: Path, preset: Preset | None
) -> list[tuple[str, Any]]:
    return [
        (name, _without_progress_dir(step))
        for name, step in _steps_in_run_folder(
            kind=kind, config=config, folder=folder, preset=preset
        )
    ]


def _without_progress_dir(config: Any) -> Any:
    """The config with no progress folder, in its pipeline sections too: a studio run writes only
    under its own folder (``configs.STUDIO_OWNED``), whatever a recipe file says."""
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if field.name == "progress_dir" and value:
            changes[field.name] = ""
        elif dataclasses.is_dataclass(value):
            changes[field.name] = _without_progress_dir(value)
    return dataclasses.replace(config, **changes) if changes else config


def _steps_in_run_folder(
    *, kind: str, config: Any, folder: Path, preset: Preset | None
) -> list[tuple[str, Any]]:
    if preset is not None and preset.is_recipe:
        return recipe_steps(preset, CONFIG_CLASSES[kind], folder=folder)
    if (
        kind == TrainingRun.PIPELINE
    ):  # its stages resume (their own resume: true) and it skips finished ones
        return [(kind, dataclasses.replace(config, output_dir=str(folder / kind)))]
    if kind in TrainingRun.TRAINING_KINDS:
        return [(kind, dataclasses.replace(config, output_dir=str(folder / kind), resume=True))]
    if (
        kind == TrainingRun.ABLATION
    ):  # resumable by running it again: it skips the steps it has done
        return [(kind, dataclasses.replace(config, output_dir=str(folder / kind)))]
    if kind == TrainingRun.REPLAY:
        return [(kind, _replay_named(config))]
    return [(kind, config)]


def _replay_named(config: Any) -> Any:
    """A replay's config with its run folder's name: the form's ``run_id``, else ``replay`` (the
    run folder's replay/, where the dashboards look by default)."""
    return dataclasses.replace(config, run_id=config.run_id or "replay")


def step_argv(*, kind: str, config: Any, folder: Path, config_file: Path) -> tuple[list[str], str]:
    """(argv after ``python -m``, the output folder's name in the run folder) of one step."""
    if kind in TrainingRun.TRAINING_KINDS or kind == TrainingRun.ABLATION:
        command = "pipeline" if kind == TrainingRun.PIPELINE else kind
        return ["training", command, "--config", str(config_file)], Path(config.output_dir).name
    if kind == TrainingRun.EVAL:
        return config.argv(out=str(folder / "eval")), "eval"
    replay = _replay_named(config)
    return replay.argv(out=str(folder)), replay.run_id


def command_text(*, argv: list[str]) -> str:
    """The command a step runs, as a terminal would take it (each argument quoted where it needs
    it)."""
    return "python -m " + " ".join(shlex.quote(a) for a in argv)


def run_start(
    *, kind: str, config: Any = None, actor: User, preset: Preset | None = None, title: str = ""
) -> TrainingRun:
    """Write the run folder and its row and queue the job; nothing is kept if any of it fails."""
    if kind not in CONFIG_CLASSES:
        raise RunRefused(
            f"kind: {kind!r} is not a run kind; use one of {', '.join(CONFIG_CLASSES)}"
        )
    if preset is not None and preset.kind != kind:
        raise RunRefused(f"preset: {preset.name} is a {preset.kind} preset, not {kind}")
    root = Path(settings.TRAINING_RUNS_DIR)
    with transaction.atomic():
        run = TrainingRun.objects.create(
            kind=kind,
            title="",
            folder="",
            config_digest="",
            created_by=actor,
            preset=preset.name if preset else "",
        )
        folder = (root / f"run-{run.pk}").resolve()
        if folder.exists():  # left by another database (a reset demo): never reuse or remove it
            folder = folder.with_name(f"run-{run.pk}-{secrets.token_hex(3)}")
        folder.mkdir(parents=True)
        try:
            run.folder = str(folder)
            version = None
            steps, resolved = [], {}
            for name, step_config in _plan_steps(
                kind=kind, config=config, folder=folder, preset=preset
            ):
                harness = getattr(step_config, "harness", "demo")
                if HARNESS_REF.match(harness):
                    version, path = _write_harness(folder, harness)
                    step_config = dataclasses.replace(step_config, harness=path)
                config_file = folder / f"{name}.yaml"
                dump_config(step_config, config_file)
                argv, output = step_argv(
                    kind=kind, config=step_config, folder=folder, config_file=config_file
                )
                steps.append(
                    {"name": name, "argv": argv, "config_file": config_file.name, "output": output}
                )
                resolved[name] = dataclasses.asdict(step_config)
            first = next(iter(resolved.values()))
            run.steps, run.config, run.config_digest = (
                steps,
                resolved,
                config_digest(config=resolved),
            )
            run.model = str(
                first.get("model") or (first.get("route") if kind == TrainingRun.REPLAY else "")
            )
            run.harness_version = version
            run.parent = _run_of_checkpoint(run.model)
            run.title = (title or _default_title(kind=kind, config=first, preset=preset))[:200]
            run.save()
            run.job = job_create(
                kind=JOB_KIND[kind], title=run.title, params={"run_id": run.pk}, created_by=actor
            )
            run.save(update_fields=["job"])
            audit_record(
                actor=actor,
                action="training.start",
                target=f"run #{run.pk} {kind}",
                data={"title": run.title, "preset": run.preset, "config_digest": run.config_digest},
            )
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return run


def _run_of_checkpoint(model: str) -> TrainingRun | None:
    """The studio run whose final/ (or checkpoint-N/) ``model`` is, if any."""
    path = model.partition(":")[2] if model.startswith(("local:", "transformers:")) else model
    if not path.startswith("/"):
        return None
    root = Path(settings.TRAINING_RUNS_DIR).resolve()
    try:
        relative = Path(path).resolve().relative_to(root)
    except ValueError:
        return None
    match = re.fullmatch(r"run-(\d+)(-[0-9a-f]{6})?", relative.parts[0]) if relative.parts else None
    return TrainingRun.objects.filter(pk=int(match[1])).first() if match else None


def _default_title(*, kind: str, config: dict[str, Any], preset: Preset | None) -> str:
    label = dict(TrainingRun.KINDS)[kind]
    if preset is not None:
        return f"{preset.label} ({label})"
    if kind == TrainingRun.REPLAY:
        return f"{label}: {config.get('route')}"
    return f"{label}: {Path(str(config.get('model', ''))).name or config.get('model')}"


def run_resume(*, run: TrainingRun, actor: User) -> TrainingRun:
    """Run a stopped run's commands again: training resumes from its last checkpoint, an evaluation
    from its last scored item. A replay is measured in one go and is started afresh instead."""
    if run.kind == TrainingRun.REPLAY:
        raise RunRefused("a replay is measured in one go and cannot be resumed; start a new replay")
    if run.job is not None and run.job.is_active:
        raise RunRefused(
            f"training run #{run.pk} is still {run.job.get_status_display()} (job #{run.job.pk})"
        )
    if run.job is not None and run.job.status == Job.SUCCEEDED:
        raise RunRefused(f"training run #{run.pk} ran to its end; start a new run to train more")
    with transaction.atomic():
        run.job = job_create(
            kind=JOB_KIND[run.kind],
            title=f"{run.title} (attempt {run.attempts + 1})",
            params={"run_id": run.pk, "resume": True},
            created_by=actor,
        )
        run.attempts += 1
        run.save(update_fields=["job", "attempts"])
        audit_record(
            actor=actor,
            action="training.resume",
            target=f"run #{run.pk} {run.kind}",
            data={"attempt": run.attempts},
        )
    return run


# -- running (in the worker)
# -------------------------------------------------------------------------------


def _step_finished(run: TrainingRun, step: dict[str, Any]) -> bool:
    from training.runs import is_finished

    if not run.is_training:
        return False
    if step["name"].startswith(TrainingRun.PIPELINE):  # the pipeline skips its own finished stages
        return is_checkpoint(run.final_dir)
    return is_finished(run.path / step["output"])


def run_execute(*, run_id: int, context: JobContext) -> dict[str, Any]:
    """The job: each step's command in order (finished steps skipped), then the folder's result."""
    from studio.training.runner import command_argv, run_command
    from studio.training.selectors import read_folder_summary, run_dashboard, run_progress

    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is None:
        raise JobFailed(f"training run #{run_id} no longer exists")
    reported = {"steps": -1}

    def tick() -> None:
        if run.kind == TrainingRun.ABLATION:
            from studio.training.selectors import ablation_progress

            done, total = ablation_progress(run=run)
            if done != reported["steps"]:
                reported["steps"] = done
                context.progress(
                    int(100 * done / total) if total else 0, f"ablation step {done}/{total} done"
                )
            else:
                context.progress(int(100 * done / total) if total else 0)
            return
        if not run.is_training:  # evaluation and replay: the items scored, the requests recorded
            from studio.training.live import run_live

            context.progress(run_live(run).percent)  # also the cancel check
            return
        progress = run_progress(run=run)
        if progress.steps_done != reported["steps"]:
            reported["steps"] = progress.steps_done
            loss = progress.last.get("loss")
            loss_text = f", loss {loss:.4g}" if isinstance(loss, int | float) else ""
            eta = f", {progress.as_dict()['eta']}" if progress.eta_s is not None else ""
            context.progress(
                progress.percent,
                f"step {progress.steps_done}/{progress.steps_total}{loss_text}{eta}",
            )
        else:
            context.progress(progress.percent)

    for number, step in enumerate(run.steps, start=1):
        if _step_finished(run, step):
            context.log(f"step {number}/{len(run.steps)} {step['name']}: already finished, skipped")
            continue
        launcher = (
            settings.TRAINING_LAUNCHER if step["argv"][0] == "training" and run.is_training else ""
        )
        shown = (
            shlex.join(command_argv(step["argv"], launcher=launcher))
            if launcher
            else command_text(argv=step["argv"])
        )
        context.log(f"step {number}/{len(run.steps)} {step['name']}: {shown}")
        code, tail = run_command(step["argv"], log=context.log, on_tick=tick, launcher=launcher)
        if code != 0:
            # what finished is kept and shown: an evaluation whose one set failed still has the
            # others' scores
            TrainingRun.objects.filter(pk=run.pk).update(summary=read_folder_summary(run=run))
            reason = next(
                (line for line in reversed(tail) if line.startswith("error:")),
                tail[-1] if tail else "",
            )
            raise JobFailed(
                f"{step['name']}: `{command_text(argv=step['argv'])}` exited with {code}"
                + (f": {reason}" if reason else "")
            )
    summary = read_folder_summary(run=run)
    TrainingRun.objects.filter(pk=run.pk).update(summary=summary)
    if run.is_training:
        run_dashboard(
            run=run, ended=True
        )  # the finished run's curves, kept in the studio's cache (shared on Redis)
    result = {"run_id": run.pk, "kind": run.kind, "summary": summary}
    if run.is_policy and not settings.FOLLOW_ON_JOBS:
        context.log(
            "compatibility: follow-on jobs are turned off (FOLLOW_ON_JOBS=0); ask for its cells on "
            "the compatibility page"
        )
    elif (
        run.is_policy
    ):  # a checkpoint entered the registry: the apps that react to it queue their jobs
        from studio.training.signals import checkpoint_registered

        follow_on = [
            answer
            for _, answer in checkpoint_registered.send(sender=TrainingRun, run=run)
            if answer
        ]
        for _job, sentence in follow_on:
            context.log(sentence)
        # a receiver that decided against a follow-on (a smoke run) answers (None, why)
        if any(job is not None for job, _ in follow_on):
            result["follow_on_jobs"] = [job.pk for job, _ in follow_on if job is not None]
    return result


# -- the registry's one click
# ------------------------------------------------------------------------------


def checkpoint_endpoint_create(*, run: TrainingRun, actor: User):
    """A local-route model endpoint serving the run's final model (named after the run)."""
    from studio.endpoints.models import ModelEndpoint
    from studio.endpoints.services import endpoint_save

    final = run.final_dir
    if not run.is_policy:
        raise RunRefused(
            f"training run #{run.pk} is an {run.get_kind_display()} "
            "run: its final/ is a draft head, not a "
            "model to serve; serve the policy it drafts for with --draft-head (docs/serving.md)"
        )
    if not is_checkpoint(final):
        raise RunRefused(f"training run #{run.pk} has no trained model yet (no {final})")
    existing = ModelEndpoint.objects.filter(route=ModelEndpoint.LOCAL, model=str(final)).first()
    if existing is not None:
        return existing
    base = f"run-{run.pk}-{run.kind}"
    name, n = base, 1
    while ModelEndpoint.objects.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return endpoint_save(
        endpoint=None,
        name=name,
        route=ModelEndpoint.LOCAL,
        base_url="",
        model=str(final),
        description=f"{run.title} (training run #{run.pk}, {final})",
        actor=actor,
    )

"""What a run page shows while its run goes: status, progress, a time-left estimate and the log
tail.

Every kind of run reports the same four things, read from what the run writes as it goes, so the
page's live panel (``training/_run_live.html``, polled every 2 s while the job is active) needs no
kind of its own:

- a training run: optimizer steps done of the steps planned, from its ``metrics.jsonl``
  (``selectors.run_progress``, whose time left comes from the step times);
- a checkpoint evaluation: scored items of the items planned (each set's JSONL rows, the
  instruction-following prompts and, once, its base's answers to them);
- a deployment replay: requests recorded in ``RUN/replay/requests.jsonl`` of the levels x
  (warm-up + measured) planned;
- an ablation: its finished steps (``selectors.ablation_progress``).

The time left of a run that counts items is the elapsed time since the job started, scaled by what
is left; "" until something is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.training.models import TrainingRun


@dataclass(frozen=True)
class LiveState:
    done: int
    total: int
    unit: str  # "step", "item", "request"
    eta: str = ""

    @property
    def percent(self) -> int:
        return min(100, int(100 * self.done / self.total)) if self.total else 0

    @property
    def text(self) -> str:
        if not self.total:
            return ""
        counted = (
            f"{self.unit} {self.done}/{self.total}"
            if self.unit == "step"
            else f"{self.done} of {self.total} {self.unit}s"
        )
        return counted + (f" · {self.eta}" if self.eta else "")


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    except OSError:
        return 0


def _step_config(run: TrainingRun) -> dict[str, Any]:
    """The resolved config of a one-step run (an evaluation's, a replay's)."""
    configs = run.config if isinstance(run.config, dict) else {}
    first = next(iter(configs.values()), {})
    return first if isinstance(first, dict) else {}


def _eval_counts(run: TrainingRun) -> tuple[int, int]:
    config = _step_config(run)
    sets = config.get("sets") or []
    cases, prompts = int(config.get("cases") or 0), int(config.get("ifeval") or 0)
    planned = {
        "live_qa": cases,
        "variant_qa": cases,
        "prompt_robustness": max(1, cases // 2),
        "ifeval": prompts,
    }
    folder = run.path / "eval"
    done = total = 0
    for name in sets:
        if name not in planned:
            continue
        total += planned[name]
        done += min(planned[name], _lines(folder / f"{name}.jsonl"))
        if name == "ifeval" and _base_answers_ifeval(
            config, folder
        ):  # the base answers the same prompts
            total += planned[name]
            done += min(planned[name], _lines(folder / "ifeval_base.jsonl"))
    return done, total


def _base_answers_ifeval(config: dict[str, Any], folder: Path) -> bool:
    """Whether the evaluation will also have the checkpoint's base answer the instruction-following
    prompts (``training.self_eval``: ``ifeval_base``, and a model whose card names another base),
    known before the base starts, so the planned count does not grow mid-run."""
    from training.runs import base_model_of

    if (folder / "ifeval_base.jsonl").is_file():
        return True
    if str(config.get("ifeval_base", True)).lower() in ("false", "0", "no"):
        return False
    model = Path(str(config.get("model") or "")).expanduser()
    if not model.is_dir():  # 'local', 'tiny': a base model itself
        return False
    return Path(base_model_of(model)).resolve() != model.resolve()


def _replay_counts(run: TrainingRun) -> tuple[int, int]:
    config = _step_config(run)
    levels = config.get("concurrency") or []
    per_level = int(config.get("warmup") or 0) + int(config.get("measured") or 0)
    total = len(levels) * per_level
    return min(total, _lines(run.replay_dir / "requests.jsonl")), total


def run_live(run: TrainingRun) -> LiveState:
    """Where the run stands now, from what it has written."""
    from studio.training import selectors

    if run.is_training:
        progress = selectors.run_progress(run=run)
        return LiveState(
            progress.steps_done, progress.steps_total, "step", progress.as_dict()["eta"]
        )
    if run.kind == TrainingRun.ABLATION:
        done, total = selectors.ablation_progress(run=run)
        unit = "step"
    elif run.kind == TrainingRun.EVAL:
        done, total = _eval_counts(run)
        unit = "item"
    else:
        done, total = _replay_counts(run)
        unit = "request"
    return LiveState(done, total, unit, _eta(run, done, total))


def _eta(run: TrainingRun, done: int, total: int) -> str:
    from django.utils import timezone

    from studio.durations import time_left

    job = run.job
    if job is None or job.started_at is None or not job.is_active or not 0 < done < total:
        return ""
    elapsed = (timezone.now() - job.started_at).total_seconds()
    return time_left(elapsed * (total - done) / done)


def live_context(run: TrainingRun) -> dict[str, Any]:
    """The live panel's context: the run, its job and where it stands."""
    from studio.jobs.selectors import job_wait

    return {
        "run": run,
        "job": run.job,
        "live": run_live(run),
        "wait": job_wait(job=run.job) if run.job else None,
    }

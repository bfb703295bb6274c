"""The trainer callbacks every stage registers: a metrics.jsonl row per log, a stop after N steps,
and the learning-rate schedule's step on a resume without optimizer state.

Apart from training.runs (which reads run folders) so that the studio, which reads them too, does
not import transformers and torch (seconds per process) to do so.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from training.runs import append_metrics, drop_metrics_after


class StopAfterSteps(TrainerCallback):
    """Ends training after ``steps`` optimizer steps; the learning-rate schedule keeps its
    length."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.steps:
            control.should_training_stop = True
            control.should_save = True  # a resumable checkpoint at the step it stopped
        return control


class ScheduleAtResumedStep(TrainerCallback):
    """On a resume from a checkpoint without optimizer state (a progress folder's,
    ``training.runs.export_progress``), transformers loads neither the optimizer nor the
    learning-rate scheduler, so the schedule would restart at its warm-up: step it on to the
    resumed step."""

    def on_train_begin(self, args, state, control, lr_scheduler=None, **kwargs):
        if lr_scheduler is None:
            return
        import warnings

        with warnings.catch_warnings():  # "lr_scheduler.step() before optimizer.step()"
            warnings.simplefilter("ignore")
            while lr_scheduler.last_epoch < state.global_step:
                lr_scheduler.step()


class MetricsLogger(TrainerCallback):
    """Appends every trainer log (loss, rewards per dimension, KL, lengths) to metrics.jsonl.

    Adds ``tokens_per_s`` from the trainer's token counter (``num_input_tokens_seen``)
    between two logs, so throughput is comparable across stages.
    """

    def __init__(self, path: str | Path, *, stage: str) -> None:
        self.path = Path(path)
        self.stage = stage
        self._last_time: float | None = None
        self._last_tokens: float = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        if (
            not state.is_world_process_zero
        ):  # one row per step under `accelerate launch`, not one per process
            return
        drop_metrics_after(self.path, state.global_step)
        self._last_time = time.perf_counter()
        self._last_tokens = float(state.num_input_tokens_seen or 0)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or not state.is_world_process_zero:
            return
        row: dict[str, Any] = {
            "stage": self.stage,
            "step": state.global_step,
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        for key, value in logs.items():
            if isinstance(value, int | float | str | bool) or value is None:
                row[key] = value
        now = time.perf_counter()
        tokens = float(state.num_input_tokens_seen or logs.get("num_tokens") or 0)
        if self._last_time is not None and now > self._last_time and tokens > self._last_tokens:
            row["tokens_per_s"] = round((tokens - self._last_tokens) / (now - self._last_time), 2)
        self._last_time, self._last_tokens = now, tokens
        append_metrics(self.path, row)

"""Run folders: resolved config, metrics JSONL, checkpoints, final model and model card.

A stage run owns one folder::

    RUN/config.json        the resolved config (every field, defaults included)
    RUN/metrics.jsonl      one JSON object per logging step (loss, rewards, KL, lengths, tokens/s;
                       written by training.runs.append_metrics)
    RUN/checkpoint-N/      resumable trainer checkpoints (safetensors + optimizer state)
    RUN/final/             the trained model (safetensors) + tokenizer, loadable by the runtime
    RUN/MODEL_CARD.md      base model, data, Harness version digest, stage and parent checkpoint
    RUN/model_card.json    the same facts as JSON
    RUN/eval.json          optional self-evaluation scores after the stage

A run with a ``progress_dir`` also keeps a committable copy of where it stands there
(``export_progress``): the last checkpoint without its optimizer state, the config, the data report
and the metrics. A run folder on another machine resumes from it (``import_progress``).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HARNESS_STUDIO_STAGES = ("sft", "opd", "rl", "mtp")


_CHECKPOINT = re.compile(r"checkpoint-(\d+)")


def last_checkpoint(run_dir: str | Path) -> Path | None:
    """The highest-numbered complete ``checkpoint-N`` folder, or None."""
    complete = [
        child
        for child in Path(run_dir).glob("checkpoint-*")
        if _CHECKPOINT.fullmatch(child.name) and (child / "trainer_state.json").is_file()
    ]
    return max(complete, key=checkpoint_step, default=None)


#: what a progress folder leaves out of a checkpoint: the optimizer state (Adam's two moments, twice
#: the size of the weights it trains), the tokenizer (the base model's; a resume does not read it),
#: the pickled training arguments (config.json holds them) and PEFT's blank model-card template
PROGRESS_LEFT_OUT = frozenset(
    {
        "optimizer.pt",
        "optimizer.bin",
        "README.md",
        "training_args.bin",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.json",
        "merges.txt",
        "added_tokens.json",
        "chat_template.jinja",
    }
)
#: the run's own files a progress folder carries beside its checkpoint
PROGRESS_RUN_FILES = ("config.json", "data_report.json", "metrics.jsonl")
PROGRESS_FILE = "progress.json"
#: files of ``RUN/final/`` (a LoRA adapter's) that name its base: the same for every step of a run,
#: so the exported checkpoint loads as an adapter too (``--model PROGRESS/checkpoint-N``)
ADAPTER_BASE_FILES = ("adapter_base.json", "adapter_config.json")


def read_progress(progress_dir: str | Path) -> dict[str, Any] | None:
    """The facts ``export_progress`` wrote (step, data digest, what was left out), or None when the
    folder holds no progress."""
    path = Path(progress_dir) / PROGRESS_FILE
    if not path.is_file():
        return None
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error}); export the progress again") from None
    step = facts.get("step") if isinstance(facts, dict) else None
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise ValueError(f"{path}: 'step' must be the exported checkpoint's step, got {step!r}")
    checkpoint = Path(progress_dir) / f"checkpoint-{step}"
    return facts if (checkpoint / "trainer_state.json").is_file() else None


def export_progress(
    run_dir: str | Path, progress_dir: str | Path, *, facts: dict[str, Any] | None = None
) -> Path:
    """Copy where ``run_dir`` stands into ``progress_dir``, small enough to commit: its last
    checkpoint without ``PROGRESS_LEFT_OUT`` (a LoRA run's: the adapter, about 20 MB for rank 16
    on every linear layer of SmolLM2-135M, where the checkpoint with Adam's state is three times
    that), the run's config, data report and metrics, and ``progress.json`` (the step, ``facts``
    such as the examples' digest, what was left out). An older checkpoint there is replaced.
    Returns the exported checkpoint."""
    run_dir, progress_dir = Path(run_dir), Path(progress_dir)
    checkpoint = last_checkpoint(run_dir)
    if checkpoint is None:
        raise FileNotFoundError(f"{run_dir}: no checkpoint-N to export")
    step = checkpoint_step(checkpoint)
    progress_dir.mkdir(parents=True, exist_ok=True)
    staging = progress_dir / f".checkpoint-{step}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    left_out = []
    for file in sorted(checkpoint.iterdir()):
        if file.name in PROGRESS_LEFT_OUT or not file.is_file():
            left_out.append(file.name)
            continue
        shutil.copy2(file, staging / file.name)
    final = final_model_dir(run_dir)
    for name in ADAPTER_BASE_FILES:
        if (staging / "adapter_model.safetensors").is_file() and (final / name).is_file():
            shutil.copy2(final / name, staging / name)
    for old in progress_dir.glob("checkpoint-*"):
        if _CHECKPOINT.fullmatch(old.name):
            shutil.rmtree(old)
    staging.rename(progress_dir / checkpoint.name)
    for name in PROGRESS_RUN_FILES:
        if (run_dir / name).is_file():
            shutil.copy2(run_dir / name, progress_dir / name)
    record = {
        "step": step,
        "run_dir": str(run_dir),
        "left_out": left_out,
        "resume": "the optimizer state is left out: a resume from this folder starts Adam's "
        "moments afresh and keeps the learning-rate schedule at this step",
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        **(facts or {}),
    }
    (progress_dir / PROGRESS_FILE).write_text(
        json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return progress_dir / checkpoint.name


def import_progress(progress_dir: str | Path, run_dir: str | Path, *, step: int) -> Path:
    """Copy ``progress_dir``'s ``checkpoint-<step>`` and metrics into ``run_dir`` (the caller has
    found it further on than the run's own checkpoints); returns the checkpoint copied in."""
    run_dir, progress_dir = Path(run_dir), Path(progress_dir)
    target = run_dir / f"checkpoint-{step}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(progress_dir / f"checkpoint-{step}", target)
    metrics = progress_dir / "metrics.jsonl"
    if metrics.is_file():
        shutil.copy2(metrics, run_dir / "metrics.jsonl")
    return target


def checkpoint_step(checkpoint: str | Path) -> int:
    """N of a ``checkpoint-N`` folder."""
    match = _CHECKPOINT.fullmatch(Path(checkpoint).name)
    if not match:
        raise ValueError(f"{checkpoint}: not a checkpoint-N folder")
    return int(match.group(1))


def update_json(path: str | Path, update: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Read-modify-write the JSON object in ``path`` under an exclusive lock on ``path``.lock,
    re-reading it first, so processes running side by side (``ablation --step``) keep each other's
    changes."""
    from filelock import FileLock

    path = Path(path)
    with FileLock(path.with_suffix(".lock")):
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        update(data)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def final_model_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "final"


def is_finished(run_dir: str | Path) -> bool:
    """A stage is finished when its final model and model card are written."""
    from harness.checkpoints import checkpoint_problem

    return (
        checkpoint_problem(final_model_dir(run_dir)) is None
        and (Path(run_dir) / "model_card.json").is_file()
    )


def drop_metrics_after(path: str | Path, step: int) -> None:
    """On resume: the rows logged after the checkpoint were lost with it and will be logged again
    (so was a line torn by the kill that stopped the run)."""
    path = Path(path)
    if path.is_file():
        kept = [row for row in parse_metrics(path.read_bytes()) if row.get("step", 0) <= step]
        path.write_text(
            "".join(json.dumps(row, sort_keys=True) + "\n" for row in kept), encoding="utf-8"
        )


def append_metrics(path: str | Path, row: dict[str, Any]) -> None:
    """Append one row to metrics.jsonl: the one writer of the file (every trainer's log step, the
    MTP stage's included). One line a row, keys sorted, written in one call so a reader sees it
    whole or not at all (``parse_metrics`` leaves a half-written last line for the next read)."""
    with Path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")


def parse_metrics(data: bytes) -> list[dict[str, Any]]:
    """The rows of metrics.jsonl bytes, in file order: each line that is a JSON object.

    The one reader of the file (the trainers' resume, ``read_metrics``, the studio's dashboards). A
    trainer appends a row per logging step while others read, so the last line may be half-written,
    and a killed run may leave a torn line: a line that is not a JSON object is left out (it is
    logged again, or read once it is complete)."""
    lines = [line for line in data.splitlines() if line.strip()]
    # one parse of the whole block (far faster than a call per line); line by line if one is broken
    try:
        rows = json.loads(b"[" + b",".join(lines) + b"]") if lines else []
    except ValueError:
        rows = []
        for line in lines:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return [row for row in rows if isinstance(row, dict)]


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of ``run_dir/metrics.jsonl`` (``parse_metrics``); [] before the first is logged."""
    path = Path(run_dir) / "metrics.jsonl"
    try:
        return parse_metrics(path.read_bytes())
    except FileNotFoundError:
        return []


@dataclass
class ModelCard:
    """What a checkpoint is: enough to reproduce or audit it."""

    stage: str
    base_model: str
    parent_checkpoint: str
    data: dict[str, Any]
    harness_name: str
    harness_digest: str
    steps: int
    wall_time_s: float
    trainer: str
    extra: dict[str, Any] = field(default_factory=dict)

    def write(self, run_dir: str | Path) -> None:
        run_dir = Path(run_dir)
        facts = dict(self.__dict__)
        facts["written"] = datetime.now(UTC).isoformat(timespec="seconds")
        (run_dir / "model_card.json").write_text(
            json.dumps(facts, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        data_lines = "\n".join(f"- {k}: {v}" for k, v in sorted(self.data.items()))
        text = (
            f"# Harness-Aware Training checkpoint: stage {self.stage}\n\n"
            f"- stage: {self.stage} (trainer: {self.trainer})\n"
            f"- base model: {self.base_model}\n"
            f"- parent checkpoint: {self.parent_checkpoint}\n"
            f"- Harness: {self.harness_name} (version digest {self.harness_digest})\n"
            f"- steps: {self.steps}, wall time: {self.wall_time_s:.1f} s\n\n"
            f"## Data\n\n{data_lines}\n\n"
            + (
                "Serve with `--draft-head <this folder>/final` (`python -m serving engine-server`, "
                "`python -m serving sglang-command`).\n"
                if self.stage == "mtp"
                else "Load with `make_policy('local:<this folder>/final')` or "
                "`python -m harness run --policy local:<this folder>/final`.\n"
            )
        )
        (run_dir / "MODEL_CARD.md").write_text(text, encoding="utf-8")
        final = final_model_dir(run_dir)
        if final.is_dir():
            (final / "README.md").write_text(text, encoding="utf-8")


def read_model_card(run_dir: str | Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "model_card.json").read_text(encoding="utf-8"))


def base_model_of(model_dir: str | Path) -> str:
    """The original base model a checkpoint descends from (read from its model card chain)."""
    card = Path(model_dir).parent / "model_card.json"
    if Path(model_dir).name == "final" and card.is_file():
        return json.loads(card.read_text(encoding="utf-8")).get("base_model", str(model_dir))
    return str(model_dir)

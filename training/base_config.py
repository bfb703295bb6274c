"""Fields every training stage shares, and loading a stage config from YAML/JSON.

Each stage has a ``<stage>_config.py`` dataclass that extends ``StageConfig``;
every field carries a ``help`` text, which is also what ``python -m training
<stage> --help`` prints. ``load_config`` reads a YAML or JSON file (JSON is
YAML), rejects unknown keys and wrong types with the file, line and field, and
lists what would be valid.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness.numbers import decimal_int
from harness.userfiles import read_text
from harness.yamlio import load_yaml

C = TypeVar("C", bound="StageConfig")


class ConfigError(ValueError):
    """A config file or flag that cannot be used; the message names file, line and field."""


@dataclass
class StageConfig:
    """Settings shared by the SFT, OPD and RL stages."""

    model: str = field(default="local", metadata={"help": (
        "Model to start from: 'local' (SmolLM2-135M-Instruct, the default model), 'tiny' "
        "(2-layer random model for tests) or a checkpoint folder (e.g. the previous stage's final/).")})
    output_dir: str = field(default="runs/hat", metadata={"help": (
        "Run folder: resolved config, metrics.jsonl, checkpoints, final model and model card.")})
    harness: str = field(default="demo", metadata={"help": (
        "Harness folder the stage trains under ('demo' = the shipped livestream-avatar Harness).")})
    max_steps: int = field(default=60, metadata={"help": "Optimizer steps of this stage."})
    stop_after_steps: int = field(default=0, metadata={"help": (
        "Stop after this many steps while the learning-rate schedule still runs over max_steps "
        "(0: train all max_steps). For reproducing a run that was cut short at a checkpoint.")})
    learning_rate: float = field(default=2e-5, metadata={"help": "Peak learning rate (AdamW)."})
    per_device_train_batch_size: int = field(default=2, metadata={"help": "Examples per forward pass."})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "Forward passes per optimizer step."})
    gradient_checkpointing: bool = field(default=False, metadata={"help": (
        "Recompute each layer's activations in the backward pass instead of keeping them: about a third "
        "more compute for far less memory. On CPU, padded batches use PyTorch's attention math path, "
        "which keeps a full attention matrix per layer (about 18 GB for 2 x 4,096 tokens on SmolLM2-135M).")})
    warmup_steps: int = field(default=0, metadata={"help": "Linear warm-up steps of the learning rate."})
    logging_steps: int = field(default=1, metadata={"help": "Write a metrics.jsonl row every N steps."})
    save_steps: int = field(default=20, metadata={"help": (
        "Save a resumable checkpoint every N steps (checkpoint-N/ in the run folder).")})
    save_total_limit: int = field(default=2, metadata={"help": "Keep at most this many checkpoints."})
    resume: bool = field(default=True, metadata={"help": (
        "Resume from the run folder's last checkpoint when one exists.")})
    seed: int = field(default=0, metadata={"help": "Seed for data order, sampling and augmentation."})
    report_to: list[str] = field(default_factory=lambda: ["none"], metadata={"help": (
        "Trackers TRL reports to (passed through to transformers): e.g. ['wandb'], ['tensorboard'], "
        "['trackio'], or ['none'].")})
    lora_rank: int = field(default=0, metadata={"help": (
        "Train a LoRA adapter (PEFT) of this rank instead of every weight; 0 trains the whole model. "
        "The run's final/ then holds only the adapter (adapter_config.json, adapter_model.safetensors) and "
        "adapter_base.json naming its base model; every route runs it (docs/training.md, 'Adapters').")})
    lora_alpha: float = field(default=0.0, metadata={"help": (
        "LoRA scaling numerator (the update is scaled by alpha/rank); 0: twice the rank.")})
    lora_dropout: float = field(default=0.0, metadata={"help": "Dropout on the LoRA input, 0 to below 1."})
    lora_target_modules: list[str] = field(default_factory=lambda: ["all-linear"], metadata={"help": (
        "Modules that get an adapter: 'all-linear' (every linear layer but the output head) or module "
        "names such as q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj.")})
    evaluate_after: bool = field(default=False, metadata={"help": (
        "After training, score the final model on subsets of the evaluation sets and write eval.json.")})
    eval_cases: int = field(default=20, metadata={"help": (
        "Cases per evaluation subset when evaluate_after is on.")})

    def peft_config(self):
        """The PEFT LoraConfig these settings ask for, or None to train every weight."""
        if not self.lora_rank:
            return None
        from peft import LoraConfig

        targets = self.lora_target_modules
        return LoraConfig(r=self.lora_rank, lora_alpha=self.lora_alpha or 2 * self.lora_rank,
                          lora_dropout=self.lora_dropout, task_type="CAUSAL_LM",
                          target_modules="all-linear" if targets == ["all-linear"] else list(targets))

    @classmethod
    def help_texts(cls) -> dict[str, str]:
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def check(self) -> str:
        """The first problem with the values, as ``field: what is wrong``, or ''."""
        for name in ("max_steps", "per_device_train_batch_size", "gradient_accumulation_steps", "logging_steps",
                     "save_steps", "save_total_limit", "eval_cases"):
            if getattr(self, name) < 1:
                return f"{name}: must be at least 1, got {getattr(self, name)}"
        if self.warmup_steps < 0:
            return f"warmup_steps: must be 0 or more, got {self.warmup_steps}"
        if not self.learning_rate > 0:
            return f"learning_rate: must be above 0, got {self.learning_rate}"
        if not self.report_to:
            return "report_to: give ['none'] or one or more trackers, e.g. ['tensorboard']"
        if self.lora_rank < 0:
            return f"lora_rank: must be 0 (train every weight) or a rank of 1 or more, got {self.lora_rank}"
        if self.lora_rank and self.lora_alpha < 0:
            return f"lora_alpha: must be above 0 (or 0 for twice the rank), got {self.lora_alpha}"
        if not 0.0 <= self.lora_dropout < 1.0:
            return f"lora_dropout: must be at least 0 and below 1, got {self.lora_dropout}"
        if self.lora_rank and not self.lora_target_modules:
            return "lora_target_modules: name at least one module, or 'all-linear'"
        if not 0 <= self.stop_after_steps <= self.max_steps:
            return (f"stop_after_steps: must be between 0 (off) and max_steps ({self.max_steps}), "
                    f"got {self.stop_after_steps}")
        return ""


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp)).replace("typing.", "")


def coerce(value: Any, tp: Any, *, where: str) -> Any:
    """Check (and gently convert) one value against a field type; ``ConfigError`` otherwise."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option, where=where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(_type_name(o) for o in options)}")
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [coerce(v, item, where=f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        key_type, value_type = typing.get_args(tp) or (Any, Any)
        return {coerce(k, key_type, where=where): coerce(v, value_type, where=f"{where}.{k}")
                for k, v in value.items()}
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        if isinstance(value, int):
            return value
        number = decimal_int(value, max_digits=18)
        if number is not None:
            return number
        raise ConfigError(f"{where}: expected an integer, got {str(value)[:60]!r}")
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def _resolved_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def config_from_dict(cls: type[C], data: dict[str, Any], *, source: str = "config",
                     lines: dict[str, int] | None = None) -> C:
    """Build ``cls`` from a mapping; unknown keys and bad values name their line and the valid fields."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a config is a mapping of field: value, got {type(data).__name__}")
    hints = _resolved_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        line = (lines or {}).get(key)
        where = f"{source}:{line}: {key}" if line else f"{source}: {key}"
        if key not in names:
            raise ConfigError(f"{where}: unknown field for {cls.__name__}; valid fields: {', '.join(names)}")
        tp = hints[key]
        if dataclasses.is_dataclass(tp) and isinstance(value, dict):
            kwargs[key] = config_from_dict(tp, value, source=f"{source} ({key})")
        else:
            kwargs[key] = coerce(value, tp, where=where)
    config = cls(**kwargs)
    check = getattr(config, "check", None)
    if callable(check):
        problem = check()
        if problem:  # "field: what is wrong": point at the field's line when the file has it
            line = (lines or {}).get(problem.split(":", 1)[0])
            raise ConfigError(f"{source}:{line}: {problem}" if line else f"{source}: {problem}")
    return config


def load_config(cls: type[C], path: str | Path) -> C:
    """Read a YAML or JSON config file into ``cls``."""
    path = Path(path)
    text = read_text(path, what="config file", error=ConfigError)
    data, linemap, problems = load_yaml(text, file=str(path))
    if problems:
        raise ConfigError("; ".join(str(p) for p in problems))
    if data is None:
        data = {}
    lines = {key: linemap.line((key,)) for key in data} if isinstance(data, dict) else {}
    return config_from_dict(cls, data, source=str(path), lines=lines)


def dump_config(config: Any, path: str | Path) -> None:
    """Write the resolved config as JSON (what was actually run)."""
    Path(path).write_text(json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True) + "\n",
                          encoding="utf-8")

"""Forms generated from the config dataclasses: one field per dataclass field, its help text and default.

A training form is ``training/*_config.py``'s dataclass (``SFTStageConfig``, ``OPDStageConfig``,
``RLStageConfig``, ``PipelineConfig`` with its stage sections, ``MTPStageConfig``; the ablation's
``training.ablation.AblationConfig``); the evaluation and replay forms are
the evaluation's and the replay's own configs (``training.eval_config.EvalConfig``,
``serving.replay_config.ReplayConfig``), which ``python -m training eval``'s and ``python -m serving
replay``'s flags are built from. Values are checked field by field with the training library's own
``coerce`` and then the dataclass's own ``check()``, so the studio says exactly what the command line
says (``max_steps: must be at least 1, got 0``), every message naming its field.

The studio adds what a shared, multi-user service needs on top: it owns the run folder
(``output_dir``) and resuming (``resume``), and every field that names a file, folder or model on
the workers is checked against what may be named there (``local``, ``tiny``, an existing absolute
checkpoint folder, ...). Nothing a user types reaches a shell: a run is argv lists over files the
studio writes.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.augment.pipeline import DIMS as HSA_DIMS
from harness.checkpoints import checkpoint_problem
from harness.yamlio import dump_yaml, load_yaml
from serving.replay_config import ReplayConfig
from training.ablation import AblationConfig
from harness.config_schema import ConfigError, coerce
from training.eval_config import EvalConfig
from training.mtp_config import MTPStageConfig
from training.opd_config import OPDStageConfig
from training.pipeline_config import PipelineConfig
from training.rl_config import RLStageConfig
from training.sft_config import SFTStageConfig

MAX_VALUE_CHARS = 2000
TRACKERS = ("none", "tensorboard", "mlflow", "wandb", "trackio")
EVAL_SET_LABELS = {"live_qa": "T1 Live-Stream QA", "variant_qa": "T2 Harness-Variant QA",
                   "prompt_robustness": "Prompt Robustness", "ifeval": "Instruction following (IFEval checkers)"}
# Fields the studio sets itself: the run folder is TRAINING_RUNS_DIR/run-N, and its Resume button resumes.
STUDIO_OWNED = frozenset({"output_dir", "resume"})
# A pipeline sets these on every stage; its sections do not show them.
PIPELINE_OWNED = frozenset({"model", "output_dir", "harness", "report_to", "resume"})


EvalRunConfig = EvalConfig  # the evaluation form is the training library's own config
ReplayRunConfig = ReplayConfig  # the replay form is the serving library's own config


CONFIG_CLASSES: dict[str, type] = {"sft": SFTStageConfig, "opd": OPDStageConfig, "rl": RLStageConfig,
                                   "pipeline": PipelineConfig, "mtp": MTPStageConfig, "ablation": AblationConfig,
                                   "eval": EvalRunConfig,
                                   "replay": ReplayRunConfig}
SECTIONS = ("sft", "opd", "rl")


@dataclass(frozen=True)
class FormField:
    """One input of a generated form."""

    name: str            # the POST key: "max_steps", or "sft.max_steps" in a pipeline section
    label: str
    help: str
    widget: str          # "int", "float", "bool", "text", "list", "mapping", "choices"
    value: str           # what the input holds (the default, a preset's value or what was posted)
    choices: tuple[tuple[str, str], ...] = ()
    selected: tuple[str, ...] = ()
    section: str = ""


# Fields whose values are a fixed set: (value, label) choices, shown as checkboxes.
CHOICES: dict[str, tuple[tuple[str, str], ...]] = {
    "report_to": tuple((t, t) for t in TRACKERS),
    "hsa_dims": tuple((d, d) for d in HSA_DIMS),
    "stages": (("sft", "sft: HSA-SFT"), ("opd", "opd: General OPD"), ("rl", "rl: HSA-RL")),
    "sets": tuple(EVAL_SET_LABELS.items()),
}


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


def _widget(name: str, tp: Any) -> str:
    if name in CHOICES:
        return "choices"
    origin = typing.get_origin(tp)
    if origin is list:
        return "list"
    if origin is dict:
        return "mapping"
    return {bool: "bool", int: "int", float: "float"}.get(tp, "text")


def show_value(value: Any) -> str:
    """A value as its input holds it: lists comma-separated, mappings as YAML, booleans true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return dump_yaml(value).strip() if value else "{}"
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _fields_of(cls: type, *, values: Mapping[str, Any], prefix: str = "", hidden=STUDIO_OWNED) -> list[FormField]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name in hidden or dataclasses.is_dataclass(hints[f.name]):
            continue
        value = values.get(f.name, _default(f))
        widget = _widget(f.name, hints[f.name])
        out.append(FormField(
            name=prefix + f.name, label=f.name, help=f.metadata.get("help", ""), widget=widget,
            value=show_value(value), choices=CHOICES.get(f.name, ()),
            selected=tuple(str(v) for v in value) if widget == "choices" else (), section=prefix.rstrip(".")))
    return out


def form_fields(kind: str, config: Any = None) -> list[FormField]:
    """The form of ``kind`` showing ``config``'s values (the dataclass defaults when None)."""
    cls = CONFIG_CLASSES[kind]
    config = config if config is not None else cls()
    fields = _fields_of(cls, values=dataclasses.asdict(config))
    if kind == "pipeline":
        for section in SECTIONS:
            stage = getattr(config, section)
            fields += _fields_of(type(stage), values=dataclasses.asdict(stage), prefix=f"{section}.",
                                 hidden=PIPELINE_OWNED)
    return fields


def with_posted(fields: list[FormField], data: Mapping[str, Any]) -> list[FormField]:
    """The fields holding what was posted (a form shown again with its errors keeps the user's input)."""
    out = []
    for f in fields:
        if f.widget == "choices":
            posted = data.getlist(f.name) if hasattr(data, "getlist") else data.get(f.name)
            if f.name in data:
                posted = [posted] if isinstance(posted, str) else posted
            f = dataclasses.replace(f, selected=tuple(v for v in posted if v))
        elif isinstance(data.get(f.name), str):
            f = dataclasses.replace(f, value=data[f.name][:MAX_VALUE_CHARS])
        out.append(f)
    return out


# -- parsing a posted form ------------------------------------------------------------------------------


class FormErrors(ValueError):
    """Problems of a posted form, by field name (``sft.max_steps`` in a pipeline section)."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(errors.values()))
        self.errors = errors


def _raw(data: Mapping[str, Any], name: str, widget: str) -> Any:
    """What the browser sent for one field, or None when it sent nothing (the default stays)."""
    if name not in data:
        return None
    if widget == "choices":
        values = data.getlist(name) if hasattr(data, "getlist") else data.get(name)
        # the form sends an empty marker beside the checkboxes, so that none checked reads as []
        return [v for v in ([values] if isinstance(values, str) else list(values)) if v != ""]
    return data.get(name)


def _one_line(text: str) -> str:
    # browsers send a textarea's line breaks as CRLF: a line break is a line break however it is spelled
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse_value(name: str, raw: Any, tp: Any, widget: str) -> Any:
    texts = raw if isinstance(raw, list) else [raw]
    for text in texts:
        if not isinstance(text, str):
            raise ConfigError(f"{name}: expected text, got {type(text).__name__}")
        if len(text) > MAX_VALUE_CHARS:
            raise ConfigError(f"{name}: at most {MAX_VALUE_CHARS} characters, got {len(text)}")
        text = _one_line(text)
        if any(ord(c) < 32 and c not in "\n\t" for c in text):
            raise ConfigError(f"{name}: control characters are not allowed")
        if "\n" in text and widget != "mapping":
            raise ConfigError(f"{name}: one line, without line breaks"
                              + (" (a list is comma-separated: a, b, c)" if widget in ("list", "choices") else ""))
    if widget == "mapping":
        data, _lines, problems = load_yaml(_one_line(raw or "{}"), file=name)
        if problems:
            raise ConfigError(f"{name}: " + "; ".join(f"line {p.line}: {p.message}" for p in problems)
                              + " (write one 'name: value' a line, e.g. 'accuracy: 1.0', or {} for none)")
        return coerce({} if data is None else data, tp, where=name)
    if widget in ("int", "float") and not raw.strip():
        raise ConfigError(f"{name}: a value is required")
    return coerce(raw.strip() if isinstance(raw, str) else raw, tp, where=name)


def _parse_dataclass(cls: type, data: Mapping[str, Any], *, prefix: str, hidden, base: Any,
                     errors: dict[str, str]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    values = dataclasses.asdict(base) if base is not None else {}
    for f in dataclasses.fields(cls):
        if f.name in hidden or dataclasses.is_dataclass(hints[f.name]):
            continue
        name = prefix + f.name
        widget = _widget(f.name, hints[f.name])
        raw = _raw(data, name, widget)
        if raw is None:
            continue
        try:
            value = _parse_value(name, raw, hints[f.name], widget)
        except ConfigError as error:
            errors[name] = str(error)
            continue
        if f.name in CHOICES and isinstance(value, list):
            valid = [c for c, _label in CHOICES[f.name]]
            wrong = [v for v in value if str(v) not in valid]
            if wrong:
                errors[name] = f"{name}: {', '.join(map(str, wrong))} is not one of {', '.join(valid)}"
                continue
        values[f.name] = value
    return values


def _check_into(config: Any, errors: dict[str, str], *, prefix: str = "") -> None:
    problem = config.check() if hasattr(config, "check") else ""
    if problem:
        name = problem.split(":", 1)[0].strip()
        key = prefix + name if " " not in name else prefix + "__all__"
        errors.setdefault(key, f"{prefix}{problem}" if prefix else problem)


def parse_form(kind: str, data: Mapping[str, Any], *, field_check: Callable[[str, str, Any], str] | None = None,
               base: Any = None) -> Any:
    """The config a posted form describes; ``FormErrors`` naming every field that is wrong.

    ``base``: the config the form started from (a preset's values); fields not posted keep them.
    ``field_check(kind, field_name, value)``: the studio's checks of paths and models ('' when fine)."""
    cls = CONFIG_CLASSES[kind]
    base = base if base is not None else cls()
    errors: dict[str, str] = {}
    values = _parse_dataclass(cls, data, prefix="", hidden=STUDIO_OWNED, base=base, errors=errors)
    sections = {}
    if kind == "pipeline":
        for section in SECTIONS:
            stage_base = getattr(base, section)
            stage_values = _parse_dataclass(type(stage_base), data, prefix=f"{section}.", hidden=PIPELINE_OWNED,
                                            base=stage_base, errors=errors)
            sections[section] = stage_values
    if field_check is not None:
        for name, value in list(values.items()) + [(f"{s}.{k}", v) for s, vs in sections.items()
                                                   for k, v in vs.items()]:
            if name in errors or name.rpartition(".")[2] in STUDIO_OWNED:
                continue
            problem = field_check(kind, name, value)
            if problem:
                errors[name] = problem
    # the config's own checks run even when a field could not be read (it keeps its default meanwhile),
    # so every problem is listed at once; a check's message about a field already named is not repeated
    if kind == "pipeline":
        hints = typing.get_type_hints(cls)
        for section, stage_values in sections.items():
            values[section] = hints[section](**stage_values)
            _check_into(values[section], errors, prefix=f"{section}.")
    config = cls(**values)
    _check_into(config, errors)
    if errors:
        raise FormErrors(errors)
    return config


# -- what is shown beside the form ------------------------------------------------------------------------


def config_yaml(config: Any) -> str:
    """The config file a run is started with (every field, defaults included)."""
    return dump_yaml(dataclasses.asdict(config))


def is_absolute_file(value: str) -> str:
    """'' when ``value`` is the absolute path of an existing file, else why not."""
    path = Path(value)
    if not path.is_absolute():
        return f"give an absolute path on the workers, not {value!r}"
    if not path.is_file():
        return f"{value} is not an existing file"
    return ""


def model_problem(value: str, *, also: tuple[str, ...] = ()) -> str:
    """'' when ``value`` names a model a run may start from: local, tiny (``also``) or a checkpoint folder."""
    if value in ("local", "tiny", *also):
        return ""
    if not value.startswith("/"):
        return (f"{value!r} is not a model: use {', '.join(('local', 'tiny', *also))} or the absolute path "
                "of a checkpoint folder (a run's final/, listed in the checkpoint registry)")
    problem = checkpoint_problem(Path(value))
    return f"{problem}; give an existing checkpoint folder (a run's final/)" if problem else ""


OPENAI_TEACHER = re.compile(r"^openai:https?://[^\s:/]+(:\d+)?/\S*:[^\s:]+$")
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def head_problem(value: str) -> str:
    """'' when ``value`` is empty (a new head) or an existing draft-head folder, else why not.

    Read with the engine's own readers (``serving.engine.draft_head``): the folder's config.json with its
    ``harness_draft`` section, and a weights file holding the tensors of its layout."""
    from harness.draft_head_files import DraftHeadError, head_tensors, read_config, tensor_problems

    if not value:
        return ""
    if not value.startswith("/"):
        return (f"give the absolute path of a draft-head folder (an MTP run's final/, listed on its run page), "
                f"not {value!r}; empty starts a new head")
    try:
        problems = tensor_problems(read_config(value), head_tensors(value))
    except DraftHeadError as error:
        return str(error)
    return f"{value}: " + "; ".join(problems) if problems else ""

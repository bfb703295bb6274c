"""The run forms: Django forms generated from the config dataclasses, and the checks of what a value
names.

A run's settings are ``training/*_config.py``'s dataclass (``SFTStageConfig``, ``OPDStageConfig``,
``RLStageConfig``, ``PipelineConfig`` with its stage sections, ``MTPStageConfig``; the ablation's
``training.ablation.AblationConfig``), the evaluation's (``training.eval_config.EvalConfig``) or the
replay's (``serving.replay_config.ReplayConfig``); ``python -m training``'s and ``python -m serving
replay``'s flags are built from the same schema (``harness/config_schema.py``). ``RunForm`` has one
input per field, with its help text and default; each value is read with the schema's own ``coerce``
and then the dataclass's own ``check()`` runs, so the studio says exactly what the command line says
(``max_steps: must be at least 1, got 0``), every message naming its field.

The studio adds what a shared, multi-user service needs on top: it owns the run folder
(``output_dir``) and resuming (``resume``); a field's ``choices`` are the only values its checkboxes
take; and every field with a ``kind`` (a checkpoint, a route, a file, ...) is checked against what
may be named on the workers (``KIND_CHECKS``: ``local``, ``tiny``, an existing absolute checkpoint
folder, ...). Nothing a user types reaches a shell: a run is argv lists over files the studio
writes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from harness.checkpoints import checkpoint_problem
from harness.config_schema import (
    ConfigError,
    SchemaField,
    check_problem,
    choice_problem,
    coerce,
    fields_of,
    value_text,
)
from serving.replay_config import ReplayConfig
from studio.forms import field_problems
from training.ablation import AblationConfig
from training.eval_config import SET_LABELS as EVAL_SET_LABELS
from training.eval_config import EvalConfig
from training.mtp_config import MTPStageConfig
from training.opd_config import OPDStageConfig
from training.pipeline_config import PipelineConfig
from training.rl_config import RLStageConfig
from training.sft_config import SFTStageConfig

MAX_VALUE_CHARS = 2000
MAX_TITLE_CHARS = 200
# Fields the studio sets itself: the run folder is TRAINING_RUNS_DIR/run-N, and its Resume button
# resumes. A progress folder (a copy of the run to commit, written anywhere on the server's disk)
# is the command line's: the studio's runs keep their checkpoints in their own folder.
STUDIO_OWNED = frozenset({"output_dir", "resume", "progress_dir"})
# A pipeline sets these on every stage; its sections do not show them.
PIPELINE_OWNED = frozenset(
    {"model", "output_dir", "harness", "report_to", "resume", "progress_dir"}
)

CONFIG_CLASSES: dict[str, type] = {
    "sft": SFTStageConfig,
    "opd": OPDStageConfig,
    "rl": RLStageConfig,
    "pipeline": PipelineConfig,
    "mtp": MTPStageConfig,
    "ablation": AblationConfig,
    "eval": EvalConfig,
    "replay": ReplayConfig,
}
__all__ = [
    "CONFIG_CLASSES",
    "EVAL_SET_LABELS",
    "KIND_CHECKS",
    "RunForm",
    "value_problem",
]


# -- what a value names, checked by its field's kind
# -------------------------------------------------------

HARNESS_REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_-]{0,63})@v(?P<number>\d{1,9})$")
OPENAI_TEACHER = re.compile(r"^openai:https?://[^\s:/]+(:\d+)?/\S*:[^\s:]+$")
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def harness_version(value: str):
    """The studio's Harness version that ``NAME@vN`` names, or None."""
    from studio.harnesses.models import HarnessVersion

    match = HARNESS_REF.match(value)
    if match is None:
        return None
    return (
        HarnessVersion.objects.select_related("harness")
        .filter(harness__name=match["name"], number=int(match["number"]))
        .first()
    )


def is_absolute_file(value: str) -> str:
    """'' when ``value`` is the absolute path of an existing file, else why not."""
    path = Path(value)
    if not path.is_absolute():
        return f"give an absolute path on the workers, not {value!r}"
    if not path.is_file():
        return f"{value} is not an existing file"
    return ""


def model_problem(value: str, *, also: tuple[str, ...] = ()) -> str:
    """'' when ``value`` names a model a run may start from: local, tiny (``also``) or a checkpoint
    folder."""
    if value in ("local", "tiny", *also):
        return ""
    if not value.startswith("/"):
        return (
            f"{value!r} is not a model: use "
            f"{', '.join(('local', 'tiny', *also))} or the absolute path "
            "of a checkpoint folder (a run's final/, listed in the checkpoint registry)"
        )
    problem = checkpoint_problem(Path(value))
    return f"{problem}; give an existing checkpoint folder (a run's final/)" if problem else ""


def head_problem(value: str) -> str:
    """'' when ``value`` is empty (a new head) or an existing draft-head folder, else why not.

    Read with the engine's own readers (``serving.engine.draft_head``): the folder's config.json
    with its ``harness_draft`` section, and a weights file holding the tensors of its layout."""
    from harness.draft_head_files import DraftHeadError, head_tensors, read_config, tensor_problems

    if not value:
        return ""
    if not value.startswith("/"):
        return (
            "give the absolute path of a draft-head folder "
            "(an MTP run's final/, listed on its run page), "
            f"not {value!r}; empty starts a new head"
        )
    try:
        problems = tensor_problems(read_config(value), head_tensors(value))
    except DraftHeadError as error:
        return str(error)
    return f"{value}: " + "; ".join(problems) if problems else ""


def route_problem(route: str) -> str:
    """'' when ``route`` is a serving profile or local:/transformers: with a checkpoint folder, else
    why not."""
    from serving.profiles import ProfileError, load_profiles

    engine, _, rest = route.partition(":")
    if rest and engine in ("local", "transformers"):
        return model_problem(rest)
    try:
        names = sorted(load_profiles())
    except ProfileError as error:
        return f"the serving profiles cannot be read: {error}"
    if route in names:
        return ""
    return (
        f"{route!r} is not a route: use one of {', '.join(names)}, "
        "or local:CHECKPOINT / transformers:CHECKPOINT"
    )


def _teacher_problem(value: str) -> str:
    return (
        ""
        if value == "gold" or OPENAI_TEACHER.match(value)
        else (
            f"{value!r}: use 'gold' (the cases' gold trajectories) or openai:BASE_URL:MODEL, "
            "e.g. openai:http://127.0.0.1:30000/v1:policy"
        )
    )


def _harness_problem(value: str) -> str:
    return (
        ""
        if value == "demo" or harness_version(value)
        else (
            f"{value!r} is not a Harness here: use 'demo' or a "
            "studio version as NAME@vN, e.g. livestream-avatar@v1"
        )
    )


def _prompts_problem(value: str) -> str:
    return (
        ""
        if value == "builtin"
        or HUB_NAME.match(value)
        or (value.startswith("/") and Path(value).exists())
        else (
            f"{value!r}: use 'builtin', an existing absolute "
            "file or folder, or a hub dataset name (org/name)"
        )
    )


#: One check per field kind (harness/config_schema.KINDS): '' when a value may be used by a run
#: started here.
KIND_CHECKS: dict[str, Callable[[SchemaField, str], str]] = {
    "checkpoint": lambda field, value: model_problem(value, also=field.aliases),
    "teacher": lambda field, value: _teacher_problem(value),
    "harness": lambda field, value: _harness_problem(value),
    "file": lambda field, value: (
        is_absolute_file(value) if value else ""
    ),  # empty: the field's default
    "prompts": lambda field, value: _prompts_problem(value),
    "route": lambda field, value: route_problem(value),
    "draft-head": lambda field, value: head_problem(value),
}


def value_problem(field: SchemaField, value: Any, *, name: str) -> str:
    """Why ``value`` of ``field`` cannot be used by a run started from the studio, as ``name: why``
    ('' if it can).

    A mapping's values are checked one by one (the ablation's ``checkpoints``:
    ``checkpoints.hsa_sft: ...``)."""
    check = KIND_CHECKS.get(field.kind)
    if check is None:
        return ""
    if isinstance(value, dict):
        return next(
            (
                p
                for key, item in value.items()
                if (p := value_problem(field, item, name=f"{name}.{key}"))
            ),
            "",
        )
    problem = check(field, value) if isinstance(value, str) else ""
    return f"{name}: {problem}" if problem else ""


# -- the generated form
# --------------------------------------------------------------------------------------


class _NotPosted:
    """A field the browser did not send: the config keeps the form's starting value."""


NOT_POSTED = _NotPosted()


class Checklist(forms.CheckboxSelectMultiple):
    """Checkboxes; the form sends an empty marker beside them, so none checked reads as [] and a
    field not sent at all keeps its default."""

    def value_from_datadict(self, data, files, name):
        if name not in data:
            return None
        values = data.getlist(name) if hasattr(data, "getlist") else data.get(name)
        return [values] if isinstance(values, str) else list(values)


def _widget_kind(field: SchemaField) -> str:
    if field.choices:
        return "choices"
    origin = getattr(field.type, "__origin__", None)
    if origin is list:
        return "list"
    if origin is dict:
        return "mapping"
    return {bool: "bool", int: "int", float: "float"}.get(field.type, "text")


def _with_line_breaks(text: str) -> str:
    # browsers send a textarea's line breaks as CRLF: a line break is a line break however it is
    # spelled
    return text.replace("\r\n", "\n").replace("\r", "\n")


class ConfigValueField(forms.Field):
    """One input of a generated form: one config field, read as its type with the schema's
    ``coerce``."""

    def __init__(self, *, name: str, field: SchemaField, value: Any, section: str = ""):
        self.name, self.schema, self.section = name, field, section
        self.widget_kind = _widget_kind(field)
        self.choices = field.choices
        initial = [str(v) for v in value] if self.widget_kind == "choices" else value_text(value)
        super().__init__(
            required=False,
            label=field.name,
            help_text=field.help,
            initial=initial,
            widget=Checklist(choices=field.choices) if field.choices else forms.TextInput,
        )

    def bound_data(self, data, initial):
        return (
            initial if data is None else data
        )  # a form shown again keeps what was typed, the rest its values

    def clean(self, value):
        if value is None:
            return NOT_POSTED
        try:
            parsed = self._parse(
                [v for v in value if v != ""] if self.widget_kind == "choices" else value
            )
        except ConfigError as error:
            raise ValidationError(str(error)) from None
        problem = choice_problem(self.schema, parsed, where=self.name) if self.choices else ""
        if problem:
            raise ValidationError(problem)
        return parsed

    def _parse(self, raw: Any) -> Any:
        name, kind = self.name, self.widget_kind
        for text in raw if isinstance(raw, list) else [raw]:
            if not isinstance(text, str):
                raise ConfigError(f"{name}: expected text, got {type(text).__name__}")
            if len(text) > MAX_VALUE_CHARS:
                raise ConfigError(f"{name}: at most {MAX_VALUE_CHARS} characters, got {len(text)}")
            text = _with_line_breaks(text)
            if any(ord(c) < 32 and c not in "\n\t" for c in text):
                raise ConfigError(f"{name}: control characters are not allowed")
            if "\n" in text and kind != "mapping":
                raise ConfigError(
                    f"{name}: one line, without line breaks"
                    + (
                        " (a list is comma-separated: a, b, c)"
                        if kind in ("list", "choices")
                        else ""
                    )
                )
        if kind == "mapping":
            return coerce(_with_line_breaks(raw), self.schema.type, where=name)
        if kind in ("int", "float") and not raw.strip():
            raise ConfigError(f"{name}: a value is required")
        return coerce(raw.strip() if isinstance(raw, str) else raw, self.schema.type, where=name)


def _title(value: str) -> str:
    if len(value) > MAX_TITLE_CHARS or any(ord(c) < 32 for c in value):
        raise ValidationError(f"title: at most {MAX_TITLE_CHARS} characters, on one line")
    return value


class PresetChoiceForm(forms.Form):
    """The preset a run form starts from (a link's ``?preset=``, or the form's hidden input)."""

    preset = forms.CharField(required=False, strip=False)

    def chosen(self) -> str:
        return self.cleaned_data["preset"] if self.is_valid() else ""


class RunForm(forms.Form):
    """The form of one run kind: a title and one input per field of its config dataclass (a
    pipeline's stage sections as ``sft.max_steps``), generated from the dataclass and starting from
    ``base`` (a preset's values; the defaults when None). Once valid, ``config`` is the config it
    describes; a recipe preset (``with_config=False``) has a title only."""

    title = forms.CharField(required=False, strip=True, validators=[_title])

    def __init__(self, kind: str, data=None, *, base: Any = None, with_config: bool = True):
        super().__init__(data)
        self.kind = kind
        self.base = (
            None if not with_config else base if base is not None else CONFIG_CLASSES[kind]()
        )
        self.config: Any = None
        if self.base is not None:
            self._add_inputs(self.base, hidden=STUDIO_OWNED)

    def _add_inputs(self, config: Any, *, hidden: frozenset[str], section: str = "") -> None:
        for field in fields_of(type(config)):
            if field.section is not None:
                self._add_inputs(
                    getattr(config, field.name), hidden=PIPELINE_OWNED, section=field.name
                )
            elif field.name not in hidden:
                name = f"{section}.{field.name}" if section else field.name
                self.fields[name] = ConfigValueField(
                    name=name, field=field, value=getattr(config, field.name), section=section
                )

    def sections(self) -> dict[str, list]:
        """The inputs by section ('' first: the config's own fields), as the template shows them."""
        out: dict[str, list] = {}
        for bound in self:
            if isinstance(bound.field, ConfigValueField):
                out.setdefault(bound.field.section, []).append(bound)
        return out

    @property
    def problems(self) -> dict[str, str]:
        """Each wrong field's message (the first where there are more)."""
        return field_problems(self)

    def clean(self) -> dict:
        data = super().clean()
        if self.base is None:
            return data
        inputs = {n: f for n, f in self.fields.items() if isinstance(f, ConfigValueField)}
        chosen = {n: data[n] for n in inputs if n in data and data[n] is not NOT_POSTED}

        def build(config: Any, section: str = "") -> Any:
            values = {
                f.schema.name: chosen[n]
                for n, f in inputs.items()
                if f.section == section and n in chosen
            }
            for field in fields_of(type(config)):
                if field.section is not None:
                    values[field.name] = build(getattr(config, field.name), field.name)
            return dataclasses.replace(config, **values)

        config = build(self.base)
        for (
            name,
            field,
        ) in inputs.items():  # what each named value names: posted ones and the starting ones
            owner = getattr(config, field.section) if field.section else config
            if name not in self.errors and (
                problem := value_problem(field.schema, getattr(owner, field.schema.name), name=name)
            ):
                self.add_error(name, problem)
        # the config's own checks run even when a field could not be read (it keeps its starting
        # value meanwhile), so every problem is listed at once; a message about a field already
        # named is not repeated
        for section in [f.name for f in fields_of(type(config)) if f.section is not None]:
            self._add_check(getattr(config, section), prefix=f"{section}.")
        self._add_check(config)
        if not self.errors:
            self.config = config
        return data

    def _add_check(self, config: Any, *, prefix: str = "") -> None:
        problem = check_problem(config)
        if not problem:
            return
        name = prefix + problem.split(":", 1)[0].strip()
        if name not in self.errors:
            self.add_error(name if name in self.fields else None, f"{prefix}{problem}")

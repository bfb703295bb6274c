"""Config schemas: a settings dataclass whose fields say what they hold, read the same way
everywhere.

A run's settings (``training/*_config.py``, ``serving/replay_config.py``) are one dataclass each,
and each field's ``metadata`` is its schema: ``help`` (the flag's and the form's text) and, where
the value names something outside the config, a ``kind`` (``KINDS``: a checkpoint, a route, a
file, ...) with ``aliases`` (names a checkpoint field also takes, e.g. ``base``); ``choices`` are
the values a field's items are picked from.
``fields_of`` is the one reading of that metadata; from it come the ``python -m`` flags
(``add_flags``, ``from_flags``, ``to_argv``), the reading of a YAML or JSON file
(``load_config``) and its writing (``config_text``, ``dump_config``: the one config writer), and
the studio's Django forms and its per-kind checks (``studio/training/configs.py``). Every value,
typed on a command line, in a file or in a form, is converted by ``coerce``. Adding a field is one
edit to its dataclass: the CLI and the studio cannot drift apart.

The command line passes what a field names through to the command that uses it (a tracker TRL knows,
a relative path on this host); the studio, a shared service, checks those values against what may
be named on its workers, by ``kind`` and ``choices``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.numbers import decimal_int
from harness.userfiles import read_text
from harness.yamlio import dump_yaml, load_yaml

C = TypeVar("C")

#: What a field's value names, and what the studio accepts for it (studio/training/configs.py checks
#: each).
KINDS = {
    "checkpoint": "a model: local, tiny (or an alias) or the absolute path of a checkpoint folder",
    "teacher": "'gold' or openai:BASE_URL:MODEL",
    "harness": "'demo', a Harness folder, or in the studio a stored version NAME@vN",
    "file": "the absolute path of an existing file (empty: the field's default)",
    "prompts": "'builtin', an existing file or folder, or a hub dataset name (org/name)",
    "route": "a serving profile, or local:CHECKPOINT / transformers:CHECKPOINT",
    "draft-head": "the absolute path of a draft-head folder (empty: a new head)",
}


class ConfigError(ValueError):
    """A config file, flag or form value that cannot be used; the message names file, line and
    field."""


@dataclass(frozen=True)
class SchemaField:
    """One field of a config dataclass, as its metadata declares it."""

    name: str
    type: Any
    default: Any
    help: str
    kind: str = ""
    choices: tuple[tuple[str, str], ...] = ()  # (value, label)
    aliases: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def section(self) -> type | None:
        """The dataclass of a nested section (a pipeline's ``sft:``), else None."""
        return self.type if dataclasses.is_dataclass(self.type) else None


def _choices(raw: Any) -> tuple[tuple[str, str], ...]:
    items = raw.items() if isinstance(raw, dict) else raw
    return tuple(
        (str(c[0]), str(c[1])) if isinstance(c, tuple) else (str(c), str(c)) for c in items or ()
    )


def fields_of(cls: type) -> list[SchemaField]:
    """The schema of a config dataclass: its fields with their help, kind and choices."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kind = f.metadata.get("kind", "")
        if kind and kind not in KINDS:
            raise TypeError(
                f"{cls.__name__}.{f.name}: kind {kind!r} is not one of {', '.join(KINDS)}"
            )
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append(
            SchemaField(
                name=f.name,
                type=hints[f.name],
                default=default,
                help=f.metadata.get("help", ""),
                kind=kind,
                choices=_choices(f.metadata.get("choices")),
                aliases=tuple(f.metadata.get("aliases", ())),
            )
        )
    return out


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp)).replace("typing.", "")


def coerce(value: Any, tp: Any, *, where: str) -> Any:
    """Check (and gently convert) one value against a field type; ``ConfigError`` otherwise."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if type(None) in options and (
            value is None or (isinstance(value, str) and not value.strip())
        ):
            return None  # an optional field left empty (a blank flag or form input): none
        others = [o for o in options if o is not type(None)]
        if len(others) == 1:  # ``int | None``: the type's own message, and that empty means none
            try:
                return coerce(value, others[0], where=where)
            except ConfigError as error:
                raise ConfigError(f"{error} (or leave it empty for none)") from None
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option, where=where)
            except ConfigError:
                continue
        raise ConfigError(
            f"{where}: {value!r} is not one of {', '.join(_type_name(o) for o in options)}"
        )
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [coerce(v, item, where=f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if isinstance(
            value, str
        ):  # a flag's or a form's text: YAML, one 'name: value' a line or {name: value}
            value = _mapping(value, where=where)
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        key_type, value_type = typing.get_args(tp) or (Any, Any)
        return {
            coerce(k, key_type, where=where): coerce(v, value_type, where=f"{where}.{k}")
            for k, v in value.items()
        }
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


def _mapping(text: str, *, where: str) -> Any:
    data, _lines, problems = load_yaml(text.strip() or "{}", file=where)
    if problems:
        raise ConfigError(
            f"{where}: "
            + "; ".join(f"line {p.line}: {p.message}" for p in problems)
            + " (write one 'name: value' a line, e.g. 'accuracy: 1.0', or {} for none)"
        )
    return {} if data is None else data


def choice_problem(field: SchemaField, values: list[Any], *, where: str) -> str:
    """'' when every item is one of the field's choices (or it has none), else ``where: x is not one
    of ...``."""
    valid = [value for value, _label in field.choices]
    wrong = [str(v) for v in values if str(v) not in valid] if valid else []
    return f"{where}: {', '.join(wrong)} is not one of {', '.join(valid)}" if wrong else ""


def check_problem(config: Any) -> str:
    """The config's own ``check()`` (``field: what is wrong``), or '' for a config without one."""
    check = getattr(config, "check", None)
    return check() if callable(check) else ""


def value_text(value: Any, *, separator: str = ", ") -> str:
    """A value as a flag or a form input takes it back: lists joined, mappings as YAML, booleans
    true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return separator.join(value_text(v) for v in value)
    if isinstance(value, dict):
        return dump_yaml(value).strip() if value else "{}"
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return "" if value is None else str(value)


# -- files
# -----------------------------------------------------------------------------------------------


def config_from_dict(
    cls: type[C],
    data: dict[str, Any],
    *,
    source: str = "config",
    lines: dict[str, int] | None = None,
) -> C:
    """Build ``cls`` from a mapping; unknown keys and bad values name their line and the valid
    fields."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: a config is a mapping of field: value, got {type(data).__name__}"
        )
    schema = {f.name: f for f in fields_of(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        line = (lines or {}).get(key)
        where = f"{source}:{line}: {key}" if line else f"{source}: {key}"
        if key not in schema:
            raise ConfigError(
                f"{where}: unknown field for {cls.__name__}; valid fields: {', '.join(schema)}"
            )
        section = schema[key].section
        if section is not None and isinstance(value, dict):
            kwargs[key] = config_from_dict(section, value, source=f"{source} ({key})")
        else:
            kwargs[key] = coerce(value, schema[key].type, where=where)
    config = cls(**kwargs)
    problem = check_problem(config)
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


#: The formats a config is written in, by the file's suffix: YAML (what a person or the studio
#: writes for a run to read) and JSON (what a run resolved and ran with).
CONFIG_FORMATS = (".yaml", ".yml", ".json")


def config_text(config: Any, *, suffix: str = ".yaml") -> str:
    """A config as a file of that suffix holds it, every field (defaults included): YAML in field
    order (``harness.yamlio.dump_yaml``), or JSON with sorted keys. ``load_config`` reads both back
    to the same config. The one config writer: the runs' resolved configs and the studio's run files
    and previews are all written here."""
    data = dataclasses.asdict(config)
    if suffix in (".yaml", ".yml"):
        return dump_yaml(data)
    if suffix == ".json":
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    raise ValueError(f"a config file ends in {', '.join(CONFIG_FORMATS)}, not {suffix!r}")


def dump_config(config: Any, path: str | Path) -> None:
    """Write ``config`` to ``path`` in the format its suffix names (``config_text``)."""
    path = Path(path)
    path.write_text(config_text(config, suffix=path.suffix), encoding="utf-8")


# -- command lines
# ---------------------------------------------------------------------------------------


def add_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """One ``--field-name VALUE`` flag per field (sections excepted), its help text and default."""
    for f in fields_of(cls):
        if f.section is not None:
            continue
        shown = value_text(f.default, separator=",") or "none"
        choices = f" (one or more of: {', '.join(v for v, _ in f.choices)})" if f.choices else ""
        parser.add_argument(
            f.flag,
            dest=f.name,
            default=None,
            metavar="VALUE",
            help=f"{f.help}{choices} (default: {shown})",
        )


def from_flags(cls: type[C], args: argparse.Namespace, *, base: Any = None) -> C:
    """``base`` (the defaults when None) with each flag given; ``ConfigError`` naming the flag or
    field."""
    base = base if base is not None else cls()
    overrides = {
        f.name: coerce(getattr(args, f.name), f.type, where=f.flag)
        for f in fields_of(cls)
        if f.section is None and getattr(args, f.name, None) is not None
    }
    config = dataclasses.replace(base, **overrides)
    problem = check_problem(config)
    if problem:
        raise ConfigError(problem)
    return config


def to_argv(config: Any, *, omit_defaults: tuple[str, ...] = ()) -> list[str]:
    """The flags that give ``config``'s values (``omit_defaults``: fields left out while at their
    default)."""
    argv = []
    for f in fields_of(type(config)):
        value = getattr(config, f.name)
        if f.section is None and not (f.name in omit_defaults and value == f.default):
            argv += [f.flag, value_text(value, separator=",")]
    return argv

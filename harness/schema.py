"""JSON-Schema checking of parsed YAML, reported at the source line.

Each Harness file has a JSON Schema (draft 2020-12). ``schema_problems`` runs it
and turns every error into a :class:`~harness.errors.Problem` whose line comes
from the YAML line map and whose message says what would be valid.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from harness.errors import Problem
from harness.yamlio import LineMap, dotted, load_yaml


def _message(error: jsonschema.ValidationError) -> str:
    v = error.validator
    if v == "enum":
        hint = error.schema.get("x-hint")
        return (
            f"{error.instance!r} is not valid; use one of: "
            f"{', '.join(map(str, error.validator_value))}" + (f" ({hint})" if hint else "")
        )
    if v == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return f"expected {want}, got {type(error.instance).__name__} {error.instance!r}"[:200]
    if v == "pattern":
        hint = error.schema.get("x-hint", f"must match {error.validator_value}")
        return f"{error.instance!r} is not valid: {hint}"
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = (
            sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        )
        return f"unknown field(s) {', '.join(map(repr, extra))}; allowed: {', '.join(allowed)}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{error.instance!r} is out of range: {v} is {error.validator_value}"
    if v in ("minLength", "maxLength", "minItems", "maxItems"):
        return f"{error.message} ({v} {error.validator_value})"
    return error.message


_VALIDATORS: dict[int, jsonschema.Draft202012Validator] = {}
# Tool parameters are checked against the draft-7 meta-schema: the dialect of
# OpenAI-style function parameters, and several times cheaper than 2020-12's
# dynamic references (this runs for every tool on every editor save).
_META = jsonschema.Draft7Validator(jsonschema.Draft7Validator.META_SCHEMA)


def parameter_schema_error(schema) -> str | None:
    """Why ``schema`` is not a usable JSON Schema for tool arguments, or None."""
    error = jsonschema.exceptions.best_match(_META.iter_errors(schema))
    if error is not None:
        where = "/".join(map(str, error.absolute_path))
        return f"{error.message}" + (f" (at {where})" if where else "")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "the top level must be {type: object, properties: ...}"
    from harness.regex import schema_pattern_problems

    if regex_problems := schema_pattern_problems(schema):
        return regex_problems[0]  # the arguments are matched with RE2 (harness/regex.py)
    return None


def _validator(schema: dict) -> jsonschema.Draft202012Validator:
    # The file schemas are module constants, so their id is a stable cache key.
    key = id(schema)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return _VALIDATORS[key]


def schema_problems(data, schema: dict, *, linemap: LineMap, file: str, prefix=()) -> list[Problem]:
    validator = _validator(schema)
    problems = []
    for error in validator.iter_errors(data):
        path = (*prefix, *error.absolute_path)
        field = dotted(path) or "(top level)"
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else "?"
            field = dotted((*path, missing))
            hint = error.schema.get("properties", {}).get(missing, {}).get("x-hint")
            message = f"is required: {hint}" if hint else "is required"
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            if extra:
                path = (*path, extra[0])
            message = _message(error)
        else:
            message = _message(error)
        problems.append(Problem(file, linemap.line(path), field, message))
    return problems


def load_checked_yaml(
    text: str, schema: dict, *, file: str, not_mapping: str
) -> tuple[Any, LineMap, list[Problem]]:
    """A YAML file that must be a mapping valid against ``schema``: ``(data, linemap, problems)``
    with the problems of the first step that fails: the YAML itself, its top level not being a
    mapping (``not_mapping`` says what it must be), or the schema; none when it is valid."""
    data, linemap, problems = load_yaml(text, file=file)
    if problems:
        return data, linemap, problems
    if not isinstance(data, dict):
        return data, linemap, [Problem(file, 1, "(top level)", not_mapping)]
    return data, linemap, schema_problems(data, schema, linemap=linemap, file=file)

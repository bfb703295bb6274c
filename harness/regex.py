"""Regular expressions a Harness supplies (hook ``matcher`` and ``patterns``, a tool's parameter
schema's ``pattern`` and ``patternProperties``), compiled in one place.

Python's ``re`` backtracks: ``(a|a)*Z`` against 25 ``a`` took 2.9 s in a draft save and doubles with
every character, so a pattern from a Harness could pin a core of the web server or a worker. Every
regex that comes from a Harness is compiled here with RE2 (``google-re2``), whose matching time is
linear in the text. RE2 leaves out the constructs that need backtracking (look-around and
backreferences); a pattern that uses them is a validation problem naming the hook and field, with
:func:`user_regex_problem`'s message, never a slow match.

The project's own fixed patterns stay on ``re``: they are written and reviewed here, not by a user.
"""

from __future__ import annotations

from functools import lru_cache

import re2

# Bounded so that a pathological but valid pattern cannot take more than a few MiB to compile.
MAX_PATTERN_CHARS = 1000
_MAX_PROGRAM_BYTES = 8 << 20
SUPPORTED = (
    "RE2 syntax (https://github.com/google/re2/wiki/Syntax): "
    "no look-around such as (?=...), (?<!...) "
    "and no backreferences such as \\1"
)


class UserRegexError(ValueError):
    """A Harness's pattern that RE2 does not accept; the message says why and what is supported."""


@lru_cache(maxsize=1024)
def compile_user_regex(pattern: str) -> re2._Regexp:
    """The pattern compiled with RE2 (linear-time matching); UserRegexError when it is outside RE2's
    syntax."""
    if not isinstance(pattern, str):
        raise UserRegexError(f"a pattern must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UserRegexError(
            f"the pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}"
        )
    options = re2.Options()
    options.log_errors = False  # the reason goes into the problem, not onto the process's stderr
    options.max_mem = _MAX_PROGRAM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = (
            error.args[0].decode("utf-8", "replace")
            if error.args and isinstance(error.args[0], bytes)
            else str(error)
        )
        raise UserRegexError(
            f"not a supported regular expression ({reason}); patterns use {SUPPORTED}"
        ) from None


def user_regex_problem(pattern: str) -> str | None:
    """Why the pattern cannot be used, or None."""
    try:
        compile_user_regex(pattern)
    except UserRegexError as error:
        return str(error)
    return None


def user_fullmatch(pattern: str, text: str) -> bool:
    return compile_user_regex(pattern).fullmatch(text) is not None


def user_search(pattern: str, text: str) -> bool:
    return compile_user_regex(pattern).search(text) is not None


def schema_pattern_problems(schema, where: str = "") -> list[str]:
    """``where: why`` for every ``pattern`` / ``patternProperties`` regex in a JSON Schema that RE2
    refuses."""
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            here = f"{where}/{key}" if where else key
            if key == "pattern" and isinstance(value, str):
                if problem := user_regex_problem(value):
                    found.append(f"{here}: {problem}")
            elif key == "patternProperties" and isinstance(value, dict):
                for pattern, sub in value.items():
                    if problem := user_regex_problem(pattern):
                        found.append(f"{here}/{pattern}: {problem}")
                    found += schema_pattern_problems(sub, f"{here}/{pattern}")
            else:
                found += schema_pattern_problems(value, here)
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            found += schema_pattern_problems(item, f"{where}/{i}")
    return found


def _pattern(validator, pattern, instance, schema):
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not user_search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if user_search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@lru_cache(maxsize=1)
def _linear_validator_class():
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        {"pattern": _pattern, "patternProperties": _pattern_properties},
    )


def linear_schema_validator(schema: dict):
    """A draft 2020-12 validator for a Harness's JSON Schema whose ``pattern`` and
    ``patternProperties`` match with RE2 (jsonschema's own use Python's backtracking ``re``)."""
    return _linear_validator_class()(schema)

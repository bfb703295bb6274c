"""Typed readers for settings that come from the environment.

Each reader fails loudly with the variable's name and what would be valid,
so a typo in a deployment shows up at boot rather than as odd behaviour later.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    """Return the variable as text; with no default, a missing variable is an error."""
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"environment variable {name} is required")
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    """Return the variable as a boolean: one of 1/0, true/false, yes/no, on/off."""
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"environment variable {name}={value!r} is not a "
        "boolean; use one of 1/0, true/false, yes/no, on/off"
    )


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """Return the variable as an integer, optionally at least `minimum`."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(
            f"environment variable {name}={value!r} is not an integer"
        ) from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(
            f"environment variable {name}={number} must be at least {minimum}"
        )
    return number


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    """Return the variable as a float, optionally at least `minimum`."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        number = float(value.strip())
    except ValueError:
        raise ImproperlyConfigured(
            f"environment variable {name}={value!r} is not a number"
        ) from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(
            f"environment variable {name}={number} must be at least {minimum}"
        )
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated variable as a list of non-empty, stripped items."""
    value = os.environ.get(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]

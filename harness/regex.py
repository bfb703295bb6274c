"""Regular expressions a Harness supplies (hook ``matcher`` and ``patterns``), compiled in one place.

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
SUPPORTED = ("RE2 syntax (https://github.com/google/re2/wiki/Syntax): no look-around such as (?=...), (?<!...) "
             "and no backreferences such as \\1")


class UserRegexError(ValueError):
    """A Harness's pattern that RE2 does not accept; the message says why and what is supported."""


@lru_cache(maxsize=1024)
def compile_user_regex(pattern: str) -> re2._Regexp:
    """The pattern compiled with RE2 (linear-time matching); UserRegexError when it is outside RE2's syntax."""
    if not isinstance(pattern, str):
        raise UserRegexError(f"a pattern must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UserRegexError(f"the pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    options = re2.Options()
    options.log_errors = False  # the reason goes into the problem, not onto the process's stderr
    options.max_mem = _MAX_PROGRAM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) \
            else str(error)
        raise UserRegexError(f"not a supported regular expression ({reason}); patterns use {SUPPORTED}") from None


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

"""Renaming references to tools and skills inside free text and regex matchers.

When a tool or skill is renamed, every place that names it must follow: skill
rules and descriptions, tool descriptions, prompt blocks, hook messages and
matchers. A name that looks like an identifier (it has '_', '-', a digit or a
capital) is replaced wherever it stands as a whole token. A plain word such as
``greet`` or ``thanks`` is replaced only where it is plainly a reference (after
"load", inside backticks or quotes, before "skill"), so "greet them together"
keeps its verb.
"""

from __future__ import annotations

import re
from functools import lru_cache

_IDENT_CHARS = "A-Za-z0-9_"


def is_identifier_like(name: str) -> bool:
    return bool(re.search(r"[_\-0-9A-Z]", name))


def _token(name: str) -> str:
    return rf"(?<![{_IDENT_CHARS}-]){re.escape(name)}(?![{_IDENT_CHARS}]|-[{_IDENT_CHARS}])"


def rename_in_text(text: str, renames: dict[str, str]) -> str:
    """``text`` with every reference to an old name replaced by its new name (one pass)."""
    if not text or not renames:
        return text
    present = tuple(sorted(n for n in renames if n in text))
    if not present:
        return text
    pattern = _pattern(present)
    if pattern is None:
        return text

    def sub(m: re.Match) -> str:
        found = m.group(0)
        head = ""
        if found.startswith("the "):
            head, found = "the ", found[4:]
        if found[:1] in "'\"":
            head, found = head + found[0], found[1:]
        return head + renames.get(found, found)

    return pattern.sub(sub, text)


@lru_cache(maxsize=4096)
def _pattern(names: tuple[str, ...]) -> re.Pattern | None:
    renames = dict.fromkeys(names)
    idents = sorted((n for n in renames if is_identifier_like(n)), key=lambda n: (-len(n), n))
    words = sorted((n for n in renames if not is_identifier_like(n)), key=lambda n: (-len(n), n))
    alternatives = [_token(n) for n in idents]
    for w in words:
        e = re.escape(w)
        alternatives += [
            rf"(?<=\bload )(?:the )?{e}\b(?!-)",
            rf"(?<=\bload_skill\()['\"]?{e}\b",
            rf"(?<=`){e}(?=`)",
            rf"(?<=\"){e}(?=\")",
            rf"(?<=')({e})(?=')",
            rf"\b{e}(?= skill\b)",
        ]
    if not alternatives:
        return None
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


def referenced(text: str, names: list[str]) -> set[str]:
    """Which of ``names`` ``text`` refers to (same rules as :func:`rename_in_text`)."""
    marker = {n: f"\ue010{i}\ue011" for i, n in enumerate(sorted(names))}
    out = rename_in_text(text, marker)
    back = {v: k for k, v in marker.items()}
    return {back[m] for m in re.findall("\ue010\\d+\ue011", out)}


def rename_in_matcher(
    matcher: str, renames: dict[str, str], *, before: list[str], after: dict[str, str]
) -> str:
    """A tool matcher regex that matches the renamed versions of exactly what it matched.

    ``before``: tool names before renaming; ``after``: old -> new for every tool.
    Names are replaced token by token; when that would change which tools match
    (say ``get_.*`` after ``get_price`` became ``fetch_price``), the matcher
    becomes an explicit alternation of the new names.
    """
    want = sorted(after[n] for n in before if re.fullmatch(matcher, n))
    candidate = (
        rename_in_text(matcher, {k: v for k, v in renames.items() if is_identifier_like(k)})
        if renames
        else matcher
    )
    try:
        got = sorted(n for n in after.values() if re.fullmatch(candidate, n))
    except re.error:
        got = None
    if got == want:
        return candidate
    return "|".join(re.escape(n) for n in want)

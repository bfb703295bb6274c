"""What a rewrite must keep: numbers, negations, referenced names, placeholders, quotes.

Every paraphrase (offline or from an LLM) is checked here before it is used.
``violations(original, rewrite, names=...)`` returns what the rewrite broke,
in words; an empty list means the rewrite keeps the rule's constraints. The
checks compare multisets, so "at most 3" -> "3 at most" passes while a
dropped "not" or a changed "48" fails.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

NUMBER_WORDS = frozenset(
    {
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "hundred",
        "thousand",
        "once",
        "twice",
        "first",
        "second",
        "third",
        "half",
        "single",
        "both",
        "double",
    }
)
NEGATIONS = frozenset(
    {
        "no",
        "not",
        "never",
        "none",
        "nothing",
        "nobody",
        "nowhere",
        "neither",
        "nor",
        "cannot",
        "without",
    }
)
_NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:[.,]\d+)*%?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_PLACEHOLDER = re.compile(r"\{[^{}\s]*\}|\{\{|\}\}")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")
_TAG = re.compile(r"</?[a-z_]+>")


def numbers(text: str) -> Counter:
    found = Counter(m.group(0).replace(",", "") for m in _NUMBER.finditer(text))
    for word in _WORD.findall(text):
        if word.lower() in NUMBER_WORDS:
            found[word.lower()] += 1
    return found


def negation_count(text: str) -> int:
    count = 0
    for word in _WORD.findall(text):
        w = word.lower()
        if w in NEGATIONS or w.endswith("n't"):
            count += 1
    return count


def name_pattern(names: Iterable[str]) -> re.Pattern | None:
    return _name_pattern(tuple(sorted({n for n in names if n}, key=lambda n: (-len(n), n))))


@lru_cache(maxsize=1024)
def _name_pattern(names: tuple[str, ...]) -> re.Pattern | None:
    if not names:
        return None
    return re.compile(
        r"(?<![A-Za-z0-9_-])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_]|-[A-Za-z0-9])"
    )


def name_counts(text: str, names: Iterable[str]) -> Counter:
    pattern = name_pattern([n for n in names if n in text])
    return Counter(pattern.findall(text)) if pattern else Counter()


def violations(original: str, rewrite: str, *, names: Iterable[str] = ()) -> list[str]:
    """Why ``rewrite`` may not replace ``original`` (empty: it may)."""
    out = []
    if not rewrite.strip():
        return ["the rewrite is empty"]
    a, b = numbers(original), numbers(rewrite)
    if a != b:
        out.append(f"numbers changed: {_fmt(a)} -> {_fmt(b)}")
    na, nb = negation_count(original), negation_count(rewrite)
    if na != nb:
        out.append(f"negations changed: {na} -> {nb}")
    names = list(names)
    ca, cb = name_counts(original, names), name_counts(rewrite, names)
    if ca != cb:
        out.append(f"referenced names changed: {_fmt(ca)} -> {_fmt(cb)}")
    pa, pb = Counter(_PLACEHOLDER.findall(original)), Counter(_PLACEHOLDER.findall(rewrite))
    if pa != pb:
        out.append(f"placeholders changed: {_fmt(pa)} -> {_fmt(pb)}")
    qa, qb = Counter(_QUOTED.findall(original)), Counter(_QUOTED.findall(rewrite))
    if qa != qb:
        out.append(f"quoted text changed: {_fmt(qa)} -> {_fmt(qb)}")
    ta, tb = Counter(_TAG.findall(original)), Counter(_TAG.findall(rewrite))
    if ta != tb:
        out.append(f"markup changed: {_fmt(ta)} -> {_fmt(tb)}")
    return out


def _fmt(counter: Counter) -> str:
    return "{" + ", ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(counter.items())) + "}"

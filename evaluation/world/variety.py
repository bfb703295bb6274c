"""Wording variety of a set: distinct-n-gram ratios and the share of unique comments.

distinct-n = (number of different n-grams) / (number of n-grams) over all
comment texts of a set (Li et al., 2016). A set made of a handful of templates
repeated has distinct-2 far below 0.1; human chat logs are typically 0.3-0.6.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"[\w']+|[^\w\s]")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def distinct_n(texts: Iterable[str], n: int) -> float:
    seen: set[tuple[str, ...]] = set()
    total = 0
    for text in texts:
        toks = tokens(text)
        for i in range(len(toks) - n + 1):
            seen.add(tuple(toks[i : i + n]))
            total += 1
    return len(seen) / total if total else 0.0


def variety_report(texts: list[str]) -> dict[str, float]:
    """distinct-1/2/3, unique-text share and text count for a list of comments."""
    return {
        "texts": len(texts),
        "unique_share": round(len(set(texts)) / len(texts), 4) if texts else 0.0,
        "distinct_1": round(distinct_n(texts, 1), 4),
        "distinct_2": round(distinct_n(texts, 2), 4),
        "distinct_3": round(distinct_n(texts, 3), 4),
    }

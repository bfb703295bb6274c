"""The compatibility set: does a model keep working under a Harness version, and under its variants?

A fixed, seeded set of cases drawn from a dev-set's categories (``COMPAT_CASES``,
about 60: every category in proportion to its share of the source, at least one
each), plus the same cases under HSA variants of whichever Harness version is
being evaluated: renamed tools, reordered prompt blocks, paraphrased skills
(``FAMILIES``). A variant case carries only ``harness_variant: {seed, dims}``
and the id ``<id>~<family>``; the scorer makes the variant from the evaluated
version and remaps the case's gold to it (``evaluation.case_harness.harness_variant_of``),
so one set serves every version. Each case appears under one family, the
families taking turns, so a cell costs twice the base cases, not four times.

The set is versioned by its content (``set_version``: a digest of its canonical
lines); a figure is only compared with figures on the same set version.

Every figure of a cell (a model on a version) is the evaluation core's:
``cell_figures`` is ``evaluation.summary.summarize`` of the base rows and of the
variant rows, with the AVG's percentile bootstrap interval
(``evaluation.stats.bootstrap_mean``); ``cell_change`` is
``evaluation.compare.paired_comparison`` of two cells' rows on the same cases,
whose overall AVG interval says better, no detectable change or worse.
``holds_under_variants`` answers, for an edit's targeted cases, whether each
fix holds under every family.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

from evaluation.cases import dumps_case
from evaluation.compare import paired_comparison
from evaluation.scoring import passed
from evaluation.stats import bootstrap_mean
from evaluation.summary import score_row, summarize

COMPAT_CASES = 60
FAMILIES = {
    "tools": "renamed tools",
    "prompt": "reordered blocks",
    "skill-content": "paraphrased skills",
}
SET_NAME = "compatibility"
VARIANT_SEP = "~"
# a cell's interval: fewer resamples than a regression report, it is drawn for every cell on the
# page
CELL_RESAMPLES = 2_000
BETTER, SAME, WORSE = "better", "no detectable change", "worse"


def _rank(seed: int, case_id: str) -> str:
    return hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()


def _quotas(counts: dict[str, int], size: int) -> dict[str, int]:
    """Cases per category: proportional to the source (largest remainders), at least one each."""
    total = sum(counts.values())
    size = max(size, len(counts))
    exact = {c: size * n / total for c, n in counts.items()}
    quota = {c: max(1, min(counts[c], int(v))) for c, v in exact.items()}
    for category in sorted(exact, key=lambda c: (quota[c] - exact[c], c)):
        if sum(quota.values()) >= min(size, total):
            break
        if quota[category] < counts[category]:
            quota[category] += 1
    return quota


def variant_seed(seed: int, case_id: str, family: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{case_id}:{family}".encode()).digest()[:4], "big")


def build_set(
    cases: list[dict],
    *,
    size: int = COMPAT_CASES,
    seed: int = 0,
    families: tuple[str, ...] = tuple(FAMILIES),
) -> list[dict]:
    """The compatibility cases drawn from ``cases`` (a dev-set): the base cases, then their
    variants.

    The same inputs give the same cases in the same order (so the same ``set_version``)."""
    if size < 1:
        raise ValueError(f"size: the compatibility set needs at least 1 case, got {size}")
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        raise ValueError(
            f"families: {', '.join(unknown) or '(none)'}; choose from {', '.join(FAMILIES)}"
        )
    pool = [c for c in cases if VARIANT_SEP not in c["id"] and not c.get("harness_variant")]
    if not pool:
        raise ValueError("the source set has no case to draw from (variant cases are not drawn)")
    by_category: dict[str, list[dict]] = defaultdict(list)
    for case in pool:
        by_category[case.get("category", "unknown")].append(case)
    quota = _quotas({c: len(v) for c, v in by_category.items()}, size)
    base = []
    for category in sorted(by_category):
        chosen = sorted(by_category[category], key=lambda c: _rank(seed, c["id"]))[
            : quota[category]
        ]
        base += [{**case, "set": SET_NAME} for case in chosen]
    return base + [
        variant_case(case, index=i, seed=seed, families=families) for i, case in enumerate(base)
    ]


def set_version(cases: list[dict]) -> str:
    """The set's version: a digest of its canonical lines (16 hex digits)."""
    digest = hashlib.sha256()
    for case in cases:
        digest.update(dumps_case(case).encode("utf-8") + b"\n")
    return digest.hexdigest()[:16]


def is_variant(case_id: str) -> bool:
    return VARIANT_SEP in case_id


def family_of(case_id: str) -> str:
    return case_id.split(VARIANT_SEP, 1)[1] if is_variant(case_id) else ""


def mean_interval(
    values: list[float], *, resamples: int = CELL_RESAMPLES, seed: int = 0
) -> dict[str, float]:
    """The mean of per-case scores (percent) with its 95% percentile bootstrap interval."""
    boot = bootstrap_mean(values=values, resamples=resamples, seed=seed)
    return {
        "mean": round(100 * boot.mean, 2),
        "low": round(100 * boot.low, 2),
        "high": round(100 * boot.high, 2),
    }


def cell_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell's figures from its result rows (``evaluation.scoring`` rows): the base cases' summary
    and AVG interval, the share answered without the fallback, the variant cases' summary (AVG per
    family too)."""
    base = [r for r in rows if not is_variant(r["id"])]
    variants = [r for r in rows if is_variant(r["id"])]
    figures: dict[str, Any] = {
        "base": summarize(base) if base else None,
        "variants": summarize(variants) if variants else None,
    }
    if base:
        summary = figures["base"]
        summary.pop("config", None)
        flat = [score_row(r) for r in base]
        figures["avg"] = mean_interval([float(r["avg"] or 0.0) for r in flat])
        outcomes = summary["outcomes"]
        figures["without_fallback"] = round(
            100 * (outcomes["n"] - outcomes["fallback"]) / outcomes["n"], 2
        )
    if variants:
        figures["variants"].pop("config", None)
        per_family = defaultdict(list)
        for row in variants:
            per_family[family_of(row["id"])].append(row)
        figures["per_family"] = {f: summarize(r)["overall"] for f, r in sorted(per_family.items())}
    return figures


def cell_change(
    *, reference: list[dict[str, Any]], rows: list[dict[str, Any]], resamples: int = CELL_RESAMPLES
) -> dict[str, Any]:
    """How a cell differs from the reference cell (the production pair), on the base cases both
    scored: the paired AVG delta with its interval and the verdict it supports (better / no
    detectable change / worse). ValueError when they share no case (cells of different set
    versions)."""
    base_ref = [score_row(r) for r in reference if not is_variant(r["id"])]
    base_rows = [score_row(r) for r in rows if not is_variant(r["id"])]
    result = paired_comparison(parent=base_ref, candidate=base_rows, resamples=resamples)
    overall = result["overall"]
    verdict = WORSE if overall["regressed"] else BETTER if overall["improved"] else SAME
    return {
        "verdict": verdict,
        "n": result["n"],
        "avg": overall["avg"],
        "newly_failing": len(result["newly_failing"]),
        "newly_passing": len(result["newly_passing"]),
    }


def variant_case(
    case: dict, *, index: int, seed: int = 0, families: tuple[str, ...] = tuple(FAMILIES)
) -> dict:
    """``case`` under the family the compatibility set gives the ``index``-th case (id
    ``<id>~<family>``)."""
    family = families[index % len(families)]
    return {
        **case,
        "id": f"{case['id']}{VARIANT_SEP}{family}",
        "harness_variant": {"seed": variant_seed(seed, case["id"], family), "dims": [family]},
    }


def holds_under_variants(*, fixed: list[str], cases: dict[str, dict], score) -> dict[str, Any]:
    """Which of the ``fixed`` case ids still pass under their compatibility variant (the families in
    turn, as ``build_set`` gives them: renamed tools, reordered blocks, paraphrased skills).

    ``score(case)`` is a scorer's ``score`` (``evaluation.scoring.CaseScorer`` on the edited
    Harness). A fix that passes only in the exact wording it was written for does not hold."""
    held, broken, errors = [], {}, []
    for index, case_id in enumerate(fixed):
        variant = variant_case(cases[case_id], index=index)
        row = score(variant)
        if row.get("error"):
            errors.append(row["error"])
        if row.get("error") or not passed(row["verdict"]):
            broken[case_id] = [family_of(variant["id"])]
        else:
            held.append(case_id)
    return {
        "checked": len(fixed),
        "held": len(held),
        "held_case_ids": held,
        "broken": broken,
        "errors": len(errors),
        "error": errors[0] if errors else "",
    }

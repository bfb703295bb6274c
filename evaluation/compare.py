"""The paired comparison of two evaluation runs on the same cases (the regression check of
docs/architecture.md §5).

One comparison for the whole project: ``python -m evaluation compare``, the
studio's regression report (and the release gates that read it) and training
call ``paired_comparison`` on flattened rows (``evaluation.summary.score_row``);
the ablation's table and the studio's comparison of two checkpoints call
``paired_difference`` on per-item scores.

**Items only one side scored** (one policy, ``paired_ids``): they are left out of
the pairing and counted (``only_in_parent`` / ``only_in_candidate``), so every
delta is over the items both scored and says how many were left out; two sides
with no item in common are a ``ValueError``.

Cases are paired by id; run A is the parent (baseline), run B the candidate.
Overall, per category and per split: mean Accuracy, Effectiveness and AVG of
both (percent), the delta (B - A) with a paired bootstrap interval (10,000
resamples, 95% percentile interval, P(delta <= 0)), and the cases that fail in
each. A block *regressed* when its AVG interval lies entirely below 0.

**Newly failing**: a case that passed in A and does not pass in B; **newly
passing** the reverse. A case passes when it is fully right: Accuracy 1 and
Effectiveness 1 (``evaluation.scoring.passed``). So a drop from a full answer
to a half-effective one counts; a change between two failing scores does not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evaluation.scoring import passed
from evaluation.stats import DEFAULT_RESAMPLES, paired_bootstrap
from evaluation.summary import score_row

METRICS = ("accuracy", "effectiveness", "avg")


def _block(pairs: list[tuple[dict, dict]], *, resamples: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(pairs)}
    for metric in METRICS:
        base = [float(a[metric] or 0.0) for a, _ in pairs]
        cand = [float(b[metric] or 0.0) for _, b in pairs]
        boot = paired_bootstrap(baseline=base, candidate=cand, resamples=resamples, seed=seed)
        out[metric] = {
            "parent": round(100 * sum(base) / len(base), 2),
            "candidate": round(100 * sum(cand) / len(cand), 2),
            "delta": round(100 * boot.delta, 2),
            "low": round(100 * boot.low, 2),
            "high": round(100 * boot.high, 2),
            "p_delta_le_zero": round(boot.p_delta_le_zero, 4),
        }
    out["regressed"] = out["avg"]["high"] < 0
    out["improved"] = out["avg"]["low"] > 0
    out["errors_parent"] = sum(1 for a, _ in pairs if not passed(a))
    out["errors_candidate"] = sum(1 for _, b in pairs if not passed(b))
    if out["errors_parent"]:
        out["error_reduction_pct"] = round(
            100 * (out["errors_parent"] - out["errors_candidate"]) / out["errors_parent"], 1
        )
    return out


def _change(case_id: str, a: dict, b: dict, *, reasons: list[str]) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "category": a["category"],
        "parent_avg": a["avg"],
        "candidate_avg": b["avg"],
        "reasons": ",".join(reasons),
    }


def paired_ids(
    parent: Mapping[str, Any], candidate: Mapping[str, Any], *, order: Iterable[str] | None = None
) -> tuple[list[str], dict[str, int]]:
    """(the ids both sides scored, in ``order`` (sorted by default), {"only_in_parent": N,
    "only_in_candidate": M}); ValueError when the two share none."""
    ids = [i for i in (order or sorted(parent)) if i in parent and i in candidate]
    if not ids:
        raise ValueError("the two runs share no scored case; compare runs of the same cases")
    return ids, {
        "only_in_parent": len(set(parent) - set(candidate)),
        "only_in_candidate": len(set(candidate) - set(parent)),
    }


def paired_difference(
    parent: Mapping[str, float],
    candidate: Mapping[str, float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Candidate minus parent over the items both scored (item id -> score in [0, 1]; reported
    x100), paired item by item, with the paired-bootstrap 95% interval: {delta, low, high,
    p_delta_le_zero, n, only_in_parent, only_in_candidate}; ValueError when they share no item."""
    ids, unpaired = paired_ids(parent, candidate)
    result = paired_bootstrap(
        baseline=[100 * parent[i] for i in ids],
        candidate=[100 * candidate[i] for i in ids],
        resamples=resamples,
        seed=seed,
    )
    return {
        "delta": result.delta,
        "low": result.low,
        "high": result.high,
        "p_delta_le_zero": result.p_delta_le_zero,
        "n": result.n,
        **unpaired,
    }


def paired_comparison(
    *,
    parent: list[dict],
    candidate: list[dict],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    order: list[str] | None = None,
) -> dict[str, Any]:
    """Compare flattened rows (``score_row``) of two runs; ``order``: case ids in display order.

    A newly failing case lists the candidate's reason codes, a newly passing one the parent's."""
    a = {r["id"]: r for r in parent}
    b = {r["id"]: r for r in candidate}
    ids, unpaired = paired_ids(a, b, order=order)
    pairs = [(a[i], b[i]) for i in ids]
    by_category: dict[str, list] = defaultdict(list)
    by_split: dict[str, list] = defaultdict(list)
    for pa, pb in pairs:
        by_category[pa["category"]].append((pa, pb))
        if pa.get("split"):
            by_split[pa["split"]].append((pa, pb))
    per_category = {
        k: _block(v, resamples=resamples, seed=seed) for k, v in sorted(by_category.items())
    }
    return {
        "n": len(ids),
        "resamples": resamples,
        **unpaired,
        "overall": _block(pairs, resamples=resamples, seed=seed),
        "per_category": per_category,
        "per_split": {
            k: _block(v, resamples=resamples, seed=seed) for k, v in sorted(by_split.items())
        },
        "regressed_categories": [c for c, block in per_category.items() if block["regressed"]],
        "newly_failing": [
            _change(i, a[i], b[i], reasons=b[i]["reasons"])
            for i in ids
            if passed(a[i]) and not passed(b[i])
        ],
        "newly_passing": [
            _change(i, a[i], b[i], reasons=a[i]["reasons"])
            for i in ids
            if not passed(a[i]) and passed(b[i])
        ],
    }


def _rows(run: str | Path) -> list[dict]:
    from evaluation.runner import RESULTS, load_results

    path = Path(run)
    path = path / RESULTS if path.is_dir() else path
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no results file; pass a run folder written by 'evaluation run'"
        )
    return [score_row(r) for r in load_results(path)]


run_rows = _rows
"""The flattened rows of a run folder (or results file) of ``evaluation run``."""


def compare_runs(
    *, run_a: str | Path, run_b: str | Path, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """``paired_comparison`` of two run folders (or results files) of ``evaluation run``."""
    parent, candidate = (
        _rows(run_a),
        _rows(run_b),
    )  # a damaged file's own error names its file and line
    try:
        result = paired_comparison(
            parent=parent, candidate=candidate, resamples=resamples, seed=seed
        )
    except ValueError:
        raise ValueError(
            f"{run_a} and {run_b} share no case ids; compare runs of the same set"
        ) from None
    return {"run_a": str(run_a), "run_b": str(run_b), **result}


def comparison_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Comparison: B = {result['run_b']} vs A = {result['run_a']}",
        "",
        f"{result['n']} paired cases. Delta intervals: "
        f"paired bootstrap, {result['resamples']} resamples, "
        "95% percentile. A case fails unless Accuracy and Effectiveness are both 1.",
        "",
        "| scope | n | Acc A | Acc B | Eff A | Eff B | AVG "
        "A | AVG B | AVG delta | 95% interval | P(delta<=0) "
        "| failing A -> B | |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    scopes = [
        ("ALL", result["overall"]),
        *result["per_category"].items(),
        *((f"split {k}", v) for k, v in result["per_split"].items()),
    ]
    for name, e in scopes:
        avg = e["avg"]
        flag = "REGRESSED" if e["regressed"] else ("improved" if e["improved"] else "")
        lines.append(
            f"| {name} | {e['n']} | {e['accuracy']['parent']:.1f} "
            f"| {e['accuracy']['candidate']:.1f} | "
            f"{e['effectiveness']['parent']:.1f} | {e['effectiveness']['candidate']:.1f} | "
            f"{avg['parent']:.1f} | {avg['candidate']:.1f} | {avg['delta']:+.1f} | "
            f"[{avg['low']:+.1f}, {avg['high']:+.1f}] | {avg['p_delta_le_zero']:.3f} | "
            f"{e['errors_parent']} -> {e['errors_candidate']} | {flag} |"
        )
    for title, key in (("Newly failing", "newly_failing"), ("Newly passing", "newly_passing")):
        lines += ["", f"## {title} cases ({len(result[key])})", ""]
        lines += [
            f"- {x['case_id']} ({x['category']}): AVG {x['parent_avg']} -> {x['candidate_avg']}"
            + (f"; {x['reasons']}" if x["reasons"] else "")
            for x in result[key][:200]
        ]
    return "\n".join(lines) + "\n"

"""Paired comparison of two evaluation runs on the same cases (the regression check of SPEC §5).

Cases are paired by id. For every category and overall: mean Accuracy,
Effectiveness and AVG of both runs, the delta (B - A), and a paired bootstrap
of the AVG delta (10,000 resamples, 95% percentile interval, P(delta <= 0)).
Newly failing cases: Accuracy 1 -> 0 or AVG down by at least 0.5; newly passing
the reverse. A category *regressed* when its interval lies entirely below 0.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from evaluation.report import score_rows
from evaluation.runner import RESULTS, load_results
from evaluation.stats import DEFAULT_RESAMPLES, paired_bootstrap


def _rows(run: str | Path) -> dict[str, dict]:
    path = Path(run)
    path = path / RESULTS if path.is_dir() else path
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results file; pass a run folder written by 'evaluation run'")
    return {r["id"]: r for r in score_rows(load_results(path))}


def compare_runs(*, run_a: str | Path, run_b: str | Path, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = 0) -> dict[str, Any]:
    a, b = _rows(run_a), _rows(run_b)
    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError(f"{run_a} and {run_b} share no case ids; compare runs of the same set")
    groups: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        groups[a[i]["category"]].append(i)
        groups["ALL"].append(i)
    categories = {}
    for cat, members in sorted(groups.items(), key=lambda kv: (kv[0] == "ALL", kv[0])):
        entry: dict[str, Any] = {"n": len(members)}
        for metric in ("accuracy", "effectiveness", "avg"):
            va = [float(a[i][metric] or 0.0) for i in members]
            vb = [float(b[i][metric] or 0.0) for i in members]
            entry[metric] = {"a": sum(va) / len(va), "b": sum(vb) / len(vb), "delta": (sum(vb) - sum(va)) / len(va)}
        boot = paired_bootstrap(baseline=[float(a[i]["avg"] or 0.0) for i in members],
                                candidate=[float(b[i]["avg"] or 0.0) for i in members],
                                resamples=resamples, seed=seed)
        entry["avg_bootstrap"] = boot.to_dict()
        entry["regressed"] = boot.high < 0.0
        entry["improved"] = boot.low > 0.0
        categories[cat] = entry

    def failing(x: dict, y: dict) -> bool:
        return (x["accuracy"] == 1 and y["accuracy"] == 0) or (float(x["avg"] or 0) - float(y["avg"] or 0) >= 0.5)

    newly_failing = [{"id": i, "category": a[i]["category"], "a": a[i]["avg"], "b": b[i]["avg"]}
                     for i in ids if failing(a[i], b[i])]
    newly_passing = [{"id": i, "category": a[i]["category"], "a": a[i]["avg"], "b": b[i]["avg"]}
                     for i in ids if failing(b[i], a[i])]
    return {
        "run_a": str(run_a), "run_b": str(run_b), "paired_cases": len(ids),
        "only_in_a": len(set(a) - set(b)), "only_in_b": len(set(b) - set(a)),
        "categories": categories,
        "regressed_categories": [c for c, e in categories.items() if e["regressed"] and c != "ALL"],
        "newly_failing": newly_failing, "newly_passing": newly_passing,
    }


def comparison_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Comparison: B = {result['run_b']} vs A = {result['run_a']}", "",
        f"{result['paired_cases']} paired cases. AVG delta interval: paired bootstrap, "
        f"{result['categories']['ALL']['avg_bootstrap']['resamples']} resamples, 95% percentile.", "",
        "| category | n | Acc A | Acc B | Eff A | Eff B | AVG A | AVG B | AVG delta | 95% interval | P(delta<=0) | |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cat, e in result["categories"].items():
        boot = e["avg_bootstrap"]
        flag = "REGRESSED" if e["regressed"] else ("improved" if e["improved"] else "")
        lines.append(
            f"| {cat} | {e['n']} | {100 * e['accuracy']['a']:.1f} | {100 * e['accuracy']['b']:.1f} | "
            f"{100 * e['effectiveness']['a']:.1f} | {100 * e['effectiveness']['b']:.1f} | "
            f"{100 * e['avg']['a']:.1f} | {100 * e['avg']['b']:.1f} | {100 * e['avg']['delta']:+.1f} | "
            f"[{100 * boot['low']:+.1f}, {100 * boot['high']:+.1f}] | {boot['p_delta_le_zero']:.3f} | {flag} |")
    lines += ["", f"## Newly failing cases ({len(result['newly_failing'])})", ""]
    lines += [f"- {x['id']} ({x['category']}): AVG {x['a']} -> {x['b']}" for x in result["newly_failing"][:200]]
    lines += ["", f"## Newly passing cases ({len(result['newly_passing'])})", ""]
    lines += [f"- {x['id']} ({x['category']}): AVG {x['a']} -> {x['b']}" for x in result["newly_passing"][:200]]
    return "\n".join(lines) + "\n"

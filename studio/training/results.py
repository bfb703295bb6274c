"""A checkpoint evaluation's result as its run page shows it: one row per set, warnings first.

The scores are ``training.self_eval``'s summary (``RUN/eval/summary.json``); this module only says
what each row means: the set's label (the instruction-following set names its prompts: the
project's generated set or an official file), a set that failed (its error; the sets that
finished are still shown), the base model's score on the same prompts, and the warning of a set
whose requests mostly fell back to the Harness's fallback reply (``evaluation.summary``'s own
sentence, as the evolution pages show it), so no green number stands alone.
"""

from __future__ import annotations

from typing import Any


def evaluation_rows(evaluation: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Rows of the result table, in the sets' order, from an evaluation summary."""
    from evaluation.summary import fallback_warning, outcome_line
    from studio.training.configs import EVAL_SET_LABELS

    rows = []
    for name, label in EVAL_SET_LABELS.items():
        scores = (evaluation or {}).get(name)
        if not isinstance(scores, dict):
            continue
        row: dict[str, Any] = {
            "name": name,
            "label": label,
            "scores": scores,
            "error": scores.get("error", ""),
            "warning": "",
            "outcomes": "",
            "set_label": "",
            "base": None,
        }
        if isinstance(scores.get("outcomes"), dict):
            row["warning"] = fallback_warning(scores)
            row["outcomes"] = outcome_line(scores)
        if name == "ifeval" and not row["error"]:
            row["set_label"] = (scores.get("set") or {}).get("label", "")
            if isinstance(scores.get("base"), dict):
                from evaluation.gates import EvidenceError, capability_comparison, read_ifeval

                try:
                    paired = capability_comparison(read_ifeval(scores, source=f"the {label} set"))
                except EvidenceError:
                    # the gate names what is wrong with the block; the page shows the scores
                    paired = None
                row["base"] = {**scores["base"], "paired": paired.as_dict() if paired else None}
        rows.append(row)
    return rows

"""The ablation's per-item statistics and its table (``table.json`` / ``table.md``).

Every cell is read from the per-item JSONL that ``python -m training eval`` wrote for a finished
evaluation step (``item_scores``), and every difference is the one paired comparison
(``evaluation.compare.paired_difference``): against Base per set, against Fixed-Harness SFT per T2
judge dimension, and the two target comparisons. ``AblationTable`` is the table half of
``training.ablation.Ablation``, which runs the steps; it reads ``config``, ``root``, ``steps`` and
``_step_done`` from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.ablation_config import (
    LABELS,
    MODELS,
    OUTCOME_SETS,
    OUTCOMES,
    SET_LABELS,
    STEP_DIMENSIONS,
)


def item_scores(
    eval_dir: str | Path, set_name: str, *, rows: dict[str, dict[str, Any]] | None = None
) -> dict[str, float] | None:
    """Per-item scores (item id -> value in [0, 1]) of one set scored by ``python -m training eval``
    into ``eval_dir`` (None if that set is not there): a case's AVG on T1/T2, its rubric AVG on
    Prompt Robustness, and prompt-level strict pass/fail on IFEval (item id: the prompt's position).
    ``rows``: the set's per-item rows, if already read."""
    eval_dir = Path(eval_dir)
    if set_name == "ifeval":
        path = eval_dir / "summary.json"
        if not path.is_file():
            return None
        summary = json.loads(path.read_text(encoding="utf-8"))
        if "ifeval" not in summary:
            return None
        return {str(i): float(ok) for i, ok in enumerate(summary["ifeval"]["per_prompt"])}
    if rows is None:
        from training.self_eval import read_rows

        path = eval_dir / f"{set_name}.jsonl"
        if not path.is_file():
            return None
        rows = read_rows(path)
    key = "rubric_avg" if set_name == "prompt_robustness" else "avg"
    return {i: float(r[key] or 0.0) for i, r in rows.items()}


class AblationTable:
    """Table 4 from what is done: the per-item scores of each finished evaluation and the
    differences. With ``include_partial`` (``--table-only --partial``), an evaluation still running
    or stopped counts too, with the rows it has so far, and its cells say so: a long CPU ablation
    shows where it stands before its last case."""

    include_partial: bool = False

    def _partial(self, model: str, set_name: str) -> bool:
        """An unfinished T1/T2/Prompt Robustness evaluation with rows, counted because the table
        was asked for with ``include_partial``."""
        return (
            self.include_partial
            and set_name != "ifeval"  # its rows are scored at the end (summary.json)
            and not self._step_done(f"eval:{model}:{set_name}")
            and (self.root / "eval" / model / f"{set_name}.jsonl").is_file()
        )

    def _rows(self, model: str, set_name: str) -> dict[str, dict[str, Any]] | None:
        """The per-item rows (id -> row) of a finished evaluation (or a partial one, see
        ``include_partial``), read once per table, else None."""
        if not (self._step_done(f"eval:{model}:{set_name}") or self._partial(model, set_name)):
            return None
        key = (model, set_name)
        if key not in self._read:
            from training.self_eval import read_rows

            self._read[key] = read_rows(self.root / "eval" / model / f"{set_name}.jsonl")
        return self._read[key]

    def _scores(self, model: str, set_name: str) -> dict[str, float] | None:
        """Per-item scores (id -> value) of a finished (or counted partial) evaluation, else
        None."""
        if not (self._step_done(f"eval:{model}:{set_name}") or self._partial(model, set_name)):
            return None
        if set_name == "ifeval":
            return item_scores(self.root / "eval" / model, "ifeval")
        return item_scores(self.root / "eval" / model, set_name, rows=self._rows(model, set_name))

    def _dimension(self, model: str, name: str) -> dict[str, float] | None:
        """Per-case values of one judge dimension on T2 (cases where the judge scored it)."""
        rows = self._rows(model, "variant_qa")
        if rows is None:
            return None
        if name == "renamed_tool_called":
            renamed = self._renamed_tool_cases()
            return {
                i: 0.0 if "missing_tool_call" in r["reasons"] else 1.0
                for i, r in rows.items()
                if r.get("harness") in renamed.get(i, ())
            }
        return {
            i: float(r["dimensions"][name])
            for i, r in rows.items()
            if (r.get("dimensions") or {}).get(name) is not None
        }

    def _outcomes(self, model: str, set_name: str) -> dict[str, int] | None:
        """How the requests of a finished T1/T2 evaluation ended (the runtime's outcome), else
        None."""
        from evaluation.summary import outcome_counts

        rows = self._rows(model, set_name)
        if rows is None:
            return None
        # the one definition (evaluation.summary): effective = replied with Effectiveness 1
        return outcome_counts(
            [
                {"outcome": row.get("outcome"), "effectiveness": row.get("effectiveness")}
                for row in rows.values()
            ]
        )

    def _renamed_tool_cases(self) -> dict[str, set[str]]:
        """Held-out case id -> the evaluation variants under which a tool its gold needs has a new
        name. The variants are rebuilt from their seeds as ``training.self_eval`` builds them (no
        agents)."""
        if self._renamed is not None:
            return self._renamed
        from harness import load_dir
        from harness.augment import augment_bundle
        from training.case_sources import held_out_cases
        from training.hsa import merged_requirements, variant_seeds
        from training.self_eval import EVAL_POOL_SIZE, EVAL_VARIANT_SEED, VARIANT_DIMS
        from training.stage_common import resolve_harness_dir

        # a re-judged folder keeps the cases it was judged on (training.ablation_rejudge)
        kept = self.root / "sets" / "live_qa.jsonl"
        if kept.is_file():
            from evaluation.cases import load_cases

            cases = load_cases(kept)[: self.config.eval_cases]
        else:
            cases = held_out_cases()[: self.config.eval_cases]
        bundle, requirements = (
            load_dir(resolve_harness_dir(self.config.harness)),
            merged_requirements(cases),
        )

        def needed(case: dict[str, Any]) -> list[str]:
            return [
                t["name"]
                for t in (case.get("gold") or {}).get("tool_calls", [])
                if not t.get("optional")
            ]

        self._renamed = {}
        for seed in variant_seeds(EVAL_VARIANT_SEED // 1000, EVAL_POOL_SIZE):
            mapping = augment_bundle(
                bundle=bundle, seed=seed, dims=list(VARIANT_DIMS), requirements=requirements
            ).mapping
            for case in cases:
                try:
                    if needed(mapping.remap_case(case)) != needed(case):
                        self._renamed.setdefault(case["id"], set()).add(f"hsa{seed}")
                except (
                    ValueError
                ):  # a gold skill masked in this variant: the case ran on the original
                    continue
        return self._renamed

    def _bootstrap(self, base: dict[str, float], cand: dict[str, float]) -> dict[str, float]:
        """``evaluation.compare.paired_difference``: over the items both scored, the rest
        counted."""
        from evaluation.compare import paired_difference

        return paired_difference(base, cand, resamples=self.config.resamples)

    def write_table(self) -> dict[str, Any]:
        """Build the table from what is done and write table.json and table.md."""
        table = self.table()
        (self.root / "table.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
        (self.root / "table.md").write_text(self.markdown(table), encoding="utf-8")
        return table

    def table(self) -> dict[str, Any]:
        """The table's data from the folder (per-item evaluation rows, steps.json); nothing is
        written."""
        self._read: dict[
            tuple[str, str], dict[str, dict[str, Any]]
        ] = {}  # evaluation rows read for this table
        table: dict[str, Any] = {"models": {}, "targets": {}, "wall_s": {}}
        for model in MODELS:
            row: dict[str, Any] = {}
            for set_name in SET_LABELS:
                scores = self._scores(model, set_name)
                if scores is None:
                    continue
                if not scores:  # a partial evaluation with no row yet
                    continue
                cell: dict[str, Any] = {
                    "score": 100 * sum(scores.values()) / len(scores),
                    "n": len(scores),
                }
                if self._partial(model, set_name):
                    cell["partial"] = True
                    table.setdefault("partial", {})[f"eval:{model}:{set_name}"] = len(scores)
                base = self._scores("base", set_name)
                if model != "base" and base is not None:
                    cell["vs_base"] = self._bootstrap(base, scores)
                row[set_name] = cell
            table["models"][model] = row
        table["t2_steps"] = {}
        fixed_dims = {name: self._dimension("fixed_sft", name) for name in STEP_DIMENSIONS}
        for model in MODELS:
            cells = {}
            for name in STEP_DIMENSIONS:
                values = self._dimension(model, name)
                if values == {}:
                    cells[name] = {
                        "score": None,
                        "n": 0,
                    }  # scored, but the judge had nothing to grade
                elif values:
                    cells[name] = {
                        "score": 100 * sum(values.values()) / len(values),
                        "n": len(values),
                    }
                    if model != "fixed_sft" and fixed_dims[name]:
                        cells[name]["vs_fixed_sft"] = self._bootstrap(fixed_dims[name], values)
            table["t2_steps"][model] = cells
        table["outcomes"] = {
            model: {
                set_name: counts
                for set_name in OUTCOME_SETS
                if (counts := self._outcomes(model, set_name)) is not None
            }
            for model in MODELS
        }
        fixed, hsa = self._scores("fixed_sft", "variant_qa"), self._scores("hsa_sft", "variant_qa")
        if fixed and hsa:
            table["targets"]["hsa_sft_vs_fixed_sft_on_T2"] = {
                **self._bootstrap(fixed, hsa),
                "target": ">= +5",
            }
        # the same cases under the original Harness (T1) and under a variant (T2): how much a model
        # loses when the Harness changes, per case; and what HSA-SFT gives up on the original
        for model, target in (
            ("hsa_sft", "within 3 points (delta >= -3)"),
            ("fixed_sft", "none: reported beside HSA-SFT's"),
        ):
            t1, t2 = self._scores(model, "live_qa"), self._scores(model, "variant_qa")
            if t1 and t2:
                table["targets"][f"{model}_T2_vs_T1"] = {
                    **self._bootstrap(t1, t2),
                    "target": target,
                }
        fixed_t1, hsa_t1 = self._scores("fixed_sft", "live_qa"), self._scores("hsa_sft", "live_qa")
        if fixed_t1 and hsa_t1:
            table["targets"]["hsa_sft_vs_fixed_sft_on_T1"] = {
                **self._bootstrap(fixed_t1, hsa_t1),
                "target": "none: what HSA-SFT gives up on the original Harness",
            }
        base_if, full_if = self._scores("base", "ifeval"), self._scores("rl", "ifeval")
        if base_if and full_if:
            table["targets"]["full_pipeline_vs_base_on_IFE-P"] = {
                **self._bootstrap(base_if, full_if),
                "target": "within 2 points or interval includes 0",
            }
        table["wall_s"] = {
            name: round(info.get("wall_s", 0.0), 1) for name, info in self.steps.items()
        }
        return table

    def markdown(self, table: dict[str, Any]) -> str:
        header = "| Model | " + " | ".join(SET_LABELS.values()) + " |"
        lines = [
            f"# HAT ablation ({self.config.model}, {self.root.name})",
            "",
            "Scores x100; in brackets: paired-bootstrap 95% interval of the difference to Base "
            f"({self.config.resamples} resamples). Greedy decoding: at most "
            f"{self.config.agent_max_new_tokens} new tokens per agent model call, "
            f"{self.config.max_new_tokens} per IFEval answer.",
            *_rejudge_lines(self.root),
            *_partial_lines(table, self.config.eval_cases),
            "",
            header,
            "|" + "---|" * (len(SET_LABELS) + 1),
        ]
        for model in MODELS:
            cells = [
                _cell_text(table["models"].get(model, {}).get(s), against="vs_base", with_n=False)
                for s in SET_LABELS
            ]
            lines.append(f"| {LABELS[model]} | " + " | ".join(cells) + " |")
        lines += [
            "",
            "## T2 step-level dimensions",
            "",
            "Judge dimensions on Harness-Variant QA (x100); "
            "in brackets: the difference to Fixed-Harness SFT "
            "with its paired-bootstrap 95% interval.",
            "",
            "| Model | " + " | ".join(STEP_DIMENSIONS.values()) + " |",
            "|" + "---|" * (len(STEP_DIMENSIONS) + 1),
        ]
        for model in MODELS:
            cells = [
                _cell_text(
                    table.get("t2_steps", {}).get(model, {}).get(name),
                    against="vs_fixed_sft",
                    with_n=True,
                )
                for name in STEP_DIMENSIONS
            ]
            lines.append(f"| {LABELS[model]} | " + " | ".join(cells) + " |")
        lines += [
            "",
            "## How requests ended",
            "",
            "Replied (of which effective) / fallback reply / "
            "suppressed / silent, of n requests. A fallback "
            "is accurate but not effective, so a model that never finishes scores AVG ~50.",
            "",
            "| Model | "
            + " | ".join(SET_LABELS[s].removesuffix(" AVG") for s in OUTCOME_SETS)
            + " |",
            "|" + "---|" * (len(OUTCOME_SETS) + 1),
        ]
        for model in MODELS:
            cells = []
            for set_name in OUTCOME_SETS:
                c = table.get("outcomes", {}).get(model, {}).get(set_name)
                other = c and c["n"] - sum(c[name] for name in OUTCOMES)
                cells.append(
                    "pending"
                    if c is None
                    else f"{c['replied']} ({c['effective']} effective) / {c['fallback']} / "
                    f"{c['suppressed']} / {c['silent']}"
                    + (f" / {c['error']} error" if c["error"] else "")
                    + (f" / {other} other" if other else "")
                    + f" of {c['n']}"
                )
            lines.append(f"| {LABELS[model]} | " + " | ".join(cells) + " |")
        lines += ["", "## Targets", ""]
        for name, t in table["targets"].items():
            lines.append(
                f"- {name}: delta {t['delta']:+.1f} [{t['low']:+.1f}, {t['high']:+.1f}], "
                f"P(delta<=0)={t['p_delta_le_zero']:.3f}, n={t['n']} (target {t['target']})"
            )
        if not table["targets"]:
            lines.append("- pending")
        lines += ["", "## Wall time per step", ""]
        lines += [f"- {name}: {secs:.0f} s" for name, secs in table["wall_s"].items()]
        return "\n".join(lines) + "\n"


def _cell_text(cell: dict[str, Any] | None, *, against: str, with_n: bool) -> str:
    """A table cell: 'pending', 'n/a' (scored, nothing to grade) or the score, then its
    difference."""
    if cell is None:
        return "pending"
    text = (
        "n/a"
        if cell["score"] is None
        else f"{cell['score']:.1f}"
        + (f" (partial, n={cell['n']})" if cell.get("partial") else "")
        + (f" (n={cell['n']})" if with_n and not cell.get("partial") else "")
    )
    return text + (_difference_text(cell[against]) if against in cell else "")


def _difference_text(difference: dict[str, Any]) -> str:
    """' (+1.2 [-0.5, +2.9])', naming how many items were paired when one side scored items the
    other did not."""
    text = f" ({difference['delta']:+.1f} [{difference['low']:+.1f}, {difference['high']:+.1f}]"
    if difference.get("only_in_parent") or difference.get("only_in_candidate"):
        text += f" on the {difference['n']} items both scored"
    return text + ")"


def _rejudge_lines(root: Path) -> list[str]:
    """The header lines of a folder ``training.ablation_rejudge`` wrote: which rows were
    re-judged, what is the source's, and that no model was called."""
    path = root / "rejudge.json"
    if not path.is_file():
        return []
    note = json.loads(path.read_text(encoding="utf-8"))
    return [
        "",
        f"**Re-judged, no model called:** the stored replies of `{note['source']}` scored again by "
        f"the current {note['judge']} judge ({len(note['rejudged'])} evaluations, "
        f"{sum(note['rejudged'].values())} rows: T1, T2 and Prompt Robustness Accuracy, "
        "Effectiveness and AVG). The rows keep no trajectory, so the T2 step-level dimensions and "
        "Prompt Robustness's rubric AVG (its tool-order rubric) are the source's, measured with "
        "the old judge; IFEval rows are copied (no judge). "
        f"Cases: {note['sets']}. The source folder's figures are the old judge's.",
    ]


def _partial_lines(table: dict[str, Any], eval_cases: int) -> list[str]:
    """The header lines of a table that counts unfinished evaluations: which, and how far each
    got; their differences pair only the cases both sides scored."""
    partial = table.get("partial") or {}
    if not partial:
        return []
    steps = ", ".join(f"{name} {n} of {eval_cases}" for name, n in sorted(partial.items()))
    return [
        "",
        f"**Partial (unfinished evaluations counted):** {steps} scored so far. A difference "
        "pairs the cases both sides scored; the figures move until each step is done.",
    ]

"""A finished ablation folder's stored rows scored again by the current judge, no model called.

``python -m training ablation --rejudge SOURCE --output-dir DEST [--rejudge-sets DIR]`` reads the
per-item rows ``python -m training eval`` stored in ``SOURCE/eval/<model>/`` and writes an
ablation folder ``DEST`` whose T1 / T2 / Prompt Robustness rows carry the current programmatic
judge's Accuracy, Effectiveness and AVG, and whose ``table.md`` (the same table, the same paired
intervals) says so in its header. ``SOURCE`` is not touched: its figures stay those of the judge
it was scored with.

What is re-judged and what is not (a stored row keeps the reply, route and outcome, not the
trajectory):

- Accuracy, Effectiveness, AVG of T1, T2 and Prompt Robustness: re-judged from the case, the
  reply, the route and the stored outcome (a request the runtime ended in its fallback line is
  judged as one). Without the trajectory the judge has no tool results and no system prompt as
  evidence; the catalogue and the case are all it checks a claim against;
- the trajectory's dimensions (Skill Selection, Tool Rationality, Renamed Tool Called, their
  reason codes) and Prompt Robustness's rubric AVG (its tool-order rubric reads the trajectory)
  are the stored ones, measured by the judge the source folder was scored with; each row says
  so (``rejudged.kept_from_source``) and so does the table's header;
- IFEval rows are copied: IFEval does not use the judge.

The cases are rebuilt as the evaluation built them (``training.self_eval``): T1 the first
``eval_cases`` held-out cases, T2 the same cases each under its variant of the evaluation pool
(rebuilt from its seeds, no agents), Prompt Robustness the first ``eval_prompt_robustness``
cases. They come from the world the current generator builds, or from ``--rejudge-sets DIR`` (a
folder of world sets: ``live_qa.jsonl``, ``prompt_robustness.jsonl``, ``catalogue.json``) when the
ablation ran on sets of an older generator. Every stored row must match its rebuilt case (same
id, same category, on T2 the same variant), else nothing is written and the error says which
row differs. The cases used are written to ``DEST/sets/`` so the folder can be re-judged again.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from harness.config_schema import dump_config

REJUDGED_SETS = ("live_qa", "variant_qa", "prompt_robustness")
REJUDGE_FILE = "rejudge.json"
SETS_DIR = "sets"
# what a stored row keeps from the source folder's judge (it needs the trajectory)
KEPT_FROM_SOURCE = ("skill_selection", "tool_rationality", "trajectory reasons", "rubric_avg")
_TRAJECTORY_DIMENSIONS = ("skill_selection", "tool_rationality")


class RejudgeError(ValueError):
    """A folder that cannot be re-judged; the message names the folder, file or row."""


def held_out_source(sets_dir: Path | None) -> tuple[list[dict], list[dict], Any]:
    """The held-out Live-Stream QA cases, the Prompt Robustness cases and the catalogue: from the
    world the current generator builds, or from a folder of world sets."""
    if sets_dir is None:
        from training.case_sources import held_out_cases, world_catalogue, world_set

        return held_out_cases(), world_set("prompt_robustness"), world_catalogue()
    from evaluation.cases import load_cases
    from harness.livestream import Catalogue
    from training.case_sources import HELD_OUT

    missing = [
        name
        for name in ("live_qa.jsonl", "prompt_robustness.jsonl", "catalogue.json")
        if not (sets_dir / name).is_file()
    ]
    if missing:
        raise RejudgeError(
            f"--rejudge-sets {sets_dir}: no {', '.join(missing)} there (a folder of world sets "
            "as `python -m evaluation world` writes it, or a re-judged folder's sets/)"
        )
    return (
        load_cases(sets_dir / "live_qa.jsonl")[:HELD_OUT],
        load_cases(sets_dir / "prompt_robustness.jsonl"),
        Catalogue.load(sets_dir / "catalogue.json"),
    )


def variant_items(cases: list[dict], *, harness: str) -> list[tuple[dict, str]]:
    """Each case with its gold remapped to its variant of the evaluation pool and the variant's
    name, as ``training.self_eval`` assigns them (variant ``i % pool`` in name order; a case whose
    gold skill the variant masks runs on the original)."""
    from harness import load_dir
    from harness.augment import augment_bundle
    from training.hsa import merged_requirements, variant_seeds
    from training.self_eval import EVAL_POOL_SIZE, EVAL_VARIANT_SEED, VARIANT_DIMS
    from training.stage_common import resolve_harness_dir

    bundle = load_dir(resolve_harness_dir(harness))
    requirements = merged_requirements(cases)
    mappings = {
        f"hsa{seed}": augment_bundle(
            bundle=bundle, seed=seed, dims=list(VARIANT_DIMS), requirements=requirements
        ).mapping
        for seed in variant_seeds(EVAL_VARIANT_SEED // 1000, EVAL_POOL_SIZE)
    }
    names = sorted(mappings)
    items = []
    for i, case in enumerate(cases):
        name = names[i % len(names)]
        try:
            items.append((mappings[name].remap_case(case), name))
        except ValueError:  # a gold skill masked in this variant
            items.append((case, "original"))
    return items


def rejudge_row(judge, case: dict, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (as ``training.self_eval`` stores it) with Accuracy, Effectiveness and AVG of the
    current ``judge``; the trajectory's dimensions and reasons and the rubric AVG as stored."""
    if row.get("error"):
        return row  # a crashed case stays a crash
    # the stored outcome stands in for the trajectory: a fallback is judged as one; with no
    # tool calls recorded, the trajectory's own scores below are not this verdict's
    stub = {"outcome": row.get("outcome"), "outcome_reason": "the runtime fell back (stored)"}
    verdict = judge.judge(
        case=case, reply=row.get("reply") or "", route=row.get("route") or "public", trajectory=stub
    ).to_dict()
    text_reasons = [
        r["code"] for r in verdict["reasons"] if r["dimension"] not in _TRAJECTORY_DIMENSIONS
    ]
    from evaluation.judges.base import TRAJECTORY_REASONS

    kept_reasons = [c for c in row.get("reasons") or [] if c in TRAJECTORY_REASONS]
    kept_reasons = [c for c in kept_reasons if c != "instruction_not_followed"]
    stored_dims = row.get("dimensions") or {}
    return {
        **row,
        "accuracy": verdict["accuracy"],
        "effectiveness": verdict["effectiveness"],
        "avg": verdict["avg"],
        "reasons": text_reasons + kept_reasons,
        "dimensions": {
            **stored_dims,
            "accuracy": verdict["dimensions"]["accuracy"],
            "effectiveness": verdict["dimensions"]["effectiveness"],
            "required_facts": verdict["dimensions"]["required_facts"],
        },
        "rejudged": {
            "judge": verdict["judge"],
            "old": {k: row.get(k) for k in ("accuracy", "effectiveness", "avg", "reasons")},
            "kept_from_source": list(KEPT_FROM_SOURCE),
        },
    }


def rejudge_ablation(
    *, source: str | Path, output_dir: str | Path, sets_dir: str | Path | None = None
) -> dict[str, Any]:
    """Re-judge ``source``'s stored rows into ``output_dir`` (see the module docstring); returns
    the new table. Nothing is written when a stored row does not match its rebuilt case."""
    from evaluation.scoring import judge_for
    from harness import load_dir
    from harness.config_schema import config_from_dict
    from training.ablation import Ablation
    from training.ablation_config import AblationConfig
    from training.self_eval import read_rows, set_summary
    from training.stage_common import resolve_harness_dir

    source, dest = Path(source), Path(output_dir)
    config_path = source / "ablation_config.json"
    if not config_path.is_file():
        raise RejudgeError(f"--rejudge {source}: no ablation_config.json there (not an ablation)")
    if dest.resolve() == source.resolve():
        raise RejudgeError(
            "--output-dir is the folder to re-judge; give another one (the source keeps the "
            "figures of the judge it was scored with)"
        )
    if dest.exists() and any(dest.iterdir()):
        raise RejudgeError(f"--output-dir {dest}: not empty; give a new folder")
    config = config_from_dict(
        AblationConfig, json.loads(config_path.read_text(encoding="utf-8")), source=str(config_path)
    )
    held_out, robustness, catalogue = held_out_source(Path(sets_dir) if sets_dir else None)
    cases = held_out[: config.eval_cases]
    robustness = robustness[: config.eval_prompt_robustness]
    items = {
        "live_qa": [(c, "original") for c in cases],
        "variant_qa": variant_items(cases, harness=config.harness),
        "prompt_robustness": [(c, "original") for c in robustness],
    }
    judge = judge_for(load_dir(resolve_harness_dir(config.harness)), catalogue=catalogue)

    # read and check everything before writing anything
    models = sorted(p.name for p in (source / "eval").iterdir() if p.is_dir())
    rejudged: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for model in models:
        for set_name in REJUDGED_SETS:
            path = source / "eval" / model / f"{set_name}.jsonl"
            if not path.is_file():
                continue
            by_id = {c["id"]: (c, h) for c, h in items[set_name]}
            rows = []
            for row in read_rows(path).values():
                if row["id"] not in by_id:
                    raise RejudgeError(
                        f"{path}: row {row['id']} is not among the {len(by_id)} cases rebuilt "
                        "for this set"
                    )
                case, harness = by_id[row["id"]]
                if row.get("category") != case.get("category") or row.get("harness") != harness:
                    raise RejudgeError(
                        f"{path}: row {row['id']} ran a {row.get('category')} case under "
                        f"{row.get('harness')}, the rebuilt case is a {case.get('category')} "
                        f"case under {harness}: the sets were generated otherwise then (give "
                        "--rejudge-sets with the world sets the ablation ran on)"
                    )
                rows.append(rejudge_row(judge, case, row))
            rejudged[(model, set_name)] = rows

    dest.mkdir(parents=True, exist_ok=True)
    for model in models:
        (dest / "eval" / model).mkdir(parents=True, exist_ok=True)
        summary_path = source / "eval" / model / "summary.json"
        summary = (
            json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
        )
        for name in ("ifeval.jsonl", "ifeval_base.jsonl"):  # no judge in IFEval: as scored
            if (source / "eval" / model / name).is_file():
                shutil.copy2(source / "eval" / model / name, dest / "eval" / model / name)
        for set_name in REJUDGED_SETS:
            rows = rejudged.get((model, set_name))
            if rows is None:
                continue
            (dest / "eval" / model / f"{set_name}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
            summary[set_name] = set_summary(rows)
        (dest / "eval" / model / "summary.json").write_text(
            json.dumps(summary, indent=2) + "\n", encoding="utf-8"
        )
    if (source / "steps.json").is_file():
        shutil.copy2(source / "steps.json", dest / "steps.json")
    (dest / SETS_DIR).mkdir(exist_ok=True)
    for name, chosen in (("live_qa", cases), ("prompt_robustness", robustness)):
        (dest / SETS_DIR / f"{name}.jsonl").write_text(
            "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chosen), encoding="utf-8"
        )
    (dest / SETS_DIR / "catalogue.json").write_text(
        json.dumps(catalogue.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    note = {
        "source": str(source),
        "judge": "programmatic",
        "model_called": False,
        "rejudged": {
            f"{model}:{set_name}": len(rows) for (model, set_name), rows in rejudged.items()
        },
        "rejudged_scores": ["accuracy", "effectiveness", "avg"],
        "kept_from_source": list(KEPT_FROM_SOURCE),
        "copied": ["ifeval"],
        "sets": _sets_text(Path(sets_dir) if sets_dir else None),
    }
    (dest / REJUDGE_FILE).write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")
    config = dataclasses.replace(config, output_dir=str(dest))
    dump_config(config, dest / "ablation_config.json")
    return Ablation(config).write_table()


def _sets_text(sets_dir: Path | None) -> str:
    """Where the cases came from, in words, for the table's header."""
    if sets_dir is None:
        from evaluation.world.sets import GENERATOR_VERSION

        return f"the world of seed 0, generator version {GENERATOR_VERSION} (the current one)"
    manifest = sets_dir / "manifest.json"
    if not manifest.is_file():
        return f"the sets of {sets_dir.name}/, copied to {SETS_DIR}/"
    info = json.loads(manifest.read_text(encoding="utf-8"))
    # manifests before the generator recorded its version are version 1
    return (
        f"the world of seed {info.get('seed')}, generator version "
        f"{info.get('generator_version', 1)} (the ablation's), copied to {SETS_DIR}/"
    )

"""Job kinds of the training app: the training stages, the pipeline, MTP adaptation, the ablation,
checkpoint evaluation, the replay.

Training and replay jobs go to the train queue (only workers started with ``-Q train`` take them,
so they never hold the slots evaluation jobs need); a checkpoint evaluation stays on the default
queue with the other evaluations. Every kind runs the same service: the run's commands in order.
"""

from __future__ import annotations

from typing import Any

from studio.jobs.fallback import fallback_first, replay_flag, summary_flag
from studio.jobs.registry import JobContext, job_kind


def run_outcome(result: dict[str, Any]) -> str:
    """What the run left, in a few words: steps trained, the scores, the replay's p95."""
    summary = (result or {}).get("summary") or {}
    if "ablation" in summary:
        steps = summary["ablation"]["steps"]
        done = sum(1 for step in steps if step["done"])
        return f"ablation: {done} of {len(steps)} steps done; the table is on the run page"
    if "head_card" in summary:
        card = summary["head_card"]
        rate = (card.get("acceptance_held_out") or {}).get("acceptance_rate")
        accepted = f", held-out acceptance {rate:.2f}" if isinstance(rate, int | float) else ""
        return f"adapted a draft head in {card.get('steps')} steps{accepted}: head in final/"
    if "model_card" in summary:
        card = summary["model_card"]
        steps = card.get("steps")
        counted = f"{steps} step{'' if steps == 1 else 's'}"
        if (
            result.get("kind") == "pipeline"
        ):  # the card is the last stage's: the pipeline's own steps are per stage
            return (
                f"pipeline finished; its last stage ({card.get('stage')}) "
                f"trained {counted}: model in final/"
            )
        return f"trained {counted} ({card.get('stage')}): model in final/"
    if "evaluation" in summary:
        scores = {name: s for name, s in summary["evaluation"].items() if isinstance(s, dict)}
        parts = [
            f"{name} AVG {s['avg']:.1f}"
            if "avg" in s
            else f"{name} strict {s.get('prompt_strict', 0):.1f}"
            for name, s in scores.items()
        ]
        return fallback_first(", ".join(parts), flag=summary_flag(scores))
    if "replay" in summary:
        levels = summary["replay"].get("levels", {})
        parts = []
        for level, metrics in levels.items():
            p95 = metrics.get("wall_p95_s")
            parts.append(
                f"C={level}" + (f" p95 {p95:.2f} s" if isinstance(p95, int | float) else "")
            )
        return fallback_first("replayed " + ", ".join(parts), flag=replay_flag(levels))
    return "the run folder holds no result"


def _run(context: JobContext) -> dict:
    from studio.training.services import run_execute

    return run_execute(run_id=int(context.params["run_id"]), context=context)


for _name, _label, _queue in (
    ("train_sft", "Training: HSA-SFT", "train"),
    ("train_opd", "Training: General OPD", "train"),
    ("train_rl", "Training: HSA-RL", "train"),
    ("train_pipeline", "Training: pipeline", "train"),
    ("train_mtp", "Training: MTP draft head", "train"),
    ("ablation_run", "Ablation (Table 4)", "train"),
    ("checkpoint_eval", "Checkpoint evaluation", ""),
    ("replay_run", "Deployment replay", "train"),
):
    job_kind(
        _name,
        label=_label,
        outcome=run_outcome,
        queue=_queue,
        cancel_permission="training.run",
        result_template="training/_job_result.html",
        present=lambda result: {"run_id": result.get("run_id"), "result": result},
    )(_run)

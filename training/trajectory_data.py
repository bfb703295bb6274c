"""Stage 1 data: judged teacher trajectories under the original and HSA Harnesses -> examples.

For each training case: the original Harness and K variants drawn from a
seeded pool (``training.hsa``). The teacher is either

- ``gold``: the case's gold trajectory recorded by the runtime under the
  original Harness (``training.gold``), remapped by each variant's HSA mapping
  and replayed under the variant; labelled ``teacher: gold-replay``; a share of
  cases (``retry_fraction``) is recorded as a recovery trajectory (reply tried
  before the reply skill was loaded, blocked by the stop gate, then fixed);
- ``openai:BASE_URL:MODEL``: any OpenAI-compatible model run by the runtime.

A rejection-sampling judge (the project's programmatic judge, the same one the
evaluation uses) keeps trajectories with Accuracy >= ``min_accuracy`` and
Effectiveness >= ``min_effectiveness``. Trajectories with hook-triggered retries
keep the whole retry with probability ``keep_retry_fraction`` and are stripped
otherwise (``training.turns``). Every accepted model turn becomes one
prompt/completion example whose prompt is the runtime's own message list.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from training.turns import has_retry, turn_examples

RETRY_FRACTION = 0.2  # share of gold cases recorded as a hook-retry recovery


def judge_trajectory(judge, case: dict[str, Any], trajectory: dict[str, Any]):
    return judge.judge(
        case=case,
        reply=trajectory.get("reply", ""),
        route=trajectory.get("route", "public"),
        trajectory=trajectory,
    )


def examples_from_trajectory(
    trajectory: dict[str, Any],
    *,
    rng: random.Random,
    keep_retry_fraction: float,
    meta: dict[str, Any],
) -> tuple[list[dict[str, Any]], str]:
    """Per-turn examples; returns (examples, 'none' | 'kept' | 'stripped')."""
    if not has_retry(trajectory):
        return turn_examples(trajectory, strip_retries=False, meta=meta), "none"
    keep = rng.random() < keep_retry_fraction
    return turn_examples(
        trajectory, strip_retries=not keep, meta=meta
    ), "kept" if keep else "stripped"


def build_sft_examples(*, config, harness_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Examples and a report of what was generated, rejected, stripped (``config``:
    SFTStageConfig). ``hsa_mode: randomized`` draws a fresh state per group of cases instead
    (``training.randomized``)."""
    if getattr(config, "hsa_mode", "pool") == "randomized" and config.hsa_variants:
        from training.randomized import build_randomized_examples

        return build_randomized_examples(config=config, harness_dir=harness_dir)
    from evaluation.scoring import judge_for
    from harness import load_dir
    from harness.policies import make_policy
    from training.case_sources import training_cases
    from training.gold import record_gold, replay_under
    from training.hsa import build_pool

    source = training_cases(config.cases, limit=config.max_cases)
    bundle = load_dir(harness_dir)
    judge = judge_for(bundle, catalogue=source.catalogue)
    rng = random.Random(config.seed)
    pool_size = (config.hsa_pool or max(2 * config.hsa_variants, 4)) if config.hsa_variants else 0
    pool = build_pool(
        bundle=bundle,
        size=pool_size,
        seed=config.seed,
        dims=config.hsa_dims,
        cases=source.cases,
        catalogue=source.catalogue,
    )
    teacher = None if config.teacher == "gold" else make_policy(config.teacher)
    counts: Counter = Counter()
    examples: list[dict[str, Any]] = []
    try:
        for case in source.cases:
            entries = [pool.original, *pool.choose_variants(rng, config.hsa_variants)]
            gold = None
            if teacher is None:
                gold = record_gold(
                    pool.original.agent, case, with_retry=rng.random() < RETRY_FRACTION
                )
            for entry in entries:
                counts["trajectories"] += 1
                try:
                    case_v = entry.remap_case(case)
                except ValueError:  # a gold skill masked in this variant: the label cannot follow
                    counts["unmappable"] += 1
                    continue
                if teacher is None:
                    trajectory = (
                        gold
                        if not entry.augmented
                        else replay_under(entry.agent, case_v, entry.remap_trajectory(gold))
                    )
                else:
                    from evaluation.cases import case_request

                    entry.agent.policy = teacher
                    trajectory = entry.agent.run(case_request(case_v)).to_dict()
                    trajectory["teacher"] = config.teacher
                verdict = judge_trajectory(judge, case_v, trajectory)
                if (
                    verdict.accuracy < config.min_accuracy
                    or verdict.effectiveness < config.min_effectiveness
                ):
                    counts["rejected_by_judge"] += 1
                    continue
                counts["accepted"] += 1
                meta = {
                    "case_id": case["id"],
                    "category": case.get("category", ""),
                    "harness": entry.name,
                    "harness_digest": entry.bundle.digest,
                    "teacher": trajectory.get("teacher", ""),
                    "accuracy": verdict.accuracy,
                    "effectiveness": verdict.effectiveness,
                }
                turns, retry = examples_from_trajectory(
                    trajectory, rng=rng, keep_retry_fraction=config.keep_retry_fraction, meta=meta
                )
                counts[f"retry_{retry}"] += 1
                examples.extend(turns)
    finally:
        pool.close()
    rng.shuffle(examples)
    report = {
        "cases": len(source.cases),
        "case_source": source.name,
        "teacher": config.teacher,
        "hsa_variants_per_case": config.hsa_variants,
        "variant_pool": [e.name for e in pool.variants],
        "examples": len(examples),
        **{k: counts[k] for k in sorted(counts)},
    }
    return examples, report


def write_examples(examples: list[dict[str, Any]], path: str | Path) -> None:
    with Path(path).open("w", encoding="utf-8") as handle:
        for example in examples:
            handle.write(json.dumps(example, ensure_ascii=False) + "\n")

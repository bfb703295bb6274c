"""Domain-randomized HSA: a fresh Harness state per small group of trajectories.

The pooled recipe (``training.hsa``) shows every case under the original Harness and K of a fixed
pool of seeded variants: the shipped demo adapter saw 25 states in all and memorized them (it made
the right first tool call under 15 of 16 seen variants and 1 of 16 unseen ones). Here
(``hsa_mode: randomized``) the states are drawn from the HSA generator itself:

- each data epoch (``hsa_epochs``) shuffles the cases ``hsa_variants`` times (K, at least 1) and
  cuts each shuffle into groups of ``hsa_group_size``; each group gets its own state, from a seed
  no other group, epoch or evaluation uses (``state_seed``), so an epoch of 678 cases with K=3 in
  groups of 2 has about 1,000 states, and the next epoch is reseeded;
- ``hsa_original_share`` of the groups keep the original Harness (what holds T1);
- the state's families follow ``hsa_curriculum``: epoch e composes ``hsa_curriculum[e]`` families
  (the last entry repeats), drawn from ``hsa_dims``; ``[1, 2, 5]`` is one family at a time, then
  pairs, then full compositions;
- renames carry no meaning on ``hsa_opaque_name_share`` of the names (``fn_q7x``, ``t3``: the
  envelope's ``opaque_name_share``), so a name must be read from the tool list;
- a state is built for its group's own requirements (``harness.augment.requirements_from_case``),
  so skills no case of the group needs are masked, as they are in T2;
- recovery trajectories at stated shares, recorded through the runtime with ``ScriptedPolicy`` so
  every error and hook message is the runtime's own: ``unknown-tool`` (a wrong tool name, the
  runtime's "unknown tool" feedback, then the right call; the wrong name is the original's when
  the state renamed the tool, the memorized mistake) and ``grounding`` (a reply stating a figure
  before the product tool was called, the grounding hook's block, the tool call, the reply); the
  share measured after the judge is in the data report.

Every trajectory is the case's gold script written under the state's names (the case remapped by
the state's ``HarnessMapping``) and run by the runtime under the state, so prompts, tool results
and hook messages are the state's. The rest is the stage's: the judge, hook-retry stripping (a
recovery trajectory is always kept whole), per-turn examples packed by trajectory.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any

from harness.bundle import Bundle
from harness.policies import ScriptedPolicy
from harness.policies.base import ToolCall
from harness.policies.text_protocol import format_tool_call
from training.gold import TEACHER_GOLD, filled_arguments, gold_script

#: randomized states' seeds start here: clear of the pools (seed*1000+i), the evaluation's T2 pool
#: (900,000+) and the robustness check's unseen states (800,000+)
RANDOMIZED_SEED_BASE = 10_000_000
RECOVERY_KINDS = ("unknown-tool", "grounding", "stop-gate")
#: the product tool of the demo Harness's cases: a grounding recovery needs a fact it returns
PRODUCT_TOOLS = ("get_product_info_by_link_id", "search_products")


def state_seed(seed: int, epoch: int, group: int) -> int:
    """The seed of group ``group``'s state in data epoch ``epoch``: distinct for every (seed, epoch,
    group) with fewer than 10,000 groups an epoch and 100 epochs."""
    if not 0 <= group < 10_000 or not 0 <= epoch < 100:
        raise ValueError(f"state_seed: group {group} or epoch {epoch} out of range")
    return RANDOMIZED_SEED_BASE + (int(seed) * 100 + epoch) * 10_000 + group


def curriculum_width(curriculum: list[int], epoch: int, n_dims: int) -> int:
    """How many families a state composes in data epoch ``epoch`` (the last entry repeats)."""
    if not curriculum:
        return n_dims
    return max(1, min(n_dims, int(curriculum[min(epoch, len(curriculum) - 1)])))


def group_requirements(cases: list[dict[str, Any]]):
    """What a state must keep for its group (its cases' gold labels, and room for a recovery)."""
    from harness.augment import Requirements, requirements_from_case

    base = Requirements(rounds=5, retries=2)
    for case in cases:
        base = base.merge(requirements_from_case(case))
    return base


def _call(name: str, args: dict[str, Any]) -> str:
    return format_tool_call(ToolCall(name=name, arguments=args))


def _tools_of(bundle: Bundle, role: str, default: str) -> str:
    return next((t.name for t in bundle.tools if t.role == role), default)


def recovery_applies(kind: str, case: dict[str, Any]) -> bool:
    gold = case.get("gold") or {}
    if gold.get("route") == "silent" or not gold.get("reply_skills"):
        return False
    if kind == "stop-gate":
        return True
    calls = [c for c in gold.get("tool_calls") or [] if c.get("name")]
    if kind == "unknown-tool":
        return bool(calls)
    if kind == "grounding":
        reply = gold.get("reference_reply") or ""
        return any(ch.isdigit() for ch in reply) and bool(calls)
    raise ValueError(f"unknown recovery kind {kind!r}; one of {', '.join(RECOVERY_KINDS)}")


def wrong_tool_name(
    right: str, *, bundle: Bundle, mapping: Any, rng: random.Random
) -> tuple[str, str]:
    """A tool name the state does not have, and why it was chosen: the original's name when the
    state renamed ``right`` (what a model that memorized the original writes), else a plausible
    synonym (what a model that guesses from words writes)."""
    from harness.augment.names import new_name

    names = {t.name for t in bundle.tools}
    parent = {v: k for k, v in (getattr(mapping, "tools", None) or {}).items()}.get(right)
    if parent and parent not in names:
        return parent, "original-name"
    return new_name(right, rng=rng, kind="tool", taken=names), "guessed-name"


def recovery_script(
    kind: str, case: dict[str, Any], bundle: Bundle, *, mapping: Any, rng: random.Random
) -> tuple[list[str], dict[str, Any]]:
    """The model outputs of a recovery trajectory of ``case`` (already in ``bundle``'s names)."""
    if kind == "stop-gate":
        return gold_script(case, bundle, with_retry=True), {}
    gold = case["gold"]
    load = _tools_of(bundle, "load_skill", "load_skill")
    silent = _tools_of(bundle, "silent", "stay_silent")
    strategy = [_call(load, {"name": s}) for s in gold.get("strategy_skills", [])]
    calls = [
        _call(t["name"], filled_arguments(bundle, t["name"], t.get("arguments", {}), case))
        for t in gold.get("tool_calls", [])
        if t["name"] != silent
    ]
    reply_load = [_call(load, {"name": gold["reply_skills"][0]})]
    reply = gold.get("reference_reply") or ""
    if kind == "unknown-tool":
        first = next(t for t in gold["tool_calls"] if t["name"] != silent)
        wrong, why = wrong_tool_name(first["name"], bundle=bundle, mapping=mapping, rng=rng)
        wrong_call = _call(wrong, filled_arguments(bundle, first["name"], first["arguments"], case))
        # the wrong call alone in its round: no tool runs there, so the stage reads it as a failed
        # attempt (context for the next turn, never a target; training.turns.failed_calls)
        outputs = [*(["\n".join(strategy)] if strategy else []), wrong_call]
        outputs += ["\n".join(calls + reply_load), reply]
        return outputs, {"wrong_name": wrong, "wrong_name_kind": why}
    if kind == "grounding":
        return ["\n".join(strategy + reply_load), reply, "\n".join(calls), reply], {}
    raise ValueError(f"unknown recovery kind {kind!r}; one of {', '.join(RECOVERY_KINDS)}")


def recovered(kind: str, trajectory: dict[str, Any]) -> bool:
    """Did the runtime give the feedback the recovery is about (else it is a plain trajectory)?"""
    decisions = [d for d in trajectory.get("hook_decisions") or [] if isinstance(d, dict)]
    if kind == "unknown-tool":
        return any(
            d.get("decision") == "block"
            and d.get("event") == "after_model"
            and "unknown tool" in str(d.get("message"))
            for d in decisions
        )
    if kind in ("grounding", "stop-gate"):
        return any(d.get("decision") == "block" and d.get("event") == "stop" for d in decisions)
    return False


def run_script(agent, case: dict[str, Any], outputs: list[str]) -> dict[str, Any]:
    from evaluation.cases import case_request

    agent.policy = ScriptedPolicy(outputs, name=TEACHER_GOLD)
    trajectory = agent.run(case_request(case)).to_dict()
    trajectory["teacher"] = TEACHER_GOLD
    return trajectory


@dataclasses.dataclass
class State:
    """One drawn Harness state and the group of cases it serves."""

    name: str
    bundle: Bundle
    mapping: Any  # HarnessMapping; None for the original
    dims: list[str]
    seed: int | None


def draw_state(
    *,
    bundle: Bundle,
    cases: list[dict[str, Any]],
    seed: int,
    epoch: int,
    group: int,
    rng: random.Random,
    config,
    envelope,
) -> State:
    """The original (``hsa_original_share``) or a fresh variant for this group."""
    from harness.augment import augment_bundle

    if rng.random() < config.hsa_original_share:
        return State(name="original", bundle=bundle, mapping=None, dims=[], seed=None)
    width = curriculum_width(config.hsa_curriculum, epoch, len(config.hsa_dims))
    dims = sorted(rng.sample(list(config.hsa_dims), width), key=list(config.hsa_dims).index)
    s = state_seed(seed, epoch, group)
    variant = augment_bundle(
        bundle=bundle, seed=s, dims=dims, envelope=envelope, requirements=group_requirements(cases)
    )
    return State(name=f"hsa{s}", bundle=variant.bundle, mapping=variant.mapping, dims=dims, seed=s)


def pick_recovery(case: dict[str, Any], rng: random.Random, config) -> str:
    """``unknown-tool``, ``grounding``, ``stop-gate`` or ``""`` (plain) for one trajectory."""
    draw = rng.random()
    edge = 0.0
    for kind, share in (
        ("unknown-tool", config.recovery_unknown_tool_share),
        ("grounding", config.recovery_grounding_share),
        ("stop-gate", config.recovery_stop_gate_share),
    ):
        edge += share
        if draw < edge:
            return kind if recovery_applies(kind, case) else ""
    return ""


def build_randomized_examples(
    *, config, harness_dir
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Examples and a report (states drawn, families, recovery shares, what the judge rejected)."""
    from evaluation.scoring import judge_for
    from harness import load_dir
    from harness.augment import MappingError
    from harness.augment.pipeline import opaque_names_envelope
    from harness.runtime import Agent
    from training.case_sources import training_cases
    from training.trajectory_data import examples_from_trajectory, judge_trajectory

    source = training_cases(config.cases, limit=config.max_cases)
    bundle = load_dir(harness_dir)
    judge = judge_for(bundle, catalogue=source.catalogue)
    envelope = opaque_names_envelope(config.hsa_opaque_name_share)
    counts: Counter = Counter()
    families: Counter = Counter()
    widths: Counter = Counter()
    examples: list[dict[str, Any]] = []
    states: set[str] = set()
    group_size = max(1, config.hsa_group_size)

    def agent_for(b: Bundle):
        return Agent(bundle=b, policy=ScriptedPolicy([]), catalogue=source.catalogue)

    original_agent = agent_for(bundle)
    try:
        for epoch in range(config.hsa_epochs):
            rng = random.Random(f"{config.seed}:hsa-randomized:{epoch}")
            groups = []
            for _ in range(max(1, config.hsa_variants)):  # each case under K states an epoch
                order = list(source.cases)
                rng.shuffle(order)
                groups += [order[i : i + group_size] for i in range(0, len(order), group_size)]
            for g, group in enumerate(groups):
                state = draw_state(
                    bundle=bundle,
                    cases=group,
                    seed=config.seed,
                    epoch=epoch,
                    group=g,
                    rng=rng,
                    config=config,
                    envelope=envelope,
                )
                states.add(state.bundle.digest)
                counts["states_original" if state.mapping is None else "states_variant"] += 1
                if state.mapping is not None and state.mapping.masked_skills:
                    counts["states_masking_skills"] += 1
                widths[len(state.dims)] += 1
                families.update(state.dims)
                agent = original_agent if state.mapping is None else agent_for(state.bundle)
                try:
                    for case in group:
                        _one(
                            case=case,
                            state=state,
                            agent=agent,
                            epoch=epoch,
                            rng=rng,
                            config=config,
                            judge=judge,
                            counts=counts,
                            examples=examples,
                            mapping_error=MappingError,
                            judge_trajectory=judge_trajectory,
                            examples_from_trajectory=examples_from_trajectory,
                        )
                finally:
                    if agent is not original_agent:
                        agent.close()
    finally:
        original_agent.close()
    accepted = counts["accepted"]
    recovery = {
        kind: {
            "trajectories": counts[f"recovery_{kind}"],
            "share_of_accepted": round(counts[f"recovery_{kind}"] / accepted, 4) if accepted else 0,
            "configured_share": getattr(config, f"recovery_{kind.replace('-', '_')}_share"),
            "no_feedback": counts[f"recovery_{kind}_no_feedback"],
        }
        for kind in RECOVERY_KINDS
    }
    report = {
        "hsa_mode": "randomized",
        "cases": len(source.cases),
        "case_source": source.name,
        "teacher": "gold",
        "hsa_epochs": config.hsa_epochs,
        "hsa_group_size": group_size,
        "states_per_case_per_epoch": max(1, config.hsa_variants),
        "states_drawn": counts["states_original"] + counts["states_variant"],
        "distinct_states": len(states),
        "states_original": counts["states_original"],
        "states_variant": counts["states_variant"],
        "states_masking_skills": counts["states_masking_skills"],
        "original_share_configured": config.hsa_original_share,
        "families_per_state": {str(k): widths[k] for k in sorted(widths)},
        "family_counts": dict(sorted(families.items())),
        "curriculum": list(config.hsa_curriculum),
        "opaque_name_share": config.hsa_opaque_name_share,
        "recovery": recovery,
        "wrong_name_kinds": {
            k.removeprefix("wrong_"): counts[k] for k in sorted(counts) if k.startswith("wrong_")
        },
        "examples": len(examples),
        **{
            k: counts[k]
            for k in ("trajectories", "accepted", "rejected_by_judge", "unmappable")
            if k in counts or k == "accepted"
        },
        **{k: counts[k] for k in sorted(counts) if k.startswith("retry_")},
    }
    return examples, report


def _one(
    *,
    case,
    state: State,
    agent,
    epoch: int,
    rng: random.Random,
    config,
    judge,
    counts: Counter,
    examples: list,
    mapping_error,
    judge_trajectory,
    examples_from_trajectory,
) -> None:
    counts["trajectories"] += 1
    try:
        case_v = state.mapping.remap_case(case) if state.mapping is not None else case
    except (mapping_error, ValueError):
        counts["unmappable"] += 1
        return
    kind = pick_recovery(case_v, rng, config)
    facts: dict[str, Any] = {}
    if kind:
        outputs, facts = recovery_script(kind, case_v, state.bundle, mapping=state.mapping, rng=rng)
        trajectory = run_script(agent, case_v, outputs)
        if not recovered(kind, trajectory):  # the runtime gave no feedback: not a recovery
            counts[f"recovery_{kind}_no_feedback"] += 1
            kind = ""
            trajectory = run_script(agent, case_v, gold_script(case_v, state.bundle))
    else:
        trajectory = run_script(agent, case_v, gold_script(case_v, state.bundle))
    verdict = judge_trajectory(judge, case_v, trajectory)
    if verdict.accuracy < config.min_accuracy or verdict.effectiveness < config.min_effectiveness:
        counts["rejected_by_judge"] += 1
        if kind:
            counts[f"recovery_{kind}_rejected"] += 1
        return
    counts["accepted"] += 1
    if kind:
        counts[f"recovery_{kind}"] += 1
        if facts.get("wrong_name_kind"):
            counts[f"wrong_{facts['wrong_name_kind']}"] += 1
    meta = {
        "case_id": case["id"],
        "category": case.get("category", ""),
        "harness": state.name,
        "harness_digest": state.bundle.digest,
        "hsa_dims": state.dims,
        "hsa_epoch": epoch,
        "recovery": kind,
        "teacher": trajectory.get("teacher", ""),
        "accuracy": verdict.accuracy,
        "effectiveness": verdict.effectiveness,
    }
    keep = 1.0 if kind in ("unknown-tool", "grounding") else config.keep_retry_fraction
    turns, retry = examples_from_trajectory(
        trajectory, rng=rng, keep_retry_fraction=keep, meta=meta
    )
    counts[f"retry_{retry}"] += 1
    examples.extend(turns)

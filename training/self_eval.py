"""Scoring a checkpoint on subsets of the evaluation sets, resumably, with the project's judge.

Sets (all held out from training, see ``training.cases``):

- ``live_qa``: held-out Live-Stream QA cases under the original Harness (T1);
- ``variant_qa``: the same cases, each under an HSA variant from a pool whose
  seeds are disjoint from every training pool, gold labels remapped (T2);
- ``prompt_robustness``: the world's Prompt Robustness cases with their active
  instructions added to the Harness (``evaluation.case_harness``); rubric AVG;
- ``ifeval``: the first N IFEval prompts, official checkers, prompt-level strict.

Each scored item is appended to ``<out>/<set>.jsonl`` as it finishes, so a
killed evaluation resumes where it stopped. Requests get a CPU-sized time
budget (the Harness's 10 s budget is set for a served GPU model) and greedy
decoding, so scores compare models rather than luck or machine load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.jsonl import finished_records

EVAL_VARIANT_SEED = 900_000
EVAL_POOL_SIZE = 8
CPU_BUDGET_S = 600.0
VARIANT_DIMS = ("skills", "skill-content", "tools", "prompt", "hooks")
SETS = ("live_qa", "variant_qa", "prompt_robustness", "ifeval")


def read_rows(path: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in finished_records(path)}  # a torn line's case runs again


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def _policy(model_dir: str | Path, max_new_tokens: int):
    from harness.policies import GenerationSettings
    from harness.policies.local import TransformersPolicy

    return TransformersPolicy(model_dir, name=f"local:{model_dir}",
                              settings=GenerationSettings(temperature=0.0, max_new_tokens=max_new_tokens))


def _score_cases(*, items: list[tuple[dict, Any]], policy, out: Path, judge, agent_for) -> list[dict[str, Any]]:
    """``items``: (case with gold for its Harness, key of the agent to run it under)."""
    from evaluation.cases import case_request

    rows = read_rows(out)
    # Cases under the same Harness run back to back so that the policy's prefix cache holds its
    # system prompt; scores are keyed by case id, so the order changes nothing else.
    for case, key in sorted(items, key=lambda item: str(item[1])):
        if case["id"] in rows:
            continue
        agent = agent_for(key)
        agent.policy = policy
        traj = agent.run(case_request(case)).to_dict()
        verdict = judge.judge(case=case, reply=traj["reply"], route=traj["route"], trajectory=traj)
        row = {"id": case["id"], "category": case.get("category", ""), "harness": str(key),
               "reply": traj["reply"], "route": traj["route"], "outcome": traj["outcome"],
               "accuracy": verdict.accuracy, "effectiveness": verdict.effectiveness, "avg": verdict.avg,
               "rubric_avg": verdict.rubric_avg, "reasons": verdict.reason_codes,
               "rounds": traj["rounds"], "wall_s": traj["timings"].get("total_s"),
               "dimensions": verdict.dimensions}
        _append(out, row)
        rows[case["id"]] = row
    return [rows[c["id"]] for c, _ in items]


def evaluate_model(*, model_dir: str | Path, out_dir: str | Path, harness_dir: str | Path, sets: tuple[str, ...] = SETS,
                   n_cases: int = 100, n_prompt_robustness: int = 50, n_ifeval: int = 50,
                   max_new_tokens: int = 96, variant_pool: int = EVAL_POOL_SIZE) -> dict[str, Any]:
    """Score ``model_dir`` on the requested sets; per-item rows in ``out_dir``; returns the summary."""
    from evaluation.case_harness import bundle_for_case
    from evaluation.judges import make_judge
    from harness import load_dir
    from harness.runtime import Agent
    from training.cases import held_out_cases, world_catalogue, world_set
    from training.hsa import build_pool

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bundle = load_dir(harness_dir)
    catalogue = world_catalogue()
    judge = make_judge("programmatic", catalogue=catalogue,
                       max_reply_chars=int(bundle.prompt.constraints.get("max_reply_chars", 220)))
    policy = _policy(model_dir, max_new_tokens)
    cases = held_out_cases()[:n_cases]
    summary: dict[str, Any] = {"model": str(model_dir)}  # this call's scores; merged into summary.json
    agents: dict[Any, Any] = {}

    def agent_kwargs() -> dict[str, Any]:
        return {"trajectory_budget_s": CPU_BUDGET_S}

    try:
        if "live_qa" in sets or "variant_qa" in sets:
            pool = build_pool(bundle=bundle, size=variant_pool if "variant_qa" in sets else 0,
                              seed=EVAL_VARIANT_SEED // 1000, dims=list(VARIANT_DIMS),
                              cases=cases, catalogue=catalogue, agent_kwargs=agent_kwargs())
            agents.update({e.name: e.agent for e in [pool.original, *pool.variants]})
            entries = {e.name: e for e in pool.variants}
            if "live_qa" in sets:
                rows = _score_cases(items=[(c, "original") for c in cases], policy=policy,
                                    out=out_dir / "live_qa.jsonl", judge=judge, agent_for=agents.__getitem__)
                summary["live_qa"] = _avg_summary(rows)
            if "variant_qa" in sets:
                names = sorted(entries)
                items = []
                for i, case in enumerate(cases):
                    entry = entries[names[i % len(names)]]
                    try:
                        items.append((entry.remap_case(case), entry.name))
                    except ValueError:  # a gold skill masked in this variant
                        items.append((case, "original"))
                rows = _score_cases(items=items, policy=policy, out=out_dir / "variant_qa.jsonl", judge=judge,
                                    agent_for=agents.__getitem__)
                summary["variant_qa"] = _avg_summary(rows)
        if "prompt_robustness" in sets:
            pr_cases = world_set("prompt_robustness")[:n_prompt_robustness]
            by_digest = {}
            items = []
            for case in pr_cases:
                case_bundle = bundle_for_case(bundle, case)
                by_digest.setdefault(case_bundle.digest, case_bundle)
                items.append((case, case_bundle.digest))

            def pr_agent(digest):
                if digest not in agents:
                    agents[digest] = Agent(bundle=by_digest[digest], policy=policy, catalogue=catalogue,
                                           **agent_kwargs())
                return agents[digest]

            rows = _score_cases(items=items, policy=policy, out=out_dir / "prompt_robustness.jsonl", judge=judge,
                                agent_for=pr_agent)
            summary["prompt_robustness"] = _avg_summary(rows, rubric=True)
        if "ifeval" in sets:
            summary["ifeval"] = _ifeval(policy, out_dir / "ifeval.jsonl", n_ifeval)
    finally:
        for agent in agents.values():
            agent.close()
    from training.runs import update_json

    # two evaluations of one model on different sets, side by side, keep each other's scores
    return update_json(out_dir / "summary.json", lambda current: current.update(summary))


def _avg_summary(rows: list[dict[str, Any]], *, rubric: bool = False) -> dict[str, Any]:
    n = len(rows)
    out = {"n": n, "accuracy": 100 * sum(r["accuracy"] for r in rows) / n,
           "effectiveness": 100 * sum(r["effectiveness"] for r in rows) / n,
           "avg": 100 * sum(r["avg"] for r in rows) / n}
    if rubric:
        scored = [r["rubric_avg"] for r in rows if r.get("rubric_avg") is not None]
        out["rubric_avg"] = 100 * sum(scored) / len(scored) if scored else None
    return out


def _ifeval(policy, path: Path, limit: int) -> dict[str, Any]:
    from evaluation.ifeval import load_ifeval_prompts, score_responses

    prompts = load_ifeval_prompts(limit=limit)
    done = read_rows(path)
    for prompt in prompts:
        key = str(prompt["key"])
        if key in done:
            continue
        output = policy.generate([{"role": "user", "content": prompt["prompt"]}])
        row = {"id": key, "response": output.text}
        _append(path, row)
        done[key] = row
    result = score_responses(prompts=prompts, responses=[done[str(p["key"])]["response"] for p in prompts])
    return {"n": result.n_prompts, "prompt_strict": 100 * result.prompt_strict,
            "inst_strict": 100 * result.inst_strict,
            "per_prompt": [bool(r["prompt_level_strict_acc"]) for r in result.rows]}


def evaluate_run(*, run_dir: str | Path, harness_dir: str | Path, cases: int, seed: int = 0,
                 max_new_tokens: int = 96) -> dict[str, Any]:
    """A stage's self-evaluation after training: small subsets, scores written to ``run_dir/eval.json``."""
    run_dir = Path(run_dir)
    summary = evaluate_model(model_dir=run_dir / "final", out_dir=run_dir / "eval", harness_dir=harness_dir,
                             n_cases=cases, n_prompt_robustness=max(1, cases // 2), n_ifeval=max(1, cases // 2),
                             variant_pool=min(EVAL_POOL_SIZE, max(1, cases)), max_new_tokens=max_new_tokens)
    (run_dir / "eval.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary

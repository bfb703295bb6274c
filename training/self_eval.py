"""Scoring a checkpoint on subsets of the evaluation sets, resumably, with the project's judge.

Sets (all held out from training, see ``training.case_sources``):

- ``live_qa``: held-out Live-Stream QA cases under the original Harness (T1);
- ``variant_qa``: the same cases, each under an HSA variant from a pool whose
  seeds are disjoint from every training pool, gold labels remapped (T2);
- ``prompt_robustness``: the world's Prompt Robustness cases with their active
  instructions added to the Harness (``evaluation.case_harness``); rubric AVG;
- ``ifeval``: the first N instruction-following prompts (``evaluation.ifeval``'s configured source:
  the project's generated set unless a setting names the official file), lm-eval's IFEval
  checkers, prompt-level strict; the checkpoint's base model (its model card's ``base_model``)
  answers the same prompts, so the capability gate pairs the two prompt by prompt.

A set that fails (a missing prompt file, a model that cannot load) is recorded as
``{"error": ...}`` in the summary and the other sets still run and are kept; the command then
exits non-zero naming the sets that failed.

Each scored item is appended to ``<out>/<set>.jsonl`` as it finishes, so a
killed evaluation resumes where it stopped. Requests get a CPU-sized time
budget (the Harness's 10 s budget is set for a served GPU model) and greedy
decoding, so scores compare models rather than luck or machine load.

Two caps on new tokens: the agent's model calls (T1, T2, Prompt Robustness) get the one every
route serves the agent with (``AGENT_MAX_NEW_TOKENS``, ``GenerationSettings``' default), because a
lower cap cuts the calls a trained model makes (a round with two tool calls is 69 tokens; 27% of
the demo adapter's calls on the dev-set were over 64) and scores the cut instead of the model;
``max_new_tokens`` caps an IFEval answer only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.jsonl import finished_records
from harness.policies.base import GenerationSettings

#: New tokens per agent model call: what the CLI, the playground, ``python -m evaluation run`` and
#: the replay serve the agent with (``harness.policies.GenerationSettings``' default, 256).
AGENT_MAX_NEW_TOKENS = GenerationSettings().max_new_tokens
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
    """The checkpoint on the torch route (the factory's ``torch:DIR``), greedy: the agent's and
    IFEval's model."""
    from harness.policies.factory import make_local_policy

    return make_local_policy(
        str(model_dir),
        engine="torch",
        name=f"local:{model_dir}",
        settings=GenerationSettings(temperature=0.0, max_new_tokens=max_new_tokens),
    )


def _stored(row: dict[str, Any], *, harness: str) -> dict[str, Any]:
    """A scorer row as this module stores it: the scores flat (the ablation table reads them), no
    trajectory."""
    verdict, trajectory = row["verdict"], row["trajectory"] or {}
    stored = {
        "id": row["id"],
        "category": row["category"],
        "harness": harness,
        "reply": row["reply"],
        "route": row["route"],
        "outcome": row["outcome"],
        "accuracy": verdict["accuracy"],
        "effectiveness": verdict["effectiveness"],
        "avg": verdict["avg"],
        "rubric_avg": verdict["rubric_avg"],
        "reasons": [r["code"] for r in verdict["reasons"]],
        "rounds": trajectory.get("rounds", 0),
        "latency_s": row["latency_s"],
        "dimensions": verdict["dimensions"],
    }
    return {**stored, "error": row["error"]} if row.get("error") else stored


def case_digest(case: dict[str, Any], key: Any) -> str:
    """sha256 of a case and the key of the Harness it is scored under: what a kept row must
    match."""
    import hashlib

    text = json.dumps({"case": case, "harness": str(key)}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def score_cases(*, items: list[tuple[dict, Any]], out: Path, scorer_for) -> list[dict[str, Any]]:
    """Score ``items`` (case with gold for its Harness, key of its scorer) into ``out``, resumably.

    ``scorer_for(key)`` is an ``evaluation.scoring.CaseScorer``; it applies the case's Harness
    variant and canned tools and judges with the Harness's settings. Returns the rows in ``items``
    order."""
    rows = read_rows(out)
    # Cases under the same Harness run back to back so that the policy's prefix cache holds its
    # system prompt; scores are keyed by case id, so the order changes nothing else. A row is kept
    # only for the same case under the same Harness (its digest): a changed world generator builds
    # other cases under the same ids, and those are scored again (the later row is the one read).
    for case, key in sorted(items, key=lambda item: str(item[1])):
        digest = case_digest(case, key)
        if rows.get(case["id"], {}).get("case_sha256") == digest:
            continue
        row = {**_stored(scorer_for(key).score(case), harness=str(key)), "case_sha256": digest}
        _append(out, row)
        rows[case["id"]] = row
    return [rows[c["id"]] for c, _ in items]


def evaluate_model(
    *,
    model_dir: str | Path,
    out_dir: str | Path,
    harness_dir: str | Path,
    sets: tuple[str, ...] = SETS,
    n_cases: int = 100,
    n_prompt_robustness: int = 50,
    n_ifeval: int = 50,
    max_new_tokens: int = 96,
    variant_pool: int = EVAL_POOL_SIZE,
    ifeval_base: bool = False,
    agent_max_new_tokens: int = AGENT_MAX_NEW_TOKENS,
) -> dict[str, Any]:
    """Score ``model_dir`` on the requested sets; per-item rows in ``out_dir``; returns the summary.

    ``max_new_tokens`` caps an IFEval answer, ``agent_max_new_tokens`` each of the agent's model
    calls (see the module's docstring).

    ``ifeval_base``: the checkpoint's base model answers the same instruction-following prompts too
    (``summary["ifeval"]["base"]``), for the capability gate's paired comparison."""
    from evaluation.scoring import CaseScorer, judge_for
    from harness import load_dir
    from training.case_sources import held_out_cases, world_catalogue, world_set
    from training.hsa import build_pool

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bundle = load_dir(harness_dir)
    catalogue = world_catalogue()
    judge = judge_for(bundle, catalogue=catalogue)
    policy = _policy(model_dir, max_new_tokens)
    cases = held_out_cases()[:n_cases]
    summary: dict[str, Any] = {
        "model": str(model_dir)
    }  # this call's scores; merged into summary.json
    scorers: dict[str, CaseScorer] = {}
    need_pool = "live_qa" in sets or "variant_qa" in sets or "prompt_robustness" in sets

    failed: dict[str, str] = {}

    def attempt(name: str, score) -> None:
        if name not in sets:
            return
        try:
            summary[name] = score()
        except Exception as exc:  # one set's failure keeps the others' scores
            failed[name] = summary[name] = {"error": f"{type(exc).__name__}: {exc}"}

    try:
        if need_pool:
            pool = build_pool(
                bundle=bundle,
                size=variant_pool if "variant_qa" in sets else 0,
                seed=EVAL_VARIANT_SEED // 1000,
                dims=list(VARIANT_DIMS),
                cases=cases,
                catalogue=catalogue,
                agent_kwargs={"trajectory_budget_s": CPU_BUDGET_S},
            )
            agent_generation = GenerationSettings(
                temperature=0.0, max_new_tokens=agent_max_new_tokens
            )
            for entry in [pool.original, *pool.variants]:
                entry.agent.policy = policy
                entry.agent.generation = agent_generation
                scorers[entry.name] = CaseScorer(agent=entry.agent, judge=judge)
            entries = {e.name: e for e in pool.variants}

        def variant_qa() -> dict[str, Any]:
            names = sorted(entries)
            items = []
            for i, case in enumerate(cases):
                entry = entries[names[i % len(names)]]
                try:
                    items.append((entry.remap_case(case), entry.name))
                except ValueError:  # a gold skill masked in this variant
                    items.append((case, "original"))
            return set_summary(
                score_cases(
                    items=items, out=out_dir / "variant_qa.jsonl", scorer_for=scorers.__getitem__
                )
            )

        def ifeval() -> dict[str, Any]:
            scores = _ifeval(policy, out_dir / "ifeval.jsonl", n_ifeval, max_new_tokens)
            base = ifeval_base and _ifeval_base(
                model_dir, out_dir / "ifeval_base.jsonl", n_ifeval, max_new_tokens
            )
            return {**scores, "base": base} if base else scores

        attempt(
            "live_qa",
            lambda: set_summary(
                score_cases(
                    items=[(c, "original") for c in cases],
                    out=out_dir / "live_qa.jsonl",
                    scorer_for=scorers.__getitem__,
                )
            ),
        )
        attempt("variant_qa", variant_qa)
        # each Prompt Robustness case's active instructions are added to the original Harness by the
        # scorer
        attempt(
            "prompt_robustness",
            lambda: set_summary(
                score_cases(
                    items=[
                        (c, "original")
                        for c in world_set("prompt_robustness")[:n_prompt_robustness]
                    ],
                    out=out_dir / "prompt_robustness.jsonl",
                    scorer_for=scorers.__getitem__,
                )
            ),
        )
        attempt("ifeval", ifeval)
    finally:
        for scorer in scorers.values():
            scorer.close()
    from training.runs import update_json

    # two evaluations of one model on different sets, side by side, keep each other's scores
    merged = update_json(out_dir / "summary.json", lambda current: current.update(summary))
    if failed:
        raise SetsFailed(failed)
    return merged


class SetsFailed(RuntimeError):
    """Some sets failed; the others' scores are in summary.json. The message names each failure."""

    def __init__(self, failed: dict[str, dict[str, str]]) -> None:
        self.failed = failed
        super().__init__(
            "; ".join(f"{name} failed ({error['error']})" for name, error in failed.items())
            + " (the other sets' scores are kept in summary.json)"
        )


def set_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """n, Accuracy, Effectiveness, AVG (and rubric AVG where cases carry rubrics), percent, and how
    the requests ended: the evaluation core's summary (``evaluation.summary.summarize``) of one
    set."""
    from evaluation.summary import summarize

    summary = summarize(rows)
    return {
        **summary["overall"],
        "outcomes": summary["outcomes"],
        "mostly_fallback": summary["mostly_fallback"],
    }


def _ifeval(policy, path: Path, limit: int, max_new_tokens: int) -> dict[str, Any]:
    """The first ``limit`` prompts of the configured instruction-following set, answered by
    ``policy``."""
    from evaluation.ifeval import load_ifeval_prompts

    scores, result = _answer_and_score(
        policy, path, load_ifeval_prompts(limit=limit), max_new_tokens
    )
    return {**scores, "set": result.source}


def _ifeval_base(
    model_dir: str | Path, path: Path, limit: int, max_new_tokens: int
) -> dict[str, Any] | None:
    """The same prompts answered by the checkpoint's base model (None when the model is a base
    itself)."""
    from evaluation.ifeval import load_ifeval_prompts
    from training.runs import base_model_of

    base = Path(base_model_of(model_dir))
    if base.resolve() == Path(model_dir).resolve():
        return None
    scores, _result = _answer_and_score(
        _policy(base, max_new_tokens), path, load_ifeval_prompts(limit=limit), max_new_tokens
    )
    return {"model": str(base), **scores}


def _answer_and_score(policy, path: Path, prompts: list[dict], max_new_tokens: int):
    """(scores, the ``IFEvalResult``): each prompt answered as the IFEval CLI answers it, resumably,
    by the evaluation's own loop (``evaluation.ifeval.run_ifeval`` with ``ifeval_answerer``)."""
    from evaluation.ifeval import ifeval_answerer, run_ifeval
    from harness.policies import RoleModel

    answer = ifeval_answerer(
        RoleModel(role="ifeval", policy=policy, label=policy.name), max_new_tokens=max_new_tokens
    )
    result = run_ifeval(generate=answer, prompts=prompts, responses_path=path, progress=False)
    scores = {
        "n": result.n_prompts,
        "prompt_strict": 100 * result.prompt_strict,
        "inst_strict": 100 * result.inst_strict,
        "per_prompt": [bool(r["prompt_level_strict_acc"]) for r in result.rows],
    }
    return scores, result


def evaluate_run(
    *,
    run_dir: str | Path,
    harness_dir: str | Path,
    cases: int,
    seed: int = 0,
    max_new_tokens: int = 96,
    agent_max_new_tokens: int = AGENT_MAX_NEW_TOKENS,
) -> dict[str, Any]:
    """A stage's self-evaluation after training: small subsets, scores written to
    ``run_dir/eval.json``."""
    run_dir = Path(run_dir)
    summary = evaluate_model(
        model_dir=run_dir / "final",
        out_dir=run_dir / "eval",
        harness_dir=harness_dir,
        n_cases=cases,
        n_prompt_robustness=max(1, cases // 2),
        n_ifeval=max(1, cases // 2),
        variant_pool=min(EVAL_POOL_SIZE, max(1, cases)),
        max_new_tokens=max_new_tokens,
        agent_max_new_tokens=agent_max_new_tokens,
    )
    (run_dir / "eval.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary

"""HSA-RL reward functions: plain callables returning one float (or None) per rollout.

Each receives, besides TRL's ``prompts`` / ``completions``, the extra fields the
rollout returns: ``trajectory`` (the runtime's JSON record) and ``case`` (the
case with gold labels remapped to the Harness the rollout ran under).

- accuracy, effectiveness: the project's judge on the final reply (0/1, 0/0.5/1);
- tool_rationality, skill_selection: the same judge on the tool steps and skill
  loads (None where a case has nothing to check, which TRL leaves out of the
  group statistics);
- cot_length: ``-q(L)`` with ``q(L) = 0`` for ``L <= 100`` reasoning tokens,
  rising linearly to 1 at 200 and 1 above: a penalty on long chains of thought,
  weighted 0.1 by default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

COT_FREE_TOKENS = 100
COT_FULL_PENALTY_TOKENS = 200


def cot_length_q(tokens: int) -> float:
    """q(L): 0 up to 100 tokens, linear to 1 at 200, 1 above."""
    if tokens <= COT_FREE_TOKENS:
        return 0.0
    if tokens >= COT_FULL_PENALTY_TOKENS:
        return 1.0
    return (tokens - COT_FREE_TOKENS) / (COT_FULL_PENALTY_TOKENS - COT_FREE_TOKENS)


class _VerdictCache:
    """One judge call per rollout, shared by the four judge-based rewards of a batch.

    The batch is recognised by the identity of its trajectory objects, which the cache keeps
    alive: an ``id()`` alone would be reused by the next batch's objects once these are freed."""

    def __init__(self, judge) -> None:
        self.judge = judge
        self._trajectories: list[dict[str, Any]] = []
        self._verdicts: list[Any] = []

    def _same_batch(self, trajectories: list[dict[str, Any]]) -> bool:
        return len(trajectories) == len(self._trajectories) and all(
            a is b for a, b in zip(trajectories, self._trajectories, strict=True)
        )

    def verdicts(
        self, trajectories: list[dict[str, Any]], cases: list[dict[str, Any]]
    ) -> list[Any]:
        if not self._same_batch(trajectories):
            self._verdicts = [
                self.judge.judge(
                    case=c, reply=t.get("reply", ""), route=t.get("route", "public"), trajectory=t
                )
                for t, c in zip(trajectories, cases, strict=True)
            ]
            self._trajectories = list(trajectories)
        return self._verdicts


def make_reward_funcs(*, judge, tokenizer) -> dict[str, Callable[..., list[float | None]]]:
    """The five reward functions by name (the names are the metrics' names in metrics.jsonl)."""
    cache = _VerdictCache(judge)

    def accuracy(completions, trajectory, case, **kwargs) -> list[float]:
        return [float(v.accuracy) for v in cache.verdicts(trajectory, case)]

    def effectiveness(completions, trajectory, case, **kwargs) -> list[float]:
        return [float(v.effectiveness) for v in cache.verdicts(trajectory, case)]

    def tool_rationality(completions, trajectory, case, **kwargs) -> list[float | None]:
        return [v.dimensions.get("tool_rationality") for v in cache.verdicts(trajectory, case)]

    def skill_selection(completions, trajectory, case, **kwargs) -> list[float | None]:
        return [v.dimensions.get("skill_selection") for v in cache.verdicts(trajectory, case)]

    def cot_length(completions, trajectory, **kwargs) -> list[float]:
        lengths = [
            len(tokenizer(t.get("reasoning") or "", add_special_tokens=False)["input_ids"])
            for t in trajectory
        ]
        return [-cot_length_q(n) for n in lengths]

    return {
        "accuracy": accuracy,
        "effectiveness": effectiveness,
        "tool_rationality": tool_rationality,
        "skill_selection": skill_selection,
        "cot_length": cot_length,
    }

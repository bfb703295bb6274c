"""The judge-based rewards score each batch's own rollouts, never a previous batch's verdicts."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from training.rewards import make_reward_funcs


class _ReplyJudge:
    """Accuracy 1 for the reply "right", 0 otherwise; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, *, case, reply, route="public", trajectory=None):
        self.calls += 1
        return SimpleNamespace(accuracy=int(reply == "right"), effectiveness=1.0, dimensions={})


def test_each_batch_is_judged_even_when_its_objects_reuse_freed_ids():
    judge = _ReplyJudge()
    funcs = make_reward_funcs(judge=judge, tokenizer=None)
    for step in range(50):
        reply = "right" if step % 2 else "wrong"
        # a fresh batch each step, as TRL passes it; the previous batch's dicts are freed and
        # CPython hands their memory (and so their id()) to these
        batch = [{"reply": reply, "route": "public"}]
        cases = [{"id": f"c{step}"}]
        assert funcs["accuracy"](None, trajectory=batch, case=cases) == [float(reply == "right")]
        assert funcs["effectiveness"](None, trajectory=batch, case=cases) == [
            1.0
        ]  # same batch: cached
        del batch, cases  # freed here by reference counting (no cycles): no full collection needed,
        gc.collect(0)  # whose cost grows with everything the test process holds (seconds per call)
    assert judge.calls == 50

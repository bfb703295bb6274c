"""MTP adaptation, step 1: the frozen policy's rollouts as training sequences
(``training.mtp_trainer``).

The policy runs the live-room cases through the agent runtime on the local engine, greedy; every
model call becomes one ``RolloutSequence`` (its prompt, the tokens the policy wrote, the policy's
final-normalised hidden state at every position), saved one file per case in ``RUN/rollouts/``
so a resumed run does not roll out again. Also: the held-out split and the head's hot vocabulary.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from training.mtp_config import MTPStageConfig

ROLLOUT_DIR = "rollouts"


@dataclass
class RolloutSequence:
    """One model call of a rollout: tokens, the policy's hidden states, which tokens it wrote."""

    tokens: torch.Tensor  # [L] long
    states: torch.Tensor  # [L - 1, hidden] float16: the hidden state of positions 0 .. L - 2
    written: torch.Tensor  # [L] bool: True where the policy wrote the token (the call's output)
    offset: int = 0  # position of tokens[0] (sequences longer than max_context keep their end)

    def anchors(self) -> torch.Tensor:
        """Positions t whose next token the policy wrote and whose step-1 target exists."""
        length = self.tokens.shape[0]
        t = torch.arange(max(length - 2, 0))
        return t[self.written[1 : length - 1]]

    def clipped(self, max_context: int) -> RolloutSequence:
        cut = max(self.tokens.shape[0] - max_context, 0)
        if not cut:
            return self
        return RolloutSequence(
            self.tokens[cut:], self.states[cut:], self.written[cut:], self.offset + cut
        )


class _StateCapture:
    """Wraps the rollout engine: every call keeps its hidden states, prefix-cached ones included."""

    KEEP = 32  # recent sequences whose states can fill a later call's cached prefix

    def __init__(self, engine: Any, engine_model: Any) -> None:
        self.engine = engine
        self.engine_model = engine_model
        self.recent: list[tuple[torch.Tensor, torch.Tensor]] = []  # (tokens with states, states)
        self.calls: list[RolloutSequence] = []

    def _prefix_states(self, prefix: torch.Tensor) -> torch.Tensor:
        from serving.engine.prefix import common_prefix

        n = prefix.shape[0]
        for tokens, states in reversed(self.recent):
            if tokens.shape[0] >= n and common_prefix(tokens, prefix) >= n:
                return states[:n]
        # not among the recent sequences: compute them (same numbers as the engine's prefill)
        with torch.inference_mode():
            seq = self.engine_model.new_sequence(n + 1)
            _, states = self.engine_model.prefill(seq, prefix, states=True)
        return states.half()

    def generate(self, prompt: list[int], params: Any) -> Any:
        done = self.engine.generate(prompt, replace(params, keep_states=True))
        states = (
            done.states.half()
            if done.states is not None
            else torch.empty(0, self.engine_model.hidden)
        )
        if done.cached_tokens:
            states = torch.cat(
                [self._prefix_states(torch.tensor(prompt[: done.cached_tokens])), states]
            )
        tokens = torch.tensor(list(prompt) + list(done.ids), dtype=torch.long)
        if states.shape[0] != tokens.shape[0] - 1:
            raise RuntimeError(
                f"rollout call: {states.shape[0]} hidden states for {tokens.shape[0]} tokens"
            )
        written = torch.zeros(tokens.shape[0], dtype=torch.bool)
        written[len(prompt) :] = True
        self.calls.append(RolloutSequence(tokens=tokens, states=states, written=written))
        self.recent = (self.recent + [(tokens[:-1], states)])[-self.KEEP :]
        return done


def collect_rollouts(
    config: MTPStageConfig, *, run_dir: Path, hf_model: Any, tokenizer: Any, log=print
) -> list[dict[str, Any]]:
    """Roll out every case once (skipping those already on disk); the saved records, in case
    order."""
    from harness import load_dir
    from harness.policies import GenerationSettings
    from serving.engine import Engine, EngineModel
    from training.case_sources import training_cases
    from training.hsa import build_pool
    from training.rollout import HarnessRollout
    from training.stage_common import resolve_harness_dir

    folder = run_dir / ROLLOUT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    source = training_cases(config.cases, limit=config.max_cases)
    if len(source.cases) < 2:
        raise ValueError(
            f"cases: {source.name} has {len(source.cases)} case(s); the MTP stage needs at least 2"
        )
    todo = [i for i in range(len(source.cases)) if not (folder / f"{i:04d}.pt").is_file()]
    if todo:
        bundle = load_dir(resolve_harness_dir(config.harness))
        settings = GenerationSettings(temperature=0.0, max_new_tokens=config.rollout_max_new_tokens)
        pool = build_pool(
            bundle=bundle,
            size=config.variant_pool_size if config.augmented_fraction > 0 else 0,
            seed=config.seed,
            dims=config.hsa_dims,
            cases=source.cases,
            catalogue=source.catalogue,
            agent_kwargs={"trajectory_budget_s": config.rollout_budget_s, "generation": settings},
        )
        rollout = HarnessRollout(
            pool=pool,
            cases={c["id"]: c for c in source.cases},
            tokenizer=tokenizer,
            settings=settings,
            augmented_fraction=config.augmented_fraction,
            failure_rate=0.0,
            seed=config.seed,
        )
        engine_model = EngineModel(hf_model)
        engine = Engine(engine_model, name="mtp-rollouts")
        capture = _StateCapture(engine, engine_model)
        try:
            for n, i in enumerate(todo, 1):
                case = source.cases[i]
                started = time.perf_counter()
                capture.calls = []
                result = rollout.run_one(
                    hf_model,
                    case["id"],
                    rng=random.Random(f"{config.seed}:{i}"),
                    draw=i,
                    engine=capture,
                )
                record = {
                    "case": case["id"],
                    "harness": result["harness"],
                    "augmented": result["augmented"],
                    "sequences": [
                        {"tokens": s.tokens, "states": s.states, "written": s.written}
                        for s in capture.calls
                    ],
                }
                tmp = folder / f"{i:04d}.pt.tmp"
                torch.save(record, tmp)
                tmp.replace(folder / f"{i:04d}.pt")
                written = sum(int(s.written.sum()) for s in capture.calls)
                log(
                    f"rollout {n}/{len(todo)}: case {case['id']} under {result['harness']}: "
                    f"{len(capture.calls)} call(s), {written} tokens "
                    f"written, {time.perf_counter() - started:.1f} s"
                )
        finally:
            engine.close()
            pool.close()
    return [torch.load(folder / f"{i:04d}.pt", weights_only=True) for i in range(len(source.cases))]


def split_rollouts(
    records: list[dict[str, Any]], *, held_out: float, seed: int, max_context: int
) -> tuple[list[RolloutSequence], list[RolloutSequence]]:
    """Training and held-out sequences; whole cases are held out (their calls share a prompt)."""
    order = list(range(len(records)))
    random.Random(f"mtp-split:{seed}").shuffle(order)
    n_held = max(1, round(held_out * len(records)))
    held = set(order[:n_held])
    train, test = [], []
    for i, record in enumerate(records):
        for s in record["sequences"]:
            seq = RolloutSequence(
                tokens=s["tokens"], states=s["states"], written=s["written"]
            ).clipped(max_context)
            if seq.anchors().numel():
                (test if i in held else train).append(seq)
    return train, test


def hot_tokens(sequences: list[RolloutSequence], size: int, vocab_size: int) -> torch.Tensor | None:
    """The draft vocabulary: the tokens the policy wrote, most frequent first, then prompt
    tokens."""
    from collections import Counter

    if not size or size >= vocab_size:
        return None
    written, prompt = Counter(), Counter()
    for seq in sequences:
        written.update(seq.tokens[seq.written].tolist())
        prompt.update(seq.tokens[~seq.written].tolist())
    order = [t for t, _ in written.most_common()]
    seen = set(order)
    order += [t for t, _ in prompt.most_common() if t not in seen]
    return torch.tensor(sorted(order[:size]), dtype=torch.long)

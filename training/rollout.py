"""GRPO rollouts through the project's runtime, and the token sequence (with env_mask) they train
on.

``HarnessRollout`` is the ``rollout_func`` given to ``GRPOTrainer``: for each
task (a case id) it draws the original Harness or an HSA variant (the configured
mix), sets a fresh failure-injection seed (timeouts, malformed results,
permission denials), and runs the agent with ``SamplingPolicy`` under the
Harness's hooks and round limit. ``assemble_rollout`` turns the agent's model
calls into one sequence: the first call's prompt, then each sampled output
(env_mask 1) followed by whatever the runtime added before the next call -
tool results, hook feedback, the next turn header (env_mask 0). The runtime
re-renders the system prompt each round (loaded skills); the sequence keeps
the first round's, the usual approximation of multi-turn GRPO. With
``harness_per_group`` the rollouts of one task in a row (a GRPO group) share one
draw, so they share their prompt and the trainer encodes it once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from training.sampling_policy import SampledCall, SamplingPolicy, rollout_engine


@dataclass
class AssembledRollout:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]


def _render(tokenizer, messages: list[dict[str, Any]], *, generation_prompt: bool) -> str:
    chat = [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages]
    return tokenizer.apply_chat_template(
        chat, add_generation_prompt=generation_prompt, tokenize=False
    )


def environment_text(tokenizer, before: SampledCall, after: SampledCall) -> str:
    """The text the runtime put between two model outputs (end-of-turn remnants, tool results,
    hooks)."""
    n = len(before.messages)
    messages = after.messages
    head = _render(tokenizer, messages[:n], generation_prompt=True)
    with_reply = _render(tokenizer, messages[: n + 1], generation_prompt=False)
    full = _render(tokenizer, messages, generation_prompt=True)
    content = str(messages[n].get("content") or "") if len(messages) > n else ""
    if not (with_reply.startswith(head + content) and full.startswith(with_reply)):
        raise ValueError("the chat template does not render the conversation prefix-stably")
    tail = with_reply[len(head) + len(content) :]  # e.g. "<|im_end|>\n" after the assistant text
    eos = tokenizer.eos_token or ""
    if before.finished and eos and tail.startswith(eos):
        tail = tail[len(eos) :]  # the sampled ids already end with it
    return tail + full[len(with_reply) :]


def assemble_rollout(calls: list[SampledCall], tokenizer) -> AssembledRollout:
    """Prompt ids of the first call; model tokens (mask 1) interleaved with runtime text (mask
    0)."""
    if not calls:
        eos = tokenizer.eos_token_id
        return AssembledRollout(
            prompt_ids=[eos], completion_ids=[eos], env_mask=[0], logprobs=[0.0]
        )
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    for i, call in enumerate(calls):
        completion += call.ids
        mask += [1] * len(call.ids)
        logprobs += call.logprobs
        if i + 1 < len(calls):
            env_ids = tokenizer(
                environment_text(tokenizer, call, calls[i + 1]), add_special_tokens=False
            )["input_ids"]
            completion += env_ids
            mask += [0] * len(env_ids)
            logprobs += [0.0] * len(env_ids)
    if not completion:
        completion, mask, logprobs = [tokenizer.eos_token_id], [0], [0.0]
    return AssembledRollout(
        prompt_ids=list(calls[0].prompt_ids),
        completion_ids=completion,
        env_mask=mask,
        logprobs=logprobs,
    )


@dataclass
class HarnessRollout:
    """The ``rollout_func``: runs the runtime once per prompt (a case id) and returns tokens +
    extras."""

    pool: Any  # training.hsa.HarnessPool
    cases: dict[str, dict[str, Any]]
    tokenizer: Any
    settings: Any  # GenerationSettings for every model call
    augmented_fraction: float
    failure_rate: float
    seed: int = 0
    #: rollouts of one task in a row (a GRPO group) run under one Harness state, so that they share
    #: their prompt (training.shared_prefix); otherwise each rollout draws its own
    harness_per_group: bool = False
    calls_made: int = field(default=0)

    def _failures(self, draw: int):
        from harness.runtime import FailureInjection

        share = self.failure_rate / 3
        return FailureInjection(
            timeout=share, malformed=share, permission_denied=share, seed=self.seed * 100003 + draw
        )

    def run_one(
        self,
        model,
        case_id: str,
        *,
        rng: random.Random,
        draw: int,
        engine: Any = None,
        entry: Any = None,
    ) -> dict[str, Any]:
        from evaluation.cases import case_request

        case = self.cases[case_id]
        entry = entry if entry is not None else self.pool.draw(rng, self.augmented_fraction)
        try:
            case_v = entry.remap_case(case)
        except ValueError:  # a gold skill masked in this variant: fall back to the original
            entry, case_v = self.pool.original, case
        policy = SamplingPolicy(
            model=model, tokenizer=self.tokenizer, settings=self.settings, engine=engine
        )
        entry.agent.policy = policy
        entry.agent.generation = self.settings
        entry.agent.failure_injection = self._failures(draw)
        trajectory = entry.agent.run(case_request(case_v)).to_dict()
        assembled = assemble_rollout(policy.calls, self.tokenizer)
        return {
            "assembled": assembled,
            "trajectory": trajectory,
            "case": case_v,
            "harness": entry.name,
            "augmented": entry.augmented,
        }

    def __call__(self, prompts: list[Any], trainer) -> dict[str, Any]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        step = int(trainer.state.global_step)
        rng = random.Random(f"{self.seed}:{step}:{self.calls_made}")
        out: dict[str, list[Any]] = {
            k: []
            for k in (
                "prompt_ids",
                "completion_ids",
                "logprobs",
                "env_mask",
                "trajectory",
                "case",
                "harness",
                "augmented",
            )
        }
        # The GRPO sampler repeats each task num_generations times: one group shares failure seeds
        # only through the request id, so every rollout gets its own draw.
        engine = rollout_engine(model)  # the weights are fixed until this batch returns
        try:
            results = []
            previous, entry = None, None
            for prompt in prompts:
                self.calls_made += 1
                if self.harness_per_group and str(prompt) != previous:
                    entry = self.pool.draw(rng, self.augmented_fraction)
                previous = str(prompt)
                results.append(
                    self.run_one(
                        model,
                        str(prompt),
                        rng=rng,
                        draw=self.calls_made,
                        engine=engine,
                        entry=entry if self.harness_per_group else None,
                    )
                )
        finally:
            if engine is not None:
                engine.close()
        for result in results:
            assembled = result["assembled"]
            out["prompt_ids"].append(assembled.prompt_ids)
            out["completion_ids"].append(assembled.completion_ids)
            out["logprobs"].append(assembled.logprobs)
            out["env_mask"].append(assembled.env_mask)
            for key in ("trajectory", "case", "harness", "augmented"):
                out[key].append(result[key])
        return out

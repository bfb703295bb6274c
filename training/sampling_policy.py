"""A runtime policy that samples from the model being trained and keeps the sampled token ids.

The RL rollouts run the real runtime (``harness.runtime.Agent``); this policy is
what the agent calls for each model round. It renders the messages with the
model's chat template exactly as ``TransformersPolicy`` does at serving time,
samples with the rollout settings, and records per call the prompt token ids,
the sampled token ids (end-of-turn included) and their log-probabilities under
the sampling distribution, so ``training.rollout`` can rebuild the token
sequence GRPO trains on.

When the model runs on CPU and the local engine implements it, the rollouts of one
generation batch sample on an engine built over the model's current weights
(``rollout_engine``; closed before the optimizer changes them): the Harness
prefix is shared across the batch's rollouts and each call is decoded without
``generate``'s per-token overhead. Elsewhere (a GPU, another architecture) they
use ``generate``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.policies.base import GenerationSettings, Policy, PolicyOutput


@dataclass
class SampledCall:
    messages: list[dict[str, Any]]
    prompt_ids: list[int]
    ids: list[int]  # sampled tokens, cut after the first end-of-turn token
    logprobs: list[float]
    text: str
    finished: bool  # ended with the end-of-turn token (not cut by max_new_tokens)


@dataclass
class SamplingPolicy(Policy):
    """Samples from ``model``; ``calls`` holds every call of the current request."""

    model: Any
    tokenizer: Any
    settings: GenerationSettings = field(
        default_factory=lambda: GenerationSettings(temperature=1.0)
    )
    name: str = "rl-policy"
    calls: list[SampledCall] = field(default_factory=list)
    engine: Any = None  # a serving.engine.Engine over ``model``'s current weights, or None

    def begin_request(self, request_id: str) -> None:
        self.calls = []

    def render(self, messages: list[dict[str, Any]]) -> list[int]:
        chat = [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages]
        encoded = self.tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_dict=True
        )
        return list(encoded["input_ids"])

    def _sample(
        self, prompt_ids: list[int], settings: GenerationSettings
    ) -> tuple[list[int], list[float]]:
        if self.engine is not None:
            from serving.engine import SamplingParams

            done = self.engine.generate(
                prompt_ids,
                SamplingParams(
                    max_new_tokens=settings.max_new_tokens,
                    temperature=settings.temperature,
                    top_p=settings.top_p,
                    seed=settings.seed,
                    stop_ids=(self.tokenizer.eos_token_id,),
                    logprobs=True,
                ),
            )
            return done.ids, done.logprobs
        import torch

        was_training = self.model.training
        self.model.eval()
        try:
            inputs = torch.tensor([prompt_ids], device=self.model.device)
            gen: dict[str, Any] = dict(
                max_new_tokens=settings.max_new_tokens,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
            if settings.temperature > 0:
                gen.update(
                    do_sample=True, temperature=settings.temperature, top_p=settings.top_p, top_k=0
                )
            else:
                gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            with torch.no_grad():
                out = self.model.generate(inputs, attention_mask=torch.ones_like(inputs), **gen)
            new = out.sequences[0, len(prompt_ids) :].tolist()
            logprobs = [
                float(torch.log_softmax(score[0].float(), dim=-1)[token])
                for score, token in zip(out.scores, new, strict=False)
            ]
        finally:
            if was_training:
                self.model.train()
        eos = self.tokenizer.eos_token_id
        if eos in new:
            cut = new.index(eos) + 1
            new, logprobs = new[:cut], logprobs[:cut]
        return new, logprobs

    def generate(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
    ) -> PolicyOutput:
        settings = settings or self.settings
        started = time.perf_counter()
        prompt_ids = self.render(messages)
        ids, logprobs = self._sample(prompt_ids, settings)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        finished = bool(ids) and ids[-1] == self.tokenizer.eos_token_id
        self.calls.append(
            SampledCall(
                messages=[dict(m) for m in messages],
                prompt_ids=prompt_ids,
                ids=ids,
                logprobs=logprobs,
                text=text,
                finished=finished,
            )
        )
        return PolicyOutput(
            text=text,
            input_tokens=len(prompt_ids),
            output_tokens=len(ids),
            latency_s=time.perf_counter() - started,
            finish_reason="stop" if finished else "length",
        )


def rollout_engine(model: Any) -> Any:
    """An engine over ``model``'s current weights for one generation batch, or None where it cannot
    run."""
    from serving.engine import Engine, EngineModel, UnsupportedModel

    try:
        if next(model.parameters()).device.type != "cpu":
            return None
        return Engine(EngineModel(model), name="rollout-engine")
    except (UnsupportedModel, StopIteration):
        return None

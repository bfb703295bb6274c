"""Sampling: a request's settings (``SamplingParams``) and the token drawn from a row of logits.

Its own module so that the engine (``serving.engine.engine``) and speculative decoding
(``serving.engine.speculative``), which both sample from the same distribution, import it and not
each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class SamplingParams:
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    seed: int | None = None
    stop_ids: tuple[int, ...] = ()
    deadline: float | None = None  # time.perf_counter() value; the request stops there ("timeout")
    # keep each sampled token's log-probability under the sampling distribution
    logprobs: bool = False
    # keep the policy's final-normalised hidden state of every position it ran
    keep_states: bool = False


def sample(
    logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None
) -> tuple[int, float | None]:
    """One token from a row of logits: argmax when greedy, else temperature and top-p (nucleus).

    The log-probability (when asked) is under the distribution actually sampled
    from, which is what the RL rollouts need.
    """
    logits = logits.float()
    if params.temperature <= 0:
        token = int(torch.argmax(logits))
        logprob = float(torch.log_softmax(logits, dim=-1)[token]) if params.logprobs else None
        return token, logprob
    logp = sampling_logprobs(logits, params)
    token = int(torch.multinomial(logp.exp(), 1, generator=generator))
    return token, (float(logp[token]) if params.logprobs else None)


def sampling_logprobs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Log-probabilities of the distribution a sampled request draws from: temperature, then
    top-p (nucleus; the most likely token is always kept). Speculative decoding's acceptance test
    uses the same distribution for the policy and the draft (``serving.engine.speculative``)."""
    scaled = logits.float() / params.temperature
    if params.top_p < 1.0:
        ordered, order = torch.sort(scaled, descending=True)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
        remove = (
            cumulative - torch.softmax(ordered, dim=-1) >= params.top_p
        )  # keep the first token always
        ordered = ordered.masked_fill(remove, float("-inf"))
        scaled = torch.full_like(scaled, float("-inf")).scatter(-1, order, ordered)
    return torch.log_softmax(scaled, dim=-1)

"""Speculative decoding in the local engine: a draft head guesses K tokens, one policy pass checks
them.

One cycle of a request whose next token ``x_P`` is known (sampled, not yet in the cache):

1. the head catches up on the positions whose policy hidden state it has not yet
   consumed (one block pass over those pairs), which writes its own cache and gives
   its first guess ``d_1``; K - 1 more single steps give ``d_2 .. d_K``, each fed the
   previous step's output and guess;
2. the policy runs ``[x_P, d_1 .. d_K]`` in one pass (``EngineModel.verify``): K + 1
   distributions;
3. greedy: ``d_i`` is kept while it equals the policy's argmax, and the policy's own
   token follows the last kept one, so the output is exactly plain greedy decoding.
   Sampling: ``d_i`` is kept with probability ``min(1, p_i(d_i) / q_i(d_i))``; at the
   first rejection the token comes from ``norm(max(0, p_i - q_i))``, after K
   acceptances from ``p_{K+1}`` (Leviathan et al., 2023), so every token is
   distributed as the policy's sampling distribution ``p`` (temperature and top-p
   applied to both ``p`` and the draft's ``q``);
4. the cache keeps ``x_P`` and the kept drafts; the policy hidden states of those
   positions become the head's input for the next cycle.

The head's keys and values live in an extra layer of the sequence's ``SequenceKV``
(``draft_length`` slots are real; the slots a cycle writes speculatively past it are
rewritten by the next one), so the prefix store shares them with the policy's.

Per request: drafted and accepted tokens and acceptances per draft position
(``Completion.spec``); the engine sums them (``EngineStats``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from serving.engine.model import EngineModel, SequenceKV, cached_attention, causal_bias
from serving.engine.sampling import sampling_logprobs


@dataclass
class SpecStats:
    """Speculation counts of a request (or, summed, of an engine)."""

    cycles: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_at: list[int] = field(
        default_factory=list
    )  # cycles whose draft i was kept, per position i

    def add(self, other: SpecStats) -> None:
        self.cycles += other.cycles
        self.drafted += other.drafted
        self.accepted += other.accepted
        for i, n in enumerate(other.accepted_at):
            if i < len(self.accepted_at):
                self.accepted_at[i] += n
            else:
                self.accepted_at.append(n)

    @property
    def acceptance_length(self) -> float | None:
        """Tokens per policy pass: kept drafts plus the policy's own token (K + 1 at most)."""
        return None if not self.cycles else (self.accepted + self.cycles) / self.cycles

    @property
    def acceptance_rate(self) -> float | None:
        return None if not self.drafted else self.accepted / self.drafted

    def to_dict(self) -> dict[str, Any]:
        return {
            "cycles": self.cycles,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "acceptance_length": self.acceptance_length,
            "acceptance_rate": self.acceptance_rate,
            "acceptance_rate_per_position": [n / self.cycles for n in self.accepted_at]
            if self.cycles
            else [],
        }


class Speculator:
    """Runs a ``DraftHead`` against an ``EngineModel``'s sequences (only the scheduler thread calls
    it)."""

    def __init__(self, head: Any, *, steps: int | None = None) -> None:
        self.head = head.eval()
        self.steps = int(steps or head.config.steps)
        if self.steps < 1:
            raise ValueError(f"draft steps: {self.steps} must be >= 1")

    def new_sequence(self, model: EngineModel, capacity: int) -> SequenceKV:
        return model.new_sequence(capacity, extra_layers=1)

    # -- the head's own cache ----------------------------------------------------------------
    def extend(
        self, seq: SequenceKV, hidden: torch.Tensor, tokens: torch.Tensor, start: int
    ) -> torch.Tensor:
        """Run the block over pairs (hidden of slot s, token s + 1) for slots ``start ..``; writes
        the head's keys/values there and returns its outputs ``[m, hidden]``."""
        head, layer = self.head, seq.k.shape[0] - 1
        m = hidden.shape[0]
        end = start + m
        seq.reserve(end + 1)
        x = head.fuse(hidden, tokens)
        q, k, v = head.project(x, torch.arange(start, end))
        seq.k[layer, :, start:end] = k.transpose(0, 1)
        seq.v[layer, :, start:end] = v.transpose(0, 1)
        attn = cached_attention(
            q, seq.k[layer, :, :end], seq.v[layer, :, :end], causal_bias(m, start), head.scale
        )
        return head.finish(x, attn)

    def absorb(
        self,
        seq: SequenceKV,
        pending: torch.Tensor | None,
        hidden: torch.Tensor,
        tokens: torch.Tensor,
    ) -> torch.Tensor:
        """After a prefill chunk: write the head's real slots whose next token is known.

        ``pending`` holds the policy hidden states of slots ``seq.draft_length ..`` not yet
        consumed, ``hidden`` the chunk's, ``tokens`` every token of the sequence known so far (the
        prompt). The slots paired with a known token are written; the rest are returned as the new
        pending."""
        states = hidden if pending is None else torch.cat([pending, hidden])
        start = seq.draft_length
        ready = min(states.shape[0], int(tokens.shape[0]) - 1 - start)
        if ready > 0:
            self.extend(seq, states[:ready], tokens[start + 1 : start + 1 + ready], start)
            seq.draft_length = start + ready
        return states[max(ready, 0) :]

    # -- one cycle ------------------------------------------------------------------------------
    def cycle(
        self,
        model: EngineModel,
        seq: SequenceKV,
        pending: torch.Tensor,
        tokens: torch.Tensor,
        params: Any,
        generator: torch.Generator | None,
    ) -> tuple[list[int], list[float], torch.Tensor, SpecStats]:
        """Draft, verify, accept. ``tokens``: the whole sequence so far, its last being the next
        token ``x_P`` (not in the cache; ``seq.length`` is P). Returns the new tokens (the kept
        drafts and the policy's token), their log-probabilities under the policy's distribution, the
        new pending hidden states and this cycle's counts."""
        head, k_steps = self.head, self.steps
        greedy = params.temperature <= 0
        p_len, start = seq.length, seq.draft_length
        # 1. catch up on the real slots, then draft
        out = self.extend(seq, pending, tokens[start + 1 : p_len + 1], start)[-1:]
        seq.draft_length = p_len
        drafts: list[int] = []
        draft_logp: list[torch.Tensor] = []
        for step in range(k_steps):
            logits, ids = head.draft_logits(out)
            logits = logits[0]
            if greedy:
                index = int(torch.argmax(logits))
                token = index if ids is None else int(ids[index])
            else:
                logq = sampling_logprobs(logits, params)
                index = int(torch.multinomial(logq.exp(), 1, generator=generator))
                token = index if ids is None else int(ids[index])
                if (
                    ids is not None
                ):  # q over the whole vocabulary: zero outside the draft vocabulary
                    logq = torch.full((model.vocab_size,), float("-inf")).index_copy_(0, ids, logq)
                draft_logp.append(logq)
            drafts.append(token)
            if step + 1 < k_steps:
                out = self.extend(seq, out, torch.tensor([token]), p_len + step)
        # 2. verify
        logits, hidden = model.verify(seq, torch.tensor([int(tokens[-1])] + drafts))
        # 3. accept
        new: list[int] = []
        logps: list[float] = []
        stats = SpecStats(cycles=1, drafted=k_steps, accepted_at=[0] * k_steps)
        for i, token in enumerate(drafts):
            if greedy:
                target = int(torch.argmax(logits[i]))
                if target != token:
                    break
            else:
                logp = sampling_logprobs(logits[i], params)
                ratio = float(torch.exp(logp[token] - draft_logp[i][token]))
                if ratio < 1.0 and float(torch.rand((), generator=generator)) >= ratio:
                    break
            new.append(token)
            stats.accepted += 1
            stats.accepted_at[i] = 1
        a = len(new)
        if greedy:
            bonus = int(torch.argmax(logits[a]))
        else:
            logp = sampling_logprobs(logits[a], params)
            if a < k_steps:  # rejected: draw from the residual max(0, p - q)
                residual = torch.clamp(logp.exp() - draft_logp[a].exp(), min=0.0)
                total = float(residual.sum())
                probs = residual / total if total > 0 else logp.exp()
            else:
                probs = logp.exp()
            bonus = int(torch.multinomial(probs, 1, generator=generator))
        new.append(bonus)
        if params.logprobs:
            for i, token in enumerate(new):
                row = (
                    torch.log_softmax(logits[i].float(), dim=-1)
                    if greedy
                    else sampling_logprobs(logits[i], params)
                )
                logps.append(float(row[token]))
        # 4. keep x_P and the kept drafts; their hidden states feed the head next cycle
        seq.length = p_len + 1 + a
        return new, logps, hidden[: a + 1], stats

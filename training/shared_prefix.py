"""Exact shared-prefix batches: the tokens every sequence of a batch starts with are encoded once.

A packed SFT sequence of the demo Harness is about 2,300 tokens, of which about 1,350 are the
Harness's system prompt that every example of the same Harness state repeats; a GRPO group's
rollouts repeat their whole prompt. Encoding that prefix once per batch is the same computation:
the prefix's hidden states, keys and values do not depend on anything after it (causal attention),
so every row of the plain batch computes identical copies of them. Here the decoder runs twice:

1. the prefix, one row, building a KV cache **with gradients** (its hidden states are kept too);
2. every row's suffix (its own tokens, padding included) against that cache expanded over the
   batch, positions continuing after the prefix, the batch's own attention mask over the whole
   length.

The decoder's output is the prefix's hidden states expanded over the batch followed by the
suffixes', the same tensor the plain forward returns, so TRL's loss code (the fused log-prob head,
GRPO's ratios, the distillation divergence) runs on it unchanged, and the backward sums each
row's gradient through the expansion into the one prefix pass: the same loss and gradients up to
float summation order (tests/training/test_shared_prefix.py states the tolerance). This is Prefix
Grouper (arXiv 2506.05433), which does it for GRPO, applied to every stage that batches
sequences which share a start.

Two parts make batches share a prefix: ``PrefixGroupedSampler`` (SFT) puts sequences of the same
Harness state into one batch; GRPO's sampler already keeps a group's rollouts together and the
stage draws one Harness state per group (``training.rollout``). ``SharedPrefixMixin`` is what the
SFT, OPD and GRPO trainers use: around their scoring call, the decoder takes this path whenever a
batch shares at least ``MIN_SHARED_TOKENS`` tokens, and the plain one otherwise (left-padded
prompts, one-row batches, gradient checkpointing, sliding-window attention, dropout in training),
saying why once in the log.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

log = logging.getLogger(__name__)

#: below this many shared tokens a second decoder call costs about what it saves
MIN_SHARED_TOKENS = 32


def common_prefix_length(input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> int:
    """Tokens at the start that every row has, identical and unpadded (at most one less than the
    width, so that every row keeps a suffix)."""
    rows, width = input_ids.shape
    if rows < 2 or width < 2:
        return 0
    same = (input_ids == input_ids[:1]).all(dim=0)
    if attention_mask is not None:
        same &= (attention_mask != 0).all(dim=0)
    differs = (~same).nonzero()
    length = int(differs[0, 0]) if len(differs) else width
    return min(length, width - 1)


def decoder_of(model) -> Any:
    """The decoder stack (no output head) of a causal LM, through PEFT and accelerate wrappers."""
    inner = getattr(model, "module", model)  # DDP
    if hasattr(inner, "get_base_model"):  # a PEFT model: its base_model is the LoRA wrapper
        inner = inner.get_base_model()
    return getattr(inner, "base_model", inner)


def unsupported(decoder) -> str:
    """Why this decoder cannot take the shared-prefix path ('' when it can)."""
    import inspect

    params = inspect.signature(type(decoder).forward).parameters
    if "cache" not in params:
        return (
            f"{type(decoder).__name__}.forward takes no 'cache' "
            "(a transformers 5 decoder with a KV cache)"
        )
    config = decoder.config
    layer_types = getattr(config, "layer_types", None) or []
    if any(t != "full_attention" for t in layer_types) or getattr(
        config, "use_sliding_window", False
    ):
        return (
            "sliding-window or linear attention layers (their cache keeps only part of the prefix)"
        )
    if getattr(decoder, "gradient_checkpointing", False) and decoder.training:
        return "gradient checkpointing (a checkpointed layer would write the cache twice)"
    if decoder.training and getattr(config, "attention_dropout", 0.0):
        return (
            "attention dropout in training (one prefix pass "
            "would share one dropout mask across the batch)"
        )
    if decoder.training and any(
        isinstance(m, torch.nn.Dropout) and m.p > 0 and m.training for m in decoder.modules()
    ):
        return "dropout in training (one prefix pass would share one dropout mask across the batch)"
    return ""


def shared_prefix_forward(
    original,
    decoder,
    prefix: int,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs,
):
    """The decoder's output for the batch, the first ``prefix`` tokens (shared by every row) encoded
    once."""
    from transformers.cache_utils import DynamicCache, DynamicLayer
    from transformers.modeling_outputs import BaseModelOutputWithPast

    rows, width = input_ids.shape
    kwargs.pop("use_cache", None)
    kwargs.pop("cache", None)
    position_ids = kwargs.pop("position_ids", None)
    cache = DynamicCache(config=decoder.config)
    head = original(
        input_ids=input_ids[:1, :prefix],
        attention_mask=None,
        cache=cache,
        use_cache=True,
        position_ids=None if position_ids is None else position_ids[:1, :prefix],
        **kwargs,
    )
    for layer in cache.layers:
        if type(layer) is not DynamicLayer:
            raise RuntimeError(
                f"shared_prefix: {type(decoder).__name__}'s "
                f"cache has {type(layer).__name__} layers, "
                "which keep only part of a prefix; train with shared_prefix: false"
            )
        layer.keys = layer.keys.expand(rows, -1, -1, -1)
        layer.values = layer.values.expand(rows, -1, -1, -1)
    if position_ids is None:
        position_ids = (
            torch.arange(prefix, width, device=input_ids.device).unsqueeze(0).expand(rows, -1)
        )
    else:
        position_ids = position_ids[:, prefix:]
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    tail = original(
        input_ids=input_ids[:, prefix:],
        attention_mask=attention_mask,
        cache=cache,
        use_cache=True,
        position_ids=position_ids,
        **kwargs,
    )
    hidden = torch.cat([head.last_hidden_state.expand(rows, -1, -1), tail.last_hidden_state], dim=1)
    return BaseModelOutputWithPast(last_hidden_state=hidden)


class SharedPrefixStats:
    """What the path did over a run: batches that shared a prefix, batches that ran plain, and
    why."""

    def __init__(self) -> None:
        self.shared_batches = 0
        self.plain_batches = 0
        # what the plain path would have encoded again, row after row
        self.prefix_tokens_not_reencoded = 0
        self.reasons: dict[str, int] = {}

    def plain(self, reason: str) -> None:
        self.plain_batches += 1
        if reason not in self.reasons:
            log.warning("shared_prefix: the plain path runs for %s (said once per reason)", reason)
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "shared_batches": self.shared_batches,
            "plain_batches": self.plain_batches,
            "prefix_tokens_not_reencoded": self.prefix_tokens_not_reencoded,
            "plain_reasons": dict(self.reasons),
        }


@contextmanager
def shared_prefix(
    model, stats: SharedPrefixStats | None = None, *, min_tokens: int = MIN_SHARED_TOKENS
):
    """Within the block, ``model``'s decoder encodes the prefix its batch shares once (exactly: see
    the module docstring); a batch that shares fewer than ``min_tokens`` tokens, a generation call,
    or a decoder that cannot (``unsupported``) runs the plain forward."""
    stats = stats if stats is not None else SharedPrefixStats()
    decoder = decoder_of(model)
    had_own = "forward" in vars(decoder)
    original = decoder.forward

    def forward(input_ids=None, attention_mask=None, **kwargs):
        if (
            input_ids is None
            or kwargs.get("inputs_embeds") is not None
            or kwargs.get("use_cache")
            or kwargs.get("cache") is not None
        ):
            return original(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        reason = unsupported(decoder)
        prefix = 0 if reason else common_prefix_length(input_ids, attention_mask)
        positions = kwargs.get("position_ids")
        if not reason and positions is not None and prefix:
            expected = torch.arange(prefix, device=positions.device)
            if not (positions[:, :prefix] == expected).all():
                reason = "position ids that do not start at 0 (packed or left-padded rows)"
        if not reason and prefix < min_tokens:
            reason = (
                f"batches whose rows share fewer than {min_tokens} tokens at the start "
                "(one row, different prompts, or left padding)"
            )
        if reason:
            stats.plain(reason)
            return original(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        out = shared_prefix_forward(original, decoder, prefix, input_ids, attention_mask, **kwargs)
        stats.shared_batches += 1
        stats.prefix_tokens_not_reencoded += prefix * (input_ids.shape[0] - 1)
        return out

    decoder.forward = forward
    try:
        yield stats
    finally:
        if had_own:
            decoder.forward = original
        else:
            del decoder.forward


class SharedPrefixMixin:
    """For a TRL trainer: ``self.shared_prefix_scoring(model)`` around the call that scores a batch.

    The trainers set ``use_shared_prefix`` from their stage config; ``shared_prefix_stats`` ends in
    the model card."""

    use_shared_prefix: bool = False

    @property
    def shared_prefix_stats(self) -> SharedPrefixStats:
        if "_shared_prefix_stats" not in vars(self):
            self._shared_prefix_stats = SharedPrefixStats()
        return self._shared_prefix_stats

    @contextmanager
    def shared_prefix_scoring(self, model):
        if not self.use_shared_prefix:
            yield None
            return
        unwrapped = self.accelerator.unwrap_model(model) if hasattr(self, "accelerator") else model
        with shared_prefix(unwrapped, self.shared_prefix_stats) as stats:
            yield stats


def shuffle_groups(batch: dict[str, Any]) -> dict[str, Any]:
    """TRL's ``shuffle_sequence_dict`` by whole groups: runs of rows with the same ``prompt_ids``
    keep together, in their order, and the runs are shuffled. GRPO splits its generation batch into
    ``steps_per_generation`` micro-batches after shuffling; row by row, a group's rollouts would
    land in different ones and share nothing. The step's gradient is the same either way (the
    micro-batches' losses add up to the step's)."""
    prompts = batch["prompt_ids"]
    starts = [0] + [
        i for i in range(1, len(prompts)) if not torch.equal(prompts[i], prompts[i - 1])
    ]
    runs = [list(range(a, b)) for a, b in zip(starts, [*starts[1:], len(prompts)], strict=True)]
    order = torch.randperm(len(runs)).tolist()
    permutation = torch.tensor([i for run in order for i in runs[run]])

    def permute(value):
        if value is None or (isinstance(value, torch.Tensor) and value.ndim == 0):
            return value
        if isinstance(value, torch.Tensor):
            return value[permutation]
        return [value[i] for i in permutation]

    return {key: permute(value) for key, value in batch.items()}


def message_head(ids: Sequence[int]) -> tuple[int, ...]:
    """The tokens of a sequence's first chat message: up to the next occurrence of its first token
    (ChatML and Qwen templates open every message with the same token), else the whole sequence.
    Under the project's runtime the first message is the system prompt, so this is the sequence's
    Harness state."""
    ids = list(ids)
    if not ids:
        return ()
    try:
        end = ids.index(ids[0], 1)
    except ValueError:
        end = len(ids)
    return tuple(ids[:end])


class PrefixGroupedSampler(torch.utils.data.Sampler[int]):
    """Each epoch, batches of ``batch_size`` sequences that share their first message (the same
    Harness state): within a state the order is shuffled and cut into batches; a state's remainder
    joins the others' in an order sorted by tokens (so they still share what they can); the batches
    are then shuffled. Every sequence appears once per epoch. ``set_epoch`` changes the draw.

    With ``phases`` (one int per sequence: randomized HSA's data epoch, ``training.randomized``)
    the batches of phase 0 all come before those of phase 1, and so on: a curriculum's order holds,
    and batches are formed within a phase. ``group=False`` keeps that order but shuffles within a
    phase without grouping by state (the plain path's batches)."""

    def __init__(
        self,
        input_ids: Sequence[Sequence[int]],
        *,
        batch_size: int,
        seed: int = 0,
        phases: Sequence[int] | None = None,
        group: bool = True,
    ) -> None:
        self.batch_size = max(1, int(batch_size))
        self.seed = seed
        self.epoch = 0
        self.ids = [list(row) for row in input_ids]
        self.phases = list(phases) if phases is not None else [0] * len(self.ids)
        if len(self.phases) != len(self.ids):
            raise ValueError(f"phases: {len(self.phases)} for {len(self.ids)} sequences")
        self.group = group
        groups: dict[tuple, list[int]] = {}
        for index, row in enumerate(self.ids):
            key = (self.phases[index], message_head(row) if group else ())
            groups.setdefault(key, []).append(index)
        self.groups = {key: groups[key] for key in sorted(groups, key=lambda k: k[0])}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batches(self) -> list[list[int]]:
        rng = random.Random(f"{self.seed}:{self.epoch}")
        out: list[list[int]] = []
        for phase in sorted(set(self.phases)):
            members_of = [m for key, m in self.groups.items() if key[0] == phase]
            out += self._phase_batches(members_of, rng)
        return out

    def _phase_batches(self, groups: list[list[int]], rng: random.Random) -> list[list[int]]:
        batches: list[list[int]] = []
        rest: list[int] = []
        for members in groups:
            members = members[:]
            rng.shuffle(members)
            whole = len(members) - len(members) % self.batch_size
            batches += [members[i : i + self.batch_size] for i in range(0, whole, self.batch_size)]
            rest += members[whole:]
        rng.shuffle(rest)
        rest.sort(key=lambda i: self.ids[i])
        batches += [rest[i : i + self.batch_size] for i in range(0, len(rest), self.batch_size)]
        full = [b for b in batches if len(b) == self.batch_size]
        short = [b for b in batches if len(b) < self.batch_size]
        rng.shuffle(full)
        return full + short  # a short batch last, so that every other batch stays whole

    def __iter__(self) -> Iterator[int]:
        for batch in self.batches():
            yield from batch

    def __len__(self) -> int:
        return len(self.ids)


def prefix_saving(
    input_ids: Sequence[Sequence[int]],
    *,
    batch_size: int,
    seed: int = 0,
    phases: Sequence[int] | None = None,
) -> dict[str, Any]:
    """What shared-prefix batches save on ``input_ids``: the batches ``PrefixGroupedSampler`` forms
    (epoch 0), each batch's common start (as ``common_prefix_length`` finds it on the padded batch;
    below ``MIN_SHARED_TOKENS`` the batch runs plain), and the tokens that start keeps from being
    encoded again by every row after the first."""
    sampler = PrefixGroupedSampler(input_ids, batch_size=batch_size, seed=seed, phases=phases)
    total = sum(len(row) for row in input_ids)
    saved = shared_batches = batches = 0
    for batch in sampler.batches():
        batches += 1
        rows = [list(input_ids[i]) for i in batch]
        if len(rows) < 2:
            continue
        width = max(len(r) for r in rows)
        n = 0
        for column in zip(*rows, strict=False):
            if any(v != column[0] for v in column):
                break
            n += 1
        n = min(n, width - 1)
        if n < MIN_SHARED_TOKENS:
            continue
        shared_batches += 1
        saved += n * (len(rows) - 1)
    return {
        "batch_size": int(batch_size),
        "sequences": len(input_ids),
        "tokens": total,
        "batches": batches,
        "batches_sharing": shared_batches,
        "tokens_not_reencoded": saved,
        "tokens_saved_pct": round(100.0 * saved / total, 2) if total else 0.0,
    }

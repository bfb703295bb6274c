"""Packing per-turn SFT examples into whole conversations: one sequence, every turn trained.

A trajectory of N model calls gives N per-turn examples (``training.turns``),
and each repeats the whole context before it: on the demo Harness a 3-call
trajectory costs three ~1,900-token sequences for about 60 trained tokens.
The runtime only appends messages between calls, so turn k's prompt plus its
completion is usually the start of turn k+1's prompt. Such a chain is trained as
one sequence: the last turn's context with its completion, the loss on every
chained completion (its end-of-turn marker included, as in the per-turn form)
and on nothing else. Each trained token sees exactly the context it saw as a
per-turn example, so the loss is the same; only the repeated prefixes go.
Packed, the demo Harness's 418 Fixed-SFT gold examples are 206 sequences and
481k tokens instead of 872k.

A turn whose context does not extend the previous one (the system prompt was
re-rendered) starts a new chain. Messages in a context that were never
completions (hook feedback, a kept failed attempt) are never trained. A sequence
longer than ``max_length`` is cut at the end by TRL, which loses the same late
turns that cutting each per-turn example would.

Sequences are tokenized here with the model's chat template (the one the
runtime serves with), as ``input_ids`` plus a ``completion_mask`` that TRL's
``SFTTrainer`` turns into labels when ``completion_only_loss`` is on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Chain:
    """Per-turn examples of one trajectory whose contexts extend each other."""

    messages: list[dict[str, str]]  # the last turn's prompt + its completion
    trained: list[int] = field(default_factory=list)  # indices of the completions in ``messages``
    turns: list[int] = field(default_factory=list)
    phase: int = 0  # the data epoch of randomized HSA (``meta.hsa_epoch``): curriculum order


def _phase(example: dict[str, Any]) -> int:
    return int((example.get("meta") or {}).get("hsa_epoch") or 0)


def _messages(example: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, str]]:
    prompt = [
        {"role": m["role"], "content": str(m.get("content") or "")} for m in example["prompt"]
    ]
    completion = example["completion"]
    if len(completion) != 1 or completion[0].get("role") != "assistant":
        raise ValueError("a per-turn example's completion must be one assistant message")
    return prompt, {"role": "assistant", "content": str(completion[0].get("content") or "")}


def _trajectory_key(example: dict[str, Any]) -> tuple | None:
    meta = example.get("meta") or {}
    if "turn" not in meta:
        return None  # not from a recorded trajectory: a sequence of its own
    return (
        meta.get("case_id"),
        meta.get("request_id"),
        meta.get("harness"),
        meta.get("harness_digest"),
        meta.get("teacher"),
    )


def chains(examples: list[dict[str, Any]]) -> list[Chain]:
    """Group per-turn examples into chains, in turn order; order of first appearance is kept."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for index, example in enumerate(examples):
        key = _trajectory_key(example)
        groups.setdefault(key if key is not None else ("single", index), []).append(example)
    out: list[Chain] = []
    for members in groups.values():
        members.sort(key=lambda ex: int((ex.get("meta") or {}).get("turn", 0)))
        current: Chain | None = None
        for example in members:
            prompt, completion = _messages(example)
            turn = int((example.get("meta") or {}).get("turn", 0))
            if current is not None and prompt[: len(current.messages)] == current.messages:
                current.messages = [*prompt, completion]
                current.trained.append(len(prompt))
                current.turns.append(turn)
                continue
            if current is not None:
                out.append(current)
            current = Chain(
                messages=[*prompt, completion],
                trained=[len(prompt)],
                turns=[turn],
                phase=_phase(example),
            )
        if current is not None:
            out.append(current)
    return out


def _render(tokenizer, messages: list[dict[str, str]], *, generation_prompt: bool = False) -> str:
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=generation_prompt
    )


def tokenize_chain(tokenizer, chain: Chain) -> dict[str, list[int]]:
    """``input_ids``, ``completion_mask`` (1 on every trained completion's tokens), ``turns``, and
    ``turn_lengths``: the tokens each turn's per-turn example would have had (context +
    completion)."""
    text = _render(tokenizer, chain.messages)
    spans = []
    for index in chain.trained:
        before = _render(tokenizer, chain.messages[:index], generation_prompt=True)
        through = _render(tokenizer, chain.messages[: index + 1])
        if not (through.startswith(before) and text.startswith(through)):
            raise ValueError(
                "the chat template does not render a conversation as a prefix of its "
                "continuation; train per-turn examples (pack_turns: false)"
            )
        spans.append((len(before), len(through)))
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    starts = [a for a, _ in encoded["offset_mapping"]]
    mask = [int(any(start <= a < end for start, end in spans)) for a in starts]
    lengths = [sum(1 for a in starts if a < end) for _, end in spans]
    return {
        "input_ids": list(encoded["input_ids"]),
        "completion_mask": mask,
        "turns": list(chain.turns),
        "turn_lengths": lengths,
        "phase": chain.phase,
    }


def pack(tokenizer, examples: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Tokenized sequences for SFTTrainer, and facts about the packing for the run's record."""
    rows: list[dict[str, Any]] = []
    per_turn_tokens = 0
    for chain in chains(examples):
        row = tokenize_chain(tokenizer, chain)
        per_turn_tokens += sum(row.pop("turn_lengths"))
        rows.append(row)
    facts = {
        "sequences": len(rows),
        "turns": sum(len(r["turns"]) for r in rows),
        "tokens": sum(len(r["input_ids"]) for r in rows),
        "per_turn_tokens": per_turn_tokens,
        "trained_tokens": sum(sum(r["completion_mask"]) for r in rows),
    }
    return rows, facts

"""MTP adaptation, step 2: the draft head's chained forward pass, docs/architecture.md §9's loss and
the acceptance it would get when serving (``training.mtp_trainer``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from training.mtp_rollouts import RolloutSequence


def _expand(x: torch.Tensor, group: int) -> torch.Tensor:
    return x.repeat_interleave(group, dim=1) if group > 1 else x


def chain_forward(
    head: Any, seq: RolloutSequence, *, steps: int, teacher_forced: bool
) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The head's K draft steps at every anchor of ``seq``.

    Returns the anchors ``[n]`` and, per step k, the logits ``[n, vocab]`` and the target ids
    ``[n]`` (-1 where ``t + 1 + k`` is past the sequence). ``teacher_forced``: step k is fed
    ``y_{t+k}`` (training); otherwise the head's own draft from step k-1 (what greedy serving does).
    """
    c = head.config
    tokens, length = seq.tokens, seq.tokens.shape[0]
    h = seq.states.float()
    slots = h.shape[0]
    group = c.num_attention_heads // c.num_key_value_heads
    anchors = seq.anchors()
    n = anchors.shape[0]
    # keys and values of every slot from step 1 (the real ones every step attends to); queries, the
    # attention output and the MLP only where a chain starts (the anchors)
    x = head.fuse(h, tokens[1:])
    q1, k1, v1 = head.project(x, seq.offset + torch.arange(slots))
    k1e, v1e = _expand(k1, group), _expand(v1, group)  # [slots, heads, d]
    visible = torch.arange(slots)[None, :] <= anchors[:, None]  # [n, slots]
    x, q = x[anchors], q1[anchors]
    logits_per_step, targets_per_step = [], []
    chain_k: list[torch.Tensor] = []
    chain_v: list[torch.Tensor] = []
    out = None
    for k in range(1, steps + 1):
        if k > 1:
            if teacher_forced:
                feed = tokens[torch.clamp(anchors + k, max=length - 1)]
            else:
                feed = head.restrict(logits_per_step[-1]).argmax(-1)
            x = head.fuse(out, feed)
            q, kk, vv = head.project(x, seq.offset + anchors + k - 1)
            chain_k.append(_expand(kk, group))
            chain_v.append(_expand(vv, group))
        main = torch.einsum("nhd,shd->nhs", q, k1e) * head.scale
        main = main.masked_fill(~visible[:, None, :], float("-inf"))
        if chain_k:
            diag = (
                torch.stack([(q * ck).sum(-1) for ck in chain_k], dim=-1) * head.scale
            )  # [n, heads, k-1]
            main = torch.cat([main, diag], dim=-1)
        probs = torch.softmax(main, dim=-1)
        attn = torch.einsum("nhs,shd->nhd", probs[..., :slots], v1e)
        for i, cv in enumerate(chain_v):
            attn = attn + probs[..., slots + i, None] * cv
        out = head.finish(x, attn.reshape(n, -1))
        logits_per_step.append(head.logits(out))
        at = anchors + 1 + k
        targets_per_step.append(
            torch.where(at <= length - 1, tokens[torch.clamp(at, max=length - 1)], -1)
        )
    return anchors, logits_per_step, targets_per_step


def sequence_loss(
    head: Any, seq: RolloutSequence, *, steps: int, weights: list[float]
) -> tuple[torch.Tensor, float, list[dict[str, float]]]:
    """The weighted sum of per-step cross-entropies, its normaliser Z, and per-step counts."""
    _, logits, targets = chain_forward(head, seq, steps=steps, teacher_forced=True)
    total = torch.zeros(())
    z = 0.0
    per_step = []
    for k, (lg, tg) in enumerate(zip(logits, targets, strict=True)):
        valid = tg >= 0
        count = int(valid.sum())
        if count:
            ce = F.cross_entropy(lg[valid], tg[valid], reduction="sum")
            total = total + weights[k] * ce
            z += weights[k] * count
            correct = int((lg[valid].argmax(-1) == tg[valid]).sum())
        else:
            ce, correct = torch.zeros(()), 0
        per_step.append({"ce": float(ce.detach()), "n": count, "correct": correct})
    return total, z, per_step


@torch.no_grad()
def offline_acceptance(
    head: Any, sequences: list[RolloutSequence], *, steps: int
) -> dict[str, Any]:
    """Greedy acceptance on rollouts: at each anchor the head drafts K tokens on its own, and the
    leading ones equal to what the policy wrote are accepted (what greedy speculative decoding
    keeps when a cycle starts there). Acceptance length counts the policy's own token too."""
    cycles = 0
    at_position = [0] * steps
    for seq in sequences:
        _, logits, targets = chain_forward(head, seq, steps=steps, teacher_forced=False)
        alive = torch.ones(targets[0].shape[0], dtype=torch.bool)
        for k in range(steps):
            alive = alive & (head.restrict(logits[k]).argmax(-1) == targets[k]) & (targets[k] >= 0)
            at_position[k] += int(alive.sum())
        cycles += int(targets[0].shape[0])
    accepted = sum(at_position)
    if not cycles:
        return {
            "cycles": 0,
            "acceptance_length": None,
            "acceptance_rate": None,
            "acceptance_rate_per_position": [],
        }
    return {
        "cycles": cycles,
        "acceptance_length": round(1 + accepted / cycles, 4),
        "acceptance_rate": round(accepted / (steps * cycles), 4),
        "acceptance_rate_per_position": [round(a / cycles, 4) for a in at_position],
    }

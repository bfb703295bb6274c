"""Dropping zero-advantage samples from a scored GRPO batch before the update.

After GDPO aggregation (each reward dimension normalised within its group, then
summed), a group whose rollouts all scored the same has advantage 0 for every
member: those samples add nothing to the policy gradient but still count in the
loss normaliser and cost a forward/backward pass. ``drop_zero_advantage``
removes them. TRL splits the batch into ``steps_per_generation`` equal chunks,
so the kept count is rounded up to a multiple of it with the fewest
zero-advantage samples (which contribute no policy gradient).
"""

from __future__ import annotations

from typing import Any

import torch

EPS = 1e-6


def drop_zero_advantage(batch: dict[str, Any], *, multiple: int = 1) -> tuple[dict[str, Any], int]:
    """Return (filtered batch, number dropped). Tensors/lists with the batch dimension are
    indexed."""
    advantages: torch.Tensor = batch["advantages"]
    size = int(advantages.shape[0])
    nonzero = advantages.abs() > EPS
    keep = nonzero.clone()
    kept = int(keep.sum())
    target = max(multiple, -(-kept // multiple) * multiple)
    for index in torch.nonzero(~nonzero).flatten().tolist():  # pad with zero-advantage samples
        if kept >= min(target, size):
            break
        keep[index] = True
        kept += 1
    if bool(keep.all()):
        return batch, 0
    index = torch.nonzero(keep).flatten()
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.ndim > 0 and value.shape[0] == size:
            out[key] = value[index]
        elif isinstance(value, list) and len(value) == size:
            out[key] = [value[i] for i in index.tolist()]
        else:
            out[key] = value
    if "completion_mask" in out and "num_items_in_batch" in out:
        mask = out["completion_mask"]
        if out.get("tool_mask") is not None:
            mask = mask * out["tool_mask"]
        out["num_items_in_batch"] = mask.sum().to(
            torch.as_tensor(batch["num_items_in_batch"]).dtype
        )
    return out, size - int(keep.sum())

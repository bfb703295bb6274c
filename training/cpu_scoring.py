"""Score only the completion positions on CPU in TRL's fused log-prob head.

TRL 1.16's fused LM head (``trl.trainer.utils.add_fused_lm_head``, also used by
``DistillationTrainer``) scores *only the labelled positions* on Triton devices,
but every position elsewhere, so that tile shapes stay fixed for compilers such
as Neuron's. On CPU nothing is compiled, and scoring every position of a
2,000-token Harness prompt to keep a few dozen completion tokens costs most of
an RL step (measured: the backward of the full-sequence head took ~80% of a
tiny-model GRPO step). ``enable()`` makes the choice "compact" on CPU as well;
the log-probabilities are identical, only masked positions are skipped. The SFT,
OPD and RL stages turn it on (SFT trains on a few dozen completion tokens after
a ~1,800-token Harness prompt: 3 steps of SmolLM2-135M, 2 examples each, went
from 230.5 s to 179.6 s with the same losses, and its peak memory from 14.6 GB to 8.9 GB).
"""

from __future__ import annotations

_PATCHED = False


def enable() -> None:
    """Idempotent; affects only the ``compact`` decision, never which kernel runs."""
    global _PATCHED
    if _PATCHED:
        return
    import trl.trainer.distillation_trainer as distillation
    import trl.trainer.utils as utils

    original = utils._use_triton

    def compact_on_cpu(device) -> bool:
        return device.type == "cpu" or original(device)

    utils._use_triton = compact_on_cpu
    distillation._use_triton = compact_on_cpu
    _PATCHED = True

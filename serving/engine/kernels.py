"""The engine's one native kernel: weight-only int8 matrix-vector products on AVX2.

Decoding a 135M model at batch 1 reads every weight once per token, so its speed
is the memory traffic of the weights: 540 MB per token in fp32. torch has no fast
weight-only int8 kernel for this CPU (``_weight_int8pack_mm`` runs ~10x slower
than the fp32 matvec here, and fbgemm's dynamic int8 quantizes the activations
too, which changes the default model's greedy outputs from the first tokens), so
the engine compiles this one: int8 weights with one fp32 scale per output
channel, fp32 activations and accumulation, up to 8 activation rows per pass so
a batched decode step reads each weight once. 135 MB per token.

``int8_linear.cpp`` beside this file is compiled once per machine and checkout with torch's
``cpp_extension`` (g++ and ninja, which ``scripts/bootstrap.sh`` installs; about 15-19 s on 2 cores)
into torch's extension cache, and registered as ``torch.ops.serving_engine_int8.int8_linear``;
``kernel_problem()`` says why it cannot be used where it cannot.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

import torch

SOURCE = Path(__file__).with_name("int8_linear.cpp")


def _cpu_has_avx2() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return " avx2 " in flags and " fma " in flags


@functools.cache
def kernel_problem() -> str | None:
    """Why the int8 kernel cannot be used here, or None once it is compiled and loaded."""
    if not _cpu_has_avx2():
        return "the CPU has no AVX2/FMA"
    for tool in ("g++", "ninja"):
        if shutil.which(tool) is None:
            return (
                f"{tool} is not installed (scripts/bootstrap.sh "
                "installs it: apt-get install g++ ninja-build)"
            )
    try:
        _module()
    except Exception as exc:  # noqa: BLE001 - a compiler error is reported, not raised
        return f"compiling the kernel failed: {type(exc).__name__}: {str(exc)[-400:]}"
    return None


@functools.cache
def _module() -> Any:
    from torch.utils.cpp_extension import load

    load(
        name="serving_engine_int8_op",
        sources=[str(SOURCE)],
        extra_cflags=["-O3", "-mavx2", "-mfma", "-fopenmp"],
        extra_ldflags=["-fopenmp"],
        is_python_module=False,
        verbose=False,
    )
    return torch.ops.serving_engine_int8


def int8_linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return _module().int8_linear(x, weight, scale)


def quantize_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: (int8 [N, K], fp32 scales [N])."""
    scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    q = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
    return q, scale.float().contiguous()

"""The engine's one native kernel: weight-only int8 matrix-vector products on AVX2.

Decoding a 135M model at batch 1 reads every weight once per token, so its speed
is the memory traffic of the weights: 540 MB per token in fp32. torch has no fast
weight-only int8 kernel for this CPU (``_weight_int8pack_mm`` runs ~10x slower
than the fp32 matvec here, and fbgemm's dynamic int8 quantizes the activations
too, which changes the default model's greedy outputs from the first tokens), so
the engine compiles this one: int8 weights with one fp32 scale per output
channel, fp32 activations and accumulation, up to 8 activation rows per pass so
a batched decode step reads each weight once. 135 MB per token.

Compiled once per machine with torch's ``cpp_extension`` (g++ and ninja, which
``scripts/bootstrap.sh`` installs) into torch's extension cache;
``kernel_problem()`` says why it cannot be used where it cannot.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

import torch

_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

static inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 sh = _mm_movehdup_ps(lo);
  __m128 s = _mm_add_ps(lo, sh);
  sh = _mm_movehl_ps(sh, s);
  s = _mm_add_ss(s, sh);
  return _mm_cvtss_f32(s);
}

template <int M>
static void rows(const float* x, const int8_t* w, const float* scale, float* y,
                 int64_t K, int64_t N, int64_t begin, int64_t end) {
  for (int64_t n = begin; n < end; ++n) {
    const int8_t* row = w + n * K;
    __m256 acc[M];
    for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
      __m256i w32 = _mm256_loadu_si256((const __m256i*)(row + k));
      __m128i lo = _mm256_castsi256_si128(w32), hi = _mm256_extracti128_si256(w32, 1);
      __m256 w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
      __m256 w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
      __m256 w2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
      __m256 w3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
      for (int m = 0; m < M; ++m) {
        const float* xm = x + m * K + k;
        acc[m] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xm), acc[m]);
        acc[m] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xm + 8), acc[m]);
        acc[m] = _mm256_fmadd_ps(w2, _mm256_loadu_ps(xm + 16), acc[m]);
        acc[m] = _mm256_fmadd_ps(w3, _mm256_loadu_ps(xm + 24), acc[m]);
      }
    }
    for (int m = 0; m < M; ++m) {
      float s = hsum(acc[m]);
      for (int64_t kk = k; kk < K; ++kk) s += (float)row[kk] * x[m * K + kk];
      y[m * N + n] = s * scale[n];
    }
  }
}

// y[M, N] = x[M, K] @ (w[N, K] * scale[N, None]).T
torch::Tensor int8_linear(torch::Tensor x, torch::Tensor w, torch::Tensor scale) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat && x.is_contiguous(), "x: contiguous fp32 [M, K]");
  TORCH_CHECK(w.dim() == 2 && w.scalar_type() == torch::kChar && w.is_contiguous(), "w: contiguous int8 [N, K]");
  TORCH_CHECK(x.size(1) == w.size(1), "x and w disagree on K");
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  auto y = torch::empty({M, N}, x.options());
  const int8_t* wp = w.data_ptr<int8_t>();
  const float* sp = scale.data_ptr<float>();
  for (int64_t m0 = 0; m0 < M; m0 += 8) {
    const int64_t mb = std::min<int64_t>(8, M - m0);
    const float* xp = x.data_ptr<float>() + m0 * K;
    float* yp = y.data_ptr<float>() + m0 * N;
    at::parallel_for(0, N, 64, [&](int64_t begin, int64_t end) {
      switch (mb) {
        case 1: rows<1>(xp, wp, sp, yp, K, N, begin, end); break;
        case 2: rows<2>(xp, wp, sp, yp, K, N, begin, end); break;
        case 3: rows<3>(xp, wp, sp, yp, K, N, begin, end); break;
        case 4: rows<4>(xp, wp, sp, yp, K, N, begin, end); break;
        case 5: rows<5>(xp, wp, sp, yp, K, N, begin, end); break;
        case 6: rows<6>(xp, wp, sp, yp, K, N, begin, end); break;
        case 7: rows<7>(xp, wp, sp, yp, K, N, begin, end); break;
        default: rows<8>(xp, wp, sp, yp, K, N, begin, end); break;
      }
    });
  }
  return y;
}
"""


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
            return f"{tool} is not installed (scripts/bootstrap.sh installs it: apt-get install g++ ninja-build)"
    try:
        _module()
    except Exception as exc:  # noqa: BLE001 - a compiler error is reported, not raised
        return f"compiling the kernel failed: {type(exc).__name__}: {str(exc)[-400:]}"
    return None


@functools.cache
def _module() -> Any:
    from torch.utils.cpp_extension import load_inline

    return load_inline(name="serving_engine_int8", cpp_sources=[_SOURCE], functions=["int8_linear"],
                       extra_cflags=["-O3", "-mavx2", "-mfma", "-fopenmp"], extra_ldflags=["-fopenmp"],
                       verbose=False)


def int8_linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return _module().int8_linear(x, weight, scale)


def quantize_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: (int8 [N, K], fp32 scales [N])."""
    scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    q = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
    return q, scale.float().contiguous()

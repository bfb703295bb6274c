// The engine's int8 kernel (serving/engine/kernels.py compiles and loads it): an operator registered
// with the dispatcher, built against ATen's tensor headers only, not torch/extension.h (which pulls
// in all of libtorch and pybind11 and took 55 s of the 2-core machine to compile, against 15-19 s).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>
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
at::Tensor int8_linear(at::Tensor x, at::Tensor w, at::Tensor scale) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.is_contiguous(), "x: contiguous fp32 [M, K]");
  TORCH_CHECK(w.dim() == 2 && w.scalar_type() == at::kChar && w.is_contiguous(), "w: contiguous int8 [N, K]");
  TORCH_CHECK(x.size(1) == w.size(1), "x and w disagree on K");
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  auto y = at::empty({M, N}, x.options());
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

TORCH_LIBRARY(serving_engine_int8, m) { m.def("int8_linear", &int8_linear); }

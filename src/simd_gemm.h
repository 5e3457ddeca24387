// out = a · b (+ bias) for row-major float matrices, with wasm SIMD, for the wasm build only.
//
// Why not Eigen's product in wasm: Eigen's SSE2 GEBP kernel reaches the wasm build through
// Emscripten's SSE2 emulation, where its broadcasts become generic shuffles; its wasm GEMM measured
// ~24–27 GFLOP/s against ~35–40 for the same code native. This kernel keeps a 4 × 8 tile of `out`
// in eight registers and, per step of k, loads 8 floats of b and splats one float of each of the
// 4 rows of a (v128.load32_splat): 16 SIMD operations per 8 loads, no shuffles. b's columns are
// walked in panels of 8, so a panel (K × 8 floats) stays in L1 while every row tile passes over it.
//
// Natively, the same kernel written with legacy SSE2 intrinsics was slower than Eigen at n ≥ 128
// (19–20 vs 17 ms at n = 128, d_model = 768), so native builds keep Eigen. (V8 compiles wasm SIMD
// with AVX encodings where the CPU has them, which an SSE2-only native build cannot use.)
#pragma once

#include <cstdint>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#define MH_SIMD_GEMM 1
namespace mh::simd {
using f32x4 = v128_t;
inline f32x4 load(const float* p) { return wasm_v128_load(p); }
inline f32x4 splat_load(const float* p) { return wasm_v128_load32_splat(p); }
inline f32x4 zero() { return wasm_f32x4_splat(0.0f); }
inline void store(float* p, f32x4 v) { wasm_v128_store(p, v); }
inline f32x4 add(f32x4 a, f32x4 b) { return wasm_f32x4_add(a, b); }
inline f32x4 mul(f32x4 a, f32x4 b) { return wasm_f32x4_mul(a, b); }
}  // namespace mh::simd
#else
#define MH_SIMD_GEMM 0
#endif

#if MH_SIMD_GEMM
namespace mh {

// out (n × cols, row stride ldo) = a (n × K, stride lda) · b (K × cols, stride ldb) + bias (cols;
// may be null). Summation is in k order, bias first, the same for every tile and remainder.
inline void gemm_rowmajor_simd(float* out, int ldo, const float* a, int lda, const float* b, int ldb,
                               const float* bias, int n, int K, int cols) {
  int j = 0;
  for (; j + 8 <= cols; j += 8) {
    const simd::f32x4 bias0 = bias ? simd::load(bias + j) : simd::zero();
    const simd::f32x4 bias1 = bias ? simd::load(bias + j + 4) : simd::zero();
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      simd::f32x4 c00 = bias0, c01 = bias1, c10 = bias0, c11 = bias1;
      simd::f32x4 c20 = bias0, c21 = bias1, c30 = bias0, c31 = bias1;
      const float* a0 = a + static_cast<int64_t>(i) * lda;
      const float* a1 = a0 + lda;
      const float* a2 = a1 + lda;
      const float* a3 = a2 + lda;
      const float* bk = b + j;
      for (int k = 0; k < K; ++k, bk += ldb) {
        const simd::f32x4 b0 = simd::load(bk), b1 = simd::load(bk + 4);
        simd::f32x4 s = simd::splat_load(a0 + k);
        c00 = simd::add(c00, simd::mul(s, b0));
        c01 = simd::add(c01, simd::mul(s, b1));
        s = simd::splat_load(a1 + k);
        c10 = simd::add(c10, simd::mul(s, b0));
        c11 = simd::add(c11, simd::mul(s, b1));
        s = simd::splat_load(a2 + k);
        c20 = simd::add(c20, simd::mul(s, b0));
        c21 = simd::add(c21, simd::mul(s, b1));
        s = simd::splat_load(a3 + k);
        c30 = simd::add(c30, simd::mul(s, b0));
        c31 = simd::add(c31, simd::mul(s, b1));
      }
      float* o = out + static_cast<int64_t>(i) * ldo + j;
      simd::store(o, c00); simd::store(o + 4, c01); o += ldo;
      simd::store(o, c10); simd::store(o + 4, c11); o += ldo;
      simd::store(o, c20); simd::store(o + 4, c21); o += ldo;
      simd::store(o, c30); simd::store(o + 4, c31);
    }
    for (; i < n; ++i) {  // the last n % 4 rows, one at a time
      simd::f32x4 c0 = bias0, c1 = bias1;
      const float* ai = a + static_cast<int64_t>(i) * lda;
      const float* bk = b + j;
      for (int k = 0; k < K; ++k, bk += ldb) {
        const simd::f32x4 s = simd::splat_load(ai + k);
        c0 = simd::add(c0, simd::mul(s, simd::load(bk)));
        c1 = simd::add(c1, simd::mul(s, simd::load(bk + 4)));
      }
      float* o = out + static_cast<int64_t>(i) * ldo + j;
      simd::store(o, c0);
      simd::store(o + 4, c1);
    }
  }
  for (; j < cols; ++j) {  // the last cols % 8 columns, scalar
    for (int i = 0; i < n; ++i) {
      float sum = bias ? bias[j] : 0.0f;
      const float* ai = a + static_cast<int64_t>(i) * lda;
      for (int k = 0; k < K; ++k) sum += ai[k] * b[static_cast<int64_t>(k) * ldb + j];
      out[static_cast<int64_t>(i) * ldo + j] = sum;
    }
  }
}

}  // namespace mh

#endif  // MH_SIMD_GEMM

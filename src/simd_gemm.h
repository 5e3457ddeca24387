// out = a · b (+ bias) for row-major float matrices, written with wasm SIMD for the wasm build.
//
// Why not Eigen's product there: Eigen's SSE2 GEBP kernel reaches the wasm build through
// Emscripten's SSE2 emulation, where its broadcasts become generic shuffles; its wasm GEMM measured
// ~24–27 GFLOP/s against ~35–40 for the same code native. This kernel keeps a 4 × 8 tile of `out`
// in eight registers and, per step of k, loads 8 floats of b and splats one float of each of the
// 4 rows of a (v128.load32_splat): 16 SIMD operations per 8 loads, no shuffles. b's columns are
// walked in panels of 8, so a panel (K × 8 floats) stays in L1 while every row tile passes over it.
#pragma once

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

namespace mh {

// out (n × cols, row stride ldo) = a (n × K, stride lda) · b (K × cols, stride ldb) + bias (cols;
// may be null). Summation is in k order, bias first, the same for every tile and remainder.
inline void gemm_rowmajor_simd(float* out, int ldo, const float* a, int lda, const float* b, int ldb,
                               const float* bias, int n, int K, int cols) {
  int j = 0;
  for (; j + 8 <= cols; j += 8) {
    const v128_t bias0 = bias ? wasm_v128_load(bias + j) : wasm_f32x4_splat(0.0f);
    const v128_t bias1 = bias ? wasm_v128_load(bias + j + 4) : wasm_f32x4_splat(0.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      v128_t c00 = bias0, c01 = bias1, c10 = bias0, c11 = bias1;
      v128_t c20 = bias0, c21 = bias1, c30 = bias0, c31 = bias1;
      const float* a0 = a + static_cast<int64_t>(i) * lda;
      const float* a1 = a0 + lda;
      const float* a2 = a1 + lda;
      const float* a3 = a2 + lda;
      const float* bk = b + j;
      for (int k = 0; k < K; ++k, bk += ldb) {
        const v128_t b0 = wasm_v128_load(bk), b1 = wasm_v128_load(bk + 4);
        v128_t s = wasm_v128_load32_splat(a0 + k);
        c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(s, b0));
        c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(s, b1));
        s = wasm_v128_load32_splat(a1 + k);
        c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(s, b0));
        c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(s, b1));
        s = wasm_v128_load32_splat(a2 + k);
        c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(s, b0));
        c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(s, b1));
        s = wasm_v128_load32_splat(a3 + k);
        c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(s, b0));
        c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(s, b1));
      }
      float* o = out + static_cast<int64_t>(i) * ldo + j;
      wasm_v128_store(o, c00); wasm_v128_store(o + 4, c01); o += ldo;
      wasm_v128_store(o, c10); wasm_v128_store(o + 4, c11); o += ldo;
      wasm_v128_store(o, c20); wasm_v128_store(o + 4, c21); o += ldo;
      wasm_v128_store(o, c30); wasm_v128_store(o + 4, c31);
    }
    for (; i < n; ++i) {  // the last n % 4 rows, one at a time
      v128_t c0 = bias0, c1 = bias1;
      const float* ai = a + static_cast<int64_t>(i) * lda;
      const float* bk = b + j;
      for (int k = 0; k < K; ++k, bk += ldb) {
        const v128_t s = wasm_v128_load32_splat(ai + k);
        c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(s, wasm_v128_load(bk)));
        c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(s, wasm_v128_load(bk + 4)));
      }
      float* o = out + static_cast<int64_t>(i) * ldo + j;
      wasm_v128_store(o, c0);
      wasm_v128_store(o + 4, c1);
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

#endif  // __wasm_simd128__

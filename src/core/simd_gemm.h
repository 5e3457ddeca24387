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

// The kernel over "panels" of 8 columns of b: element (k, j) of b is at
// b[(j / 8) · panel_stride + k · ldb + j % 8]. Row-major b is panel_stride = 8 with its own ldb;
// packed b (pack_panels) is panel_stride = 8·K, ldb = 8, zero-padded to whole panels, so a tail
// panel can be computed whole into a scratch tile (padded = true); row-major tails go scalar.
inline void gemm_panels_simd(float* out, int ldo, const float* a, int lda, const float* b, int ldb,
                             int64_t panel_stride, bool padded, const float* bias, int n, int K, int cols) {
  float tile[4 * 8];
  const int full = padded ? (cols + 7) / 8 : cols / 8;
  for (int p = 0; p < full; ++p) {
    const int j = 8 * p, width = cols - j < 8 ? cols - j : 8;
    const float* bp = b + p * panel_stride;
    simd::f32x4 bias0 = simd::zero(), bias1 = simd::zero();
    if (bias && width == 8) { bias0 = simd::load(bias + j); bias1 = simd::load(bias + j + 4); }
    for (int i = 0; i < n; i += 4) {
      const int rows = n - i < 4 ? n - i : 4;
      simd::f32x4 c00 = bias0, c01 = bias1, c10 = bias0, c11 = bias1;
      simd::f32x4 c20 = bias0, c21 = bias1, c30 = bias0, c31 = bias1;
      const float* a0 = a + static_cast<int64_t>(i) * lda;
      if (rows == 4) {
        const float* a1 = a0 + lda;
        const float* a2 = a1 + lda;
        const float* a3 = a2 + lda;
        const float* bk = bp;
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
      } else {  // the last n % 4 rows: a pair together (4 accumulators), then a single row
        int r = 0;
        if (rows >= 2) {
          const float* a1 = a0 + lda;
          const float* bk = bp;
          for (int k = 0; k < K; ++k, bk += ldb) {
            const simd::f32x4 b0 = simd::load(bk), b1 = simd::load(bk + 4);
            simd::f32x4 s = simd::splat_load(a0 + k);
            c00 = simd::add(c00, simd::mul(s, b0));
            c01 = simd::add(c01, simd::mul(s, b1));
            s = simd::splat_load(a1 + k);
            c10 = simd::add(c10, simd::mul(s, b0));
            c11 = simd::add(c11, simd::mul(s, b1));
          }
          r = 2;
        }
        if (r < rows) {
          const float* ar = a0 + static_cast<int64_t>(r) * lda;
          simd::f32x4& x0 = r == 0 ? c00 : c20;
          simd::f32x4& x1 = r == 0 ? c01 : c21;
          const float* bk = bp;
          for (int k = 0; k < K; ++k, bk += ldb) {
            const simd::f32x4 s = simd::splat_load(ar + k);
            x0 = simd::add(x0, simd::mul(s, simd::load(bk)));
            x1 = simd::add(x1, simd::mul(s, simd::load(bk + 4)));
          }
        }
      }
      const simd::f32x4 acc[8] = {c00, c01, c10, c11, c20, c21, c30, c31};
      for (int r = 0; r < rows; ++r) {
        float* o = out + static_cast<int64_t>(i + r) * ldo + j;
        if (width == 8) {
          simd::store(o, acc[2 * r]);
          simd::store(o + 4, acc[2 * r + 1]);
        } else {  // a padded tail panel: keep only its real columns (plus their bias)
          simd::store(tile, acc[2 * r]);
          simd::store(tile + 4, acc[2 * r + 1]);
          for (int c = 0; c < width; ++c) o[c] = tile[c] + (bias ? bias[j + c] : 0.0f);
        }
      }
    }
  }
  for (int j = 8 * full; j < cols; ++j) {  // row-major tail columns, scalar
    for (int i = 0; i < n; ++i) {
      float sum = bias ? bias[j] : 0.0f;
      const float* ai = a + static_cast<int64_t>(i) * lda;
      for (int k = 0; k < K; ++k) sum += ai[k] * b[static_cast<int64_t>(k) * ldb + j];
      out[static_cast<int64_t>(i) * ldo + j] = sum;
    }
  }
}

// out (n × cols, row stride ldo) = a (n × K, stride lda) · b (K × cols, row-major, stride ldb)
// + bias (cols; may be null). Summation is in k order, bias first.
inline void gemm_rowmajor_simd(float* out, int ldo, const float* a, int lda, const float* b, int ldb,
                               const float* bias, int n, int K, int cols) {
  gemm_panels_simd(out, ldo, a, lda, b, ldb, 8, false, bias, n, K, cols);
}

// packed (⌈cols/8⌉ panels × K × 8) = scale · the K × cols matrix whose element (k, j) is
// src[j · ld + k] (i.e. scale · srcᵀ for src cols × K, such as a head's keys), zero-padded.
// Contiguous panels: a strided b (rows n_k floats apart, often a power of two) made the kernel's
// loads alias in L1 — 16,384 keys ran 1.8× slower than Eigen before packing.
inline void pack_panels_transposed(float* packed, const float* src, int ld, int cols, int K, float scale) {
  const int panels = (cols + 7) / 8;
  for (int p = 0; p < panels; ++p) {
    float* dst = packed + static_cast<int64_t>(p) * K * 8;
    for (int l = 0; l < 8; ++l) {
      const int j = 8 * p + l;
      if (j < cols) {
        const float* row = src + static_cast<int64_t>(j) * ld;
        for (int k = 0; k < K; ++k) dst[k * 8 + l] = scale * row[k];
      } else {
        for (int k = 0; k < K; ++k) dst[k * 8 + l] = 0.0f;
      }
    }
  }
}

// out (n × cols, stride ldo) = a (n × K, stride lda) · packed (from pack_panels_transposed).
inline void gemm_packed_simd(float* out, int ldo, const float* a, int lda, const float* packed,
                             int n, int K, int cols) {
  gemm_panels_simd(out, ldo, a, lda, packed, 8, static_cast<int64_t>(K) * 8, true, nullptr, n, K, cols);
}

}  // namespace mh

#endif  // MH_SIMD_GEMM

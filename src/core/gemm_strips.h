// The GEMM's few-rows kernels (gemm.cpp's third part): decoding's one row, and 2–3 rows over a
// row-major B, read B in place as strips, with no packing.
//
// One row (decoding; 2–3 rows over a row-major B: reads_strips()) skips the packing: B is read
// in place and streams from memory once — that product is bound by memory bandwidth, not
// arithmetic. One row over short panels reads one panel at a time (row_stream: one sequential
// stream), otherwise a strip of 8/rows vectors of B's row k is read side by side. 2-byte
// weights are widened there in registers (load8_lanes).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/gemm_vectors.h"

namespace mh {

// Private to gemm.cpp, the one file that includes it: internal linkage, as if written there.
namespace {

// width floats: by vectors when the columns are whole (8 · G): std::copy of a length known only at
// run time is a call to memcpy, two a panel, which had been 2 % of a decoding step.
template <int G>
inline void copy_columns(float* to, const float* from, int width) {
  if (width == 8 * G) {
    for (int v = 0; v < 2 * G; ++v) store(to + 4 * v, load(from + 4 * v));
  } else {
    std::copy(from, from + width, to);
  }
}

// Rows read as strips (reads_strips(): decoding): out (R rows × `width` columns from j,
// width ≤ 8G) = bias + a · b, B read in place, G groups of 8 columns side by side. Eight columns
// from a multiple of 8 are contiguous in either layout (a row's run, or a panel's row), so each
// group is one stream. In panel layout the last group may be partial (its zero padding is
// computed, not stored); row-major callers pass whole groups only.
// The addresses advance by pointer increments, written out: Emscripten turns LLVM's loop
// strength reduction off (-disable-lsr), so an index expression is recomputed every iteration.
// Returns whether the fast fp16 widening met inf or NaN, in which case the caller runs it again
// with Fp16Widening::kExact (Fp16Specials).
template <WeightType T, int R, int G, Fp16Widening W = Fp16Widening::kWatched>
bool strip(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int K, int j,
           int width) {
  alignas(16) float tile[8 * G] = {}, lanes[8 * G];
  if (bias) copy_columns<G>(tile, bias + j, width);
  for (int l = 0; l < 8 * G; ++l) lanes[l] = tile[lane_column<T>(l)];
  v4 acc[R][2 * G];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2 * G; ++v) acc[r][v] = load(lanes + 4 * v);
  // Element (k, j + 8g) is at p + g · group_step once p has advanced k times by k_step.
  const Stored<T>* p = static_cast<const Stored<T>*>(b.data) + (b.panels ? panel_index(0, j, b.ld) : j);
  const std::ptrdiff_t group_step = b.panels ? 8 * b.ld : 8, k_step = b.panels ? 8 : b.ld, row_step = lda;
  const float* a_k = a;
  Fp16Specials seen;
  for (int k = 0; k < K; ++k, p += k_step, ++a_k) {
    v4 col[2 * G];
    for (int g = 0; g < G; ++g) load8_lanes<T, W>(p + g * group_step, col[2 * g], col[2 * g + 1], seen);
    for (int r = 0; r < R; ++r) {
      const v4 s = splat(a_k + r * row_step);
      for (int v = 0; v < 2 * G; ++v) acc[r][v] = madd(acc[r][v], s, col[v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < 2 * G; ++v) store(lanes + 4 * v, acc[r][v]);
    for (int l = 0; l < 8 * G; ++l) tile[lane_column<T>(l)] = lanes[l];
    copy_columns<G>(out + r * ldo + j, tile, width);
  }
  return seen.any();
}

// One row (a decoding step) × one panel of 8 columns: out[j, j + width) = bias + a · b, the panel
// read as one sequential stream. Its 8 columns give only 2 accumulator chains, and a chain
// waits for its last multiply-add (3–4 cycles) at every step of k: that capped 2-byte weights
// near 18 GB/s. So even and odd steps of k go to 2 sums each, added at the end (the same
// numbers as the tiles, summed in another order: within float32 rounding, not the same bits).
// Returns what strip() does.
template <WeightType T, Fp16Widening W = Fp16Widening::kWatched>
bool row_stream(float* out, const float* a, const MatrixRef& b, const float* bias, int K, int j, int width) {
  alignas(16) float tile[8] = {}, lanes[8];
  if (bias) copy_columns<1>(tile, bias + j, width);
  for (int l = 0; l < 8; ++l) lanes[l] = tile[lane_column<T>(l)];
  v4 even[2] = {load(lanes), load(lanes + 4)}, odd[2] = {zero(), zero()};
  const Stored<T>* p = static_cast<const Stored<T>*>(b.data) + panel_index(0, j, b.ld);
  const float* a_k = a;
  Fp16Specials seen;
  int k = 0;
  for (; k + 2 <= K; k += 2, p += 16, a_k += 2) {
    v4 lo, hi, lo1, hi1;
    load8_lanes<T, W>(p, lo, hi, seen);
    load8_lanes<T, W>(p + 8, lo1, hi1, seen);
    const v4 s = splat(a_k), s1 = splat(a_k + 1);
    even[0] = madd(even[0], s, lo);
    even[1] = madd(even[1], s, hi);
    odd[0] = madd(odd[0], s1, lo1);
    odd[1] = madd(odd[1], s1, hi1);
  }
  if (k < K) {
    v4 lo, hi;
    load8_lanes<T, W>(p, lo, hi, seen);
    const v4 s = splat(a_k);
    even[0] = madd(even[0], s, lo);
    even[1] = madd(even[1], s, hi);
  }
  store(lanes, add(even[0], odd[0]));
  store(lanes + 4, add(even[1], odd[1]));
  for (int l = 0; l < 8; ++l) tile[lane_column<T>(l)] = lanes[l];
  copy_columns<1>(out + j, tile, width);
  return seen.any();
}

// Columns [c0, end) of few_rows (below), fp16 widened as W says.
template <WeightType T, int R, Fp16Widening W>
void strips(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int K,
            int c0, int end) {
  // Groups of 8 columns read side by side: up to 8 accumulators (6 for 3 rows). Except one row
  // over short panels (K ≤ 1024: GPT-2's 768, the output head included): there one panel at a
  // time, one sequential stream, which memory reads faster than four panels 24 KB apart; panels
  // of 1536 and more still read faster four at a time (docs/performance.md, "Kernel decisions"),
  // and gemm() splits them over threads in whole groups of four (one_row_in_four_panels).
  constexpr Fp16Widening kExact = Fp16Widening::kExact;
  if (R == 1 && b.panels && K <= 1024) {
    using Stream = bool (*)(float*, const float*, const MatrixRef&, const float*, int, int, int);
    static Stream volatile stream_pointer = row_stream<T, W>;  // not inlined: see below
    const Stream stream = stream_pointer;
    for (int j = c0; j < end; j += 8) {
      const int width = std::min(8, end - j);
      if (stream(out, a, b, bias, K, j, width)) row_stream<T, kExact>(out, a, b, bias, K, j, width);
    }
    return;
  }
  // fp16 one row, watched: 2 groups, since with its widening's constants and Fp16Specials, 4
  // spilled. Prescaled (one constant, no watch), 4 fit.
  constexpr int kGroups = R == 1 ? (T == WeightType::kF16 && W != Fp16Widening::kPrescaled ? 2 : 4) : R == 2 ? 2 : 1;
  // Called through a pointer the optimizer cannot see through: binaryen inlines a function with
  // one caller whatever `noinline` says, and inside gemm_columns, V8 spilled this loop's
  // accumulators to the stack (docs/performance.md, "Kernel decisions").
  // A strip that met fp16's inf or NaN runs again, widened exactly (Fp16Specials).
  using Strip = bool (*)(float*, int64_t, const float*, int64_t, const MatrixRef&, const float*, int, int, int);
  static Strip volatile wide_strip = strip<T, R, kGroups, W>;
  const Strip wide = wide_strip;
  int j = c0;
  // A range of 4m + 2 panels (gemm() cuts one row over long panels into chunks of 6 where that
  // evens out the threads: 96 panels on 16) reads its first 6 side by side: k in order in every
  // group, so the same bits as groups of 4.
  if constexpr (R == 1 && kGroups == 4) {
    const int panels = (end - c0 + 7) / 8;
    if (b.panels && panels % 4 == 2 && panels > 2) {
      static Strip volatile six_strip = strip<T, 1, 6, W>;
      const Strip six = six_strip;
      const int width = std::min(48, end - j);
      if (six(out, ldo, a, lda, b, bias, K, j, width)) strip<T, 1, 6, kExact>(out, ldo, a, lda, b, bias, K, j, width);
      j += 48;
    }
  }
  for (; end - j > 8 * (kGroups - 1); j += 8 * kGroups) {
    const int width = std::min(8 * kGroups, end - j);
    if (wide(out, ldo, a, lda, b, bias, K, j, width)) strip<T, R, kGroups, kExact>(out, ldo, a, lda, b, bias, K, j, width);
  }
  for (; j < end; j += 8) {
    const int width = std::min(8, end - j);
    if (strip<T, R, 1, W>(out, ldo, a, lda, b, bias, K, j, width)) strip<T, R, 1, kExact>(out, ldo, a, lda, b, bias, K, j, width);
  }
}

// scaled (rows × K, rows K apart) = a's rows × 2^112, for fp16 strips over a matrix known finite
// (load8_even_odd_f16_prescaled); false, and nothing to read, where a value would overflow (|x| ≥
// 2^16, or inf: those rows are read as they are and the weights widened the watched way).
inline bool fits_prescale(const float* a, int64_t lda, int rows, int K) {
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k)
      if (std::fabs(a[r * lda + k]) >= 0x1p16f) return false;
  return true;
}
inline bool prescale_rows(const float* a, int64_t lda, int rows, int K, std::vector<float>& scaled) {
  if (!fits_prescale(a, lda, rows, K)) return false;
  scaled.resize(static_cast<size_t>(rows) * K);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < K; ++k) scaled[static_cast<size_t>(r) * K + k] = a[r * lda + k] * 0x1p112f;
  return true;
}

// out (R rows × columns [c0, c1)) = bias + a · b: rows read as strips (reads_strips(): decoding).
// Over an fp16 matrix known finite, a's rows are prescaled so the weights widen in 4 operations
// for 8 values, not 8 (with the watch) — the same bits.
template <WeightType T, int R>
void few_rows(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int K,
              int c0, int c1) {
  // Panels are padded to whole groups of 8; a row-major matrix is not, so its last < 8 columns
  // are summed one by one (in the same order).
  const int end = b.panels ? c1 : c0 + (c1 - c0) / 8 * 8;
  bool done = false;
  if constexpr (kEvenOddLanes<T> && T == WeightType::kF16) {
    std::vector<float> scaled;
    done = b.known_finite && prescale_rows(a, lda, R, K, scaled);
    if (done) strips<T, R, Fp16Widening::kPrescaled>(out, ldo, scaled.data(), K, b, bias, K, c0, end);
  }
  if (!done) strips<T, R, Fp16Widening::kWatched>(out, ldo, a, lda, b, bias, K, c0, end);
  for (int j = end; j < c1; ++j) {
    for (int r = 0; r < R; ++r) {
      float sum = bias ? bias[j] : 0.0f;
      for (int k = 0; k < K; ++k) sum = scalar_madd(sum, a[r * lda + k], element<T>(b, k * b.ld + j));
      out[r * ldo + j] = sum;
    }
  }
}

}  // namespace
}  // namespace mh

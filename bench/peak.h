// One core's 4-lane multiply-add peak: the ceiling for any float32 kernel in a build. Multiply-adds
// on registers only (no loads, no stores), acc = acc · a + b on 12 independent accumulators, so that
// neither the multiply's nor the add's latency limits throughput (12 + 2 constants fit x86's 16
// vector registers; a loop-invariant product would let the compiler drop the multiplies). Fused in
// a relaxed-SIMD wasm build, mul + add otherwise (wasm SIMD, or SSE2 natively). Used by
// bench/peak.cpp (wasm and native SSE2) and bench/kernels.cpp (beside the GEMM it rates).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#include "core/read_streams.h"
#include "core/relaxed_dots.h"

using f32x4 = v128_t;
static inline f32x4 splat(float x) { return wasm_f32x4_splat(x); }
#if defined(__wasm_relaxed_simd__)
static inline f32x4 mul_add(f32x4 x, f32x4 a, f32x4 b) { return __builtin_wasm_fma_f32x4(x, a, b); }
#else
static inline f32x4 mul_add(f32x4 x, f32x4 a, f32x4 b) { return wasm_f32x4_add(wasm_f32x4_mul(x, a), b); }
#endif
static inline float first(f32x4 v) { return wasm_f32x4_extract_lane(v, 0); }
#else
#include <emmintrin.h>
using f32x4 = __m128;
static inline f32x4 splat(float x) { return _mm_set1_ps(x); }
static inline f32x4 mul_add(f32x4 x, f32x4 a, f32x4 b) { return _mm_add_ps(_mm_mul_ps(x, a), b); }
static inline float first(f32x4 v) { return _mm_cvtss_f32(v); }
#endif

constexpr int kAccumulators = 12;
static inline f32x4 wasm_or_sse_add(f32x4 x, f32x4 y) { return mul_add(x, splat(1.0f), y); }

// Returns the sum of the accumulators, so the compiler must keep every operation.
__attribute__((noinline)) float spin(long iterations, float seed) {
  f32x4 acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = splat(seed * static_cast<float>(i));
  const f32x4 a = splat(0.999f), b = splat(1e-4f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i) acc[i] = mul_add(acc[i], a, b);
  }
  f32x4 total = acc[0];
  for (int i = 1; i < kAccumulators; ++i) total = wasm_or_sse_add(total, acc[i]);
  return first(total);
}

// The best of 5 runs of `iterations` steps (after a warm-up that also lets V8 tier up), GFLOP/s.
inline double peak_gflops(long iterations = 25'000'000) {  // 12 × 4 × 2 flops a step: 2.4 GFLOP
  using Clock = std::chrono::steady_clock;
  spin(iterations / 10, 1.0f);
  double best = 0;
  float sink = 0;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = Clock::now();
    sink += spin(iterations, 1.0f + run);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double gflops = iterations * double(kAccumulators) * 4 * 2 / s / 1e9;
    if (gflops > best) best = gflops;
  }
  if (sink == 12345.0f) std::printf("#");  // keeps the sums alive
  return best;
}

#if defined(__wasm_simd128__)
// The integer peaks: the exact integer products the block tiles (core/gemm_blocks.h) are made of,
// on registers only as the loop above, 12 independent chains acc = acc + dot(acc, c) (the multiply
// takes the accumulator, so that it cannot be hoisted). Rates in GFLOP-equivalents, 2 a
// multiply-add, as the tiles' are counted: the ceiling each tile's arithmetic allows on this core.
enum class IntegerProduct {
  kDot16,      // i32x4.dot_i16x8_s + i32x4.add, 8 a pair: 8- and 6-bit tiles, the plain build's 4/5-bit
  kDot8,       // i16x8.relaxed_dot_i8x16_i7x16_s + i16x8.add, 16 a pair: the relaxed 4- and 5-bit tiles
  kDot8Wide,   // the same dot, its pairs widened by a 16-bit dot with ones + i32x4.add: 8-bit x 8-bit by it
  kDotAdd,     // i32x4.relaxed_dot_i8x16_i7x16_add_s, 16 an instruction where the CPU has a dot-add
};

template <IntegerProduct kProduct>
__attribute__((noinline)) int integer_spin(long iterations, int seed) {
  v128_t acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = wasm_i32x4_splat(seed + i);
  const v128_t c = wasm_i8x16_splat(5), ones = wasm_i16x8_splat(1);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAccumulators; ++i) {
      if constexpr (kProduct == IntegerProduct::kDot16) {
        acc[i] = wasm_i32x4_add(acc[i], wasm_i32x4_dot_i16x8(acc[i], c));
      } else {
#if defined(__wasm_relaxed_simd__)
        if constexpr (kProduct == IntegerProduct::kDot8)
          acc[i] = wasm_i16x8_add(acc[i], mh::dot_i8x16_i7x16(acc[i], c));
        else if constexpr (kProduct == IntegerProduct::kDot8Wide)
          acc[i] = wasm_i32x4_add(acc[i], wasm_i32x4_dot_i16x8(mh::dot_i8x16_i7x16(acc[i], c), ones));
        else
          acc[i] = mh::dot_add_i8x16_i7x16(acc[i], c, acc[i]);
#endif
      }
    }
  }
  v128_t total = acc[0];
  for (int i = 1; i < kAccumulators; ++i) total = wasm_i32x4_add(total, acc[i]);
  return wasm_i32x4_extract_lane(total, 0);
}

// The best of 5 runs, as peak_gflops; 0 for the int8 dots in the plain build, which has none.
template <IntegerProduct kProduct>
inline double integer_peak_gflops(long iterations = 12'500'000) {
#if !defined(__wasm_relaxed_simd__)
  if (kProduct != IntegerProduct::kDot16) return 0;
#endif
  const double per_step = kAccumulators * 2.0 * (kProduct == IntegerProduct::kDot16 ? 8 : 16);
  integer_spin<kProduct>(iterations / 10, 1);
  double best = 0;
  int sink = 0;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += integer_spin<kProduct>(iterations, 1 + run);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, iterations * per_step / s / 1e9);
  }
  if (sink == 12345) std::printf("#");
  return best;
}

// One thread's read bandwidth over `data` (256 MiB) read once as kStreams runs side by side (its
// quarters, each a whole number of 4 KB pages, or the whole), GB/s.
template <int kStreams>
inline double read_streams_gbs(const std::vector<float>& data, float& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  sink += mh::sum_in_streams<kStreams>(data.data(), data.size());
  return data.size() * 4.0 / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
}

// The read bandwidth a decoding step can at best stream: the better median of one sequential
// stream and of four side by side (which memory reads faster where a page's first misses cost:
// docs/performance.md, "Decoding over blocks: streams side by side"), 5 runs each, alternating.
inline double read_bandwidth_gbs() {
  std::vector<float> data(size_t{64} << 20, 1.0f);  // 256 MiB
  std::vector<double> one, four;
  float sink = 0;
  for (int run = 0; run < 6; ++run) {
    const double a = read_streams_gbs<1>(data, sink), b = read_streams_gbs<4>(data, sink);
    if (run > 0) one.push_back(a), four.push_back(b);
  }
  if (sink == 12345.0f) std::printf("#");
  std::sort(one.begin(), one.end());
  std::sort(four.begin(), four.end());
  return std::max(one[one.size() / 2], four[four.size() / 2]);
}
#endif

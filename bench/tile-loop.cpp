// The GEMM's inner loop alone, on data in L1, beside the peak loop (bench/peak.h): how close this
// CPU lets the micro-kernel's instruction mix come to the peak, before any cache or memory effect.
// bench/run.sh builds it in both wasm builds; run it with
//   node --no-experimental-fetch build/bench/tile-loop_simd.cjs
//   node --no-experimental-fetch --experimental-wasm-relaxed-simd build/bench/tile-loop_relaxed.cjs
// It answers "why is the GEMM at 60–80% of the peak on Zen 3 and ~90% on Zen 4/5?" (docs/performance.md, "Decisions";
// "On Zen 3", "The GEMM against the peak"). Each variant is a copy of src/core/gemm.cpp's tile() loop
// (a tile of rows × 8 columns of `out` in registers; per step of k, two vectors of the panel and
// one value of `a` per row splatted), differing only in where a's values come from:
//   as shipped          5 rows, each splatted by a load (both builds), the loop's pointers
//                       starting from 32-bit arithmetic (gemm.cpp's g_zero: no zero-extending
//                       moves in V8's loop)
//   pointers from parameters
//                       the same, the pointers starting from the function's parameters (V8
//                       zero-extends both at every step: gemm.cpp's loop until it took g_zero)
//   4 rows, splat loads the plain build's kernel until the 5-row tile got its own function
//   6 rows, splat loads the relaxed build's 6-row tile (12 accumulators, all of V8's registers)
//   3 rows, splat loads 6 chains: a short tile under its multiply-adds' latency
//   5 rows, shuffled    relaxed only: rows 0–3 out of one vector load by shuffles, row 4 by a
//                       splat load (the relaxed build's kernel while it touched ahead, before
//                       one tile kernel served both builds)
//   4 rows rotated      one vector load of a's 4 rows, rotated by a shuffle 3 times; accumulator r
//                       then holds row (lane + r) mod 4 in each lane (unscrambled once per tile in a
//                       real kernel; not here): 3 loads + 3 shuffles a step instead of 6 loads
//   pre-splatted        each row's value stored 4 times when a is packed, loaded as a vector
//                       (a 4× larger a), as many loads as splats
//   4 rows, a in registers
//                       a's 4 values never reloaded: the same arithmetic with 2 loads per step
//                       instead of 6, which a real GEMM cannot do (a changes with k); it isolates
//                       what the loads of a cost
// Every variant is timed interleaved with the others and with the peak loop, 21 rounds, medians.
// Like the shipped tile()'s, each copy's loop is not nested in another, so V8 does not unroll it.
// Data in L1 and no packing or edges: this measures the ceiling, and the GEMM rows of
// bench/kernels.cpp measure the kernel. bench/tile-loop-x86.cpp is the same loop
// written by hand in x86 assembly (native), to tell V8's share of a gap from the CPU's.
#include <wasm_simd128.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "peak.h"

namespace {

using v4 = v128_t;
using Clock = std::chrono::steady_clock;

#if defined(__wasm_relaxed_simd__)
inline v4 madd(v4 acc, v4 x, v4 y) { return __builtin_wasm_fma_f32x4(x, y, acc); }
constexpr bool kFused = true;
#else
inline v4 madd(v4 acc, v4 x, v4 y) { return wasm_f32x4_add(acc, wasm_f32x4_mul(x, y)); }
constexpr bool kFused = false;
#endif

inline v4 lane(v4 v, int r) {
  switch (r) {
    case 0: return wasm_i32x4_shuffle(v, v, 0, 0, 0, 0);
    case 1: return wasm_i32x4_shuffle(v, v, 1, 1, 1, 1);
    case 2: return wasm_i32x4_shuffle(v, v, 2, 2, 2, 2);
    default: return wasm_i32x4_shuffle(v, v, 3, 3, 3, 3);
  }
}

volatile int g_zero = 0;  // as in gemm.cpp

enum Source { kFromParameters, kSplatLoads, kShuffled, kRotated, kPreSplatted, kInRegisters };

// c (R × 8) = a (R × depth, k-major) · panel (depth × 8), as tile() computes it.
template <int R, Source S>
__attribute__((noinline)) void tile(float* c, const float* a, const float* panel, int depth) {
  v4 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = wasm_f32x4_splat(0.0f);
  v4 held[4];
  for (int r = 0; r < 4; ++r) held[r] = wasm_v128_load32_splat(a + r);
  const int zero = S == kFromParameters ? 0 : g_zero;
  const float* a_k = a + zero;
  for (const float *b_k = panel + zero, *end = panel + 8 * depth; b_k < end; b_k += 8, a_k += R) {
    const v4 b0 = wasm_v128_load(b_k), b1 = wasm_v128_load(b_k + 4);
    v4 rows0to3 = S == kShuffled || S == kRotated ? wasm_v128_load(a_k) : wasm_f32x4_splat(0.0f);
    for (int r = 0; r < R; ++r) {
      if (S == kRotated && r > 0) rows0to3 = wasm_i32x4_shuffle(rows0to3, rows0to3, 1, 2, 3, 0);
      const v4 s = S == kInRegisters  ? held[r]
                   : S == kRotated    ? rows0to3
                   : S == kPreSplatted ? wasm_v128_load(a_k + 4 * r)
                   : S == kShuffled && r < 4 ? lane(rows0to3, r)
                                            : wasm_v128_load32_splat(a_k + r);
      acc[r][0] = madd(acc[r][0], s, b0);
      acc[r][1] = madd(acc[r][1], s, b1);
    }
    if (S == kPreSplatted) a_k += 3 * R;  // 4 floats a row
  }
  for (int r = 0; r < R; ++r) {
    wasm_v128_store(c + 8 * r, acc[r][0]);
    wasm_v128_store(c + 8 * r + 4, acc[r][1]);
  }
}

struct Variant {
  const char* name;
  int rows;
  void (*run)(float*, const float*, const float*, int);
};

}  // namespace

int main() {
  constexpr int kDepth = 256, kCalls = 20000, kRounds = 21;
  // Called through pointers, so that no variant is inlined into main (a function that runs once
  // would never leave V8's baseline compiler).
  std::vector<Variant> variants;
  variants.push_back({"as shipped (5 rows, splat loads)", 5, tile<5, kSplatLoads>});
  variants.push_back({"pointers from parameters (5 rows, splat loads)", 5, tile<5, kFromParameters>});
  variants.push_back({"4 rows, splat loads", 4, tile<4, kSplatLoads>});
  variants.push_back({"6 rows, splat loads (12 accumulators)", 6, tile<6, kSplatLoads>});
  variants.push_back({"3 rows, splat loads", 3, tile<3, kSplatLoads>});
  if (kFused) variants.push_back({"5 rows, shuffled (relaxed, touching ahead)", 5, tile<5, kShuffled>});
  variants.push_back({"4 rows rotated (3 loads + 3 shuffles)", 4, tile<4, kRotated>});
  if (kFused) variants.push_back({"5 rows pre-splatted (7 vector loads)", 5, tile<5, kPreSplatted>});
  else variants.push_back({"4 rows pre-splatted (6 vector loads)", 4, tile<4, kPreSplatted>});
  variants.push_back({"4 rows, a in registers (not a GEMM: the cost of a's loads)", 4, tile<4, kInRegisters>});
  std::vector<float> a(4 * 5 * kDepth + 4, 0.5f), panel(8 * kDepth, 0.25f), c(64);
  std::vector<std::vector<double>> seconds(variants.size() + 1);
  const long spin_steps = static_cast<long>(double(kCalls) * kDepth * 64 / (kAccumulators * 4 * 2));
  float sink = spin(spin_steps / 10, 1.0f);
  for (const Variant& v : variants)
    for (int i = 0; i < kCalls / 10; ++i) v.run(c.data(), a.data(), panel.data(), kDepth);  // tier-up
  for (int round = 0; round < kRounds; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      const auto t0 = Clock::now();
      for (int i = 0; i < kCalls; ++i) variants[v].run(c.data(), a.data(), panel.data(), kDepth);
      seconds[v].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    const auto t0 = Clock::now();
    sink += spin(spin_steps, 1.0f + round);
    seconds.back().push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  auto median = [](std::vector<double> s) {
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  };
  const double peak = spin_steps * double(kAccumulators) * 4 * 2 / median(seconds.back()) / 1e9;
  std::printf("{\"build\": \"%s\", \"peakGflops\": %.2f}\n", kFused ? "relaxed SIMD" : "SIMD", peak);
  for (size_t v = 0; v < variants.size(); ++v) {
    const double gflops = double(kCalls) * kDepth * 16 * variants[v].rows / median(seconds[v]) / 1e9;
    std::printf("{\"tileLoop\": \"%s\", \"gflops\": %.2f, \"ofPeak\": %.3f}\n", variants[v].name, gflops, gflops / peak);
  }
  if (sink + c[3] == 12345.0f) std::printf("#");
}

// out = a · B + bias: a packed-panel GEMM (GotoBLAS's loop order, BLIS's micro-kernel idea) over
// 4-lane SIMD vectors.
//
// Why this shape:
// - The micro-kernel reads B as panels: kDepth rows × 8 columns, contiguous. Rows of a row-major
//   weight matrix are 768, 2304 or 3072 floats apart: walking down a column then touches only 2–4
//   of L1's 64 sets, so the 8 columns a tile needs were evicted before the next row tile came
//   back for them (the old kernel lost half its speed this way on Zen 3, whose L2 is half Zen
//   4's). So a row-major B is copied one 8 KB panel at a time onto the stack, and so is a 2-byte
//   matrix, widened on the way (never widened whole; a streamed one a panel's whole depth at a
//   time, up to 64 KB: depth_block()); float32 stored as panels (a checkpoint's
//   weights, a head's scaled keys and values) is read in place, and so are 2-byte panels that
//   few tiles read, widened in registers (two_byte_in_place()). Every row tile of `a` then streams over
//   the panel in L1.
// - The k blocks are the outer loop: a block of `a` (kRowBlock × kDepth floats, ≤ 120 KB) stays in L2
//   while all of B's panels pass, on every CPU these pages meet (Zen 3's L2 is 512 KB). A product
//   with few rows (a checkpoint's matrices at ≤ 64 tokens) instead packs all of `a` once and
//   streams B's panels in memory order, each once, a float32 panel's whole depth per tile
//   (depth_block()).
// - Weights come from memory (a checkpoint's 500 MB; a layer's are evicted between keystrokes), and
//   wasm has no prefetch instruction. So while a tile computes, it also loads one byte of each
//   64-byte line of the block of B that comes next, spread over its steps of k: those misses
//   overlap the arithmetic and keep the hardware prefetcher running ahead, and the next tile reads
//   its block in place from cache. (GPT-2 small, 16 tokens, relaxed build: 92 → 77 ms; reading in
//   place without it had cost more than copying each panel first in one burst: 98 against 89 ms.)
//   A B that fits in L2 (at most 512 KB) is taken to be in cache already, and not touched
//   (touch_ahead()), nor is B touched by a product of one or two row tiles (at most 10 rows), whose
//   first tile already reads its panel about as fast as one core reads memory.
// - The micro-kernel keeps a 5 × 8 tile of `out` in 10 vector registers (the relaxed build also a
//   6 × 8 tile in 12, for Zen 1's 5-cycle multiply-adds: kTileRows) and, per k, loads 8 floats
//   of the panel and splats one float of each of 5 rows of `a`, which is packed too (k-major, one
//   pointer: V8 spilled its loop counters when each row had a pointer of its own; packing took
//   the kernel from ~72% to ~88% of the peak on Zen 5). 10 chains also keep 2 pipes of 4-cycle
//   fused multiply-adds busy, where 4 rows (8 chains) left no slack. V8 gives wasm 15 vector
//   registers: 10 accumulators, 2 panel vectors, a splat and the plain build's product fit only
//   if V8 places each splat next to its use. Where it does is decided by its scheduler (read on
//   V8 11.3's machine code, --print-wasm-code): values that feed the loop's phis directly are
//   placed use by use, in the order of the stores after the loop (so tile() stores the last row
//   first; in row order all 5 splats came first and 3 registers spilled), but values that feed
//   other arithmetic are placed level by level: all loads first. V8 unrolls a small loop nested
//   in another twice, and its first copy feeds the second, so that copy spilled too. So tile()'s
//   k loops are not nested in any other, and the function is called through a pointer (binaryen
//   would otherwise inline it into its caller's loops). Zen 3, same-process A/B against the 4-row
//   (plain) and shuffled 5-row (relaxed) kernels it replaced: hot products 3–13% faster plain,
//   0–6% relaxed; weights from memory within ±5%.
// - Touching ahead costs a load and an add a step of k. A tile touches its share of the lines in
//   its first steps, 8 bytes apart (each line 8 times, so the misses come spread out: 32 bytes
//   apart, 16-token products took 3–10% longer than before), and runs its other steps in a
//   second loop without the touch. Touching every step had cost the relaxed build 7–17%, and it
//   had run a shuffled 5-row kernel in an outer loop while touching instead; against that (and
//   the plain build's touch every step), Zen 3, same-process A/B: GPT-2's products from memory
//   2–7% faster at 64 tokens, 0–4% at 16, hot products the same.
// - One row (decoding; 2–3 rows over a row-major B: reads_strips()) skips the packing: B is read
//   in place and streams from memory once — that product is bound by memory bandwidth, not
//   arithmetic. One row over short panels reads one panel at a time (row_stream: one sequential
//   stream), otherwise a strip of 8/rows vectors of B's row k is read side by side. 2-byte
//   weights are widened there in registers (load8_lanes).
#include "core/gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/gemm_tuning.h"
#include "core/parallel.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace mh {

namespace {

#if defined(__wasm_simd128__)
using v4 = v128_t;
inline v4 load(const float* p) { return wasm_v128_load(p); }
inline void store(float* p, v4 v) { wasm_v128_store(p, v); }
inline v4 splat(const float* p) { return wasm_v128_load32_splat(p); }
inline v4 zero() { return wasm_f32x4_splat(0.0f); }
inline v4 add(v4 x, v4 y) { return wasm_f32x4_add(x, y); }
inline v4 mul(v4 x, v4 y) { return wasm_f32x4_mul(x, y); }
// Lanes (x0, x1, x2, x3) of x and (y0, …) of y → (x_i, x_j, y_k, y_l) (indices 0–3 into x, 4–7 into y).
template <int I, int J, int K, int L>
inline v4 shuffle(v4 x, v4 y) { return wasm_i32x4_shuffle(x, y, I, J, K, L); }
#if defined(__wasm_relaxed_simd__)
constexpr bool kFusedMultiplyAdd = true;  // the relaxed build: some tile choices below follow it
constexpr const char* kKernelName = "wasm SIMD (fused multiply-add)";
// clang 14's builtin computes x·y + acc (emitted as a pre-standard opcode that the build rewrites;
// README "Relaxed SIMD").
inline v4 madd(v4 acc, v4 x, v4 y) { return __builtin_wasm_fma_f32x4(x, y, acc); }
inline float scalar_madd(float acc, float x, float y) { return std::fma(x, y, acc); }
#else
constexpr bool kFusedMultiplyAdd = false;
constexpr const char* kKernelName = "wasm SIMD";
inline v4 madd(v4 acc, v4 x, v4 y) { return wasm_f32x4_add(acc, wasm_f32x4_mul(x, y)); }
inline float scalar_madd(float acc, float x, float y) { return acc + x * y; }
#endif

// Four binary16 values (in the low half of each 32-bit lane) → float32.
inline v4 half4(v128_t h) {
  const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
  const v128_t bits = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
  // Rebias the exponent (15 → 127) by multiplying with 2^112: exact, subnormals included.
  v128_t f = wasm_f32x4_mul(bits, wasm_f32x4_splat(0x1p112f));
  // Exponent 31 (inf, NaN) would come out finite: give it float32's all-ones exponent.
  const v128_t special = wasm_i32x4_gt(bits, wasm_i32x4_splat(0x0f7fffff));
  f = wasm_v128_or(f, wasm_v128_and(special, wasm_i32x4_splat(0x7f800000)));
  return wasm_v128_or(f, sign);
}

// 8 values → float32 in column order. Two extending loads, so that no register holds the 16 bytes
// (the relaxed build's 6-row bf16 tiles fit V8's registers only so: tile_step()).
template <WeightType T>
inline void widen8(const uint16_t* p, v4& lo, v4& hi) {
  const v128_t low = wasm_u32x4_load16x4(p), high = wasm_u32x4_load16x4(p + 4);
  if (T == WeightType::kBF16) {
    lo = wasm_i32x4_shl(low, 16);
    hi = wasm_i32x4_shl(high, 16);
  } else {
    lo = half4(low);
    hi = half4(high);
  }
}
#else
// Natively (tests, sanitizers, fuzzers) the same code runs on GCC/Clang vector extensions, which
// compile to SSE2; -ffp-contract=off keeps the multiply and the add separate.
typedef float v4 __attribute__((vector_size(16)));
constexpr bool kFusedMultiplyAdd = false;
constexpr const char* kKernelName = "portable (native)";
inline v4 load(const float* p) {
  v4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, v4 v) { std::memcpy(p, &v, sizeof v); }
inline v4 splat(const float* p) {
  const float x = *p;
  return v4{x, x, x, x};
}
inline v4 zero() { return v4{0, 0, 0, 0}; }
inline v4 add(v4 x, v4 y) { return x + y; }
inline v4 mul(v4 x, v4 y) { return x * y; }
template <int I, int J, int K, int L>
inline v4 shuffle(v4 x, v4 y) { return __builtin_shufflevector(x, y, I, J, K, L); }
inline v4 madd(v4 acc, v4 x, v4 y) { return acc + x * y; }
inline float scalar_madd(float acc, float x, float y) { return acc + x * y; }
template <WeightType T>
inline void widen8(const uint16_t* p, v4& lo, v4& hi) {
  float f[8];
  for (int i = 0; i < 8; ++i) f[i] = T == WeightType::kBF16 ? bf16_to_float(p[i]) : half_to_float(p[i]);
  lo = load(f);
  hi = load(f + 4);
}
#endif

// The 4 × 4 block in rows x0 … x3, transposed in place: x_c becomes (x0[c], x1[c], x2[c], x3[c]).
inline void transpose4(v4& x0, v4& x1, v4& x2, v4& x3) {
  const v4 t0 = shuffle<0, 4, 1, 5>(x0, x1), t1 = shuffle<2, 6, 3, 7>(x0, x1);
  const v4 t2 = shuffle<0, 4, 1, 5>(x2, x3), t3 = shuffle<2, 6, 3, 7>(x2, x3);
  x0 = shuffle<0, 1, 4, 5>(t0, t2);
  x1 = shuffle<2, 3, 6, 7>(t0, t2);
  x2 = shuffle<0, 1, 4, 5>(t1, t3);
  x3 = shuffle<2, 3, 6, 7>(t1, t3);
}

// 5 rows × 8 columns in both builds (see the header comment), and 6 rows where they fit: the
// relaxed build's 12 accumulators, 2 panel vectors and a splat are exactly V8's 15 registers (the
// plain build's product needs a 16th). On Zen 1, whose fused multiply-adds take 5 cycles, a tile
// needs 10 chains to keep its 2 pipes busy: the loop alone on L1 data ran at 0.92 of the fused
// peak with 6 rows, 0.91 with 5, 0.73 with 4 and 0.57 with 3 (tile_height()). (MH_GEMM_TILE_ROWS=4
// or 5 tries fewer in the benchmark and the native tests.)
#ifndef MH_GEMM_TILE_ROWS
#if defined(__wasm_relaxed_simd__)
#define MH_GEMM_TILE_ROWS 6
#else
#define MH_GEMM_TILE_ROWS 5
#endif
#endif
constexpr int kTileRows = MH_GEMM_TILE_ROWS;
static_assert(kTileRows >= 4 && kTileRows <= 6, "tile_height() splits rows into 4s, 5s and 4s, or 5s and 6s");
constexpr int kDepth = 256;    // rows of B per panel: 256 × 8 floats = 8 KB, in L1 with a's tile
constexpr int kRowBlock = 24 * std::min(kTileRows, 5);  // rows of `a` per pass over B: 96 or 120 KB packed
// A product with at most this many elements of `a` (256 KB: 16 tokens × 4096, 64 × 1024) streams B
// once (columns()), with all of `a` packed and in L2.
constexpr int kStreamedA = 65536;

// Element `offset` of b as float32, and 8 consecutive elements as two vectors.
template <WeightType T>
inline float element(const MatrixRef& b, int64_t offset) {
  if (T == WeightType::kF32) return static_cast<const float*>(b.data)[offset];
  const uint16_t bits = static_cast<const uint16_t*>(b.data)[offset];
  return T == WeightType::kBF16 ? bf16_to_float(bits) : half_to_float(bits);
}
inline void load8(const float* p, v4& lo, v4& hi) {
  lo = load(p);
  hi = load(p + 4);
}
template <WeightType T>
inline void load8(const MatrixRef& b, int64_t offset, v4& lo, v4& hi) {
  if (T == WeightType::kF32) load8(static_cast<const float*>(b.data) + offset, lo, hi);
  else widen8<T>(static_cast<const uint16_t*>(b.data) + offset, lo, hi);
}

// Decoding reads every weight once per token, so widening 2-byte weights must cost next to
// nothing: in wasm, 8 values become their even columns and their odd columns, each value already
// at the top of its 32-bit lane or shifted there, with no extends; strip() keeps its accumulators
// in that order. bf16: 2 operations (a shift, a mask).
#if defined(__wasm_simd128__)
constexpr bool kEvenOdd = true;
inline void load8_even_odd(const uint16_t* p, v4& even, v4& odd) {
  const v128_t h = wasm_v128_load(p);
  even = wasm_i32x4_shl(h, 16);
  odd = wasm_v128_and(h, wasm_i32x4_splat(static_cast<int32_t>(0xffff0000u)));
}
// fp16's inf and NaN (exponent 31), which the fast widening below reads as finite: what it has
// seen of them, as each lane's largest fp16 value without its sign (h << 1). A kernel that widens
// with it redoes its work with the exact widening where any() (a weight file with inf or NaN).
struct Fp16Specials {
  v128_t largest = wasm_i16x8_splat(0);
  bool any() const {
    return wasm_v128_any_true(wasm_u16x8_ge(largest, wasm_i16x8_splat(static_cast<int16_t>(0xf800))));
  }
};
// fp16, even and odd columns: an arithmetic shift by 3 puts a value's exponent and mantissa in
// float32's places (its sign copied into the 3 bits that the mask then clears), and × 2^112
// rebiases the exponent: exact for normals, subnormals and zeros, 3 operations for 4 values (4
// before even_f16_bits) where half4() takes 9, and 2 more to watch for exponent 31 (±2^16 · 1.m
// here). fp16 decoding of GPT-2 small's 48 products (Zen 4, plain, same-process A/B): 42.3 → 12.8
// ms, where bf16 takes 7.6 and float32 12.3.
// The even columns (the low half of each 32-bit lane) need their value moved up first. A
// multiply-add of 16-bit pairs does it in one operation: even × 2^13 + odd × 0 is the even value
// sign-extended and shifted left by 13, the same bits as (h << 16) >> 3 (arithmetic), which took
// two shifts. On Zen 1 fp16 decoding read ~7 GB/s of L2 data where bf16 read 14.6; with the
// multiply-add its loop (20 operations a step of 16 values instead of 22) took 0.74–0.83× the
// time, 9.3–10.0 GB/s. GPT-2 small's 48 products one row, from memory, Zen 1, same-process A/B:
// 23.0–24.7 → 20.2–23.2 ms plain, 17.2–19.5 → 14.9–18.6 ms relaxed (bf16: 15.2–16.8); at 2–6
// rows (in place, tiles of up to 3 rows) 0.87–0.92× the time plain. But the multiply-add
// competes with float multiplies (a microbenchmark there: 4 chains of it beside 4 of float
// multiplies ran 4.0 G operations a second, beside 4 of float adds 5.2), which the relaxed build's
// tiles issue 6 of per 8 values: there it took 1.03–1.06× the time at 6 rows, so those tiles keep
// the shifts (kByMultiplyAdd false). ARM64 engines lower the multiply-add to three instructions
// where the two shifts were two (not measured).
template <bool kByMultiplyAdd = true>
inline v128_t even_f16_bits(v128_t h) {
  if constexpr (kByMultiplyAdd) return wasm_i32x4_dot_i16x8(h, wasm_i32x4_splat(1 << 13));
  else return wasm_i32x4_shr(wasm_i32x4_shl(h, 16), 3);
}
// kWatch false: over a matrix known finite, nothing to watch for.
template <bool kWatch = true, bool kByMultiplyAdd = true>
inline void load8_even_odd_f16(const uint16_t* p, v4& even, v4& odd, Fp16Specials& seen) {
  const v128_t h = wasm_v128_load(p);
  if constexpr (kWatch) seen.largest = wasm_u16x8_max(seen.largest, wasm_i16x8_shl(h, 1));
  const v128_t mask = wasm_i32x4_splat(static_cast<int32_t>(0x8fffe000u)), scale = wasm_f32x4_splat(0x1p112f);
  even = wasm_f32x4_mul(wasm_v128_and(even_f16_bits<kByMultiplyAdd>(h), mask), scale);
  odd = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(h, 3), mask), scale);
}
// The same without the × 2^112 and without the watch: each value · 2^-112, exact (a normal fp16's
// smallest exponent, -14, becomes float32's smallest, -126; subnormals stay exact below it). For a
// matrix known finite, with a's values × 2^112 instead (prescale_rows()): the products, and so
// the sums, are then the same bits. 4 operations for 8 values where the watched widening takes 8
// (one more each with kByMultiplyAdd false).
template <bool kByMultiplyAdd = true>
inline void load8_even_odd_f16_prescaled(const uint16_t* p, v4& even, v4& odd) {
  const v128_t h = wasm_v128_load(p);
  const v128_t mask = wasm_i32x4_splat(static_cast<int32_t>(0x8fffe000u));
  even = wasm_v128_and(even_f16_bits<kByMultiplyAdd>(h), mask);
  odd = wasm_v128_and(wasm_i32x4_shr(h, 3), mask);
}
// The same columns widened exactly, inf and NaN included (half4()).
inline void load8_even_odd_f16_exact(const uint16_t* p, v4& even, v4& odd) {
  const v128_t h = wasm_v128_load(p);
  even = half4(wasm_v128_and(h, wasm_i32x4_splat(0xffff)));
  odd = half4(wasm_u32x4_shr(h, 16));
}
#else
constexpr bool kEvenOdd = false;
struct Fp16Specials {
  bool any() const { return false; }
};
inline void load8_even_odd(const uint16_t*, v4&, v4&) {}
template <bool kWatch = true, bool kByMultiplyAdd = true>
inline void load8_even_odd_f16(const uint16_t*, v4&, v4&, Fp16Specials&) {}
template <bool kByMultiplyAdd = true>
inline void load8_even_odd_f16_prescaled(const uint16_t*, v4&, v4&) {}
inline void load8_even_odd_f16_exact(const uint16_t*, v4&, v4&) {}
#endif

// What the kernels that read B in place (the few-rows kernels, and the tiles over bf16 panels)
// read 8 elements of it at a time from: stored elements, and the lane order their accumulators
// keep (0 … 7 within each group of 8, or for 2-byte weights in wasm 0 2 4 6 1 3 5 7).
template <WeightType T>
using Stored = typename std::conditional<T == WeightType::kF32, float, uint16_t>::type;
template <WeightType T>
constexpr bool kEvenOddLanes = kEvenOdd && T != WeightType::kF32;
template <WeightType T>
inline int lane_column(int lane) {
  if (!kEvenOddLanes<T>) return lane;
  const int in_group = lane % 8;
  return (lane & ~7) + (in_group < 4 ? 2 * in_group : 2 * (in_group - 4) + 1);
}
// 8 columns as 0 1 2 3 | 4 5 6 7 (lo, hi) ⇄ 0 2 4 6 | 1 3 5 7 (even, odd).
inline void to_even_odd(v4 lo, v4 hi, v4& even, v4& odd) {
  even = shuffle<0, 2, 4, 6>(lo, hi);
  odd = shuffle<1, 3, 5, 7>(lo, hi);
}
inline void to_columns(v4 even, v4 odd, v4& lo, v4& hi) {
  lo = shuffle<0, 4, 1, 5>(even, odd);
  hi = shuffle<2, 6, 3, 7>(even, odd);
}
// How the kernels that read fp16 in place widen it, in wasm: the fast way, with what they saw of
// inf and NaN in `seen` (kWatched: load8_even_odd_f16); exactly, inf and NaN included (kExact:
// where a watched run met one); or over a matrix known finite, with a's rows prescaled
// (kPrescaled: load8_even_odd_f16_prescaled) or, where they cannot be, as they are (kTrusted: the
// fast way without the watch). Other types ignore it. kByMultiplyAdd: how the fast ways move the
// even columns (even_f16_bits).
enum class Fp16Widening { kWatched, kExact, kPrescaled, kTrusted };
template <WeightType T, Fp16Widening W = Fp16Widening::kWatched, bool kByMultiplyAdd = true>
inline void load8_lanes(const Stored<T>* p, v4& lo, v4& hi, Fp16Specials& seen) {
  if constexpr (T == WeightType::kF32) load8(p, lo, hi);
  else if constexpr (!kEvenOddLanes<T>) widen8<T>(p, lo, hi);
  else if constexpr (T == WeightType::kBF16) load8_even_odd(p, lo, hi);
  else if constexpr (W == Fp16Widening::kExact) load8_even_odd_f16_exact(p, lo, hi);
  else if constexpr (W == Fp16Widening::kPrescaled) load8_even_odd_f16_prescaled<kByMultiplyAdd>(p, lo, hi);
  else if constexpr (W == Fp16Widening::kTrusted) load8_even_odd_f16<false, kByMultiplyAdd>(p, lo, hi, seen);
  else load8_even_odd_f16<true, kByMultiplyAdd>(p, lo, hi, seen);
}

// panel (depth × 8, contiguous) = rows [k0, k0 + depth) × columns [j, j + width) of b as float32,
// zero-padded to 8 columns.
template <WeightType T>
void pack_panel(float* panel, const MatrixRef& b, int k0, int depth, int j, int width) {
  if (width == 8) {
    for (int k = 0; k < depth; ++k) {
      v4 lo, hi;
      load8<T>(b, (k0 + k) * b.ld + j, lo, hi);
      store(panel + 8 * k, lo);
      store(panel + 8 * k + 4, hi);
    }
    return;
  }
  for (int k = 0; k < depth; ++k)
    for (int c = 0; c < 8; ++c) panel[8 * k + c] = c < width ? element<T>(b, (k0 + k) * b.ld + j + c) : 0.0f;
}

// panel (depth × 8) = the fp16 panel at p widened the fast way (load8_even_odd_f16), in column
// order; whether it met inf or NaN (never, unless kWatch).
template <bool kWatch>
bool widen_f16_panel(float* panel, const uint16_t* p, int depth) {
  Fp16Specials seen;
  for (int e = 0; e < depth * 8; e += 8) {
    v4 even, odd, lo, hi;
    load8_even_odd_f16<kWatch>(p + e, even, odd, seen);
    to_columns(even, odd, lo, hi);
    store(panel + e, lo);
    store(panel + e + 4, hi);
  }
  return seen.any();
}

// The panel of rows [k0, k0 + depth) × columns [j, j + 8) of b as float32: in place (float32
// panels, any depth), or copied into scratch (depth × 8 floats: depth_block()), widening 2-byte
// values on the way.
template <WeightType T>
const float* panel_of(const MatrixRef& b, int k0, int depth, int j, int width, float* scratch) {
  if (!b.panels) {
    pack_panel<T>(scratch, b, k0, depth, j, width);
    return scratch;
  }
  const int64_t start = panel_index(k0, j, b.ld);
  if (T == WeightType::kF32) return static_cast<const float*>(b.data) + start;
  if (T == WeightType::kF16 && kEvenOdd) {
    // The fast widening, put back in column order; redone exactly below if it met inf or NaN.
    // GPT-2 small's 48 products as fp16 panels from memory (Zen 4, same-process A/B against half4
    // into the copy): 2 rows 0.55× the time (relaxed 0.57×), 4 rows 0.66× (0.68×), 8 rows 0.74×
    // (0.72×), 16 rows 0.79× (0.74×), 64 rows 0.92×. A matrix known finite skips the watch: 4
    // rows 0.95×, 16 rows 0.96× (relaxed 0.96×), 64 rows 0.99×.
    const uint16_t* p = static_cast<const uint16_t*>(b.data) + start;
    const bool met_special = b.known_finite ? widen_f16_panel<false>(scratch, p, depth) : widen_f16_panel<true>(scratch, p, depth);
    if (!met_special) return scratch;
  }
  for (int e = 0; e < depth * 8; e += 8) {  // contiguous: 8 values (2 vectors) at a time
    v4 lo, hi;
    load8<T>(b, start + e, lo, hi);
    store(scratch + e, lo);
    store(scratch + e + 4, hi);
  }
  return scratch;
}

// The weights that come after the panel a tile is reading, touched while it computes (header
// comment): the tiles of a panel share the lines from `next` up to `end` (nothing to touch:
// next == end), each tile at most `lines_per_tile` of them.
struct Lookahead {
  const char* next = nullptr;
  const char* end = nullptr;
  int64_t lines_per_tile = 0;
  void spread_over(int tiles) {
    const int64_t lines = (end - next + 63) / 64;
    if (lines > 0) lines_per_tile = (lines + tiles - 1) / tiles;
  }
};

// What a tile touches ahead (Lookahead): its share of the lines, one byte each of its first
// `steps` steps of k, from `next` on, `stride` bytes apart (header comment).
struct Touch {
  const char* next = nullptr;
  int stride = 0;
  int steps = 0;
};
constexpr int kTouchStride = 8;  // the fewest bytes between touches (header comment)

// A 0 that no compiler can fold away, read once per tile: tile()'s loop pointers start from
// `pointer + g_zero`. V8 must widen a 32-bit wasm address to 64 bits before it loads through it
// and skips that only for a value it sees come out of 32-bit arithmetic (x86-64 clears the upper
// half), through loop phis too, but never for a function's parameter. Started from the
// parameters, the loop carried a `movl` per pointer at every step of k: 2 of a 5-row step's 35
// instructions, where the core issues ~6 a cycle (README "V8 and 32-bit addresses"; Zen 3,
// same-process A/B of the GEMM, both builds: products in cache 0.91–0.97× the time, GPT-2's
// products from memory 0.91–1.03×).
volatile int g_zero = 0;

// How the relaxed build's tiles read bf16 panels in place: 8 values as float32 in column order,
// by two extending loads and a shift each (widen8: 4 operations where load8_even_odd takes 3). No register
// then holds the 16 loaded bytes or the mask, so a 6-row tile fits V8's 15 registers (12
// accumulators, 2 panel vectors, a splat) as float32's does; with load8_even_odd, 5 and 6 rows
// spilled, and 4-row tiles (8 chains) leave Zen 1's 5-cycle multiply-adds a fifth idle. Zen 1,
// same-process A/B of GPT-2's 48 products as bf16 panels from memory, 6-row tiles of extending
// loads ÷ 4-row tiles of load8_even_odd: 6 rows 0.68× the time, 9–11 rows 0.77–0.84×, 16 rows
// 0.89×, 21 rows 0.78×, 30 rows 0.91–0.92× (in place against copied), the same bits. The plain
// build keeps load8_even_odd and 4 rows: there every operation costs (Zen 1: ~4 vector
// operations a cycle, loads included), and the extending loads took 1.01–1.15× the time.
constexpr bool kBf16TilesExtend = kFusedMultiplyAdd;
// Whether the tiles reading fp16 in place move its even columns by a multiply-add (even_f16_bits):
// in the plain build, not beside the relaxed build's fused multiply-adds.
constexpr bool kFp16TilesByMultiplyAdd = !kFusedMultiplyAdd;
// The lane order of a tile's accumulators over T: load8_lanes' (even and odd columns for 2-byte
// weights in wasm), or column order where bf16 comes through widen8.
template <WeightType T>
constexpr bool kTileEvenOddLanes = kEvenOddLanes<T> && !(T == WeightType::kBF16 && kBf16TilesExtend);

// One step of k of a tile: acc (R × 8) += a_k (R floats) ⊗ b_k (8 elements of B as float32,
// in the lane order kTileEvenOddLanes says).
template <int R, WeightType T, Fp16Widening W, bool kLastRowFirst = false>
inline void tile_step(v4 (&acc)[R][2], const float* a_k, const Stored<T>* b_k) {
  static_assert(T != WeightType::kF16 || W == Fp16Widening::kPrescaled || W == Fp16Widening::kTrusted,
                "fp16 read in place only from matrices known finite (two_byte_in_place)");
  v4 b0, b1;
  Fp16Specials none;
  if constexpr (T == WeightType::kBF16 && kBf16TilesExtend) widen8<T>(b_k, b0, b1);
  else load8_lanes<T, W, kFp16TilesByMultiplyAdd>(b_k, b0, b1, none);
  for (int i = 0; i < R; ++i) {
    const int r = kLastRowFirst ? R - 1 - i : i;
    const v4 s = splat(a_k + r);
    acc[r][0] = madd(acc[r][0], s, b0);
    acc[r][1] = madd(acc[r][1], s, b1);
  }
}

// The micro-kernel: c (R × 8, rows ldc apart) = (accumulate ? c : bias, or 0) + a · panel (depth × 8),
// where a (R × depth) is packed k-major: a[k · R + r], and the panel holds float32 or, read in
// place, bf16 or fp16 (widened in registers as W says: two_byte_in_place()). One pointer for a's rows, one for the
// panel: every load's address is a register plus a constant, and V8 keeps the loop's counters in
// registers (with a row pointer each it spilled them). Its first touch.steps steps also read a
// byte of the weights to come (Touch) each; the rest run in a loop of their own without.
// Called only through tile_of_height()'s pointers, and its loops are not nested: see the header
// comment for why both matter to V8.
template <int R, WeightType T, Fp16Widening W>
void tile(float* c, int64_t ldc, const float* a, const void* panel, int depth, bool accumulate,
          const float* bias, const Touch& touch) {
  v4 acc[R][2];
  for (int r = 0; r < R; ++r) {
    acc[r][0] = accumulate ? load(c + r * ldc) : bias ? load(bias) : zero();
    acc[r][1] = accumulate ? load(c + r * ldc + 4) : bias ? load(bias + 4) : zero();
    if (kTileEvenOddLanes<T>) to_even_odd(acc[r][0], acc[r][1], acc[r][0], acc[r][1]);
  }
  // Pointers that advance, not panel + 8 · k: Emscripten turns LLVM's loop strength reduction off,
  // so V8 multiplied both indices out again at every step (6 more instructions beside 16
  // multiply-adds, in a loop bound by how many instructions a cycle the core can issue).
  const char* next = touch.next;
  const int stride = touch.stride;
  const int zero = g_zero;
  const float* a_k = a + zero;
  const Stored<T>* const start = static_cast<const Stored<T>*>(panel);
  const Stored<T>* b_k = start + zero;
  for (const Stored<T>* b_touched = start + 8 * touch.steps; b_k < b_touched; b_k += 8, a_k += R) {
    (void)*reinterpret_cast<const volatile char*>(next);
    next += stride;
    // Rows last first: in row order V8 issued all this loop's splats first, and spilled.
    tile_step<R, T, W, true>(acc, a_k, b_k);
  }
  for (const Stored<T>* b_end = start + 8 * depth; b_k < b_end; b_k += 8, a_k += R) tile_step<R, T, W>(acc, a_k, b_k);
  // Stored last row first: in this order V8 schedules each row's splat next to its multiply-adds
  // (in row order it issues all the splats first, and 5 rows then spill; header comment).
  for (int r = R - 1; r >= 0; --r) {
    v4 lo = acc[r][0], hi = acc[r][1];
    if (kTileEvenOddLanes<T>) to_columns(acc[r][0], acc[r][1], lo, hi);
    store(c + r * ldc + 4, hi);
    store(c + r * ldc, lo);
  }
}

using TileFn = void (*)(float*, int64_t, const float*, const void*, int, bool, const float*, const Touch&);

// Called through pointers, so that binaryen cannot inline them (it inlines a function with one
// caller whatever `noinline` says): inlined, their loops would sit inside their caller's loops, and
// V8 would unroll them.
template <WeightType T, Fp16Widening W>
TileFn tile_of_height(int rows) {
  static TileFn volatile tiles[7] = {nullptr,       tile<1, T, W>, tile<2, T, W>, tile<3, T, W>,
                                      tile<4, T, W>, tile<5, T, W>, tile<6, T, W>};
  return tiles[rows];
}

template <WeightType T, Fp16Widening W>
void tile_rows(int rows, float* c, int64_t ldc, const float* a, const void* panel, int depth, bool accumulate,
               const float* bias, Lookahead& ahead) {
  Touch touch;
  if (ahead.next < ahead.end && depth > 0) {
    // This tile's share of the lines, kTouchStride bytes a step, or more where the tile has too
    // few steps for that.
    const int64_t bytes = std::min<int64_t>(ahead.lines_per_tile * 64, ahead.end - ahead.next);
    const int64_t stride = std::max<int64_t>(kTouchStride, (bytes + depth - 1) / depth);
    touch.next = ahead.next;
    touch.steps = static_cast<int>((bytes + stride - 1) / stride);
    touch.stride = static_cast<int>(stride);
    ahead.next += bytes;
  }
  tile_of_height<T, W>(rows)(c, ldc, a, panel, depth, accumulate, bias, touch);
}

// The rows of the tile that starts at row i of `rows`, in tiles of at most `tallest` rows (4 or
// 3: that many, the rest in the last tile; two_byte_in_place() says where, and MH_GEMM_TILE_ROWS=4
// everywhere).
// 5-row tiles: with fused multiply-adds a tile of r rows takes max(r, L) cycles per k (r cycles
// of 2r multiply-adds on 2 pipes, but never less than the latency L of its chains: 4 cycles on
// Zen 3–5, 5 on Zen 1), so rows are split into 5s and 4s where they can be (16 = 4 + 4 + 4 + 4:
// 16 cycles on Zen 3, where 5 + 5 + 3 + 3 took 18), and otherwise into as few short tiles as
// possible (6 = 3 + 3, 7 = 4 + 3, 11 = 4 + 4 + 3).
// With 6-row tiles (the relaxed build), into 5s and 6s where they can be, every tile then at full
// rate for L = 5 too (16 = 5 + 5 + 6: 16 cycles on Zen 1, where 4 + 4 + 4 + 4 took 20; 11 = 5 + 6,
// 12 = 6 + 6), and as before otherwise (13, 14, 19 and under 10).
inline bool fives_and_fours(int rows) { return rows == 0 || rows == 4 || rows == 5 || (rows >= 8 && rows != 11); }
inline bool fives_and_sixes(int rows) {
  return rows == 0 || rows == 5 || rows == 6 || (rows >= 10 && rows <= 12) || (rows >= 15 && rows != 19);
}
inline int tile_height(int i, int rows, int tallest) {
  const int left = rows - i;
  if (tallest <= 4) return std::min(tallest, left);
  if (tallest >= 6 && left > 0 && fives_and_sixes(left)) return fives_and_sixes(left - 5) ? 5 : 6;
  if (left >= 5 && fives_and_fours(left - 5)) return 5;
  if (left >= 4 && fives_and_fours(left - 4)) return 4;
  if (left == 6 || left == 7) return left - 3;
  return std::min(4, left);
}
inline int tile_count(int rows, int tallest) {
  int tiles = 0;
  for (int i = 0; i < rows; i += tile_height(i, rows, tallest)) ++tiles;
  return tiles;
}

// packed = rows × depth of a (rows lda apart) in tiles of tile_height() rows (at most `tallest`),
// each k-major: what tile() reads, the tile of rows from i at i · depth.
void pack_rows(float* packed, const float* a, int64_t lda, int rows, int depth, int tallest) {
  for (int i = 0, r; i < rows; i += r) {
    r = tile_height(i, rows, tallest);
    float* tile_start = packed + static_cast<int64_t>(i) * depth;
    const float* first_row = a + i * lda;
    int k = 0;
    // Rows 0–3, four steps of k at a time, by a 4 × 4 transpose (a 5th row goes one by one): one
    // float at a time, this copy was 7% of a 16-token, d_model 256 attention call.
    if (r >= 4) {
      for (; k + 4 <= depth; k += 4) {
        v4 x0 = load(first_row + k), x1 = load(first_row + lda + k);
        v4 x2 = load(first_row + 2 * lda + k), x3 = load(first_row + 3 * lda + k);
        transpose4(x0, x1, x2, x3);
        float* to = tile_start + k * r;
        store(to, x0);
        store(to + r, x1);
        store(to + 2 * r, x2);
        store(to + 3 * r, x3);
        for (int rr = 4; rr < r; ++rr)
          for (int kk = 0; kk < 4; ++kk) to[kk * r + rr] = first_row[rr * lda + k + kk];
      }
    }
    for (int rr = 0; rr < r; ++rr) {
      const float* row = first_row + rr * lda;
      for (int kk = k; kk < depth; ++kk) tile_start[kk * r + rr] = row[kk];
    }
  }
}

// out (rows × width, width ≤ 8) (+)= a · panel, for a packed by pack_rows (at most `tallest`
// rows a tile), a tile at a time, the tiles together touching `ahead`. The panel holds T:
// float32, or bf16 or fp16 read in place (fp16 widened as W says). A panel narrower than 8 (the
// last columns) goes through a scratch tile.
template <WeightType T, Fp16Widening W = Fp16Widening::kWatched>
void panel_rows(float* out, int64_t ldo, const float* a, const void* panel, int depth, int rows, int tallest,
                int width, bool accumulate, const float* bias, Lookahead ahead) {
  ahead.spread_over(tile_count(rows, tallest));
  for (int i = 0, r; i < rows; i += r) {
    r = tile_height(i, rows, tallest);
    float* c = out + i * ldo;
    const float* a_tile = a + static_cast<int64_t>(i) * depth;
    if (width == 8) {
      tile_rows<T, W>(r, c, ldo, a_tile, panel, depth, accumulate, bias, ahead);
      continue;
    }
    alignas(16) float scratch[kTileRows * 8], bias8[8] = {};
    for (int rr = 0; rr < r; ++rr)
      for (int cc = 0; cc < 8; ++cc) scratch[rr * 8 + cc] = accumulate && cc < width ? c[rr * ldo + cc] : 0.0f;
    if (bias) std::copy(bias, bias + width, bias8);
    tile_rows<T, W>(r, scratch, 8, a_tile, panel, depth, accumulate, bias ? bias8 : nullptr, ahead);
    for (int rr = 0; rr < r; ++rr) std::copy(scratch + rr * 8, scratch + rr * 8 + width, c + rr * ldo);
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
  if (bias) std::copy(bias + j, bias + j + width, tile);
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
    std::copy(tile, tile + width, out + r * ldo + j);
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
  if (bias) std::copy(bias + j, bias + j + width, tile);
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
  std::copy(tile, tile + width, out + j);
  return seen.any();
}

// Columns [c0, end) of few_rows (below), fp16 widened as W says.
template <WeightType T, int R, Fp16Widening W>
void strips(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int K,
            int c0, int end) {
  // Groups of 8 columns read side by side: up to 8 accumulators (6 for 3 rows). Except one row
  // over short panels (K ≤ 1024: GPT-2's 768, the output head included): there one panel at a
  // time, one sequential stream, read 25–29 GB/s here where four panels 24 KB apart read 15–24
  // (the 50,257-column output head: 6.8 → 5.7 ms F32, 4.9 → 3.1 ms BF16). Panels of 1536 and
  // more still read faster four at a time (30 against 26 GB/s at 3072).
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
  // spilled (fp16 decoding of GPT-2 small's 48 products, Zen 4: 18.1 ms with 4, 12.8 with 2).
  // Prescaled (one constant, no watch), 4 fit: relaxed 0.94× the time of 2, plain the same.
  constexpr int kGroups = R == 1 ? (T == WeightType::kF16 && W != Fp16Widening::kPrescaled ? 2 : 4) : R == 2 ? 2 : 1;
  // Called through a pointer the optimizer cannot see through: binaryen inlines a function with
  // one caller whatever `noinline` says, and inside gemm_columns, V8 spilled this loop's
  // accumulators to the stack (bf16 decoding of GPT-2 small: 19.8 → 17.3 ms per token here).
  // A strip that met fp16's inf or NaN runs again, widened exactly (Fp16Specials).
  using Strip = bool (*)(float*, int64_t, const float*, int64_t, const MatrixRef&, const float*, int, int, int);
  static Strip volatile wide_strip = strip<T, R, kGroups, W>;
  const Strip wide = wide_strip;
  int j = c0;
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
// for 8 values, not 8 (with the watch; 5 and 9 before even_f16_bits()) — the same bits. fp16
// decoding of GPT-2 small's 48 products, Zen 4, same-process A/B (5 against 9 operations): 12.4 →
// 9.8 ms plain, 10.7 → 8.1 relaxed (bf16: 7.3).
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

// Whether a product streams B once with all of `a` packed (columns()), and how many rows of `a` go
// in a block otherwise: as few blocks as kRowBlock allows, of equal size, since a last block of a
// few rows would pass over all of B for them alone (256 rows in 120s: 120 + 120 + 16; now 86 + 86 +
// 84. GPT-2 small's 48 products at 256 tokens, relaxed build: 4% faster here; the same bits, as
// any grouping).
inline bool streams_b(const MatrixRef& b, int n, int K) { return b.panels && int64_t{n} * K <= kStreamedA; }
inline int row_block_size(int n) {
  const int row_blocks = (n + kRowBlock - 1) / kRowBlock;
  return (n + row_blocks - 1) / row_blocks;
}

// Whether a product reads its bf16 panels in place, widening each step's 8 values in registers
// (load8_even_odd: 2 operations), rather than widening each 256-deep block into the scratch panel
// for its tiles to read: where B streams once (streams_b) and a panel has at most 6 tiles, which
// would each read the copy once. A checkpoint's bf16 weights (the Llama family's) at up to 24
// tokens. Those tiles have at most 4 rows: holding the mask too, the 5-row tile spilled (one 5-row
// tile took as long as two 4-row ones, and 10 rows as 5 + 5 took 1.37× the time of the copy
// relaxed). The relaxed build's tiles widen with extending loads instead (widen8, kBf16TilesExtend)
// and are 5 and 6 rows tall, at most 5 of them (30 tokens; 36 rows as 6 tiles took 1.03–1.05× the
// copy's time on Zen 1). Zen 4, same-process A/B of GPT-2's 48 products as bf16 panels from memory, in place ÷
// copied: 4 rows 0.51× the time (relaxed 0.52×), 8 rows 0.67× (0.66×), 12 rows 0.78× (0.78×), 16
// rows 0.84× (0.79×), 17–24 rows 0.89–0.95× (0.88–1.05×), 25–32 rows 0.96–1.04×; the same bits
// (the same products summed in the same order).
// fp16 likewise, in wasm, from a matrix known finite (MatrixRef::known_finite), with a's rows
// prescaled where they can be (a_prescales()): 4 or 5 operations for 8 values (even_f16_bits:
// the relaxed build's tiles keep the two shifts), so in tiles of at most
// 3 rows (4 spilled: 4 rows took 1.2× the copy's time) and at most 2 of them: up to 6 tokens, a
// keystroke's few new tokens with an fp16 checkpoint (the Llama 2 family's). Zen 4, same-process
// A/B of GPT-2's 48 products as fp16 panels from memory, in place ÷ copied: 2 rows 0.63× the
// time (relaxed 0.53×), 3 rows 0.64×, 4 rows 0.88× (0.95×), 6 rows 0.84× (0.69×); 7–9 rows (3
// tiles) 0.98–1.02×, 12 rows (4) 1.10×; the same bits.
constexpr int kInPlaceBf16Tiles = kBf16TilesExtend ? 5 : 6, kInPlaceF16Tiles = 2;
constexpr int kTallestBf16Tile = kBf16TilesExtend ? kTileRows : 4;
inline bool two_byte_in_place(const MatrixRef& b, int n, int K) {
  if (!streams_b(b, n, K)) return false;
  if (b.type == WeightType::kBF16) return tile_count(n, kTallestBf16Tile) <= kInPlaceBf16Tiles;
  return b.type == WeightType::kF16 && kEvenOdd && b.known_finite && tile_count(n, 3) <= kInPlaceF16Tiles;
}
// Whether a product that reads fp16 in place (two_byte_in_place) prescales a's n rows by 2^112:
// where no value would overflow (prescale_rows()).
inline bool a_prescales(const MatrixRef& b, int n, int K, const float* a, int64_t lda) {
  return b.type == WeightType::kF16 && two_byte_in_place(b, n, K) && fits_prescale(a, lda, n, K);
}
inline void prescale(float* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] *= 0x1p112f;
}
// The most rows a tile of this product has (tile_height()).
inline int tallest_tile(const MatrixRef& b, int n, int K) {
  return !two_byte_in_place(b, n, K) ? kTileRows : b.type == WeightType::kF16 ? 3 : kTallestBf16Tile;
}

// Whether the n rows of `a` read B in place a strip at a time (few_rows) rather than packed into
// tiles: one row (decoding), and 2 or 3 rows over a row-major B. Over panels (a checkpoint's
// weights) 2 and 3 rows go in tiles too: Zen 4, same-process A/B of GPT-2's 48 products from
// memory, tiles ÷ strips: float32 2 rows 0.90× the time (relaxed 0.94×), 3 rows 0.73× (0.74×);
// bf16 0.83× (0.98×) and 0.79× (0.93×); fp16 0.95× at both; the same bits (the same sums in the
// same order). Over a row-major B the same A/B was as often slower as faster (0.56–1.80×).
inline bool reads_strips(const MatrixRef& b, int n) { return n < (b.panels ? 2 : 4); }

// Touching ahead pays where B comes from memory: a checkpoint's weights (GPT-2 small's smallest
// matrix is 2.4 MB, 340 MB in all; 16 tokens on Zen 5: 92 → 77 ms). A B that fits in the
// smallest L2 these pages meet (Zen 3's 512 KB) is one that is used call after call (a small
// layer's weights, a head's keys) and read from L2, where the touches only take L1 and load
// slots: without them, 16 rows × 256 × 256 took 7–13% less time on Zen 3 in both builds
// (same-process A/B), while GPT-2's products from memory were the same there with or without. A
// larger B comes back from L3 even when the same layer runs again (d_model 512: four 1 MB
// matrices a call), and touching it pays there too: Zen 4, same-process A/B, the whole layer at
// 64 × 512 took 0.96–0.97× the time plain and 0.98× relaxed, at 512 × 512 0.975× and 0.984×.
//
// Nor does a product of one or two row tiles touch (at most 10 rows). A panel's first tile reads it
// from memory, the others from cache, and a 4-row tile does 2 flops a byte of its panel: at 41
// GFLOP/s (Zen 4, plain) it reads ~20 GB/s, near the 24–28 GB/s one core reads from memory there.
// With one or two tiles a panel there is little time between first reads for the touches to fill,
// and they add misses to a stream that already goes about as fast as memory. Zen 4, same-process
// A/B of GPT-2's 48 products from memory, not touching against touching: 4 rows 0.65× the time
// (relaxed 0.61×), 6 rows 0.73×, 8 rows 0.82× (0.77×), 10 rows 0.92× (0.91×). From three tiles on,
// the touches stay: 12–16 rows read 0.90–0.98× without them on Zen 4 but about the same on Zen 3,
// and on Zen 5 they had taken the 16-token prefill from 92 to 77 ms (bench/HISTORY.md). So a
// checkpoint's load measures which (core/gemm_tuning.h), and where not touching was faster,
// products of fewer than 18 rows do not (g_touch_from_rows). Tiles are counted as if at most 5
// rows tall, as they were when all this was measured: the relaxed build's 11 and 12 rows (6-row
// tiles: 2 of them) touch as before.
constexpr int64_t kCachedB = int64_t{512} << 10;
std::atomic<int> g_touch_from_rows{0};
inline bool touch_ahead(const MatrixRef& b, int K, int64_t N, int rows) {
  return int64_t{K} * ((N + 7) / 8 * 8) * weight_type_bytes(b.type) > kCachedB &&
         tile_count(rows, std::min(tallest_tile(b, rows, K), 5)) >= 3 &&
         rows >= g_touch_from_rows.load(std::memory_order_relaxed);
}

// For the tiles to touch (Lookahead): the block of B from element `start` on (depth × 8
// elements), cut at element `limit` (the end of the panels this call reads). Nothing for a
// row-major B, whose next block is not contiguous.
template <WeightType T>
Lookahead block_at(const MatrixRef& b, int64_t start, int depth, int64_t limit) {
  const int bytes = weight_type_bytes(T);
  Lookahead ahead;
  const int64_t count = std::min<int64_t>(int64_t{depth} * 8, limit - start);
  if (!b.panels || count <= 0) return ahead;
  ahead.next = static_cast<const char*>(b.data) + bytes * start;
  ahead.end = ahead.next + bytes * count;
  return ahead;
}

// Where the block of B that follows rows [.., k_end) of panel j starts, in streaming order: the
// rest of that panel, or else the top of the next one (the same address, unless the panels are
// deeper than the product's K).
inline int64_t next_block(const MatrixRef& b, int k_end, int j, int K) {
  return k_end < K ? panel_index(k_end, j, b.ld) : panel_index(0, j + 8, b.ld);
}

// How many steps of k a tile runs per call. A product that streams float32 panels (streams_b)
// runs each panel's whole depth in one call: its tiles read the panel in place, so nothing needs
// the 8 KB scratch, and a call's fixed cost (loading and storing its accumulators, the lookahead's
// arithmetic, the call, two loop exits) comes once per panel instead of once per 256 steps (GPT-2
// small at 16 tokens: 41,000 calls of the tile a forward pass instead of 166,000; Zen 3, same-
// process A/B against 256 steps a call: its 48 products from memory 0.97–1.00× the time plain,
// 0.92–0.94× relaxed, and its 16-token prefill 0.94–0.95× in both builds), and so does one that
// reads its 2-byte panels in place (two_byte_in_place()), and so does one that streams 2-byte
// panels widened into a copy, up to kWidenedDepth deep (a panel's whole depth into a 64 KB
// scratch: Zen 1, same-process A/B against 256 steps a call, GPT-2's 48 products as bf16 panels
// from memory at 31–64 rows 0.90–0.99× the time relaxed, hot W_O at 64 tokens 0.92–0.94×; fp16 at
// 7–64 rows 0.93–1.00×; the plain build 0.94–1.01×; the same bits). Every other product keeps kDepth:
// a packed block of `a` stays in L2 across B's panels, and 2-byte panels are widened into the
// scratch one block at a time.
constexpr int kWidenedDepth = 2048;
inline int depth_block(const MatrixRef& b, int n, int K) {
  const bool whole_panels = b.type == WeightType::kF32 || two_byte_in_place(b, n, K) || K <= kWidenedDepth;
  return streams_b(b, n, K) && whole_panels ? std::max(K, 1) : kDepth;
}

// Rows [0, rows) × columns [k0, k0 + block) of a, packed by pack_rows at packed + rows · k0: the
// layout columns() reads a block of rows in, every block of depth side by side.
inline void pack_depth_block(float* packed, const float* a, int64_t lda, int rows, int K, int k0, int block,
                             int tallest) {
  pack_rows(packed + int64_t{rows} * k0, a + k0, lda, rows, std::min(block, K - k0), tallest);
}

// out (n × columns [c0, c1)) = a · b + bias. `prepacked`, where not null, is a's n rows already
// packed by pack_depth_block (gemm() packs them once for all of its threads; n is then at most one
// row block), and prescaled by 2^112 where a_prescales(); otherwise this packs them itself, on the
// stack.
template <WeightType T>
void columns(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
             int K, int c0, int c1, bool touch, const float* prepacked) {
  if (reads_strips(b, n)) {
    for (int i = 0; i < n;) {
      const int r = std::min(n - i, 3);
      float* o = out + i * ldo;
      const float* ai = a + i * lda;
      if (r == 3) few_rows<T, 3>(o, ldo, ai, lda, b, bias, K, c0, c1);
      else if (r == 2) few_rows<T, 2>(o, ldo, ai, lda, b, bias, K, c0, c1);
      else few_rows<T, 1>(o, ldo, ai, lda, b, bias, K, c0, c1);
      i += r;
    }
    return;
  }
  if (K == 0) {
    for (int i = 0; i < n; ++i)
      for (int j = c0; j < c1; ++j) out[i * ldo + j] = bias ? bias[j] : 0.0f;
    return;
  }
  // On the stack (320 KB): Emscripten's threads get 2 MB, native ones 8 MB.
  alignas(16) float panel[std::max(kDepth, kWidenedDepth) * 8];
  alignas(16) float packed_a[std::max(kStreamedA, kRowBlock * kDepth)];
  // Where the touches stop: the end of the panels this call reads, or nothing at all to touch.
  const int64_t limit = touch ? int64_t{(c1 + 7) / 8 * 8} * b.ld : 0;  // panel_index(0, c1 rounded up to 8, ld)
  // Steps of k per call of the tile, and rows per tile; gemm() packs `a` for its threads by the
  // same rules.
  const int block = depth_block(b, n, K), tallest = tallest_tile(b, n, K);
  if (streams_b(b, n, K)) {
    // Few rows, so little arithmetic per weight: B is streamed once, panel by panel in memory
    // order, read in place (float32, and bf16 in few tiles: a whole panel per call) or widened a
    // block at a time, while the tiles touch the next block.
    const bool in_place = two_byte_in_place(b, n, K), prescaled = a_prescales(b, n, K, a, lda);
    if (!prepacked) {
      for (int k0 = 0; k0 < K; k0 += block) pack_depth_block(packed_a, a, lda, n, K, k0, block, tallest);
      if (prescaled) prescale(packed_a, int64_t{n} * K);
    }
    const float* a_packed = prepacked ? prepacked : packed_a;
    for (int j = c0; j < c1; j += 8) {
      for (int k0 = 0; k0 < K; k0 += block) {
        const int depth = std::min(block, K - k0), width = std::min(8, c1 - j);
        const float* a_block = a_packed + int64_t{n} * k0;
        const float* bias_j = bias ? bias + j : nullptr;
        const Lookahead ahead = block_at<T>(b, next_block(b, k0 + depth, j, K), block, limit);
        const Stored<T>* stored = static_cast<const Stored<T>*>(b.data) + panel_index(k0, j, b.ld);
        if constexpr (T == WeightType::kF16) {
          if (in_place && prescaled)
            panel_rows<T, Fp16Widening::kPrescaled>(out + j, ldo, a_block, stored, depth, n, tallest, width, k0 > 0, bias_j, ahead);
          else if (in_place)
            panel_rows<T, Fp16Widening::kTrusted>(out + j, ldo, a_block, stored, depth, n, tallest, width, k0 > 0, bias_j, ahead);
        }
        if constexpr (T == WeightType::kBF16)
          if (in_place) panel_rows<T>(out + j, ldo, a_block, stored, depth, n, tallest, width, k0 > 0, bias_j, ahead);
        if (!in_place) {
          panel_rows<WeightType::kF32>(out + j, ldo, a_block, panel_of<T>(b, k0, depth, j, 8, panel), depth, n, tallest,
                                       width, k0 > 0, bias_j, ahead);
        }
      }
    }
    return;
  }
  // A block of rows (in L2) at a time, while all of B's panels pass.
  const int row_block = prepacked ? n : row_block_size(n);
  for (int i0 = 0; i0 < n; i0 += row_block) {
    const int rows = std::min(row_block, n - i0);
    for (int k0 = 0; k0 < K; k0 += block) {  // block = kDepth here: the scratch and packed_a's size
      const int depth = std::min(block, K - k0);
      if (!prepacked) pack_rows(packed_a, a + i0 * lda + k0, lda, rows, depth, tallest);
      const float* a_block = prepacked ? prepacked + int64_t{rows} * k0 : packed_a;
      for (int j = c0; j < c1; j += 8) {
        const int width = std::min(8, c1 - j);
        panel_rows<WeightType::kF32>(out + i0 * ldo + j, ldo, a_block, panel_of<T>(b, k0, depth, j, width, panel),
                                     depth, rows, tallest, width, k0 > 0, bias ? bias + j : nullptr,
                                     block_at<T>(b, panel_index(k0, j + 8, b.ld), depth, limit));
      }
    }
  }
}

// gemm_columns, told whether the whole of B is big enough to touch ahead (a thread's share of a
// matrix is smaller than the matrix).
void columns_of(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
                int K, int col_begin, int col_end, bool touch, const float* prepacked = nullptr) {
  if (n <= 0 || col_end <= col_begin) return;
  switch (b.type) {
    case WeightType::kF32: columns<WeightType::kF32>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kF16: columns<WeightType::kF16>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kBF16: columns<WeightType::kBF16>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
  }
}

}  // namespace

void gemm_columns(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias,
                  int n, int K, int col_begin, int col_end) {
  columns_of(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch_ahead(b, K, col_end - col_begin, n));
}

void gemm(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
          int K, int N) {
  const int threads = thread_count();
  // Below ~260k multiply-adds a split costs more than it saves; one token's product with a
  // 768 × 768 matrix is above it, and is split too: several cores pull more memory bandwidth.
  const bool touch = touch_ahead(b, K, N, n);
  if (threads == 1 || static_cast<double>(n) * K * N < 262144.0 || N < 16 || in_parallel_task()) {
    columns_of(out, ldo, a, lda, b, bias, n, K, 0, N, touch);
    return;
  }
  // About eight chunks per thread, taken by whichever thread is free, so a thread that starts late
  // or is descheduled (a browser's own threads share the cores) is balanced by the others: on a
  // 2-core Zen 3, GPT-2 small's 48 products at 32 tokens on 2 threads took 88–103 ms against
  // 105–122 ms with two chunks per thread (4 alternating runs, medians of 25 each). At least 24
  // columns a chunk.
  // Whole panels of 8 columns, so every element is computed exactly as in one thread. The rows of
  // `a` are packed once for all chunks (a block of rows at a time, its blocks of depth split over
  // the threads too; a streamed float32 product's `a`, at most 256 KB, is one block of depth
  // (depth_block), packed by one thread): packed by every chunk, they had cost as much as a sixth
  // of the arithmetic (a chunk of 48 columns does 96 flops per element of `a` it packs).
  const int chunk = std::max(24, ((N + 8 * threads - 1) / (8 * threads) + 7) / 8 * 8);
  const int chunks = (N + chunk - 1) / chunk;
  // Rows that read strips (decoding) read `a` in place (few_rows): nothing to pack.
  const bool pack = !reads_strips(b, n) && K > 0;
  const int row_block = !pack || streams_b(b, n, K) ? n : row_block_size(n);
  // The calling thread's buffer, grown to the largest block of rows × K so far. Named through a
  // plain pointer: inside the tasks `packing` would be the running thread's own.
  thread_local std::vector<float> packing;
  if (pack && packing.size() < static_cast<size_t>(row_block) * K) packing.resize(static_cast<size_t>(row_block) * K);
  float* const packed = pack ? packing.data() : nullptr;
  for (int i0 = 0; i0 < n; i0 += row_block) {
    const int rows = std::min(row_block, n - i0);
    const float* a_rows = a + i0 * lda;
    if (packed) {
      const int block = depth_block(b, rows, K), tallest = tallest_tile(b, rows, K);
      parallel_for((K + block - 1) / block,
                   [&](int i, int) { pack_depth_block(packed, a_rows, lda, rows, K, i * block, block, tallest); });
      if (a_prescales(b, rows, K, a_rows, lda)) prescale(packed, int64_t{rows} * K);
    }
    parallel_for(chunks, [&](int t, int) {
      const int c0 = t * chunk;
      columns_of(out + i0 * ldo, ldo, a_rows, lda, b, bias, rows, K, c0, std::min(N, c0 + chunk), touch, packed);
    });
  }
}

// A panel at a time, by pack_panel (whole panels 8 floats, 2 vectors, a row): std::copy of 8
// floats had been a call to memmove per row, and packing a head's values that way (every call at
// 512 tokens) took 1.1% of the 512 × 512 attention call (Zen 4, plain build); by vectors, 0.25%.
void pack_panels(float* packed, const float* src, int64_t ld, int K, int N) {
  for (int j = 0; j < (N + 7) / 8 * 8; j += 8)
    pack_panel<WeightType::kF32>(packed + panel_index(0, j, K), f32_matrix(src, ld), 0, K, j, std::min(8, N - j));
}

// Eight rows of src (a panel's 8 columns) four steps of k at a time, by two 4 × 4 transposes: one
// float at a time, packing a head's keys took 0.8% of the 512 × 512 attention call (Zen 4, plain);
// this way 0.3%.
void pack_panels_transposed(float* packed, const float* src, int64_t ld, int cols, int K, float scale) {
  const v4 factor = splat(&scale);
  for (int j = 0; j < (cols + 7) / 8 * 8; j += 8) {
    float* dst = packed + panel_index(0, j, K);
    int k = 0;
    if (j + 8 <= cols) {
      for (; k + 4 <= K; k += 4) {
        for (int half = 0; half < 8; half += 4) {
          const float* row = src + (j + half) * ld + k;
          v4 x0 = mul(factor, load(row)), x1 = mul(factor, load(row + ld));
          v4 x2 = mul(factor, load(row + 2 * ld)), x3 = mul(factor, load(row + 3 * ld));
          transpose4(x0, x1, x2, x3);
          store(dst + k * 8 + half, x0);
          store(dst + (k + 1) * 8 + half, x1);
          store(dst + (k + 2) * 8 + half, x2);
          store(dst + (k + 3) * 8 + half, x3);
        }
      }
    }
    for (; k < K; ++k)
      for (int c = 0; c < 8; ++c) dst[k * 8 + c] = j + c < cols ? scale * src[(j + c) * ld + k] : 0.0f;
  }
}

const char* gemm_kernel_name() { return kKernelName; }

void set_touch_from_rows(int rows) { g_touch_from_rows.store(rows, std::memory_order_relaxed); }
int touch_from_rows() { return g_touch_from_rows.load(std::memory_order_relaxed); }

}  // namespace mh

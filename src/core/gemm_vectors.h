// The GEMM's vector vocabulary (gemm.cpp's first part): 4-lane float operations over wasm SIMD,
// or natively over GCC/Clang vector extensions, with the fused multiply-add of the relaxed build;
// and how 8 of B's elements become two vectors of float32, 2-byte weights widened in registers
// (in column order, or as even and odd columns where that saves operations).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/gemm.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace mh {

// Private to gemm.cpp, the one file that includes it: internal linkage, as if written there.
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
// docs/performance.md, "Relaxed SIMD").
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
// here).
// The even columns (the low half of each 32-bit lane) need their value moved up first. A
// multiply-add of 16-bit pairs does it in one operation: even × 2^13 + odd × 0 is the even value
// sign-extended and shifted left by 13, the same bits as (h << 16) >> 3 (arithmetic), which took
// two shifts, one operation fewer where every operation counts (the plain build). It competes with
// float multiplies, though, which the relaxed build's tiles issue 6 of per 8 values: those keep
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

}  // namespace
}  // namespace mh

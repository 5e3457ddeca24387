// A vectorized e^x for softmax in the wasm build.
//
// Why not Eigen's pexp: under wasm it goes through Emscripten's SSE2 emulation, whose float→int
// conversions (needed to build 2^n) are emulated and slow — slower than scalar expf
// (docs/performance.md, "Kernel decisions"). Native wasm SIMD has the instructions (nearest, trunc_sat, shl), so this is
// Cephes' expf written with them: ~1 ulp on the range softmax uses.
#pragma once

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

namespace mh {

// e^x for 4 floats in [-100, 88]: exactly 0 for x under about -87.7 (where n, below, would be
// under -126), within ~1 ulp of e^x above, where the last few results are subnormal. Written for
// a short dependency chain: V8 emits wasm in the order given and the core runs out of scheduler
// slots before it runs out of pipes, so the chain's length sets the speed (docs/performance.md,
// "Kernel decisions in detail").
inline v128_t exp_in_range(v128_t x) {
  // n = x·log2(e) rounded to the nearest integer (ties to even), by adding 1.5·2^23: in
  // [2^23, 2^24) a float's last bit is worth 1, so the sum rounds there, and its low bits hold n.
  const v128_t magic = wasm_f32x4_splat(12582912.0f);
  const v128_t rounded = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)), magic);
  const v128_t n = wasm_f32x4_sub(rounded, magic);
  // x = n·ln 2 + r, |r| <= ln2 / 2; ln 2 split in two parts so n·ln2_hi is exact.
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  // e^r ≈ 1 + r + r²·P(r), P of degree 5 with Cephes expf's coefficients, evaluated by Estrin's
  // scheme: (c0 + c1·r) + r²·(c2 + c3·r) + r⁴·(c4 + c5·r), 4 steps deep instead of Horner's 10.
  const v128_t r2 = wasm_f32x4_mul(r, r), r4 = wasm_f32x4_mul(r2, r2);
  const v128_t p01 = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_splat(1.6666665459e-1f), r), wasm_f32x4_splat(5.0000001201e-1f));
  const v128_t p23 = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_splat(8.3334519073e-3f), r), wasm_f32x4_splat(4.1665795894e-2f));
  const v128_t p45 = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_splat(1.9875691500e-4f), r), wasm_f32x4_splat(1.3981999507e-3f));
  const v128_t p = wasm_f32x4_add(wasm_f32x4_add(p01, wasm_f32x4_mul(r2, p23)), wasm_f32x4_mul(r4, p45));
  const v128_t e = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(r2, p), r), wasm_f32x4_splat(1.0f));
  // 2^n from the exponent bits, (n + 127) << 23: `rounded`'s bits are 1.5·2^23's plus n. Below
  // n = -126 that exponent would not be a normal float's, and is 0 instead: 2^n = 0, e^x = 0.
  const v128_t biased = wasm_i32x4_add(rounded, wasm_i32x4_splat(127 - 0x4b400000));  // n + 127
  const v128_t two_n = wasm_i32x4_shl(wasm_i32x4_max(biased, wasm_i32x4_splat(0)), 23);
  return wasm_f32x4_mul(e, two_n);
}

// e^x for 4 floats with x <= 0 (softmax subtracts the row max first). x below about -87.7, and
// -inf (a blocked key), give exactly 0; NaN stays NaN so the caller can detect it: pmax(a, b) is
// (a < b ? b : a), so with x first a NaN x is kept.
inline v128_t exp_nonpositive(v128_t x) { return exp_in_range(wasm_f32x4_pmax(x, wasm_f32x4_splat(-100.0f))); }

// e^x for 4 floats of any sign, x clamped to [-87.3, 88]: the activations below need it only where
// σ(x) is 0 or 1 to float precision beyond those limits.
inline v128_t exp_clamped(v128_t x) {
  return exp_in_range(wasm_f32x4_pmax(wasm_f32x4_pmin(x, wasm_f32x4_splat(88.0f)), wasm_f32x4_splat(-87.3f)));
}

}  // namespace mh
#endif

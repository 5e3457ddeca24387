// A vectorized e^x for softmax in the wasm build.
//
// Why not Eigen's pexp: under wasm it goes through Emscripten's SSE2 emulation, whose float→int
// conversions (needed to build 2^n) are emulated and slow — it measured 7.3 ns per element, slower
// than scalar expf. Native wasm SIMD has the instructions (nearest, trunc_sat, shl), so this is
// Cephes' expf written with them: ~1 ulp on the range softmax uses.
#pragma once

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

namespace mh {

// e^x for 4 floats already in [-87.3, 88] (so that 2^n is a normal float).
inline v128_t exp_in_range(v128_t x) {
  // x = n·ln 2 + r, |r| <= ln2 / 2; ln 2 split in two parts so n·ln2_hi is exact.
  const v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)));
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  // e^r ≈ 1 + r + r²·P(r) (Cephes expf coefficients).
  v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
  const v128_t e = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(r, r), p), r),
                                  wasm_f32x4_splat(1.0f));
  // 2^n from the exponent bits: n is in [-126, 127], so (n + 127) << 23 is a normal float.
  const v128_t two_n = wasm_i32x4_shl(
      wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
  return wasm_f32x4_mul(e, two_n);
}

// e^x for 4 floats with x <= 0 (softmax subtracts the row max first). x below -87.3, and -inf,
// give exactly 0; NaN stays NaN so the caller can detect it.
inline v128_t exp_nonpositive(v128_t x) {
  const v128_t lowest = wasm_f32x4_splat(-87.3f);
  // pmax(a, b) is (a < b ? b : a): with x first, a NaN x stays NaN.
  const v128_t result = exp_in_range(wasm_f32x4_pmax(x, lowest));
  return wasm_v128_andnot(result, wasm_f32x4_lt(x, lowest));  // underflow (and -inf) → exactly 0
}

// e^x for 4 floats of any sign, x clamped to [-87.3, 88]: the activations below need it only where
// σ(x) is 0 or 1 to float precision beyond those limits.
inline v128_t exp_clamped(v128_t x) {
  return exp_in_range(wasm_f32x4_pmax(wasm_f32x4_pmin(x, wasm_f32x4_splat(88.0f)), wasm_f32x4_splat(-87.3f)));
}

}  // namespace mh
#endif

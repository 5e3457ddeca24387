// Relaxed SIMD's two int8 dots, which clang 14 (Emscripten 3.1.6) has no builtins for: each is
// emitted as a pre-standard relaxed f64x2 operation with the same operands, which no code of ours
// uses otherwise, and scripts/relax-wasm.mjs rewrites its opcode to the dot's after linking.
// Both give the same sums on every CPU where y is within 0…127.
#pragma once

#if defined(__wasm_relaxed_simd__)
#include <wasm_simd128.h>

namespace mh {

// i16x8.relaxed_dot_i8x16_i7x16_s: the int16 sums of adjacent pairs of products x_i · y_i (from
// f64x2's relaxed_min).
inline v128_t dot_i8x16_i7x16(v128_t x, v128_t y) {
  typedef double f64x2 __attribute__((vector_size(16)));
  return reinterpret_cast<v128_t>(__builtin_wasm_relaxed_min_f64x2(reinterpret_cast<f64x2>(x), reinterpret_cast<f64x2>(y)));
}

// i32x4.relaxed_dot_i8x16_i7x16_add_s: acc + the int32 sums of each 4 adjacent products x_i · y_i
// (from f64x2's fused multiply-add, whose operands x, y, acc are in the dot-add's order). One
// instruction only where the CPU has a dot-add (V8: AVX-VNNI on x64, the dot product extension on
// arm64), five otherwise, and Node 20's baseline compiler computes it wrongly in some functions:
// used only where integer_dot_add() (core/gemm_tuning.h) measured it exact and faster.
inline v128_t dot_add_i8x16_i7x16(v128_t x, v128_t y, v128_t acc) {
  typedef double f64x2 __attribute__((vector_size(16)));
  return reinterpret_cast<v128_t>(__builtin_wasm_fma_f64x2(reinterpret_cast<f64x2>(x), reinterpret_cast<f64x2>(y),
                                                           reinterpret_cast<f64x2>(acc)));
}

}  // namespace mh
#endif

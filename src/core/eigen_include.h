// The one place the core includes Eigen.
//
// Why this file exists: under Emscripten with -msimd128 -msse2, Eigen takes its SSE2 path (which
// Emscripten translates to wasm SIMD), but two things would break it (see docs/development.md, "Toolchain"):
//  1. Eigen includes <mmintrin.h>, which Emscripten does not ship: src/core/wasm_shim/ holds an empty
//     one, on the include path of the wasm build only.
//  2. clang reports __GNUC__ 4.2, so Eigen picks x86 inline asm in pmin/pmax (EIGEN_COMP_GNUC<63)
//     and in the gebp kernel (EIGEN_GNUC_AT_LEAST(6,0)). Pretending to be GCC 5.13 while Eigen's
//     headers are read makes both checks fall through to the portable code.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <vector>

#if defined(__EMSCRIPTEN__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wbuiltin-macro-redefined"
#pragma push_macro("__GNUC__")
#pragma push_macro("__GNUC_MINOR__")
#undef __GNUC__
#undef __GNUC_MINOR__
#define __GNUC__ 5
#define __GNUC_MINOR__ 13
#include <Eigen/Core>
#include <Eigen/Cholesky>
#pragma pop_macro("__GNUC_MINOR__")
#pragma pop_macro("__GNUC__")
#pragma clang diagnostic pop
#if defined(__wasm_simd128__) && !defined(EIGEN_VECTORIZE_SSE2)
#error "wasm build without Eigen's SSE2 path: compile with -msimd128 -msse2 (see src/core/eigen_include.h)"
#endif
#else
#include <Eigen/Core>
#include <Eigen/Cholesky>
#endif

namespace mh {
// Row-major views over caller memory. OuterStride lets one map address a head's column slice
// (d_k columns of a row of width d_model) without copying it out.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixView = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstMatrixView = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// Floats per SIMD packet Eigen uses for float products (4 with SSE2 / wasm SIMD, 1 if scalar).
inline int simd_floats_per_packet() { return Eigen::internal::packet_traits<float>::size; }
}  // namespace mh

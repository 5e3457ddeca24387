// A checkpoint's tensor in memory, kept in the dtype it was stored in: fp16/bf16 weights stay at
// 2 bytes (a 0.5B-parameter bf16 model needs ~1 GB, not 2) and are widened to float32 only where
// an operation reads them, a matrix or a few rows at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/gemm.h"

namespace mh {


struct Tensor {
  WeightType type = WeightType::kF32;
  int64_t rows = 1, cols = 1;  // a vector is 1 × cols; matrices are row-major
  std::vector<uint8_t> bytes;  // rows · cols · weight_type_bytes(type)

  int64_t elements() const { return rows * cols; }
  // The float32 data when the tensor is float32 (zero-copy use), else null.
  const float* f32() const {
    return type == WeightType::kF32 ? reinterpret_cast<const float*>(bytes.data()) : nullptr;
  }
  // The matrix as gemm's operand (rows × cols, row-major, in its stored type).
  MatrixRef matrix() const { return {bytes.data(), type, cols}; }
  // The first element, for a WeightsView (core/attention.h): float32 data, or (2-byte types) the
  // raw elements, which only gemm reads, through the view's type.
  const float* f32_or_raw() const { return reinterpret_cast<const float*>(bytes.data()); }
  // out[0 … count) = elements [first, first + count) as float32.
  void widen(float* out, int64_t first, int64_t count) const;
};

}  // namespace mh

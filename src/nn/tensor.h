// A checkpoint's tensor in memory, kept in the dtype it was stored in: fp16/bf16 weights stay at
// 2 bytes (a 0.5B-parameter bf16 model needs ~1 GB, not 2) and are widened to float32 only where
// an operation reads them, a matrix or a few rows at a time.
#pragma once

#include <cstdint>
#include <vector>

namespace mh {

enum class WeightType { kF32, kF16, kBF16 };
int weight_type_bytes(WeightType t);

struct Tensor {
  WeightType type = WeightType::kF32;
  int64_t rows = 1, cols = 1;  // a vector is 1 × cols; matrices are row-major
  std::vector<uint8_t> bytes;  // rows · cols · weight_type_bytes(type)

  int64_t elements() const { return rows * cols; }
  // The float32 data when the tensor is float32 (zero-copy use), else null.
  const float* f32() const {
    return type == WeightType::kF32 ? reinterpret_cast<const float*>(bytes.data()) : nullptr;
  }
  // out[0 … count) = elements [first, first + count) as float32.
  void widen(float* out, int64_t first, int64_t count) const;
  // The whole tensor as float32: its own data when it is float32, else widened into scratch.
  const float* as_f32(std::vector<float>& scratch) const;
};

float bf16_to_float(uint16_t bits);

}  // namespace mh

// The two 16-bit float formats checkpoints store weights in, widened to float32 (exact).
#pragma once

#include <cstdint>
#include <cstring>

namespace mh {

// A matrix's element type: checkpoints' fp16/bf16 weights stay at 2 bytes in memory and are
// widened where a product reads them (core/gemm.h).
enum class WeightType { kF32, kF16, kBF16 };
inline int weight_type_bytes(WeightType t) { return t == WeightType::kF32 ? 4 : 2; }

inline float bf16_to_float(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;  // bf16 is float32's top half
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

// IEEE 754 binary16 → binary32; ±inf and NaN stay so.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  uint32_t f;
  if (exponent == 31) {
    f = sign | 0x7F800000u | (mantissa << 13);  // inf, NaN
  } else if (exponent == 0) {
    // Zero or subnormal: mantissa · 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    std::memcpy(&f, &magnitude, 4);
    f |= sign;
  } else {
    f = sign | ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 → 127
  }
  float out;
  std::memcpy(&out, &f, 4);
  return out;
}

}  // namespace mh

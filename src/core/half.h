// The two 16-bit float formats checkpoints store weights in: widened to float32 (exact), and
// float32 narrowed to them (rounded to nearest, ties to even) when a float32 checkpoint is loaded
// at 2 bytes a weight.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mh {

// A matrix's element type: checkpoints' fp16/bf16 weights stay at 2 bytes in memory and are
// widened where a product reads them (core/gemm.h); kQ8, kQ5 and kQ4 are blocks of 8-, 5- and
// 4-bit values with their scales (core/blocks.h), widened the same way; kQ4K is 4-bit blocks
// with Q4_K's integer scales and floats once for 256 rows, kQ5K 5-bit blocks with Q5_K's (the same),
// kQ6K 6-bit blocks with Q6_K's; kQ40 is
// 4-bit blocks of Q4_0's d · (q − 8), their mins not stored.
enum class WeightType { kF32, kF16, kBF16, kQ8, kQ4, kQ5, kQ4K, kQ40, kQ6K, kQ5K };
// Bytes an element takes; not for the block types, whose sizes core/blocks.h gives.
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

// float32 → bf16 (float32's top half), rounded to nearest even; NaN stays NaN.
inline uint16_t float_to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // ties to even; a carry into the exponent is right
  return static_cast<uint16_t>(bits >> 16);
}

// float32 → IEEE 754 binary16, rounded to nearest even: magnitudes from 65520 up become ±inf;
// NaN stays NaN.
inline uint16_t float_to_half(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // subnormal half (or zero): value / 2^-24, rounded to nearest even
    const float scaled = std::fabs(value) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t mantissa_rounded = abs + 0xFFFu + ((abs >> 13) & 1u);  // round to nearest even
  return static_cast<uint16_t>(sign | ((mantissa_rounded - 0x38000000u) >> 13));
}

}  // namespace mh

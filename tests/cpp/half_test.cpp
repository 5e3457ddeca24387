// float32 → fp16 / bf16 narrowing (core/half.h), as a float32 checkpoint loaded at 2 bytes a
// weight uses it, checked exhaustively against the exact widening: every 16-bit value comes back
// as itself, and every float32 between two neighbours rounds to the nearer one (ties to the one
// with an even last bit).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/half.h"

namespace mh {
namespace {

template <class Widen, class Narrow>
void check_rounding(Widen widen, Narrow narrow, uint16_t first_non_finite) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const uint16_t magnitude = h & 0x7fffu;
    if (magnitude > first_non_finite) {  // NaN stays NaN
      EXPECT_TRUE(std::isnan(widen(narrow(widen(h))))) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(narrow(widen(h)), h) << std::hex << bits;
    if (magnitude + 1 >= first_non_finite) continue;  // inf, or the largest finite value
    // Between h and its neighbour away from zero: the midpoint (exact in double, and in float
    // since both formats have fewer mantissa bits), and the floats just either side of it.
    const uint16_t next = static_cast<uint16_t>(h + 1);
    const double lo = widen(h), hi = widen(next);
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint16_t even = (h & 1u) ? next : h;
    EXPECT_EQ(narrow(mid), even) << std::hex << bits;
    EXPECT_EQ(narrow(std::nextafter(mid, 0.0f)), h) << std::hex << bits;
    EXPECT_EQ(narrow(std::nextafter(mid, std::copysign(std::numeric_limits<float>::infinity(), mid))), next)
        << std::hex << bits;
  }
}

TEST(Half, Fp16NarrowingRoundsToNearestEvenEverywhere) {
  check_rounding(half_to_float, float_to_half, 0x7c00);
  // Past the largest finite value (65504) the rounding goes to infinity from 65520 up.
  EXPECT_EQ(float_to_half(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(-1e30f), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
}

TEST(Half, Bf16NarrowingRoundsToNearestEvenEverywhere) {
  check_rounding(bf16_to_float, float_to_bf16, 0x7f80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to inf
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // a tie: to even (1.0)
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // a tie: to even (1 + 2^-6)
}

}  // namespace
}  // namespace mh

#include <gtest/gtest.h>

#include <cmath>

#include "core/init.h"

namespace {

TEST(Init, PortableLogMatchesLibm) {
  for (double x : {1e-300, 1e-10, 0.001, 0.3, 0.5, 0.7071, 0.99999, 1.0, 1.5, 2.0, 1e10}) {
    EXPECT_NEAR(mh::portable_log(x), std::log(x), 2e-15 * std::max(1.0, std::abs(std::log(x))))
        << x;
  }
}

TEST(Init, NormalStreamIsDeterministicAndStandard) {
  mh::NormalStream a(42), b(42), c(43);
  double sum = 0, sum_sq = 0;
  bool differs = false;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = a.next();
    EXPECT_EQ(x, b.next());
    differs |= (x != c.next());
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / n, 0.0, 0.01);          // standard error 1/sqrt(n) ≈ 0.0022
  EXPECT_NEAR(sum_sq / n, 1.0, 0.015);      // standard error sqrt(2/n) ≈ 0.0032
}

TEST(Init, FillNormalHasRequestedSpread) {
  mh::NormalStream s(7);
  std::vector<float> v(100000);
  mh::fill_normal(v.data(), v.size(), std::sqrt(2.0 / 64), s);
  double sq = 0;
  for (float x : v) sq += double(x) * x;
  EXPECT_NEAR(sq / v.size(), 2.0 / 64, 0.001);
}

TEST(Init, SinusoidalPositionalEncodingHandValues) {
  const int n = 3, d = 4;
  std::vector<float> pe(n * d);
  mh::sinusoidal_positional_encoding(pe.data(), n, d);
  // Position 0: sin(0) = 0 in even columns, cos(0) = 1 in odd ones.
  EXPECT_EQ(pe[0], 0.0f); EXPECT_EQ(pe[1], 1.0f); EXPECT_EQ(pe[2], 0.0f); EXPECT_EQ(pe[3], 1.0f);
  // Position 1, pair 0: angle 1 → sin 1 = 0.8414710, cos 1 = 0.5403023.
  EXPECT_NEAR(pe[4], 0.8414710f, 1e-6); EXPECT_NEAR(pe[5], 0.5403023f, 1e-6);
  // Position 2, pair 1: angle 2 / 10000^(2/4) = 0.02 → sin 0.0199987, cos 0.9998000.
  EXPECT_NEAR(pe[10], 0.0199987f, 1e-6); EXPECT_NEAR(pe[11], 0.9998000f, 1e-6);
}

}  // namespace

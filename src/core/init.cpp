#include "core/init.h"

#include <cmath>

namespace mh {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t NormalStream::next_u64() { return splitmix64(state_); }

double NormalStream::next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  for (;;) {
    // 53 random bits → uniform in [-1, 1).
    const double u = static_cast<double>(next_u64() >> 11) * 0x1.0p-52 - 1.0;
    const double v = static_cast<double>(next_u64() >> 11) * 0x1.0p-52 - 1.0;
    const double s = u * u + v * v;
    if (s <= 0.0 || s >= 1.0) continue;
    const double factor = std::sqrt(-2.0 * portable_log(s) / s);  // sqrt is exact-rounded IEEE
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
  }
}

double portable_log(double x) {
  // x = m · 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2·atanh(t), t = (m-1)/(m+1), |t| < 0.172.
  int e = 0;
  double m = std::frexp(x, &e);  // exact
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  double term = t, sum = 0.0;
  for (int k = 1; k <= 41; k += 2) {  // t2^21 < 1e-32: far below double precision
    sum += term / k;
    term *= t2;
  }
  return 2.0 * sum + e * 0.69314718055994530942;
}

void fill_normal(float* values, int64_t count, double stddev, NormalStream& stream) {
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(stream.next() * stddev);
}

void sinusoidal_positional_encoding(float* pe, int n, int d) {
  for (int p = 0; p < n; ++p) {
    for (int c = 0; c < d; ++c) {
      const int pair = c / 2;
      const double angle = p / std::pow(10000.0, (2.0 * pair) / d);
      pe[static_cast<int64_t>(p) * d + c] = static_cast<float>(c % 2 == 0 ? std::sin(angle)
                                                                          : std::cos(angle));
    }
  }
}

}  // namespace mh

// Seeded weights and positional encodings: helpers around the attention layer.
#pragma once

#include <cstdint>

namespace mh {

// SplitMix64 (Steele, Lea & Flood 2014): advances state and returns the next 64 random bits. The
// one integer generator of the project: seeded weights, training batches, head-metric tokens.
uint64_t splitmix64(uint64_t& state);

// A stream of standard normal samples that is bit-identical on every IEEE-754 platform (native
// x86-64, wasm): SplitMix64 integers → uniform doubles → Marsaglia's polar method, with a log
// written from + - * / only, because libm's log may differ in the last bit between glibc and musl.
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : state_(seed) {}
  double next();

 private:
  uint64_t next_u64();
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// ln(x) for finite x > 0 from basic arithmetic only (relative error < 1e-15).
double portable_log(double x);

// values[0 … count) ~ N(0, stddev²), drawn in order from the stream.
void fill_normal(float* values, int64_t count, double stddev, NormalStream& stream);

// pe (n × d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))
// (Vaswani et al. 2017, section 3.5). An odd d leaves the last column as a sine.
void sinusoidal_positional_encoding(float* pe, int n, int d);

}  // namespace mh

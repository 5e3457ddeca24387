// Builds the same random layer twice: as the float32 core model and as the float64 reference.
#pragma once

#include <gtest/gtest.h>

#include "core/model.h"
#include "reference.h"

namespace test {

// Normal samples rounded to float, so core and reference see exactly the same numbers.
inline std::vector<double> float_exact(size_t n, std::mt19937& rng, double stddev = 1.0) {
  std::vector<double> v = ref::random_vector(n, rng, stddev);
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

struct Pair {
  mh::Config config;
  mh::AttentionModel model;
  ref::Layer layer;
};

inline Pair make_pair(int d, int h, int h_kv, bool bias, unsigned seed, double scale = 0) {
  mh::Config c;
  c.d_model = d;
  c.num_heads = h;
  c.num_kv_heads = h_kv;
  c.bias = bias;
  c.scale = static_cast<float>(scale);
  EXPECT_EQ(mh::validate_config(c), "");
  Pair p{c, mh::AttentionModel(c), {}};
  const int kv = h_kv > 0 ? h_kv : h;
  const int d_kv = kv * (d / h);
  std::mt19937 rng(seed);
  ref::Layer& L = p.layer;
  L.d = d; L.h = h; L.h_kv = kv; L.bias = bias; L.scale = scale;
  const double sd = std::sqrt(1.0 / d);
  L.wq = float_exact(size_t(d) * d, rng, sd);
  L.wk = float_exact(size_t(d) * d_kv, rng, sd);
  L.wv = float_exact(size_t(d) * d_kv, rng, sd);
  L.wo = float_exact(size_t(d) * d, rng, sd);
  if (bias) {
    L.bq = float_exact(d, rng, 0.1);
    L.bk = float_exact(d_kv, rng, 0.1);
    L.bv = float_exact(d_kv, rng, 0.1);
    L.bo = float_exact(d, rng, 0.1);
  }
  std::vector<float> staged[mh::kNumWeights] = {
      ref::to_float(L.wq), ref::to_float(L.wk), ref::to_float(L.wv), ref::to_float(L.wo),
      ref::to_float(L.bq), ref::to_float(L.bk), ref::to_float(L.bv), ref::to_float(L.bo)};
  EXPECT_EQ(p.model.replace_weights(staged, bias ? 0xFFu : 0x0Fu), "");
  return p;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace test

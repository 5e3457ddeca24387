#include <gtest/gtest.h>

#include "test_support.h"

namespace {

TEST(Model, ParameterCount) {
  mh::Config c;
  c.d_model = 64; c.num_heads = 8;
  EXPECT_EQ(mh::parameter_count(c), 4 * 64 * 64 + 4 * 64);
  c.bias = false;
  EXPECT_EQ(mh::parameter_count(c), 4 * 64 * 64);
  c.bias = true; c.num_kv_heads = 2;  // K, V: 64 × 16
  EXPECT_EQ(mh::parameter_count(c), 2 * 64 * 64 + 2 * 64 * 16 + 2 * 64 + 2 * 16);
  c.num_kv_heads = 1;                 // multi-query: K, V: 64 × 8
  EXPECT_EQ(mh::parameter_count(c), 2 * 64 * 64 + 2 * 64 * 8 + 2 * 64 + 2 * 8);
}

TEST(Model, SeededInitIsReproducibleAndScaled) {
  mh::Config c;
  c.d_model = 64; c.num_heads = 4;
  mh::AttentionModel a(c), b(c);
  a.init_seeded(42);
  b.init_seeded(42);
  for (int w = 0; w < mh::kNumWeights; ++w)
    for (int64_t i = 0; i < a.weight_size(w); ++i) ASSERT_EQ(a.weight(w)[i], b.weight(w)[i]);
  b.init_seeded(43);
  EXPECT_NE(a.weight(mh::kWq)[0], b.weight(mh::kWq)[0]);
  double sq = 0;
  for (int w = mh::kWq; w <= mh::kWo; ++w)
    for (int64_t i = 0; i < a.weight_size(w); ++i) sq += double(a.weight(w)[i]) * a.weight(w)[i];
  EXPECT_NEAR(sq / (4 * 64 * 64), 2.0 / 64, 0.003);
  for (int64_t i = 0; i < a.weight_size(mh::kBq); ++i) EXPECT_EQ(a.weight(mh::kBq)[i], 0.0f);
}

TEST(Model, ReplaceWeightsIsAllOrNothing) {
  test::Pair p = test::make_pair(8, 2, 0, true, 5);
  const float wq0 = p.model.weight(mh::kWq)[0];
  std::vector<float> staged[mh::kNumWeights];
  staged[mh::kWq].assign(64, 1.0f);
  staged[mh::kWk].assign(64, 1.0f);
  staged[mh::kWk][10] = std::nanf("");
  const std::string error = p.model.replace_weights(staged, (1u << mh::kWq) | (1u << mh::kWk));
  EXPECT_NE(error.find("wk contains NaN at index 10"), std::string::npos) << error;
  EXPECT_EQ(p.model.weight(mh::kWq)[0], wq0);

  test::Pair nobias = test::make_pair(8, 2, 0, false, 5);
  staged[mh::kBq].assign(8, 0.0f);
  EXPECT_NE(nobias.model.replace_weights(staged, 1u << mh::kBq).find("bias: false"),
            std::string::npos);
}

// forward multiplies by a packed copy of the weights, made on first use after a change: every way
// of changing them must reach it. Compared with a fresh layer holding the same weights.
TEST(Model, ForwardFollowsEveryWeightChange) {
  const int d = 16, h = 4, n = 9;
  std::mt19937 rng(23);
  const std::vector<float> x = ref::to_float(test::float_exact(size_t(n) * d, rng));
  auto forward = [&](mh::AttentionModel& m) {
    std::vector<float> y(size_t(n) * d);
    EXPECT_EQ(m.forward(y.data(), nullptr, x.data(), x.data(), n, n, mh::MaskSpec{}), "");
    return y;
  };
  test::Pair p = test::make_pair(d, h, 0, true, 31);
  const std::vector<float> before = forward(p.model);
  test::Pair other = test::make_pair(d, h, 0, true, 32);
  std::vector<float> staged[mh::kNumWeights];
  for (int w = 0; w < mh::kNumWeights; ++w) staged[w].assign(other.model.weight(w), other.model.weight(w) + other.model.weight_size(w));
  ASSERT_EQ(p.model.replace_weights(staged, 0xFFu), "");
  const std::vector<float> replaced = forward(p.model);
  EXPECT_EQ(replaced, forward(other.model));
  EXPECT_NE(replaced, before);

  mh::AttentionModel fresh(p.config);
  fresh.init_seeded(7);
  p.model.init_seeded(7);
  EXPECT_EQ(forward(p.model), forward(fresh));

  std::vector<float> in_w(3 * d * d), in_b(3 * d, 0.25f), out_w(d * d), out_b(d, -0.5f);
  for (float& v : in_w) v = std::uniform_real_distribution<float>(-0.3f, 0.3f)(rng);
  for (float& v : out_w) v = std::uniform_real_distribution<float>(-0.3f, 0.3f)(rng);
  ASSERT_EQ(p.model.load_pytorch(in_w.data(), in_b.data(), out_w.data(), out_b.data()), "");
  mh::AttentionModel untouched(p.config);
  ASSERT_EQ(untouched.load_pytorch(in_w.data(), in_b.data(), out_w.data(), out_b.data()), "");
  EXPECT_EQ(forward(p.model), forward(untouched));
}

TEST(Model, PyTorchWeightsGiveTorchSemantics) {
  // PyTorch computes q = x·W_qᵀ + b_q with in_proj_weight rows [W_q; W_k; W_v] ([out][in]).
  const int d = 8, h = 2;
  std::mt19937 rng(17);
  auto in_w = test::float_exact(3 * d * d, rng, 0.4);
  auto in_b = test::float_exact(3 * d, rng, 0.1);
  auto out_w = test::float_exact(d * d, rng, 0.4);
  auto out_b = test::float_exact(d, rng, 0.1);
  ref::Layer L{d, h, h, true, 0, {}, {}, {}, {}, {}, {}, {}, {}};
  auto transpose = [&](const double* torch) {
    std::vector<double> w(d * d);
    for (int o = 0; o < d; ++o)
      for (int i = 0; i < d; ++i) w[i * d + o] = torch[o * d + i];
    return w;
  };
  L.wq = transpose(in_w.data());
  L.wk = transpose(in_w.data() + d * d);
  L.wv = transpose(in_w.data() + 2 * d * d);
  L.wo = transpose(out_w.data());
  L.bq.assign(in_b.begin(), in_b.begin() + d);
  L.bk.assign(in_b.begin() + d, in_b.begin() + 2 * d);
  L.bv.assign(in_b.begin() + 2 * d, in_b.end());
  L.bo = out_b;

  mh::Config c;
  c.d_model = d; c.num_heads = h;
  mh::AttentionModel model(c);
  auto fi = ref::to_float(in_w), fb = ref::to_float(in_b), fo = ref::to_float(out_w),
       fob = ref::to_float(out_b);
  ASSERT_EQ(model.load_pytorch(fi.data(), fb.data(), fo.data(), fob.data()), "");
  auto x = test::float_exact(5 * d, rng);
  std::vector<double> y_ref, a_ref;
  ref::forward(L, x, x, 5, 5, {}, y_ref, a_ref);
  auto xf = ref::to_float(x);
  std::vector<float> y(5 * d);
  ASSERT_EQ(model.forward(y.data(), nullptr, xf.data(), xf.data(), 5, 5, {}), "");
  EXPECT_LE(test::max_abs_diff(y, y_ref), 1e-5);

  mh::Config gqa = c;
  gqa.num_kv_heads = 1;
  mh::AttentionModel grouped(gqa);
  EXPECT_NE(grouped.load_pytorch(fi.data(), fb.data(), fo.data(), fob.data()).find("kvHeads"),
            std::string::npos);
}

}  // namespace

#include <gtest/gtest.h>

#include <cmath>

#include "core/attention.h"
#include "test_support.h"

namespace {

const float kInf = std::numeric_limits<float>::infinity();

struct Result {
  std::vector<float> y, attention;
};

Result run(mh::AttentionModel& model, const std::vector<float>& xq, const std::vector<float>& xkv,
        int n_q, int n_k, const mh::MaskSpec& mask, bool self) {
  const mh::Dims dm = model.dims();
  Result r{std::vector<float>(size_t(n_q) * dm.d), std::vector<float>(size_t(dm.h) * n_q * n_k)};
  const float* kv = self ? xq.data() : xkv.data();
  EXPECT_EQ(model.forward(r.y.data(), r.attention.data(), xq.data(), kv, n_q, n_k, mask), "");
  return r;
}

// Hand-computed: d = 2, one head, identity projections, no bias, X = I₂.
// Scores = I·Iᵀ / √2, so row 0 is softmax([1/√2, 0]) = [e^0.7071 / (e^0.7071 + 1), …]
// = [2.0281150 / 3.0281150, 1 / 3.0281150] = [0.6697615, 0.3302385]; Y = A·V·I = A.
TEST(Attention, HandComputedTwoTokens) {
  mh::Config c;
  c.d_model = 2; c.num_heads = 1; c.bias = false;
  mh::AttentionModel model(c);
  std::vector<float> eye = {1, 0, 0, 1};
  std::vector<float> staged[mh::kNumWeights] = {eye, eye, eye, eye};
  ASSERT_EQ(model.replace_weights(staged, 0x0F), "");
  Result r = run(model, eye, {}, 2, 2, {}, true);
  const float expected[4] = {0.6697615f, 0.3302385f, 0.3302385f, 0.6697615f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(r.attention[i], expected[i], 1e-6);
    EXPECT_NEAR(r.y[i], expected[i], 1e-6);
  }
  // Causal: query 0 sees only key 0, so its row is [1, 0]; query 1 is unchanged.
  mh::MaskSpec causal;
  causal.causal = true;
  Result rc = run(model, eye, {}, 2, 2, causal, true);
  EXPECT_EQ(rc.attention[0], 1.0f);
  EXPECT_EQ(rc.attention[1], 0.0f);
  EXPECT_NEAR(rc.attention[2], 0.3302385f, 1e-6);
}

struct Shape {
  int d, h, h_kv, n_q, n_k;
  bool bias, causal, padding, self;
};

class AgainstReference : public ::testing::TestWithParam<Shape> {};

TEST_P(AgainstReference, MatchesFloat64) {
  const Shape s = GetParam();
  test::Pair p = test::make_pair(s.d, s.h, s.h_kv, s.bias, 1234 + s.n_q);
  std::mt19937 rng(99);
  auto xq = test::float_exact(size_t(s.n_q) * s.d, rng);
  auto xkv = s.self ? xq : test::float_exact(size_t(s.n_k) * s.d, rng);
  ref::Mask rm;
  rm.causal = s.causal;
  if (s.padding) {
    rm.key_padding.assign(s.n_k, 0);
    for (int j = 0; j < s.n_k; j += 3) rm.key_padding[j] = 1;
  }
  mh::MaskSpec mask;
  mask.causal = s.causal;
  mask.key_padding = s.padding ? rm.key_padding.data() : nullptr;
  std::vector<double> y_ref, a_ref;
  ref::forward(p.layer, xq, xkv, s.n_q, s.n_k, rm, y_ref, a_ref);
  Result r = run(p.model, ref::to_float(xq), ref::to_float(xkv), s.n_q, s.n_k, mask, s.self);
  EXPECT_LE(test::max_abs_diff(r.y, y_ref), 1e-5);
  EXPECT_LE(test::max_abs_diff(r.attention, a_ref), 1e-5);

  // Without returning weights the core takes its blocked path; it must give the same Y.
  std::vector<float> y_blocked(r.y.size());
  std::vector<float> xqf = ref::to_float(xq), xkvf = ref::to_float(xkv);
  ASSERT_EQ(p.model.forward(y_blocked.data(), nullptr, xqf.data(), s.self ? xqf.data() : xkvf.data(),
                            s.n_q, s.n_k, mask), "");
  EXPECT_LE(test::max_abs_diff(y_blocked, y_ref), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AgainstReference,
    ::testing::Values(Shape{8, 2, 0, 1, 1, true, false, false, true},
                      Shape{16, 4, 0, 5, 5, true, true, false, true},
                      Shape{16, 4, 2, 7, 7, false, false, true, true},   // grouped-query
                      Shape{16, 4, 1, 9, 9, true, true, true, true},     // multi-query
                      Shape{24, 3, 0, 4, 11, true, false, false, false},  // cross, n_q < n_k
                      Shape{24, 3, 0, 13, 6, true, true, true, false},   // cross, n_q > n_k
                      Shape{32, 4, 0, 150, 150, true, true, false, true},  // several query blocks
                      Shape{64, 8, 2, 130, 130, true, false, true, true}));

TEST(Attention, SelectedHeadsAndRowsEqualTheFullWeights) {
  test::Pair p = test::make_pair(32, 4, 2, true, 17);
  std::mt19937 rng(12);
  const int n = 150;
  auto x = ref::to_float(test::float_exact(size_t(n) * 32, rng));
  for (bool causal : {false, true}) {
    mh::MaskSpec mask;
    mask.causal = causal;
    Result full = run(p.model, x, {}, n, n, mask, true);
    const mh::AttentionSelection sel{1, 2, 60, 80};  // heads 1–2, rows 60–139: spans three blocks
    std::vector<float> y(size_t(n) * 32), part(sel.floats(n), -1.0f);
    ASSERT_EQ(p.model.forward(y.data(), part.data(), sel, x.data(), x.data(), n, n, mask), "");
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 80; ++r)
        for (int j = 0; j < n; ++j)
          ASSERT_EQ(part[(size_t(h) * 80 + r) * n + j], full.attention[(size_t(h + 1) * n + 60 + r) * n + j]);
    EXPECT_EQ(y, full.y);
  }
  std::vector<float> y(size_t(n) * 32), part(10 * n);
  EXPECT_NE(p.model.forward(y.data(), part.data(), mh::AttentionSelection{3, 2, 0, 5}, x.data(), x.data(), n, n, {})
                .find("heads 3 … 4 do not exist"), std::string::npos);
  EXPECT_NE(p.model.forward(y.data(), part.data(), mh::AttentionSelection{0, 1, 148, 5}, x.data(), x.data(), n, n, {})
                .find("rows 148 … 152 do not exist"), std::string::npos);
}

TEST(Attention, RowsSumToOneAndCausalUpperTriangleIsZero) {
  test::Pair p = test::make_pair(32, 4, 0, true, 7);
  std::mt19937 rng(3);
  const int n = 70;
  auto x = ref::to_float(test::float_exact(size_t(n) * 32, rng));
  mh::MaskSpec mask;
  mask.causal = true;
  Result r = run(p.model, x, {}, n, n, mask, true);
  for (int h = 0; h < 4; ++h)
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        const float a = r.attention[(size_t(h) * n + i) * n + j];
        if (j > i) EXPECT_EQ(a, 0.0f);
        EXPECT_GE(a, 0.0f);
        sum += a;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
}

TEST(Attention, AllKeysMaskedGivesZerosNotNaN) {
  test::Pair p = test::make_pair(16, 2, 0, true, 11);
  std::mt19937 rng(5);
  const int n = 4;
  auto x = ref::to_float(test::float_exact(size_t(n) * 16, rng));
  std::vector<uint8_t> blocked(n * n, 0);
  for (int j = 0; j < n; ++j) blocked[2 * n + j] = 1;  // query 2 may attend to nothing
  mh::MaskSpec mask;
  mask.blocked = blocked.data();
  Result r = run(p.model, x, {}, n, n, mask, true);
  for (float v : r.y) EXPECT_TRUE(std::isfinite(v));
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < n; ++j) EXPECT_EQ(r.attention[(size_t(h) * n + 2) * n + j], 0.0f);
  // With no head output, row 2 of Y is exactly the output bias.
  const float* bo = p.model.weight(mh::kBo);
  for (int c = 0; c < 16; ++c) EXPECT_EQ(r.y[2 * 16 + c], bo[c]);
  // The same through an all -inf additive mask and through key padding of every key.
  std::vector<float> additive(n * n, 0.0f);
  for (int j = 0; j < n; ++j) additive[2 * n + j] = -kInf;
  mh::MaskSpec add;
  add.additive = additive.data();
  Result ra = run(p.model, x, {}, n, n, add, true);
  EXPECT_EQ(ra.attention[2 * n], 0.0f);
  std::vector<uint8_t> padding(n, 1);
  mh::MaskSpec pad;
  pad.key_padding = padding.data();
  Result rp = run(p.model, x, {}, n, n, pad, true);
  for (float a : rp.attention) EXPECT_EQ(a, 0.0f);
}

TEST(Attention, AdditiveMaskMatchesReference) {
  test::Pair p = test::make_pair(16, 4, 0, true, 21);
  std::mt19937 rng(8);
  const int n = 6;
  auto x = test::float_exact(size_t(n) * 16, rng);
  ref::Mask rm;
  rm.additive = test::float_exact(size_t(n) * n, rng, 2.0);
  rm.additive[3] = -std::numeric_limits<double>::infinity();
  std::vector<float> additive = ref::to_float(rm.additive);
  mh::MaskSpec mask;
  mask.additive = additive.data();
  std::vector<double> y_ref, a_ref;
  ref::forward(p.layer, x, x, n, n, rm, y_ref, a_ref);
  Result r = run(p.model, ref::to_float(x), {}, n, n, mask, true);
  EXPECT_LE(test::max_abs_diff(r.y, y_ref), 1e-5);
  EXPECT_LE(test::max_abs_diff(r.attention, a_ref), 1e-5);
  EXPECT_EQ(r.attention[3], 0.0f);
}

TEST(Attention, HeadsAreIndependent) {
  // Changing head 1's slice of W_Q must leave head 0's attention untouched, and change head 1's.
  test::Pair p = test::make_pair(16, 2, 0, true, 31);
  std::mt19937 rng(2);
  const int n = 5;
  auto x = ref::to_float(test::float_exact(size_t(n) * 16, rng));
  Result before = run(p.model, x, {}, n, n, {}, true);
  std::vector<float> staged[mh::kNumWeights];
  staged[mh::kWq].assign(p.model.weight(mh::kWq), p.model.weight(mh::kWq) + 256);
  for (int r = 0; r < 16; ++r)
    for (int c = 8; c < 16; ++c) staged[mh::kWq][r * 16 + c] *= -3.0f;
  ASSERT_EQ(p.model.replace_weights(staged, 1u << mh::kWq), "");
  Result after = run(p.model, x, {}, n, n, {}, true);
  for (int i = 0; i < n * n; ++i) EXPECT_EQ(before.attention[i], after.attention[i]);
  double changed = 0;
  for (int i = n * n; i < 2 * n * n; ++i)
    changed = std::max(changed, double(std::abs(before.attention[i] - after.attention[i])));
  EXPECT_GT(changed, 1e-3);
}

TEST(Attention, GroupedQueryEqualsMultiHeadWithSharedKeyValueWeights) {
  // 4 query heads sharing 2 K/V heads equal 4 ordinary heads whose K/V weights repeat per group.
  test::Pair gqa = test::make_pair(16, 4, 2, true, 41);
  mh::Config c = gqa.config;
  c.num_kv_heads = 4;
  mh::AttentionModel mha(c);
  const int d = 16, d_k = 4;
  std::vector<float> staged[mh::kNumWeights];
  for (int which : {mh::kWq, mh::kWo, mh::kBq, mh::kBo})
    staged[which].assign(gqa.model.weight(which), gqa.model.weight(which) + mha.weight_size(which));
  for (int which : {mh::kWk, mh::kWv}) {
    staged[which].resize(d * d);
    for (int r = 0; r < d; ++r)
      for (int head = 0; head < 4; ++head)
        for (int c2 = 0; c2 < d_k; ++c2)
          staged[which][r * d + head * d_k + c2] = gqa.model.weight(which)[r * 8 + (head / 2) * d_k + c2];
  }
  for (int which : {mh::kBk, mh::kBv}) {
    staged[which].resize(d);
    for (int head = 0; head < 4; ++head)
      for (int c2 = 0; c2 < d_k; ++c2)
        staged[which][head * d_k + c2] = gqa.model.weight(which)[(head / 2) * d_k + c2];
  }
  ASSERT_EQ(mha.replace_weights(staged, 0xFF), "");
  std::mt19937 rng(4);
  auto x = ref::to_float(test::float_exact(size_t(9) * d, rng));
  Result a = run(gqa.model, x, {}, 9, 9, {}, true);
  Result b = run(mha, x, {}, 9, 9, {}, true);
  for (size_t i = 0; i < a.y.size(); ++i) EXPECT_NEAR(a.y[i], b.y[i], 1e-6);
  for (size_t i = 0; i < a.attention.size(); ++i) EXPECT_NEAR(a.attention[i], b.attention[i], 1e-6);
}

TEST(Attention, ExplicitKvHeadsEqualToHeadsIsPlainMultiHead) {
  test::Pair plain = test::make_pair(16, 4, 0, true, 51);
  test::Pair explicit_kv = test::make_pair(16, 4, 4, true, 51);
  std::mt19937 rng(6);
  auto x = ref::to_float(test::float_exact(size_t(5) * 16, rng));
  Result a = run(plain.model, x, {}, 5, 5, {}, true);
  Result b = run(explicit_kv.model, x, {}, 5, 5, {}, true);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.attention, b.attention);
}

TEST(Attention, CrossAttentionWithSameInputsEqualsSelfAttention) {
  test::Pair p = test::make_pair(16, 4, 0, true, 61);
  std::mt19937 rng(7);
  auto x = ref::to_float(test::float_exact(size_t(6) * 16, rng));
  auto copy = x;
  Result self = run(p.model, x, {}, 6, 6, {}, true);
  Result cross = run(p.model, x, copy, 6, 6, {}, false);
  EXPECT_EQ(self.y, cross.y);
  EXPECT_EQ(self.attention, cross.attention);
}

TEST(Attention, SoftmaxStaysExactWithHugeScores) {
  // Scores of ±1e4: naive exp overflows to inf and gives NaN; subtracting the max does not.
  std::vector<float> s = {1e4f, 1e4f - 1.0f, -1e4f, 0.0f};
  mh::softmax_forward(s.data(), 1, 4);
  const double e1 = std::exp(-1.0);
  EXPECT_NEAR(s[0], 1.0 / (1.0 + e1), 1e-6);
  EXPECT_NEAR(s[1], e1 / (1.0 + e1), 1e-6);
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[3], 0.0f);
}

TEST(Attention, TemperatureScaleMatchesReference) {
  test::Pair p = test::make_pair(16, 2, 0, false, 71, /*scale=*/0.9);
  std::mt19937 rng(9);
  auto x = test::float_exact(size_t(5) * 16, rng);
  std::vector<double> y_ref, a_ref;
  ref::forward(p.layer, x, x, 5, 5, {}, y_ref, a_ref);
  Result r = run(p.model, ref::to_float(x), {}, 5, 5, {}, true);
  EXPECT_LE(test::max_abs_diff(r.attention, a_ref), 1e-5);
}

TEST(Attention, HeadTraceAgreesWithForward) {
  test::Pair p = test::make_pair(16, 4, 2, true, 81);
  std::mt19937 rng(10);
  const int n = 6;
  auto x = ref::to_float(test::float_exact(size_t(n) * 16, rng));
  mh::MaskSpec mask;
  mask.causal = true;
  Result r = run(p.model, x, {}, n, n, mask, true);
  mh::HeadTrace t;
  mh::head_trace_forward(t, 3, x.data(), x.data(), n, n, p.config, p.model.weights(), mask);
  const float scale = 1.0f / 2.0f;  // d_k = 4
  for (int i = 0; i < n * n; ++i) {
    EXPECT_NEAR(t.scaled[i], t.scores[i] * scale, 1e-6);
    EXPECT_NEAR(t.attention[i], r.attention[3 * n * n + i], 1e-6);
    if (i % n > i / n) EXPECT_EQ(t.masked[i], -kInf);
  }
  const auto& concat = p.model.last_concat();
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(t.head_output[i * 4 + c], concat[i * 16 + 12 + c], 1e-6);
}

TEST(Validation, Float32OverflowIsAnErrorNotNaN) {
  test::Pair p = test::make_pair(8, 2, 0, true, 93);
  std::vector<float> x(3 * 8, 1e30f), y(3 * 8), attention(2 * 9);
  // Q = X·W_Q overflows float32: the call reports it instead of returning inf/NaN.
  std::string error = p.model.forward(y.data(), attention.data(), x.data(), x.data(), 3, 3, {});
  EXPECT_NE(error.find("float32 overflow"), std::string::npos) << error;
  // Scores overflow (Q, K finite but their dot product is not).
  std::fill(x.begin(), x.end(), 1e20f);
  error = p.model.forward(y.data(), nullptr, x.data(), x.data(), 3, 3, {});
  EXPECT_NE(error.find("float32 overflow"), std::string::npos) << error;
  // The layer keeps working.
  std::fill(x.begin(), x.end(), 0.5f);
  EXPECT_EQ(p.model.forward(y.data(), attention.data(), x.data(), x.data(), 3, 3, {}), "");
  for (float v : y) EXPECT_TRUE(std::isfinite(v));
  std::vector<float> row = {1.0f, kInf, 0.0f};
  EXPECT_FALSE(mh::softmax_forward(row.data(), 1, 3));
}

TEST(Validation, ConfigErrorsSayWhatToFix) {
  mh::Config c;
  c.d_model = 10; c.num_heads = 4;
  EXPECT_NE(mh::validate_config(c).find("divisible by heads"), std::string::npos);
  c.d_model = 16; c.num_heads = 4; c.num_kv_heads = 3;
  EXPECT_NE(mh::validate_config(c).find("divisible by kvHeads"), std::string::npos);
  c.num_kv_heads = 8;
  EXPECT_NE(mh::validate_config(c).find("kvHeads must be"), std::string::npos);
  c.num_kv_heads = 0; c.d_model = 0;
  EXPECT_NE(mh::validate_config(c).find("dModel must be"), std::string::npos);
  c.d_model = 16; c.scale = -1;
  EXPECT_NE(mh::validate_config(c).find("scale"), std::string::npos);
}

TEST(Validation, ForwardErrors) {
  test::Pair p = test::make_pair(8, 2, 0, true, 91);
  std::vector<float> x(3 * 8, 0.5f), y(3 * 8);
  EXPECT_NE(p.model.forward(y.data(), nullptr, x.data(), x.data(), 0, 0, {}).find("from 1 to"),
            std::string::npos);
  x[9] = std::nanf("");
  const std::string nan_error = p.model.forward(y.data(), nullptr, x.data(), x.data(), 3, 3, {});
  EXPECT_NE(nan_error.find("NaN at index 9 (row 1, column 1)"), std::string::npos) << nan_error;
  x[9] = kInf;
  EXPECT_NE(p.model.forward(y.data(), nullptr, x.data(), x.data(), 3, 3, {}).find("infinity"),
            std::string::npos);
  x[9] = 0;
  std::vector<float> additive(9, 0.0f);
  additive[4] = kInf;
  mh::MaskSpec mask;
  mask.additive = additive.data();
  EXPECT_NE(p.model.forward(y.data(), nullptr, x.data(), x.data(), 3, 3, mask).find("+Infinity"),
            std::string::npos);
  EXPECT_NE(mh::validate_shape(p.config, 20000, 20000, 0).find("from 1 to 16384"),
            std::string::npos);
  const auto all = mh::AttentionSelection::all(2, 16384);
  EXPECT_NE(mh::validate_shape(p.config, 16384, 16384, all.floats(16384)).find("budget"), std::string::npos);
  EXPECT_EQ(mh::validate_shape(p.config, 16384, 16384, 0), "");
  // One head and 1024 rows of 16384 × 16384 fit: 64 MiB.
  EXPECT_EQ(mh::validate_shape(p.config, 16384, 16384, mh::AttentionSelection{1, 1, 0, 1024}.floats(16384)), "");
}

}  // namespace

// Backward passes checked against central finite differences: each operation on its own (with the
// scalar loss Σ r ⊙ output for a random r), then the whole decoder on its cross-entropy loss.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "core/attention.h"
#include "nn/decoder.h"
#include "interpret/head_metrics.h"
#include "interpret/rollout.h"
#include "core/init.h"
#include "nn/layers.h"

namespace {

std::vector<float> randn(size_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Checks analytic gradient `grad` of loss() with respect to `values` against central differences
// (the loss is evaluated in double from float32 forward passes, so the step is not tiny).
void expect_gradient(std::vector<float>& values, const std::vector<float>& grad,
                     const std::function<double()>& loss, const char* what, float step = 1e-2f,
                     double tolerance = 2e-2) {
  ASSERT_EQ(values.size(), grad.size());
  double worst = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const float keep = values[i];
    values[i] = keep + step;
    const double up = loss();
    values[i] = keep - step;
    const double down = loss();
    values[i] = keep;
    const double numeric = (up - down) / (2.0 * step);
    const double error = std::fabs(numeric - grad[i]) / std::max(1.0, std::fabs(numeric));
    worst = std::max(worst, error);
    ASSERT_LT(error, tolerance) << what << "[" << i << "]: numeric " << numeric << ", analytic " << grad[i];
  }
  ::testing::Test::RecordProperty(what, std::to_string(worst));
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double{a[i]} * b[i];
  return s;
}

TEST(Backward, Linear) {
  std::mt19937 rng(1);
  const int n = 5, di = 4, dout = 3;
  auto x = randn(n * di, rng), w = randn(di * dout, rng), b = randn(dout, rng), r = randn(n * dout, rng);
  std::vector<float> y(n * dout), dx(n * di, 0.0f), dw(di * dout, 0.0f), db(dout, 0.0f);
  auto loss = [&] { mh::linear_forward(y.data(), x.data(), w.data(), b.data(), n, di, dout); return dot(y, r); };
  mh::linear_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), n, di, dout);
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dw");
  expect_gradient(b, db, loss, "db");
}

TEST(Backward, MaskedSoftmaxAttention) {
  // scores → causal mask → softmax → A·V, with d_q, d_k, d_v through all three backward functions.
  std::mt19937 rng(2);
  const int n = 6, dk = 4;
  const float scale = 0.5f;
  auto q = randn(n * dk, rng), k = randn(n * dk, rng), v = randn(n * dk, rng), r = randn(n * dk, rng);
  mh::MaskSpec mask;
  mask.causal = true;
  std::vector<float> a(n * n), out(n * dk);
  auto loss = [&] {
    mh::attention_scores_forward(a.data(), q.data(), dk, k.data(), dk, n, n, dk, scale);
    mh::mask_forward(a.data(), 0, n, n, mask);
    mh::softmax_forward(a.data(), n, n);
    mh::attention_values_forward(out.data(), dk, a.data(), v.data(), dk, n, n, dk);
    return dot(out, r);
  };
  loss();
  std::vector<float> da(n * n), dq(n * dk, 0.0f), dkey(n * dk, 0.0f), dv(n * dk, 0.0f);
  mh::attention_values_backward(da.data(), dv.data(), dk, r.data(), dk, a.data(), v.data(), n, n, dk);
  mh::softmax_backward(da.data(), da.data(), a.data(), n, n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) EXPECT_EQ(da[i * n + j], 0.0f) << "blocked score got a gradient";
  mh::attention_scores_backward(dq.data(), dk, dkey.data(), dk, da.data(), q.data(), k.data(), n, n, dk, scale);
  expect_gradient(q, dq, loss, "dq");
  expect_gradient(k, dkey, loss, "dk");
  expect_gradient(v, dv, loss, "dv");
}

TEST(Backward, LayerNormGeluEmbedding) {
  std::mt19937 rng(3);
  const int n = 4, d = 6;
  auto x = randn(n * d, rng, 2.0f), g = randn(d, rng), b = randn(d, rng), r = randn(n * d, rng);
  std::vector<float> y(n * d), mean(n), rstd(n), act(n * d);
  auto loss = [&] {
    mh::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), n, d);
    mh::gelu_forward(act.data(), y.data(), n * d);
    return dot(act, r);
  };
  loss();
  std::vector<float> dy(n * d, 0.0f), dx(n * d, 0.0f), dg(d, 0.0f), db(d, 0.0f);
  mh::gelu_backward(dy.data(), y.data(), r.data(), n * d);
  mh::layernorm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), mean.data(), rstd.data(), g.data(), n, d);
  expect_gradient(x, dx, loss, "dx", 1e-2f, 3e-2);
  expect_gradient(g, dg, loss, "dgamma");
  expect_gradient(b, db, loss, "dbeta");

  const int vocab = 5;
  auto e = randn(vocab * d, rng);
  const std::vector<int32_t> tokens{3, 1, 3, 0};
  std::vector<float> emb(n * d), de(vocab * d, 0.0f);
  auto loss_e = [&] { mh::embedding_forward(emb.data(), tokens.data(), e.data(), nullptr, n, d); return dot(emb, r); };
  mh::embedding_backward(de.data(), r.data(), tokens.data(), n, d);
  expect_gradient(e, de, loss_e, "dembedding");
}

TEST(Backward, CrossEntropyMatchesLogSoftmax) {
  std::mt19937 rng(4);
  const int n = 3, vocab = 7;
  auto logits = randn(n * vocab, rng, 3.0f);
  const std::vector<int32_t> targets{6, 0, 2};
  std::vector<float> work;
  auto loss = [&] { work = logits; return mh::cross_entropy_forward(work.data(), nullptr, targets.data(), n, vocab); };
  // Independent float64 value: mean of log Σ exp(z) − z_target.
  double expected = 0;
  for (int t = 0; t < n; ++t) {
    double sum = 0;
    for (int j = 0; j < vocab; ++j) sum += std::exp(double{logits[t * vocab + j]});
    expected += (std::log(sum) - logits[t * vocab + targets[t]]) / n;
  }
  EXPECT_NEAR(loss(), expected, 1e-5);
  mh::cross_entropy_backward(work.data(), targets.data(), n, vocab);
  const std::vector<float> grad = work;
  expect_gradient(logits, grad, loss, "dlogits", 1e-3f);
}

TEST(Backward, CrossEntropySkipsUnscoredRows) {
  std::mt19937 rng(14);
  const int n = 4, vocab = 5;
  auto logits = randn(n * vocab, rng, 2.0f);
  const std::vector<int32_t> targets{-1, 3, -1, 0};  // a toy task's prompt rows are not scored
  std::vector<float> work, losses(n);
  auto loss = [&] { work = logits; return mh::cross_entropy_forward(work.data(), losses.data(), targets.data(), n, vocab); };
  double expected = 0;  // float64: mean over the two scored rows only
  for (int t : {1, 3}) {
    double sum = 0;
    for (int j = 0; j < vocab; ++j) sum += std::exp(double{logits[t * vocab + j]});
    expected += (std::log(sum) - logits[t * vocab + targets[t]]) / 2;
  }
  EXPECT_NEAR(loss(), expected, 1e-5);
  EXPECT_EQ(losses[0], 0.0f);
  EXPECT_EQ(losses[2], 0.0f);
  EXPECT_EQ(mh::scored_targets(targets.data(), n), 2);
  mh::cross_entropy_backward(work.data(), targets.data(), n, vocab);
  const std::vector<float> grad = work;
  for (int j = 0; j < vocab; ++j) EXPECT_EQ(grad[j], 0.0f);  // the unscored row gets no gradient
  expect_gradient(logits, grad, loss, "dlogits (masked)", 1e-3f);
  const std::vector<int32_t> none{-1, -1, -1, -1};
  work = logits;
  EXPECT_EQ(mh::cross_entropy_forward(work.data(), nullptr, none.data(), n, vocab), 0.0);
}

// The whole decoder: every parameter of a tiny model, attention-only and with an MLP; and the
// toy-task variant (numeric features, no norm before attention, unscored targets).
void check_decoder(int d_ff, int features = 0, bool attention_norm = true) {
  mh::DecoderConfig c;
  c.vocab = 11; c.d_model = 8; c.num_heads = 2; c.layers = 2; c.context = 5; c.d_ff = d_ff;
  c.features = features; c.attention_norm = attention_norm;
  ASSERT_EQ(mh::validate_decoder_config(c), "");
  mh::Decoder model(c);
  model.init(5);
  // Larger biases and LN parameters than init so their gradients are not trivially symmetric.
  std::mt19937 rng(6);
  for (float& p : model.params()) p += std::normal_distribution<float>(0.0f, 0.3f)(rng);
  const int B = 2, T = 5;
  const std::vector<int32_t> tokens{1, 4, 4, 9, 2, 0, 3, 10, 3, 7};
  std::vector<int32_t> targets{4, 4, 9, 2, 1, 3, 10, 3, 7, 5};
  if (features > 0) targets[0] = targets[1] = targets[6] = -1;
  const std::vector<float> feature_values = randn(B * T * features, rng);
  const float* f = features > 0 ? feature_values.data() : nullptr;
  mh::DecoderCache cache;
  model.forward(cache, tokens.data(), targets.data(), B, T, f);
  std::vector<float> grads(model.layout().total, 0.0f);
  model.backward(grads.data(), cache, tokens.data(), targets.data(), f);
  auto loss = [&] { return model.forward(cache, tokens.data(), targets.data(), B, T, f); };
  expect_gradient(model.params(), grads, loss,
                  features ? "toy-task decoder" : d_ff ? "decoder with MLP" : "attention-only decoder",
                  2e-3f, 2e-2);
}
TEST(Backward, AttentionOnlyDecoder) { check_decoder(0); }
TEST(Backward, DecoderWithMlp) { check_decoder(12); }
TEST(Backward, DecoderWithFeaturesNoNormAndUnscoredTargets) { check_decoder(0, 2, false); }

TEST(Decoder, InferenceMatchesTrainingForward) {
  // Decoder::run (through multihead_attention_forward) and the training forward are separate code
  // paths over the same parameters: same probabilities, same attention.
  mh::DecoderConfig c;
  c.vocab = 13; c.d_model = 16; c.num_heads = 4; c.layers = 2; c.context = 9; c.d_ff = 8;
  mh::Decoder model(c);
  model.init(3);
  const std::vector<int32_t> tokens{1, 5, 12, 5, 0, 7, 7, 2, 3}, targets{5, 12, 5, 0, 7, 7, 2, 3, 1};
  mh::DecoderCache cache;
  model.forward(cache, tokens.data(), targets.data(), 1, 9);
  std::vector<float> attention(2 * 4 * 81), probs(9 * 13);
  ASSERT_EQ(model.run(attention.data(), probs.data(), tokens.data(), 9), "");
  for (size_t i = 0; i < probs.size(); ++i) EXPECT_NEAR(probs[i], cache.probs[i], 1e-5);
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 4 * 81; ++i) EXPECT_NEAR(attention[l * 324 + i], cache.layers[l].attention[i], 1e-5);

  // The toy-task variant: numeric features in, no norm before attention.
  c.features = 2;
  c.attention_norm = false;
  mh::Decoder toy(c);
  toy.init(4);
  std::vector<float> features(9 * 2);
  for (size_t i = 0; i < features.size(); ++i) features[i] = 0.1f * static_cast<float>(i % 7);
  toy.forward(cache, tokens.data(), targets.data(), 1, 9, features.data());
  ASSERT_EQ(toy.run(attention.data(), probs.data(), tokens.data(), 9, nullptr, features.data()), "");
  for (size_t i = 0; i < probs.size(); ++i) EXPECT_NEAR(probs[i], cache.probs[i], 1e-5);
}

TEST(Decoder, AblatingEveryHeadLeavesOnlyTheDirectPath) {
  // With all heads off, a 1-layer attention-only model's prediction depends on the current token
  // only (embedding + position → LN → unembedding): equal tokens at equal positions agree.
  mh::DecoderConfig c;
  c.vocab = 9; c.d_model = 8; c.num_heads = 2; c.layers = 1; c.context = 4;
  mh::Decoder model(c);
  model.init(1);
  const std::vector<int32_t> a{1, 2, 3, 4}, b{5, 6, 7, 4};
  const std::vector<uint8_t> off{0, 0};
  std::vector<float> pa(4 * 9), pb(4 * 9), on(4 * 9);
  ASSERT_EQ(model.run(nullptr, pa.data(), a.data(), 4, off.data()), "");
  ASSERT_EQ(model.run(nullptr, pb.data(), b.data(), 4, off.data()), "");
  ASSERT_EQ(model.run(nullptr, on.data(), b.data(), 4), "");
  double off_diff = 0, on_diff = 0;
  for (int j = 0; j < 9; ++j) {
    off_diff += std::fabs(pa[3 * 9 + j] - pb[3 * 9 + j]);
    on_diff += std::fabs(pa[3 * 9 + j] - on[3 * 9 + j]);
  }
  EXPECT_LT(off_diff, 1e-5);  // ablated: context has no effect
  EXPECT_GT(on_diff, 1e-3);   // with heads on, the earlier tokens change the prediction
}

TEST(Decoder, RolloutRowsSumToOne) {
  const int L = 2, H = 2, n = 3;
  std::vector<float> att(L * H * n * n, 0.0f), roll(n * n);
  for (int lh = 0; lh < L * H; ++lh)
    for (int i = 0; i < n; ++i) att[lh * 9 + i * 3 + 0] = 1.0f;  // every head attends to token 0
  mh::attention_rollout(roll.data(), att.data(), L, H, n);
  // One layer: ½ e0 + ½ e_i; two layers: row i = ¼ e_i + ¾ e0 (i > 0), row 0 = e0 (hand-computed).
  EXPECT_NEAR(roll[0], 1.0f, 1e-6);
  EXPECT_NEAR(roll[1 * 3 + 0], 0.75f, 1e-6);
  EXPECT_NEAR(roll[1 * 3 + 1], 0.25f, 1e-6);
  EXPECT_NEAR(roll[2 * 3 + 2], 0.25f, 1e-6);
}

}  // namespace

namespace {

// The smoke training CI runs (the full run is scripts/train.sh): a tiny 2-layer attention-only model
// on random tokens repeated twice, where only copying predicts the second half. The loss must fall
// to near the floor of what is unpredictable, and the heads must become an induction circuit.
TEST(TrainingSmoke, LossFallsAndInductionHeadsForm) {
  mh::DecoderConfig c;
  c.vocab = 24; c.d_model = 32; c.num_heads = 2; c.layers = 2; c.context = 16;
  mh::Decoder model(c);
  model.init(1);
  const int B = 16, T = 16, half = 8;
  uint64_t state = 12345;
  auto next = [&state]() { return mh::splitmix64(state); };
  std::vector<int32_t> tokens(B * T), targets(B * T);
  std::vector<float> g(model.layout().total), m(g.size()), v(g.size());
  mh::DecoderCache cache;
  mh::AdamSettings adam;
  adam.lr = 1e-2f;
  double first_loss = 0, last_loss = 0;
  for (int step = 1; step <= 400; ++step) {
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) tokens[b * T + t] = t < half ? 1 + static_cast<int32_t>(next() % (c.vocab - 1)) : tokens[b * T + t - half];
      for (int t = 0; t < T; ++t) targets[b * T + t] = t + 1 < T ? tokens[b * T + t + 1] : 0;
    }
    const double loss = model.forward(cache, tokens.data(), targets.data(), B, T);
    std::fill(g.begin(), g.end(), 0.0f);
    model.backward(g.data(), cache, tokens.data(), targets.data());
    mh::adam_update(model.params().data(), m.data(), v.data(), g.data(), static_cast<int64_t>(g.size()), step, adam);
    if (step == 1) first_loss = loss;
    last_loss = loss;
  }
  // Unpredictable: the first half's 7 next tokens, ln 23 nats each, over 16 positions ≈ 1.37.
  const double floor = 7 * std::log(23.0) / 16;
  EXPECT_GT(first_loss, 2.8);
  EXPECT_LT(last_loss, floor + 0.25) << "first loss " << first_loss;
  std::vector<int32_t> text(64);
  for (int32_t& t : text) t = 1 + static_cast<int32_t>(next() % (c.vocab - 1));
  float best_induction = 0;
  for (const mh::HeadScores& s : mh::measure_heads(model, text.data(), 64, 16, 8, 3))
    best_induction = std::max(best_induction, s.induction);
  EXPECT_GT(best_induction, 0.5f);
}

}  // namespace

// Encoder-decoders (T5, BART, Marian) against transformers 5.17: the fixtures' attentions of all
// three kinds, hidden states and logits under teacher forcing, and greedy generation with the
// decoder's caches (tests/fixtures/hf/{t5,bart,marian}, expected.safetensors).
#include <gtest/gtest.h>

#include "hf_fixtures.h"
#include "io/hf_config.h"
#include "core/parallel.h"
#include "interpret/encoder_decoder_lens.h"
#include "nn/encoder_decoder.h"

namespace {

struct Case {
  const char* model;
  std::vector<int> eos;
  int forced_eos;  // generation_config.json's, as loadPretrained reads them in JS
  // T5's scores are not scaled by 1/√d_kv, so float32's rounding in q and k reaches its attentions
  // √d_kv times larger (2.0e-5 seen natively in a cross-attention; BART, Marian: under 7e-6).
  double attention_tolerance;
};

class EncoderDecoder : public ::testing::TestWithParam<Case> {};

// Largest |a − b| over the largest |b|, where b is a tensor of activations (scale-free).
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return 1e9;
  return max_diff(got.data(), want.data(), got.size()) / std::max(max_abs(want), 1e-30);
}

TEST_P(EncoderDecoder, MatchesTransformersOnEveryCase) {
  const Case& param = GetParam();
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load(param.model, t), "");
  mh::EncoderDecoderContext ctx(*t);
  Expected expected(param.model);
  int cases = 0;
  for (int k = 0; expected.find("case" + std::to_string(k) + ".input_ids"); ++k, ++cases) {
    const std::string key = "case" + std::to_string(k) + ".";
    const std::vector<int32_t> source = expected.get<int32_t>(key + "input_ids");
    const std::vector<int32_t> target = expected.get<int32_t>(key + "decoder_input_ids");
    mh::Seq2SeqRequest request;
    request.hidden_states = true;
    mh::Seq2SeqResult enc, dec;
    ASSERT_EQ(ctx.encode(enc, source.data(), static_cast<int>(source.size()), request), "") << key;
    ASSERT_EQ(ctx.decode(dec, target.data(), static_cast<int>(target.size()), request, false), "") << key;
    auto attentions = [&](const std::vector<float>& got, const char* name) {
      const std::vector<float> want = expected.get<float>(key + name);
      ASSERT_EQ(got.size(), want.size()) << key << name;
      EXPECT_LT(max_diff(got.data(), want.data(), got.size()), param.attention_tolerance) << key << name;
    };
    attentions(enc.self_attentions, "encoder_attentions");
    attentions(dec.self_attentions, "decoder_attentions");
    attentions(dec.cross_attentions, "cross_attentions");
    EXPECT_LT(relative_error(enc.hidden_states, expected.get<float>(key + "encoder_hidden_states")), 2e-5) << key;
    EXPECT_LT(relative_error(dec.hidden_states, expected.get<float>(key + "decoder_hidden_states")), 2e-5) << key;
    EXPECT_LT(relative_error(dec.logits, expected.get<float>(key + "logits")), 2e-5) << key;

    // Greedy, 10 new tokens with min_new_tokens 10: one decoding step a token, over the caches.
    const std::vector<int32_t> generated = expected.get<int32_t>(key + "generated");
    mh::GenerationRules rules;
    rules.eos = param.eos;
    rules.forced_eos = param.forced_eos;
    rules.min_new_tokens = rules.max_new_tokens = 10;
    std::vector<int32_t> ids = {generated[0]};
    mh::Seq2SeqRequest step;
    step.attentions = false;
    step.last_row_only = true;
    for (int i = 0; i < rules.max_new_tokens; ++i) {
      mh::Seq2SeqResult out;
      ASSERT_EQ(ctx.decode(out, &ids.back(), 1, step, i > 0), "") << key << " step " << i;
      ids.push_back(mh::next_token(out.logits.data(), t->config().vocab, ids, rules));
    }
    EXPECT_EQ(ids, generated) << key;
  }
  EXPECT_EQ(cases, 4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EncoderDecoder,
                         ::testing::Values(Case{"t5", {1}, -1, 5e-5}, Case{"bart", {2}, 2, 2e-5}, Case{"marian", {0}, 0, 2e-5}),
                         [](const auto& info) { return std::string(info.param.model); });

TEST(EncoderDecoderHooks, CapturesAreTheRunsOwnNumbersUnderTheirNames) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("t5", t), "");
  const mh::TransformerConfig& c = t->config();
  Expected expected("t5");
  const std::vector<int32_t> source = expected.get<int32_t>("case1.input_ids");
  const std::vector<int32_t> target = expected.get<int32_t>("case1.decoder_input_ids");
  const int n = static_cast<int>(source.size()), m = static_cast<int>(target.size());
  std::vector<std::string> names;
  for (const auto& h : mh::seq2seq_hook_names(c)) names.push_back(h.name);
  EXPECT_EQ(names.front(), "encoder.blocks.0.hook_resid_pre");
  EXPECT_NE(std::find(names.begin(), names.end(), "decoder.blocks.1.cross_attn.hook_pattern"), names.end());
  EXPECT_EQ(names.back(), "decoder.ln_final.hook_normalized");
  EXPECT_EQ(names.size(), size_t{2 * 6 + 1 + 2 * 9 + 1});
  // Without the attentions asked for: the captures alone.
  std::vector<uint8_t> flags(static_cast<size_t>(mh::kSeq2SeqHookKinds) * (c.layers + 2), 0);
  const int resid = mh::seq2seq_hook_id(mh::Seq2SeqHook::kResidPost, 0), cross = mh::seq2seq_hook_id(mh::Seq2SeqHook::kCrossPattern, 1);
  const int final_norm = mh::seq2seq_hook_id(mh::Seq2SeqHook::kLnFinal, -1);
  flags[resid] = flags[cross] = flags[final_norm] = 1;
  mh::Seq2SeqRequest request;
  request.attentions = false;
  request.capture = flags.data();
  request.capture_count = static_cast<int>(flags.size());
  mh::EncoderDecoderContext ctx(*t);
  mh::Seq2SeqResult enc, dec;
  ASSERT_EQ(ctx.encode(enc, source.data(), n, request), "");
  ASSERT_EQ(ctx.decode(dec, target.data(), m, request, false), "");
  const std::vector<float> hidden = expected.get<float>("case1.encoder_hidden_states");  // (layers + 1) × n × d
  ASSERT_EQ(enc.captured_shapes[resid], (std::vector<int>{n, c.d_model}));
  EXPECT_LT(max_diff(enc.captured[resid].data(), hidden.data() + n * c.d_model, size_t(n) * c.d_model), 2e-5 * max_abs(hidden));
  EXPECT_EQ(enc.captured[final_norm], enc.last_hidden_state);
  const std::vector<float> attentions = expected.get<float>("case1.cross_attentions");  // layers × heads × m × n
  ASSERT_EQ(dec.captured_shapes[cross], (std::vector<int>{c.heads, m, n}));
  EXPECT_LT(max_diff(dec.captured[cross].data(), attentions.data() + size_t(c.heads) * m * n, size_t(c.heads) * m * n), 5e-5);
  EXPECT_TRUE(dec.cross_attentions.empty());
}

// The parts of T5's decoder (embeddings, self- and cross-attention heads, MLPs) sum, through the
// frozen final norm, to transformers' own logit difference; the lens's last stream is
// transformers' prediction.
TEST(EncoderDecoderLens, T5AttributionSumsToTransformersLogitDifference) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("t5", t), "");
  const mh::TransformerConfig& c = t->config();
  Expected expected("t5");
  const std::vector<int32_t> source = expected.get<int32_t>("case1.input_ids");
  const std::vector<int32_t> target = expected.get<int32_t>("case1.decoder_input_ids");
  const std::vector<float> logits = expected.get<float>("case1.logits");  // m × vocab
  const int n = static_cast<int>(source.size()), m = static_cast<int>(target.size());
  mh::EncoderDecoderContext ctx(*t);
  mh::Seq2SeqResult enc;
  mh::Seq2SeqRequest request;
  request.attentions = false;
  ASSERT_EQ(ctx.encode(enc, source.data(), n, request), "");
  for (int p : {0, m / 2, m - 1}) {
    const float* row = logits.data() + int64_t{p} * c.vocab;
    const int top = static_cast<int>(std::max_element(row, row + c.vocab) - row);
    const int second = top == 0 ? 1 : 0;
    mh::LogitAttribution a;
    ASSERT_EQ(mh::seq2seq_attribution(ctx, a, target.data(), m, {p, top, second}), "");
    ASSERT_EQ(a.cross_heads.size(), size_t(c.decoder_layers) * c.heads);
    const double want = double(row[top]) - row[second];
    EXPECT_NEAR(a.total + a.norm_bias, want, 1e-4 * std::max(1.0, std::abs(want)));
    EXPECT_NEAR(a.logit_difference, want, 1e-4 * std::max(1.0, std::abs(want)));
    mh::LogitLens lens;
    const int32_t at = p;
    ASSERT_EQ(mh::seq2seq_logit_lens(ctx, lens, target.data(), m, &at, 1, 3, &top, 1), "");
    ASSERT_EQ(lens.streams, c.decoder_layers + 1);
    EXPECT_EQ(lens.top_ids[int64_t{c.decoder_layers} * 3], top);
    EXPECT_EQ(lens.target_ranks[c.decoder_layers], 0);
  }
}

TEST(EncoderDecoderLens, PostNormDecodersRefuseAttributionAndStillRun) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("bart", t), "");
  mh::EncoderDecoderContext ctx(*t);
  const std::vector<int32_t> source{0, 5, 2}, target{2, 5, 7};
  mh::Seq2SeqResult enc, dec;
  ASSERT_EQ(ctx.encode(enc, source.data(), 3, mh::Seq2SeqRequest()), "");
  mh::LogitAttribution a;
  const std::string error = mh::seq2seq_attribution(ctx, a, target.data(), 3, {2, 5, -1});
  EXPECT_NE(error.find("pre-norm"), std::string::npos) << error;
  mh::LogitLens lens;
  const int32_t at = 9;
  EXPECT_NE(mh::seq2seq_logit_lens(ctx, lens, target.data(), 3, &at, 1, 3, nullptr, 0).find("decoder positions"), std::string::npos);
  ASSERT_EQ(ctx.decode(dec, target.data(), 3, mh::Seq2SeqRequest(), false), "");
  EXPECT_EQ(dec.logits.size(), size_t(3) * t->config().vocab);
}

TEST(EncoderDecoderThreads, ThreeThreadsGiveOneThreadsBits) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("t5", t), "");
  Expected expected("t5");
  const std::vector<int32_t> source = expected.get<int32_t>("case2.input_ids");
  const std::vector<int32_t> target = expected.get<int32_t>("case2.decoder_input_ids");
  auto run = [&](int threads) {
    mh::set_thread_count(threads);
    mh::EncoderDecoderContext ctx(*t);
    mh::Seq2SeqRequest request;
    mh::Seq2SeqResult enc, dec;
    EXPECT_EQ(ctx.encode(enc, source.data(), static_cast<int>(source.size()), request), "");
    EXPECT_EQ(ctx.decode(dec, target.data(), static_cast<int>(target.size()), request, false), "");
    mh::set_thread_count(1);
    return std::vector<std::vector<float>>{enc.self_attentions, dec.self_attentions, dec.cross_attentions, dec.logits};
  };
  EXPECT_EQ(run(3), run(1));
}

TEST(EncoderDecoderErrors, AnUnsupportedFeedForwardIsNamed) {
  std::vector<uint8_t> bytes = read_bytes(fixture("t5", "config.json"));
  std::string config(bytes.begin(), bytes.end());
  config.replace(config.find("gated-gelu"), 10, "gated-tanh");
  mh::TransformerConfig c;
  const std::string error = mh::read_hf_config(config, c);
  EXPECT_NE(error.find("feed_forward_proj \"gated-tanh\" is not supported"), std::string::npos) << error;
}

TEST(EncoderDecoderErrors, RelativeBucketsThatCannotSpanTheirDistanceAreRefused) {
  std::vector<uint8_t> bytes = read_bytes(fixture("t5", "config.json"));
  std::string config(bytes.begin(), bytes.end());
  config.replace(config.find("\"relative_attention_max_distance\": 32"), 37, "\"relative_attention_max_distance\": 8");
  mh::TransformerConfig c;
  EXPECT_NE(mh::read_hf_config(config, c).find("max_distance must be more than half"), std::string::npos);
}

TEST(EncoderDecoderErrors, ALongSourceBadIdsAndTooLittleMemoryAreRefusedAndTheContextStillWorks) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("bart", t), "");
  mh::EncoderDecoderContext ctx(*t);
  mh::Seq2SeqRequest request;
  mh::Seq2SeqResult out;
  const std::vector<int32_t> long_source(129, 5), source = {0, 5, 6, 2}, start = {2};
  EXPECT_NE(ctx.encode(out, long_source.data(), 129, request).find("at most 128"), std::string::npos);
  EXPECT_NE(ctx.decode(out, start.data(), 1, request, false).find("encode a source"), std::string::npos);
  const std::vector<int32_t> bad = {0, 701};
  EXPECT_NE(ctx.encode(out, bad.data(), 2, request).find("not in the vocabulary"), std::string::npos);
  EXPECT_EQ(ctx.encode(out, source.data(), 4, request, 1000.0).rfind(mh::kMemoryRefusal, 0), 0u);  // 1000 bytes free
  ASSERT_EQ(ctx.encode(out, source.data(), 4, request), "");
  EXPECT_EQ(ctx.decode(out, start.data(), 1, request, false, 1000.0).rfind(mh::kMemoryRefusal, 0), 0u);
  ASSERT_EQ(ctx.decode(out, start.data(), 1, request, false), "");
  EXPECT_EQ(out.cross_attentions.size(), size_t{2 * 4 * 1 * 4});
}

TEST(EncoderDecoderOps, GenerationRulesAreTransformersLogitsProcessors) {
  // Logits favour 3, then 2, then 1, then 0.
  auto next = [](std::vector<int32_t> ids, const mh::GenerationRules& rules) {
    std::vector<float> logits = {0.0f, 1.0f, 2.0f, 3.0f};
    return mh::next_token(logits.data(), 4, ids, rules);
  };
  mh::GenerationRules rules;
  EXPECT_EQ(next({0}, rules), 3);
  rules.banned = {3};  // bad_words_ids [[3]]
  EXPECT_EQ(next({0}, rules), 2);
  rules.eos = {2};
  rules.min_new_tokens = 2;
  EXPECT_EQ(next({0, 1}, rules), 1);  // one generated: no end yet
  EXPECT_EQ(next({0, 1, 1}, rules), 2);
  rules.no_repeat_ngram = 2;  // "1 2" was seen: after a 1, 2 is out
  EXPECT_EQ(next({0, 1, 2, 0, 1}, rules), 1);
  rules.forced_bos = 0;
  EXPECT_EQ(next({0}, rules), 0);
  rules.max_new_tokens = 3;
  rules.forced_eos = 3;  // forced, though banned: transformers forces last
  EXPECT_EQ(next({0, 1, 1}, rules), 3);
}

TEST(EncoderDecoderOps, RelativeBucketsFollowT5sDefinition) {
  // 32 buckets, max distance 128 (t5-small): bidirectional halves them; exact below 8, then log.
  EXPECT_EQ(mh::relative_position_bucket(0, true, 32, 128), 0);
  EXPECT_EQ(mh::relative_position_bucket(-3, true, 32, 128), 3);
  EXPECT_EQ(mh::relative_position_bucket(3, true, 32, 128), 19);
  EXPECT_EQ(mh::relative_position_bucket(-8, true, 32, 128), 8);       // 8 + log(1)/log(16)·8
  EXPECT_EQ(mh::relative_position_bucket(-127, true, 32, 128), 15);    // 8 + 7.97
  EXPECT_EQ(mh::relative_position_bucket(-1000, true, 32, 128), 15);   // clamped
  // Causal: future keys fold into bucket 0, the past uses all 32 (exact below 16).
  EXPECT_EQ(mh::relative_position_bucket(5, false, 32, 128), 0);
  EXPECT_EQ(mh::relative_position_bucket(-15, false, 32, 128), 15);
  EXPECT_EQ(mh::relative_position_bucket(-16, false, 32, 128), 16);
}

}  // namespace

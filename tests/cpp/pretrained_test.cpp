// Real checkpoints against Hugging Face transformers: the fixtures in tests/fixtures/hf were saved
// by transformers 5.17 in the hub's layouts, with the attentions, hidden states and logits it
// computed (expected.safetensors). Loading goes through the streaming loader in odd-sized chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "interpret/contributions.h"
#include "interpret/logit_attribution.h"
#include "interpret/patching.h"
#include "io/checkpoint.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "hf_fixtures.h"

namespace {

class Pretrained : public ::testing::TestWithParam<const char*> {};

TEST_P(Pretrained, MatchesTransformersOnEveryCase) {
  const std::string model = GetParam();
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load(model, t), "");
  mh::RunContext ctx(*t);
  const mh::TransformerConfig& c = t->config();
  Expected expected(model);
  int cases = 0;
  for (int k = 0; expected.find("case" + std::to_string(k) + ".input_ids"); ++k, ++cases) {
    const std::string key = "case" + std::to_string(k) + ".";
    const std::vector<int32_t> ids = expected.get<int32_t>(key + "input_ids");
    const std::vector<int32_t> types = expected.get<int32_t>(key + "token_type_ids");
    const int n = static_cast<int>(ids.size());
    std::vector<uint8_t> layers(static_cast<size_t>(c.layers), 1);
    mh::RunRequest request;
    request.token_types = types.empty() ? nullptr : types.data();
    request.attention_layers = layers.data();
    request.heads = c.heads;
    request.hidden_states = true;
    mh::RunResult out;
    ASSERT_EQ(ctx.run(out, ids.data(), n, request), "") << key;
    const std::vector<float> attentions = expected.get<float>(key + "attentions");
    ASSERT_EQ(out.attentions.size(), attentions.size());
    EXPECT_LT(max_diff(out.attentions.data(), attentions.data(), attentions.size()), 1e-4) << model << " " << key;
    const std::vector<float> hidden = expected.get<float>(key + "hidden_states");
    ASSERT_EQ(out.hidden_states.size(), hidden.size());
    EXPECT_LT(max_diff(out.hidden_states.data(), hidden.data(), hidden.size()), 1e-3 * std::max(1.0, max_abs(hidden)))
        << model << " " << key;
    const std::vector<float> logits = expected.get<float>(key + "logits");
    ASSERT_EQ(out.logits.size(), logits.size());
    EXPECT_LT(max_diff(out.logits.data(), logits.data(), logits.size()), 1e-3 * max_abs(logits)) << model << " " << key;
  }
  EXPECT_GE(cases, 5);
}

// A checkpoint loaded at 2 bytes a weight (fp16 or bf16, rounded while the bytes stream in,
// elements cut by chunk boundaries included): half the memory of a float32 one (gpt2, bert; llama
// is stored as bf16 and qwen2 as fp16, so one of the two is exact for them), and outputs still
// close to transformers'. The bounds are what these fixtures measure, with a margin of 2–3×.
TEST_P(Pretrained, LoadedAtTwoBytesAWeightStaysCloseToTransformers) {
  const std::string model = GetParam();
  std::unique_ptr<mh::Transformer> f32;
  ASSERT_EQ(load(model, f32), "");
  Expected expected(model);
  struct Case { mh::MatrixStorage storage; const char* name; double attention, logits; };
  const bool stored_f32 = model == "gpt2" || model == "bert" || model == "gpt_neo" || model == "distilbert" ||
                          model == "roberta";
  // GPT-Neo does not divide its scores by √head_dim (4 here): the weights' rounding moves them 4× as far.
  const double wider = model == "gpt_neo" ? 8 : 1;
  for (const Case& c : {Case{mh::MatrixStorage::kF16, "fp16", 5e-3 * wider, 5e-3 * wider},
                        Case{mh::MatrixStorage::kBF16, "bf16", 6e-2 * wider, 5e-2 * wider}}) {
    std::unique_ptr<mh::Transformer> t, split;
    ASSERT_EQ(load(model, t, 4099, c.storage), "");
    ASSERT_EQ(load(model, split, 3, c.storage), "");  // every element cut across chunks
    mh::RunContext ctx(*t), split_ctx(*split);
    if (stored_f32) EXPECT_LT(t->weight_bytes(), 0.6 * f32->weight_bytes()) << c.name;
    else EXPECT_EQ(t->weight_bytes(), f32->weight_bytes()) << c.name;
    double worst_attention = 0, worst_logits = 0;
    for (int k = 0; expected.find("case" + std::to_string(k) + ".input_ids"); ++k) {
      const std::string key = "case" + std::to_string(k) + ".";
      const std::vector<int32_t> ids = expected.get<int32_t>(key + "input_ids");
      const std::vector<int32_t> types = expected.get<int32_t>(key + "token_type_ids");
      std::vector<uint8_t> layers(static_cast<size_t>(t->config().layers), 1);
      mh::RunRequest request;
      request.token_types = types.empty() ? nullptr : types.data();
      request.attention_layers = layers.data();
      request.heads = t->config().heads;
      mh::RunResult out, out_split;
      ASSERT_EQ(ctx.run(out, ids.data(), static_cast<int>(ids.size()), request), "");
      ASSERT_EQ(split_ctx.run(out_split, ids.data(), static_cast<int>(ids.size()), request), "");
      EXPECT_EQ(0, std::memcmp(out.attentions.data(), out_split.attentions.data(), out.attentions.size() * 4)) << key;
      const std::vector<float> attentions = expected.get<float>(key + "attentions");
      worst_attention = std::max(worst_attention, max_diff(out.attentions.data(), attentions.data(), attentions.size()));
      const std::vector<float> logits = expected.get<float>(key + "logits");
      if (!logits.empty())
        worst_logits = std::max(worst_logits, max_diff(out.logits.data(), logits.data(), logits.size()) / max_abs(logits));
    }
    if (stored_f32) EXPECT_GT(worst_attention, 1e-5) << c.name;  // the weights did change
    EXPECT_LT(worst_attention, c.attention) << model << " " << c.name;
    EXPECT_LT(worst_logits, c.logits) << model << " " << c.name;
    std::printf("%s as %s: attentions within %.2g of transformers, logits within %.2g of their largest\n", model.c_str(),
                c.name, worst_attention, worst_logits);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Pretrained,
                         ::testing::Values("gpt2", "bert", "llama", "qwen2", "gpt_neox", "gpt_neo", "qwen3", "gemma3",
                                           "distilbert", "roberta"));

// A cached decoding step computes what the whole sequence computes.
TEST(Pretrained, CachedStepsEqualTheFullSequence) {
  for (const char* model : {"gpt2", "llama", "qwen2", "gpt_neox", "gpt_neo", "qwen3", "gemma3"}) {
    std::unique_ptr<mh::Transformer> t;
    ASSERT_EQ(load(model, t), "");
    mh::RunContext ctx(*t);
    const int vocab = t->config().vocab, L = t->config().layers, H = t->config().heads;
    // Longer than the sliding windows of gpt_neo's and gemma3's local layers (8 tokens).
    const std::vector<int32_t> ids = {5, 17, 42, 9, 300, 7, 77, 123, 11, 250, 3, 64, 99, 18};
    const int n = static_cast<int>(ids.size());
    std::vector<uint8_t> layers(static_cast<size_t>(L), 1);
    mh::RunRequest full;
    full.attention_layers = layers.data();
    full.heads = H;
    full.value_norms = true;
    mh::RunResult whole;
    ASSERT_EQ(ctx.run(whole, ids.data(), n, full), "");
    ctx.reset_cache(16);
    mh::RunRequest step = full;
    step.use_cache = true;
    const int32_t last_of_prompt = 4, only = 0;
    step.logit_rows = &last_of_prompt;
    step.logit_row_count = 1;
    mh::RunResult prompt;
    ASSERT_EQ(ctx.run(prompt, ids.data(), 5, step), "");
    ASSERT_EQ(prompt.logits.size(), size_t(vocab));
    EXPECT_LT(max_diff(prompt.logits.data(), whole.logits.data() + int64_t{4} * vocab, vocab), 1e-4 * max_abs(whole.logits));
    step.logit_rows = &only;
    for (int i = 5; i < n; ++i) {
      mh::RunResult one;
      ASSERT_EQ(ctx.run(one, ids.data() + i, 1, step), "");
      ASSERT_EQ(one.n_k, i + 1);
      EXPECT_LT(max_diff(one.logits.data(), whole.logits.data() + int64_t{i} * vocab, vocab), 1e-4 * max_abs(whole.logits))
          << model << " step " << i;
      for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h) {
          const float* row = one.attentions.data() + (int64_t{l} * H + h) * (i + 1);
          const float* want = whole.attentions.data() + ((int64_t{l} * H + h) * n + i) * n;
          EXPECT_LT(max_diff(row, want, static_cast<size_t>(i + 1)), 1e-5) << model << " layer " << l << " head " << h;
          // Value norms over every key so far, the cached ones included (llama, qwen2: 2 heads a value).
          const float* norms = one.value_norms.data() + (int64_t{l} * H + h) * (i + 1);
          const float* want_norms = whole.value_norms.data() + (int64_t{l} * H + h) * n;
          EXPECT_LT(max_diff(norms, want_norms, static_cast<size_t>(i + 1)), 1e-4 * max_abs(whole.value_norms))
              << model << " layer " << l << " head " << h;
        }
    }
    mh::RunResult over;
    EXPECT_NE(ctx.run(over, ids.data(), 9, step), "");  // past the cache's room: an error, not a crash
  }
}

// Logits for chosen rows (what a view that shows one prediction asks for) are those rows of the
// full output, in the order asked; a row that does not exist is an error.
TEST(Pretrained, LogitsForChosenRowsAreThoseRows) {
  for (const char* model : {"gpt2", "bert"}) {
    std::unique_ptr<mh::Transformer> t;
    ASSERT_EQ(load(model, t), "");
    mh::RunContext ctx(*t);
    const int vocab = t->config().vocab;
    const std::vector<int32_t> ids = {2, 17, 42, 9, 300, 7, 3};
    mh::RunRequest all;
    mh::RunResult whole, some;
    ASSERT_EQ(ctx.run(whole, ids.data(), 7, all), "");
    const std::vector<int32_t> rows = {5, 0, 5};
    mh::RunRequest chosen;
    chosen.logit_rows = rows.data();
    chosen.logit_row_count = 3;
    ASSERT_EQ(ctx.run(some, ids.data(), 7, chosen), "");
    ASSERT_EQ(some.logits.size(), size_t(3) * vocab);
    for (int i = 0; i < 3; ++i)
      EXPECT_LT(max_diff(some.logits.data() + int64_t{i} * vocab, whole.logits.data() + int64_t{rows[i]} * vocab, vocab),
                1e-5 * max_abs(whole.logits)) << model << " row " << rows[i];
    const int32_t bad = 7;
    chosen.logit_rows = &bad;
    chosen.logit_row_count = 1;
    EXPECT_NE(ctx.run(some, ids.data(), 7, chosen).find("rows are 0 … 6"), std::string::npos);
  }
}

// Without the last hidden state the last layer's MLP runs over the logits' rows only: the logits
// of those rows (repeated, backwards, more of them than tokens) and every attention still match
// transformers', and without logits nothing past the last attention is returned.
TEST_P(Pretrained, LogitRowsAloneStillMatchTransformers) {
  const std::string model = GetParam();
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load(model, t), "");
  mh::RunContext ctx(*t);
  const mh::TransformerConfig& c = t->config();
  Expected expected(model);
  const std::vector<int32_t> ids = expected.get<int32_t>("case0.input_ids");
  const std::vector<int32_t> types = expected.get<int32_t>("case0.token_type_ids");
  const std::vector<float> logits = expected.get<float>("case0.logits"), attentions = expected.get<float>("case0.attentions");
  const int n = static_cast<int>(ids.size());
  ASSERT_GE(n, 3);
  std::vector<uint8_t> layers(static_cast<size_t>(c.layers), 1);
  const std::vector<std::vector<int32_t>> lists = {
      {n - 1}, {n - 1, 0, n - 1}, {1, 0}, std::vector<int32_t>(static_cast<size_t>(n + 2), n - 2)};
  mh::RunRequest every_head;  // every attention, no final hidden state
  every_head.token_types = types.empty() ? nullptr : types.data();
  every_head.attention_layers = layers.data();
  every_head.heads = c.heads;
  every_head.last_hidden_state = false;
  for (const std::vector<int32_t>& rows : lists) {
    mh::RunRequest r = every_head;
    r.logit_rows = rows.data();
    r.logit_row_count = static_cast<int>(rows.size());
    mh::RunResult out;
    ASSERT_EQ(ctx.run(out, ids.data(), n, r), "");
    EXPECT_LT(max_diff(out.attentions.data(), attentions.data(), attentions.size()), 1e-4) << model;
    ASSERT_EQ(out.logits.size(), rows.size() * c.vocab);
    for (size_t i = 0; i < rows.size(); ++i)
      EXPECT_LT(max_diff(out.logits.data() + i * c.vocab, logits.data() + int64_t{rows[i]} * c.vocab, c.vocab),
                1e-3 * max_abs(logits)) << model << " asked row " << rows[i] << " as " << i;
  }
  mh::RunRequest none = every_head;
  none.logits = false;
  mh::RunResult out;
  ASSERT_EQ(ctx.run(out, ids.data(), n, none), "");
  EXPECT_LT(max_diff(out.attentions.data(), attentions.data(), attentions.size()), 1e-4) << model;
  EXPECT_TRUE(out.logits.empty());
  EXPECT_TRUE(out.last_hidden_state.empty());
}

TEST(Pretrained, SwitchedOffHeadChangesOnlyThroughItsOutput) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("llama", t), "");
  mh::RunContext ctx(*t);
  const std::vector<int32_t> ids = {1, 50, 60, 70, 80};
  const int L = t->config().layers, H = t->config().heads;
  std::vector<uint8_t> disabled(static_cast<size_t>(L * H), 0);
  mh::RunRequest r;
  mh::RunResult on, off;
  ASSERT_EQ(ctx.run(on, ids.data(), 5, r), "");
  disabled[H + 2] = 1;  // layer 1, head 2: the last layer, so layer 0 is untouched
  r.disabled_heads = disabled.data();
  r.hidden_states = true;
  ASSERT_EQ(ctx.run(off, ids.data(), 5, r), "");
  EXPECT_GT(max_diff(on.logits.data(), off.logits.data(), on.logits.size()), 1e-3);
  // With every head of the layer off, the layer adds only its MLP: value norms of a head are 0.
  std::fill(disabled.begin(), disabled.end(), 1);
  r.value_norms = true;
  ASSERT_EQ(ctx.run(off, ids.data(), 5, r), "");
  EXPECT_EQ(max_abs(off.value_norms), 0.0);
}

// ‖v_j W_O^h‖ recomputed in float64 from the checkpoint's own tensors: layer 0's input is
// transformers' embeddings output, then ln_1, the V third of c_attn, and head h's rows of c_proj.
// At 2 bytes a weight too, where the rows of W_O are read in their 2-byte panels.
TEST(Pretrained, ValueNormsAreTheNormsOfProjectedValues) {
  Expected expected("gpt2");
  Expected weights("gpt2", "model.safetensors");
  const std::vector<int32_t> ids = expected.get<int32_t>("case0.input_ids");
  const std::vector<float> x = expected.get<float>("case0.hidden_states");  // [0]: the embeddings
  const std::vector<float> ln_w = weights.get<float>("h.0.ln_1.weight"), ln_b = weights.get<float>("h.0.ln_1.bias");
  const std::vector<float> qkv = weights.get<float>("h.0.attn.c_attn.weight"), qkv_b = weights.get<float>("h.0.attn.c_attn.bias");
  const std::vector<float> proj = weights.get<float>("h.0.attn.c_proj.weight");  // [in][out]
  const int n = static_cast<int>(ids.size());
  for (mh::MatrixStorage storage : {mh::MatrixStorage::kAsStored, mh::MatrixStorage::kBF16}) {
    std::unique_ptr<mh::Transformer> t;
    ASSERT_EQ(load("gpt2", t, 4099, storage), "");
    mh::RunContext ctx(*t);
    const auto& c = t->config();
    const int d = c.d_model, H = c.heads, d_k = d / H;
    mh::RunRequest r;
    r.value_norms = true;
    mh::RunResult out;
    ASSERT_EQ(ctx.run(out, ids.data(), n, r), "");
    ASSERT_EQ(out.value_norms.size(), size_t(c.layers) * H * n);
    double worst = 0, largest = 0;
    for (int j = 0; j < n; ++j) {
      const float* row = x.data() + static_cast<size_t>(j) * d;
      double mean = 0, var = 0;
      for (int i = 0; i < d; ++i) mean += row[i] / double(d);
      for (int i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean) / d;
      std::vector<double> ln(d), v(d, 0.0);
      for (int i = 0; i < d; ++i) ln[i] = (row[i] - mean) / std::sqrt(var + 1e-5) * ln_w[i] + ln_b[i];
      for (int o = 0; o < d; ++o) {
        v[o] = qkv_b[2 * d + o];
        for (int i = 0; i < d; ++i) v[o] += ln[i] * qkv[static_cast<size_t>(i) * 3 * d + 2 * d + o];
      }
      for (int h = 0; h < H; ++h) {
        double sum = 0;
        for (int o = 0; o < d; ++o) {
          double moved = 0;
          for (int k = 0; k < d_k; ++k) moved += v[h * d_k + k] * proj[static_cast<size_t>(h * d_k + k) * d + o];
          sum += moved * moved;
        }
        const double want = std::sqrt(sum);
        largest = std::max(largest, want);
        worst = std::max(worst, std::fabs(out.value_norms[static_cast<size_t>(h) * n + j] - want));
      }
    }
    EXPECT_GT(largest, 0.1);
    EXPECT_LT(worst, (storage == mh::MatrixStorage::kBF16 ? 2e-2 : 1e-4) * largest) << static_cast<int>(storage);
  }
}

TEST(Pretrained, BadInputIsAnErrorAndTheModelKeepsWorking) {
  std::unique_ptr<mh::Transformer> t;
  ASSERT_EQ(load("gpt2", t), "");
  mh::RunContext ctx(*t);
  mh::RunRequest r;
  mh::RunResult out;
  const std::vector<int32_t> bad = {1, 2, 5000};
  EXPECT_NE(ctx.run(out, bad.data(), 3, r).find("not in the vocabulary"), std::string::npos);
  std::vector<int32_t> long_input(513, 1);
  EXPECT_NE(ctx.run(out, long_input.data(), 513, r).find("at most 512"), std::string::npos);
  const std::vector<int32_t> ok = {1, 2, 3};
  EXPECT_EQ(ctx.run(out, ok.data(), 3, r), "");
}

TEST(Checkpoint, RefusesWhatDoesNotMatch) {
  const std::vector<uint8_t> file = read_bytes(fixture("gpt2", "model.safetensors"));
  uint64_t n;
  ASSERT_EQ(mh::safetensors::read_header_length(file.data(), file.size(), n), "");
  auto try_load = [&](const std::string& config, uint64_t size, double available, size_t feed_bytes) {
    mh::CheckpointLoader loader;
    std::string e = loader.set_config(config);
    int shard;
    if (e.empty()) e = loader.add_shard("model.safetensors", file.data() + 8, n, size, shard);
    if (e.empty()) e = loader.plan(available);
    if (e.empty()) e = loader.feed(shard, file.data(), feed_bytes);
    std::unique_ptr<mh::Transformer> t;
    if (e.empty()) e = loader.finish(t);
    return e;
  };
  const std::vector<uint8_t> cfg = read_bytes(fixture("gpt2", "config.json"));
  const std::string config(cfg.begin(), cfg.end());
  EXPECT_EQ(try_load(config, file.size(), 1e9, file.size()), "");
  EXPECT_NE(try_load(config, file.size() - 10, 1e9, file.size() - 10).find("truncated"), std::string::npos);
  EXPECT_NE(try_load(config, file.size(), 1e9, file.size() - 10).find("truncated"), std::string::npos);
  EXPECT_NE(try_load(config, file.size(), 1e5, file.size()).find("MB of memory"), std::string::npos);
  // Too big as stored (787 kB of F32 weights), small enough at 2 bytes a weight: the error says so.
  EXPECT_NE(try_load(config, file.size(), 6e5, file.size()).find("weightType 'f16' or 'bf16'"), std::string::npos);
  EXPECT_EQ(try_load(config, file.size(), 1e5, file.size()).find("weightType"), std::string::npos);
  std::string wider = config;
  wider.replace(wider.find("\"n_embd\": 64"), 12, "\"n_embd\": 128");
  EXPECT_NE(try_load(wider, file.size(), 1e9, file.size()).find("do not match"), std::string::npos)
      << try_load(wider, file.size(), 1e9, file.size());
  std::string other = config;
  other.replace(other.find("\"gpt2\""), 6, "\"mamba\"");
  EXPECT_NE(try_load(other, file.size(), 1e9, file.size()).find("supported are gpt2, bert, llama"), std::string::npos);
  std::string as_llama = config;
  as_llama.replace(as_llama.find("\"gpt2\""), 6, "\"llama\"");
  EXPECT_NE(try_load(as_llama, file.size(), 1e9, file.size()), "");
}

// A weight beyond float16's range cannot be narrowed to it: an error that says what to do, not a
// model with an infinite weight. bf16 has float32's range.
TEST(Checkpoint, Fp16OverflowIsAnError) {
  std::vector<uint8_t> file = read_bytes(fixture("gpt2", "model.safetensors"));
  mh::safetensors::Header header;
  ASSERT_EQ(mh::safetensors::parse_file(file.data(), file.size(), header), "");
  for (const auto& t : header.tensors)
    if (t.name == "h.1.mlp.c_fc.weight") {
      const float big = 1e5f;
      std::memcpy(file.data() + t.begin + 40, &big, 4);
    }
  std::unique_ptr<mh::Transformer> t;
  const std::string error = load("gpt2", t, 4099, mh::MatrixStorage::kF16, file);
  EXPECT_NE(error.find("h.1.mlp.c_fc.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("float16's range"), std::string::npos) << error;
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(load("gpt2", t, 4099, mh::MatrixStorage::kBF16, file), "");
}

TEST(HfConfig, RopeStylesAndScaling) {
  mh::TransformerConfig a, b, c;
  const std::string base = R"({"model_type":"llama","num_hidden_layers":1,"num_attention_heads":2,"hidden_size":8,
    "intermediate_size":16,"vocab_size":10,"max_position_embeddings":64,)";
  ASSERT_EQ(mh::read_hf_config(base + R"("rope_theta":500000.0})", a), "");
  ASSERT_EQ(mh::read_hf_config(base + R"("rope_parameters":{"rope_type":"default","rope_theta":500000.0}})", b), "");
  EXPECT_EQ(a.rope_inv_freq, b.rope_inv_freq);
  ASSERT_EQ(a.rope_inv_freq.size(), 2u);
  EXPECT_FLOAT_EQ(a.rope_inv_freq[1], static_cast<float>(1.0 / std::pow(500000.0, 0.5)));
  ASSERT_EQ(mh::read_hf_config(base + R"("rope_theta":10000.0,"rope_scaling":{"rope_type":"linear","factor":4.0}})", c), "");
  EXPECT_FLOAT_EQ(c.rope_inv_freq[1], static_cast<float>(0.01 / 4));
  EXPECT_NE(mh::read_hf_config(base + R"("rope_scaling":{"rope_type":"yarn","factor":4.0}})", c).find("not supported"),
            std::string::npos);
  EXPECT_NE(mh::read_hf_config(R"({"model_type":"gpt2"})", c).find("n_layer"), std::string::npos);
  EXPECT_NE(mh::read_hf_config("{", c).find("not valid JSON"), std::string::npos);
}

TEST(Safetensors, HeadersThatLieAreRefused) {
  auto parse = [](const std::string& json, uint64_t file_size) {
    mh::safetensors::Header h;
    return mh::safetensors::parse_header(reinterpret_cast<const uint8_t*>(json.data()), json.size(), file_size, h);
  };
  const auto size = [](const std::string& j, uint64_t data) { return 8 + j.size() + data; };
  const std::string good = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"format":"pt"}})";
  EXPECT_EQ(parse(good, size(good, 16)), "");
  EXPECT_NE(parse(good, size(good, 8)).find("truncated"), std::string::npos);
  const std::string overlap = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_NE(parse(overlap, size(overlap, 12)).find("overlaps"), std::string::npos);
  const std::string wrong_size = R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})";
  EXPECT_NE(parse(wrong_size, size(wrong_size, 8)).find("need 6"), std::string::npos);
  const std::string past_end = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  EXPECT_NE(parse(past_end, size(past_end, 4)).find("truncated"), std::string::npos);
  const std::string dtype = R"({"a":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})";
  EXPECT_NE(parse(dtype, 100).find("unknown dtype"), std::string::npos);
  uint8_t absurd[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  uint64_t n;
  EXPECT_NE(mh::safetensors::read_header_length(absurd, 1000, n).find("absurd"), std::string::npos);
}

}  // namespace

// The interpretability methods natively (and so under the sanitizers): the attribution sums to the
// logit difference, patching the one differing token restores the clean run, contributions are
// rows of shares.
TEST(Pretrained, InterpretabilityInvariants) {
  for (const char* model : {"gpt2", "gpt_neox", "gemma3"}) {
    std::unique_ptr<mh::Transformer> t;
    ASSERT_EQ(load(model, t), "");
    mh::RunContext ctx(*t);
    const std::vector<int32_t> clean = {5, 17, 42, 9, 300, 7, 77, 123, 11, 250};
    const int n = static_cast<int>(clean.size());
    mh::LogitAttribution a;
    ASSERT_EQ(mh::direct_logit_attribution(ctx, a, clean.data(), n, {n - 1, 10, 20}, nullptr), "");
    EXPECT_NEAR(a.total + a.norm_bias, a.logit_difference, 1e-4 * std::max(1.0, std::fabs(a.logit_difference))) << model;
    std::vector<int32_t> corrupt = clean;
    corrupt[3] = 8;
    mh::ActivationPatching patching;
    ASSERT_EQ(patching.prepare(ctx, clean.data(), corrupt.data(), n, 10, 20), "");
    double d = 0;
    ASSERT_EQ(patching.patched(ctx, mh::ActivationPatching::What::kResidual, 0, 3, d), "");
    EXPECT_NEAR(d, patching.clean_difference(), 1e-4 * std::max(1.0, std::fabs(d))) << model;
    ASSERT_EQ(patching.patched(ctx, mh::ActivationPatching::What::kHeads, 1, 2, d), "");
    ASSERT_EQ(patching.patched(ctx, mh::ActivationPatching::What::kMlps, 0, 0, d), "");
    EXPECT_NE(patching.patched(ctx, mh::ActivationPatching::What::kHeads, 99, 0, d), "");
    mh::LogitLens lens;
    const std::vector<int32_t> positions = {0, n - 1};
    mh::LogitAttribution b;
    const mh::AttributionAsk ask{n - 1, 10, 20};
    ASSERT_EQ(mh::logit_lens(ctx, lens, clean.data(), n, nullptr, positions.data(), 2, 3, nullptr, 0, &ask, &b), "");
    EXPECT_EQ(lens.top_ids.size(), size_t(t->config().layers + 1) * 2 * 3);
    // The same attribution from the lens's run as from a run of its own.
    EXPECT_NEAR(b.total, a.total, 1e-5 * std::max(1.0, std::fabs(a.total))) << model;
    EXPECT_NEAR(b.logit_difference, a.logit_difference, 1e-4) << model;
    std::vector<float> contributions;
    ASSERT_EQ(mh::token_contributions(ctx, contributions, clean.data(), n, nullptr), "");
    ASSERT_EQ(contributions.size(), size_t(t->config().layers) * n * n);
    for (int row = 0; row < t->config().layers * n; ++row) {
      double sum = 0;
      for (int j = 0; j < n; ++j) sum += contributions[int64_t{row} * n + j];
      EXPECT_NEAR(sum, 1.0, 1e-5) << model;
    }
  }
}

// The image models from transformers' pixel_values (1 × 3 × 32 × 32): every attention, the hidden
// states and the logits (ViT) or last hidden state (DINOv2, whose 6 × 6 position table is resampled
// to the 4 × 4 grid); bad pixels are refused and the model keeps working.
TEST(PretrainedVision, MatchesTransformersFromItsPixelValues) {
  for (const char* model : {"vit", "dinov2"}) {
    std::unique_ptr<mh::Transformer> t;
    ASSERT_EQ(load(model, t), "") << model;
    const Expected e(model);
    std::vector<float> pixels = e.get<float>("pixel_values");
    ASSERT_EQ(pixels.size(), 3u * 32 * 32);
    const int n = 17;
    const std::vector<int32_t> ids(n, 0);
    std::vector<uint8_t> layers(2, 1);
    mh::RunRequest r;
    r.pixels = pixels.data();
    r.image_height = r.image_width = 32;
    r.attention_layers = layers.data();
    r.heads = 4;
    r.hidden_states = true;
    const int32_t cls = 0;
    r.logit_rows = &cls;
    r.logit_row_count = 1;
    mh::RunContext context(*t);
    mh::RunResult out;
    ASSERT_EQ(context.run(out, ids.data(), n, r), "") << model;
    const std::vector<float> attentions = e.get<float>("attentions"), hidden = e.get<float>("hidden_states");
    ASSERT_EQ(out.attentions.size(), attentions.size());
    EXPECT_LT(max_diff(out.attentions.data(), attentions.data(), attentions.size()), 1e-4) << model;
    EXPECT_LT(max_diff(out.hidden_states.data(), hidden.data(), hidden.size()), 1e-4 * max_abs(hidden)) << model;
    const std::vector<float> final_state = e.get<float>(std::string(model) == "vit" ? "logits" : "last_hidden_state");
    const std::vector<float>& got = std::string(model) == "vit" ? out.logits : out.last_hidden_state;
    ASSERT_EQ(got.size(), final_state.size()) << model;
    EXPECT_LT(max_diff(got.data(), final_state.data(), got.size()), 1e-4 * max_abs(final_state)) << model;

    auto refused = [&](mh::RunRequest bad, int rows) {
      mh::RunResult ignored;
      return context.run(ignored, ids.data(), rows, bad);
    };
    mh::RunRequest none = r;
    none.pixels = nullptr;
    EXPECT_NE(refused(none, n).find("not on token ids"), std::string::npos);
    mh::RunRequest small = r;
    small.image_height = small.image_width = 1;
    EXPECT_NE(refused(small, 2).find("smaller than one 8 × 8 patch"), std::string::npos);
    EXPECT_NE(refused(r, 5).find("16 patches + CLS, not 5 rows"), std::string::npos);
    pixels[77] = std::nanf("");
    EXPECT_NE(refused(r, n).find("pixel value 77 is not a finite number"), std::string::npos);
    pixels = e.get<float>("pixel_values");
    r.pixels = pixels.data();
    ASSERT_EQ(context.run(out, ids.data(), n, r), "");
    EXPECT_LT(max_diff(out.attentions.data(), attentions.data(), attentions.size()), 1e-4) << model;
  }
}

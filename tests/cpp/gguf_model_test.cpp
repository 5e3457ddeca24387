// GGUF files read as models: the four fixtures in tests/fixtures/gguf (llama Q8_0 and Q4_K_M,
// qwen2 Q4_0, gpt2 F16) through the streaming loader in odd chunks, against the float64 reference
// computed on their dequantized tensors (expected.safetensors; its README is in the fixtures' source,
// shared/gguf-fixtures): every attention, the logits, every position's top token where the
// reference's margin is clear, and the 12-token greedy continuation llama.cpp also produced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/gemm.h"
#include "io/checkpoint.h"
#include "io/gguf_model.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "nn/transformer.h"

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string fixture(const std::string& name, const std::string& file) {
  return std::string(MH_GGUF_FIXTURES_DIR) + "/" + name + "/" + file;
}

struct Expected {
  std::vector<uint8_t> bytes;
  mh::safetensors::Header header;
  explicit Expected(const std::string& name) : bytes(read_bytes(fixture(name, "expected.safetensors"))) {
    EXPECT_EQ(mh::safetensors::parse_file(bytes.data(), bytes.size(), header), "");
  }
  template <typename T>
  std::vector<T> get(const std::string& key) const {
    for (const auto& t : header.tensors)
      if (t.name == key) {
        std::vector<T> out(static_cast<size_t>(t.elements()));
        std::memcpy(out.data(), bytes.data() + t.begin, out.size() * sizeof(T));
        return out;
      }
    return {};
  }
};

// Loads a GGUF file the way the JS layer does: the header from a prefix (growing it while the parser
// asks for more), then every byte in chunks of `chunk`.
std::string load(const std::vector<uint8_t>& file, std::unique_ptr<mh::Transformer>& out, size_t chunk,
                 mh::MatrixStorage storage = mh::MatrixStorage::kAsStored) {
  mh::CheckpointLoader loader;
  int index = -1;
  std::string error;
  for (size_t given = 64;; given *= 2) {
    error = loader.add_gguf("model.gguf", file.data(), std::min(given, file.size()), file.size(), index);
    if (!mh::gguf::needs_more(error)) break;
    mh::CheckpointLoader fresh;
    std::swap(loader, fresh);
  }
  if (!error.empty()) return error;
  if (!(error = loader.plan(1e9, storage)).empty()) return error;
  for (size_t at = 0; at < file.size(); at += chunk)
    if (!(error = loader.feed(index, file.data() + at, std::min(chunk, file.size() - at))).empty()) return error;
  return loader.finish(out);
}

double max_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

class GgufModel : public ::testing::TestWithParam<const char*> {};

// Under the sanitizers (CMakeLists.txt) the file is loaded once and run once: the other loads check
// numbers, and the GGUF fuzzer cuts files at every place (tests/fuzz/gguf_fuzzer.cpp).
#if defined(MULTIHEAD_SANITIZED)
constexpr bool kOneLoad = true;
#else
constexpr bool kOneLoad = false;
#endif

TEST_P(GgufModel, MatchesTheFloat64ReferenceOnEveryCase) {
  const std::string name = GetParam();
  const std::vector<uint8_t> file = read_bytes(fixture(name, "model.gguf"));
  ASSERT_GT(file.size(), 1000u);
  std::unique_ptr<mh::Transformer> model, split, widened;
  ASSERT_EQ(load(file, model, 4099), "");
  if (!kOneLoad) {
    ASSERT_EQ(load(file, split, 7), "");  // rows and blocks cut across chunks
    ASSERT_EQ(load(file, widened, 1 << 20, mh::MatrixStorage::kF32), "");
  }
  const mh::TransformerConfig& c = model->config();
  mh::RunContext ctx(*model);
  // Q8_0 and Q5_0 stay in 8-bit blocks, Q4_0 in 4-bit ones without mins, Q4_K in its super-blocks of
  // 4-bit values, Q6_K in its super-blocks of 6-bit values (core/blocks.h); F16 and the rest are widened. The blocks take
  // about a quarter (8-bit) or a sixth (Q4_0, Q4_K) of float32's bytes.
  const mh::WeightType expected_wq = name == "llama-q8_0"     ? mh::WeightType::kQ8
                                     : name == "gpt2-f16"     ? mh::WeightType::kF32
                                     : name == "llama-q4_k_m" ? mh::WeightType::kQ4K
                                                              : mh::WeightType::kQ40;
  EXPECT_EQ(model->weights().layers[0].wq->type, expected_wq) << name;
  if (name == "qwen2-q4_0") {  // 0.625 bytes a weight: Q4_0's d as float32, its min not stored
    const mh::Tensor& wq = *model->weights().layers[0].wq;
    EXPECT_EQ(wq.stored_bytes(), wq.rows * ((wq.cols + 7) / 8 * 8) * 5 / 8);
  }
  if (name == "llama-q4_k_m") {  // layers 2 and 3 have Q6_K values: a layer of mixed types
    const mh::Tensor& wv = *model->weights().layers[2].wv;
    EXPECT_EQ(wv.type, mh::WeightType::kQ6K);
    EXPECT_EQ(wv.stored_bytes(), wv.rows * ((wv.cols + 7) / 8 * 8) * 9 / 8);  // 1.125 bytes a weight
    const mh::Tensor& wq = *model->weights().layers[0].wq;
    EXPECT_EQ(wq.stored_bytes(), wq.rows * ((wq.cols + 7) / 8 * 8) * 5 / 8);  // 0.625 bytes a weight
  }
  if (expected_wq != mh::WeightType::kF32 && !kOneLoad)
    EXPECT_LT(model->weight_bytes(), 0.45 * widened->weight_bytes()) << name;
  Expected expected(name);
  const std::vector<uint8_t> json_text = read_bytes(fixture(name, "expected.json"));
  mh::json::Value meta;
  ASSERT_EQ(mh::json::parse(reinterpret_cast<const char*>(json_text.data()), json_text.size(), meta), "");
  const mh::json::Value* cases = meta.find("cases");
  ASSERT_TRUE(cases && cases->is_array());
  double worst_attention = 0, worst_logits = 0;
  int checked_positions = 0;
  for (size_t k = 0; k < cases->array.size(); ++k) {
    const std::string key = "case" + std::to_string(k) + ".";
    const std::vector<int32_t> ids = expected.get<int32_t>(key + "input_ids");
    ASSERT_FALSE(ids.empty()) << key;
    const int n = static_cast<int>(ids.size());
    std::vector<uint8_t> layers(static_cast<size_t>(c.layers), 1);
    mh::RunRequest request;
    request.attention_layers = layers.data();
    request.heads = c.heads;
    mh::RunResult out;
    ASSERT_EQ(ctx.run(out, ids.data(), n, request), "") << key;
    if (!kOneLoad) {
      mh::RunContext split_ctx(*split), widened_ctx(*widened);
      mh::RunResult out_split, out_widened;
      ASSERT_EQ(split_ctx.run(out_split, ids.data(), n, request), "") << key;
      EXPECT_EQ(0, std::memcmp(out.logits.data(), out_split.logits.data(), out.logits.size() * 4)) << key;
      // Blocks widened in the product (integer tiles off: core/gemm.h) give the bits of float32
      // weights (the same values, the same sums).
      ASSERT_EQ(widened_ctx.run(out_widened, ids.data(), n, request), "") << key;
      mh::RunResult out_blocks_widened;
      mh::set_integer_block_tiles(false);
      const std::string error = ctx.run(out_blocks_widened, ids.data(), n, request);
      mh::set_integer_block_tiles(true);
      ASSERT_EQ(error, "") << key;
      EXPECT_EQ(0, std::memcmp(out_blocks_widened.logits.data(), out_widened.logits.data(), out.logits.size() * 4)) << name << " " << key;
      EXPECT_EQ(0, std::memcmp(out_blocks_widened.attentions.data(), out_widened.attentions.data(), out.attentions.size() * 4)) << key;
    }
    const std::vector<float> attentions = expected.get<float>(key + "attentions");
    ASSERT_EQ(out.attentions.size(), attentions.size());
    worst_attention = std::max(worst_attention, max_diff(out.attentions.data(), attentions.data(), attentions.size()));
    const std::vector<float> logits = expected.get<float>(key + "logits");
    ASSERT_EQ(out.logits.size(), logits.size());
    // Each position's logits against its row's range; its top token where the reference's is clear.
    const mh::json::Value* margins = cases->array[k].find("argmax_margin_over_range");
    ASSERT_TRUE(margins && margins->is_array() && static_cast<int>(margins->array.size()) == n);
    for (int i = 0; i < n; ++i) {
      const float* want = logits.data() + static_cast<size_t>(i) * c.vocab;
      const float* got = out.logits.data() + static_cast<size_t>(i) * c.vocab;
      const auto [lo, hi] = std::minmax_element(want, want + c.vocab);
      worst_logits = std::max(worst_logits, max_diff(got, want, c.vocab) / (*hi - *lo));
      if (margins->array[i].number > 0.01) {
        EXPECT_EQ(std::max_element(got, got + c.vocab) - got, hi - want) << name << " " << key << " position " << i;
        ++checked_positions;
      }
    }
    // The greedy continuation: 12 steps, each on the whole sequence so far (its last row's logits:
    // every row's through a 32000-word head had been most of this test's time under the sanitizers).
    const std::vector<int32_t> greedy = expected.get<int32_t>(key + "greedy_ids");
    ASSERT_EQ(greedy.size(), 12u);
    std::vector<int32_t> sequence = ids;
    int32_t last_row = 0;
    mh::RunRequest last;
    last.logit_rows = &last_row;
    last.logit_row_count = 1;
    for (int step = 0; step < 12; ++step) {
      mh::RunResult r;
      last_row = static_cast<int32_t>(sequence.size()) - 1;
      ASSERT_EQ(ctx.run(r, sequence.data(), static_cast<int>(sequence.size()), last), "");
      const float* row = r.logits.data() + (r.logits.size() - c.vocab);
      sequence.push_back(static_cast<int32_t>(std::max_element(row, row + c.vocab) - row));
    }
    EXPECT_EQ(std::vector<int32_t>(sequence.end() - 12, sequence.end()), greedy) << name << " " << key;
  }
  EXPECT_GT(checked_positions, 40);
  // float32 against float64: measured 1e-7 – 7e-7 (gpt2-f16). Products over blocks quantize the rows
  // to 8 bits a block (Q4_K's and Q6_K's once for 256), as llama.cpp does (core/gemm_blocks.h): attentions
  // move by up to 5.5e-3 (llama-q8_0), 9.8e-3 (qwen2-q4_0) and 1.0e-2 (llama-q4_k_m), logits by 0.36–0.81 %
  // of a row's range (with its Q6_K in super-blocks; tests/js/gguf.test.mjs has the same bounds).
  const bool quantized_rows = expected_wq != mh::WeightType::kF32;
  EXPECT_LT(worst_attention, quantized_rows ? 2e-2 : 2e-5) << name;
  EXPECT_LT(worst_logits, quantized_rows ? 2e-2 : 2e-5) << name;
  std::printf("%s: attentions within %.2g of the float64 reference, logits within %.2g of a row's range\n", name.c_str(),
              worst_attention, worst_logits);
}

// The file with one string of its header replaced by another of the same length.
std::vector<uint8_t> with_replaced(std::vector<uint8_t> file, const std::string& from, const std::string& to) {
  const auto at = std::search(file.begin(), file.end(), from.begin(), from.end());
  EXPECT_NE(at, file.end()) << from;
  if (at != file.end()) std::copy(to.begin(), to.end(), at);
  return file;
}

TEST(GgufModelErrors, WhatItCannotReadIsRefusedByName) {
  const std::vector<uint8_t> file = read_bytes(fixture("llama-q8_0", "model.gguf"));
  std::unique_ptr<mh::Transformer> model;
  auto refused = [&](const std::vector<uint8_t>& bytes, size_t feed = 0) {
    mh::CheckpointLoader loader;
    int index;
    std::string error = loader.add_gguf("model.gguf", bytes.data(), bytes.size(), bytes.size(), index);
    if (error.empty()) error = loader.plan(1e9);
    if (error.empty()) error = loader.feed(index, bytes.data(), feed);
    if (error.empty()) error = loader.finish(model);
    return error;
  };
  std::string e = refused(with_replaced(file, "\x05\0\0\0\0\0\0\0llama", std::string("\x05\0\0\0\0\0\0\0llamb", 13)));
  EXPECT_NE(e.find("architecture \"llamb\""), std::string::npos) << e;
  EXPECT_NE(e.find("qwen2"), std::string::npos) << e;  // what is supported
  e = refused(with_replaced(file, "blk.1.attn_q.weight", "blk.1.attn_x.weight"));
  EXPECT_NE(e.find("\"blk.1.attn_x.weight\" is not one"), std::string::npos) << e;
  e = refused(with_replaced(file, "blk.1.attn_q.weight", "blk.7.attn_q.weight"));
  EXPECT_NE(e.find("past the 2"), std::string::npos) << e;
  e = refused(with_replaced(file, "llama.block_count", "llama.block_cound"));
  EXPECT_NE(e.find("llama.block_count"), std::string::npos) << e;
  e = refused(with_replaced(file, "llama.rope.dimension_count", "llama.rope.dimension_coun_"));
  EXPECT_EQ(e.find("rope"), std::string::npos) << e;  // an unknown key is fine; the model is whole
  e = refused(file, file.size() - 1);
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  // A tensor missing altogether: a layer's key projection renamed into another layer's.
  e = refused(with_replaced(file, "blk.1.attn_k.weight", "blk.0.attn_k.weight"));
  EXPECT_NE(e.find("blk.0.attn_k.weight"), std::string::npos) << e;  // two tensors share a name
  // And a good load after all of them.
  EXPECT_EQ(load(file, model, 1 << 20), "");
}

// A GGUF file that does not fit as it would load keeps its 8-bit blocks and narrows only the
// other matrices to bf16 — here the token embedding, Q8_0 in the file but a lookup table, not a
// product's blocks — (once, the whole model was narrowed, its blocks widened to 2 bytes a weight);
// below that, an Error that says so and what it needed. The embedding's size comes from the
// fixture's own description of its tensors.
TEST(GgufModelErrors, ATightBudgetKeepsTheBlocksAndNarrowsTheRest) {
  const std::vector<uint8_t> file = read_bytes(fixture("llama-q8_0", "model.gguf"));
  const std::vector<uint8_t> json_text = read_bytes(fixture("llama-q8_0", "expected.json"));
  mh::json::Value meta;
  ASSERT_EQ(mh::json::parse(reinterpret_cast<const char*>(json_text.data()), json_text.size(), meta), "");
  const mh::json::Value* embedding = meta.find("tensors") ? meta.find("tensors")->find("token_embd.weight") : nullptr;
  ASSERT_TRUE(embedding && embedding->find("ne") && embedding->find("ne")->array.size() == 2);
  const double embedding_values = embedding->find("ne")->array[0].number * embedding->find("ne")->array[1].number;
  auto plan = [&](double budget, std::string& error) {
    mh::CheckpointLoader loader;
    int index = -1;
    error = loader.add_gguf("model.gguf", file.data(), file.size(), file.size(), index);
    if (error.empty()) error = loader.plan(budget);
    return loader.bytes_needed();
  };
  std::string error;
  const double roomy = plan(1e9, error);
  ASSERT_EQ(error, "");
  const double tight = plan(roomy - 1, error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(roomy - tight, 2 * embedding_values);  // float32 → bf16; the blocks unchanged
  plan(tight - 1, error);
  EXPECT_NE(error.find("blocks kept"), std::string::npos) << error;
  EXPECT_NE(error.find("needs " + std::to_string(static_cast<long long>(tight / 1e6)) + " MB"), std::string::npos) << error;
  // And at the tight budget it loads, its products still in blocks.
  mh::CheckpointLoader loader;
  int index = -1;
  ASSERT_EQ(loader.add_gguf("model.gguf", file.data(), file.size(), file.size(), index), "");
  ASSERT_EQ(loader.plan(tight), "");
  ASSERT_EQ(loader.feed(index, file.data(), file.size()), "");
  std::unique_ptr<mh::Transformer> model;
  ASSERT_EQ(loader.finish(model), "");
  EXPECT_EQ(model->weights().layers[0].wq->type, mh::WeightType::kQ8);
  EXPECT_EQ(model->weight_bytes(), tight);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufModel, ::testing::Values("llama-q8_0", "qwen2-q4_0", "llama-q4_k_m", "gpt2-f16"));

}  // namespace

// libFuzzer target for the readers of outside files: a safetensors file (length, header, checks
// against the file size), the JSON reader under it, and config.json → a model config. Any input
// must give either a parsed result or an error message: no crash, no leak, no undefined behaviour.
// The first byte picks the reader, so one corpus covers all three; a fourth mode streams the input
// as the weights of a tiny llama checkpoint quantized while loading (weightType 'q8_0' / 'q4_0'):
// any values (inf, NaN), cut at any two places.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/hf_config.h"
#include "io/json.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 4;
  ++data;
  --size;
  if (mode == 0) {
    mh::safetensors::Header header;
    const std::string error = mh::safetensors::parse_file(data, size, header);
    if (error.empty()) {
      // A header that passed must describe exactly this file, tensor by tensor.
      if (header.file_bytes != size) __builtin_trap();
      for (const auto& t : header.tensors)
        if (t.end > size || t.begin > t.end) __builtin_trap();
    }
  } else if (mode == 1) {
    mh::json::Value value;
    mh::json::parse(reinterpret_cast<const char*>(data), size, value);
  } else if (mode == 3) {
    if (size < 4) return 0;
    const mh::MatrixStorage storage = data[0] % 2 ? mh::MatrixStorage::kQ8_0 : mh::MatrixStorage::kQ4_0;
    const char* config = R"({"model_type": "llama", "hidden_size": 32, "num_attention_heads": 1, "num_hidden_layers": 1,
      "intermediate_size": 32, "vocab_size": 8, "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "tie_word_embeddings": false})";
    struct Named { std::string name; int rows, cols; };
    const std::string l = "model.layers.0.";
    const std::vector<Named> tensors = {
        {"model.embed_tokens.weight", 8, 32}, {l + "input_layernorm.weight", 1, 32}, {l + "self_attn.q_proj.weight", 32, 32},
        {l + "self_attn.k_proj.weight", 32, 32}, {l + "self_attn.v_proj.weight", 32, 32}, {l + "self_attn.o_proj.weight", 32, 32},
        {l + "post_attention_layernorm.weight", 1, 32}, {l + "mlp.gate_proj.weight", 32, 32}, {l + "mlp.up_proj.weight", 32, 32},
        {l + "mlp.down_proj.weight", 32, 32}, {"model.norm.weight", 1, 32}, {"lm_head.weight", 8, 32}};
    std::string header = "{";
    size_t offset = 0;
    for (const Named& t : tensors) {
      const size_t bytes = static_cast<size_t>(t.rows) * t.cols * 4;
      header += (header.size() > 1 ? "," : "") + ("\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":") +
                (t.rows > 1 ? "[" + std::to_string(t.rows) + "," : "[") + std::to_string(t.cols) + "],\"data_offsets\":[" +
                std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
      offset += bytes;
    }
    header += "}";
    std::vector<uint8_t> file(8 + header.size() + offset);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) file[i] = static_cast<uint8_t>(n >> (8 * i));
    std::memcpy(file.data() + 8, header.data(), header.size());
    for (size_t i = 0; i < offset; ++i) file[8 + header.size() + i] = data[3 + i % (size - 3)];  // the input, repeated
    mh::CheckpointLoader loader;
    int index = -1;
    if (!loader.set_config(config).empty() || !loader.add_shard("model.safetensors", file.data() + 8, n, file.size(), index).empty() ||
        !loader.plan(64e6, storage).empty())
      __builtin_trap();  // the fixed checkpoint itself must load
    const size_t a = std::min(file.size(), static_cast<size_t>(data[1]) * 37), b = std::max(a, std::min(file.size(), a + data[2] * 53u));
    std::unique_ptr<mh::Transformer> model;
    if (loader.feed(index, file.data(), a).empty() && loader.feed(index, file.data() + a, b - a).empty() &&
        loader.feed(index, file.data() + b, file.size() - b).empty() && loader.finish(model).empty() && !model)
      __builtin_trap();
  } else {
    mh::CheckpointLoader loader;
    if (loader.set_config(std::string(reinterpret_cast<const char*>(data), size)).empty()) {
      const mh::TransformerConfig& c = loader.config();
      if (c.layers < 1 || c.heads < 1 || c.kv_heads < 1 || c.head_dim < 1 || c.heads % c.kv_heads) __builtin_trap();
      // The forward pass indexes these by layer and by rotary pair.
      if (!c.sliding_layers.empty() && static_cast<int>(c.sliding_layers.size()) != c.layers) __builtin_trap();
      if (2 * c.rope_inv_freq.size() > static_cast<size_t>(c.head_dim)) __builtin_trap();
      if (2 * c.rope_local_inv_freq.size() > static_cast<size_t>(c.head_dim)) __builtin_trap();
      loader.plan(1e6);  // no shards: must say so
    }
  }
  return 0;
}

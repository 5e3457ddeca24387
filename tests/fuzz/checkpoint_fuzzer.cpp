// libFuzzer target for the readers of outside files: a safetensors file (length, header, checks
// against the file size), the JSON reader under it, and config.json → a model config. Any input
// must give either a parsed result or an error message: no crash, no leak, no undefined behaviour.
// The first byte picks the reader, so one corpus covers all three.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/checkpoint.h"
#include "io/hf_config.h"
#include "io/json.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
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

// A GGUF file read as a hub checkpoint of one of the families: general.architecture picks the
// family's GgufArchitecture (nn/families/family.h), whose names turn the metadata into the
// config.json it implies and llama.cpp's tensor names into the hub's. The checkpoint loader
// (io/checkpoint.h) then reads it as it reads safetensors, dequantizing each row as it streams in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "nn/families/family.h"

namespace mh {

// llama.cpp's per-dimension rotary divisors (Llama 3.1's and 3.2's rope scaling, as its converter
// stores it): not a weight of the family's, read aside.
inline constexpr const char* kGgufRopeFactors = "rope_freqs.weight";

struct GgufTensor {
  const gguf::TensorInfo* info;  // in GgufModel::file
  std::string hub_name;          // "model.layers.0.self_attn.q_proj.weight", or kGgufRopeFactors
  bool transposed = false;       // GgufName::transposed
  int rotary_heads = 0;          // > 0: rows (a bias's elements) permuted per head of head_dim (GgufName::rotary_pairs)
  int head_dim = 0;
  // The hub's shape, outermost first (ne reversed; transposed ones as stored).
  std::vector<int64_t> shape() const;
};

struct GgufModel {
  gguf::File file;
  const GgufArchitecture* architecture = nullptr;
  std::string config_json;           // what config.json would say
  std::vector<GgufTensor> tensors;   // every tensor of the file, in file order
};

// Parses the header from the first `size` bytes of a file of file_size bytes and maps it. "" or
// why not: an architecture, tensor type, tensor or config feature that is not supported, by name,
// or the parser's errors (gguf::needs_more(error): give more of the file).
std::string read_gguf_model(const uint8_t* bytes, uint64_t size, uint64_t file_size, GgufModel& out);

}  // namespace mh

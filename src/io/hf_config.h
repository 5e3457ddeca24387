// Reads a Hugging Face config.json into a TransformerConfig: model_type gpt2, bert, llama, qwen2 or
// mistral, with the fields each family's transformers class reads (and its defaults where a field
// is absent), both rope styles (rope_theta at the top, or transformers 5's rope_parameters) and
// rope scaling of type linear, dynamic (the same within max positions) and llama3.
#pragma once

#include <string>

#include "io/json.h"
#include "nn/transformer.h"

namespace mh {

extern const char* const kSupportedModelTypes;  // "gpt2, bert, llama, qwen2, mistral"

// "" and the config, or what is missing or unsupported (naming what is supported).
std::string read_hf_config(const json::Value& config_json, TransformerConfig& out);
std::string read_hf_config(const std::string& config_text, TransformerConfig& out);

// The rotary frequencies 1 / θ^(2i/dims), i < dims/2, as transformers computes them (float32).
std::vector<float> rope_frequencies(float theta, int dims);

}  // namespace mh

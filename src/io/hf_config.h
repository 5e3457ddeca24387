// Reads a Hugging Face config.json into a TransformerConfig: model_type picks the family
// (nn/families/families.cpp), whose file reads the fields its transformers class reads (with its
// defaults where a field is absent); then the checks every family shares.
#pragma once

#include <string>

#include "io/config_fields.h"
#include "io/json.h"
#include "nn/transformer.h"

namespace mh {

// "" and the config, or what is missing or unsupported (naming what is supported).
std::string read_hf_config(const json::Value& config_json, TransformerConfig& out);
std::string read_hf_config(const std::string& config_text, TransformerConfig& out);

// The rotary frequencies 1 / θ^(2i/dims), i < dims/2, as transformers computes them (float32).
std::vector<float> rope_frequencies(float theta, int dims);
// Rotary positions for a family that uses them (c.head_dim set): rope_theta at the top or in
// transformers 5's rope_parameters, partial_rotary_factor, and scaling of type linear, dynamic
// (the same within max positions) and llama3. "" or what is unsupported.
std::string read_rope(ConfigFields& fields, TransformerConfig& c);
// out = the frequencies of rope_dims = head_dim · partial (even) dims for base theta, with a
// rope_scaling-style object folded in (null: none). "" or what is unsupported.
std::string rope_from(double theta, const json::Value* scaling, const TransformerConfig& c, double partial,
                      std::vector<float>& out);
// c.sliding_layers from config.json's layer_types (full_attention / sliding_attention), or
// `fallback` where it has none. "" or what is wrong.
std::string read_layer_types(ConfigFields& fields, TransformerConfig& c, const std::vector<uint8_t>& fallback);

}  // namespace mh

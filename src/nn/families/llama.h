// The Llama family's steps (llama.cpp), for the families that are Llama's graph with a change
// (qwen3.cpp).
#pragma once

#include "nn/families/family.h"

namespace mh {

std::string llama_read_config(ConfigFields& fields, TransformerConfig& c);
std::vector<ParamSpec> llama_params(const TransformerConfig& c);
void llama_forward(ForwardPass& pass);

// llama.cpp's names for a Llama-graph model's config keys and tensors (GGUF files); rotary_pairs:
// the file's attn_q / attn_k rows are permuted for rotary on adjacent pairs (the `llama`
// architecture's converter does it; Qwen's and Gemma's do not).
std::vector<GgufName> llama_gguf_keys();
std::vector<GgufName> llama_gguf_tensors(bool rotary_pairs);

}  // namespace mh

// The Llama family's steps (llama.cpp), for the families that are Llama's graph with a change
// (qwen3.cpp).
#pragma once

#include "nn/families/family.h"

namespace mh {

std::string llama_read_config(ConfigFields& fields, TransformerConfig& c);
std::vector<ParamSpec> llama_params(const TransformerConfig& c);
void llama_forward(ForwardPass& pass);

}  // namespace mh

// Qwen3 (model_type "qwen3"): Llama's graph (llama.cpp) without Q/K/V biases, whose queries and
// keys get an RMSNorm over each head's head_dim (q_norm, k_norm) before the rotation; head_dim is
// set apart from hidden_size / heads (128 in Qwen3-0.6B, whose hidden size is 1024 for 16 heads).
#include "nn/families/llama.h"

namespace mh {
namespace {

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p = llama_params(c);
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".self_attn.";
    p.push_back(vec(layer_name(l, "q_norm"), {h + "q_norm.weight"}, c.head_dim));
    p.push_back(vec(layer_name(l, "k_norm"), {h + "k_norm.weight"}, c.head_dim));
  }
  return p;
}

std::vector<GgufName> gguf_tensors() {
  std::vector<GgufName> names = llama_gguf_tensors(false);
  names.push_back({"blk.#.attn_q_norm.weight", "model.layers.#.self_attn.q_norm.weight"});
  names.push_back({"blk.#.attn_k_norm.weight", "model.layers.#.self_attn.k_norm.weight"});
  return names;
}

}  // namespace

extern const GgufArchitecture kQwen3Gguf = {"qwen3", "qwen3", llama_gguf_keys(), gguf_tensors()};

extern const Family kQwen3Family = {"qwen3", llama_read_config, {"model.", ""}, "embed_tokens.weight", params,
                                    llama_forward, Norm::kRmsNorm};

}  // namespace mh

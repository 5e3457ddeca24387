// The Llama family (model_type "llama", "qwen2", "mistral"): pre-RMSNorm blocks, rotary positions
// inside attention (grouped key/value heads), a SwiGLU MLP, the head tied or not. Qwen2 adds
// biases to Q, K and V; Mistral a sliding window. Names carry "model." (…ForCausalLM) or none.
// Qwen3 (qwen3.cpp) is this graph with per-head query and key norms.
#include "nn/families/llama.h"

#include "io/hf_config.h"

namespace mh {

std::string llama_read_config(ConfigFields& f, TransformerConfig& c) {
  c.layers = f.integer("num_hidden_layers", -1, 1024);
  c.heads = f.integer("num_attention_heads", -1, 1024);
  c.kv_heads = f.integer("num_key_value_heads", c.heads, 1024);
  c.d_model = f.integer("hidden_size", -1, 1 << 16);
  c.d_ff = f.integer("intermediate_size", -1, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", c.model_type == "llama" ? 2048 : 32768);
  c.norm_eps = static_cast<float>(f.number("rms_norm_eps", 1e-6));
  const std::string act = f.text("hidden_act", "silu");
  if (act != "silu") return "a " + c.model_type + " model with hidden_act \"" + act + "\" is not supported (only silu)";
  c.activation = Activation::kSilu;
  // head_dim may differ from d / heads (then W_Q is d × heads·head_dim).
  c.head_dim = f.get("head_dim") ? f.integer("head_dim", -1, 1024) : c.d_model / std::max(c.heads, 1);
  if (!f.get("head_dim") && c.d_model % std::max(c.heads, 1) != 0)
    return "hidden size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.heads) + " heads";
  c.tied = f.boolean("tie_word_embeddings", false);
  c.mlp_bias = f.boolean("mlp_bias", false);
  if (c.model_type == "qwen2") c.qkv_bias = true;
  else c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
  std::vector<uint8_t> sliding;
  if (c.model_type == "mistral") {
    if (f.get("sliding_window")) c.sliding_window = f.integer("sliding_window", -1, 1 << 30);
  } else if (c.model_type != "llama" && f.boolean("use_sliding_window", false)) {
    // Qwen's: the layers from max_window_layers on, unless layer_types says which.
    c.sliding_window = f.integer("sliding_window", -1, 1 << 30);
    const int first = f.integer("max_window_layers", c.layers, 1 << 10);
    for (int l = 0; l < c.layers; ++l) sliding.push_back(l >= first);
  }
  if (c.sliding_window > 0)
    if (std::string error = read_layer_types(f, c, sliding); !error.empty()) return error;
  return read_rope(f, c);
}

std::vector<ParamSpec> llama_params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff, d_q = int64_t{c.heads} * c.head_dim,
                d_kv = int64_t{c.kv_heads} * c.head_dim;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  p.push_back(token_embedding(c, "embed_tokens.weight"));
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".";
    norm(p, layer_name(l, "norm1"), h + "input_layernorm", d, false);
    p.push_back(mat(layer_name(l, "wq"), {h + "self_attn.q_proj.weight"}, d, d_q, T));
    p.push_back(mat(layer_name(l, "wk"), {h + "self_attn.k_proj.weight"}, d, d_kv, T));
    p.push_back(mat(layer_name(l, "wv"), {h + "self_attn.v_proj.weight"}, d, d_kv, T));
    p.push_back(mat(layer_name(l, "wo"), {h + "self_attn.o_proj.weight"}, d_q, d, T));
    if (c.qkv_bias) {
      p.push_back(vec(layer_name(l, "bq"), {h + "self_attn.q_proj.bias"}, d_q));
      p.push_back(vec(layer_name(l, "bk"), {h + "self_attn.k_proj.bias"}, d_kv));
      p.push_back(vec(layer_name(l, "bv"), {h + "self_attn.v_proj.bias"}, d_kv));
    }
    if (c.o_bias) p.push_back(vec(layer_name(l, "bo"), {h + "self_attn.o_proj.bias"}, d));
    norm(p, layer_name(l, "norm2"), h + "post_attention_layernorm", d, false);
    p.push_back(mat(layer_name(l, "w_gate"), {h + "mlp.gate_proj.weight"}, d, ff, T));
    p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.up_proj.weight"}, d, ff, T));
    p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.down_proj.weight"}, ff, d, T));
    if (c.mlp_bias) {
      p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.up_proj.bias"}, ff));
      p.push_back(vec(layer_name(l, "b_gate"), {h + "mlp.gate_proj.bias"}, ff));
      p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.down_proj.bias"}, d));
    }
  }
  norm(p, "final_norm", "norm", d, false);
  untied_output_head(p, c, "lm_head.weight");
  return p;
}

void llama_forward(ForwardPass& p) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  int n = p.n;
  float *x = p.x, *h = p.h;
  if (!p.resume(x)) {  // a patched run may start at a later layer (interpret/patching.h)
    p.embed_tokens(x);
    p.record_hidden(x, n, 0);
  }
  for (int l = p.first_layer(); l < c.layers; ++l) {
    p.begin_layer(l, x, n);
    p.norm(Hook::kLn1, l, h, x, n);
    n = p.attention_block(x, h, n, l);
    p.norm(Hook::kLn2, l, h, x, n);
    p.gated_mlp(x, h, W.layers[l], n);
    p.end_layer(l, x, n);
  }
  p.norm(Hook::kLnFinal, -1, x, x, n);
  p.finish(x, n);
}

std::vector<GgufName> llama_gguf_keys() {
  return {{"block_count", "num_hidden_layers"},
          {"context_length", "max_position_embeddings"},
          {"embedding_length", "hidden_size"},
          {"feed_forward_length", "intermediate_size"},
          {"attention.head_count", "num_attention_heads"},
          {"attention.head_count_kv", "num_key_value_heads"},
          {"attention.layer_norm_rms_epsilon", "rms_norm_eps"},
          {"attention.key_length", "head_dim"},
          {"rope.freq_base", "rope_theta"}};
}

std::vector<GgufName> llama_gguf_tensors(bool rotary_pairs) {
  const bool t = false, r = rotary_pairs;
  return {{"token_embd.weight", "model.embed_tokens.weight"},
          {"output_norm.weight", "model.norm.weight"},
          {"output.weight", "lm_head.weight"},
          {"blk.#.attn_norm.weight", "model.layers.#.input_layernorm.weight"},
          {"blk.#.attn_q.weight", "model.layers.#.self_attn.q_proj.weight", t, r},
          {"blk.#.attn_k.weight", "model.layers.#.self_attn.k_proj.weight", t, r},
          {"blk.#.attn_v.weight", "model.layers.#.self_attn.v_proj.weight"},
          {"blk.#.attn_output.weight", "model.layers.#.self_attn.o_proj.weight"},
          {"blk.#.attn_q.bias", "model.layers.#.self_attn.q_proj.bias", t, r},
          {"blk.#.attn_k.bias", "model.layers.#.self_attn.k_proj.bias", t, r},
          {"blk.#.attn_v.bias", "model.layers.#.self_attn.v_proj.bias"},
          {"blk.#.attn_output.bias", "model.layers.#.self_attn.o_proj.bias"},
          {"blk.#.ffn_norm.weight", "model.layers.#.post_attention_layernorm.weight"},
          {"blk.#.ffn_gate.weight", "model.layers.#.mlp.gate_proj.weight"},
          {"blk.#.ffn_up.weight", "model.layers.#.mlp.up_proj.weight"},
          {"blk.#.ffn_down.weight", "model.layers.#.mlp.down_proj.weight"},
          {"blk.#.ffn_gate.bias", "model.layers.#.mlp.gate_proj.bias"},
          {"blk.#.ffn_up.bias", "model.layers.#.mlp.up_proj.bias"},
          {"blk.#.ffn_down.bias", "model.layers.#.mlp.down_proj.bias"}};
}

extern const GgufArchitecture kLlamaGguf = {"llama", "llama", llama_gguf_keys(), llama_gguf_tensors(true)};
extern const GgufArchitecture kQwen2Gguf = {"qwen2", "qwen2", llama_gguf_keys(), llama_gguf_tensors(false)};

extern const Family kLlamaFamily = {"llama", llama_read_config, {"model.", ""}, "embed_tokens.weight", llama_params,
                                    llama_forward, Norm::kRmsNorm};

}  // namespace mh

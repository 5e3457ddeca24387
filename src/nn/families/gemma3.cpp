// Gemma 3's text models (model_type "gemma3_text": gemma-3-270m, gemma-3-1b): Llama's graph with
// the token embedding scaled by √d (rounded to the weights' type, as transformers does: √1152 =
// 33.94 is 34.0 in bf16), RMSNorms that scale by 1 + w, four norms a layer (before and after the
// attention and the MLP), per-head query and key norms, scores × query_pre_attn_scalar^-½, a
// GeGLU MLP (tanh GELU), and sliding-window layers (layer_types, or every layer but each
// sliding_window_pattern-th) with their own rotary base. final_logit_softcapping caps the logits
// where set; attn_logit_softcapping is read by transformers' Gemma 3 but not applied, so not here.
#include <cmath>

#include "core/half.h"
#include "io/hf_config.h"
#include "nn/families/llama.h"

namespace mh {
namespace {

// The rotary frequencies of one kind of layer: transformers 5 keeps them per layer type in
// rope_parameters; earlier configs have rope_theta + rope_scaling (full) and rope_local_base_freq.
std::string read_gemma_rope(ConfigFields& f, TransformerConfig& c) {
  double full_theta = f.number("rope_theta", 1e6), local_theta = f.number("rope_local_base_freq", 1e4);
  const json::Value* full_scaling = f.get("rope_scaling");
  const json::Value* local_scaling = nullptr;
  if (const json::Value* params = f.get("rope_parameters"); params && params->is_object()) {
    auto kind = [&](const char* name, double& theta, const json::Value*& scaling) -> std::string {
      const json::Value* p = params->find(name);
      if (!p || !p->is_object()) return "";
      ConfigFields pf{*p, ""};
      theta = pf.number("rope_theta", theta);
      scaling = p;
      return pf.error;
    };
    if (std::string e = kind("full_attention", full_theta, full_scaling); !e.empty()) return e;
    if (std::string e = kind("sliding_attention", local_theta, local_scaling); !e.empty()) return e;
  }
  if (std::string e = rope_from(full_theta, full_scaling, c, 1.0, c.rope_inv_freq); !e.empty()) return e;
  return rope_from(local_theta, local_scaling, c, 1.0, c.rope_local_inv_freq);
}

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.layers = f.integer("num_hidden_layers", -1, 1024);
  c.heads = f.integer("num_attention_heads", -1, 1024);
  c.kv_heads = f.integer("num_key_value_heads", c.heads, 1024);
  c.head_dim = f.integer("head_dim", 256, 1024);
  c.d_model = f.integer("hidden_size", -1, 1 << 16);
  c.d_ff = f.integer("intermediate_size", -1, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", 131072, 1 << 30);
  c.norm_eps = static_cast<float>(f.number("rms_norm_eps", 1e-6));
  const std::string act = f.text("hidden_activation", f.text("hidden_act", "gelu_pytorch_tanh"));
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.tied = f.boolean("tie_word_embeddings", true);
  c.qkv_bias = c.o_bias = f.boolean("attention_bias", false);
  c.attention_scale = static_cast<float>(1.0 / std::sqrt(f.number("query_pre_attn_scalar", 256)));
  c.logit_softcap = static_cast<float>(f.number("final_logit_softcapping", 0));
  if (f.boolean("use_bidirectional_attention", false))
    return "Gemma 3 with use_bidirectional_attention (an embedding model such as EmbeddingGemma) is not supported";
  c.sliding_window = f.integer("sliding_window", 4096, 1 << 30);
  const int pattern = f.integer("sliding_window_pattern", f.integer("_sliding_window_pattern", 6, 1 << 10), 1 << 10);
  std::vector<uint8_t> sliding;
  for (int l = 0; l < c.layers; ++l) sliding.push_back((l + 1) % pattern != 0);
  if (std::string error = read_layer_types(f, c, sliding); !error.empty()) return error;
  if (!(c.attention_scale > 0)) return "config.json's query_pre_attn_scalar must be > 0";
  if (c.logit_softcap < 0) return "config.json's final_logit_softcapping must be > 0";
  return read_gemma_rope(f, c);
}

// A Gemma RMSNorm's weight w, kept as 1 + w.
ParamSpec gemma_norm(std::string name, const std::string& source, int64_t size) {
  ParamSpec p = vec(std::move(name), {source + ".weight"}, size);
  p.offset = 1.0f;
  return p;
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff, d_q = int64_t{c.heads} * c.head_dim,
                d_kv = int64_t{c.kv_heads} * c.head_dim;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  p.push_back(token_embedding(c, "embed_tokens.weight"));
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".";
    p.push_back(gemma_norm(layer_name(l, "norm1_w"), h + "input_layernorm", d));
    p.push_back(mat(layer_name(l, "wq"), {h + "self_attn.q_proj.weight"}, d, d_q, T));
    p.push_back(mat(layer_name(l, "wk"), {h + "self_attn.k_proj.weight"}, d, d_kv, T));
    p.push_back(mat(layer_name(l, "wv"), {h + "self_attn.v_proj.weight"}, d, d_kv, T));
    p.push_back(mat(layer_name(l, "wo"), {h + "self_attn.o_proj.weight"}, d_q, d, T));
    if (c.qkv_bias) {
      p.push_back(vec(layer_name(l, "bq"), {h + "self_attn.q_proj.bias"}, d_q));
      p.push_back(vec(layer_name(l, "bk"), {h + "self_attn.k_proj.bias"}, d_kv));
      p.push_back(vec(layer_name(l, "bv"), {h + "self_attn.v_proj.bias"}, d_kv));
      p.push_back(vec(layer_name(l, "bo"), {h + "self_attn.o_proj.bias"}, d));
    }
    p.push_back(gemma_norm(layer_name(l, "q_norm"), h + "self_attn.q_norm", c.head_dim));
    p.push_back(gemma_norm(layer_name(l, "k_norm"), h + "self_attn.k_norm", c.head_dim));
    p.push_back(gemma_norm(layer_name(l, "post_attention_norm"), h + "post_attention_layernorm", d));
    p.push_back(gemma_norm(layer_name(l, "norm2_w"), h + "pre_feedforward_layernorm", d));
    p.push_back(mat(layer_name(l, "w_gate"), {h + "mlp.gate_proj.weight"}, d, ff, T));
    p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.up_proj.weight"}, d, ff, T));
    p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.down_proj.weight"}, ff, d, T));
    p.push_back(gemma_norm(layer_name(l, "post_mlp_norm"), h + "post_feedforward_layernorm", d));
  }
  p.push_back(gemma_norm("final_norm_w", "norm", d));
  untied_output_head(p, c, "lm_head.weight");
  return p;
}

// √d as the weights' type holds it: transformers multiplies by a buffer cast to that type.
float embedding_scale(int d, WeightType type) {
  const float scale = std::sqrt(static_cast<float>(d));
  if (type == WeightType::kBF16) return bf16_to_float(float_to_bf16(scale));
  if (type == WeightType::kF16) return half_to_float(float_to_half(scale));
  return scale;
}

void forward(ForwardPass& p) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  int n = p.n;
  float *x = p.x, *h = p.h;
  if (!p.resume(x)) {  // a patched run may start at a later layer (interpret/patching.h)
    p.embed_tokens(x, embedding_scale(c.d_model, W.token_embedding->type));
    p.record_hidden(x, n, 0);
  }
  for (int l = p.first_layer(); l < c.layers; ++l) {
    p.begin_layer(l, x, n);
    p.norm(Hook::kLn1, l, h, x, n);
    n = p.attention_block(x, h, n, l);  // through post_attention_norm
    p.norm(Hook::kLn2, l, h, x, n);
    p.gated_mlp(x, h, W.layers[l], n);  // through post_mlp_norm
    p.end_layer(l, x, n);
  }
  p.norm(Hook::kLnFinal, -1, x, x, n);
  p.finish(x, n);
}

// llama.cpp's Gemma 3: its norms under other names, and sliding layers on its fixed pattern (every
// sixth full), which is the family's default when the config has no layer_types.
std::vector<GgufName> gguf_keys() {
  std::vector<GgufName> keys = llama_gguf_keys();
  keys.push_back({"attention.key_length", "query_pre_attn_scalar"});
  keys.push_back({"attention.sliding_window", "sliding_window"});
  keys.push_back({"rope.freq_base_swa", "rope_local_base_freq"});
  keys.push_back({"final_logit_softcapping", "final_logit_softcapping"});
  return keys;
}

std::vector<GgufName> gguf_tensors() {
  std::vector<GgufName> names;
  for (GgufName n : llama_gguf_tensors(false)) {
    const std::string gguf = n.gguf;
    if (gguf == "blk.#.ffn_norm.weight") n.hub = "model.layers.#.pre_feedforward_layernorm.weight";
    names.push_back(n);
  }
  names.push_back({"blk.#.attn_q_norm.weight", "model.layers.#.self_attn.q_norm.weight"});
  names.push_back({"blk.#.attn_k_norm.weight", "model.layers.#.self_attn.k_norm.weight"});
  names.push_back({"blk.#.post_attention_norm.weight", "model.layers.#.post_attention_layernorm.weight"});
  names.push_back({"blk.#.post_ffw_norm.weight", "model.layers.#.post_feedforward_layernorm.weight"});
  return names;
}

}  // namespace

extern const GgufArchitecture kGemma3Gguf = {"gemma3", "gemma3_text", gguf_keys(), gguf_tensors(), true};

extern const Family kGemma3Family = {"gemma3_text", read_config, {"model.", ""}, "embed_tokens.weight", params,
                                     forward, Norm::kRmsNorm};

}  // namespace mh

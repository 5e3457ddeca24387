// GPT-NeoX (model_type "gpt_neox": Pythia, the research suite with checkpoints across training):
// pre-LayerNorm blocks whose attention and MLP read the same residual in parallel
// (use_parallel_residual: x + attn(ln1 x) + mlp(ln2 x)), rotary positions on the first
// rotary_pct of each head's dims, a 4·d GELU MLP, an untied head (embed_out). query_key_value
// fuses Q, K and V per head: its output features run heads × [q, k, v] × head_dim.
// GPTNeoXForCausalLM's names carry "gpt_neox." (embed_out outside it); GPTNeoXModel's none, and no head.
#include "io/hf_config.h"
#include "nn/families/family.h"

namespace mh {
namespace {

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.layers = f.integer("num_hidden_layers", -1, 1024);
  c.heads = f.integer("num_attention_heads", -1, 1024);
  c.d_model = f.integer("hidden_size", -1, 1 << 16);
  c.d_ff = f.integer("intermediate_size", 4 * c.d_model, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", 2048);
  c.norm_eps = static_cast<float>(f.number("layer_norm_eps", 1e-5));
  const std::string act = f.text("hidden_act", "gelu");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.qkv_bias = c.o_bias = f.boolean("attention_bias", true);
  c.mlp_bias = true;
  c.tied = f.boolean("tie_word_embeddings", false);
  c.parallel_residual = f.boolean("use_parallel_residual", true);
  if (c.d_model % c.heads != 0)
    return "hidden size " + std::to_string(c.d_model) + " is not divisible by " + std::to_string(c.heads) + " heads";
  c.head_dim = c.d_model / c.heads;
  // The older names (rotary_emb_base, rotary_pct) or transformers 5's rope_parameters.
  double theta = f.number("rotary_emb_base", f.number("rope_theta", 10000.0));
  double partial = f.number("rotary_pct", f.number("partial_rotary_factor", 0.25));
  const json::Value* params = f.get("rope_parameters");
  if (params && params->is_object()) {
    ConfigFields p{*params, ""};
    theta = p.number("rope_theta", theta);
    partial = p.number("partial_rotary_factor", partial);
    if (!p.error.empty()) return p.error;
  }
  if (!(partial > 0 && partial <= 1)) return "config.json's rotary_pct must be in (0, 1]";
  const json::Value* scaling = f.get("rope_scaling");
  return rope_from(theta, scaling ? scaling : params, c, partial, c.rope_inv_freq);
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  p.push_back(token_embedding(c, "embed_in.weight"));
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "layers." + std::to_string(l) + ".";
    norm(p, layer_name(l, "norm1"), h + "input_layernorm", d);
    const char* qkv[] = {"wq", "wk", "wv"};
    const char* qkv_bias[] = {"bq", "bk", "bv"};
    for (int part = 0; part < 3; ++part) {
      ParamSpec w = mat(layer_name(l, qkv[part]), {h + "attention.query_key_value.weight"}, d, d, Layout::kPerHead);
      w.part = part;
      w.parts = 3;
      w.group = c.head_dim;
      p.push_back(w);
      if (!c.qkv_bias) continue;
      ParamSpec b = vec(layer_name(l, qkv_bias[part]), {h + "attention.query_key_value.bias"}, d);
      b.layout = Layout::kPerHead;
      b.part = part;
      b.parts = 3;
      b.group = c.head_dim;
      p.push_back(b);
    }
    p.push_back(mat(layer_name(l, "wo"), {h + "attention.dense.weight"}, d, d, T));
    if (c.o_bias) p.push_back(vec(layer_name(l, "bo"), {h + "attention.dense.bias"}, d));
    norm(p, layer_name(l, "norm2"), h + "post_attention_layernorm", d);
    p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.dense_h_to_4h.weight"}, d, ff, T));
    p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.dense_h_to_4h.bias"}, ff));
    p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.dense_4h_to_h.weight"}, ff, d, T));
    p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.dense_4h_to_h.bias"}, d));
  }
  norm(p, "final_norm", "final_layer_norm", d);
  untied_output_head(p, c, "embed_out.weight");
  if (!c.tied) p.back().optional = true;  // GPTNeoXModel: no head
  return p;
}

void forward(ForwardPass& p) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  int n = p.n;
  float *x = p.x, *h = p.h, *g = p.g;
  if (!p.resume(x)) {  // a patched run may start at a later layer (interpret/patching.h)
    p.embed_tokens(x);
    p.record_hidden(x, n, 0);
  }
  for (int l = p.first_layer(); l < c.layers; ++l) {
    const TransformerWeights::Layer& L = W.layers[l];
    p.begin_layer(l, x, n);
    p.norm(Hook::kLn1, l, h, x, n);
    if (c.parallel_residual) {  // both read x as it enters the layer (no hook_resid_mid)
      p.norm(Hook::kLn2, l, g, x, n);
      n = p.attention_block(x, h, n, l, g);
      p.mlp(x, g, L, n);
    } else {
      n = p.attention_block(x, h, n, l);
      p.norm(Hook::kLn2, l, h, x, n);
      p.mlp(x, h, L, n);
    }
    p.end_layer(l, x, n);
  }
  p.norm(Hook::kLnFinal, -1, x, x, n);
  p.finish(x, n);
}

}  // namespace

extern const Family kGptNeoxFamily = {"gpt_neox", read_config, {"gpt_neox.", ""}, "embed_in.weight", params, forward,
                                     Norm::kLayerNorm};

}  // namespace mh

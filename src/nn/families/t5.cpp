// T5 (model_type "t5": t5-small … t5-11b, flan-t5-*): pre-norm blocks with T5's RMS norm (no
// mean, no bias), no biases anywhere, unscaled attention scores plus a relative position bias
// (bidirectional buckets in the encoder, causal in the decoder; one table per stack, in its
// layer 0), heads × d_kv that need not be d_model, a ReLU or gated-GELU MLP, and the decoder's
// output × d_model^-½ before the head where scale_decoder_outputs (older configs: where tied).
#include "nn/encoder_decoder.h"
#include "nn/families/family.h"

namespace mh {

namespace {

// feed_forward_proj: "relu", "gelu", "gated-gelu" (which transformers reads as gelu_new), "gated-silu" …
std::string read_feed_forward(const std::string& proj, TransformerConfig& c) {
  const size_t dash = proj.find('-');
  std::string act = proj;
  if (dash != std::string::npos) {
    if (proj.compare(0, dash, "gated") != 0 || proj.find('-', dash + 1) != std::string::npos)
      return "T5's feed_forward_proj \"" + proj + "\" is not supported (\"relu\", \"gated-gelu\", or \"gated-\" and an activation)";
    c.gated = true;
    act = proj == "gated-gelu" ? "gelu_new" : proj.substr(dash + 1);
  }
  if (!activation_from(act, c.activation))
    return "T5's feed_forward_proj \"" + proj + "\" is not supported: activation \"" + act +
           "\" is not one of gelu, gelu_new, relu, silu";
  return "";
}

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.causal = false;
  c.layers = f.integer("num_layers", -1, 1024);
  c.decoder_layers = f.integer("num_decoder_layers", c.layers, 1024);
  c.heads = f.integer("num_heads", -1, 1024);
  c.d_model = f.integer("d_model", -1, 1 << 16);
  c.head_dim = f.integer("d_kv", -1, 1024);
  c.d_ff = f.integer("d_ff", -1, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.norm_eps = static_cast<float>(f.number("layer_norm_epsilon", 1e-6));
  c.relative_buckets = f.integer("relative_attention_num_buckets", 32, 1 << 16);
  c.relative_max_distance = f.integer("relative_attention_max_distance", 128, 1 << 20);
  c.max_positions = kMaxTokens;  // relative positions: any length that fits a run
  c.attention_scale = 1.0f;      // unscaled: T5 folds 1/√d_kv into its initialisation
  c.tied = f.boolean("tie_word_embeddings", true);
  if (f.boolean("scale_decoder_outputs", c.tied)) c.output_scale = 1.0f / std::sqrt(static_cast<float>(c.d_model));
  if (c.relative_buckets < 4) return "T5's relative_attention_num_buckets must be at least 4";
  // The logarithmic buckets span max_exact … max_distance, max_exact being half the decoder's buckets.
  if (c.relative_max_distance <= c.relative_buckets / 2)
    return "T5's relative_attention_max_distance must be more than half its relative_attention_num_buckets";
  return read_feed_forward(f.text("feed_forward_proj", "relu"), c);
}

// One attention's four matrices (nn.Linear [out][in], no biases) under `from` (…SelfAttention.).
void attention(std::vector<ParamSpec>& p, const TransformerConfig& c, char s, int l, const std::string& from,
               bool cross) {
  const int64_t d = c.d_model, inner = int64_t{c.heads} * c.head_dim;
  const Layout T = Layout::kTranspose;
  const char* names[][2] = {{"wq", "q"}, {"wk", "k"}, {"wv", "v"}};
  for (auto& [ours, theirs] : names)
    p.push_back(mat(stack_name(s, l, cross ? (std::string("x") + ours).c_str() : ours), {from + theirs + ".weight"}, d, inner, T));
  p.push_back(mat(stack_name(s, l, cross ? "xwo" : "wo"), {from + "o.weight"}, inner, d, T));
}

void stack_params(std::vector<ParamSpec>& p, const TransformerConfig& c, bool decoder) {
  const char s = decoder ? 'd' : 'e';
  const std::string root = decoder ? "decoder." : "encoder.";
  const int layers = decoder ? c.decoder_layers : c.layers;
  const int64_t d = c.d_model, ff = c.d_ff;
  const Layout T = Layout::kTranspose;
  for (int l = 0; l < layers; ++l) {
    const std::string b = root + "block." + std::to_string(l) + ".layer.";
    attention(p, c, s, l, b + "0.SelfAttention.", false);
    norm(p, stack_name(s, l, "norm1"), b + "0.layer_norm", d, false);
    if (decoder) {
      attention(p, c, s, l, b + "1.EncDecAttention.", true);
      norm(p, stack_name(s, l, "xnorm"), b + "1.layer_norm", d, false);
    }
    const std::string mlp = b + (decoder ? "2." : "1.");
    if (c.gated) {
      p.push_back(mat(stack_name(s, l, "w_gate"), {mlp + "DenseReluDense.wi_0.weight"}, d, ff, T));
      p.push_back(mat(stack_name(s, l, "w_up"), {mlp + "DenseReluDense.wi_1.weight"}, d, ff, T));
    } else {
      p.push_back(mat(stack_name(s, l, "w_up"), {mlp + "DenseReluDense.wi.weight"}, d, ff, T));
    }
    p.push_back(mat(stack_name(s, l, "w_down"), {mlp + "DenseReluDense.wo.weight"}, ff, d, T));
    norm(p, stack_name(s, l, "norm2"), mlp + "layer_norm", d, false);
  }
  ParamSpec bias = vec(stack_name(s, "relative_bias"), {root + "block.0.layer.0.SelfAttention.relative_attention_bias.weight"},
                       int64_t{c.relative_buckets} * c.heads);
  bias.source_dims = {c.relative_buckets, c.heads};
  p.push_back(bias);
  norm(p, stack_name(s, "final_norm"), root + "final_layer_norm", d, false);
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  p.push_back(token_embedding(c, "shared.weight"));
  stack_params(p, c, false);
  stack_params(p, c, true);
  untied_output_head(p, c, "lm_head.weight");
  return p;
}

// Pre-norm: x + sublayer(norm(x)); the stack's final norm before its end.
void stack_forward(Seq2SeqPass& p) {
  float *x = p.x, *h = p.h;
  const int layers = static_cast<int>(p.stack.layers.size());
  p.embed();
  for (int l = 0; l < layers; ++l) {
    const Seq2SeqLayer& L = p.stack.layers[l];
    p.begin_layer(l, x);
    p.norm(h, x, L.self_norm_w, nullptr);
    p.self_attention(x, h, l);
    if (p.decoder) {
      p.norm(h, x, L.cross_norm_w, nullptr);
      p.cross_attention(x, h, l);
    }
    p.norm(h, x, L.mlp_norm_w, nullptr);
    p.mlp(x, h, l);
    p.end_layer(l, x);
  }
  p.norm(x, x, p.stack.final_norm_w, nullptr);
  p.finish(x);
}

}  // namespace

extern const Family kT5Family = {"t5", read_config, {""}, "shared.weight", params, nullptr, Norm::kRmsNorm, stack_forward};

}  // namespace mh

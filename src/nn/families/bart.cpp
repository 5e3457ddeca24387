// BART (model_type "bart": facebook/bart-base, bart-large-cnn, distilbart-*): post-LayerNorm
// encoder and decoder with biases everywhere, learned positions offset by 2 then
// layernorm_embedding, embeddings × √d where scale_embedding, the head tied to the shared
// embedding plus final_logits_bias.
#include "nn/families/bart.h"

#include <cmath>

#include "nn/encoder_decoder.h"

namespace mh {

std::string bart_read_config(ConfigFields& f, TransformerConfig& c) {
  c.causal = false;
  c.layers = f.integer("encoder_layers", -1, 1024);
  c.decoder_layers = f.integer("decoder_layers", -1, 1024);
  c.heads = f.integer("encoder_attention_heads", -1, 1024);
  c.d_model = f.integer("d_model", -1, 1 << 16);
  c.d_ff = f.integer("encoder_ffn_dim", -1, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", 1024, 1 << 20);
  c.norm_eps = 1e-5f;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.post_norm = true;
  c.tied = f.boolean("tie_word_embeddings", true);
  if (f.boolean("scale_embedding", false)) c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
  const std::string act = f.text("activation_function", "gelu");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, relu, silu, swish)";
  if (f.integer("decoder_attention_heads", c.heads, 1024) != c.heads || f.integer("decoder_ffn_dim", c.d_ff, 1 << 18) != c.d_ff)
    return "a " + c.model_type + " model whose decoder has other sizes than its encoder (decoder_attention_heads, "
           "decoder_ffn_dim) is not supported";
  if (f.boolean("normalize_before", false) || f.boolean("add_final_layer_norm", false))
    return "a " + c.model_type + " model with pre-LayerNorm blocks (normalize_before, add_final_layer_norm: mBART's) is not supported";
  return "";
}

namespace {
void attention(std::vector<ParamSpec>& p, int64_t d, char s, int l, const std::string& from, bool cross) {
  const Layout T = Layout::kTranspose;
  auto name = [&](const char* what) { return stack_name(s, l, ((cross ? "x" : "") + std::string(what)).c_str()); };
  const char* names[][3] = {{"wq", "bq", "q_proj"}, {"wk", "bk", "k_proj"}, {"wv", "bv", "v_proj"}, {"wo", "bo", "out_proj"}};
  for (auto& [weight, bias, theirs] : names) {
    p.push_back(mat(name(weight), {from + theirs + ".weight"}, d, d, T));
    p.push_back(vec(name(bias), {from + theirs + ".bias"}, d));
  }
}

void stack_params(std::vector<ParamSpec>& p, const TransformerConfig& c, bool decoder, bool learned_positions) {
  const char s = decoder ? 'd' : 'e';
  const std::string root = decoder ? "decoder." : "encoder.";
  const int64_t d = c.d_model, ff = c.d_ff;
  const Layout T = Layout::kTranspose;
  if (learned_positions) {
    p.push_back(rows_table(mat(stack_name(s, "positions"), {root + "embed_positions.weight"}, c.max_positions + c.position_offset, d)));
    norm(p, stack_name(s, "embed_norm"), root + "layernorm_embedding", d);
  }
  for (int l = 0; l < (decoder ? c.decoder_layers : c.layers); ++l) {
    const std::string b = root + "layers." + std::to_string(l) + ".";
    attention(p, d, s, l, b + "self_attn.", false);
    norm(p, stack_name(s, l, "norm1"), b + "self_attn_layer_norm", d);
    if (decoder) {
      attention(p, d, s, l, b + "encoder_attn.", true);
      norm(p, stack_name(s, l, "xnorm"), b + "encoder_attn_layer_norm", d);
    }
    p.push_back(mat(stack_name(s, l, "w_up"), {b + "fc1.weight"}, d, ff, T));
    p.push_back(vec(stack_name(s, l, "b_up"), {b + "fc1.bias"}, ff));
    p.push_back(mat(stack_name(s, l, "w_down"), {b + "fc2.weight"}, ff, d, T));
    p.push_back(vec(stack_name(s, l, "b_down"), {b + "fc2.bias"}, d));
    norm(p, stack_name(s, l, "norm2"), b + "final_layer_norm", d);
  }
}
}  // namespace

std::vector<ParamSpec> bart_params(const TransformerConfig& c, bool learned_positions) {
  std::vector<ParamSpec> p;
  ParamSpec embed = token_embedding(c, "shared.weight");
  embed.sources.push_back("encoder.embed_tokens.weight");  // checkpoints saved without the shared copy
  p.push_back(embed);
  stack_params(p, c, false, learned_positions);
  stack_params(p, c, true, learned_positions);
  ParamSpec bias = vec("output_bias", {"final_logits_bias"}, c.vocab, /*optional=*/true);
  bias.unprefixed = true;
  bias.source_dims = {1, c.vocab};
  p.push_back(bias);
  untied_output_head(p, c, "lm_head.weight");
  return p;
}

void bart_stack_forward(Seq2SeqPass& p) {
  float* x = p.x;
  const int layers = static_cast<int>(p.stack.layers.size());
  p.embed();
  for (int l = 0; l < layers; ++l) {
    const Seq2SeqLayer& L = p.stack.layers[l];
    p.begin_layer(l, x);
    p.self_attention(x, x, l);
    p.norm(x, x, L.self_norm_w, L.self_norm_b);
    if (p.decoder) {
      p.cross_attention(x, x, l);
      p.norm(x, x, L.cross_norm_w, L.cross_norm_b);
    }
    p.mlp(x, x, l);
    p.norm(x, x, L.mlp_norm_w, L.mlp_norm_b);
    p.end_layer(l, x);
  }
  p.finish(x);
}

namespace {
std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.position_offset = 2;  // BartLearnedPositionalEmbedding's offset
  return bart_read_config(f, c);
}
std::vector<ParamSpec> params(const TransformerConfig& c) { return bart_params(c, true); }
}  // namespace

extern const Family kBartFamily = {"bart", read_config, {"model.", ""}, "encoder.layers.0.self_attn.q_proj.weight",
                                   params, nullptr, Norm::kLayerNorm, bart_stack_forward};

}  // namespace mh

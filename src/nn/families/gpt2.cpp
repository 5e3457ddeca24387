// GPT-2 (model_type "gpt2"): pre-LayerNorm blocks, learned positions, a 4·d GELU MLP, the head
// tied to the token embedding. Conv1D weights are stored [in][out] already; c_attn holds Q, K and
// V side by side. Checkpoints saved from GPT2LMHeadModel carry "transformer.", GPT2Model none.
#include "nn/families/gpt2.h"

namespace mh {

namespace {

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.layers = f.integer("n_layer", -1, 1024);
  c.heads = f.integer("n_head", -1, 1024);
  c.d_model = f.integer("n_embd", -1, 1 << 16);
  c.d_ff = f.integer("n_inner", 4 * c.d_model);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.get("n_positions") ? f.integer("n_positions", -1) : f.integer("n_ctx", -1);
  c.norm_eps = static_cast<float>(f.number("layer_norm_epsilon", 1e-5));
  const std::string act = f.text("activation_function", "gelu_new");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.tied = f.boolean("tie_word_embeddings", true);
  if (!f.boolean("scale_attn_weights", true)) c.attention_scale = 1.0f;
  c.scale_by_layer = f.boolean("scale_attn_by_inverse_layer_idx", false);
  if (f.boolean("add_cross_attention", false)) return "GPT-2 with cross-attention (an encoder-decoder) is not supported";
  return "";
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff;
  p.push_back(token_embedding(c, "wte.weight"));
  p.push_back(rows_table(mat("positions", {"wpe.weight"}, c.max_positions, d)));
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    norm(p, layer_name(l, "norm1"), h + "ln_1", d);
    const char* qkv[] = {"wq", "wk", "wv"};
    const char* qkv_bias[] = {"bq", "bk", "bv"};
    for (int part = 0; part < 3; ++part) {
      ParamSpec w = mat(layer_name(l, qkv[part]), {h + "attn.c_attn.weight"}, d, d, Layout::kColumns);
      w.part = part;
      w.parts = 3;
      p.push_back(w);
      ParamSpec b = vec(layer_name(l, qkv_bias[part]), {h + "attn.c_attn.bias"}, d);
      b.layout = Layout::kRange;
      b.part = part;
      b.parts = 3;
      p.push_back(b);
    }
    p.push_back(mat(layer_name(l, "wo"), {h + "attn.c_proj.weight"}, d, d));
    p.push_back(vec(layer_name(l, "bo"), {h + "attn.c_proj.bias"}, d));
    norm(p, layer_name(l, "norm2"), h + "ln_2", d);
    p.push_back(mat(layer_name(l, "w_up"), {h + "mlp.c_fc.weight"}, d, ff));
    p.push_back(vec(layer_name(l, "b_up"), {h + "mlp.c_fc.bias"}, ff));
    p.push_back(mat(layer_name(l, "w_down"), {h + "mlp.c_proj.weight"}, ff, d));
    p.push_back(vec(layer_name(l, "b_down"), {h + "mlp.c_proj.bias"}, d));
  }
  norm(p, "final_norm", "ln_f", d);
  untied_output_head(p, c, "lm_head.weight");
  return p;
}

// llama.cpp's GPT-2: its converter stores the Conv1D weights transposed, as nn.Linear's [out][in].
std::vector<GgufName> gguf_tensors() {
  const bool T = true;
  return {{"token_embd.weight", "wte.weight"},
          {"position_embd.weight", "wpe.weight"},
          {"output_norm.weight", "ln_f.weight"},
          {"output_norm.bias", "ln_f.bias"},
          {"output.weight", "lm_head.weight"},
          {"blk.#.attn_norm.weight", "h.#.ln_1.weight"},
          {"blk.#.attn_norm.bias", "h.#.ln_1.bias"},
          {"blk.#.attn_qkv.weight", "h.#.attn.c_attn.weight", T},
          {"blk.#.attn_qkv.bias", "h.#.attn.c_attn.bias"},
          {"blk.#.attn_output.weight", "h.#.attn.c_proj.weight", T},
          {"blk.#.attn_output.bias", "h.#.attn.c_proj.bias"},
          {"blk.#.ffn_norm.weight", "h.#.ln_2.weight"},
          {"blk.#.ffn_norm.bias", "h.#.ln_2.bias"},
          {"blk.#.ffn_up.weight", "h.#.mlp.c_fc.weight", T},
          {"blk.#.ffn_up.bias", "h.#.mlp.c_fc.bias"},
          {"blk.#.ffn_down.weight", "h.#.mlp.c_proj.weight", T},
          {"blk.#.ffn_down.bias", "h.#.mlp.c_proj.bias"}};
}

}  // namespace

extern const GgufArchitecture kGpt2Gguf = {"gpt2",
                                           "gpt2",
                                           {{"block_count", "n_layer"},
                                            {"context_length", "n_positions"},
                                            {"embedding_length", "n_embd"},
                                            {"feed_forward_length", "n_inner"},
                                            {"attention.head_count", "n_head"},
                                            {"attention.layer_norm_epsilon", "layer_norm_epsilon"}},
                                           gguf_tensors()};

void gpt2_forward(ForwardPass& p) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  int n = p.n;
  float *x = p.x, *h = p.h;
  if (!p.resume(x)) {  // a patched run may start at a later layer (interpret/patching.h)
    p.embed_tokens(x);
    p.add_embedding(Hook::kPosEmbed, x, *W.position_embedding, nullptr, p.first_position);
    p.record_hidden(x, n, 0);
  }
  for (int l = p.first_layer(); l < c.layers; ++l) {
    p.begin_layer(l, x, n);
    p.norm(Hook::kLn1, l, h, x, n);
    n = p.attention_block(x, h, n, l);
    p.norm(Hook::kLn2, l, h, x, n);
    p.mlp(x, h, W.layers[l], n);
    p.end_layer(l, x, n);
  }
  p.norm(Hook::kLnFinal, -1, x, x, n);
  p.finish(x, n);
}

extern const Family kGpt2Family = {"gpt2", read_config, {"", "transformer."}, "wte.weight", params, gpt2_forward,
                                  Norm::kLayerNorm};

}  // namespace mh

// DistilBERT (model_type "distilbert"): BERT's encoder (bert.cpp) with half the layers, other
// names (q_lin … out_lin, sa_layer_norm, ffn.lin1/lin2, output_layer_norm), no token types, every
// LayerNorm's eps 1e-12, and its MLM head vocab_transform → activation → vocab_layer_norm →
// vocab_projector (tied to the embedding, its own bias). DistilBertForMaskedLM's encoder names
// carry "distilbert." (the head's none); DistilBertModel's none, and no head.
#include "nn/families/bert.h"

namespace mh {
namespace {

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.causal = false;
  c.layers = f.integer("n_layers", -1, 1024);
  c.heads = f.integer("n_heads", -1, 1024);
  c.d_model = f.integer("dim", -1, 1 << 16);
  c.d_ff = f.integer("hidden_dim", 4 * c.d_model, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", 512);
  c.norm_eps = 1e-12f;  // fixed in transformers' DistilBERT
  const std::string act = f.text("activation", "gelu");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.tied = f.boolean("tie_word_embeddings", true);
  c.head_transform = true;
  c.head_activation = c.activation;
  return "";
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff, V = c.vocab;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  p.push_back(token_embedding(c, "embeddings.word_embeddings.weight"));
  p.push_back(rows_table(mat("positions", {"embeddings.position_embeddings.weight"}, c.max_positions, d)));
  norm(p, "embed_norm", "embeddings.LayerNorm", d);
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "transformer.layer." + std::to_string(l) + ".";
    const char* names[][3] = {{"wq", "bq", "q_lin"}, {"wk", "bk", "k_lin"}, {"wv", "bv", "v_lin"}, {"wo", "bo", "out_lin"}};
    for (auto& [weight, bias, theirs] : names) {
      p.push_back(mat(layer_name(l, weight), {h + "attention." + theirs + ".weight"}, d, d, T));
      p.push_back(vec(layer_name(l, bias), {h + "attention." + theirs + ".bias"}, d));
    }
    norm(p, layer_name(l, "norm1"), h + "sa_layer_norm", d);
    p.push_back(mat(layer_name(l, "w_up"), {h + "ffn.lin1.weight"}, d, ff, T));
    p.push_back(vec(layer_name(l, "b_up"), {h + "ffn.lin1.bias"}, ff));
    p.push_back(mat(layer_name(l, "w_down"), {h + "ffn.lin2.weight"}, ff, d, T));
    p.push_back(vec(layer_name(l, "b_down"), {h + "ffn.lin2.bias"}, d));
    norm(p, layer_name(l, "norm2"), h + "output_layer_norm", d);
  }
  std::vector<ParamSpec> head;
  head.push_back(mat("head_dense_w", {"vocab_transform.weight"}, d, d, T));
  head.push_back(vec("head_dense_b", {"vocab_transform.bias"}, d));
  norm(head, "head_norm", "vocab_layer_norm", d);
  head.push_back(vec("output_bias", {"vocab_projector.bias"}, V));
  if (!c.tied) head.push_back(mat("output", {"vocab_projector.weight"}, d, V, T));
  for (ParamSpec& s : head) {
    s.optional = true;
    s.unprefixed = true;
    p.push_back(s);
  }
  return p;
}

void forward(ForwardPass& p) { bert_encoder_forward(p, nullptr); }

}  // namespace

extern const Family kDistilbertFamily = {"distilbert", read_config, {"distilbert.", ""},
                                         "embeddings.word_embeddings.weight", params, forward,
                                         Norm::kLayerNorm};

}  // namespace mh

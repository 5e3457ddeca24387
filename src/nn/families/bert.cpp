// BERT (model_type "bert"): post-LayerNorm blocks over word + position + token-type embeddings,
// no mask; the masked-LM head (dense → GELU → LayerNorm → tied output with its own bias) where the
// checkpoint has it (BertForMaskedLM, outside the "bert." prefix; BertModel has none).
#include "nn/families/bert.h"

namespace mh {

std::string bert_read_config(ConfigFields& f, TransformerConfig& c) {
  c.causal = false;
  c.layers = f.integer("num_hidden_layers", -1, 1024);
  c.heads = f.integer("num_attention_heads", -1, 1024);
  c.d_model = f.integer("hidden_size", -1, 1 << 16);
  c.d_ff = f.integer("intermediate_size", -1, 1 << 18);
  c.vocab = f.integer("vocab_size", -1, 1 << 22);
  c.max_positions = f.integer("max_position_embeddings", 512);
  c.type_vocab = f.integer("type_vocab_size", 2, 1 << 10);
  c.norm_eps = static_cast<float>(f.number("layer_norm_eps", 1e-12));
  const std::string act = f.text("hidden_act", "gelu");
  if (!activation_from(act, c.activation))
    return "activation \"" + act + "\" is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, silu)";
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.tied = f.boolean("tie_word_embeddings", true);
  c.head_transform = true;
  c.head_activation = c.activation;
  const std::string position = f.text("position_embedding_type", "absolute");
  if (position != "absolute")
    return "BERT with position_embedding_type \"" + position + "\" is not supported (only \"absolute\")";
  if (f.boolean("is_decoder", false)) return "BERT as a decoder (is_decoder: true) is not supported";
  return "";
}

std::vector<ParamSpec> bert_params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  const int64_t d = c.d_model, ff = c.d_ff, V = c.vocab;
  const Layout T = Layout::kTranspose;  // nn.Linear: [out][in]
  p.push_back(token_embedding(c, "embeddings.word_embeddings.weight"));
  p.push_back(rows_table(mat("positions", {"embeddings.position_embeddings.weight"}, position_rows(c), d)));
  p.push_back(rows_table(mat("types", {"embeddings.token_type_embeddings.weight"}, c.type_vocab, d)));
  norm(p, "embed_norm", "embeddings.LayerNorm", d);
  for (int l = 0; l < c.layers; ++l) {
    const std::string h = "encoder.layer." + std::to_string(l) + ".";
    const char* names[][3] = {{"wq", "bq", "query"}, {"wk", "bk", "key"}, {"wv", "bv", "value"}};
    for (auto& [weight, bias, theirs] : names) {
      p.push_back(mat(layer_name(l, weight), {h + "attention.self." + theirs + ".weight"}, d, d, T));
      p.push_back(vec(layer_name(l, bias), {h + "attention.self." + theirs + ".bias"}, d));
    }
    p.push_back(mat(layer_name(l, "wo"), {h + "attention.output.dense.weight"}, d, d, T));
    p.push_back(vec(layer_name(l, "bo"), {h + "attention.output.dense.bias"}, d));
    norm(p, layer_name(l, "norm1"), h + "attention.output.LayerNorm", d);
    p.push_back(mat(layer_name(l, "w_up"), {h + "intermediate.dense.weight"}, d, ff, T));
    p.push_back(vec(layer_name(l, "b_up"), {h + "intermediate.dense.bias"}, ff));
    p.push_back(mat(layer_name(l, "w_down"), {h + "output.dense.weight"}, ff, d, T));
    p.push_back(vec(layer_name(l, "b_down"), {h + "output.dense.bias"}, d));
    norm(p, layer_name(l, "norm2"), h + "output.LayerNorm", d);
  }
  std::vector<ParamSpec> head;
  head.push_back(mat("head_dense_w", {"cls.predictions.transform.dense.weight"}, d, d, T));
  head.push_back(vec("head_dense_b", {"cls.predictions.transform.dense.bias"}, d));
  norm(head, "head_norm", "cls.predictions.transform.LayerNorm", d);
  head.push_back(vec("output_bias", {"cls.predictions.bias", "cls.predictions.decoder.bias"}, V));
  if (!c.tied) head.push_back(mat("output", {"cls.predictions.decoder.weight"}, d, V, T));
  for (ParamSpec& s : head) {
    s.optional = true;
    s.unprefixed = true;
    p.push_back(s);
  }
  return p;
}

void bert_encoder_forward(ForwardPass& p, const int32_t* positions) {
  const TransformerConfig& c = p.config;
  const TransformerWeights& W = p.weights;
  int n = p.n;
  const int d = c.d_model;
  float *x = p.x, *h = p.h;
  std::vector<int32_t> types(static_cast<size_t>(n), 0);
  if (p.request().token_types) types.assign(p.request().token_types, p.request().token_types + n);
  p.embed_tokens(x);
  p.add_embedding(Hook::kPosEmbed, x, *W.position_embedding, positions, 0);
  if (W.type_embedding) p.add_embedding(Hook::kTokenTypeEmbed, x, *W.type_embedding, types.data(), 0);
  p.norm(Hook::kEmbedNormalized, -1, x, x, n);
  p.record_hidden(x, n, 0);
  for (int l = 0; l < c.layers; ++l) {  // post-LayerNorm: each sublayer's norm after its residual
    p.begin_layer(l, x, n);
    n = p.attention_block(x, x, n, l);
    p.norm(Hook::kLn1, l, x, x, n);
    p.mlp(x, x, W.layers[l], n);
    p.hook(Hook::kResidPost, l, x, n, d);
    p.norm(Hook::kNormalizedResidPost, l, x, x, n);
    p.record_hidden(x, n, l + 1);
  }
  p.keep_last_hidden(x, n);
  if (!p.wants_logits()) return;
  matmul(h, x, *W.head_dense_w, f32(W.head_dense_b), n);
  activate(c.head_activation, h, int64_t{n} * d);
  layer_norm(h, h, f32(W.head_norm_w), f32(W.head_norm_b), n, d, c.norm_eps);
  p.output_head(h, n);
}

namespace {

void forward(ForwardPass& p) { bert_encoder_forward(p, nullptr); }

}  // namespace

extern const Family kBertFamily = {"bert", bert_read_config, {"bert.", ""}, "embeddings.word_embeddings.weight",
                                   bert_params, forward, Norm::kLayerNorm};

}  // namespace mh

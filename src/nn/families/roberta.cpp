// RoBERTa (model_type "roberta"): BERT's encoder (bert.cpp) with positions counted from
// pad_token_id + 1 (a pad token's own position is pad_token_id), one token type, and its MLM head
// under lm_head.* (dense → exact GELU → LayerNorm → decoder tied to the embedding, + lm_head.bias).
// RobertaForMaskedLM's names carry "roberta."; RobertaModel's none, and no head.
#include "nn/families/bert.h"

namespace mh {
namespace {

std::string read_config(ConfigFields& f, TransformerConfig& c) {
  std::string error = bert_read_config(f, c);
  c.head_activation = Activation::kGeluErf;  // RobertaLMHead calls gelu itself, whatever hidden_act says
  const json::Value* pad = f.get("pad_token_id");
  c.pad_token = pad && pad->is_number() ? static_cast<int>(pad->number) : 1;
  c.type_vocab = f.integer("type_vocab_size", 1, 1 << 10);
  c.max_positions = f.integer("max_position_embeddings", 514) - c.pad_token - 1;
  if (error.empty() && (c.pad_token < 0 || c.pad_token >= c.vocab || c.max_positions < 1))
    return "config.json's pad_token_id and max_position_embeddings leave no positions";
  return error;
}

std::vector<ParamSpec> params(const TransformerConfig& c) {
  std::vector<ParamSpec> p;
  for (ParamSpec& s : bert_params(c))  // BERT's, without its cls.predictions head
    if (!s.unprefixed) p.push_back(std::move(s));
  const int64_t d = c.d_model;
  std::vector<ParamSpec> head;
  head.push_back(mat("head_dense_w", {"lm_head.dense.weight"}, d, d, Layout::kTranspose));
  head.push_back(vec("head_dense_b", {"lm_head.dense.bias"}, d));
  norm(head, "head_norm", "lm_head.layer_norm", d);
  head.push_back(vec("output_bias", {"lm_head.bias", "lm_head.decoder.bias"}, c.vocab));
  if (!c.tied) head.push_back(mat("output", {"lm_head.decoder.weight"}, d, c.vocab, Layout::kTranspose));
  for (ParamSpec& s : head) {
    s.optional = true;
    s.unprefixed = true;
    p.push_back(s);
  }
  return p;
}

void forward(ForwardPass& p) {
  std::vector<int32_t> positions(static_cast<size_t>(p.n));
  int counted = 0;
  for (int t = 0; t < p.n; ++t)
    positions[t] = p.ids[t] == p.config.pad_token ? p.config.pad_token : p.config.pad_token + ++counted;
  bert_encoder_forward(p, positions.data());
}

}  // namespace

extern const Family kRobertaFamily = {"roberta", read_config, {"roberta.", ""}, "embeddings.word_embeddings.weight",
                                      params, forward, Norm::kLayerNorm};

}  // namespace mh

// BERT's encoder (bert.cpp), shared by the families that are BERT with other names (distilbert.cpp,
// roberta.cpp).
#pragma once

#include "nn/families/family.h"

namespace mh {

// BERT's config.json keys and tensors; the masked-LM head's are optional (BertModel has none).
std::string bert_read_config(ConfigFields& fields, TransformerConfig& c);
std::vector<ParamSpec> bert_params(const TransformerConfig& c);
// The rows of the position table: max_positions, and RoBERTa's pad_token + 1 rows before them.
inline int64_t position_rows(const TransformerConfig& c) { return c.max_positions + (c.pad_token >= 0 ? c.pad_token + 1 : 0); }

// The post-LayerNorm encoder over word + position (+ token type, where the model has them)
// embeddings, then the masked-LM head where the checkpoint has one (dense → config.head_activation
// → LayerNorm → output). positions (n): each token's row of the position table; null = 0 … n − 1.
void bert_encoder_forward(ForwardPass& pass, const int32_t* positions);

}  // namespace mh

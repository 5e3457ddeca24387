// Marian (model_type "marian": Helsinki-NLP/opus-mt-*): BART's post-LayerNorm blocks (bart.h)
// with sinusoidal positions (computed, not stored), no layernorm_embedding, embeddings × √d, swish,
// encoder and decoder embeddings shared, and `pad` as the decoder's start token.
#include "nn/families/bart.h"

namespace mh {

namespace {
std::string read_config(ConfigFields& f, TransformerConfig& c) {
  c.sinusoidal_positions = true;
  std::string error = bart_read_config(f, c);
  if (!error.empty()) return error;
  if (!f.boolean("share_encoder_decoder_embeddings", true))
    return "Marian models with separate encoder and decoder embeddings (share_encoder_decoder_embeddings: false) "
           "are not supported";
  if (f.integer("decoder_vocab_size", c.vocab, 1 << 22) != c.vocab)
    return "Marian models whose decoder_vocab_size differs from vocab_size are not supported";
  return "";
}
std::vector<ParamSpec> params(const TransformerConfig& c) { return bart_params(c, false); }
}  // namespace

extern const Family kMarianFamily = {"marian", read_config, {"model.", ""}, "encoder.layers.0.self_attn.q_proj.weight",
                                     params, nullptr, Norm::kLayerNorm, bart_stack_forward};

}  // namespace mh

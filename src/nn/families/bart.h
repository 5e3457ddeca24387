// What BART (bart.cpp) and Marian (marian.cpp) share: their config keys, their tensors' names
// (model.encoder.layers.N.self_attn.q_proj …, encoder_attn in the decoder, final_logits_bias) and
// their post-LayerNorm forward pass. They differ in positions (BART's learned, offset by 2, then
// layernorm_embedding; Marian's sinusoidal) and in their activation's default.
#pragma once

#include "nn/families/family.h"

namespace mh {

class Seq2SeqPass;

// encoder_layers, decoder_layers, heads, d_model, ffn dims (one size for both stacks),
// activation_function, scale_embedding, max_position_embeddings, tie_word_embeddings.
std::string bart_read_config(ConfigFields& f, TransformerConfig& c);
// Every tensor; learned positions and layernorm_embedding where `learned_positions` (BART).
std::vector<ParamSpec> bart_params(const TransformerConfig& c, bool learned_positions);
// Post-LN: x = norm(x + sublayer(x)) for self-attention, cross-attention (decoder), the MLP.
void bart_stack_forward(Seq2SeqPass& pass);

}  // namespace mh

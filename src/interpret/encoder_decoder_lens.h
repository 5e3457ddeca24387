// The logit lens and direct logit attribution on an encoder-decoder's decoder (T5, BART, Marian:
// nn/encoder_decoder.h), as interpret/logit_attribution.h gives them for decoder-only models: the
// source is encoded first (EncoderDecoderContext::encode), and the decoder's cross-attention heads
// are parts beside its self-attention heads.
#pragma once

#include <cstdint>
#include <string>

#include "interpret/logit_attribution.h"
#include "nn/encoder_decoder.h"

namespace mh {

// For each decoder stream s (0 = the embeddings, l = after layer l: decoder hidden state s; the
// last = the model's own output) and each of `positions` of the m decoder ids: the decoder's final
// norm (T5's; BART's and Marian's blocks end normalised, and the head reads them as they are) and
// output head over it, summarised as logit_lens does (LogitLens: streams × positions × k or targets).
std::string seq2seq_logit_lens(EncoderDecoderContext& context, LogitLens& out, const int32_t* ids, int m,
                               const int32_t* positions, int position_count, int top_k, const int32_t* targets,
                               int target_count, double memory_budget = RunContext::kNoMemoryBudget);

// Direct logit attribution at a decoder position: what the decoder's embeddings, each
// self-attention head (heads), each cross-attention head (cross_heads), each MLP and the biases
// write in the direction of logit(target) − logit(contrast), through the final norm frozen at this
// residual (logit_direction). Pre-norm decoders (T5) only: a post-norm block (BART, Marian)
// normalises the sum of its sublayers, so no residual stream reaches the output whole.
std::string seq2seq_attribution(EncoderDecoderContext& context, LogitAttribution& out, const int32_t* ids, int m,
                                const AttributionAsk& ask, double memory_budget = RunContext::kNoMemoryBudget);

}  // namespace mh

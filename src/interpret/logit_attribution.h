// The logit lens (nostalgebraist 2020; TransformerLens's accumulated_resid) and direct logit
// attribution (TransformerLens's logit_attrs): what the residual stream predicts after each layer,
// and how much each head, MLP and the embeddings write in the direction of a prediction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/ops.h"
#include "nn/transformer.h"

namespace mh {

// For each residual stream s (0 = the embeddings, l = after layer l, layers = the model's own
// output; read as blocks.s.hook_resid_pre) and each of `positions`: the model's final norm and output head over it
// (Transformer::head_of_residual; the last stream is the run's logits), as a softmax: the top_k
// tokens and their probabilities, and each target's probability and rank (0 = the top token).
// Encoders run their MLM head over each layer's output. Arrays are streams × positions × (k or targets).
struct LogitLens {
  int streams = 0, positions = 0, top_k = 0, targets = 0;
  std::vector<int32_t> top_ids, target_ranks;
  std::vector<float> top_probabilities, target_probabilities;
};
// out sized for streams × positions rows of top_k (at most vocab) and `targets` each, zeroed.
void size_lens(LogitLens& out, int streams, int positions, int top_k, int targets, int vocab);
// Row `at` (stream × positions + position) of out from one row of logits (vocab floats): the
// softmax in float64, its top k, and each target's probability and rank.
void lens_row(LogitLens& out, int64_t at, const float* logits, int vocab, const int32_t* targets);
struct LogitAttribution;
struct AttributionAsk {
  int position = 0, target = 0, contrast = -1;  // contrast < 0: logit(target) alone
};
// also (optional): the attribution at also->position too, into *attribution, from the same run.
std::string logit_lens(RunContext& context, LogitLens& out, const int32_t* ids, int n, const int32_t* token_types,
                       const int32_t* positions, int position_count, int top_k, const int32_t* targets,
                       int target_count, const AttributionAsk* also = nullptr, LogitAttribution* attribution = nullptr,
                       double memory_budget = RunContext::kNoMemoryBudget);

// Direct logit attribution at `position`: each part's write into the residual stream (read from
// the run's hook_z, hook_mlp_out and ln1_post.hook_scale) dotted with the direction the final norm
// and the output head turn into logit(target) − logit(contrast) (contrast < 0: logit(target)
// alone). The final norm is frozen at this residual: centred (LayerNorm) or not (RMSNorm, as
// Family::norm says), divided by the whole residual's σ or rms, times its weight. The parts sum to the logit difference before softcapping, less the norm's bias
// and the output bias terms (norm_bias). Decoders only: an encoder's post-LayerNorm blocks leave no
// residual stream that the output reads whole.
struct LogitAttribution {
  double embeddings = 0, biases = 0, total = 0, norm_bias = 0, logit_difference = 0;
  std::vector<double> heads, mlps, layer_biases;  // layers × heads, layers, layers (biases by layer)
  std::vector<double> cross_heads;                 // an encoder-decoder's cross-attention: layers × heads
};
// The direction in the residual stream that the final norm, frozen at `residual` (d values), and
// the output head turn into logit(target) − logit(contrast): s · γ ⊙ (W_U[:, target] −
// W_U[:, contrast]), centred for LayerNorm, ÷ the residual's σ (or rms); s the output scale (T5's
// d^-½). norm_bias: what the norm's bias β and the output bias add to that difference.
struct LogitDirection {
  std::vector<double> v;
  double norm_bias = 0;
};
LogitDirection logit_direction(const std::vector<double>& residual, Norm norm, float eps, const Tensor* gamma,
                               const Tensor* beta, const Tensor& output, const Tensor* output_bias, float output_scale,
                               int target, int contrast);

std::string direct_logit_attribution(RunContext& context, LogitAttribution& out, const int32_t* ids, int n,
                                     const AttributionAsk& ask, const uint8_t* disabled_heads,
                                     double memory_budget = RunContext::kNoMemoryBudget);

}  // namespace mh

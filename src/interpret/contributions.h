// Token contributions through one attention block and its residual connection (Kobayashi et al.
// 2021, "attention + residual"): how much of position i's output row comes from token j.
#pragma once

#include <string>
#include <vector>

#include "nn/tensor.h"
#include "nn/transformer.h"

namespace mh {

// out (n × n) row i = ‖Σ_h A_h[i, j] · v_j^h W_O^h + [i = j] · r_i‖₂ over j, divided by the row's
// sum (rows of 1, zeros for no input). attentions: heads × n × n; values: n × kv_heads·head_dim
// (row stride ld); wo: the block's W_O (heads·head_dim × d, as stored); residual: n × d (what the
// residual connection carries past the block); scale (n × d, or null): a norm between the block and
// the residual, as the factor it applies to each output row (Gemma 3's post-attention norm). The
// output bias is left out: it comes from no token.
void token_contributions(float* out, const float* attentions, const float* values, int ld, const Tensor& wo,
                         const float* residual, const float* scale, int n, int heads, int kv_heads, int head_dim,
                         int d);

// Every layer's contributions (out: layers × n × n) from one run of ids in `context`, read from its
// named activations (nn/hooks.h): each layer's attn.hook_pattern, attn.hook_v, hook_resid_pre (the
// residual the block adds to) and, after a post-attention norm, ln1_post.hook_scale.
std::string token_contributions(RunContext& context, std::vector<float>& out, const int32_t* ids, int n,
                                const int32_t* token_types, double memory_budget = RunContext::kNoMemoryBudget);

}  // namespace mh

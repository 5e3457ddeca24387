// The other pieces a small decoder-only language model needs around attention, as plain
// functions over caller memory: forward next to backward. Backward functions ADD to gradient
// buffers (the caller zeroes them once per step), like linear_backward in attention.h.
#pragma once

#include <cstdint>

namespace mh {

// x (n × d) = embedding[tokens[t]] (vocab × d) + positions (n × d, row t for position t; null for none)
void embedding_forward(float* x, const int32_t* tokens, const float* embedding, const float* positions,
                       int n, int d);
// d_embedding[tokens[t]] += d_x[t]  (call again with tokens = 0 … n−1 for learned positions)
void embedding_backward(float* d_embedding, const float* d_x, const int32_t* tokens, int n, int d);

// Numeric inputs per token (a toy task's criteria): x (n × d) += features (n × f) · w (f × d).
// Linear on purpose: a head's score is then linear in the features before the layer norm.
void feature_projection_forward(float* x, const float* features, const float* w, int n, int f, int d);
// d_w (f × d) += featuresᵀ · d_x
void feature_projection_backward(float* d_w, const float* d_x, const float* features, int n, int f, int d);

// Unembedding as an output embedding (one row per token, like the input embedding; the two may be
// the same array when tied): logits (n × vocab) = scale · x (n × d) · embeddingᵀ (vocab × d) +
// bias (vocab). scale = 1/sqrt(d) keeps the first logits near unit size with N(0, 1) rows (as T5).
void unembedding_forward(float* logits, const float* x, const float* embedding, const float* bias,
                         int n, int d, int vocab, float scale);
// d_x (n × d) += scale · d_logits · embedding,  d_embedding += scale · d_logitsᵀ · x,
// d_bias += Σ_rows d_logits.
void unembedding_backward(float* d_x, float* d_embedding, float* d_bias, const float* d_logits,
                          const float* x, const float* embedding, int n, int d, int vocab, float scale);

// out (n × d) = (x − mean) / sqrt(var + eps) · gamma + beta, per row (may alias x); saves mean and
// rstd (n) (1/sqrt(var + eps)) for the backward pass. mean/rstd may be null at inference. The one
// layer norm of the project: the pretrained models' (nn/ops.h layer_norm) is this one too.
void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int n, int d, float eps = 1e-5f);
// d_x (n × d) += …, d_gamma (d) += Σ d_out ⊙ x̂, d_beta (d) += Σ d_out, where x̂ = (x − mean)·rstd.
void layernorm_backward(float* d_x, float* d_gamma, float* d_beta, const float* d_out,
                        const float* x, const float* mean, const float* rstd, const float* gamma,
                        int n, int d);

// out (count) = gelu(x) with the tanh approximation (GPT-2's); may alias x. It is nn/ops.h's
// gelu_tanh (vectorized in wasm), on a copy when out is not x.
void gelu_forward(float* out, const float* x, int64_t count);
// d_x (count) += gelu'(x) ⊙ d_out
void gelu_backward(float* d_x, const float* x, const float* d_out, int64_t count);

// logits (n × vocab) become probabilities in place (softmax per row); returns the mean of
// −log p[target] (natural log, nats) over the scored rows. A target < 0 marks a row as not scored
// (a toy task's prompt): it adds nothing to the loss or the gradient. losses (n) gets each row's
// loss (0 when not scored) when not null. Returns 0 when no row is scored.
double cross_entropy_forward(float* logits, float* losses, const int32_t* targets, int n, int vocab);
// d_logits (n × vocab) = (probs − onehot(target)) / scored rows, written in place over probs
// (rows not scored become 0).
void cross_entropy_backward(float* probs, const int32_t* targets, int n, int vocab);
// How many of the n targets are scored (≥ 0).
int scored_targets(const int32_t* targets, int n);

// One Adam step (Kingma & Ba 2015) with decoupled weight decay (AdamW), bias-corrected with the
// 1-based step t: m = β1·m + (1−β1)·g,  v = β2·v + (1−β2)·g²,
// w −= lr · (m̂ / (sqrt(v̂) + eps) + weight_decay · w).
struct AdamSettings {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.98f, eps = 1e-8f, weight_decay = 0.0f;
};
void adam_update(float* w, float* m, float* v, const float* grad, int64_t count, int64_t t,
                 const AdamSettings& s);

}  // namespace mh

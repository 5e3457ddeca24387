// A small decoder-only language model built from the core's operations: token embedding +
// learned positions (initialised to the sinusoidal encoding) → L × [pre-LayerNorm causal multi-head attention (+ optional MLP), each
// with a residual] → final LayerNorm → unembedding (an output embedding, one row per token, read as
// logits = x · Uᵀ / sqrt(d)) → next-token probabilities.
//
// Training (forward with a cache, backward, Adam) runs on batches of B sequences of T tokens;
// inference for the page runs each layer with multihead_attention_forward, so the trained model
// is shown by the same attention code as everything else, and can switch heads off (ablation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/attention.h"
#include "nn/layers.h"

namespace mh {

struct DecoderConfig {
  int vocab = 4096;
  int d_model = 128;
  int num_heads = 4;
  int layers = 2;
  int context = 128;  // longest sequence: one learned position vector per position
  int d_ff = 0;       // MLP hidden width; 0 = attention-only layers
  int features = 0;   // numeric inputs per token, projected into x (toy tasks; 0 = none)
  // LayerNorm before each attention block (pre-LN). Off only where a head's score must stay
  // exactly linear in the inputs (the balanced-key task's argument): the norm's 1/σ is non-linear.
  bool attention_norm = true;
};

// "" if usable, else what to change.
std::string validate_decoder_config(const DecoderConfig& config);

// Where each tensor lives in the flat parameter vector (offsets in floats). Matrices are X·W,
// [in][out], row-major, as in the attention core.
struct DecoderLayerOffsets {
  int64_t ln1_gamma, ln1_beta, wq, wk, wv, wo, bq, bk, bv, bo;
  int64_t ln2_gamma, ln2_beta, w1, b1, w2, b2;  // -1 when attention-only
};
struct DecoderLayout {
  int64_t embedding;  // vocab × d
  int64_t positions;  // context × d, added to the token embeddings
  std::vector<DecoderLayerOffsets> layers;
  int64_t lnf_gamma, lnf_beta;
  int64_t unembedding;       // vocab × d, starts as a copy of the embedding
  int64_t unembedding_bias;  // vocab
  int64_t feature_projection;  // features × d, last so models without features keep their layout; -1 if none
  int64_t total;
};
DecoderLayout decoder_layout(const DecoderConfig& config);

// Everything the training forward pass keeps for the backward pass (per layer, N = B·T rows).
struct DecoderCache {
  struct Layer {
    std::vector<float> x, ln1, ln1_mean, ln1_rstd, q, k, v, attention /* B×h×T×T */, concat;
    std::vector<float> x_mid, ln2, ln2_mean, ln2_rstd, pre, act;  // MLP only
  };
  std::vector<Layer> layers;
  std::vector<float> x_final, lnf, lnf_mean, lnf_rstd, probs /* N × vocab */;
  int batch = 0, seq = 0;
};

class Decoder {
 public:
  // Precondition: validate_decoder_config(config) is "". Parameters start as init(0), or as zeros
  // when initialise is false (a loader that overwrites them all skips the 1.2M random draws).
  explicit Decoder(const DecoderConfig& config, bool initialise = true);
  const DecoderConfig& config() const { return config_; }
  const DecoderLayout& layout() const { return layout_; }
  std::vector<float>& params() { return params_; }
  const std::vector<float>& params() const { return params_; }

  // Seeded N(0, σ²) weights, drawn in layout order with NormalStream (same bits native and wasm):
  // positions start as the sinusoidal encoding (Vaswani et al.), which training then adapts (a
  // fixed sinusoid made sharp previous-token heads form too slowly here); embedding σ = 1; the unembedding starts equal to the embedding (so copying a token, what induction heads
  // do, is one d × d map from the start instead of 4096 alignments to learn; untied, it can still
  // learn asymmetric bigrams); W_Q, W_K, W_V, W_1 σ = 1/sqrt(d_in); W_O, W_2 additionally
  // ÷ sqrt(2·layers) so the residual stream does not grow with depth; LN γ = 1; biases 0.
  void init(uint64_t seed);

  // Training forward: tokens and targets are B × T (T ≤ context; a target < 0 is not scored);
  // features (B × T × config.features) when the config has features. Returns the mean
  // cross-entropy over scored targets (nats per token) and fills cache for backward.
  double forward(DecoderCache& cache, const int32_t* tokens, const int32_t* targets, int batch,
                 int seq, const float* features = nullptr) const;
  // Adds dLoss/dparams to grads (layout().total floats). Uses (and overwrites) cache.probs.
  void backward(float* grads, DecoderCache& cache, const int32_t* tokens, const int32_t* targets,
                const float* features = nullptr) const;

  // Inference for one sequence of n ≤ context tokens, each layer through multihead_attention_forward.
  // attention (layers × h × n × n) and probs (n × vocab: next-token probabilities after each
  // position) may be null. head_enabled (layers × h, nonzero = on) may be null for all heads on; a
  // head switched off contributes nothing to W_O (its rows of W_O are zeroed for the call).
  // features (n × config.features) when the config has features.
  std::string run(float* attention, float* probs, const int32_t* tokens, int n,
                  const uint8_t* head_enabled = nullptr, const float* features = nullptr);

 private:
  DecoderConfig config_;
  DecoderLayout layout_;
  std::vector<float> params_;
  // Inference scratch, reused across calls.
  Workspace ws_;
  std::vector<float> x_, h_, y_, wo_, hidden_;
};

}  // namespace mh

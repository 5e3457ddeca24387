// An attention layer that owns its weights and scratch memory: what the bindings hold one of.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/attention.h"

namespace mh {

enum WeightIndex { kWq, kWk, kWv, kWo, kBq, kBk, kBv, kBo, kNumWeights };
const char* weight_name(int which);  // "wq", "wk", …, "bo"

class AttentionModel {
 public:
  // Precondition: validate_config(config) is "". Weights start as init_seeded(0).
  explicit AttentionModel(const Config& config);

  const Config& config() const { return config_; }
  Dims dims() const { return dims_of(config_); }

  // W_Q, W_K, W_V, W_O drawn in that order, row-major, from N(0, 2/d_model) (He-style scaling, as
  // in the seeds' NumPy code: randn(d, d) * sqrt(2/d)); biases zero. Same bits on every platform.
  void init_seeded(uint64_t seed);

  // Number of floats of one weight: d·d for wq/wo, d·d_kv for wk/wv, d or d_kv for biases,
  // 0 for biases when the config has bias off.
  int64_t weight_size(int which) const;
  const float* weight(int which) const { return w_[which].data(); }
  WeightsView weights() const;
  // The same weights with the four matrices in gemm's panel layout (core/gemm.h), packed on first
  // use after a change: what forward multiplies by. A layer runs many times per weight change
  // (every keystroke), and gathering panels from row-major rows on every product was a large part
  // of a forward at small n (docs/performance.md, "Kernel decisions").
  WeightsView gemm_weights();

  // Swap in the staged arrays named by bit i of which_mask (staged[i] has weight_size(i) floats),
  // after checking all of them, so a bad array changes nothing. The old arrays end up in staged.
  std::string replace_weights(std::vector<float>* staged, unsigned which_mask);

  // PyTorch nn.MultiheadAttention weights, which are [out][in] (y = x·Wᵀ + b):
  // in_proj_weight (3d × d: rows of W_q, then W_k, then W_v), in_proj_bias (3d),
  // out_proj.weight (d × d), out_proj.bias (d). Biases may be null only when bias is off.
  // Transposed into this layer's X·W layout; needs kvHeads == heads.
  std::string load_pytorch(const float* in_proj_weight, const float* in_proj_bias,
                           const float* out_proj_weight, const float* out_proj_bias);

  // Validates, then runs multihead_attention_forward. y (n_q × d), attention (h × n_q × n_k) or null.
  // A float32 overflow (finite but huge inputs or weights) is an error, never a NaN result.
  std::string forward(float* y, float* attention, const float* xq, const float* xkv, int n_q,
                      int n_k, const MaskSpec& mask);
  // The same, returning only the selected attention weights (sel.heads × sel.rows × n_k).
  std::string forward(float* y, float* attention, const AttentionSelection& sel, const float* xq,
                      const float* xkv, int n_q, int n_k, const MaskSpec& mask);

  // head_trace_forward for this layer's weights, with the same overflow rule as forward.
  std::string trace(HeadTrace& trace, int head, const float* xq, const float* xkv, int n_q, int n_k,
                    const MaskSpec& mask);

  // The concatenated head outputs (n_q × d) of the last forward call, before W_O.
  const std::vector<float>& last_concat() const { return ws_.concat; }

 private:
  Config config_;
  std::vector<float> w_[kNumWeights];
  std::vector<float> packed_[4];  // wq, wk, wv, wo in panel layout, valid when packed_valid_
  bool packed_valid_ = false;
  Workspace ws_;
};

}  // namespace mh

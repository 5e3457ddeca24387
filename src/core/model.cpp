#include "core/model.h"

#include <cmath>
#include <cstdio>

#include "core/gemm.h"
#include "core/init.h"

namespace mh {

static const char* const kOverflowMessage =
    "float32 overflow: with these inputs and weights the projections, scores or outputs exceed "
    "3.4e38; scale the inputs or weights down (typical values are within ±100)";

const char* weight_name(int which) {
  static const char* const names[kNumWeights] = {"wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"};
  return which >= 0 && which < kNumWeights ? names[which] : "?";
}

AttentionModel::AttentionModel(const Config& config) : config_(config) {
  for (int i = 0; i < kNumWeights; ++i) w_[i].assign(weight_size(i), 0.0f);
  init_seeded(0);
}

int64_t AttentionModel::weight_size(int which) const {
  const Dims dm = dims();
  switch (which) {
    case kWq: case kWo: return int64_t{dm.d} * dm.d_q;
    case kWk: case kWv: return int64_t{dm.d} * dm.d_kv;
    case kBq: return config_.bias ? dm.d_q : 0;
    case kBo: return config_.bias ? dm.d : 0;
    case kBk: case kBv: return config_.bias ? dm.d_kv : 0;
    default: return 0;
  }
}

void AttentionModel::init_seeded(uint64_t seed) {
  packed_valid_ = false;
  NormalStream stream(seed);
  const double stddev = std::sqrt(2.0 / config_.d_model);
  for (int which : {kWq, kWk, kWv, kWo}) fill_normal(w_[which].data(), weight_size(which), stddev, stream);
  for (int which : {kBq, kBk, kBv, kBo}) std::fill(w_[which].begin(), w_[which].end(), 0.0f);
}

WeightsView AttentionModel::weights() const {
  auto bias = [&](int which) { return config_.bias ? w_[which].data() : nullptr; };
  return {w_[kWq].data(), w_[kWk].data(), w_[kWv].data(), w_[kWo].data(),
          bias(kBq),      bias(kBk),      bias(kBv),      bias(kBo)};
}

WeightsView AttentionModel::gemm_weights() {
  const Dims dm = dims();
  const int out_size[4] = {dm.d_q, dm.d_kv, dm.d_kv, dm.d}, in_size[4] = {dm.d, dm.d, dm.d, dm.d_q};
  if (!packed_valid_) {
    for (int which : {kWq, kWk, kWv, kWo}) {
      packed_[which].resize(static_cast<size_t>(out_size[which] + 7) / 8 * 8 * in_size[which]);
      pack_panels(packed_[which].data(), w_[which].data(), out_size[which], in_size[which], out_size[which]);
    }
    packed_valid_ = true;
  }
  WeightsView view = weights();
  view.wq = packed_[kWq].data();
  view.wk = packed_[kWk].data();
  view.wv = packed_[kWv].data();
  view.wo = packed_[kWo].data();
  view.panels = true;
  return view;
}

static std::string non_finite_message(const char* name, int64_t index, float value) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "weight %s contains %s at index %lld: weights must be finite",
                name, std::isnan(value) ? "NaN" : "an infinity", static_cast<long long>(index));
  return buf;
}

std::string AttentionModel::replace_weights(std::vector<float>* staged, unsigned which_mask) {
  for (int i = 0; i < kNumWeights; ++i) {
    if (!(which_mask & (1u << i))) continue;
    if (weight_size(i) == 0)
      return std::string("this layer was created with bias: false, so it has no ") +
             weight_name(i) + "; create it with bias: true to set biases";
    if (static_cast<int64_t>(staged[i].size()) != weight_size(i))
      return std::string("internal: staged ") + weight_name(i) + " has the wrong size";
    const int64_t bad = first_non_finite(staged[i].data(), weight_size(i));
    if (bad >= 0) return non_finite_message(weight_name(i), bad, staged[i][bad]);
  }
  for (int i = 0; i < kNumWeights; ++i)
    if (which_mask & (1u << i)) w_[i].swap(staged[i]);
  packed_valid_ = false;
  return "";
}

std::string AttentionModel::load_pytorch(const float* in_proj_weight, const float* in_proj_bias,
                                         const float* out_proj_weight,
                                         const float* out_proj_bias) {
  const Dims dm = dims();
  if (dm.h_kv != dm.h)
    return "PyTorch's nn.MultiheadAttention has one key/value head per query head: create the "
           "layer with kvHeads equal to heads to load its weights";
  if (config_.bias != (in_proj_bias != nullptr && out_proj_bias != nullptr))
    return config_.bias ? "this layer has biases: pass in_proj_bias and out_proj.bias (or create "
                          "it with bias: false)"
                        : "this layer was created with bias: false: create it with bias: true to "
                          "load in_proj_bias and out_proj.bias";
  const int64_t d = dm.d;
  struct Part { const char* name; const float* data; int64_t count; };
  const Part parts[] = {{"in_proj_weight", in_proj_weight, 3 * d * d},
                        {"in_proj_bias", in_proj_bias, in_proj_bias ? 3 * d : 0},
                        {"out_proj.weight", out_proj_weight, d * d},
                        {"out_proj.bias", out_proj_bias, out_proj_bias ? d : 0}};
  for (const Part& part : parts) {
    const int64_t bad = part.count ? first_non_finite(part.data, part.count) : -1;
    if (bad >= 0) return non_finite_message(part.name, bad, part.data[bad]);
  }
  // W[in][out] = torch_weight[out][in].
  auto transpose_into = [d](std::vector<float>& dst, const float* torch_weight) {
    for (int64_t out = 0; out < d; ++out)
      for (int64_t in = 0; in < d; ++in) dst[in * d + out] = torch_weight[out * d + in];
  };
  packed_valid_ = false;
  transpose_into(w_[kWq], in_proj_weight);
  transpose_into(w_[kWk], in_proj_weight + d * d);
  transpose_into(w_[kWv], in_proj_weight + 2 * d * d);
  transpose_into(w_[kWo], out_proj_weight);
  if (config_.bias) {
    std::copy(in_proj_bias, in_proj_bias + d, w_[kBq].begin());
    std::copy(in_proj_bias + d, in_proj_bias + 2 * d, w_[kBk].begin());
    std::copy(in_proj_bias + 2 * d, in_proj_bias + 3 * d, w_[kBv].begin());
    std::copy(out_proj_bias, out_proj_bias + d, w_[kBo].begin());
  }
  return "";
}

std::string AttentionModel::forward(float* y, float* attention, const float* xq, const float* xkv,
                                    int n_q, int n_k, const MaskSpec& mask) {
  const AttentionSelection sel =
      attention ? AttentionSelection::all(dims().h, n_q) : AttentionSelection::none();
  return forward(y, attention, sel, xq, xkv, n_q, n_k, mask);
}

std::string AttentionModel::forward(float* y, float* attention, const AttentionSelection& sel,
                                    const float* xq, const float* xkv, int n_q, int n_k,
                                    const MaskSpec& mask) {
  std::string error = validate_selection(config_, n_q, sel);
  if (error.empty()) error = validate_forward(config_, xq, xkv, n_q, n_k, mask, sel.floats(n_k));
  if (!error.empty()) return error;
  if (!multihead_attention_forward(y, sel.heads ? attention : nullptr, sel, xq, xkv, n_q, n_k,
                                   config_, gemm_weights(), mask, ws_))
    return kOverflowMessage;
  return "";
}

std::string AttentionModel::trace(HeadTrace& t, int head, const float* xq, const float* xkv,
                                  int n_q, int n_k, const MaskSpec& mask) {
  if (head < 0 || head >= dims().h)
    return "head must be from 0 to " + std::to_string(dims().h - 1) + ", got " + std::to_string(head);
  std::string error = validate_forward(config_, xq, xkv, n_q, n_k, mask, 0);
  if (!error.empty()) return error;
  if (!head_trace_forward(t, head, xq, xkv, n_q, n_k, config_, weights(), mask)) return kOverflowMessage;
  return "";
}

}  // namespace mh

#include "interpret/patching.h"

#include <algorithm>

namespace mh {

namespace {

// Reads every layer's hook_z (n × heads·d_head) and hook_mlp_out (n × d) into two arrays.
class CleanReader : public HookVisitor {
 public:
  CleanReader(std::vector<float>& heads, std::vector<float>& mlps) : heads_(heads), mlps_(mlps) {}
  int wants(Hook hook, int) const override { return hook == Hook::kZ || hook == Hook::kMlpOut ? kRead : kNone; }
  void visit(Hook hook, int layer, float* data, const std::vector<int>& shape) override {
    int64_t size = 1;
    for (int s : shape) size *= s;
    std::vector<float>& into = hook == Hook::kZ ? heads_ : mlps_;
    if (into.size() < static_cast<size_t>((layer + 1) * size)) into.resize(static_cast<size_t>((layer + 1) * size));
    std::copy(data, data + size, into.begin() + layer * size);
  }

 private:
  std::vector<float>&heads_, &mlps_;
};

// Writes one head's slice of hook_z (head ≥ 0) or the whole hook_mlp_out (head < 0) of one layer.
class Writer : public HookVisitor {
 public:
  Writer(Hook hook, int layer, int head, const float* values) : hook_(hook), layer_(layer), head_(head), values_(values) {}
  int wants(Hook hook, int layer) const override { return hook == hook_ && layer == layer_ ? kWrite : kNone; }
  void visit(Hook, int, float* data, const std::vector<int>& shape) override {
    const int n = shape[0];
    if (head_ < 0) {
      int64_t size = 1;
      for (int s : shape) size *= s;
      std::copy(values_, values_ + size, data);
      return;
    }
    const int heads = shape[1], dk = shape[2];
    for (int t = 0; t < n; ++t)
      std::copy(values_ + (int64_t{t} * heads + head_) * dk, values_ + (int64_t{t} * heads + head_ + 1) * dk,
                data + (int64_t{t} * heads + head_) * dk);
  }

 private:
  Hook hook_;
  int layer_, head_;
  const float* values_;  // the clean run's whole activation of the layer
};

}  // namespace

double ActivationPatching::difference(const RunResult& run) const {
  return double(run.logits[target_]) - (contrast_ >= 0 ? double(run.logits[contrast_]) : 0.0);
}

std::string ActivationPatching::prepare(RunContext& context, const int32_t* clean, const int32_t* corrupt, int n,
                                        int target, int contrast, double memory_budget) {
  const TransformerConfig& c = context.config();
  ready_ = false;
  if (!c.causal) return "activation patching needs a decoder; a " + c.model_type + " encoder is not one";
  if (!context.model().has_lm_head())
    return "activation patching needs a language-model head, which this checkpoint does not have";
  if (target < 0 || target >= c.vocab || contrast < -1 || contrast >= c.vocab)
    return "target and contrast must be token ids from 0 to " + std::to_string(c.vocab - 1);
  n_ = n;
  target_ = target;
  contrast_ = contrast;
  const int last = n - 1;
  RunRequest r;
  r.logit_rows = &last;
  r.logit_row_count = 1;
  r.hidden_states = true;
  clean_heads_.clear();
  clean_mlps_.clear();
  CleanReader reader(clean_heads_, clean_mlps_);
  r.hooks = &reader;
  RunResult run;
  if (std::string error = context.run(run, clean, n, r, memory_budget); !error.empty()) return error;
  clean_difference_ = difference(run);
  clean_residuals_ = std::move(run.hidden_states);
  r.hooks = nullptr;
  if (std::string error = context.run(run, corrupt, n, r, memory_budget); !error.empty()) return error;
  corrupt_difference_ = difference(run);
  corrupt_residuals_ = std::move(run.hidden_states);
  corrupt_.assign(corrupt, corrupt + n);
  ready_ = true;
  return "";
}

std::string ActivationPatching::patched(RunContext& context, What what, int layer, int index, double& result,
                                        double memory_budget) {
  const TransformerConfig& c = context.config();
  if (!ready_) return "prepare() the two prompts first";
  if (layer < 0 || layer >= c.layers) return "layer " + std::to_string(layer) + " does not exist";
  const int n = n_, d = c.d_model, dq = c.heads * c.head_dim;
  const int limit = what == What::kHeads ? c.heads : what == What::kResidual ? n : 1;
  if (index < 0 || index >= limit) return "the patched head or position does not exist";
  const float* corrupt_in = corrupt_residuals_.data() + int64_t{layer} * n * d;
  resume_.assign(corrupt_in, corrupt_in + int64_t{n} * d);
  const int last = n - 1;
  RunRequest r;
  r.logit_rows = &last;
  r.logit_row_count = 1;
  r.first_layer = layer;
  r.resume_residual = resume_.data();
  Writer heads(Hook::kZ, layer, index, clean_heads_.data() + int64_t{layer} * n * dq);
  Writer mlp(Hook::kMlpOut, layer, -1, clean_mlps_.data() + int64_t{layer} * n * d);
  if (what == What::kResidual) {
    const float* clean = clean_residuals_.data() + (int64_t{layer} * n + index) * d;
    std::copy(clean, clean + d, resume_.begin() + int64_t{index} * d);
  } else {
    r.hooks = what == What::kHeads ? static_cast<HookVisitor*>(&heads) : &mlp;
  }
  RunResult run;
  if (std::string error = context.run(run, corrupt_.data(), n, r, memory_budget); !error.empty()) return error;
  result = difference(run);
  return "";
}

}  // namespace mh

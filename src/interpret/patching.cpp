#include "interpret/patching.h"

namespace mh {

double ActivationPatching::difference(const RunResult& run) const {
  return double(run.logits[target_]) - (contrast_ >= 0 ? double(run.logits[contrast_]) : 0.0);
}

std::string ActivationPatching::prepare(Transformer& model, const int32_t* clean, const int32_t* corrupt, int n,
                                        int target, int contrast) {
  const TransformerConfig& c = model.config();
  ready_ = false;
  if (!c.causal) return "activation patching needs a decoder; a " + c.model_type + " encoder is not one";
  if (!model.has_lm_head()) return "activation patching needs a language-model head, which this checkpoint does not have";
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
  r.head_outputs = true;
  r.mlp_outputs = true;
  RunResult run;
  if (std::string error = model.run(run, clean, n, r); !error.empty()) return error;
  clean_difference_ = difference(run);
  clean_heads_ = std::move(run.head_outputs);
  clean_mlps_ = std::move(run.mlp_outputs);
  clean_residuals_ = std::move(run.hidden_states);
  r.head_outputs = r.mlp_outputs = false;
  if (std::string error = model.run(run, corrupt, n, r); !error.empty()) return error;
  corrupt_difference_ = difference(run);
  corrupt_residuals_ = std::move(run.hidden_states);
  corrupt_.assign(corrupt, corrupt + n);
  ready_ = true;
  return "";
}

std::string ActivationPatching::patched(Transformer& model, What what, int layer, int index, double& result) {
  const TransformerConfig& c = model.config();
  if (!ready_) return "prepare() the two prompts first";
  if (layer < 0 || layer >= c.layers) return "layer " + std::to_string(layer) + " does not exist";
  const int n = n_, d = c.d_model, dk = c.head_dim, dq = c.heads * dk;
  const int limit = what == What::kHeads ? c.heads : what == What::kResidual ? n : 1;
  if (index < 0 || index >= limit) return "the patched head or position does not exist";
  const float* corrupt_in = corrupt_residuals_.data() + int64_t{layer} * n * d;
  resume_.assign(corrupt_in, corrupt_in + int64_t{n} * d);
  ActivationPatch patch;
  const int last = n - 1;
  RunRequest r;
  r.logit_rows = &last;
  r.logit_row_count = 1;
  r.first_layer = layer;
  r.resume_residual = resume_.data();
  if (what == What::kResidual) {
    const float* clean = clean_residuals_.data() + (int64_t{layer} * n + index) * d;
    std::copy(clean, clean + d, resume_.begin() + int64_t{index} * d);
  } else if (what == What::kHeads) {
    values_.resize(static_cast<size_t>(n) * dk);
    const float* heads = clean_heads_.data() + int64_t{layer} * n * dq;
    for (int t = 0; t < n; ++t)
      std::copy(heads + int64_t{t} * dq + index * dk, heads + int64_t{t} * dq + (index + 1) * dk,
                values_.begin() + int64_t{t} * dk);
    patch = {ActivationPatch::Kind::kHead, layer, index, values_.data()};
    r.patch = &patch;
  } else {
    patch = {ActivationPatch::Kind::kMlp, layer, 0, clean_mlps_.data() + int64_t{layer} * n * d};
    r.patch = &patch;
  }
  RunResult run;
  if (std::string error = model.run(run, corrupt_.data(), n, r); !error.empty()) return error;
  result = difference(run);
  return "";
}

}  // namespace mh

// Activation patching (Meng et al. 2022; TransformerLens's patching): run a corrupted prompt with
// one activation taken from a clean run of the same length, and see how much of the clean logit
// difference comes back. The activations are the named ones (nn/hooks.h): the clean run's
// blocks.*.attn.hook_z and blocks.*.hook_mlp_out are read by a hook, and a patched run writes one
// of them back through a hook. Each patched run starts at the patched layer from the corrupted
// run's residual there (RunRequest::first_layer): the layers before it would compute the same.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/transformer.h"

namespace mh {

class ActivationPatching {
 public:
  enum class What { kHeads, kResidual, kMlps };
  // Runs both prompts (n tokens each) once in `context`, keeping the clean run's hook_z and
  // hook_mlp_out of every layer and residual streams, and the corrupted run's residual streams;
  // the logit differences logit(target) − logit(contrast) at the last position (contrast < 0: the
  // target's logit).
  std::string prepare(RunContext& context, const int32_t* clean, const int32_t* corrupt, int n, int target,
                      int contrast, double memory_budget = RunContext::kNoMemoryBudget);
  double clean_difference() const { return clean_difference_; }
  double corrupt_difference() const { return corrupt_difference_; }
  // The corrupted run with one activation from the clean run: a head's hook_z at every position
  // (kHeads, index = head), the residual entering `layer` at one position (kResidual, index =
  // position) or an MLP's hook_mlp_out at every position (kMlps): its logit difference.
  std::string patched(RunContext& context, What what, int layer, int index, double& difference,
                      double memory_budget = RunContext::kNoMemoryBudget);

 private:
  double difference(const RunResult& run) const;
  std::vector<int32_t> corrupt_;
  std::vector<float> clean_heads_, clean_mlps_, clean_residuals_, corrupt_residuals_, resume_;
  int n_ = 0, target_ = 0, contrast_ = -1;
  double clean_difference_ = 0, corrupt_difference_ = 0;
  bool ready_ = false;
};

}  // namespace mh

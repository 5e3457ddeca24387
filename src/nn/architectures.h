// Where each family keeps its tensors in a Hugging Face checkpoint, and how they become the
// layout the forward pass reads (architectures.cpp also has the families' forward passes).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/transformer.h"

namespace mh {

// How a destination tensor is cut from its source tensor.
enum class Layout {
  kCopy,       // same shape
  kTranspose,  // nn.Linear's [out][in] → [in][out]
  kColumns,    // columns [part·cols, (part+1)·cols) of a source [rows][parts·cols] (GPT-2's fused c_attn)
  kRange,      // elements [part·cols, (part+1)·cols) of a source vector (GPT-2's fused c_attn bias)
};

struct ParamSpec {
  std::string name;                  // the model's own name, e.g. "h3.wq"
  std::vector<std::string> sources;  // checkpoint names to try, after the prefix (first found wins)
  int64_t rows = 1, cols = 1;        // the destination shape (vectors: rows = 1)
  Layout layout = Layout::kCopy;
  int part = 0, parts = 1;
  bool matrix = true;     // matrices keep their stored dtype; vectors become float32
  bool panels = true;     // a matrix products read: stored in gemm's panel layout (nn/tensor.h)
  bool optional = false;  // absent in the checkpoint: left out (e.g. BERT without its MLM head)
  bool unprefixed = false;  // looked up without the prefix (lm_head.weight, cls.predictions.*)
};

// The prefixes a family's tensor names may carry on the hub ("transformer.", "bert.", "model.", "").
std::vector<std::string> name_prefixes(Family family);
// A tensor every checkpoint of the family has, used to find the prefix.
std::string probe_tensor(Family family);
// Everything the family's forward pass reads, for this config.
std::vector<ParamSpec> architecture_params(const TransformerConfig& config);
// Points the forward pass at the loaded tensors (names as in architecture_params).
TransformerWeights bind_weights(const TransformerConfig& config, const std::map<std::string, Tensor>& tensors);

}  // namespace mh

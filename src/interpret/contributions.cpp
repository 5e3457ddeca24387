#include "interpret/contributions.h"

#include <vector>

#include "core/eigen_include.h"

namespace mh {

void token_contributions(float* out, const float* attentions, const float* values, int ld, const Tensor& wo,
                         const float* residual, const float* scale, int n, int heads, int kv_heads, int head_dim,
                         int d) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int group = heads / kv_heads;
  // Each head's values moved through its rows of W_O: n × d.
  std::vector<Matrix> moved(static_cast<size_t>(heads));
  Matrix rows(head_dim, d);
  for (int h = 0; h < heads; ++h) {
    wo.widen_rows(rows.data(), int64_t{h} * head_dim, head_dim);
    const Eigen::Map<const Matrix, 0, Eigen::OuterStride<>> v(values + (h / group) * head_dim, n, head_dim,
                                                               Eigen::OuterStride<>(ld));
    moved[h] = v * rows;
  }
  const Eigen::Map<const Matrix> r(residual, n, d);
  Eigen::RowVectorXf part(d);
  for (int i = 0; i < n; ++i) {
    float* row = out + int64_t{i} * n;
    double total = 0;
    for (int j = 0; j < n; ++j) {
      part.setZero();
      bool any = i == j;
      for (int h = 0; h < heads; ++h) {
        const float a = attentions[(int64_t{h} * n + i) * n + j];
        if (a != 0.0f) { part += a * moved[h].row(j); any = true; }
      }
      if (scale) part = part.cwiseProduct(Eigen::Map<const Eigen::RowVectorXf>(scale + int64_t{i} * d, d));
      if (i == j) part += r.row(i);
      row[j] = any ? part.norm() : 0.0f;
      total += row[j];
    }
    if (total > 0)
      for (int j = 0; j < n; ++j) row[j] = static_cast<float>(row[j] / total);
  }
}

namespace {

// Reads a layer's pattern, values, residual and post-norm scale, and computes its contributions
// when its attention output comes (after all of them).
class ContributionReader : public HookVisitor {
 public:
  ContributionReader(const Transformer& model, std::vector<float>& out, int n) : model_(model), out_(out), n_(n) {
    out.assign(static_cast<size_t>(model.config().layers) * n * n, 0.0f);
  }
  int wants(Hook hook, int) const override {
    return hook == Hook::kPattern || hook == Hook::kV || hook == Hook::kResidPre || hook == Hook::kLn1PostScale ||
                   hook == Hook::kAttnOut
               ? kRead
               : kNone;
  }
  void visit(Hook hook, int layer, float* data, const std::vector<int>& shape) override {
    int64_t size = 1;
    for (int s : shape) size *= s;
    switch (hook) {
      case Hook::kPattern: pattern_.assign(data, data + size); break;
      case Hook::kV: values_.assign(data, data + size); break;
      case Hook::kResidPre: residual_.assign(data, data + size); break;
      case Hook::kLn1PostScale: rms_.assign(data, data + size); break;
      default: compute(layer); break;
    }
  }

 private:
  void compute(int layer) {
    const TransformerConfig& c = model_.config();
    const TransformerWeights::Layer& L = model_.weights().layers[layer];
    const int d = c.d_model, n = n_;
    std::vector<float> scale;
    if (L.post_attention_norm) {  // the factor the norm applies to each row of the block's output
      scale.resize(static_cast<size_t>(n) * d);
      for (int t = 0; t < n; ++t)
        for (int i = 0; i < d; ++i) scale[int64_t{t} * d + i] = L.post_attention_norm->f32()[i] / rms_[t];
    }
    token_contributions(out_.data() + int64_t{layer} * n * n, pattern_.data(), values_.data(), c.kv_heads * c.head_dim,
                        *L.wo, residual_.data(), scale.empty() ? nullptr : scale.data(), n, c.heads, c.kv_heads,
                        c.head_dim, d);
  }
  const Transformer& model_;
  std::vector<float>& out_;
  int n_;
  std::vector<float> pattern_, values_, residual_, rms_;
};

}  // namespace

std::string token_contributions(RunContext& context, std::vector<float>& out, const int32_t* ids, int n,
                                const int32_t* token_types, double memory_budget) {
  out.clear();
  if (n < 1) return "contributions need at least one token id";
  ContributionReader reader(context.model(), out, n);
  RunRequest r;
  r.token_types = token_types;
  r.logits = false;
  r.last_hidden_state = false;
  r.hooks = &reader;
  RunResult run;
  std::string error = context.run(run, ids, n, r, memory_budget);
  if (!error.empty()) out.clear();
  return error;
}

}  // namespace mh

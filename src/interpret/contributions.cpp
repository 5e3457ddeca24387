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

}  // namespace mh

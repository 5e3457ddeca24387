#include "interpret/rollout.h"

#include <cstdint>

#include "core/eigen_include.h"

namespace mh {

void attention_rollout(float* rollout, const float* attention, int layers, int heads, int n) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix r = Matrix::Identity(n, n), mixed(n, n);
  for (int l = 0; l < layers; ++l) {
    mixed.setZero();
    for (int i = 0; i < heads; ++i)
      mixed += Eigen::Map<const Matrix>(attention + (int64_t{l} * heads + i) * n * n, n, n);
    // The residual stream carries each position's own state past the layer: half identity.
    mixed = 0.5f * mixed / static_cast<float>(heads) + 0.5f * Matrix::Identity(n, n);
    for (int row = 0; row < n; ++row) {
      const float sum = mixed.row(row).sum();
      if (sum > 0) mixed.row(row) /= sum;
    }
    r = (mixed * r).eval();
  }
  Eigen::Map<Matrix>(rollout, n, n) = r;
}

}  // namespace mh

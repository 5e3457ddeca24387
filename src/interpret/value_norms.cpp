#include "interpret/value_norms.h"

#include <vector>

#include "core/eigen_include.h"

namespace mh {

void norm_preserving_factor(float* factor, const Tensor& w, int64_t first, int rows) {
  using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t cols = w.cols;
  std::vector<float> widened(static_cast<size_t>(rows) * cols);
  w.widen_rows(widened.data(), first, rows);
  const MatrixD w_rows = Eigen::Map<const RowMatrix>(widened.data(), rows, cols).cast<double>();
  MatrixD gram = MatrixD::Zero(rows, rows);
  gram.selfadjointView<Eigen::Lower>().rankUpdate(w_rows);
  const Eigen::LDLT<MatrixD, Eigen::Lower> ldlt(gram.selfadjointView<Eigen::Lower>());
  // Rounding can leave a zero pivot of a semidefinite G slightly negative: it is 0.
  const Eigen::VectorXd root_d = ldlt.vectorD().cwiseMax(0.0).cwiseSqrt();
  MatrixD lower_scaled = MatrixD(ldlt.matrixL()) * root_d.asDiagonal();
  const RowMatrix result = (ldlt.transpositionsP().transpose() * lower_scaled).cast<float>();
  // In panels, as the products that read it take a B: then gemm reads it in place, call after call.
  pack_panels(factor, result.data(), rows, rows, rows);
}

void row_norms(float* norms, const float* x, int n, int d, int64_t stride) {
  for (int j = 0; j < n; ++j) norms[j] = Eigen::Map<const Eigen::VectorXf>(x + j * stride, d).norm();
}

}  // namespace mh

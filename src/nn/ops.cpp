#include "nn/ops.h"

#include <algorithm>
#include <cmath>

#include "core/attention.h"  // linear_forward
#include "core/eigen_include.h"

namespace mh {

void embedding_rows(float* x, const int32_t* ids, const Tensor& table, int n, int d, bool add) {
  std::vector<float> row(static_cast<size_t>(d));
  for (int t = 0; t < n; ++t) {
    float* out = x + static_cast<int64_t>(t) * d;
    table.widen(add ? row.data() : out, static_cast<int64_t>(ids[t]) * d, d);
    if (add) Eigen::Map<Eigen::ArrayXf>(out, d) += Eigen::Map<const Eigen::ArrayXf>(row.data(), d);
  }
}

void add_table_rows(float* x, const Tensor& table, int first_row, int n, int d) {
  std::vector<float> row(static_cast<size_t>(d));
  for (int t = 0; t < n; ++t) {
    table.widen(row.data(), static_cast<int64_t>(first_row + t) * d, d);
    Eigen::Map<Eigen::ArrayXf>(x + static_cast<int64_t>(t) * d, d) += Eigen::Map<const Eigen::ArrayXf>(row.data(), d);
  }
}

void layer_norm(float* out, const float* x, const float* gamma, const float* beta, int n, int d, float eps) {
  Eigen::Map<const Eigen::ArrayXf> g(gamma, d), b(beta, d);
  for (int t = 0; t < n; ++t) {
    Eigen::Map<const Eigen::ArrayXf> xr(x + static_cast<int64_t>(t) * d, d);
    const float mu = xr.mean();
    const float var = (xr - mu).square().mean();
    Eigen::Map<Eigen::ArrayXf>(out + static_cast<int64_t>(t) * d, d) = (xr - mu) * (1.0f / std::sqrt(var + eps)) * g + b;
  }
}

void rms_norm(float* out, const float* x, const float* weight, int n, int d, float eps) {
  Eigen::Map<const Eigen::ArrayXf> w(weight, d);
  for (int t = 0; t < n; ++t) {
    Eigen::Map<const Eigen::ArrayXf> xr(x + static_cast<int64_t>(t) * d, d);
    const float scale = 1.0f / std::sqrt(xr.square().mean() + eps);
    Eigen::Map<Eigen::ArrayXf>(out + static_cast<int64_t>(t) * d, d) = w * (xr * scale);
  }
}

void matmul(float* out, const float* in, const Tensor& w, const float* bias, int n,
            std::vector<float>& scratch) {
  linear_forward(out, in, w.as_f32(scratch), bias, n, static_cast<int>(w.rows), static_cast<int>(w.cols));
}

void unembed(float* logits, const float* x, const Tensor& table, const float* bias, int n,
             std::vector<float>& scratch) {
  const int64_t vocab = table.rows, d = table.cols;
  ConstMatrixView xm(x, n, d, Eigen::OuterStride<>(d));
  // Blocks of 2048 rows: a 150k-token vocabulary never needs a second full-width copy.
  constexpr int64_t kBlock = 2048;
  for (int64_t first = 0; first < vocab; first += kBlock) {
    const int64_t rows = std::min(kBlock, vocab - first);
    const float* block;
    if (table.type == WeightType::kF32) {
      block = table.f32() + first * d;
    } else {
      scratch.resize(static_cast<size_t>(kBlock * d));
      table.widen(scratch.data(), first * d, rows * d);
      block = scratch.data();
    }
    MatrixView out(logits + first, n, rows, Eigen::OuterStride<>(vocab));
    out.noalias() = xm * ConstMatrixView(block, rows, d, Eigen::OuterStride<>(d)).transpose();
    if (bias) out.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias + first, rows);
  }
}

void gelu_tanh(float* x, int64_t count) {
  constexpr float kC = 0.7978845608028654f;  // sqrt(2/π)
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(kC * (v + 0.044715f * v * v * v)));
  }
}

void gelu_erf(float* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void relu(float* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] = std::max(x[i], 0.0f);
}

void silu_times(float* out, const float* gate, const float* up, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_in_place(float* x, const float* y, int64_t count) {
  Eigen::Map<Eigen::ArrayXf>(x, count) += Eigen::Map<const Eigen::ArrayXf>(y, count);
}

}  // namespace mh

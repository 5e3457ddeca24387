#include "nn/layers.h"

#include <algorithm>
#include <cmath>

#include "core/eigen_include.h"
#include "nn/ops.h"

namespace mh {

void embedding_forward(float* x, const int32_t* tokens, const float* embedding, const float* positions,
                       int n, int d) {
  for (int t = 0; t < n; ++t) {
    Eigen::Map<Eigen::ArrayXf> row(x + static_cast<int64_t>(t) * d, d);
    row = Eigen::Map<const Eigen::ArrayXf>(embedding + static_cast<int64_t>(tokens[t]) * d, d);
    if (positions) row += Eigen::Map<const Eigen::ArrayXf>(positions + static_cast<int64_t>(t) * d, d);
  }
}

void embedding_backward(float* d_embedding, const float* d_x, const int32_t* tokens, int n, int d) {
  for (int t = 0; t < n; ++t) {
    Eigen::Map<Eigen::ArrayXf>(d_embedding + static_cast<int64_t>(tokens[t]) * d, d) +=
        Eigen::Map<const Eigen::ArrayXf>(d_x + static_cast<int64_t>(t) * d, d);
  }
}

void feature_projection_forward(float* x, const float* features, const float* w, int n, int f, int d) {
  MatrixView(x, n, d, Eigen::OuterStride<>(d)).noalias() +=
      ConstMatrixView(features, n, f, Eigen::OuterStride<>(f)) * ConstMatrixView(w, f, d, Eigen::OuterStride<>(d));
}

void feature_projection_backward(float* d_w, const float* d_x, const float* features, int n, int f, int d) {
  MatrixView(d_w, f, d, Eigen::OuterStride<>(d)).noalias() +=
      ConstMatrixView(features, n, f, Eigen::OuterStride<>(f)).transpose() *
      ConstMatrixView(d_x, n, d, Eigen::OuterStride<>(d));
}

void unembedding_forward(float* logits, const float* x, const float* embedding, const float* bias,
                         int n, int d, int vocab, float scale) {
  MatrixView out(logits, n, vocab, Eigen::OuterStride<>(vocab));
  ConstMatrixView xm(x, n, d, Eigen::OuterStride<>(d));
  ConstMatrixView e(embedding, vocab, d, Eigen::OuterStride<>(d));
  out.noalias() = scale * (xm * e.transpose());
  if (bias) out.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias, vocab);
}

void unembedding_backward(float* d_x, float* d_embedding, float* d_bias, const float* d_logits,
                          const float* x, const float* embedding, int n, int d, int vocab, float scale) {
  ConstMatrixView dl(d_logits, n, vocab, Eigen::OuterStride<>(vocab));
  ConstMatrixView xm(x, n, d, Eigen::OuterStride<>(d));
  ConstMatrixView e(embedding, vocab, d, Eigen::OuterStride<>(d));
  MatrixView(d_x, n, d, Eigen::OuterStride<>(d)).noalias() += scale * (dl * e);
  MatrixView(d_embedding, vocab, d, Eigen::OuterStride<>(d)).noalias() += scale * (dl.transpose() * xm);
  if (d_bias) Eigen::Map<Eigen::RowVectorXf>(d_bias, vocab) += dl.colwise().sum();
}


void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* gamma,
                       const float* beta, int n, int d, float eps) {
  Eigen::Map<const Eigen::ArrayXf> g(gamma, d), b(beta, d);
  for (int t = 0; t < n; ++t) {
    Eigen::Map<const Eigen::ArrayXf> xr(x + static_cast<int64_t>(t) * d, d);
    const float mu = xr.mean();
    const float var = (xr - mu).square().mean();
    const float rs = 1.0f / std::sqrt(var + eps);
    Eigen::Map<Eigen::ArrayXf>(out + static_cast<int64_t>(t) * d, d) = (xr - mu) * rs * g + b;
    if (mean) mean[t] = mu;
    if (rstd) rstd[t] = rs;
  }
}

void layernorm_backward(float* d_x, float* d_gamma, float* d_beta, const float* d_out,
                        const float* x, const float* mean, const float* rstd, const float* gamma,
                        int n, int d) {
  Eigen::Map<const Eigen::ArrayXf> g(gamma, d);
  Eigen::Map<Eigen::ArrayXf> dg(d_gamma, d), db(d_beta, d);
  for (int t = 0; t < n; ++t) {
    const int64_t at = static_cast<int64_t>(t) * d;
    Eigen::Map<const Eigen::ArrayXf> xr(x + at, d), dy(d_out + at, d);
    const Eigen::ArrayXf xhat = (xr - mean[t]) * rstd[t];
    const Eigen::ArrayXf dxhat = dy * g;
    dg += dy * xhat;
    db += dy;
    // dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂))
    Eigen::Map<Eigen::ArrayXf>(d_x + at, d) +=
        rstd[t] * (dxhat - dxhat.mean() - xhat * (dxhat * xhat).mean());
  }
}

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/π)
}

void gelu_forward(float* out, const float* x, int64_t count) {
  if (out != x) std::copy(x, x + count, out);
  gelu_tanh(out, count);
}

void gelu_backward(float* d_x, const float* x, const float* d_out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float u = kGeluC * (v + 0.044715f * v * v * v);
    const float th = std::tanh(u);
    const float du = kGeluC * (1.0f + 3.0f * 0.044715f * v * v);
    d_x[i] += d_out[i] * (0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du);
  }
}

int scored_targets(const int32_t* targets, int n) {
  int count = 0;
  for (int t = 0; t < n; ++t) count += targets[t] >= 0;
  return count;
}

double cross_entropy_forward(float* logits, float* losses, const int32_t* targets, int n, int vocab) {
  double total = 0;
  for (int t = 0; t < n; ++t) {
    Eigen::Map<Eigen::ArrayXf> row(logits + static_cast<int64_t>(t) * vocab, vocab);
    const float max = row.maxCoeff();
    const float target_logit = targets[t] >= 0 ? row[targets[t]] - max : 0.0f;
    row = (row - max).exp();
    const float sum = row.sum();
    row /= sum;
    if (targets[t] < 0) {
      if (losses) losses[t] = 0;
      continue;
    }
    // −log p = log(sum) − (logit − max): exact even when p itself underflows to 0.
    const double loss = std::log(static_cast<double>(sum)) - target_logit;
    if (losses) losses[t] = static_cast<float>(loss);
    total += loss;
  }
  const int scored = scored_targets(targets, n);
  return scored > 0 ? total / scored : 0.0;
}

void cross_entropy_backward(float* probs, const int32_t* targets, int n, int vocab) {
  const int scored = scored_targets(targets, n);
  const float inv = scored > 0 ? 1.0f / scored : 0.0f;
  for (int t = 0; t < n; ++t) {
    Eigen::Map<Eigen::ArrayXf> row(probs + static_cast<int64_t>(t) * vocab, vocab);
    if (targets[t] < 0) {
      row.setZero();
      continue;
    }
    row[targets[t]] -= 1.0f;
    row *= inv;
  }
}

void adam_update(float* w, float* m, float* v, const float* grad, int64_t count, int64_t t,
                 const AdamSettings& s) {
  const float c1 = 1.0f / (1.0f - std::pow(s.beta1, static_cast<float>(t)));
  const float c2 = 1.0f / (1.0f - std::pow(s.beta2, static_cast<float>(t)));
  for (int64_t i = 0; i < count; ++i) {
    m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * grad[i];
    v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * grad[i] * grad[i];
    const float m_hat = m[i] * c1, v_hat = v[i] * c2;
    w[i] -= s.lr * (m_hat / (std::sqrt(v_hat) + s.eps) + s.weight_decay * w[i]);
  }
}

}  // namespace mh

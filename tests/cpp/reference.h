// An independent float64 multi-head attention, written from the definition with plain loops,
// sharing no code with src/. The tests compare the float32 core against it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace ref {

struct Layer {
  int d, h, h_kv;
  bool bias;
  double scale;  // 0 → 1/sqrt(d_k)
  std::vector<double> wq, wk, wv, wo, bq, bk, bv, bo;  // [in][out]; biases empty when off
};

struct Mask {
  bool causal = false;
  std::vector<uint8_t> key_padding;  // n_k, nonzero = blocked
  std::vector<uint8_t> blocked;      // n_q × n_k
  std::vector<double> additive;      // n_q × n_k
};

// y (n_q × d) and attention (h × n_q × n_k)
inline void forward(const Layer& L, const std::vector<double>& xq, const std::vector<double>& xkv,
                    int n_q, int n_k, const Mask& m, std::vector<double>& y,
                    std::vector<double>& attention) {
  const int d_k = L.d / L.h, d_kv = L.h_kv * d_k, group = L.h / L.h_kv;
  const double scale = L.scale > 0 ? L.scale : 1.0 / std::sqrt(double(d_k));
  auto project = [&](const std::vector<double>& x, int n, const std::vector<double>& w,
                     const std::vector<double>& b, int out_w) {
    std::vector<double> out(size_t(n) * out_w);
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < out_w; ++c) {
        double s = b.empty() ? 0.0 : b[c];
        for (int i = 0; i < L.d; ++i) s += x[size_t(r) * L.d + i] * w[size_t(i) * out_w + c];
        out[size_t(r) * out_w + c] = s;
      }
    return out;
  };
  auto q = project(xq, n_q, L.wq, L.bq, L.d);
  auto k = project(xkv, n_k, L.wk, L.bk, d_kv);
  auto v = project(xkv, n_k, L.wv, L.bv, d_kv);
  std::vector<double> concat(size_t(n_q) * L.d, 0.0);
  attention.assign(size_t(L.h) * n_q * n_k, 0.0);
  for (int hd = 0; hd < L.h; ++hd) {
    const int g = hd / group;
    for (int i = 0; i < n_q; ++i) {
      std::vector<double> s(n_k);
      std::vector<bool> allowed(n_k, true);
      for (int j = 0; j < n_k; ++j) {
        double dot = 0;
        for (int c = 0; c < d_k; ++c)
          dot += q[size_t(i) * L.d + hd * d_k + c] * k[size_t(j) * d_kv + g * d_k + c];
        s[j] = dot * scale;
        if (!m.additive.empty()) s[j] += m.additive[size_t(i) * n_k + j];
        if (m.causal && j > i) allowed[j] = false;
        if (!m.key_padding.empty() && m.key_padding[j]) allowed[j] = false;
        if (!m.blocked.empty() && m.blocked[size_t(i) * n_k + j]) allowed[j] = false;
        if (s[j] == -std::numeric_limits<double>::infinity()) allowed[j] = false;
      }
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < n_k; ++j)
        if (allowed[j]) mx = std::max(mx, s[j]);
      double sum = 0;
      for (int j = 0; j < n_k; ++j) sum += allowed[j] ? std::exp(s[j] - mx) : 0.0;
      for (int j = 0; j < n_k; ++j) {
        const double a = (allowed[j] && sum > 0) ? std::exp(s[j] - mx) / sum : 0.0;
        attention[(size_t(hd) * n_q + i) * n_k + j] = a;
        for (int c = 0; c < d_k; ++c)
          concat[size_t(i) * L.d + hd * d_k + c] += a * v[size_t(j) * d_kv + g * d_k + c];
      }
    }
  }
  y = project(concat, n_q, L.wo, L.bo, L.d);
}

inline std::vector<double> random_vector(size_t n, std::mt19937& rng, double stddev = 1.0) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace ref

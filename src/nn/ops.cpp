#include "nn/ops.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/gemm.h"
#include "core/parallel.h"
#include "core/simd_exp.h"
#include "core/eigen_include.h"
#include "nn/families/family.h"
#include "nn/layers.h"
#include "nn/transformer.h"

namespace mh {

namespace {
// Elementwise work is split over the threads in pieces of at least this many floats (a few µs),
// row-by-row work (a norm's row costs more a float) in pieces of at least 1024 floats' rows: 16
// tokens of GPT-2 small then give 16 threads a row each.
constexpr int64_t kElementGrain = 2048;
int64_t row_grain(int d) { return std::max<int64_t>(1, 1024 / std::max(d, 1)); }
}  // namespace

void embedding_rows(float* x, const int32_t* ids, const Tensor& table, int n, int d, bool add) {
  // Rows over the threads; added rows are widened into a buffer first (tasks do not allocate).
  std::vector<float> rows(add ? static_cast<size_t>(n) * d : 0);
  float* const widened = add ? rows.data() : x;
  parallel_ranges(n, row_grain(d), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      table.widen_rows(widened + t * d, ids[t], 1);
      if (add) Eigen::Map<Eigen::ArrayXf>(x + t * d, d) += Eigen::Map<const Eigen::ArrayXf>(widened + t * d, d);
    }
  });
}

void embedding_columns(float* x, const int32_t* ids, const Tensor& table, int n, int d) {
  // Tokens over the threads: an element at a time (a column of panels is 8 floats apart), 1.1 ms
  // of serial work at 256 tokens of GPT-2 small otherwise.
  parallel_ranges(n, row_grain(d), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int k = 0; k < d; ++k) x[t * d + k] = table.at(k, ids[t]);
  });
}

void scale_in_place(float* x, float factor, int64_t count) {
  parallel_ranges(count, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] *= factor;
  });
}

void add_table_rows(float* x, const Tensor& table, int first_row, int n, int d) {
  std::vector<float> rows(static_cast<size_t>(n) * d);
  float* const widened = rows.data();
  parallel_ranges(n, row_grain(d), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      table.widen_rows(widened + t * d, first_row + t, 1);
      Eigen::Map<Eigen::ArrayXf>(x + t * d, d) += Eigen::Map<const Eigen::ArrayXf>(widened + t * d, d);
    }
  });
}


void layer_norm(float* out, const float* x, const float* gamma, const float* beta, int n, int d, float eps) {
  parallel_ranges(n, row_grain(d), [&](int64_t begin, int64_t end) {
    layernorm_forward(out + begin * d, nullptr, nullptr, x + begin * d, gamma, beta, static_cast<int>(end - begin), d, eps);
  });
}

void apply_norm(Norm kind, float* out, const float* x, const Tensor* w, const Tensor* b, int n, int d, float eps) {
  if (kind == Norm::kLayerNorm) layer_norm(out, x, w ? w->f32() : nullptr, b ? b->f32() : nullptr, n, d, eps);
  else rms_norm(out, x, w ? w->f32() : nullptr, n, d, eps);
}

void rms_norm(float* out, const float* x, const float* weight, int n, int d, float eps) {
  Eigen::Map<const Eigen::ArrayXf> w(weight, d);
  parallel_ranges(n, row_grain(d), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      Eigen::Map<const Eigen::ArrayXf> xr(x + t * d, d);
      const float scale = 1.0f / std::sqrt(xr.square().mean() + eps);
      Eigen::Map<Eigen::ArrayXf>(out + t * d, d) = w * (xr * scale);
    }
  });
}

void matmul(float* out, const float* in, const Tensor& w, const float* bias, int n) {
  gemm(out, w.cols, in, w.rows, w.matrix(), bias, n, static_cast<int>(w.rows), static_cast<int>(w.cols));
}

// The activations run over every element of the MLP's hidden layer (n × 3072 for GPT-2 small): with
// the C library's scalar tanh/erf/exp they took a fifth of a wasm forward pass, so the wasm build
// computes 4 at a time from one vectorized exp (core/simd_exp.h). The tail, and native builds, use
// the scalar formulas.
namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/π)
float gelu_tanh_one(float v) { return 0.5f * v * (1.0f + std::tanh(kGeluC * (v + 0.044715f * v * v * v))); }
float gelu_erf_one(float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); }
float silu_one(float g) { return g / (1.0f + std::exp(-g)); }

#if defined(__wasm_simd128__)
using v4 = v128_t;
v4 splat(float x) { return wasm_f32x4_splat(x); }
// x · σ(2u) = ½·x·(1 + tanh u), u = √(2/π)·(x + 0.044715·x³).
v4 gelu_tanh4(v4 x) {
  const v4 u = wasm_f32x4_mul(splat(kGeluC), wasm_f32x4_add(x, wasm_f32x4_mul(splat(0.044715f), wasm_f32x4_mul(x, wasm_f32x4_mul(x, x)))));
  return wasm_f32x4_div(x, wasm_f32x4_add(splat(1.0f), exp_clamped(wasm_f32x4_mul(splat(-2.0f), u))));
}
// ½·x·(1 + erf(x/√2)), erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5·10⁻⁷): for x < 0 the
// product ½·x·erfc(|x|/√2) is formed directly, without the cancellation of 1 + erf.
v4 gelu_erf4(v4 x) {
  const v4 z = wasm_f32x4_abs(wasm_f32x4_mul(x, splat(0.70710678118654752f)));
  const v4 t = wasm_f32x4_div(splat(1.0f), wasm_f32x4_add(splat(1.0f), wasm_f32x4_mul(splat(0.3275911f), z)));
  v4 poly = splat(1.061405429f);
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, t), splat(-1.453152027f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, t), splat(1.421413741f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, t), splat(-0.284496736f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, t), splat(0.254829592f));
  const v4 erfc = wasm_f32x4_mul(wasm_f32x4_mul(poly, t), exp_clamped(wasm_f32x4_neg(wasm_f32x4_mul(z, z))));
  const v4 positive = wasm_f32x4_sub(splat(2.0f), erfc);  // 1 + erf(z)
  const v4 factor = wasm_v128_bitselect(erfc, positive, wasm_f32x4_lt(x, splat(0.0f)));
  return wasm_f32x4_mul(wasm_f32x4_mul(splat(0.5f), x), factor);
}
v4 silu4(v4 g) { return wasm_f32x4_div(g, wasm_f32x4_add(splat(1.0f), exp_clamped(wasm_f32x4_neg(g)))); }

// On this thread: whole vectors of 4 from x, then the scalar form for the rest.
template <class Vector, class Scalar>
void map_range(float* x, int64_t count, Vector vector, Scalar scalar) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) wasm_v128_store(x + i, vector(wasm_v128_load(x + i)));
  for (; i < count; ++i) x[i] = scalar(x[i]);
}
#else
template <class Vector, class Scalar>
void map_range(float* x, int64_t count, Vector, Scalar scalar) {
  for (int64_t i = 0; i < count; ++i) x[i] = scalar(x[i]);
}
// No vector forms natively: map_range ignores these.
constexpr std::nullptr_t gelu_tanh4 = nullptr, gelu_erf4 = nullptr, silu4 = nullptr;
#endif

// Pieces start at multiples of 4, so every element is computed by the same vector or scalar code
// at every thread count.
template <class Vector, class Scalar>
void map_in_place(float* x, int64_t count, Vector vector, Scalar scalar) {
  parallel_ranges(count, kElementGrain, [&](int64_t begin, int64_t end) { map_range(x + begin, end - begin, vector, scalar); }, 4);
}

float relu_one(float v) { return std::max(v, 0.0f); }

// act over count elements on this thread, by the code activate() runs over them (from a multiple of 4).
void activate_range(Activation a, float* x, int64_t count) {
  switch (a) {
    case Activation::kGeluTanh: map_range(x, count, gelu_tanh4, gelu_tanh_one); break;
    case Activation::kGeluErf: map_range(x, count, gelu_erf4, gelu_erf_one); break;
    case Activation::kRelu: for (int64_t i = 0; i < count; ++i) x[i] = relu_one(x[i]); break;
    case Activation::kSilu: map_range(x, count, silu4, silu_one); break;
  }
}
}  // namespace

void gelu_tanh(float* x, int64_t count) { map_in_place(x, count, gelu_tanh4, gelu_tanh_one); }
void gelu_erf(float* x, int64_t count) { map_in_place(x, count, gelu_erf4, gelu_erf_one); }
void silu(float* x, int64_t count) { map_in_place(x, count, silu4, silu_one); }

void relu(float* x, int64_t count) {
  parallel_ranges(count, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] = relu_one(x[i]);
  });
}

// family.h. Pieces from multiples of 4, as the functions above and the products' epilogues take them.
void activate(Activation a, float* x, int64_t count) {
  parallel_ranges(count, kElementGrain, [&](int64_t begin, int64_t end) { activate_range(a, x + begin, end - begin); }, 4);
}

// A block of columns starts at a multiple of 8 and, where d_ff is a multiple of 4, every row at a
// multiple of 4 too: the elements meet the same vector code as in activate's pass over n × d_ff.
// Elsewhere (an odd d_ff) the steps run one after the other.
void matmul_activated(float* out, const float* in, const Tensor& w, const float* bias, int n, Activation a) {
  if (w.cols % 4 != 0) {
    matmul(out, in, w, bias, n);
    activate(a, out, int64_t{n} * w.cols);
    return;
  }
  GemmEpilogue epilogue;
  epilogue.context = &a;
  epilogue.apply = [](void* context, float* block, int64_t ldo, int rows, int c0, int c1) {
    for (int r = 0; r < rows; ++r) activate_range(*static_cast<Activation*>(context), block + r * ldo + c0, c1 - c0);
  };
  gemm(out, w.cols, in, w.rows, w.matrix(), bias, n, static_cast<int>(w.rows), static_cast<int>(w.cols), epilogue);
}

void gated_matmul(float* up, float* gate, const float* in, const Tensor& w_gate, const float* b_gate,
                  const Tensor& w_up, const float* b_up, int n, Activation a) {
  const int64_t count = int64_t{n} * w_up.cols;
  if (w_up.cols % 4 != 0 || w_gate.cols != w_up.cols || w_gate.rows != w_up.rows) {
    matmul(gate, in, w_gate, b_gate, n);
    matmul(up, in, w_up, b_up, n);
    if (a == Activation::kSilu) {
      silu_times(up, gate, up, count);
    } else {
      activate(a, gate, count);
      multiply_in_place(up, gate, count);
    }
    return;
  }
  struct Context { Activation a; float* gate; const float* up; } context{a, gate, up};
  GemmEpilogue finish;  // on up's block, after gate's: act in place in gate, then up = act(gate) ⊙ up
  finish.context = &context;
  finish.apply = [](void* c, float* block, int64_t ldo, int rows, int c0, int c1) {
    const Context& ctx = *static_cast<const Context*>(c);
    float* gate_block = ctx.gate + (block - ctx.up);  // the same rows of gate (same ldo)
    for (int r = 0; r < rows; ++r) {
      float *g = gate_block + r * ldo + c0, *u = block + r * ldo + c0;
      activate_range(ctx.a, g, c1 - c0);
      for (int j = 0; j < c1 - c0; ++j) u[j] = g[j] * u[j];
    }
  };
  const GemmOutput outputs[2] = {{gate, w_gate.cols, w_gate.matrix(), b_gate, static_cast<int>(w_gate.cols)},
                                 {up, w_up.cols, w_up.matrix(), b_up, static_cast<int>(w_up.cols), finish}};
  gemm_shared(in, w_up.rows, n, static_cast<int>(w_up.rows), outputs, 2, /*together=*/true);
}

void silu_times(float* out, const float* gate, const float* up, int64_t count) {
  // Pieces of whole blocks of 256 (kElementGrain is a multiple), each block as on one thread.
  parallel_ranges((count + 255) / 256, kElementGrain / 256, [&](int64_t first_block, int64_t end_block) {
    float block[256];  // out may alias gate or up: a block of silu(gate) at a time
    for (int64_t first = first_block * 256; first < std::min(count, end_block * 256); first += 256) {
      const int64_t size = std::min<int64_t>(256, count - first);
      std::copy(gate + first, gate + first + size, block);
      silu(block, size);
      for (int64_t i = 0; i < size; ++i) out[first + i] = block[i] * up[first + i];
    }
  });
}

void multiply_in_place(float* x, const float* y, int64_t count) {
  parallel_ranges(count, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) x[i] *= y[i];
  });
}

void add_in_place(float* x, const float* y, int64_t count) {
  parallel_ranges(count, 4 * kElementGrain, [&](int64_t begin, int64_t end) {
    Eigen::Map<Eigen::ArrayXf>(x + begin, end - begin) += Eigen::Map<const Eigen::ArrayXf>(y + begin, end - begin);
  });
}

}  // namespace mh

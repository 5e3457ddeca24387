#include "core/attention.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/eigen_include.h"
#include "core/parallel.h"
#include "core/simd_exp.h"

namespace mh {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string format(const char* fmt, double a = 0, double b = 0, double c = 0) {
  char buf[320];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}
}  // namespace

Dims dims_of(const Config& config) {
  Dims dm;
  dm.d = config.d_model;
  dm.h = config.num_heads;
  dm.h_kv = config.num_kv_heads > 0 ? config.num_kv_heads : config.num_heads;
  dm.d_k = config.head_dim > 0 ? config.head_dim : dm.h > 0 ? dm.d / dm.h : 0;
  dm.d_q = dm.h * dm.d_k;
  dm.d_kv = dm.h_kv * dm.d_k;
  dm.scale = config.scale > 0
                 ? config.scale
                 : 1.0f / (config.temperature * std::sqrt(static_cast<float>(dm.d_k)));
  return dm;
}

std::string validate_config(const Config& c) {
  if (c.d_model < 1 || c.d_model > kMaxDModel)
    return format("dModel must be an integer from 1 to %g, got %g", kMaxDModel, c.d_model);
  if (c.num_heads < 1 || c.num_heads > kMaxHeads)
    return format("heads must be an integer from 1 to %g, got %g", kMaxHeads, c.num_heads);
  if (c.head_dim < 0 || c.head_dim > 1024)
    return format("headDim must be from 1 to 1024 (or 0 for dModel / heads), got %g", c.head_dim);
  if (c.rope_dims < 0 || c.rope_dims % 2 != 0 || c.rope_dims > dims_of(c).d_k || (c.rope_dims > 0 && !c.rope_inv_freq))
    return format("rotary dims must be an even number up to the head size (%g), got %g",
                  dims_of(c).d_k, c.rope_dims);
  if (c.head_dim == 0 && c.d_model % c.num_heads != 0)
    return format("dModel (%g) must be divisible by heads (%g): each head gets dModel / heads "
                  "dimensions; choose e.g. heads = %g",
                  c.d_model, c.num_heads, c.num_heads > 1 && c.d_model % 2 == 0 ? 2 : 1);
  if (c.num_kv_heads < 0 || c.num_kv_heads > c.num_heads)
    return format("kvHeads must be from 1 to heads (%g), got %g", c.num_heads,
                  c.num_kv_heads);
  if (c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads != 0)
    return format("heads (%g) must be divisible by kvHeads (%g): each key/value head is "
                  "shared by a whole group of query heads (use 1 for multi-query attention)",
                  c.num_heads, c.num_kv_heads);
  if (!(std::isfinite(c.scale) && c.scale >= 0))
    return format("scale must be a positive finite number (or 0 for 1/sqrt(d_k)), got %g",
                  c.scale);
  if (!(std::isfinite(c.temperature) && c.temperature > 0))
    return format("temperature must be a positive finite number, got %g", c.temperature);
  return "";
}

int64_t parameter_count(const Config& config) {
  Dims dm = dims_of(config);
  int64_t d = dm.d, d_q = dm.d_q, d_kv = dm.d_kv;
  int64_t weights = d * d_q * 2 + d * d_kv * 2;
  int64_t biases = config.bias ? d_q + d + d_kv * 2 : 0;
  return weights + biases;
}

// One product of the projections, whatever the thread count: gemm (core/gemm.h) splits it over the
// pool itself, by whole panels, so a threaded forward gives the same bits as one thread.
void linear_forward(float* out, const float* in, const float* w, const float* b,
                    int n, int d_in, int d_out) {
  gemm(out, d_out, in, d_in, f32_matrix(w, d_out), b, n, d_in, d_out);
}

void linear_backward(float* d_in, float* d_w, float* d_b, const float* d_out, const float* in,
                     const float* w, int n, int d_in_size, int d_out_size) {
  ConstMatrixView dy(d_out, n, d_out_size, Eigen::OuterStride<>(d_out_size));
  if (d_in) {
    MatrixView dx(d_in, n, d_in_size, Eigen::OuterStride<>(d_in_size));
    ConstMatrixView weight(w, d_in_size, d_out_size, Eigen::OuterStride<>(d_out_size));
    dx.noalias() += dy * weight.transpose();
  }
  if (d_w) {
    MatrixView dw(d_w, d_in_size, d_out_size, Eigen::OuterStride<>(d_out_size));
    ConstMatrixView x(in, n, d_in_size, Eigen::OuterStride<>(d_in_size));
    dw.noalias() += x.transpose() * dy;
  }
  if (d_b) Eigen::Map<Eigen::RowVectorXf>(d_b, d_out_size) += dy.colwise().sum();
}

void attention_scores_forward(float* scores, const float* q, int ldq, const float* k, int ldk,
                              int rows, int n_k, int d_k, float scale) {
  MatrixView s(scores, rows, n_k, Eigen::OuterStride<>(n_k));
  ConstMatrixView qi(q, rows, d_k, Eigen::OuterStride<>(ldq));
  ConstMatrixView ki(k, n_k, d_k, Eigen::OuterStride<>(ldk));
  s.noalias() = scale * (qi * ki.transpose());
}

void attention_scores_backward(float* d_query, int ldq, float* d_key, int ldk, const float* d_scores,
                               const float* q, const float* k, int rows, int n_k, int d_k,
                               float scale) {
  ConstMatrixView ds(d_scores, rows, n_k, Eigen::OuterStride<>(n_k));
  ConstMatrixView qi(q, rows, d_k, Eigen::OuterStride<>(ldq));
  ConstMatrixView ki(k, n_k, d_k, Eigen::OuterStride<>(ldk));
  MatrixView dq(d_query, rows, d_k, Eigen::OuterStride<>(ldq));
  MatrixView dk(d_key, n_k, d_k, Eigen::OuterStride<>(ldk));
  dq.noalias() += scale * (ds * ki);
  dk.noalias() += scale * (ds.transpose() * qi);
}

// n_cols (≤ n_k) is the length of each score row: a causal block never needs keys past its last
// query, so the caller may pass fewer columns than the masks (which always have n_k columns).
static void mask_rows(float* scores, int first_query, int rows, int n_cols, int n_k,
                      const MaskSpec& mask, int head) {
  const float* additive = mask.additive ? mask.additive + head * mask.additive_head_stride : nullptr;
  for (int r = 0; r < rows; ++r) {
    const int64_t query = first_query + r;
    float* row = scores + static_cast<int64_t>(r) * n_cols;
    if (additive) {
      Eigen::Map<Eigen::ArrayXf>(row, n_cols) +=
          Eigen::Map<const Eigen::ArrayXf>(additive + query * n_k, n_cols);
    }
    if (mask.causal) {
      const int64_t position = mask.query_offset + query;
      for (int64_t j = position + 1; j < n_cols; ++j) row[j] = kNegInf;
      if (mask.window > 0)
        for (int64_t j = 0; j < std::min<int64_t>(n_cols, position - mask.window + 1); ++j) row[j] = kNegInf;
    }
    if (mask.key_padding) {
      for (int j = 0; j < n_cols; ++j)
        if (mask.key_padding[j]) row[j] = kNegInf;
    }
    if (mask.blocked) {
      const uint8_t* blocked = mask.blocked + query * n_k;
      for (int j = 0; j < n_cols; ++j)
        if (blocked[j]) row[j] = kNegInf;
    }
  }
}

void mask_forward(float* scores, int first_query, int rows, int n_k, const MaskSpec& mask, int head) {
  mask_rows(scores, first_query, rows, n_k, n_k, mask, head);
}

// row[j] = e^(row[j] - max) in place for j < n, with -inf (a blocked key) and anything where e^x
// is near float's smallest normal or below exactly 0 (x below -87.3 here, below about -87.7 in
// wasm's vectors: simd_exp.h); returns the sum. The vector part has one implementation per SIMD
// backend: in wasm, Eigen's pexp goes through Emscripten's SSE2 emulation and is slower than
// scalar expf (see simd_exp.h); natively Eigen's pexp is fast but returns a denormal, not 0,
// near -88.
static float exp_shifted_in_place(float* row, int n, float max) {
  constexpr float kLowest = -87.3f;
  int j = 0;
  float sum = 0.0f;
#if defined(__wasm_simd128__)
  const v128_t shift = wasm_f32x4_splat(max);
  v128_t packet_sum = wasm_f32x4_splat(0.0f);
  for (const int end = n - n % 4; j < end; j += 4) {
    const v128_t e = exp_nonpositive(wasm_f32x4_sub(wasm_v128_load(row + j), shift));
    wasm_v128_store(row + j, e);
    packet_sum = wasm_f32x4_add(packet_sum, e);
  }
  sum = wasm_f32x4_extract_lane(packet_sum, 0) + wasm_f32x4_extract_lane(packet_sum, 1) +
        wasm_f32x4_extract_lane(packet_sum, 2) + wasm_f32x4_extract_lane(packet_sum, 3);
#else
  using namespace Eigen::internal;
  using Packet = packet_traits<float>::type;
  constexpr int kWidth = packet_traits<float>::size;  // not unpacket_traits<Packet>: g++ warns on __m512 as a template argument
  const Packet shift = pset1<Packet>(max), lowest = pset1<Packet>(kLowest);
  Packet packet_sum = pset1<Packet>(0.0f);
  for (const int end = n - n % kWidth; j < end; j += kWidth) {
    const Packet x = psub(ploadu<Packet>(row + j), shift);
    const Packet e = pandnot(pexp(x), pcmp_lt(x, lowest));
    pstoreu(row + j, e);
    packet_sum = padd(packet_sum, e);
  }
  sum = predux(packet_sum);
#endif
  for (; j < n; ++j) {
    const float x = row[j] - max;
    row[j] = x < kLowest ? 0.0f : std::exp(x);
    sum += row[j];
  }
  return sum;
}

// The largest of row[0 … n), or NaN if any is NaN (an overflow upstream, which must not pass for
// a fully blocked row). Hand-vectorized: Eigen's maxCoeff<PropagateNaN> measured 20% slower in wasm.
static float max_or_nan(const float* row, int n) {
  int j = 0;
  float max = kNegInf;
  bool nan = false;
#if defined(__wasm_simd128__)
  v128_t packet_max = wasm_f32x4_splat(kNegInf), not_a_number = wasm_i32x4_splat(0);
  for (const int end = n - n % 4; j < end; j += 4) {
    const v128_t x = wasm_v128_load(row + j);
    packet_max = wasm_f32x4_pmax(packet_max, x);
    not_a_number = wasm_v128_or(not_a_number, wasm_f32x4_ne(x, x));
  }
  max = std::max(std::max(wasm_f32x4_extract_lane(packet_max, 0), wasm_f32x4_extract_lane(packet_max, 1)),
                 std::max(wasm_f32x4_extract_lane(packet_max, 2), wasm_f32x4_extract_lane(packet_max, 3)));
  nan = wasm_v128_any_true(not_a_number);
#else
  using namespace Eigen::internal;
  using Packet = packet_traits<float>::type;
  constexpr int kWidth = packet_traits<float>::size;  // not unpacket_traits<Packet>: g++ warns on __m512 as a template argument
  Packet packet_max = pset1<Packet>(kNegInf), not_a_number = pset1<Packet>(0.0f);
  for (const int end = n - n % kWidth; j < end; j += kWidth) {
    const Packet x = ploadu<Packet>(row + j);
    packet_max = pmax(packet_max, x);
    not_a_number = por(not_a_number, pandnot(ptrue(x), pcmp_eq(x, x)));
  }
  max = predux_max(packet_max);
  nan = predux_any(not_a_number);
#endif
  for (; j < n; ++j) {
    max = std::max(max, row[j]);
    nan = nan || std::isnan(row[j]);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : max;
}

bool softmax_forward(float* scores, int rows, int n_k) {
  bool finite = true;
  for (int r = 0; r < rows; ++r) {
    Eigen::Map<Eigen::ArrayXf> row(scores + static_cast<int64_t>(r) * n_k, n_k);
    const float max = max_or_nan(row.data(), n_k);
    if (max == kNegInf) {  // every key blocked: attend to nothing rather than divide 0 by 0
      row.setZero();
      continue;
    }
    // Subtracting the max keeps exp() in range: the largest term is e^0 = 1, so sum >= 1.
    const float sum = exp_shifted_in_place(row.data(), n_k, max);
    finite = finite && std::isfinite(max) && std::isfinite(sum);
    row *= 1.0f / sum;
  }
  return finite;
}

void softmax_backward(float* d_scores, const float* d_a, const float* a, int rows, int n_k) {
  for (int r = 0; r < rows; ++r) {
    const int64_t at = static_cast<int64_t>(r) * n_k;
    Eigen::Map<const Eigen::ArrayXf> ar(a + at, n_k), dar(d_a + at, n_k);
    const float dot = (ar * dar).sum();
    Eigen::Map<Eigen::ArrayXf>(d_scores + at, n_k) = ar * (dar - dot);
  }
}

void attention_values_forward(float* out, int ldo, const float* a, const float* v, int ldv,
                              int rows, int n_k, int d_k) {
#if defined(__wasm_simd128__)
  gemm_columns(out, ldo, a, n_k, f32_matrix(v, ldv), nullptr, rows, n_k, 0, d_k);
#else
  MatrixView o(out, rows, d_k, Eigen::OuterStride<>(ldo));
  ConstMatrixView weights(a, rows, n_k, Eigen::OuterStride<>(n_k));
  ConstMatrixView vi(v, n_k, d_k, Eigen::OuterStride<>(ldv));
  o.noalias() = weights * vi;
#endif
}

void attention_values_backward(float* d_a, float* d_v, int ldv, const float* d_out, int ldo,
                               const float* a, const float* v, int rows, int n_k, int d_k) {
  ConstMatrixView dout(d_out, rows, d_k, Eigen::OuterStride<>(ldo));
  ConstMatrixView weights(a, rows, n_k, Eigen::OuterStride<>(n_k));
  ConstMatrixView vi(v, n_k, d_k, Eigen::OuterStride<>(ldv));
  MatrixView da(d_a, rows, n_k, Eigen::OuterStride<>(n_k));
  MatrixView dv(d_v, n_k, d_k, Eigen::OuterStride<>(ldv));
  da.noalias() = dout * vi.transpose();
  dv.noalias() += weights.transpose() * dout;
}

void KvCache::reset(int capacity_tokens, int d_kv) {
  k.assign(static_cast<size_t>(capacity_tokens) * d_kv, 0.0f);
  v.assign(static_cast<size_t>(capacity_tokens) * d_kv, 0.0f);
  std::vector<float>().swap(kt);  // sized by the first call that packs (it knows the heads)
  packed = 0;
  length = 0;
  capacity = capacity_tokens;
}

void rotary_forward(float* x, int ld, int n, int heads, int d_k, int first_position, int rope_dims,
                    const float* inv_freq) {
  const int half = rope_dims / 2;
  for (int r = 0; r < n; ++r) {
    // The angle in float32 as transformers computes it (position · inv_freq), cos/sin rounded once.
    const float position = static_cast<float>(first_position + r);
    float* row = x + static_cast<int64_t>(r) * ld;
    for (int i = 0; i < half; ++i) {
      const float angle = position * inv_freq[i];
      const float c = static_cast<float>(std::cos(static_cast<double>(angle)));
      const float s = static_cast<float>(std::sin(static_cast<double>(angle)));
      for (int head = 0; head < heads; ++head) {
        float* a = row + head * d_k + i;
        float* b = a + half;
        const float x0 = *a, x1 = *b;
        *a = x0 * c - x1 * s;
        *b = x1 * c + x0 * s;
      }
    }
  }
}

void head_rms_norm_forward(float* x, int ld, int n, int heads, int d_k, const float* weight, float eps) {
  for (int r = 0; r < n; ++r)
    for (int head = 0; head < heads; ++head) {
      float* v = x + static_cast<int64_t>(r) * ld + head * d_k;
      float sum = 0;
      for (int i = 0; i < d_k; ++i) sum += v[i] * v[i];
      const float scale = 1.0f / std::sqrt(sum / static_cast<float>(d_k) + eps);
      for (int i = 0; i < d_k; ++i) v[i] = weight[i] * (v[i] * scale);
    }
}

// Whether values[0, count) are all finite: no float has an exponent of all ones. The test is
// OR-ed over the whole array, a loop the compiler vectorizes in wasm and in SSE2 alike, where
// Eigen's allFinite() is not; q, k, v, the input and the output are checked on every call.
static bool all_finite(const float* values, int64_t count) {
  uint32_t inf_or_nan = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    inf_or_nan |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  return inf_or_nan == 0;
}
static bool all_finite(const std::vector<float>& v) { return all_finite(v.data(), static_cast<int64_t>(v.size())); }
static bool all_finite_parallel(const float* values, int64_t count) {
  std::atomic<bool> finite{true};
  parallel_ranges(count, 65536, [&](int64_t begin, int64_t end) {
    if (!all_finite(values + begin, end - begin)) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}
static bool all_finite_parallel(const std::vector<float>& v) {
  return all_finite_parallel(v.data(), static_cast<int64_t>(v.size()));
}

// Below this many flops a call runs on one thread: waking another costs microseconds, which a
// call this small (n = 6, d_model = 64 is ~0.2 MFLOP, ~8 µs) would feel.
constexpr double kParallelMinFlops = 1.5e6;


bool multihead_attention_forward(float* y, float* attention, const AttentionSelection& sel,
                                 const float* xq, const float* xkv, int n_q, int n_k,
                                 const Config& config, const WeightsView& w, const MaskSpec& mask,
                                 Workspace& ws, KvCache* cache) {
  ProfilePhase projections("attention: Q/K/V");
  const Dims dm = dims_of(config);
  const int group = dm.h / dm.h_kv;
  const int n_new = n_k;  // key/value rows projected in this call
  const int cached = cache ? cache->length : 0;
  const double flops = 2.0 * n_q * dm.d * dm.d_q * 2 + 2.0 * n_new * dm.d * dm.d_kv * 2 +
                       4.0 * n_q * (cached + n_k) * dm.d_q;
  const bool parallel = split_count() > 1 && flops >= kParallelMinFlops;
  const int slots = parallel ? thread_count() : 1;
  ws.q.resize(static_cast<size_t>(n_q) * dm.d_q);
  ws.k.resize(static_cast<size_t>(n_k) * dm.d_kv);
  ws.v.resize(static_cast<size_t>(n_k) * dm.d_kv);
  ws.concat.resize(static_cast<size_t>(n_q) * dm.d_q);

  const GemmOutput q{ws.q.data(), dm.d_q, w.matrix(WeightsView::kQ, w.wq, dm.d, dm.d_q), w.bq, dm.d_q};
  const GemmOutput kv[2] = {{ws.k.data(), dm.d_kv, w.matrix(WeightsView::kK, w.wk, dm.d, dm.d_kv), w.bk, dm.d_kv},
                            {ws.v.data(), dm.d_kv, w.matrix(WeightsView::kV, w.wv, dm.d, dm.d_kv), w.bv, dm.d_kv}};
  if (xq == xkv && n_q == n_k) {  // self-attention: one product of x with W_Q, W_K and W_V
    const GemmOutput qkv[3] = {q, kv[0], kv[1]};
    gemm_shared(xq, dm.d, n_q, dm.d, qkv, 3);
  } else {
    gemm_shared(xq, dm.d, n_q, dm.d, &q, 1);
    if (n_new > 0) gemm_shared(xkv, dm.d, n_k, dm.d, kv, 2);  // none: attend over the cache as it is
  }
  if (!all_finite_parallel(ws.q) || !all_finite_parallel(ws.k) || !all_finite_parallel(ws.v)) return false;
  if (config.q_norm) head_rms_norm_forward(ws.q.data(), dm.d_q, n_q, dm.h, dm.d_k, config.q_norm, config.qk_norm_eps);
  if (config.k_norm) head_rms_norm_forward(ws.k.data(), dm.d_kv, n_k, dm.h_kv, dm.d_k, config.k_norm, config.qk_norm_eps);
  if (config.rope_dims > 0) {
    rotary_forward(ws.q.data(), dm.d_q, n_q, dm.h, dm.d_k, mask.query_offset, config.rope_dims,
                   config.rope_inv_freq);
    rotary_forward(ws.k.data(), dm.d_kv, n_k, dm.h_kv, dm.d_k, cached, config.rope_dims,
                   config.rope_inv_freq);
  }
  const float* keys = ws.k.data();
  const float* values = ws.v.data();
  if (cache) {  // append the new rows; attend over everything cached
    std::copy(ws.k.begin(), ws.k.end(), cache->k.begin() + static_cast<int64_t>(cached) * dm.d_kv);
    std::copy(ws.v.begin(), ws.v.end(), cache->v.begin() + static_cast<int64_t>(cached) * dm.d_kv);
    cache->length = cached + n_new;
    n_k = cache->length;
    keys = cache->k.data();
    values = cache->v.data();
  }

  // Work goes out as (head, block of queries) tasks, each with its own block of scores from the
  // workspace: whole heads alone leave threads idle where there are fewer heads than threads (12
  // heads on 16). Blocks shrink (to 16 rows) until there are 64 tasks, four for each of 16 threads;
  // by a rule of the shapes alone, not of the thread count: a row's softmax and products are
  // computed by its block's code, so the same blocks give the same bits at every count. In wasm a
  // key/value head's scale · Kᵀ (and V, with several blocks) are packed for gemm first, once.
  int block = std::min(n_q, kQueryBlock);
  constexpr int kMinQueryBlock = 16, kTasksWanted = 64;
  while (block > kMinQueryBlock && int64_t{dm.h} * ((n_q + block - 1) / block) < kTasksWanted)
    block = std::max(kMinQueryBlock, block / 2);
  const int blocks = (n_q + block - 1) / block;
  const size_t scores_per_slot = static_cast<size_t>(block) * n_k;
  // A cache keeps its keys' scale · Kᵀ panels for its whole capacity (KvCache::kt): only the keys
  // added since they were packed are packed now.
  const int kt_columns = cache ? cache->capacity : n_k;
  const size_t kt_per_head = static_cast<size_t>(dm.d_k) * ((kt_columns + 7) / 8) * 8;
#if defined(__wasm_simd128__)
  // A head's values as panels (gemm's layout, read in place) when it has several blocks of queries:
  // row-major, every block would copy them into panels again (8 times a head at 512 tokens). One
  // block copies them once either way, and a decoding step (one query) reads them in place.
  const bool values_as_panels = n_q > block;
#else
  const bool values_as_panels = false;  // natively Eigen multiplies the values where they are
#endif
  const size_t v_panels_per_head = values_as_panels ? static_cast<size_t>(n_k) * ((dm.d_k + 7) / 8) * 8 : 0;
  ws.scores.resize(scores_per_slot * slots);
  ws.v_panels.resize(v_panels_per_head * dm.h_kv);
#if defined(__wasm_simd128__)
  std::vector<float>& kt_panels = cache ? cache->kt : ws.kt;
  int pack_from = 0;  // the first key not packed yet
  if (cache) {
    if (cache->kt.size() != kt_per_head * dm.h_kv) cache->kt.assign(kt_per_head * dm.h_kv, 0.0f), cache->packed = 0;
    pack_from = std::min(cache->packed, cached);  // keys from `cached` on are new rows
    // A shorter line of tokens than packed (a cache started over): the columns past it held the
    // other line's keys; the panels past the last key are zero, as a whole packing leaves them.
    for (int head = 0; cache->packed > pack_from && head < dm.h_kv; ++head)
      for (int j = pack_from; j < (cache->packed + 7) / 8 * 8; ++j)
        for (int k = 0; k < dm.d_k; ++k) cache->kt[kt_per_head * head + panel_index(k, j, dm.d_k)] = 0.0f;
  } else {
    ws.kt.resize(kt_per_head * dm.h_kv);
  }
  auto pack_head = [&](int kv_head, int) {
    float* kt = kt_panels.data() + kt_per_head * kv_head;
    const float* head_keys = keys + kv_head * dm.d_k;
    if (pack_from == 0) pack_panels_transposed(kt, head_keys, dm.d_kv, n_k, dm.d_k, dm.scale);
    else pack_columns_transposed(kt, head_keys, dm.d_kv, pack_from, n_k, dm.d_k, dm.scale);
    if (values_as_panels)
      pack_panels(ws.v_panels.data() + v_panels_per_head * kv_head, values + kv_head * dm.d_k, dm.d_kv, n_k, dm.d_k);
  };
#else
  (void)kt_per_head;
  auto pack_head = [&](int kv_head, int) {
    if (values_as_panels)
      pack_panels(ws.v_panels.data() + v_panels_per_head * kv_head, values + kv_head * dm.d_k, dm.d_kv, n_k, dm.d_k);
  };
#endif
  std::atomic<bool> finite{true};
  auto run_block = [&](int head, int q0, int slot) {
    const float* q_head = ws.q.data() + head * dm.d_k;
    const float* k_head = keys + (head / group) * dm.d_k;
    const float* v_head = values + (head / group) * dm.d_k;
    const float* v_panels = ws.v_panels.data() + v_panels_per_head * (head / group);
    const bool selected = attention && head >= sel.first_head && head < sel.first_head + sel.heads;
    float* scores = ws.scores.data() + scores_per_slot * slot;
    const int rows = std::min(block, n_q - q0);
    // Causal blocks skip keys that every one of their queries must ignore anyway.
    const int cols = mask.causal ? std::min(n_k, mask.query_offset + q0 + rows) : n_k;
#if defined(__wasm_simd128__)
    // In wasm the scores go through gemm (core/gemm.h), with the packed scale · Kᵀ (d_k × n_k):
    // the same scores as attention_scores_forward.
    const float* kt = kt_panels.data() + kt_per_head * (head / group);
    (void)k_head;
    gemm_columns(scores, cols, q_head + static_cast<int64_t>(q0) * dm.d_q, dm.d_q,
                 MatrixRef{kt, WeightType::kF32, dm.d_k, /*panels=*/true}, nullptr, rows, dm.d_k, 0, cols);
#else
    attention_scores_forward(scores, q_head + static_cast<int64_t>(q0) * dm.d_q, dm.d_q, k_head,
                             dm.d_kv, rows, cols, dm.d_k, dm.scale);
#endif
    mask_rows(scores, q0, rows, cols, n_k, mask, head);
    if (!softmax_forward(scores, rows, cols)) finite.store(false, std::memory_order_relaxed);
    float* head_out = ws.concat.data() + static_cast<int64_t>(q0) * dm.d_q + head * dm.d_k;
    // Values as panels: their top `cols` rows are what a causal block reads (core/gemm.h: panels
    // deeper than the product).
    if (values_as_panels)
      gemm_columns(head_out, dm.d_q, scores, cols, MatrixRef{v_panels, WeightType::kF32, n_k, /*panels=*/true},
                   nullptr, rows, cols, 0, dm.d_k);
    else
      attention_values_forward(head_out, dm.d_q, scores, v_head, dm.d_kv, rows, cols, dm.d_k);
    if (!selected) return;
    // Copy out the selected rows of this block; keys a causal block skipped get weight 0.
    const int from = std::max(q0, sel.first_row), to = std::min(q0 + rows, sel.first_row + sel.rows);
    for (int r = from; r < to; ++r) {
      float* out = attention + (static_cast<int64_t>(head - sel.first_head) * sel.rows + (r - sel.first_row)) * n_k;
      std::copy(scores + static_cast<int64_t>(r - q0) * cols, scores + static_cast<int64_t>(r - q0 + 1) * cols, out);
      std::fill(out + cols, out + n_k, 0.0f);
    }
  };
  {
    ProfilePhase heads("attention: heads");
    // The last blocks first: a causal block's cost grows with its last query, and handing out the
    // largest tasks first leaves the small ones to even out the threads' ends.
    auto run_task = [&](int task, int slot) { run_block(task % dm.h, (blocks - 1 - task / dm.h) * block, slot); };
    if (parallel && blocks == 1 && group == 1) {  // a head's packing and its one block in one task
      parallel_for(dm.h, [&](int head, int slot) {
        pack_head(head, slot);
        run_task(head, slot);
      });
    } else if (parallel) {
      parallel_for(dm.h_kv, pack_head);
      parallel_for(dm.h * blocks, run_task);
    } else {
      for (int kv_head = 0; kv_head < dm.h_kv; ++kv_head) pack_head(kv_head, 0);
      for (int task = 0; task < dm.h * blocks; ++task) run_task(task, 0);
    }
  }
#if defined(__wasm_simd128__)
  if (cache) cache->packed = n_k;
#endif
  ProfilePhase output("attention: W_O");
  gemm(y, dm.d, ws.concat.data(), dm.d_q, w.matrix(WeightsView::kO, w.wo, dm.d_q, dm.d), w.bo, n_q, dm.d_q, dm.d);
  return finite.load() && all_finite_parallel(y, int64_t{n_q} * dm.d);
}

bool head_trace_forward(HeadTrace& t, int head, const float* xq, const float* xkv, int n_q,
                        int n_k, const Config& config, const WeightsView& w,
                        const MaskSpec& mask) {
  const Dims dm = dims_of(config);
  const int kv_head = head / (dm.h / dm.h_kv);
  // Project with the head's own column slices of W and b: the teaching view shows Q_i = X·W_Q,i.
  auto project = [&](std::vector<float>& out, const float* x, int n, const float* weight,
                     const float* bias, int width, int column) {
    out.resize(static_cast<size_t>(n) * dm.d_k);
    MatrixView o(out.data(), n, dm.d_k, Eigen::OuterStride<>(dm.d_k));
    ConstMatrixView xm(x, n, dm.d, Eigen::OuterStride<>(dm.d));
    ConstMatrixView wm(weight + column, dm.d, dm.d_k, Eigen::OuterStride<>(width));
    o.noalias() = xm * wm;
    if (bias) o.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias + column, dm.d_k);
  };
  project(t.q, xq, n_q, w.wq, w.bq, dm.d_q, head * dm.d_k);
  project(t.k, xkv, n_k, w.wk, w.bk, dm.d_kv, kv_head * dm.d_k);
  project(t.v, xkv, n_k, w.wv, w.bv, dm.d_kv, kv_head * dm.d_k);

  const size_t nn = static_cast<size_t>(n_q) * n_k;
  t.scores.resize(nn);
  attention_scores_forward(t.scores.data(), t.q.data(), dm.d_k, t.k.data(), dm.d_k, n_q, n_k,
                           dm.d_k, 1.0f);
  t.scaled = t.scores;
  Eigen::Map<Eigen::ArrayXf>(t.scaled.data(), nn) *= dm.scale;
  t.masked = t.scaled;
  mask_forward(t.masked.data(), 0, n_q, n_k, mask, head);
  t.attention = t.masked;
  const bool finite = softmax_forward(t.attention.data(), n_q, n_k);
  t.head_output.resize(static_cast<size_t>(n_q) * dm.d_k);
  attention_values_forward(t.head_output.data(), dm.d_k, t.attention.data(), t.v.data(), dm.d_k,
                           n_q, n_k, dm.d_k);
  return finite && all_finite(t.q) && all_finite(t.k) && all_finite(t.v) && all_finite(t.head_output);
}

double forward_bytes_needed(const Config& config, int n_q, int n_k, int64_t attention_floats,
                            double mask_bytes) {
  const Dims dm = dims_of(config);
  const double f = sizeof(float);
  double bytes = f * (2.0 * n_q * dm.d + n_k * dm.d);                  // inputs and output
  bytes += f * (2.0 * n_q * dm.d_q + 2.0 * n_k * dm.d_kv);             // Q, concat, K, V
  const double slots = thread_count();                                  // per thread:
  bytes += f * slots * std::min(n_q, kQueryBlock) * n_k;               //   a block of scores
  bytes += f * dm.h_kv * dm.d_k * (n_k + 7.0);                         // each key/value head's packed
  bytes += f * dm.h_kv * (dm.d_k + 7.0) * n_k;                         //   scale·Kᵀ and V (wasm)
  bytes += f * static_cast<double>(attention_floats);                  // the weights asked for
  return bytes + mask_bytes;
}

int64_t first_non_finite(const float* values, int64_t count) {
  // The vectorized check runs over the whole array; only a failure pays for the scalar search.
  if (all_finite(values, count)) return -1;
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(values[i])) return i;
  return -1;
}

static std::string check_finite(const char* name, const float* values, int rows, int cols) {
  const int64_t bad = first_non_finite(values, static_cast<int64_t>(rows) * cols);
  if (bad < 0) return "";
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "%s contains %s at index %lld (row %lld, column %lld): inputs must be finite numbers",
                name, std::isnan(values[bad]) ? "NaN" : "an infinity",
                static_cast<long long>(bad), static_cast<long long>(bad / cols),
                static_cast<long long>(bad % cols));
  return buf;
}

std::string validate_selection(const Config& config, int n_q, const AttentionSelection& sel) {
  const int h = dims_of(config).h;
  if (sel.heads == 0) return "";
  if (sel.first_head < 0 || sel.heads < 0 || sel.first_head + sel.heads > h)
    return format("the requested attention heads %g … %g do not exist: heads are 0 … %g",
                  sel.first_head, sel.first_head + sel.heads - 1.0, h - 1.0);
  if (sel.first_row < 0 || sel.rows < 1 || sel.first_row + sel.rows > n_q)
    return format("the requested attention rows %g … %g do not exist: query rows are 0 … %g",
                  sel.first_row, sel.first_row + sel.rows - 1.0, n_q - 1.0);
  return "";
}

std::string validate_shape(const Config& config, int n_q, int n_k, int64_t attention_floats,
                           double mask_bytes) {
  if (n_q < 1 || n_q > kMaxTokens)
    return format("the query sequence length must be from 1 to %g tokens, got %g", kMaxTokens, n_q);
  if (n_k < 1 || n_k > kMaxTokens)
    return format("the key/value sequence length must be from 1 to %g tokens, got %g", kMaxTokens,
                  n_k);
  const double need = forward_bytes_needed(config, n_q, n_k, attention_floats, mask_bytes);
  if (need > kMemoryBudgetBytes) {
    return format("this call needs %.0f MiB of wasm memory, over the %.0f MiB budget: pass fewer "
                  "tokens",
                  need / (1 << 20), kMemoryBudgetBytes / (1 << 20)) +
           (attention_floats > 0 ? " or ask for fewer attention weights (one head, some rows, or none)" : "");
  }
  return "";
}

std::string validate_forward(const Config& config, const float* xq, const float* xkv, int n_q,
                             int n_k, const MaskSpec& mask, int64_t attention_floats) {
  std::string error = validate_shape(config, n_q, n_k, attention_floats);
  if (!error.empty()) return error;
  const int d = config.d_model;
  error = check_finite(xkv == xq ? "x" : "queries", xq, n_q, d);
  if (error.empty() && xkv != xq) error = check_finite("keys/values", xkv, n_k, d);
  if (error.empty() && mask.additive) {
    const int64_t count = static_cast<int64_t>(n_q) * n_k;
    for (int64_t i = 0; i < count; ++i) {
      const float m = mask.additive[i];
      if (std::isnan(m) || m == std::numeric_limits<float>::infinity()) {
        return std::string("the additive mask has ") + (std::isnan(m) ? "NaN" : "+Infinity") +
               format(" at index %g: use finite values, or -Infinity to block a key",
                      static_cast<double>(i));
      }
    }
  }
  return error;
}

}  // namespace mh

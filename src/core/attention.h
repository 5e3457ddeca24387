// Multi-head attention, forward pass, as plain functions over caller memory.
//
// Notation (all matrices row-major float32):
//   n_q     query positions, n_k key/value positions (n_q == n_k == n for self-attention)
//   d       d_model;  h = num_heads;  d_k = head_dim (d / h unless set);  d_q = h * d_k
//   h_kv = num_kv_heads;  d_kv = h_kv * d_k
//   Q = Xq·W_Q + b_Q (n_q × d_q),  K = Xkv·W_K + b_K (n_k × d_kv),  V = Xkv·W_V + b_V (n_k × d_kv)
//   optionally rotary positions (RoPE) applied to each head's Q and K rows
//   head i reads Q columns [i·d_k, (i+1)·d_k) and K/V columns of kv head g(i) = i / (h / h_kv)
//   A_i = softmax(scale · Q_i K_gᵀ + mask) (n_q × n_k),  O[:, head i] = A_i V_g,  Y = O·W_O + b_O
//   (W_O is d_q × d)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gemm.h"

namespace mh {

struct Config {
  int d_model = 64;
  int num_heads = 4;
  int num_kv_heads = 0;  // 0 means num_heads (plain multi-head); 1 is multi-query; else grouped
  bool bias = true;
  float scale = 0.0f;        // score scale; 0 means 1 / (temperature · sqrt(d_k))
  float temperature = 1.0f;  // > 1 flattens every head's attention, < 1 sharpens it
  int head_dim = 0;          // 0 means d_model / num_heads; real checkpoints may set it (Mistral-Nemo)
  // Rotary position embedding (Su et al. 2021) in the "rotate half" layout of Llama/Qwen/Mistral:
  // within each head, dims i and i + rope_dims/2 (i < rope_dims/2) are rotated by the angle
  // position · rope_inv_freq[i]. rope_dims = 0 means none; the caller owns rope_inv_freq
  // (rope_dims/2 floats), which is where a checkpoint's rope scaling is already folded in.
  int rope_dims = 0;
  const float* rope_inv_freq = nullptr;
  // Per-head RMSNorm of queries and keys before the rotation (Qwen3, Gemma 3): each head's row of
  // Q (K) becomes q / sqrt(mean(q²) + qk_norm_eps) ⊙ q_norm (k_norm), both d_k long. Null = none.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  float qk_norm_eps = 1e-6f;
};

// Limits that turn a runaway request into an error instead of a frozen tab or an abort.
constexpr int kMaxTokens = 16384;
constexpr int kMaxDModel = 4096;
constexpr int kMaxHeads = 256;
constexpr double kMemoryBudgetBytes = 512.0 * 1024 * 1024;

// The sizes every other function derives from a (valid) Config.
struct Dims {
  int d, h, h_kv, d_k, d_q, d_kv;
  float scale;
};
Dims dims_of(const Config& config);

// "" if the config is usable, else a message that says what to change.
std::string validate_config(const Config& config);

// Weights and biases in the X·W convention: W_Q is d × d_q, W_K, W_V are d × d_kv, W_O is d_q × d,
// all [in][out].
// Bias pointers are null when config.bias is false. A checkpoint's fp16/bf16 matrices are used as
// they are stored: with `type` F16 or BF16 the four matrix pointers point at 2-byte elements (cast
// to const float*), which only multihead_attention_forward reads (through gemm, core/gemm.h).
struct WeightsView {
  const float *wq, *wk, *wv, *wo;
  const float *bq, *bk, *bv, *bo;
  WeightType type = WeightType::kF32;
  bool panels = false;        // the matrices are in gemm's panel layout (core/gemm.h)
  bool known_finite = false;  // the four matrices hold no inf or NaN (MatrixRef::known_finite)
  // Each matrix's type (q, k, v, o) where they differ (a GGUF file's layer can hold Q4_K and Q6_K
  // projections); null: all are `type`.
  const WeightType* types = nullptr;
  enum Matrix { kQ, kK, kV, kO };
  // One of the matrices (K × N) as gemm's operand.
  MatrixRef matrix(Matrix which, const float* w, int64_t K, int64_t N) const {
    return {w, types ? types[which] : type, panels ? K : N, panels, known_finite};
  }
};

// 4·d² + 4·d for plain MHA with biases; K and V shrink to d × d_kv with grouped/multi-query heads.
int64_t parameter_count(const Config& config);

// Which (query, key) pairs may not attend. All parts are optional and combine:
//   causal: key j is blocked for query i when j > query_offset + i (with query_offset 0: top-left
//     aligned, as in PyTorch's is_causal; a decoding step with a key/value cache passes the number
//     of cached tokens, so its queries see every earlier token)
//   window (with causal): key j is also blocked when query_offset + i − j ≥ window (Mistral's
//     sliding window; 0 = no window)
//   query_offset is also the position of query 0 for rotary positions.
//   key_padding (n_k): nonzero = that key position is padding, blocked for every query
//   blocked (n_q × n_k): nonzero = blocked
//   additive (n_q × n_k): added to the scaled scores (-inf blocks; large negative values damp);
//     with additive_head_stride > 0, head h's is additive + h · additive_head_stride (T5's relative
//     position bias differs per head)
// A query whose keys are all blocked gets an attention row of zeros (and a zero head output).
struct MaskSpec {
  bool causal = false;
  int query_offset = 0;
  int window = 0;
  const uint8_t* key_padding = nullptr;
  const uint8_t* blocked = nullptr;
  const float* additive = nullptr;
  int64_t additive_head_stride = 0;
};

// Keys and values of the tokens seen so far, for decoding one token at a time: rows
// [0, length) of k and v (capacity × d_kv each, rotary positions already applied to k).
struct KvCache {
  std::vector<float> k, v;
  // wasm: each key/value head's scale · Kᵀ in gemm's panel layout (core/gemm.h), room for the whole
  // capacity, of which the first `packed` keys are current: a decoding step packs its new key only
  // (packing every cached key again each step had cost more than the heads' arithmetic).
  std::vector<float> kt;
  int packed = 0;
  int length = 0, capacity = 0;
  void reset(int capacity_tokens, int d_kv);  // allocates once: views into it never move
};

// Scratch memory reused across calls, so a steady stream of same-sized calls allocates nothing.
// scores, kt and v_panels hold one block or head per thread (parallel.h) when a call is split
// over threads.
struct Workspace {
  std::vector<float> q, k, v, concat, scores;
  std::vector<float> kt;        // wasm: a head's scale · Kᵀ in gemm's panel layout (core/gemm.h)
  std::vector<float> v_panels;  // wasm: a head's V in gemm's panel layout (several query blocks)
};

// ---- the operations, in the order the forward pass runs them ----

// out (n × d_out) = in (n × d_in) · w (d_in × d_out) + b (d_out; null for none)
void linear_forward(float* out, const float* in, const float* w, const float* b,
                    int n, int d_in, int d_out);
// Backward of linear_forward, given d_out (n × d_out) = dLoss/dout. Every gradient is ADDED to
// (the caller zeroes it once per step, so shared weights and branches can accumulate):
//   d_in (n × d_in) += d_out · wᵀ,  d_w (d_in × d_out) += inᵀ · d_out,  d_b (d_out) += Σ_rows d_out.
// Any of d_in, d_w, d_b may be null when that gradient is not needed.
void linear_backward(float* d_in, float* d_w, float* d_b, const float* d_out, const float* in,
                     const float* w, int n, int d_in_size, int d_out_size);

// scores (rows × n_k) = scale · q (rows × d_k, row stride ldq) · kᵀ  (k: n_k × d_k, row stride ldk)
void attention_scores_forward(float* scores, const float* q, int ldq, const float* k, int ldk,
                              int rows, int n_k, int d_k, float scale);
// Backward, given d_scores (rows × n_k): d_query += scale · d_scores · k,
// d_key += scale · d_scoresᵀ · q
// (same strides as the forward; d_k accumulates, so query heads sharing a key head can add up).
void attention_scores_backward(float* d_query, int ldq, float* d_key, int ldk, const float* d_scores,
                               const float* q, const float* k, int rows, int n_k, int d_k,
                               float scale);

// scores (rows × n_k, the rows of queries first_query … first_query+rows-1) in place:
// adds the additive mask, then sets blocked entries to -inf.
void mask_forward(float* scores, int first_query, int rows, int n_k, const MaskSpec& mask, int head = 0);
// The mask has no backward function of its own: adding a constant passes the gradient through
// unchanged, and a blocked entry gets attention exactly 0, so softmax_backward already gives it a
// zero gradient (the -inf never enters a product).

// Each of the rows (rows × n_k) in place becomes softmax(row): subtract the row max, exp, divide by
// the sum (vectorized through Eigen's packet exp). A row of all -inf becomes all zeros.
// Returns false if some row held +inf or NaN (a float32 overflow upstream): it cannot be normalised.
bool softmax_forward(float* scores, int rows, int n_k);
// Backward, given the forward's output a (rows × n_k) and d_a = dLoss/da:
//   d_scores (rows × n_k) = a ⊙ (d_a − rowsum(d_a ⊙ a))   (written, not added; may alias d_a).
// Blocked keys (a = 0) and all-blocked rows get gradient 0.
void softmax_backward(float* d_scores, const float* d_a, const float* a, int rows, int n_k);

// out (rows × d_k, row stride ldo) = a (rows × n_k) · v (n_k × d_k, row stride ldv)
void attention_values_forward(float* out, int ldo, const float* a, const float* v, int ldv,
                              int rows, int n_k, int d_k);
// Backward, given d_out (rows × d_k, stride ldo):
//   d_a (rows × n_k) = d_out · vᵀ  (written),   d_v (n_k × d_k, stride ldv) += aᵀ · d_out.
void attention_values_backward(float* d_a, float* d_v, int ldv, const float* d_out, int ldo,
                               const float* a, const float* v, int rows, int n_k, int d_k);

// Which attention weights a caller wants back: heads [first_head, first_head + heads) and query
// rows [first_row, first_row + rows), laid out heads × rows × n_k. heads == 0 asks for none.
struct AttentionSelection {
  int first_head = 0, heads = 0, first_row = 0, rows = 0;
  static AttentionSelection none() { return {}; }
  static AttentionSelection all(int num_heads, int n_q) { return {0, num_heads, 0, n_q}; }
  int64_t floats(int n_k) const { return int64_t{heads} * rows * n_k; }
};

// Rotates each head's rows in place: x (n × heads·d_k, row stride ld), row r at position
// first_position + r; dims [0, rope_dims/2) pair with [rope_dims/2, rope_dims) of the same head.
void rotary_forward(float* x, int ld, int n, int heads, int d_k, int first_position, int rope_dims,
                    const float* inv_freq);

// Normalises each head's row in place: x (n × heads·d_k, row stride ld), each d_k slice becomes
// slice / sqrt(mean(slice²) + eps) ⊙ weight (d_k).
void head_rms_norm_forward(float* x, int ld, int n, int heads, int d_k, const float* weight, float eps);

// The whole layer. xq (n_q × d), xkv (n_k × d) → y (n_q × d), and the selected attention weights
// into `attention` (sel.heads × sel.rows × n_k). Scores only ever live in a block of kQueryBlock
// query rows at a time, so no n_q × n_k buffer per head is materialised; a caller pays memory only
// for the weights it selects. Inputs must be validated first (validate_forward). Returns false if
// float32 overflowed on the way (Q, K, V, scores or Y not finite although the inputs were).
// With thread_count() > 1 (parallel.h) a large enough call splits the projections' output columns
// and then the heads over the threads; every output element is computed as on one thread (in the
// wasm build: the same bits), so results do not depend on the thread count.
constexpr int kQueryBlock = 64;
//
// With a cache, xkv holds only the n_k new tokens: their keys and values are appended to the cache
// (at positions cache->length …) and the queries attend to every cached token, so the attention
// rows are cache->length (after the call) long. The cache must have room for them. With n_k = 0
// nothing is appended and the queries attend over the cache as it is: an encoder-decoder's
// cross-attention keys and values, computed once per source and read at every decoding step.
bool multihead_attention_forward(float* y, float* attention, const AttentionSelection& sel,
                                 const float* xq, const float* xkv, int n_q, int n_k,
                                 const Config& config, const WeightsView& w, const MaskSpec& mask,
                                 Workspace& ws, KvCache* cache = nullptr);

// Everything one head computes, for teaching. Shapes: q n_q × d_k, k and v n_k × d_k,
// scores / scaled / masked / attention n_q × n_k, head_output n_q × d_k.
struct HeadTrace {
  std::vector<float> q, k, v, scores, scaled, masked, attention, head_output;
};
bool head_trace_forward(HeadTrace& trace, int head, const float* xq, const float* xkv,
                        int n_q, int n_k, const Config& config, const WeightsView& w,
                        const MaskSpec& mask);

// Bytes of scratch and results one forward call needs (used to refuse calls over budget);
// attention_floats is how many attention weights the caller asks for (AttentionSelection::floats).
// mask_bytes counts mask buffers the caller keeps in the same memory (the wasm heap).
double forward_bytes_needed(const Config& config, int n_q, int n_k, int64_t attention_floats,
                            double mask_bytes = 0);

// "" if sequence lengths n_q, n_k are in 1 … kMaxTokens and the call fits the memory budget.
// Checked before anything is allocated for the call.
std::string validate_shape(const Config& config, int n_q, int n_k, int64_t attention_floats,
                           double mask_bytes = 0);

// "" if sel names heads and query rows that exist (an empty selection is valid).
std::string validate_selection(const Config& config, int n_q, const AttentionSelection& sel);

// "" if a forward call with these inputs is valid, else what to fix: sequence lengths in
// 1 … kMaxTokens, finite inputs, a finite or -inf additive mask, memory within budget.
std::string validate_forward(const Config& config, const float* xq, const float* xkv, int n_q,
                             int n_k, const MaskSpec& mask, int64_t attention_floats);

// Index of the first NaN or ±Inf in values[0 … count), or -1.
int64_t first_non_finite(const float* values, int64_t count);

}  // namespace mh

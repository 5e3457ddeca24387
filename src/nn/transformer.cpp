// The parts every family shares: binding the weights, checking a run, an attention block, the
// output head, sampling. The per-family forward passes are in nn/families/.
#include "nn/transformer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/eigen_include.h"
#include "core/init.h"
#include "interpret/ablation.h"
#include "interpret/contributions.h"
#include "interpret/value_norms.h"
#include "nn/families/family.h"
#include "nn/ops.h"

namespace mh {

namespace {
// Points the forward pass at the loaded tensors, named as the families' params() name them.
TransformerWeights bind_weights(const TransformerConfig& c, const std::map<std::string, Tensor>& tensors) {
  auto get = [&](const std::string& name) -> const Tensor* {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  };
  TransformerWeights w;
  w.token_embedding = get("embed");
  w.embedding_transposed = c.tied;
  w.position_embedding = get("positions");
  w.type_embedding = get("types");
  w.embedding_norm_w = get("embed_norm_w");
  w.embedding_norm_b = get("embed_norm_b");
  for (int l = 0; l < c.layers; ++l) {
    auto at = [&](const char* what) { return get(layer_name(l, what)); };
    w.layers.push_back({at("norm1_w"), at("norm1_b"), at("wq"), at("wk"), at("wv"), at("wo"), at("bq"),
                        at("bk"), at("bv"), at("bo"), at("norm2_w"), at("norm2_b"), at("w_up"),
                        at("b_up"), at("w_gate"), at("b_gate"), at("w_down"), at("b_down"), at("q_norm"),
                        at("k_norm"), at("post_attention_norm"), at("post_mlp_norm")});
  }
  w.final_norm_w = get("final_norm_w");
  w.final_norm_b = get("final_norm_b");
  w.head_dense_w = get("head_dense_w");
  w.head_dense_b = get("head_dense_b");
  w.head_norm_w = get("head_norm_w");
  w.head_norm_b = get("head_norm_b");
  w.output_bias = get("output_bias");
  const bool has_head = !c.head_transform || w.head_dense_w != nullptr;
  w.output = !has_head ? nullptr : c.tied ? w.token_embedding : get("output");
  return w;
}
}  // namespace

Transformer::Transformer(TransformerConfig config, std::map<std::string, Tensor> tensors)
    : config_(std::move(config)), tensors_(std::move(tensors)), weights_(bind_weights(config_, tensors_)) {
  caches_.resize(static_cast<size_t>(config_.layers));
}

int64_t Transformer::parameter_count() const {
  int64_t count = 0;
  for (const auto& [name, t] : tensors_) count += t.elements();
  return count;
}

int64_t Transformer::weight_bytes() const {
  int64_t bytes = 0;
  for (const auto& [name, t] : tensors_) bytes += static_cast<int64_t>(t.bytes.size());
  return bytes;
}

void Transformer::reset_cache(int tokens) {
  prefix_.valid = false;
  const int d_kv = config_.kv_heads * config_.head_dim;
  for (KvCache& cache : caches_) cache.reset(tokens, d_kv);
}

double Transformer::run_bytes(int n, int n_total, const RunRequest& r) const {
  const TransformerConfig& c = config_;
  const double f = 4, d = c.d_model, heads = c.heads, d_q = double(c.heads) * c.head_dim;
  double bytes = f * n * (4 * d + 2 * c.d_ff + 2 * d_q);  // activations and the attention workspace
  bytes += f * std::min(n, kQueryBlock) * double(n_total) * 2;  // a block of scores, packed keys
  bytes += f * d * d_q;  // W_O with heads switched off
  if (r.logits && has_lm_head()) bytes += f * (r.logit_rows ? r.logit_row_count : n) * (double(c.vocab) + d);
  int layers_asked = 0;
  for (int l = 0; r.attention_layers && l < c.layers; ++l) layers_asked += r.attention_layers[l] != 0;
  bytes += f * layers_asked * double(r.heads) * n * n_total;
  if (r.hidden_states) bytes += f * (c.layers + 1.0) * n * d;
  if (r.head_outputs) bytes += f * c.layers * double(n) * d_q;
  if (r.mlp_outputs) bytes += f * c.layers * double(n) * d;
  if (r.value_norms) {
    bytes += f * c.layers * heads * n_total;
    // The heads' factors of W_O, kept once made; while one is made, its rows of W_O widened to
    // float32 and float64 and a few d_k × d_k float64 matrices; one head's values through it.
    const double d_k = c.head_dim;
    if (value_norm_factors_.empty()) bytes += f * c.layers * heads * d_k * (d_k + 7) + 12 * d_k * d + 8 * 4 * d_k * d_k;
    bytes += f * n_total * d_k;
  }
  return bytes;
}

std::string Transformer::input_error(const int32_t* ids, int n, const RunRequest& r) const {
  const TransformerConfig& c = config_;
  for (int t = 0; t < n; ++t)
    if (ids[t] < 0 || ids[t] >= c.vocab)
      return "token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
             " is not in the vocabulary (0 … " + std::to_string(c.vocab - 1) + ")";
  if (r.token_types) {
    const int types = std::max(c.type_vocab, 1);
    for (int t = 0; t < n; ++t)
      if (r.token_types[t] < 0 || r.token_types[t] >= types)
        return "token type " + std::to_string(r.token_types[t]) + " at position " + std::to_string(t) +
               " is not one of the model's " + std::to_string(types) + " token types";
  }
  for (int i = 0; r.logit_rows && i < r.logit_row_count; ++i)
    if (r.logit_rows[i] < 0 || r.logit_rows[i] >= n)
      return "logits were asked for row " + std::to_string(r.logit_rows[i]) + ", but rows are 0 … " + std::to_string(n - 1);
  if (r.heads < 0 || r.first_head < 0 || r.first_head + r.heads > c.heads)
    return "the requested attention heads do not exist: heads are 0 … " + std::to_string(c.heads - 1);
  if (r.component_position >= n) return "the position to attribute is past the last token (" + std::to_string(n - 1) + ")";
  if ((r.patch || r.resume_residual) && !c.causal)
    return "activation patching needs a causal decoder; a " + c.model_type + " encoder renormalises every layer's output";
  if (r.patch && (r.patch->layer < 0 || r.patch->layer >= c.layers || !r.patch->values ||
                  (r.patch->kind == ActivationPatch::Kind::kHead && (r.patch->head < 0 || r.patch->head >= c.heads))))
    return "the patched layer or head does not exist";
  if (r.resume_residual && (r.first_layer < 0 || r.first_layer >= c.layers)) return "the layer to start at does not exist";
  if (r.contributions) {
    bool every = r.attention_layers && r.first_head == 0 && r.heads == c.heads && !r.use_cache;
    for (int l = 0; every && l < c.layers; ++l) every = r.attention_layers[l] != 0;
    if (!every) return "contributions need every head of every layer's attention, without the key/value cache";
  }
  return "";
}

std::string Transformer::run(RunResult& out, const int32_t* ids, int n, const RunRequest& r) {
  const TransformerConfig& c = config_;
  out = RunResult();
  const int cached = r.use_cache ? cached_tokens() : 0;
  if (n < 1) return "run needs at least one token id";
  const int max_tokens = std::min(c.max_positions, kMaxTokens);
  if (cached + n > max_tokens)
    return "this model reads at most " + std::to_string(max_tokens) + " tokens (its max positions), got " +
           std::to_string(cached + n) + (cached ? " with the cached ones" : "") + ": pass fewer tokens";
  if (r.use_cache) prefix_.valid = false;  // the caches are about to hold other tokens
  if (r.use_cache && (!c.causal || cached + n > caches_[0].capacity))
    return !c.causal ? "only causal (decoder) models can decode with a key/value cache"
                     : "the key/value cache has room for " + std::to_string(caches_[0].capacity) + " tokens";
  if (std::string error = input_error(ids, n, r); !error.empty()) return error;
  const double need = run_bytes(n, cached + n, r);
  if (need > memory_limit)
    return "this run needs " + std::to_string(static_cast<long long>(need / (1 << 20))) + " MiB of memory but " +
           std::to_string(static_cast<long long>(memory_limit / (1 << 20))) +
           " MiB are free: pass fewer tokens or ask for fewer attention weights";
  out.n = n;
  out.n_k = cached + n;
  int layers_asked = 0;
  for (int l = 0; r.attention_layers && l < c.layers; ++l) layers_asked += r.attention_layers[l] != 0;
  out.attentions.assign(static_cast<size_t>(layers_asked) * r.heads * n * out.n_k, 0.0f);
  if (r.value_norms) out.value_norms.assign(static_cast<size_t>(c.layers) * c.heads * out.n_k, 0.0f);
  if (r.hidden_states) out.hidden_states.resize((c.layers + 1) * int64_t{n} * c.d_model);
  if (r.component_position >= 0) out.components.assign(ComponentLayout{c.d_model, c.heads}.size(c.layers), 0.0f);
  if (r.head_outputs) out.head_outputs.assign(int64_t{c.layers} * n * c.heads * c.head_dim, 0.0f);
  if (r.mlp_outputs) out.mlp_outputs.assign(int64_t{c.layers} * n * c.d_model, 0.0f);
  if (r.contributions) out.contributions.assign(int64_t{c.layers} * n * n, 0.0f);
  overflow_ = false;
  ForwardPass pass(*this, out, ids, n, r);
  c.family->forward(pass);
  if (overflow_ || first_non_finite(out.last_hidden.data(), static_cast<int64_t>(out.last_hidden.size())) >= 0) {
    if (r.use_cache) reset_cache(caches_[0].capacity);
    out = RunResult();
    return "the model's activations overflowed float32 (a corrupt or mis-scaled checkpoint?)";
  }
  return "";
}

namespace {
// A request's switched-off heads as one flag per layer and head (all on when it has none).
std::vector<uint8_t> enabled_flags(const RunRequest& r, int count) {
  return r.head_enabled ? std::vector<uint8_t>(r.head_enabled, r.head_enabled + count) : std::vector<uint8_t>(count, 1);
}
std::vector<uint8_t> layer_flags(const RunRequest& r, int layers) {
  return r.attention_layers ? std::vector<uint8_t>(r.attention_layers, r.attention_layers + layers)
                            : std::vector<uint8_t>(layers, 0);
}
}  // namespace

int Transformer::reusable_prefix(const int32_t* ids, int n, const RunRequest& r) const {
  const TransformerConfig& c = config_;
  // Value norms may differ: they are computed over every key, from the cached values.
  if (!prefix_.valid || prefix_.first_head != r.first_head || prefix_.heads != r.heads ||
      prefix_.attention_layers != layer_flags(r, c.layers) ||
      prefix_.head_enabled != enabled_flags(r, c.layers * c.heads))
    return 0;
  // At least the last token is computed (a run needs one), and every row logits are asked for.
  int shared = 0;
  const int most = std::min<int>(n - 1, static_cast<int>(prefix_.ids.size()));
  while (shared < most && ids[shared] == prefix_.ids[shared]) ++shared;
  if (r.logits && has_lm_head()) {
    if (!r.logit_rows) return 0;
    for (int i = 0; i < r.logit_row_count; ++i) shared = std::min(shared, r.logit_rows[i]);
  }
  return shared;
}

std::string Transformer::run_reusing_prefix(RunResult& out, const int32_t* ids, int n, const RunRequest& r) {
  const TransformerConfig& c = config_;
  const int max_tokens = std::min(c.max_positions, kMaxTokens);
  if (!c.causal || r.use_cache || r.hidden_states || r.last_hidden || n < 1 || n > max_tokens) return run(out, ids, n, r);
  // Checked here, over all n tokens: the run below sees only those after the shared ones.
  if (std::string error = input_error(ids, n, r); !error.empty()) {
    out = RunResult();
    return error;
  }
  const int reused = reusable_prefix(ids, n, r);
  if (n > caches_[0].capacity) {
    // Room for the text to grow before the caches are made again; the shared tokens move over.
    const int capacity = std::min(max_tokens, std::max(2 * n, 64));
    const int d_kv = c.kv_heads * c.head_dim;
    const double cache_bytes = 8.0 * c.layers * capacity * d_kv;
    if (run_bytes(n, n, r) + cache_bytes > memory_limit) {
      reset_cache(0);  // frees the caches; the run says what is wrong, or runs without them
      return run(out, ids, n, r);
    }
    for (KvCache& cache : caches_) {
      KvCache larger;
      larger.reset(capacity, d_kv);
      std::copy(cache.k.begin(), cache.k.begin() + int64_t{reused} * d_kv, larger.k.begin());
      std::copy(cache.v.begin(), cache.v.begin() + int64_t{reused} * d_kv, larger.v.begin());
      cache = std::move(larger);
    }
  }
  for (KvCache& cache : caches_) cache.length = reused;
  // The tokens after the shared ones, appended to the caches; logit rows counted from the first of them.
  RunRequest rest = r;
  rest.use_cache = true;
  if (r.token_types) rest.token_types = r.token_types + reused;
  std::vector<int32_t> rows;
  if (r.logit_rows) {
    rows.assign(r.logit_rows, r.logit_rows + r.logit_row_count);
    for (int32_t& row : rows) row -= reused;
    rest.logit_rows = rows.data();
  }
  RunResult tail;
  const std::string error = run(tail, ids + reused, n - reused, rest);
  if (!error.empty()) {
    out = RunResult();
    return error;
  }
  // Rows [0, reused) of every head from the previous run (a causal row has no weight past its own
  // token, so its columns from `reused` on are 0), the rest from this one.
  out = RunResult();
  out.n = out.n_k = n;
  out.reused = reused;
  out.logits = std::move(tail.logits);
  out.last_hidden = std::move(tail.last_hidden);
  out.value_norms = std::move(tail.value_norms);
  const size_t blocks = tail.attentions.size() / (static_cast<size_t>(n - reused) * n);
  out.attentions.assign(blocks * n * n, 0.0f);
  const int previous_n = static_cast<int>(prefix_.ids.size());
  for (size_t b = 0; b < blocks; ++b) {
    float* to = out.attentions.data() + b * n * n;
    for (int i = 0; i < reused; ++i) {
      const float* from = prefix_.attentions.data() + (b * previous_n + i) * previous_n;
      std::copy(from, from + reused, to + static_cast<size_t>(i) * n);
    }
    const float* computed = tail.attentions.data() + b * (n - reused) * n;
    std::copy(computed, computed + static_cast<size_t>(n - reused) * n, to + static_cast<size_t>(reused) * n);
  }
  // Kept for the next run, unless the copy would not fit in memory (then the next run is a full one).
  const double kept_bytes = 4.0 * out.attentions.size();
  prefix_.valid = run_bytes(n, n, r) + 2 * kept_bytes < memory_limit;
  if (!prefix_.valid) {
    std::vector<float>().swap(prefix_.attentions);
    return "";
  }
  prefix_.ids.assign(ids, ids + n);
  prefix_.attention_layers = layer_flags(r, c.layers);
  prefix_.head_enabled = enabled_flags(r, c.layers * c.heads);
  prefix_.first_head = r.first_head;
  prefix_.heads = r.heads;
  prefix_.attentions = out.attentions;
  return "";
}

bool Transformer::attention(float* y, const float* x, int n, int layer, const RunRequest& r, RunResult& out) {
  const TransformerConfig& c = config_;
  const TransformerWeights::Layer& w = weights_.layers[layer];
  Config mha;
  mha.d_model = c.d_model;
  mha.num_heads = c.heads;
  mha.num_kv_heads = c.kv_heads;
  mha.head_dim = c.head_dim;
  mha.scale = c.attention_scale > 0 ? c.attention_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.scale_by_layer) mha.scale /= static_cast<float>(layer + 1);
  const bool sliding = c.sliding_window > 0 && (c.sliding_layers.empty() || c.sliding_layers[layer]);
  const std::vector<float>& inv_freq =
      sliding && !c.rope_local_inv_freq.empty() ? c.rope_local_inv_freq : c.rope_inv_freq;
  if (!inv_freq.empty()) {
    mha.rope_dims = static_cast<int>(inv_freq.size()) * 2;
    mha.rope_inv_freq = inv_freq.data();
  }
  mha.q_norm = f32(w.q_norm);
  mha.k_norm = f32(w.k_norm);
  mha.qk_norm_eps = c.norm_eps;
  // The matrices as stored (fp16/bf16 included): gemm widens them a panel at a time.
  WeightsView view{w.wq->f32_or_raw(), w.wk->f32_or_raw(), w.wv->f32_or_raw(), w.wo->f32_or_raw(),
                   w.bq ? w.bq->f32() : nullptr, w.bk ? w.bk->f32() : nullptr,
                   w.bv ? w.bv->f32() : nullptr, w.bo ? w.bo->f32() : nullptr, w.wq->type, w.wq->panels,
                   w.wq->known_finite && w.wk->known_finite && w.wv->known_finite && w.wo->known_finite};
  const int d_k = c.head_dim;
  const uint8_t* enabled = r.head_enabled ? r.head_enabled + static_cast<int64_t>(layer) * c.heads : nullptr;
  if (any_head_off(enabled, c.heads)) {
    ablate_heads(wo_ablated_, *w.wo, c.heads, d_k, enabled);
    view.wo = reinterpret_cast<const float*>(wo_ablated_.data());
  }
  MaskSpec mask;
  mask.causal = c.causal;
  mask.query_offset = r.use_cache ? caches_[layer].length : 0;
  mask.window = sliding ? c.sliding_window : 0;
  const int n_k = out.n_k;
  AttentionSelection sel = AttentionSelection::none();
  float* weights_out = nullptr;
  if (r.attention_layers && r.attention_layers[layer] && r.heads > 0) {
    int index = 0;
    for (int l = 0; l < layer; ++l) index += r.attention_layers[l] != 0;
    sel = {r.first_head, r.heads, 0, n};
    weights_out = out.attentions.data() + static_cast<int64_t>(index) * r.heads * n * n_k;
  }
  KvCache* cache = r.use_cache ? &caches_[layer] : nullptr;
  const bool ok = multihead_attention_forward(y, weights_out, sel, x, x, n, n, mha, view, mask, ws_, cache);
  if (r.value_norms) {
    // ‖v_j W_O^h‖: how much key j can move the output through head h (Kobayashi et al. 2020), as
    // ‖v_j F_h‖ with head h's d_k × d_k factor of W_O^h (norm_preserving_factor). Every keystroke
    // of the page asks for these (144 heads of GPT-2 small); the factors are made on first use.
    const int d_kv = c.kv_heads * d_k, group = c.heads / c.kv_heads;
    const int64_t factor_size = int64_t{d_k} * ((d_k + 7) / 8 * 8);  // in panels (norm_preserving_factor)
    if (value_norm_factors_.empty()) {  // every layer's, in the first run that asks for value norms
      value_norm_factors_.resize(static_cast<size_t>(c.layers) * c.heads * factor_size);
      for (int l = 0; l < c.layers; ++l)
        for (int h = 0; h < c.heads; ++h)
          norm_preserving_factor(value_norm_factors_.data() + (int64_t{l} * c.heads + h) * factor_size,
                                 *weights_.layers[l].wo, int64_t{h} * d_k, d_k);
    }
    const float* values = cache ? cache->v.data() : ws_.v.data();
    moved_.resize(static_cast<size_t>(n_k) * d_k);
    for (int h = 0; h < c.heads; ++h) {
      float* norms = out.value_norms.data() + (static_cast<int64_t>(layer) * c.heads + h) * n_k;
      if (enabled && !enabled[h]) {
        std::fill(norms, norms + n_k, 0.0f);
        continue;
      }
      const float* factor = value_norm_factors_.data() + (int64_t{layer} * c.heads + h) * factor_size;
      gemm(moved_.data(), d_k, values + (h / group) * d_k, d_kv, MatrixRef{factor, WeightType::kF32, d_k, true},
           nullptr, n_k, d_k, d_k);
      row_norms(norms, moved_.data(), n_k, d_k, d_k);
    }
  }
  return ok;
}

bool Transformer::keeps_head_rows_only(int n, const RunRequest& r) const {
  // A list longer than n (rows asked twice) would not fit in x: then every row is carried.
  return !r.last_hidden && !r.hidden_states && !(r.logits && r.logit_rows && r.logit_row_count > n);
}

int Transformer::rows_after_last_attention(float* x, int n, const RunRequest& r, float* also) {
  if (!keeps_head_rows_only(n, r)) return n;
  if (!r.logits || !weights_.output) return 0;
  if (!r.logit_rows) return n;
  // Through a copy: the list may repeat or run backwards.
  for (float* buffer : {x, also}) {
    if (!buffer) continue;
    gather_logit_rows(buffer, r);
    std::copy(head_rows_.begin(), head_rows_.end(), buffer);
  }
  return r.logit_row_count;
}

void Transformer::gather_logit_rows(const float* x, const RunRequest& r) {
  const int d = config_.d_model;
  head_rows_.resize(static_cast<size_t>(r.logit_row_count) * d);
  for (int i = 0; i < r.logit_row_count; ++i)
    std::copy(x + static_cast<int64_t>(r.logit_rows[i]) * d, x + static_cast<int64_t>(r.logit_rows[i] + 1) * d,
              head_rows_.begin() + static_cast<int64_t>(i) * d);
}

void Transformer::output_head(RunResult& out, const float* x, int n, const RunRequest& r) {
  if (!r.logits || !weights_.output) return;
  const float* from = x;
  int rows = n;
  // The rows asked for, so the product runs over them only; rows_after_last_attention may have
  // kept just those already (then n is their count).
  if (r.logit_rows && !keeps_head_rows_only(n, r)) {
    gather_logit_rows(x, r);
    from = head_rows_.data();
    rows = r.logit_row_count;
  }
  out.logits.resize(static_cast<size_t>(rows) * config_.vocab);
  matmul(out.logits.data(), from, *weights_.output, weights_.output_bias ? weights_.output_bias->f32() : nullptr,
         rows);
  if (const float cap = config_.logit_softcap; cap > 0)
    for (float& v : out.logits) v = cap * std::tanh(v / cap);
}

void Transformer::head_of_residual(float* logits, const float* x, int rows) {
  const TransformerConfig& c = config_;
  const TransformerWeights& W = weights_;
  const int d = c.d_model;
  std::vector<float> h(x, x + int64_t{rows} * d);
  if (W.final_norm_w) {
    if (W.final_norm_b) layer_norm(h.data(), h.data(), W.final_norm_w->f32(), W.final_norm_b->f32(), rows, d, c.norm_eps);
    else rms_norm(h.data(), h.data(), W.final_norm_w->f32(), rows, d, c.norm_eps);
  }
  if (W.head_dense_w) {
    std::vector<float> t(h.size());
    matmul(t.data(), h.data(), *W.head_dense_w, f32(W.head_dense_b), rows);
    activate(c.head_activation, t.data(), static_cast<int64_t>(t.size()));
    layer_norm(h.data(), t.data(), f32(W.head_norm_w), f32(W.head_norm_b), rows, d, c.norm_eps);
  }
  matmul(logits, h.data(), *W.output, f32(W.output_bias), rows);
  if (const float cap = c.logit_softcap; cap > 0)
    for (int64_t i = 0; i < int64_t{rows} * c.vocab; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
}

void Transformer::embed_tokens(float* x, const int32_t* ids, int n) {
  if (weights_.embedding_transposed) {
    embedding_columns(x, ids, *weights_.token_embedding, n, config_.d_model);
  } else {
    embedding_rows(x, ids, *weights_.token_embedding, n, config_.d_model, false);
  }
}

void Transformer::record_hidden(RunResult& out, const float* x, int n, int index, const RunRequest& r) {
  if (!r.hidden_states) return;
  const int64_t size = static_cast<int64_t>(n) * config_.d_model;
  std::copy(x, x + size, out.hidden_states.begin() + index * size);
}

// ---- what a family's forward pass is given ----

ForwardPass::ForwardPass(Transformer& model, RunResult& out, const int32_t* ids, int n, const RunRequest& request)
    : config(model.config_), weights(model.weights_), ids(ids), n(n), first_position(out.n_k - n),
      model_(model), out_(out), request_(request) {
  const int64_t nd = int64_t{n} * config.d_model;
  model.x_.resize(nd); model.h_.resize(nd); model.a_.resize(nd); model.up_.resize(int64_t{n} * config.d_ff);
  if (config.parallel_residual) model.g_.resize(nd);  // only a parallel block needs a third stream
  x = model.x_.data(), h = model.h_.data(), g = model.g_.data(), a_ = model.a_.data(), up_ = model.up_.data();
}

void ForwardPass::embed_tokens(float* x) { model_.embed_tokens(x, ids, n); }

int ForwardPass::attention_block(float* x, const float* input, int n, int layer, float* also) {
  model_.overflow_ |= !model_.attention(a_, input, n, layer, request_, out_);
  capture_attention(layer, n);
  if (request_.contributions) contributions(x, layer, n);
  if (const Tensor* norm = weights.layers[layer].post_attention_norm)
    rms_norm(a_, a_, norm->f32(), n, config.d_model, config.norm_eps);
  add_in_place(x, a_, int64_t{n} * config.d_model);
  return layer + 1 == config.layers ? model_.rows_after_last_attention(x, n, request_, also) : n;
}

void ForwardPass::mlp(float* x, const float* input, const TransformerWeights::Layer& L, int n) {
  matmul(up_, input, *L.w_up, f32(L.b_up), n);
  activate(config.activation, up_, int64_t{n} * config.d_ff);
  matmul(a_, up_, *L.w_down, f32(L.b_down), n);
  capture_mlp(static_cast<int>(&L - weights.layers.data()), n, false);
  add_in_place(x, a_, int64_t{n} * config.d_model);
}

void ForwardPass::gated_mlp(float* x, const float* input, const TransformerWeights::Layer& L, int n) {
  model_.gate_.resize(int64_t{this->n} * config.d_ff);  // only the gated families need it
  float* gate = model_.gate_.data();
  matmul(gate, input, *L.w_gate, f32(L.b_gate), n);
  matmul(up_, input, *L.w_up, f32(L.b_up), n);
  const int64_t count = int64_t{n} * config.d_ff;
  if (config.activation == Activation::kSilu) {
    silu_times(up_, gate, up_, count);
  } else {
    activate(config.activation, gate, count);
    for (int64_t i = 0; i < count; ++i) up_[i] *= gate[i];
  }
  matmul(a_, up_, *L.w_down, f32(L.b_down), n);
  if (L.post_mlp_norm) rms_norm(a_, a_, L.post_mlp_norm->f32(), n, config.d_model, config.norm_eps);
  capture_mlp(static_cast<int>(&L - weights.layers.data()), n, L.post_mlp_norm != nullptr);
  add_in_place(x, a_, int64_t{n} * config.d_model);
}

void ForwardPass::record_hidden(const float* x, int n, int index) {
  model_.record_hidden(out_, x, n, index, request_);
  const int p = request_.component_position;
  if (index == 0 && p >= 0 && p < n)
    std::copy(x + int64_t{p} * config.d_model, x + int64_t{p + 1} * config.d_model, out_.components.begin());
}

bool ForwardPass::resume(float* x) {
  if (!request_.resume_residual) return false;
  std::copy(request_.resume_residual, request_.resume_residual + int64_t{n} * config.d_model, x);
  return true;
}

void ForwardPass::capture_attention(int layer, int n) {
  const RunRequest& r = request_;
  const int d = config.d_model, H = config.heads, dk = config.head_dim, dq = H * dk;
  const TransformerWeights::Layer& L = weights.layers[layer];
  const float* concat = model_.ws_.concat.data();  // n × dq: each head's output before W_O
  if (r.head_outputs)
    std::copy(concat, concat + int64_t{n} * dq, out_.head_outputs.begin() + int64_t{layer} * n * dq);
  if (r.patch && r.patch->kind == ActivationPatch::Kind::kHead && r.patch->layer == layer) {
    // a_ += (patched − own output of the head) · W_O's rows of that head: the output as if the
    // head had produced the patched values.
    std::vector<float> delta(static_cast<size_t>(n) * dq, 0.0f), moved(static_cast<size_t>(n) * d);
    const int h = r.patch->head;
    for (int t = 0; t < n; ++t)
      for (int i = 0; i < dk; ++i)
        delta[int64_t{t} * dq + h * dk + i] = r.patch->values[int64_t{t} * dk + i] - concat[int64_t{t} * dq + h * dk + i];
    matmul(moved.data(), delta.data(), *L.wo, nullptr, n);
    add_in_place(a_, moved.data(), int64_t{n} * d);
  }
  const int p = r.component_position;
  if (p < 0 || p >= n) return;
  // Each head's write at row p: its slice of the concatenated outputs through its rows of W_O.
  // A post-attention norm scales the whole output row by w / rms(row): each share by the same.
  std::vector<float> scale(static_cast<size_t>(d), 1.0f);
  if (L.post_attention_norm) {
    double sum = 0;
    for (int i = 0; i < d; ++i) sum += double(a_[int64_t{p} * d + i]) * a_[int64_t{p} * d + i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum / d) + config.norm_eps);
    for (int i = 0; i < d; ++i) scale[i] = L.post_attention_norm->f32()[i] * inv;
  }
  const ComponentLayout at{d, H};
  const uint8_t* enabled = r.head_enabled ? r.head_enabled + int64_t{layer} * H : nullptr;
  std::vector<float> u(static_cast<size_t>(dq), 0.0f);
  for (int h = 0; h < H; ++h) {
    float* write = out_.components.data() + at.head(layer, h);
    if (enabled && !enabled[h]) continue;
    std::copy(concat + int64_t{p} * dq + h * dk, concat + int64_t{p} * dq + (h + 1) * dk, u.begin() + h * dk);
    matmul(write, u.data(), *L.wo, nullptr, 1);
    std::fill(u.begin() + h * dk, u.begin() + (h + 1) * dk, 0.0f);
    for (int i = 0; i < d; ++i) write[i] *= scale[i];
  }
  if (L.bo)
    for (int i = 0; i < d; ++i) out_.components[at.attention_bias(layer) + i] = L.bo->f32()[i] * scale[i];
}

void ForwardPass::contributions(const float* residual, int layer, int n) {
  const TransformerConfig& c = config;
  const TransformerWeights::Layer& L = weights.layers[layer];
  const int d = c.d_model;
  std::vector<float> scale;
  if (L.post_attention_norm) {  // the factor the norm applies to each row of the block's output
    scale.resize(static_cast<size_t>(n) * d);
    for (int t = 0; t < n; ++t) {
      double sum = 0;
      for (int i = 0; i < d; ++i) sum += double(a_[int64_t{t} * d + i]) * a_[int64_t{t} * d + i];
      const float inv = 1.0f / std::sqrt(static_cast<float>(sum / d) + c.norm_eps);
      for (int i = 0; i < d; ++i) scale[int64_t{t} * d + i] = L.post_attention_norm->f32()[i] * inv;
    }
  }
  const float* attentions = out_.attentions.data() + int64_t{layer} * c.heads * n * n;
  token_contributions(out_.contributions.data() + int64_t{layer} * n * n, attentions, model_.ws_.v.data(),
                      c.kv_heads * c.head_dim, *L.wo, residual, scale.empty() ? nullptr : scale.data(), n, c.heads,
                      c.kv_heads, c.head_dim, d);
}

void ForwardPass::capture_mlp(int layer, int n, bool normed) {
  const RunRequest& r = request_;
  const int d = config.d_model;
  if (r.patch && r.patch->kind == ActivationPatch::Kind::kMlp && r.patch->layer == layer)
    std::copy(r.patch->values, r.patch->values + int64_t{n} * d, a_);
  if (r.mlp_outputs) std::copy(a_, a_ + int64_t{n} * d, out_.mlp_outputs.begin() + int64_t{layer} * n * d);
  const int p = r.component_position;
  if (p < 0 || p >= n) return;
  const ComponentLayout at{d, config.heads};
  const float* bias = normed ? nullptr : f32(weights.layers[layer].b_down);
  for (int i = 0; i < d; ++i) {
    const float b = bias ? bias[i] : 0.0f;
    out_.components[at.mlp(layer) + i] = a_[int64_t{p} * d + i] - b;
    out_.components[at.mlp_bias(layer) + i] = b;
  }
}

void ForwardPass::keep_last_hidden(const float* x, int n) { out_.last_hidden.assign(x, x + int64_t{n} * config.d_model); }

bool ForwardPass::wants_logits() const { return request_.logits && weights.output; }

void ForwardPass::output_head(const float* x, int n) { model_.output_head(out_, x, n, request_); }

void ForwardPass::finish(const float* x, int n) {
  record_hidden(x, n, config.layers);
  keep_last_hidden(x, n);
  output_head(x, n);
}

int sample_token(const float* logits, int vocab, float temperature, int top_k, uint64_t& state) {
  if (!(temperature > 0)) return static_cast<int>(std::max_element(logits, logits + vocab) - logits);
  std::vector<int> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  const int k = top_k > 0 && top_k < vocab ? top_k : vocab;
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  std::vector<double> p(static_cast<size_t>(k));
  const double top = logits[order[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += p[i] = std::exp((logits[order[i]] - top) / temperature);
  const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53 * sum;
  double acc = 0;
  for (int i = 0; i < k; ++i) {
    acc += p[i];
    if (u < acc) return order[i];
  }
  return order[k - 1];
}

}  // namespace mh

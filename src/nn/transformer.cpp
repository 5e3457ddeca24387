// The parts every family shares: binding the weights, checking a run, an attention block, the
// output head, sampling. The per-family forward passes are in nn/families/.
#include "nn/transformer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

#include "core/eigen_include.h"
#include "core/init.h"
#include "core/parallel.h"
#include "interpret/ablation.h"
#include "interpret/value_norms.h"
#include "nn/families/family.h"
#include "nn/ops.h"
#include "nn/vision_ops.h"

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
  // An encoder-decoder's stacks are bound by nn/encoder_decoder.h (their names are e3.wq, d3.wq).
  for (int l = 0; c.decoder_layers == 0 && l < c.layers; ++l) {
    auto at = [&](const char* what) { return get(layer_name(l, what)); };
    w.layers.push_back({at("norm1_w"), at("norm1_b"), at("wq"), at("wk"), at("wv"), at("wo"), at("bq"),
                        at("bk"), at("bv"), at("bo"), at("norm2_w"), at("norm2_b"), at("w_up"),
                        at("b_up"), at("w_gate"), at("b_gate"), at("w_down"), at("b_down"), at("q_norm"),
                        at("k_norm"), at("post_attention_norm"), at("post_mlp_norm"),
                        at("attn_scale"), at("mlp_scale")});
  }
  w.final_norm_w = get("final_norm_w");
  w.final_norm_b = get("final_norm_b");
  w.head_dense_w = get("head_dense_w");
  w.head_dense_b = get("head_dense_b");
  w.head_norm_w = get("head_norm_w");
  w.head_norm_b = get("head_norm_b");
  w.output_bias = get("output_bias");
  w.patch_w = get("patch_w");
  w.patch_b = get("patch_b");
  w.cls_token = get("cls_token");
  w.dist_token = get("dist_token");
  w.dist_output = get("dist_output");
  w.dist_output_bias = get("dist_output_bias");
  const bool has_head = !c.head_transform || w.head_dense_w != nullptr;
  w.output = !has_head ? nullptr : c.tied ? w.token_embedding : get("output");
  return w;
}
}  // namespace

Transformer::Transformer(TransformerConfig config, std::map<std::string, Tensor> tensors)
    : config_(std::move(config)), tensors_(std::move(tensors)), weights_(bind_weights(config_, tensors_)) {}

RunContext::RunContext(const Transformer& model) : model_(model) {
  caches_.resize(static_cast<size_t>(model.config().layers));
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

void RunContext::reset_cache(int tokens) {
  prefix_.valid = false;
  const int d_kv = config().kv_heads * config().head_dim;
  for (KvCache& cache : caches_) cache.reset(tokens, d_kv);
}

double RunContext::run_bytes(int n, int n_total, const RunRequest& r) const {
  const TransformerConfig& c = config();
  const double f = 4, d = c.d_model, heads = c.heads, d_q = double(c.heads) * c.head_dim;
  double bytes = f * n * (4 * d + 2 * c.d_ff + 2 * d_q);  // activations and the attention workspace
  bytes += f * std::min(n, kQueryBlock) * double(n_total) * 2;  // a block of scores, packed keys
  bytes += f * d * d_q;  // W_O with heads switched off
  if (r.logits && model_.has_lm_head()) bytes += f * (r.logit_rows ? r.logit_row_count : n) * (double(c.vocab) + d);
  int layers_asked = 0;
  for (int l = 0; r.attention_layers && l < c.layers; ++l) layers_asked += r.attention_layers[l] != 0;
  bytes += f * layers_asked * double(r.heads) * n * n_total;
  if (r.hidden_states) bytes += f * (c.layers + 1.0) * n * d;
  if (c.image_size > 0) bytes += f * n * (double(c.channels) * c.patch_size * c.patch_size + 2 * d);  // patches, positions
  if (r.hooks) {  // the hooks' scratch: a copy of one activation, and a layer's pattern and scores
    bytes += f * n * (d_q + d + c.d_ff);
    for (int l = 0; l < c.layers; ++l)
      if (r.hooks->wants(Hook::kPattern, l) || r.hooks->wants(Hook::kAttnScores, l)) {
        bytes += f * 2 * heads * n * n_total;
        break;
      }
  }
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

namespace {
// "" or what is wrong with an image model's pixels (RunRequest::pixels) for a run of n rows.
std::string image_input_error(const TransformerConfig& c, int n, const RunRequest& r) {
  if (!r.pixels) return "an image model runs on pixel values (channels × height × width), not on token ids";
  const int P = c.patch_size, H = r.image_height, W = r.image_width;
  const std::string size = std::to_string(H) + " × " + std::to_string(W);
  if (H < P || W < P)
    return "the image is " + size + " pixels, smaller than one " + std::to_string(P) + " × " + std::to_string(P) + " patch";
  const int64_t patches = int64_t{H / P} * (W / P);
  if (patches + c.prefix_tokens > kMaxTokens)
    return "an image of " + size + " pixels makes " + std::to_string(patches) + " patches; at most " +
           std::to_string(kMaxTokens - c.prefix_tokens) + " fit: pass a smaller image";
  if (patches + c.prefix_tokens != n)
    return "an image of " + size + " pixels makes " + std::to_string(patches) + " patches + " +
           (c.prefix_tokens == 2 ? "CLS and distillation" : "CLS") + ", not " + std::to_string(n) + " rows";
  const int64_t at = first_non_finite(r.pixels, int64_t{c.channels} * H * W);
  if (at >= 0) return "pixel value " + std::to_string(at) + " is not a finite number";
  return "";
}
}  // namespace

std::string Transformer::input_error(const int32_t* ids, int n, const RunRequest& r) const {
  const TransformerConfig& c = config_;
  if (c.decoder_layers > 0)
    return "a " + c.model_type + " model is an encoder-decoder: it runs on a source and the decoder's ids "
           "(EncoderDecoderContext; in JS model.run(sourceIds, { decoderInputIds }))";
  if (c.image_size > 0) {
    if (std::string error = image_input_error(c, n, r); !error.empty()) return error;
  }
  for (int t = 0; c.image_size == 0 && t < n; ++t)  // an image model reads no ids
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
  if (r.resume_residual && !c.causal)
    return "activation patching needs a causal decoder; a " + c.model_type + " encoder renormalises every layer's output";
  if (r.resume_residual && (r.first_layer < 0 || r.first_layer >= c.layers)) return "the layer to start at does not exist";
  return "";
}

std::string RunContext::run(RunResult& out, const int32_t* ids, int n, const RunRequest& r, double memory_budget) {
  ProfilePhase phase("run: checks and output buffers");
  const TransformerConfig& c = config();
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
  if (std::string error = model_.input_error(ids, n, r); !error.empty()) return error;
  const double need = run_bytes(n, cached + n, r);
  if (need > memory_budget)
    return std::string(kMemoryRefusal) + " " + std::to_string(static_cast<long long>(need / (1 << 20))) + " MiB of memory but " +
           std::to_string(static_cast<long long>(memory_budget / (1 << 20))) +
           " MiB are free: pass fewer tokens or ask for fewer attention weights";
  out.n = n;
  out.n_k = cached + n;
  int layers_asked = 0;
  for (int l = 0; r.attention_layers && l < c.layers; ++l) layers_asked += r.attention_layers[l] != 0;
  // Zeroed over the threads: the kernel writes every row of the layers it runs, but a run that
  // resumes at a later layer (patching) leaves the earlier layers' rows to this.
  out.attentions.resize(static_cast<size_t>(layers_asked) * r.heads * n * out.n_k);
  float* const attentions = out.attentions.data();
  parallel_ranges(static_cast<int64_t>(out.attentions.size()), int64_t{1} << 16,
                  [&](int64_t begin, int64_t end) { std::fill(attentions + begin, attentions + end, 0.0f); });
  if (r.value_norms) out.value_norms.assign(static_cast<size_t>(c.layers) * c.heads * out.n_k, 0.0f);
  if (r.hidden_states) out.hidden_states.resize((c.layers + 1) * int64_t{n} * c.d_model);
  overflow_ = false;
  ForwardPass pass(*this, out, ids, n, r);
  c.family->forward(pass);
  if (overflow_ || first_non_finite(out.last_hidden_state.data(), static_cast<int64_t>(out.last_hidden_state.size())) >= 0) {
    if (r.use_cache) reset_cache(caches_[0].capacity);
    out = RunResult();
    return "the model's activations overflowed float32 (a corrupt or mis-scaled checkpoint?)";
  }
  return "";
}

namespace {
// A request's switched-off heads as one flag per layer and head (all on when it has none).
std::vector<uint8_t> disabled_flags(const RunRequest& r, int count) {
  return r.disabled_heads ? std::vector<uint8_t>(r.disabled_heads, r.disabled_heads + count) : std::vector<uint8_t>(count, 0);
}
std::vector<uint8_t> layer_flags(const RunRequest& r, int layers) {
  return r.attention_layers ? std::vector<uint8_t>(r.attention_layers, r.attention_layers + layers)
                            : std::vector<uint8_t>(layers, 0);
}
}  // namespace

int RunContext::reusable_prefix(const int32_t* ids, int n, const RunRequest& r) const {
  const TransformerConfig& c = config();
  // Value norms may differ: they are computed over every key, from the cached values.
  if (!prefix_.valid || prefix_.first_head != r.first_head || prefix_.heads != r.heads ||
      prefix_.attention_layers != layer_flags(r, c.layers) ||
      prefix_.disabled_heads != disabled_flags(r, c.layers * c.heads))
    return 0;
  // At least the last token is computed (a run needs one), and every row logits are asked for.
  int shared = 0;
  const int most = std::min<int>(n - 1, static_cast<int>(prefix_.ids.size()));
  while (shared < most && ids[shared] == prefix_.ids[shared]) ++shared;
  if (r.logits && model_.has_lm_head()) {
    if (!r.logit_rows) return 0;
    for (int i = 0; i < r.logit_row_count; ++i) shared = std::min(shared, r.logit_rows[i]);
  }
  return shared;
}

namespace {
// Room for the text to grow before run_reusing_prefix makes its caches again.
int reuse_capacity(const TransformerConfig& c, int n) { return std::min(std::min(c.max_positions, kMaxTokens), std::max(2 * n, 64)); }
}  // namespace

double RunContext::reusing_bytes(int n, const RunRequest& r) const {
  const TransformerConfig& c = config();
  // Keys, values and (wasm) the keys' packed panels (core/attention.h: KvCache).
  return run_bytes(n, n, r) + 12.0 * c.layers * reuse_capacity(c, n) * c.kv_heads * c.head_dim;
}

std::string RunContext::run_reusing_prefix(RunResult& out, const int32_t* ids, int n, const RunRequest& r,
                                           double memory_budget) {
  const TransformerConfig& c = config();
  const int max_tokens = std::min(c.max_positions, kMaxTokens);
  if (!c.causal || r.use_cache || r.hidden_states || r.last_hidden_state || r.hooks || n < 1 || n > max_tokens)
    return run(out, ids, n, r, memory_budget);
  // Checked here, over all n tokens: the run below sees only those after the shared ones.
  if (std::string error = model_.input_error(ids, n, r); !error.empty()) {
    out = RunResult();
    return error;
  }
  const int reused = reusable_prefix(ids, n, r);
  if (n > caches_[0].capacity) {
    // Room for the text to grow before the caches are made again; the shared tokens move over.
    const int capacity = reuse_capacity(c, n);
    const int d_kv = c.kv_heads * c.head_dim;
    if (reusing_bytes(n, r) > memory_budget) {
      reset_cache(0);  // frees the caches; the run says what is wrong, or runs without them
      return run(out, ids, n, r, memory_budget);
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
  const std::string error = run(tail, ids + reused, n - reused, rest, memory_budget);
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
  out.last_hidden_state = std::move(tail.last_hidden_state);
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
  prefix_.valid = run_bytes(n, n, r) + 2 * kept_bytes < memory_budget;
  if (!prefix_.valid) {
    FloatBuffer().swap(prefix_.attentions);
    return "";
  }
  prefix_.ids.assign(ids, ids + n);
  prefix_.attention_layers = layer_flags(r, c.layers);
  prefix_.disabled_heads = disabled_flags(r, c.layers * c.heads);
  prefix_.first_head = r.first_head;
  prefix_.heads = r.heads;
  prefix_.attentions = out.attentions;
  return "";
}

bool RunContext::attention(float* y, const float* x, int n, int layer, const RunRequest& r, RunResult& out) {
  const TransformerConfig& c = config();
  const TransformerWeights::Layer& w = model_.weights().layers[layer];
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
  const WeightType types[4] = {w.wq->type, w.wk->type, w.wv->type, w.wo->type};
  if (types[1] != types[0] || types[2] != types[0] || types[3] != types[0]) view.types = types;
  const int d_k = c.head_dim;
  // The ablation's flags are heads switched on.
  std::vector<uint8_t> on;
  if (r.disabled_heads)
    for (int h = 0; h < c.heads; ++h) on.push_back(!r.disabled_heads[static_cast<int64_t>(layer) * c.heads + h]);
  const uint8_t* enabled = on.empty() ? nullptr : on.data();
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
  // A hook on the pattern takes every head's: the run's own attentions where they are every
  // head's, else a buffer of its own that the request's selection is copied from.
  float* pattern = nullptr;
  if (r.hooks && r.hooks->wants(Hook::kPattern, layer)) {
    if (weights_out && sel.heads == c.heads) {
      pattern = weights_out;
    } else {
      hook_pattern_.resize(static_cast<size_t>(c.heads) * n * n_k);
      pattern = hook_pattern_.data();
    }
  }
  KvCache* cache = r.use_cache ? &caches_[layer] : nullptr;
  const bool ok = multihead_attention_forward(y, pattern ? pattern : weights_out,
                                              pattern ? AttentionSelection::all(c.heads, n) : sel, x, x, n, n, mha,
                                              view, mask, ws_, cache);
  if (pattern && weights_out && pattern != weights_out)
    std::copy(pattern + int64_t{sel.first_head} * n * n_k, pattern + int64_t{sel.first_head + sel.heads} * n * n_k,
              weights_out);
  if (r.hooks) attention_hooks(layer, n, mha, mask, cache, pattern, r);
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
                                 *model_.weights().layers[l].wo, int64_t{h} * d_k, d_k);
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

bool RunContext::keeps_head_rows_only(int n, const RunRequest& r) const {
  // A list longer than n (rows asked twice) would not fit in x: then every row is carried.
  if (r.last_hidden_state || r.hidden_states || (r.logits && r.logit_rows && r.logit_row_count > n)) return false;
  // Hooks past the last layer's attention see every row.
  const int last = config().layers - 1;
  for (Hook late : {Hook::kLn2, Hook::kMlpPre, Hook::kMlpPreLinear, Hook::kMlpPost, Hook::kMlpOut, Hook::kResidPost,
                    Hook::kNormalizedResidPost})
    if (r.hooks && r.hooks->wants(late, last)) return false;
  return !(r.hooks && r.hooks->wants(Hook::kLnFinal, -1));
}

int RunContext::rows_after_last_attention(float* x, int n, const RunRequest& r, float* also) {
  if (!keeps_head_rows_only(n, r)) return n;
  if (!r.logits || !model_.weights().output) return 0;
  if (!r.logit_rows) return n;
  // Through a copy: the list may repeat or run backwards.
  for (float* buffer : {x, also}) {
    if (!buffer) continue;
    gather_logit_rows(buffer, r);
    std::copy(head_rows_.begin(), head_rows_.end(), buffer);
  }
  return r.logit_row_count;
}

void RunContext::gather_logit_rows(const float* x, const RunRequest& r) {
  const int d = config().d_model;
  head_rows_.resize(static_cast<size_t>(r.logit_row_count) * d);
  for (int i = 0; i < r.logit_row_count; ++i)
    std::copy(x + static_cast<int64_t>(r.logit_rows[i]) * d, x + static_cast<int64_t>(r.logit_rows[i] + 1) * d,
              head_rows_.begin() + static_cast<int64_t>(i) * d);
}

void RunContext::output_head(RunResult& out, const float* x, int n, const RunRequest& r) {
  const TransformerWeights& W = model_.weights();
  if (!r.logits || !W.output) return;
  const float* from = x;
  int rows = n;
  // The rows asked for, so the product runs over them only; rows_after_last_attention may have
  // kept just those already (then n is their count).
  if (r.logit_rows && !keeps_head_rows_only(n, r)) {
    gather_logit_rows(x, r);
    from = head_rows_.data();
    rows = r.logit_row_count;
  }
  if (W.dist_output) {  // DeiT's teacher head: one row, from the first two asked (CLS, distillation)
    const int64_t V = config().vocab;
    if (rows < 2) { out.logits.clear(); return; }
    out.logits.resize(static_cast<size_t>(2 * V));
    matmul(out.logits.data(), from, *W.output, f32(W.output_bias), 1);
    matmul(out.logits.data() + V, from + config().d_model, *W.dist_output, f32(W.dist_output_bias), 1);
    for (int64_t i = 0; i < V; ++i) out.logits[i] = (out.logits[i] + out.logits[V + i]) / 2;
    out.logits.resize(static_cast<size_t>(V));
    return;
  }
  out.logits.resize(static_cast<size_t>(rows) * config().vocab);
  matmul(out.logits.data(), from, *W.output, W.output_bias ? W.output_bias->f32() : nullptr, rows);
  if (const float cap = config().logit_softcap; cap > 0)
    for (float& v : out.logits) v = cap * std::tanh(v / cap);
}

void Transformer::head_of_residual(float* logits, const float* x, int rows) const {
  const TransformerConfig& c = config_;
  const TransformerWeights& W = weights_;
  const int d = c.d_model;
  std::vector<float> h(x, x + int64_t{rows} * d);
  if (W.final_norm_w) apply_norm(c.family->norm, h.data(), h.data(), W.final_norm_w, W.final_norm_b, rows, d, c.norm_eps);
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

void RunContext::record_hidden(RunResult& out, const float* x, int n, int index, const RunRequest& r) {
  if (!r.hidden_states) return;
  const int64_t size = static_cast<int64_t>(n) * config().d_model;
  std::copy(x, x + size, out.hidden_states.begin() + index * size);
}

// ---- the attention's inner hooks ----

void RunContext::attention_hooks(int layer, int n, const Config& mha, const MaskSpec& mask, const KvCache* cache,
                                 float* pattern, const RunRequest& r) {
  const TransformerConfig& c = config();
  const int H = c.heads, Hkv = c.kv_heads, dk = c.head_dim, dq = H * dk, dkv = Hkv * dk;
  const bool rotary = mha.rope_dims > 0;
  HookVisitor& hooks = *r.hooks;
  // Handed as they are: these hooks are read only (hook_is_writable), never asked with kWrite.
  auto hand = [&](Hook hook, float* data, std::vector<int> shape) {
    if (hooks.wants(hook, layer)) hooks.visit(hook, layer, data, shape);
  };
  hand(rotary ? Hook::kRotQ : Hook::kQ, ws_.q.data(), {n, H, dk});
  hand(rotary ? Hook::kRotK : Hook::kK, ws_.k.data(), {n, Hkv, dk});
  hand(Hook::kV, ws_.v.data(), {n, Hkv, dk});
  const int n_k = cache ? cache->length : n;
  if (hooks.wants(Hook::kAttnScores, layer)) {
    // scale · q·kᵀ with −inf where the mask blocks, as the core computes each block of them.
    const float* keys = cache ? cache->k.data() : ws_.k.data();
    hook_scratch_.resize(static_cast<size_t>(H) * n * n_k);
    for (int h = 0; h < H; ++h) {
      float* scores = hook_scratch_.data() + int64_t{h} * n * n_k;
      const int g = h / (H / Hkv);
      attention_scores_forward(scores, ws_.q.data() + h * dk, dq, keys + g * dk, dkv, n, n_k, dk, mha.scale);
      mask_forward(scores, 0, n, n_k, mask);
    }
    hooks.visit(Hook::kAttnScores, layer, hook_scratch_.data(), {H, n, n_k});
  }
  if (pattern) hooks.visit(Hook::kPattern, layer, pattern, {H, n, n_k});
}

// ---- what a family's forward pass is given ----

ForwardPass::ForwardPass(RunContext& context, RunResult& out, const int32_t* ids, int n, const RunRequest& request)
    : config(context.config()), weights(context.model().weights()), ids(ids), n(n), first_position(out.n_k - n),
      context_(context), out_(out), request_(request) {
  const int64_t nd = int64_t{n} * config.d_model;
  RunContext& c = context;
  c.x_.resize(nd); c.h_.resize(nd); c.a_.resize(nd); c.up_.resize(int64_t{n} * config.d_ff);
  if (config.parallel_residual) c.g_.resize(nd);  // only a parallel block needs a third stream
  x = c.x_.data(), h = c.h_.data(), g = c.g_.data(), a_ = c.a_.data(), up_ = c.up_.data();
}

void ForwardPass::hook(Hook hook, int layer, float* data, int n, int cols, int heads) {
  if (!wants(hook, layer)) return;
  request_.hooks->visit(hook, layer, data, heads ? std::vector<int>{n, heads, cols} : std::vector<int>{n, cols});
}

void ForwardPass::embed_tokens(float* x, float scale) {
  ProfilePhase phase("embedding");
  if (weights.embedding_transposed) embedding_columns(x, ids, *weights.token_embedding, n, config.d_model);
  else embedding_rows(x, ids, *weights.token_embedding, n, config.d_model, false);
  if (scale != 1.0f) scale_in_place(x, scale, int64_t{n} * config.d_model);
  hook(Hook::kEmbed, -1, x, n, config.d_model);
}

void ForwardPass::add_embedding(Hook hook_at, float* x, const Tensor& table, const int32_t* rows, int first_row) {
  ProfilePhase phase("embedding");
  const int d = config.d_model;
  if (!wants(hook_at, -1)) {
    if (rows) embedding_rows(x, rows, table, n, d, true);
    else add_table_rows(x, table, first_row, n, d);
    return;
  }
  std::vector<float>& own = context_.hook_rows_;
  own.assign(static_cast<size_t>(n) * d, 0.0f);
  if (rows) embedding_rows(own.data(), rows, table, n, d, false);
  else add_table_rows(own.data(), table, first_row, n, d);
  hook(hook_at, -1, own.data(), n, d);
  add_in_place(x, own.data(), int64_t{n} * d);
}

void ForwardPass::norm(Hook hook_at, int layer, float* out, const float* in, int n) {
  ProfilePhase phase("norms");
  const Tensor *w = nullptr, *b = nullptr;
  Norm kind = config.family->norm;
  switch (hook_at) {
    case Hook::kLn1: w = weights.layers[layer].norm1_w, b = weights.layers[layer].norm1_b; break;
    case Hook::kLn2:
    case Hook::kNormalizedResidPost: w = weights.layers[layer].norm2_w, b = weights.layers[layer].norm2_b; break;
    case Hook::kLnFinal: w = weights.final_norm_w, b = weights.final_norm_b; break;
    case Hook::kEmbedNormalized: w = weights.embedding_norm_w, b = weights.embedding_norm_b, kind = Norm::kLayerNorm; break;
    default: return;
  }
  apply_norm(kind, out, in, w, b, n, config.d_model, config.norm_eps);
  hook(hook_at, layer, out, n, config.d_model);
}

void ForwardPass::intervene_z(int layer, int n) {
  const int dq = config.heads * config.head_dim;
  float* z = context_.ws_.concat.data();  // n × dq: each head's output before W_O
  std::vector<float>& before = context_.hook_scratch_;
  before.assign(z, z + int64_t{n} * dq);
  hook(Hook::kZ, layer, z, n, config.head_dim, config.heads);
  // a_ += (z' − z) · W_O: the output as if the heads had produced z' (nothing to do if unchanged).
  bool changed = false;
  for (int64_t i = 0; i < int64_t{n} * dq; ++i) changed |= (before[i] = z[i] - before[i]) != 0.0f;
  if (!changed) return;
  context_.moved_.resize(static_cast<size_t>(n) * config.d_model);
  matmul(context_.moved_.data(), before.data(), *weights.layers[layer].wo, nullptr, n);
  add_in_place(a_, context_.moved_.data(), int64_t{n} * config.d_model);
}

int ForwardPass::attention_block(float* x, const float* input, int n, int layer, float* also) {
  ProfilePhase phase("attention: other");
  context_.overflow_ |= !context_.attention(a_, input, n, layer, request_, out_);
  if (const int mode = wants(Hook::kZ, layer)) {
    if (mode & HookVisitor::kWrite) intervene_z(layer, n);
    else hook(Hook::kZ, layer, context_.ws_.concat.data(), n, config.head_dim, config.heads);
  }
  if (const Tensor* norm = weights.layers[layer].post_attention_norm) {
    hook_post_norm_scale(layer, n);
    rms_norm(a_, a_, norm->f32(), n, config.d_model, config.norm_eps);
  }
  if (const Tensor* scale = weights.layers[layer].attn_scale) scale_columns(a_, scale->f32(), n, config.d_model);
  hook(Hook::kAttnOut, layer, a_, n, config.d_model);
  add_in_place(x, a_, int64_t{n} * config.d_model);
  if (!config.parallel_residual) hook(Hook::kResidMid, layer, x, n, config.d_model);
  return layer + 1 == config.layers ? context_.rows_after_last_attention(x, n, request_, also) : n;
}

void ForwardPass::mlp(float* x, const float* input, const TransformerWeights::Layer& L, int n) {
  const int layer = static_cast<int>(&L - weights.layers.data());
  ProfilePhase phase("mlp: products");
  if (wants(Hook::kMlpPre, layer)) {  // the hook sees the product before the activation
    matmul(up_, input, *L.w_up, f32(L.b_up), n);
    hook(Hook::kMlpPre, layer, up_, n, config.d_ff);
    ProfilePhase activation("mlp: activation");
    activate(config.activation, up_, int64_t{n} * config.d_ff);
  } else {
    matmul_activated(up_, input, *L.w_up, f32(L.b_up), n, config.activation);
  }
  hook(Hook::kMlpPost, layer, up_, n, config.d_ff);
  matmul(a_, up_, *L.w_down, f32(L.b_down), n);
  if (L.mlp_scale) scale_columns(a_, L.mlp_scale->f32(), n, config.d_model);
  hook(Hook::kMlpOut, layer, a_, n, config.d_model);
  ProfilePhase residual("mlp: residual add");
  add_in_place(x, a_, int64_t{n} * config.d_model);
}

void ForwardPass::gated_mlp(float* x, const float* input, const TransformerWeights::Layer& L, int n) {
  const int layer = static_cast<int>(&L - weights.layers.data());
  context_.gate_.resize(int64_t{this->n} * config.d_ff);  // only the gated families need it
  float* gate = context_.gate_.data();
  ProfilePhase phase("mlp: products");
  if (wants(Hook::kMlpPre, layer) || wants(Hook::kMlpPreLinear, layer)) {  // hooks see both products first
    matmul(gate, input, *L.w_gate, f32(L.b_gate), n);
    matmul(up_, input, *L.w_up, f32(L.b_up), n);
    hook(Hook::kMlpPre, layer, gate, n, config.d_ff);
    hook(Hook::kMlpPreLinear, layer, up_, n, config.d_ff);
    const int64_t count = int64_t{n} * config.d_ff;
    ProfilePhase activation("mlp: activation");
    if (config.activation == Activation::kSilu) {
      silu_times(up_, gate, up_, count);
    } else {
      activate(config.activation, gate, count);
      multiply_in_place(up_, gate, count);
    }
  } else {
    gated_matmul(up_, gate, input, *L.w_gate, f32(L.b_gate), *L.w_up, f32(L.b_up), n, config.activation);
  }
  hook(Hook::kMlpPost, layer, up_, n, config.d_ff);
  matmul(a_, up_, *L.w_down, f32(L.b_down), n);
  if (L.post_mlp_norm) rms_norm(a_, a_, L.post_mlp_norm->f32(), n, config.d_model, config.norm_eps);
  if (L.mlp_scale) scale_columns(a_, L.mlp_scale->f32(), n, config.d_model);
  hook(Hook::kMlpOut, layer, a_, n, config.d_model);
  ProfilePhase residual("mlp: residual add");
  add_in_place(x, a_, int64_t{n} * config.d_model);
}

void ForwardPass::end_layer(int layer, float* x, int n) {
  hook(Hook::kResidPost, layer, x, n, config.d_model);
  if (layer + 1 < config.layers) record_hidden(x, n, layer + 1);
}

void ForwardPass::record_hidden(const float* x, int n, int index) { context_.record_hidden(out_, x, n, index, request_); }

void ForwardPass::hook_post_norm_scale(int layer, int n) {
  if (!wants(Hook::kLn1PostScale, layer)) return;
  const int d = config.d_model;
  std::vector<float>& scale = context_.hook_rows_;
  scale.resize(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {  // the sum in float64
    double sum = 0;
    for (int i = 0; i < d; ++i) sum += double(a_[int64_t{t} * d + i]) * a_[int64_t{t} * d + i];
    scale[t] = std::sqrt(static_cast<float>(sum / d) + config.norm_eps);
  }
  hook(Hook::kLn1PostScale, layer, scale.data(), n, 1);
}

bool ForwardPass::resume(float* x) {
  if (!request_.resume_residual) return false;
  std::copy(request_.resume_residual, request_.resume_residual + int64_t{n} * config.d_model, x);
  return true;
}

void ForwardPass::keep_last_hidden(const float* x, int n) {
  out_.last_hidden_state.assign(x, x + int64_t{n} * config.d_model);
}

bool ForwardPass::wants_logits() const { return request_.logits && weights.output; }

void ForwardPass::output_head(const float* x, int n) {
  ProfilePhase phase("output head");
  context_.output_head(out_, x, n, request_);
}

void ForwardPass::finish(const float* x, int n) {
  record_hidden(x, n, config.layers);
  keep_last_hidden(x, n);
  output_head(x, n);
}

// ---- the names a model's runs hand their hooks ----

namespace {
// Reads every hook and keeps the names, in the order visited.
class NameRecorder : public HookVisitor {
 public:
  explicit NameRecorder(bool encoder) : encoder_(encoder) {}
  std::vector<std::pair<int, std::string>> names;
  int wants(Hook, int) const override { return kRead; }
  void visit(Hook hook, int layer, float*, const std::vector<int>&) override {
    names.emplace_back(hook_id(hook, layer), hook_name(hook, layer, encoder_));
  }

 private:
  bool encoder_;
};
}  // namespace

std::vector<std::pair<int, std::string>> hook_names(const Transformer& model) {
  NameRecorder recorder(!model.config().causal);
  RunContext context(model);
  RunRequest r;
  r.hooks = &recorder;
  r.logits = false;
  const TransformerConfig& c = model.config();
  // An image model's smallest run: one patch of zeros (its CLS [and distillation] rows and a patch row).
  const int n = c.image_size > 0 ? c.prefix_tokens + 1 : 1;
  const std::vector<int32_t> ids(static_cast<size_t>(n), 0);
  std::vector<float> pixels;
  if (c.image_size > 0) {
    pixels.assign(static_cast<size_t>(c.channels) * c.patch_size * c.patch_size, 0.0f);
    r.pixels = pixels.data();
    r.image_height = r.image_width = c.patch_size;
  }
  RunResult out;
  if (!context.run(out, ids.data(), n, r).empty()) return {};
  return std::move(recorder.names);
}

namespace {
// The first index of the largest of x[0 … count) (finite): the largest by vector max, then its
// first place; std::max_element's branch an element took 0.2 ms over GPT-2's 50,257 logits.
int first_largest(const float* x, int count) {
  float largest = x[0];
  int i = 0;
#if defined(__wasm_simd128__)
  if (count >= 8) {
    v128_t m0 = wasm_v128_load(x), m1 = wasm_v128_load(x + 4);
    for (i = 8; i + 8 <= count; i += 8) {
      m0 = wasm_f32x4_max(m0, wasm_v128_load(x + i));
      m1 = wasm_f32x4_max(m1, wasm_v128_load(x + i + 4));
    }
    const v128_t m = wasm_f32x4_max(m0, m1);
    largest = std::max(std::max(wasm_f32x4_extract_lane(m, 0), wasm_f32x4_extract_lane(m, 1)),
                       std::max(wasm_f32x4_extract_lane(m, 2), wasm_f32x4_extract_lane(m, 3)));
  }
#endif
  for (; i < count; ++i) largest = std::max(largest, x[i]);
  for (i = 0; x[i] != largest; ++i) {
  }
  return i;
}

// The first index of the largest logit, in pieces over the threads (a decoding step's serial part:
// 50,257 logits for GPT-2).
int argmax(const float* logits, int vocab) {
  constexpr int kPieces = 16;
  const int size = (vocab + kPieces - 1) / kPieces;
  int best[kPieces] = {};
  const int pieces = (vocab + size - 1) / size;
  auto piece = [&](int i, int) {
    const int begin = i * size, end = std::min(vocab, (i + 1) * size);
    best[i] = begin + first_largest(logits + begin, end - begin);
  };
  if (vocab >= 16384) parallel_for(pieces, piece);
  else for (int i = 0; i < pieces; ++i) piece(i, 0);
  int first = best[0];
  for (int i = 1; i < pieces; ++i)
    if (logits[best[i]] > logits[first]) first = best[i];
  return first;
}
}  // namespace

int sample_token(const float* logits, int vocab, float temperature, int top_k, uint64_t& state) {
  if (!(temperature > 0)) return argmax(logits, vocab);
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

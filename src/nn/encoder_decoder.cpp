// The encoder-decoders' shared machinery (nn/encoder_decoder.h): relative position buckets,
// sinusoidal positions, binding the two stacks' weights, the run context and its steps, greedy
// generation's rules.
#include "nn/encoder_decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/families/family.h"
#include "nn/ops.h"

namespace mh {

int relative_position_bucket(int relative, bool bidirectional, int buckets, int max_distance) {
  int bucket = 0;
  if (bidirectional) {
    buckets /= 2;
    if (relative > 0) bucket += buckets;
    relative = std::abs(relative);
  } else {
    relative = -std::min(relative, 0);
  }
  const int max_exact = buckets / 2;
  if (relative < max_exact) return bucket + relative;
  // In float32, as torch computes it, then truncated: the boundaries fall where transformers' do.
  const float large = static_cast<float>(max_exact) +
                      std::log(static_cast<float>(relative) / static_cast<float>(max_exact)) /
                          static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact)) *
                          static_cast<float>(buckets - max_exact);
  return bucket + static_cast<int>(std::min(large, static_cast<float>(buckets - 1)));  // clamped before the cast
}

void relative_position_bias(float* bias, const Tensor& table, int heads, int first_query, int n_q, int n_k,
                            bool bidirectional, int buckets, int max_distance) {
  const float* t = table.f32();
  for (int i = 0; i < n_q; ++i)
    for (int j = 0; j < n_k; ++j) {
      const int bucket = relative_position_bucket(j - (first_query + i), bidirectional, buckets, max_distance);
      for (int h = 0; h < heads; ++h) bias[(int64_t{h} * n_q + i) * n_k + j] = t[int64_t{bucket} * heads + h];
    }
}

void add_sinusoidal_positions(float* x, int first_position, int n, int d) {
  const int half = (d + 1) / 2;  // transformers' sentinel: sin in [0, half), cos after
  for (int t = 0; t < n; ++t) {
    float* row = x + int64_t{t} * d;
    const double p = first_position + t;
    for (int j = 0; j < half; ++j) row[j] += static_cast<float>(std::sin(p / std::pow(10000.0, 2.0 * j / d)));
    for (int j = 0; j < d / 2; ++j) row[half + j] += static_cast<float>(std::cos(p / std::pow(10000.0, 2.0 * j / d)));
  }
}

std::string stack_name(char stack, int layer, const char* what) {
  return std::string(1, stack) + std::to_string(layer) + "." + what;
}
std::string stack_name(char stack, const char* what) { return std::string(1, stack) + "." + what; }

namespace {
Seq2SeqStack bind_stack(const Transformer& model, char s, int layers) {
  auto get = [&](const std::string& name) { return model.tensor(name); };
  Seq2SeqStack stack;
  for (int l = 0; l < layers; ++l) {
    auto at = [&](const char* what) { return get(stack_name(s, l, what)); };
    Seq2SeqLayer L{};
    L.self = {at("wq"), at("wk"), at("wv"), at("wo"), at("bq"), at("bk"), at("bv"), at("bo")};
    L.cross = {at("xwq"), at("xwk"), at("xwv"), at("xwo"), at("xbq"), at("xbk"), at("xbv"), at("xbo")};
    L.self_norm_w = at("norm1_w"), L.self_norm_b = at("norm1_b");
    L.cross_norm_w = at("xnorm_w"), L.cross_norm_b = at("xnorm_b");
    L.mlp_norm_w = at("norm2_w"), L.mlp_norm_b = at("norm2_b");
    L.w_up = at("w_up"), L.b_up = at("b_up"), L.w_gate = at("w_gate"), L.w_down = at("w_down"), L.b_down = at("b_down");
    stack.layers.push_back(L);
  }
  stack.positions = get(stack_name(s, "positions"));
  stack.embed_norm_w = get(stack_name(s, "embed_norm_w"));
  stack.embed_norm_b = get(stack_name(s, "embed_norm_b"));
  stack.final_norm_w = get(stack_name(s, "final_norm_w"));
  stack.final_norm_b = get(stack_name(s, "final_norm_b"));
  stack.relative_bias = get(stack_name(s, "relative_bias"));
  return stack;
}

// Room for `tokens` rows in a cache, keeping what it holds.
void make_room(KvCache& cache, int tokens, int d_kv) {
  if (tokens <= cache.capacity) return;
  KvCache bigger;
  bigger.reset(std::max(tokens, 2 * cache.capacity), d_kv);
  std::copy(cache.k.begin(), cache.k.begin() + int64_t{cache.length} * d_kv, bigger.k.begin());
  std::copy(cache.v.begin(), cache.v.begin() + int64_t{cache.length} * d_kv, bigger.v.begin());
  bigger.length = cache.length;
  cache = std::move(bigger);
}

std::string ids_error(const int32_t* ids, int n, int vocab, const char* what) {
  for (int t = 0; t < n; ++t)
    if (ids[t] < 0 || ids[t] >= vocab)
      return std::string(what) + " id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
             " is not in the vocabulary (0 … " + std::to_string(vocab - 1) + ")";
  return "";
}
}  // namespace

Seq2SeqWeights bind_seq2seq_weights(const Transformer& model) {
  const TransformerConfig& c = model.config();
  Seq2SeqWeights w;
  w.embed = model.tensor("embed");
  w.embed_transposed = c.tied;
  w.encoder = bind_stack(model, 'e', c.layers);
  w.decoder = bind_stack(model, 'd', c.decoder_layers);
  w.output = c.tied ? w.embed : model.tensor("output");
  w.output_bias = model.tensor("output_bias");
  return w;
}

// ---- named activations ----

std::string seq2seq_hook_name(bool decoder, Seq2SeqHook hook, int layer) {
  const std::string stack = decoder ? "decoder." : "encoder.";
  if (hook == Seq2SeqHook::kLnFinal) return stack + "ln_final.hook_normalized";
  const std::string block = stack + "blocks." + std::to_string(layer) + ".";
  switch (hook) {
    case Seq2SeqHook::kResidPre: return block + "hook_resid_pre";
    case Seq2SeqHook::kPattern: return block + "attn.hook_pattern";
    case Seq2SeqHook::kAttnOut: return block + "hook_attn_out";
    case Seq2SeqHook::kCrossPattern: return block + "cross_attn.hook_pattern";
    case Seq2SeqHook::kCrossAttnOut: return block + "hook_cross_attn_out";
    case Seq2SeqHook::kMlpOut: return block + "hook_mlp_out";
    case Seq2SeqHook::kZ: return block + "attn.hook_z";
    case Seq2SeqHook::kCrossZ: return block + "cross_attn.hook_z";
    default: return block + "hook_resid_post";
  }
}

std::vector<Seq2SeqHookName> seq2seq_hook_names(const TransformerConfig& c) {
  std::vector<Seq2SeqHookName> names;
  for (bool decoder : {false, true}) {
    for (int l = 0; l < (decoder ? c.decoder_layers : c.layers); ++l)
      for (Seq2SeqHook hook : {Seq2SeqHook::kResidPre, Seq2SeqHook::kPattern, Seq2SeqHook::kZ, Seq2SeqHook::kAttnOut,
                               Seq2SeqHook::kCrossPattern, Seq2SeqHook::kCrossZ, Seq2SeqHook::kCrossAttnOut,
                               Seq2SeqHook::kMlpOut, Seq2SeqHook::kResidPost})
        if (decoder || (hook != Seq2SeqHook::kCrossPattern && hook != Seq2SeqHook::kCrossZ && hook != Seq2SeqHook::kCrossAttnOut))
          names.push_back({decoder, seq2seq_hook_id(hook, l), seq2seq_hook_name(decoder, hook, l)});
    if (c.relative_buckets > 0)  // T5's stacks end in a norm; BART's and Marian's in their last block's
      names.push_back({decoder, seq2seq_hook_id(Seq2SeqHook::kLnFinal, -1), seq2seq_hook_name(decoder, Seq2SeqHook::kLnFinal, -1)});
  }
  return names;
}

// ---- the context ----

EncoderDecoderContext::EncoderDecoderContext(const Transformer& model)
    : model_(model), weights_(bind_seq2seq_weights(model)) {
  self_caches_.resize(static_cast<size_t>(model.config().decoder_layers));
  cross_caches_.resize(self_caches_.size());
}

int EncoderDecoderContext::max_tokens() const {
  const TransformerConfig& c = config();
  return c.relative_buckets > 0 ? kMaxTokens : std::min(c.max_positions, kMaxTokens);
}

double EncoderDecoderContext::run_bytes(bool decoder, int n, int n_k, const Seq2SeqRequest& r) const {
  const TransformerConfig& c = config();
  const double f = 4, d = c.d_model, heads = c.heads, d_q = double(c.heads) * c.head_dim;
  const double layers = decoder ? c.decoder_layers : c.layers, source = decoder ? source_n_ : 0;
  double bytes = f * n * (4 * d + 3 * c.d_ff + 4 * d_q);                  // activations, the attention's q, k, v, heads
  bytes += f * std::min(n, kQueryBlock) * double(n_k + source) * 2;      // a block of scores, packed keys
  if (c.relative_buckets > 0) bytes += f * heads * n * n_k;              // the position bias
  if (decoder) bytes += f * layers * 3 * d_q * (double(n_k) + source);   // the caches: K, V, packed K
  if (r.attentions) bytes += f * layers * heads * n * (double(n_k) + source);
  if (r.hidden_states) bytes += f * (layers + 1) * n * d;
  if (decoder && r.logits) bytes += f * (r.last_row_only ? 1 : n) * double(c.vocab);
  const double widest = std::max(d, heads * (double(n_k) + source));  // a pattern's row, or a residual's
  for (int id = 0; r.capture && id < r.capture_count; ++id) bytes += r.capture[id] ? f * n * widest : 0.0;
  return bytes;
}

namespace {
std::string memory_refusal(double need, double budget) {
  return std::string(kMemoryRefusal) + " " + std::to_string(static_cast<long long>(need / (1 << 20))) + " MiB of memory but " +
         std::to_string(static_cast<long long>(budget / (1 << 20))) +
         " MiB are free: pass fewer tokens or ask for no attention weights";
}
}  // namespace

std::string EncoderDecoderContext::encode(Seq2SeqResult& out, const int32_t* ids, int n, const Seq2SeqRequest& r,
                                          double memory_budget) {
  const TransformerConfig& c = config();
  out = Seq2SeqResult();
  if (n < 1) return "the source needs at least one token id";
  if (n > max_tokens())
    return "the source has " + std::to_string(n) + " tokens; this model reads at most " + std::to_string(max_tokens()) +
           " (its max positions): pass a shorter source";
  if (std::string error = ids_error(ids, n, c.vocab, "source token"); !error.empty()) return error;
  if (const double need = run_bytes(false, n, n, r) + 4.0 * n * c.d_model; need > memory_budget)
    return memory_refusal(need, memory_budget);
  source_n_ = 0;  // until this source is encoded, decode() refuses
  cross_ready_ = false;
  for (KvCache& cache : self_caches_) cache.length = 0;
  Seq2SeqPass pass(*this, out, r, false, ids, n, 0);
  c.family->stack_forward(pass);
  if (first_non_finite(out.last_hidden_state.data(), static_cast<int64_t>(out.last_hidden_state.size())) >= 0) {
    out = Seq2SeqResult();
    return "the model's activations overflowed float32 (a corrupt or mis-scaled checkpoint?)";
  }
  encoded_ = out.last_hidden_state;
  source_n_ = n;
  return "";
}

std::string EncoderDecoderContext::decode(Seq2SeqResult& out, const int32_t* ids, int m, const Seq2SeqRequest& r,
                                          bool use_cache, double memory_budget) {
  const TransformerConfig& c = config();
  out = Seq2SeqResult();
  if (source_n_ == 0) return "encode a source before decoding";
  if (m < 1) return "the decoder needs at least one token id";
  const int cached = use_cache ? cached_tokens() : 0;
  if (cached + m > max_tokens())
    return "the decoder reads at most " + std::to_string(max_tokens()) + " tokens (its max positions), got " +
           std::to_string(cached + m) + ": pass fewer";
  if (std::string error = ids_error(ids, m, c.vocab, "decoder token"); !error.empty()) return error;
  if (const double need = run_bytes(true, m, cached + m, r); need > memory_budget) return memory_refusal(need, memory_budget);
  const int d_kv = c.heads * c.head_dim;
  for (KvCache& cache : self_caches_) {
    if (!use_cache) cache.length = 0;
    make_room(cache, cached + m, d_kv);
  }
  if (!cross_ready_)
    for (KvCache& cache : cross_caches_) cache.reset(source_n_, d_kv);
  Seq2SeqPass pass(*this, out, r, true, ids, m, cached);
  c.family->stack_forward(pass);
  cross_ready_ = true;
  if (first_non_finite(out.last_hidden_state.data(), static_cast<int64_t>(out.last_hidden_state.size())) >= 0) {
    for (KvCache& cache : self_caches_) cache.length = 0;
    cross_ready_ = false;  // their keys and values may be what overflowed: computed again next time
    out = Seq2SeqResult();
    return "the model's activations overflowed float32 (a corrupt or mis-scaled checkpoint?)";
  }
  return "";
}

// ---- a stack's steps ----

Seq2SeqPass::Seq2SeqPass(EncoderDecoderContext& context, Seq2SeqResult& out, const Seq2SeqRequest& request,
                         bool decoder, const int32_t* ids, int n, int first_position)
    : config(context.config()), weights(context.weights_), stack(decoder ? context.weights_.decoder : context.weights_.encoder),
      decoder(decoder), ids(ids), n(n), first_position(first_position), context_(context), out_(out),
      request_(request), layers_(decoder ? config.decoder_layers : config.layers) {
  const TransformerConfig& c = config;
  const int64_t nd = int64_t{n} * c.d_model;
  context.x_.resize(nd), context.h_.resize(nd), context.a_.resize(nd);
  context.up_.resize(int64_t{n} * c.d_ff);
  if (c.gated) context.gate_.resize(int64_t{n} * c.d_ff);
  x = context.x_.data(), h = context.h_.data();
  out.n = n;
  out.n_k = first_position + n;
  if (request.attentions) {
    out.self_attentions.assign(static_cast<size_t>(layers_) * c.heads * n * out.n_k, 0.0f);
    if (decoder) out.cross_attentions.assign(static_cast<size_t>(layers_) * c.heads * n * context.source_n_, 0.0f);
  }
  if (request.hidden_states) out.hidden_states.resize(static_cast<size_t>(layers_ + 1) * nd);
  // The relative position bias is the same for every layer of a stack (layer 0's table).
  if (stack.relative_bias) {
    context.bias_.resize(static_cast<size_t>(c.heads) * n * out.n_k);
    relative_position_bias(context.bias_.data(), *stack.relative_bias, c.heads, first_position, n, out.n_k, !decoder,
                           c.relative_buckets, c.relative_max_distance);
  }
}

void Seq2SeqPass::embed() {
  const int d = config.d_model;
  if (weights.embed_transposed) embedding_columns(x, ids, *weights.embed, n, d);
  else embedding_rows(x, ids, *weights.embed, n, d, false);
  if (config.embed_scale != 1.0f)
    for (int64_t i = 0; i < int64_t{n} * d; ++i) x[i] *= config.embed_scale;
  if (stack.positions) add_table_rows(x, *stack.positions, first_position + config.position_offset, n, d);
  if (config.sinusoidal_positions) add_sinusoidal_positions(x, first_position, n, d);
  if (stack.embed_norm_w) layer_norm(x, x, stack.embed_norm_w->f32(), f32(stack.embed_norm_b), n, d, config.norm_eps);
  record_hidden(x, 0);
}

void Seq2SeqPass::norm(float* out, const float* in, const Tensor* w, const Tensor* b) {
  apply_norm(config.family->norm, out, in, w, b, n, config.d_model, config.norm_eps);
}

void Seq2SeqPass::attend(float* y, float* attention, const float* input, const AttentionTensors& t, const float* xkv,
                         int n_kv, const MaskSpec& mask, KvCache* cache) {
  const TransformerConfig& c = config;
  Config mha;
  mha.d_model = c.d_model;
  mha.num_heads = mha.num_kv_heads = c.heads;
  mha.head_dim = c.head_dim;
  mha.scale = c.attention_scale > 0 ? c.attention_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  WeightsView view{t.wq->f32_or_raw(), t.wk->f32_or_raw(), t.wv->f32_or_raw(), t.wo->f32_or_raw(),
                   f32(t.bq), f32(t.bk), f32(t.bv), f32(t.bo), t.wq->type, t.wq->panels,
                   t.wq->known_finite && t.wk->known_finite && t.wv->known_finite && t.wo->known_finite};
  const WeightType types[4] = {t.wq->type, t.wk->type, t.wv->type, t.wo->type};
  if (types[1] != types[0] || types[2] != types[0] || types[3] != types[0]) view.types = types;
  const AttentionSelection sel = attention ? AttentionSelection::all(c.heads, n) : AttentionSelection::none();
  if (!multihead_attention_forward(y, attention, sel, input, xkv, n, n_kv, mha, view, mask, context_.ws_, cache))
    std::fill(y, y + int64_t{n} * c.d_model, std::numeric_limits<float>::quiet_NaN());  // encode() / decode() report it
}

void Seq2SeqPass::self_attention(float* x, const float* input, int layer) {
  const TransformerConfig& c = config;
  MaskSpec mask;
  mask.causal = decoder;
  mask.query_offset = first_position;
  if (stack.relative_bias) {
    mask.additive = context_.bias_.data();
    mask.additive_head_stride = int64_t{n} * out_.n_k;
  }
  float* attention = attention_out(out_.self_attentions, Seq2SeqHook::kPattern, layer, out_.n_k);
  KvCache* cache = decoder ? &context_.self_caches_[layer] : nullptr;
  float* a = context_.a_.data();
  attend(a, attention, input, stack.layers[layer].self, input, n, mask, cache);
  capture(Seq2SeqHook::kPattern, layer, attention, {c.heads, n, out_.n_k});
  capture(Seq2SeqHook::kZ, layer, context_.ws_.concat.data(), {n, c.heads, c.head_dim});
  capture(Seq2SeqHook::kAttnOut, layer, a, {n, c.d_model});
  add_in_place(x, a, int64_t{n} * c.d_model);
}

void Seq2SeqPass::cross_attention(float* x, const float* input, int layer) {
  const TransformerConfig& c = config;
  const int source = context_.source_n_;
  float* attention = attention_out(out_.cross_attentions, Seq2SeqHook::kCrossPattern, layer, source);
  // The source's keys and values once, at the first decoding call after encode(); then none new.
  const int new_rows = context_.cross_ready_ ? 0 : source;
  float* a = context_.a_.data();
  attend(a, attention, input, stack.layers[layer].cross, context_.encoded_.data(), new_rows, MaskSpec(),
         &context_.cross_caches_[layer]);
  capture(Seq2SeqHook::kCrossPattern, layer, attention, {c.heads, n, source});
  capture(Seq2SeqHook::kCrossZ, layer, context_.ws_.concat.data(), {n, c.heads, c.head_dim});
  capture(Seq2SeqHook::kCrossAttnOut, layer, a, {n, c.d_model});
  add_in_place(x, a, int64_t{n} * c.d_model);
}

void Seq2SeqPass::mlp(float* x, const float* input, int layer) {
  const TransformerConfig& c = config;
  const Seq2SeqLayer& L = stack.layers[layer];
  float *up = context_.up_.data(), *a = context_.a_.data();
  if (L.w_gate) gated_matmul(up, context_.gate_.data(), input, *L.w_gate, nullptr, *L.w_up, f32(L.b_up), n, c.activation);
  else matmul_activated(up, input, *L.w_up, f32(L.b_up), n, c.activation);
  matmul(a, up, *L.w_down, f32(L.b_down), n);
  capture(Seq2SeqHook::kMlpOut, layer, a, {n, c.d_model});
  add_in_place(x, a, int64_t{n} * c.d_model);
}

void Seq2SeqPass::begin_layer(int layer, const float* x) { capture(Seq2SeqHook::kResidPre, layer, x, {n, config.d_model}); }

void Seq2SeqPass::end_layer(int layer, const float* x) {
  capture(Seq2SeqHook::kResidPost, layer, x, {n, config.d_model});
  if (layer + 1 < layers_) record_hidden(x, layer + 1);
}

bool Seq2SeqPass::wants(Seq2SeqHook hook, int layer) const {
  const int id = seq2seq_hook_id(hook, layer);
  return request_.capture && id < request_.capture_count && request_.capture[id];
}

void Seq2SeqPass::capture(Seq2SeqHook hook, int layer, const float* data, std::vector<int> shape) {
  if (!data || !wants(hook, layer)) return;
  int64_t size = 1;
  for (int s : shape) size *= s;
  const int id = seq2seq_hook_id(hook, layer);
  out_.captured[id].assign(data, data + size);
  out_.captured_shapes[id] = std::move(shape);
}

float* Seq2SeqPass::attention_out(std::vector<float>& all, Seq2SeqHook hook, int layer, int cols) {
  const int64_t size = int64_t{config.heads} * n * cols;
  if (request_.attentions) return all.data() + layer * size;
  if (!wants(hook, layer)) return nullptr;
  context_.pattern_.resize(static_cast<size_t>(size));
  return context_.pattern_.data();
}

void Seq2SeqPass::record_hidden(const float* x, int index) {
  if (!request_.hidden_states) return;
  const int64_t size = int64_t{n} * config.d_model;
  std::copy(x, x + size, out_.hidden_states.begin() + index * size);
}

void Seq2SeqPass::finish(const float* x) {
  const TransformerConfig& c = config;
  const int d = c.d_model;
  if (stack.final_norm_w) capture(Seq2SeqHook::kLnFinal, -1, x, {n, d});
  record_hidden(x, layers_);
  out_.last_hidden_state.assign(x, x + int64_t{n} * d);
  if (!decoder || !request_.logits || !weights.output) return;
  const int rows = request_.last_row_only ? 1 : n;
  out_.logits.resize(static_cast<size_t>(rows) * c.vocab);
  context_.head_of(out_.logits.data(), x + int64_t{n - rows} * d, rows);
}

void EncoderDecoderContext::head_of(float* logits, const float* x, int rows) const {
  const TransformerConfig& c = config();
  std::vector<float> scaled(x, x + int64_t{rows} * c.d_model);
  if (c.output_scale != 1.0f)
    for (float& v : scaled) v *= c.output_scale;
  matmul(logits, scaled.data(), *weights_.output, f32(weights_.output_bias), rows);
}

// ---- generation ----

int next_token(float* logits, int vocab, const std::vector<int32_t>& ids, const GenerationRules& rules) {
  constexpr float kOut = -std::numeric_limits<float>::infinity();
  const int generated = static_cast<int>(ids.size()) - 1, length = static_cast<int>(ids.size());
  auto ban = [&](int id) {
    if (id >= 0 && id < vocab) logits[id] = kOut;
  };
  auto force = [&](int id) {
    if (id < 0 || id >= vocab) return;
    std::fill(logits, logits + vocab, kOut);
    logits[id] = 0.0f;
  };
  for (int id : rules.banned) ban(id);
  // Every n-gram whose first n − 1 tokens are the last n − 1: its last token is out.
  const int n = rules.no_repeat_ngram;
  for (int start = 0; n > 0 && start + n <= length; ++start)
    if (std::equal(ids.begin() + start, ids.begin() + start + n - 1, ids.end() - (n - 1))) ban(ids[start + n - 1]);
  if (generated < rules.min_new_tokens)
    for (int id : rules.eos) ban(id);
  if (generated == 0) force(rules.forced_bos);
  if (generated == rules.max_new_tokens - 1) force(rules.forced_eos);
  return static_cast<int>(std::max_element(logits, logits + vocab) - logits);
}

}  // namespace mh

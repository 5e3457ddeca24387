#include "nn/decoder.h"

#include "interpret/ablation.h"

#include <cmath>
#include <cstdio>

#include "core/eigen_include.h"
#include "core/init.h"

namespace mh {

std::string validate_decoder_config(const DecoderConfig& c) {
  char buf[200];
  auto fail = [&](const char* what, int lo, int hi, int got) {
    std::snprintf(buf, sizeof buf, "%s must be from %d to %d, got %d", what, lo, hi, got);
    return std::string(buf);
  };
  if (c.vocab < 2 || c.vocab > 65536) return fail("vocab", 2, 65536, c.vocab);
  if (c.layers < 1 || c.layers > 16) return fail("layers", 1, 16, c.layers);
  if (c.context < 1 || c.context > 4096) return fail("context", 1, 4096, c.context);
  if (c.d_ff < 0 || c.d_ff > 16384) return fail("d_ff", 0, 16384, c.d_ff);
  if (c.features < 0 || c.features > 16) return fail("features", 0, 16, c.features);
  Config attention;
  attention.d_model = c.d_model;
  attention.num_heads = c.num_heads;
  return validate_config(attention);
}

DecoderLayout decoder_layout(const DecoderConfig& c) {
  DecoderLayout L;
  const int64_t d = c.d_model, ff = c.d_ff;
  int64_t at = 0;
  auto take = [&](int64_t n) { const int64_t o = at; at += n; return o; };
  L.embedding = take(c.vocab * d);
  L.positions = take(c.context * d);
  for (int l = 0; l < c.layers; ++l) {
    DecoderLayerOffsets o;
    o.ln1_gamma = take(d); o.ln1_beta = take(d);
    o.wq = take(d * d); o.wk = take(d * d); o.wv = take(d * d); o.wo = take(d * d);
    o.bq = take(d); o.bk = take(d); o.bv = take(d); o.bo = take(d);
    o.ln2_gamma = o.ln2_beta = o.w1 = o.b1 = o.w2 = o.b2 = -1;
    if (ff > 0) {
      o.ln2_gamma = take(d); o.ln2_beta = take(d);
      o.w1 = take(d * ff); o.b1 = take(ff); o.w2 = take(ff * d); o.b2 = take(d);
    }
    L.layers.push_back(o);
  }
  L.lnf_gamma = take(d); L.lnf_beta = take(d);
  L.unembedding = take(c.vocab * d); L.unembedding_bias = take(c.vocab);
  L.feature_projection = c.features > 0 ? take(c.features * d) : -1;
  L.total = at;
  return L;
}

Decoder::Decoder(const DecoderConfig& config, bool initialise)
    : config_(config), layout_(decoder_layout(config)), params_(layout_.total) {
  if (initialise) init(0);
}

void Decoder::init(uint64_t seed) {
  std::fill(params_.begin(), params_.end(), 0.0f);
  NormalStream stream(seed);
  const int64_t d = config_.d_model, ff = config_.d_ff, V = config_.vocab;
  const double depth = std::sqrt(2.0 * config_.layers);
  float* p = params_.data();
  fill_normal(p + layout_.embedding, V * d, 1.0, stream);
  sinusoidal_positional_encoding(p + layout_.positions, config_.context, config_.d_model);
  for (const DecoderLayerOffsets& o : layout_.layers) {
    std::fill(p + o.ln1_gamma, p + o.ln1_gamma + d, 1.0f);
    fill_normal(p + o.wq, d * d, 1 / std::sqrt(double(d)), stream);
    fill_normal(p + o.wk, d * d, 1 / std::sqrt(double(d)), stream);
    fill_normal(p + o.wv, d * d, 1 / std::sqrt(double(d)), stream);
    fill_normal(p + o.wo, d * d, 1 / std::sqrt(double(d)) / depth, stream);
    if (ff > 0) {
      std::fill(p + o.ln2_gamma, p + o.ln2_gamma + d, 1.0f);
      fill_normal(p + o.w1, d * ff, 1 / std::sqrt(double(d)), stream);
      fill_normal(p + o.w2, ff * d, 1 / std::sqrt(double(ff)) / depth, stream);
    }
  }
  std::fill(p + layout_.lnf_gamma, p + layout_.lnf_gamma + d, 1.0f);
  std::copy(p + layout_.embedding, p + layout_.embedding + V * d, p + layout_.unembedding);
  // Drawn last, so a model without features gets the same weights as before features existed.
  if (config_.features > 0) fill_normal(p + layout_.feature_projection, config_.features * d, 1.0, stream);
}

namespace {
void resize(std::vector<float>& v, int64_t n) { v.resize(static_cast<size_t>(n)); }
float scale_of(const DecoderConfig& c) {
  return 1.0f / std::sqrt(static_cast<float>(c.d_model / c.num_heads));
}
float logit_scale_of(const DecoderConfig& c) { return 1.0f / std::sqrt(static_cast<float>(c.d_model)); }
}  // namespace

double Decoder::forward(DecoderCache& cache, const int32_t* tokens, const int32_t* targets,
                        int batch, int seq, const float* features) const {
  const int d = config_.d_model, h = config_.num_heads, d_k = d / h, ff = config_.d_ff;
  const int V = config_.vocab;
  const int64_t N = static_cast<int64_t>(batch) * seq, TT = static_cast<int64_t>(seq) * seq;
  const float scale = scale_of(config_);
  const float* p = params_.data();
  cache.batch = batch;
  cache.seq = seq;
  cache.layers.resize(config_.layers);

  std::vector<float> x(N * d);
  for (int b = 0; b < batch; ++b)
    embedding_forward(x.data() + int64_t{b} * seq * d, tokens + int64_t{b} * seq, p + layout_.embedding,
                      p + layout_.positions, seq, d);
  if (config_.features > 0 && features)
    feature_projection_forward(x.data(), features, p + layout_.feature_projection, N, config_.features, d);

  MaskSpec causal;
  causal.causal = true;
  for (int l = 0; l < config_.layers; ++l) {
    const DecoderLayerOffsets& o = layout_.layers[l];
    DecoderCache::Layer& c = cache.layers[l];
    c.x = x;
    resize(c.ln1, N * d); resize(c.ln1_mean, N); resize(c.ln1_rstd, N);
    if (config_.attention_norm)
      layernorm_forward(c.ln1.data(), c.ln1_mean.data(), c.ln1_rstd.data(), c.x.data(),
                        p + o.ln1_gamma, p + o.ln1_beta, N, d);
    else
      c.ln1 = c.x;
    resize(c.q, N * d); resize(c.k, N * d); resize(c.v, N * d);
    linear_forward(c.q.data(), c.ln1.data(), p + o.wq, p + o.bq, N, d, d);
    linear_forward(c.k.data(), c.ln1.data(), p + o.wk, p + o.bk, N, d, d);
    linear_forward(c.v.data(), c.ln1.data(), p + o.wv, p + o.bv, N, d, d);
    resize(c.attention, int64_t{batch} * h * TT);
    resize(c.concat, N * d);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < batch * h; ++bh) {
      const int b = bh / h, head = bh % h;
      const int64_t row0 = int64_t{b} * seq * d + head * d_k;
      float* a = c.attention.data() + bh * TT;
      attention_scores_forward(a, c.q.data() + row0, d, c.k.data() + row0, d, seq, seq, d_k, scale);
      mask_forward(a, 0, seq, seq, causal);
      softmax_forward(a, seq, seq);
      attention_values_forward(c.concat.data() + row0, d, a, c.v.data() + row0, d, seq, seq, d_k);
    }
    // x += concat · W_O + b_O (the residual), then the optional MLP block.
    std::vector<float> y(N * d);
    linear_forward(y.data(), c.concat.data(), p + o.wo, p + o.bo, N, d, d);
    Eigen::Map<Eigen::ArrayXf>(x.data(), N * d) += Eigen::Map<Eigen::ArrayXf>(y.data(), N * d);
    if (ff > 0) {
      c.x_mid = x;
      resize(c.ln2, N * d); resize(c.ln2_mean, N); resize(c.ln2_rstd, N);
      layernorm_forward(c.ln2.data(), c.ln2_mean.data(), c.ln2_rstd.data(), c.x_mid.data(),
                        p + o.ln2_gamma, p + o.ln2_beta, N, d);
      resize(c.pre, N * ff); resize(c.act, N * ff);
      linear_forward(c.pre.data(), c.ln2.data(), p + o.w1, p + o.b1, N, d, ff);
      gelu_forward(c.act.data(), c.pre.data(), N * ff);
      linear_forward(y.data(), c.act.data(), p + o.w2, p + o.b2, N, ff, d);
      Eigen::Map<Eigen::ArrayXf>(x.data(), N * d) += Eigen::Map<Eigen::ArrayXf>(y.data(), N * d);
    }
  }
  cache.x_final = std::move(x);
  resize(cache.lnf, N * d); resize(cache.lnf_mean, N); resize(cache.lnf_rstd, N);
  layernorm_forward(cache.lnf.data(), cache.lnf_mean.data(), cache.lnf_rstd.data(),
                    cache.x_final.data(), p + layout_.lnf_gamma, p + layout_.lnf_beta, N, d);
  resize(cache.probs, N * V);
  unembedding_forward(cache.probs.data(), cache.lnf.data(), p + layout_.unembedding,
                      p + layout_.unembedding_bias, N, d, V, logit_scale_of(config_));
  return cross_entropy_forward(cache.probs.data(), nullptr, targets, N, V);
}

void Decoder::backward(float* g, DecoderCache& cache, const int32_t* tokens, const int32_t* targets,
                       const float* features) const {
  const int d = config_.d_model, h = config_.num_heads, d_k = d / h, ff = config_.d_ff;
  const int V = config_.vocab, batch = cache.batch, seq = cache.seq;
  const int64_t N = static_cast<int64_t>(batch) * seq, TT = static_cast<int64_t>(seq) * seq;
  const float scale = scale_of(config_);
  const float* p = params_.data();

  cross_entropy_backward(cache.probs.data(), targets, N, V);  // probs now hold d_logits
  std::vector<float> d_lnf(N * d, 0.0f), d_x(N * d, 0.0f);
  unembedding_backward(d_lnf.data(), g + layout_.unembedding, g + layout_.unembedding_bias,
                       cache.probs.data(), cache.lnf.data(), p + layout_.unembedding, N, d, V,
                       logit_scale_of(config_));
  layernorm_backward(d_x.data(), g + layout_.lnf_gamma, g + layout_.lnf_beta, d_lnf.data(),
                     cache.x_final.data(), cache.lnf_mean.data(), cache.lnf_rstd.data(),
                     p + layout_.lnf_gamma, N, d);

  std::vector<float> d_ln(N * d), d_concat(N * d), d_q(N * d), d_key(N * d), d_v(N * d);
  for (int l = config_.layers - 1; l >= 0; --l) {
    const DecoderLayerOffsets& o = layout_.layers[l];
    const DecoderCache::Layer& c = cache.layers[l];
    if (ff > 0) {  // x_out = x_mid + MLP(LN2(x_mid)): d_x flows to x_mid directly and through the MLP
      std::vector<float> d_act(N * ff, 0.0f), d_pre(N * ff, 0.0f);
      linear_backward(d_act.data(), g + o.w2, g + o.b2, d_x.data(), c.act.data(), p + o.w2, N, ff, d);
      gelu_backward(d_pre.data(), c.pre.data(), d_act.data(), N * ff);
      std::fill(d_ln.begin(), d_ln.end(), 0.0f);
      linear_backward(d_ln.data(), g + o.w1, g + o.b1, d_pre.data(), c.ln2.data(), p + o.w1, N, d, ff);
      layernorm_backward(d_x.data(), g + o.ln2_gamma, g + o.ln2_beta, d_ln.data(), c.x_mid.data(),
                         c.ln2_mean.data(), c.ln2_rstd.data(), p + o.ln2_gamma, N, d);
    }
    // x_mid = x + concat · W_O + b_O
    std::fill(d_concat.begin(), d_concat.end(), 0.0f);
    linear_backward(d_concat.data(), g + o.wo, g + o.bo, d_x.data(), c.concat.data(), p + o.wo, N, d, d);
    std::fill(d_q.begin(), d_q.end(), 0.0f);
    std::fill(d_key.begin(), d_key.end(), 0.0f);
    std::fill(d_v.begin(), d_v.end(), 0.0f);
#pragma omp parallel
    {
      std::vector<float> d_a(TT);  // per thread: dLoss/dA, then dLoss/dscores in place
#pragma omp for schedule(static)
      for (int bh = 0; bh < batch * h; ++bh) {
        const int b = bh / h, head = bh % h;
        const int64_t row0 = int64_t{b} * seq * d + head * d_k;
        const float* a = c.attention.data() + bh * TT;
        attention_values_backward(d_a.data(), d_v.data() + row0, d, d_concat.data() + row0, d, a,
                                  c.v.data() + row0, seq, seq, d_k);
        softmax_backward(d_a.data(), d_a.data(), a, seq, seq);
        attention_scores_backward(d_q.data() + row0, d, d_key.data() + row0, d, d_a.data(),
                                  c.q.data() + row0, c.k.data() + row0, seq, seq, d_k, scale);
      }
    }
    std::fill(d_ln.begin(), d_ln.end(), 0.0f);
    linear_backward(d_ln.data(), g + o.wq, g + o.bq, d_q.data(), c.ln1.data(), p + o.wq, N, d, d);
    linear_backward(d_ln.data(), g + o.wk, g + o.bk, d_key.data(), c.ln1.data(), p + o.wk, N, d, d);
    linear_backward(d_ln.data(), g + o.wv, g + o.bv, d_v.data(), c.ln1.data(), p + o.wv, N, d, d);
    if (config_.attention_norm)
      layernorm_backward(d_x.data(), g + o.ln1_gamma, g + o.ln1_beta, d_ln.data(), c.x.data(),
                         c.ln1_mean.data(), c.ln1_rstd.data(), p + o.ln1_gamma, N, d);
    else
      Eigen::Map<Eigen::ArrayXf>(d_x.data(), N * d) += Eigen::Map<const Eigen::ArrayXf>(d_ln.data(), N * d);
  }
  embedding_backward(g + layout_.embedding, d_x.data(), tokens, N, d);
  if (config_.features > 0 && features)
    feature_projection_backward(g + layout_.feature_projection, d_x.data(), features, N, config_.features, d);
  // Position t's vector was added to row t of every sequence: the same backward, indexed by position.
  std::vector<int32_t> positions(seq);
  for (int t = 0; t < seq; ++t) positions[t] = t;
  for (int b = 0; b < batch; ++b)
    embedding_backward(g + layout_.positions, d_x.data() + int64_t{b} * seq * d, positions.data(), seq, d);
}

std::string Decoder::run(float* attention, float* probs, const int32_t* tokens, int n,
                         const uint8_t* head_enabled, const float* features) {
  const int d = config_.d_model, h = config_.num_heads, d_k = d / h, ff = config_.d_ff;
  const int V = config_.vocab;
  char buf[200];
  if (n < 1 || n > config_.context) {
    std::snprintf(buf, sizeof buf, "the model reads 1 to %d tokens at a time, got %d",
                  config_.context, n);
    return buf;
  }
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= V) {
      std::snprintf(buf, sizeof buf, "token %d at position %d is not in the vocabulary (0 … %d)",
                    tokens[t], t, V - 1);
      return buf;
    }
  }
  const float* p = params_.data();
  resize(x_, int64_t{n} * d); resize(h_, int64_t{n} * d); resize(y_, int64_t{n} * d);
  embedding_forward(x_.data(), tokens, p + layout_.embedding, p + layout_.positions, n, d);
  if (config_.features > 0 && features)
    feature_projection_forward(x_.data(), features, p + layout_.feature_projection, n, config_.features, d);

  Config attention_config;
  attention_config.d_model = d;
  attention_config.num_heads = h;
  MaskSpec causal;
  causal.causal = true;
  const int64_t per_layer = int64_t{h} * n * n;
  for (int l = 0; l < config_.layers; ++l) {
    const DecoderLayerOffsets& o = layout_.layers[l];
    if (config_.attention_norm)
      layernorm_forward(h_.data(), nullptr, nullptr, x_.data(), p + o.ln1_gamma, p + o.ln1_beta, n, d);
    else
      h_ = x_;
    WeightsView w{p + o.wq, p + o.wk, p + o.wv, p + o.wo, p + o.bq, p + o.bk, p + o.bv, p + o.bo};
    const uint8_t* enabled = head_enabled ? head_enabled + l * h : nullptr;
    if (any_head_off(enabled, h)) {
      ablate_heads(wo_, p + o.wo, h, d_k, d, enabled);
      w.wo = wo_.data();
    }
    const AttentionSelection sel = attention ? AttentionSelection::all(h, n) : AttentionSelection::none();
    if (!multihead_attention_forward(y_.data(), attention ? attention + l * per_layer : nullptr, sel,
                                     h_.data(), h_.data(), n, n, attention_config, w, causal, ws_))
      return "float32 overflow in the model's attention";
    Eigen::Map<Eigen::ArrayXf>(x_.data(), int64_t{n} * d) += Eigen::Map<Eigen::ArrayXf>(y_.data(), int64_t{n} * d);
    if (ff > 0) {
      layernorm_forward(h_.data(), nullptr, nullptr, x_.data(), p + o.ln2_gamma, p + o.ln2_beta, n, d);
      resize(hidden_, int64_t{n} * ff);
      linear_forward(hidden_.data(), h_.data(), p + o.w1, p + o.b1, n, d, ff);
      gelu_forward(hidden_.data(), hidden_.data(), int64_t{n} * ff);
      linear_forward(y_.data(), hidden_.data(), p + o.w2, p + o.b2, n, ff, d);
      Eigen::Map<Eigen::ArrayXf>(x_.data(), int64_t{n} * d) += Eigen::Map<Eigen::ArrayXf>(y_.data(), int64_t{n} * d);
    }
  }
  if (probs) {
    layernorm_forward(h_.data(), nullptr, nullptr, x_.data(), p + layout_.lnf_gamma, p + layout_.lnf_beta, n, d);
    unembedding_forward(probs, h_.data(), p + layout_.unembedding, p + layout_.unembedding_bias, n, d,
                        V, logit_scale_of(config_));
    for (int t = 0; t < n; ++t) softmax_forward(probs + int64_t{t} * V, 1, V);
  }
  return "";
}

}  // namespace mh

#include "interpret/logit_attribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn/families/family.h"
#include "nn/ops.h"

namespace mh {

namespace {

const float* vector_of(const Tensor* t) { return t ? t->f32() : nullptr; }

}  // namespace

void size_lens(LogitLens& out, int streams, int positions, int top_k, int targets, int vocab) {
  out = LogitLens();
  out.streams = streams;
  out.positions = positions;
  out.top_k = std::min(top_k, vocab);
  out.targets = targets;
  out.top_ids.assign(static_cast<size_t>(streams) * positions * out.top_k, 0);
  out.top_probabilities.assign(out.top_ids.size(), 0.0f);
  out.target_ranks.assign(static_cast<size_t>(streams) * positions * targets, 0);
  out.target_probabilities.assign(out.target_ranks.size(), 0.0f);
}

void lens_row(LogitLens& out, int64_t at, const float* logits, int vocab, const int32_t* targets) {
  const double top = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int v = 0; v < vocab; ++v) sum += std::exp(double(logits[v]) - top);
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  const int k = std::min(out.top_k, vocab);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (int i = 0; i < k; ++i) {
    out.top_ids[at * out.top_k + i] = order[i];
    out.top_probabilities[at * out.top_k + i] = static_cast<float>(std::exp(double(logits[order[i]]) - top) / sum);
  }
  for (int t = 0; t < out.targets; ++t) {
    const float x = logits[targets[t]];
    int rank = 0;
    for (int v = 0; v < vocab; ++v) rank += logits[v] > x || (logits[v] == x && v < targets[t]);
    out.target_ranks[at * out.targets + t] = rank;
    out.target_probabilities[at * out.targets + t] = static_cast<float>(std::exp(double(x) - top) / sum);
  }
}

LogitDirection logit_direction(const std::vector<double>& residual, Norm norm, float eps, const Tensor* gamma_w,
                               const Tensor* beta_w, const Tensor& output, const Tensor* output_bias, float output_scale,
                               int target, int contrast) {
  const int d = static_cast<int>(residual.size());
  // s · γ ⊙ (W_U[:, target] − W_U[:, contrast]), centred for LayerNorm, ÷ σ (or rms).
  std::vector<double> w(static_cast<size_t>(d));
  LogitDirection out;
  out.v.resize(static_cast<size_t>(d));
  for (int i = 0; i < d; ++i) w[i] = output_scale * (output.at(i, target) - (contrast >= 0 ? output.at(i, contrast) : 0.0));
  const float* gamma = vector_of(gamma_w);
  const float* beta = vector_of(beta_w);
  for (int i = 0; i < d; ++i) out.v[i] = (gamma ? gamma[i] : 1.0) * w[i];
  double mean = 0, square = 0;
  for (int i = 0; i < d; ++i) mean += residual[i];
  mean /= d;
  const bool centred = norm == Norm::kLayerNorm;  // LayerNorm centres; RMSNorm does not
  for (int i = 0; i < d; ++i) square += (residual[i] - (centred ? mean : 0)) * (residual[i] - (centred ? mean : 0));
  const double sigma = std::sqrt(square / d + eps);
  if (centred) {
    const double v_mean = std::accumulate(out.v.begin(), out.v.end(), 0.0) / d;
    for (double& x : out.v) x -= v_mean;
  }
  for (double& x : out.v) x /= sigma;
  for (int i = 0; beta && i < d; ++i) out.norm_bias += beta[i] * w[i];
  if (const float* b = vector_of(output_bias)) out.norm_bias += b[target] - (contrast >= 0 ? b[contrast] : 0.0);
  return out;
}

namespace {

// What each part writes into the residual stream at one position, read from the run's named
// activations: the embeddings (blocks.0.hook_resid_pre), each head's hook_z through its rows of
// W_O, the attention's output bias, each MLP's hook_mlp_out without its bias, and that bias. A
// post-attention norm (Gemma 3) scales the block's whole output by w / rms(row)
// (blocks.l.ln1_post.hook_scale): each head's share and the bias by the same factor. A post-MLP
// norm leaves the MLP's write whole (its bias inside the norm is not split off).
class Components : public HookVisitor {
 public:
  Components(const Transformer& model, int position) : model_(model), p_(position) {
    const TransformerConfig& c = model.config();
    z_.assign(static_cast<size_t>(c.layers) * c.heads * c.head_dim, 0.0f);
    mlp_.assign(static_cast<size_t>(c.layers) * c.d_model, 0.0f);
    scale_.assign(static_cast<size_t>(c.layers), 0.0f);
    embeddings_.assign(static_cast<size_t>(c.d_model), 0.0f);
  }
  int wants(Hook hook, int layer) const override {
    const bool read = (hook == Hook::kResidPre && layer == 0) || hook == Hook::kZ || hook == Hook::kMlpOut ||
                      hook == Hook::kLn1PostScale;
    return read ? kRead : kNone;
  }
  void visit(Hook hook, int layer, float* data, const std::vector<int>& shape) override {
    int64_t row = 1;
    for (size_t i = 1; i < shape.size(); ++i) row *= shape[i];
    const float* at = data + p_ * row;
    if (hook == Hook::kResidPre) std::copy(at, at + row, embeddings_.begin());
    else if (hook == Hook::kZ) std::copy(at, at + row, z_.begin() + layer * row);
    else if (hook == Hook::kMlpOut) std::copy(at, at + row, mlp_.begin() + layer * row);
    else scale_[layer] = *at;
  }
  // The parts' writes (d floats each, in ComponentLayout's order) and their sum, the residual.
  struct Parts {
    std::vector<float> embeddings;
    std::vector<std::vector<float>> heads;  // layers × heads
    std::vector<std::vector<float>> attention_biases, mlps, mlp_biases;  // layers
  };
  Parts parts(const uint8_t* disabled_heads) const {
    const TransformerConfig& c = model_.config();
    const int d = c.d_model, H = c.heads, dk = c.head_dim, dq = H * dk;
    Parts out;
    out.embeddings = embeddings_;
    std::vector<float> u(static_cast<size_t>(dq), 0.0f), scale(static_cast<size_t>(d));
    for (int l = 0; l < c.layers; ++l) {
      const TransformerWeights::Layer& L = model_.weights().layers[l];
      for (int i = 0; i < d; ++i) scale[i] = L.post_attention_norm ? L.post_attention_norm->f32()[i] / scale_[l] : 1.0f;
      for (int h = 0; h < H; ++h) {
        std::vector<float> write(static_cast<size_t>(d), 0.0f);
        if (!(disabled_heads && disabled_heads[int64_t{l} * H + h])) {
          std::copy(z_.begin() + (int64_t{l} * H + h) * dk, z_.begin() + (int64_t{l} * H + h + 1) * dk, u.begin() + h * dk);
          matmul(write.data(), u.data(), *L.wo, nullptr, 1);
          std::fill(u.begin() + h * dk, u.begin() + (h + 1) * dk, 0.0f);
          for (int i = 0; i < d; ++i) write[i] *= scale[i];
        }
        out.heads.push_back(std::move(write));
      }
      std::vector<float> bias(static_cast<size_t>(d), 0.0f), mlp(static_cast<size_t>(d)), mlp_bias(static_cast<size_t>(d), 0.0f);
      for (int i = 0; L.bo && i < d; ++i) bias[i] = L.bo->f32()[i] * scale[i];
      const float* b = L.post_mlp_norm ? nullptr : f32(L.b_down);
      for (int i = 0; i < d; ++i) {
        mlp_bias[i] = b ? b[i] : 0.0f;
        mlp[i] = mlp_[int64_t{l} * d + i] - mlp_bias[i];
      }
      out.attention_biases.push_back(std::move(bias));
      out.mlps.push_back(std::move(mlp));
      out.mlp_biases.push_back(std::move(mlp_bias));
    }
    return out;
  }

 private:
  const Transformer& model_;
  int64_t p_;
  std::vector<float> z_, mlp_, scale_, embeddings_;
};

// The logit lens's residual rows: blocks.s.hook_resid_pre at each asked position, for every stream
// s before the model's own output (an encoder's is its previous block's normalized output, as its
// hidden_states). Another visitor (the attribution's) sees the rest of the run.
class LensRows : public HookVisitor {
 public:
  LensRows(const TransformerConfig& c, const int32_t* positions, int count, HookVisitor* also)
      : positions_(positions), count_(count), d_(c.d_model), also_(also) {
    rows_.assign(static_cast<size_t>(c.layers) * count * c.d_model, 0.0f);
  }
  int wants(Hook hook, int layer) const override {
    return (hook == Hook::kResidPre ? kRead : kNone) | (also_ ? also_->wants(hook, layer) : kNone);
  }
  void visit(Hook hook, int layer, float* data, const std::vector<int>& shape) override {
    if (hook == Hook::kResidPre)
      for (int p = 0; p < count_; ++p)
        std::copy(data + int64_t{positions_[p]} * d_, data + int64_t{positions_[p] + 1} * d_,
                  rows_.begin() + (int64_t{layer} * count_ + p) * d_);
    if (also_ && also_->wants(hook, layer)) also_->visit(hook, layer, data, shape);
  }
  const float* row(int64_t stream, int64_t p) const { return rows_.data() + (stream * count_ + p) * d_; }

 private:
  const int32_t* positions_;
  int count_, d_;
  HookVisitor* also_;
  std::vector<float> rows_;
};

// The attribution from a run that read the components at the position and its logits row
// (`logits`, vocab floats).
void attribution_from(const Transformer& model, const Components::Parts& parts, const float* logits, int target,
                      int contrast, LogitAttribution& out) {
  const TransformerConfig& c = model.config();
  const TransformerWeights& W = model.weights();
  const int d = c.d_model, L = c.layers, H = c.heads;
  // The final residual is the sum of the parts.
  std::vector<double> residual(static_cast<size_t>(d), 0.0);
  auto add = [&](const std::vector<float>& part) {
    for (int i = 0; i < d; ++i) residual[i] += part[i];
  };
  add(parts.embeddings);
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) add(parts.heads[int64_t{l} * H + h]);
    add(parts.attention_biases[l]);
    add(parts.mlps[l]);
    add(parts.mlp_biases[l]);
  }
  const LogitDirection direction = logit_direction(residual, c.family->norm, c.norm_eps, W.final_norm_w, W.final_norm_b,
                                                   *W.output, W.output_bias, 1.0f, target, contrast);
  const std::vector<double>& v = direction.v;
  auto dot = [&](const std::vector<float>& part) {
    double sum = 0;
    for (int i = 0; i < d; ++i) sum += double(part[i]) * v[i];
    return sum;
  };
  out = LogitAttribution();
  out.heads.assign(static_cast<size_t>(L) * H, 0.0);
  out.mlps.assign(static_cast<size_t>(L), 0.0);
  out.layer_biases.assign(static_cast<size_t>(L), 0.0);
  out.embeddings = dot(parts.embeddings);
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) out.heads[int64_t{l} * H + h] = dot(parts.heads[int64_t{l} * H + h]);
    out.mlps[l] = dot(parts.mlps[l]);
    out.layer_biases[l] = dot(parts.attention_biases[l]) + dot(parts.mlp_biases[l]);
    out.biases += out.layer_biases[l];
  }
  out.total = out.embeddings + out.biases + std::accumulate(out.heads.begin(), out.heads.end(), 0.0) +
              std::accumulate(out.mlps.begin(), out.mlps.end(), 0.0);
  out.norm_bias = direction.norm_bias;
  out.logit_difference = logits[target] - (contrast >= 0 ? logits[contrast] : 0.0f);
}

std::string attribution_error(const Transformer& model, int n, const AttributionAsk& ask) {
  const TransformerConfig& c = model.config();
  if (!c.causal)
    return "direct logit attribution needs a decoder: a " + c.model_type +
           " encoder normalises after every layer, so no residual stream reaches its output whole";
  if (!model.has_lm_head()) return "attribution needs a language-model head, which this checkpoint does not have";
  if (ask.position < 0 || ask.position >= n)
    return "the position to attribute must be a token position from 0 to " + std::to_string(n - 1);
  if (ask.target < 0 || ask.target >= c.vocab || ask.contrast < -1 || ask.contrast >= c.vocab)
    return "target and contrast must be token ids from 0 to " + std::to_string(c.vocab - 1);
  return "";
}

}  // namespace

std::string logit_lens(RunContext& context, LogitLens& out, const int32_t* ids, int n, const int32_t* token_types,
                       const int32_t* positions, int position_count, int top_k, const int32_t* targets,
                       int target_count, const AttributionAsk* also, LogitAttribution* attribution,
                       double memory_budget) {
  const Transformer& model = context.model();
  const TransformerConfig& c = model.config();
  out = LogitLens();
  if (also)
    if (std::string error = attribution_error(model, n, *also); !error.empty()) return error;
  if (!model.has_lm_head()) return "the logit lens needs a language-model head, which this checkpoint does not have";
  if (position_count < 1) return "the logit lens needs at least one position";
  if (top_k < 1 || top_k > 1000) return "topK must be from 1 to 1000";
  for (int t = 0; t < target_count; ++t)
    if (targets[t] < 0 || targets[t] >= c.vocab)
      return "target " + std::to_string(targets[t]) + " is not in the vocabulary (0 … " + std::to_string(c.vocab - 1) + ")";
  // The attribution's position gets its logits row after the lens's, and its components captured.
  std::vector<int32_t> logit_rows(positions, positions + position_count);
  if (also) logit_rows.push_back(also->position);
  RunRequest r;
  r.token_types = token_types;
  r.logit_rows = logit_rows.data();
  r.logit_row_count = static_cast<int>(logit_rows.size());
  Components components(model, also ? also->position : 0);
  LensRows lens_rows(c, positions, position_count, also ? &components : nullptr);
  r.hooks = &lens_rows;
  RunResult run;
  if (std::string error = context.run(run, ids, n, r, memory_budget); !error.empty()) return error;
  if (also)
    attribution_from(model, components.parts(nullptr), run.logits.data() + int64_t{position_count} * c.vocab,
                     also->target, also->contrast, *attribution);
  const int d = c.d_model, L = c.layers;
  size_lens(out, L + 1, position_count, top_k, target_count, c.vocab);
  // Every (stream, position) row through the head, as few products as the memory allows: one
  // product reads the whole output matrix (154 MB for GPT-2 small), so the rows go together.
  const int64_t rows_total = int64_t{L} * position_count;
  const int block = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({64, rows_total, (int64_t{1} << 24) / c.vocab})));
  std::vector<float> rows(static_cast<size_t>(block) * d), logits(static_cast<size_t>(block) * c.vocab);
  for (int64_t first = 0; first < rows_total; first += block) {
    const int count = static_cast<int>(std::min<int64_t>(block, rows_total - first));
    for (int i = 0; i < count; ++i) {
      const int64_t s = (first + i) / position_count, p = (first + i) % position_count;
      const float* from = lens_rows.row(s, p);
      std::copy(from, from + d, rows.begin() + int64_t{i} * d);
    }
    model.head_of_residual(logits.data(), rows.data(), count);
    for (int i = 0; i < count; ++i) lens_row(out, first + i, logits.data() + int64_t{i} * c.vocab, c.vocab, targets);
  }
  for (int i = 0; i < position_count; ++i)  // the last stream: the model's own logits
    lens_row(out, int64_t{L} * position_count + i, run.logits.data() + int64_t{i} * c.vocab, c.vocab, targets);
  return "";
}

std::string direct_logit_attribution(RunContext& context, LogitAttribution& out, const int32_t* ids, int n,
                                     const AttributionAsk& ask, const uint8_t* disabled_heads, double memory_budget) {
  const Transformer& model = context.model();
  out = LogitAttribution();
  if (std::string error = attribution_error(model, n, ask); !error.empty()) return error;
  RunRequest r;
  Components components(model, ask.position);
  r.hooks = &components;
  r.logit_rows = &ask.position;
  r.logit_row_count = 1;
  r.disabled_heads = disabled_heads;
  RunResult run;
  if (std::string error = context.run(run, ids, n, r, memory_budget); !error.empty()) return error;
  attribution_from(model, components.parts(disabled_heads), run.logits.data(), ask.target, ask.contrast, out);
  return "";
}

}  // namespace mh

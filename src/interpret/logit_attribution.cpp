#include "interpret/logit_attribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn/families/family.h"

namespace mh {

namespace {

const float* vector_of(const Tensor* t) { return t ? t->f32() : nullptr; }

// Softmax of one row of logits (in float64), its top k and each target's probability and rank.
void summarise(LogitLens& out, int64_t at, const float* logits, int vocab, const int32_t* targets) {
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

// The attribution from a run that captured the components at the position (RunRequest::
// component_position) and its logits row (`logits`, vocab floats).
void attribution_from(const Transformer& model, const RunResult& run, const float* logits, int target, int contrast,
                      LogitAttribution& out) {
  const TransformerConfig& c = model.config();
  const TransformerWeights& W = model.weights();
  const int d = c.d_model, L = c.layers, H = c.heads;
  const ComponentLayout at{d, H};
  // The final residual is the sum of the parts.
  std::vector<double> residual(static_cast<size_t>(d), 0.0);
  for (size_t i = 0; i < run.components.size(); ++i) residual[i % d] += run.components[i];
  // The direction: γ ⊙ (W_U[:, target] − W_U[:, contrast]), centred for LayerNorm, ÷ σ (or rms).
  std::vector<double> w(static_cast<size_t>(d)), v(static_cast<size_t>(d));
  for (int i = 0; i < d; ++i) w[i] = W.output->at(i, target) - (contrast >= 0 ? W.output->at(i, contrast) : 0.0);
  const float* gamma = vector_of(W.final_norm_w);
  const float* beta = vector_of(W.final_norm_b);
  for (int i = 0; i < d; ++i) v[i] = (gamma ? gamma[i] : 1.0) * w[i];
  double mean = 0, square = 0;
  for (int i = 0; i < d; ++i) mean += residual[i];
  mean /= d;
  const bool centred = c.family->norm == Norm::kLayerNorm;  // LayerNorm centres; RMSNorm does not
  for (int i = 0; i < d; ++i) square += (residual[i] - (centred ? mean : 0)) * (residual[i] - (centred ? mean : 0));
  const double sigma = std::sqrt(square / d + c.norm_eps);
  if (centred) {
    const double v_mean = std::accumulate(v.begin(), v.end(), 0.0) / d;
    for (double& x : v) x -= v_mean;
  }
  for (double& x : v) x /= sigma;
  auto dot = [&](int64_t offset) {
    double sum = 0;
    for (int i = 0; i < d; ++i) sum += double(run.components[offset + i]) * v[i];
    return sum;
  };
  out = LogitAttribution();
  out.heads.assign(static_cast<size_t>(L) * H, 0.0);
  out.mlps.assign(static_cast<size_t>(L), 0.0);
  out.layer_biases.assign(static_cast<size_t>(L), 0.0);
  out.embeddings = dot(at.embeddings());
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) out.heads[int64_t{l} * H + h] = dot(at.head(l, h));
    out.mlps[l] = dot(at.mlp(l));
    out.layer_biases[l] = dot(at.attention_bias(l)) + dot(at.mlp_bias(l));
    out.biases += out.layer_biases[l];
  }
  out.total = out.embeddings + out.biases + std::accumulate(out.heads.begin(), out.heads.end(), 0.0) +
              std::accumulate(out.mlps.begin(), out.mlps.end(), 0.0);
  for (int i = 0; beta && i < d; ++i) out.norm_bias += beta[i] * w[i];
  if (const float* b = vector_of(W.output_bias)) out.norm_bias += b[target] - (contrast >= 0 ? b[contrast] : 0.0);
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
  r.hidden_states = true;
  r.logit_rows = logit_rows.data();
  r.logit_row_count = static_cast<int>(logit_rows.size());
  if (also) r.component_position = also->position;
  RunResult run;
  if (std::string error = context.run(run, ids, n, r, memory_budget); !error.empty()) return error;
  if (also)
    attribution_from(model, run, run.logits.data() + int64_t{position_count} * c.vocab, also->target, also->contrast,
                     *attribution);
  const int d = c.d_model, L = c.layers;
  out.streams = L + 1;
  out.positions = position_count;
  out.top_k = std::min(top_k, c.vocab);
  out.targets = target_count;
  out.top_ids.assign(static_cast<size_t>(out.streams) * position_count * out.top_k, 0);
  out.top_probabilities.assign(out.top_ids.size(), 0.0f);
  out.target_ranks.assign(static_cast<size_t>(out.streams) * position_count * target_count, 0);
  out.target_probabilities.assign(out.target_ranks.size(), 0.0f);
  // Every (stream, position) row through the head, as few products as the memory allows: one
  // product reads the whole output matrix (154 MB for GPT-2 small), so the rows go together.
  const int64_t rows_total = int64_t{L} * position_count;
  const int block = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({64, rows_total, (int64_t{1} << 24) / c.vocab})));
  std::vector<float> rows(static_cast<size_t>(block) * d), logits(static_cast<size_t>(block) * c.vocab);
  for (int64_t first = 0; first < rows_total; first += block) {
    const int count = static_cast<int>(std::min<int64_t>(block, rows_total - first));
    for (int i = 0; i < count; ++i) {
      const int64_t s = (first + i) / position_count, p = (first + i) % position_count;
      const float* from = run.hidden_states.data() + (s * n + positions[p]) * d;
      std::copy(from, from + d, rows.begin() + int64_t{i} * d);
    }
    model.head_of_residual(logits.data(), rows.data(), count);
    for (int i = 0; i < count; ++i) summarise(out, first + i, logits.data() + int64_t{i} * c.vocab, c.vocab, targets);
  }
  for (int i = 0; i < position_count; ++i)  // the last stream: the model's own logits
    summarise(out, int64_t{L} * position_count + i, run.logits.data() + int64_t{i} * c.vocab, c.vocab, targets);
  return "";
}

std::string direct_logit_attribution(RunContext& context, LogitAttribution& out, const int32_t* ids, int n,
                                     const AttributionAsk& ask, const uint8_t* disabled_heads, double memory_budget) {
  const Transformer& model = context.model();
  out = LogitAttribution();
  if (std::string error = attribution_error(model, n, ask); !error.empty()) return error;
  RunRequest r;
  r.component_position = ask.position;
  r.last_hidden_state = true;  // every row through the last layer: the position's components are whole
  r.logit_rows = &ask.position;
  r.logit_row_count = 1;
  r.disabled_heads = disabled_heads;
  RunResult run;
  if (std::string error = context.run(run, ids, n, r, memory_budget); !error.empty()) return error;
  attribution_from(model, run, run.logits.data(), ask.target, ask.contrast, out);
  return "";
}

}  // namespace mh

#include "interpret/encoder_decoder_lens.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "nn/families/family.h"
#include "nn/ops.h"

namespace mh {

namespace {

std::string ask_error(const TransformerConfig& c, int m, const int32_t* positions, int position_count,
                      const int32_t* targets, int target_count) {
  for (int p = 0; p < position_count; ++p)
    if (positions[p] < 0 || positions[p] >= m)
      return "positions must be decoder positions from 0 to " + std::to_string(m - 1);
  for (int t = 0; t < target_count; ++t)
    if (targets[t] < 0 || targets[t] >= c.vocab)
      return "target " + std::to_string(targets[t]) + " is not in the vocabulary (0 … " + std::to_string(c.vocab - 1) + ")";
  return "";
}

// A head's write into the residual stream: z_h (d_head) through its rows of W_O (rows h · d_head …).
std::vector<float> head_write(const float* z_h, const Tensor& wo, int head, int heads, int head_dim, int d) {
  std::vector<float> u(static_cast<size_t>(heads) * head_dim, 0.0f), write(static_cast<size_t>(d), 0.0f);
  std::copy(z_h, z_h + head_dim, u.begin() + int64_t{head} * head_dim);
  matmul(write.data(), u.data(), wo, nullptr, 1);
  return write;
}

}  // namespace

std::string seq2seq_logit_lens(EncoderDecoderContext& context, LogitLens& out, const int32_t* ids, int m,
                               const int32_t* positions, int position_count, int top_k, const int32_t* targets,
                               int target_count, double memory_budget) {
  const TransformerConfig& c = context.config();
  const Seq2SeqWeights& w = context.weights();
  out = LogitLens();
  if (!w.output) return "the logit lens needs the decoder's output head, which this checkpoint does not have";
  if (position_count < 1) return "the logit lens needs at least one position";
  if (top_k < 1 || top_k > 1000) return "topK must be from 1 to 1000";
  if (std::string error = ask_error(c, m, positions, position_count, targets, target_count); !error.empty()) return error;
  Seq2SeqRequest r;
  r.attentions = false;
  r.hidden_states = true;
  Seq2SeqResult run;
  if (std::string error = context.decode(run, ids, m, r, false, memory_budget); !error.empty()) return error;
  const int d = c.d_model, L = c.decoder_layers;
  size_lens(out, L + 1, position_count, top_k, target_count, c.vocab);
  // Streams before the last through the final norm and the head, a position's rows in one product.
  std::vector<float> rows(static_cast<size_t>(L) * d), logits(static_cast<size_t>(L) * c.vocab);
  for (int p = 0; p < position_count; ++p) {
    for (int s = 0; s < L; ++s) {
      const float* h = run.hidden_states.data() + (int64_t{s} * m + positions[p]) * d;
      std::copy(h, h + d, rows.begin() + int64_t{s} * d);
    }
    if (w.decoder.final_norm_w)
      apply_norm(c.family->norm, rows.data(), rows.data(), w.decoder.final_norm_w, w.decoder.final_norm_b, L, d, c.norm_eps);
    context.head_of(logits.data(), rows.data(), L);
    for (int s = 0; s < L; ++s)
      lens_row(out, int64_t{s} * position_count + p, logits.data() + int64_t{s} * c.vocab, c.vocab, targets);
    lens_row(out, int64_t{L} * position_count + p, run.logits.data() + int64_t{positions[p]} * c.vocab, c.vocab, targets);
  }
  return "";
}

std::string seq2seq_attribution(EncoderDecoderContext& context, LogitAttribution& out, const int32_t* ids, int m,
                                const AttributionAsk& ask, double memory_budget) {
  const TransformerConfig& c = context.config();
  const Seq2SeqWeights& w = context.weights();
  out = LogitAttribution();
  if (c.post_norm)
    return "direct logit attribution needs a pre-norm decoder: " + c.model_type +
           "'s blocks normalise after each sublayer, so no residual stream reaches its output whole (the logit lens reads it)";
  if (!w.output) return "attribution needs the decoder's output head, which this checkpoint does not have";
  if (ask.position < 0 || ask.position >= m)
    return "the position to attribute must be a decoder position from 0 to " + std::to_string(m - 1);
  if (ask.target < 0 || ask.target >= c.vocab || ask.contrast < -1 || ask.contrast >= c.vocab)
    return "target and contrast must be token ids from 0 to " + std::to_string(c.vocab - 1);
  const int L = c.decoder_layers, H = c.heads, dk = c.head_dim, d = c.d_model;
  std::vector<uint8_t> flags(static_cast<size_t>(kSeq2SeqHookKinds) * (L + 1), 0);
  flags[seq2seq_hook_id(Seq2SeqHook::kResidPre, 0)] = 1;
  for (int l = 0; l < L; ++l)
    for (Seq2SeqHook hook : {Seq2SeqHook::kZ, Seq2SeqHook::kCrossZ, Seq2SeqHook::kMlpOut}) flags[seq2seq_hook_id(hook, l)] = 1;
  Seq2SeqRequest r;
  r.attentions = false;
  r.logits = false;  // the position's row alone, below
  r.capture = flags.data();
  r.capture_count = static_cast<int>(flags.size());
  Seq2SeqResult run;
  if (std::string error = context.decode(run, ids, m, r, false, memory_budget); !error.empty()) return error;
  const int64_t p = ask.position;
  auto at = [&](Seq2SeqHook hook, int layer) { return run.captured.at(seq2seq_hook_id(hook, layer)).data(); };
  // The parts' writes at the position; their sum is the residual the final norm reads.
  std::vector<std::vector<float>> heads, cross_heads, mlps;
  std::vector<float> biases(static_cast<size_t>(L) * d, 0.0f);  // each layer's attention and MLP biases
  const float* embeddings = at(Seq2SeqHook::kResidPre, 0) + p * d;
  for (int l = 0; l < L; ++l) {
    const Seq2SeqLayer& layer = w.decoder.layers[l];
    for (int h = 0; h < H; ++h) {
      heads.push_back(head_write(at(Seq2SeqHook::kZ, l) + (p * H + h) * dk, *layer.self.wo, h, H, dk, d));
      cross_heads.push_back(head_write(at(Seq2SeqHook::kCrossZ, l) + (p * H + h) * dk, *layer.cross.wo, h, H, dk, d));
    }
    const float* mlp_out = at(Seq2SeqHook::kMlpOut, l) + p * d;
    std::vector<float> mlp(mlp_out, mlp_out + d);
    float* bias = biases.data() + int64_t{l} * d;
    for (const Tensor* b : {layer.self.bo, layer.cross.bo, layer.b_down})
      for (int i = 0; b && i < d; ++i) bias[i] += b->f32()[i];
    for (int i = 0; layer.b_down && i < d; ++i) mlp[i] -= layer.b_down->f32()[i];
    mlps.push_back(std::move(mlp));
  }
  std::vector<double> residual(embeddings, embeddings + d);
  auto add = [&](const float* part) {
    for (int i = 0; i < d; ++i) residual[i] += part[i];
  };
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) add(heads[int64_t{l} * H + h].data()), add(cross_heads[int64_t{l} * H + h].data());
    add(mlps[l].data());
    add(biases.data() + int64_t{l} * d);
  }
  const LogitDirection direction = logit_direction(residual, c.family->norm, c.norm_eps, w.decoder.final_norm_w,
                                                   w.decoder.final_norm_b, *w.output, w.output_bias, c.output_scale,
                                                   ask.target, ask.contrast);
  auto dot = [&](const float* part) {
    double sum = 0;
    for (int i = 0; i < d; ++i) sum += double(part[i]) * direction.v[i];
    return sum;
  };
  out.heads.resize(static_cast<size_t>(L) * H);
  out.cross_heads.resize(out.heads.size());
  out.mlps.resize(static_cast<size_t>(L));
  out.layer_biases.resize(static_cast<size_t>(L));
  out.embeddings = dot(embeddings);
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) {
      out.heads[int64_t{l} * H + h] = dot(heads[int64_t{l} * H + h].data());
      out.cross_heads[int64_t{l} * H + h] = dot(cross_heads[int64_t{l} * H + h].data());
    }
    out.mlps[l] = dot(mlps[l].data());
    out.layer_biases[l] = dot(biases.data() + int64_t{l} * d);
    out.biases += out.layer_biases[l];
  }
  auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  out.total = out.embeddings + out.biases + sum(out.heads) + sum(out.cross_heads) + sum(out.mlps);
  out.norm_bias = direction.norm_bias;
  // The model's own difference: the head over the final norm of the run's last hidden state.
  std::vector<float> logits(static_cast<size_t>(c.vocab));
  context.head_of(logits.data(), run.last_hidden_state.data() + p * d, 1);
  out.logit_difference = logits[ask.target] - (ask.contrast >= 0 ? logits[ask.contrast] : 0.0f);
  return "";
}

}  // namespace mh

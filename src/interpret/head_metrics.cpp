#include "interpret/head_metrics.h"

#include <cmath>

#include "core/init.h"

namespace mh {

namespace {
std::vector<int32_t> repeated_random(int half, int vocab, uint64_t& state) {
  std::vector<int32_t> tokens(2 * half);
  for (int k = 0; k < half; ++k)
    tokens[k] = tokens[half + k] = 1 + static_cast<int32_t>(splitmix64(state) % (vocab - 1));
  return tokens;
}
}  // namespace

std::vector<HeadScores> measure_heads(Decoder& model, const int32_t* text, int64_t text_len, int n,
                                      int windows, uint64_t seed) {
  const int L = model.config().layers, H = model.config().num_heads;
  const int64_t nn = int64_t{n} * n;
  std::vector<HeadScores> scores(static_cast<size_t>(L) * H);
  std::vector<float> attention(static_cast<size_t>(L) * H * nn);
  auto at = [&](int lh, int i, int j) { return attention[lh * nn + int64_t{i} * n + j]; };

  for (int w = 0; w < windows; ++w) {
    const int64_t start = windows > 1 ? (text_len - n) * w / (windows - 1) : 0;
    model.run(attention.data(), nullptr, text + start, n);
    for (int lh = 0; lh < L * H; ++lh) {
      double prev = 0, first = 0, local = 0;
      for (int i = 1; i < n; ++i) {
        prev += at(lh, i, i - 1);
        first += at(lh, i, 0);
        if (i >= 4)
          for (int j = i - 3; j <= i; ++j) local += at(lh, i, j);
      }
      scores[lh].previous_token += static_cast<float>(prev / (n - 1) / windows);
      scores[lh].first_token += static_cast<float>(first / (n - 1) / windows);
      scores[lh].local_window += static_cast<float>(local / std::max(1, n - 4) / windows);
    }
  }
  const int half = n / 2;
  uint64_t state = seed;
  for (int w = 0; w < windows; ++w) {
    const std::vector<int32_t> tokens = repeated_random(half, model.config().vocab, state);
    model.run(attention.data(), nullptr, tokens.data(), 2 * half);
    const int64_t nn2 = int64_t{2 * half} * (2 * half);
    for (int lh = 0; lh < L * H; ++lh) {
      double induction = 0;
      for (int k = 0; k + 1 < half; ++k)
        induction += attention[lh * nn2 + int64_t{half + k} * (2 * half) + k + 1];
      scores[lh].induction += static_cast<float>(induction / (half - 1) / windows);
    }
  }
  return scores;
}

std::string head_role(const HeadScores& s) {
  const float local_beyond_previous = s.local_window - s.previous_token;
  std::string role = "mixed";
  float best = 0.4f;
  auto consider = [&](float score, const char* name) {
    if (score >= best) { best = score; role = name; }
  };
  consider(s.previous_token, "previous token");
  consider(s.first_token, "first token");
  consider(s.induction, "induction");
  consider(local_beyond_previous, "local window");
  return role;
}

RepeatLoss repeated_sequence_loss(Decoder& model, int n, int sequences, uint64_t seed) {
  const int half = n / 2, V = model.config().vocab;
  std::vector<float> probs(static_cast<size_t>(2 * half) * V);
  RepeatLoss loss;
  uint64_t state = seed;
  for (int s = 0; s < sequences; ++s) {
    const std::vector<int32_t> tokens = repeated_random(half, V, state);
    model.run(nullptr, probs.data(), tokens.data(), 2 * half);
    for (int t = 0; t + 1 < 2 * half; ++t) {
      const double nll = -std::log(std::max(1e-30, double{probs[int64_t{t} * V + tokens[t + 1]]}));
      (t + 1 < half ? loss.first_copy : loss.second_copy) += nll;
    }
  }
  loss.first_copy /= static_cast<double>(half - 1) * sequences;
  loss.second_copy /= static_cast<double>(half) * sequences;
  return loss;
}

}  // namespace mh

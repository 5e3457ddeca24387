#include "training/toy_tasks.h"

#include <algorithm>

#include "core/init.h"

namespace mh {

namespace {

int uniform_int(uint64_t& rng, int n) { return static_cast<int>(splitmix64(rng) % static_cast<uint64_t>(n)); }
// 24 random bits → [0, 1): exact in float, the same on every platform.
float uniform01(uint64_t& rng) { return static_cast<float>(splitmix64(rng) >> 40) * (1.0f / 16777216.0f); }
float uniform(uint64_t& rng, float lo, float hi) { return lo + (hi - lo) * uniform01(rng); }

// Fisher–Yates over the first `count` entries of v (a random prefix of a permutation when
// count < v.size()).
template <typename T>
void shuffle_prefix(std::vector<T>& v, int count, uint64_t& rng) {
  const int n = static_cast<int>(v.size());
  for (int i = 0; i < count; ++i) std::swap(v[i], v[i + uniform_int(rng, n - i)]);
}

// prompt (k symbols) | answer: tokens = prompt, '|', answer[0 … k−2]; targets = −1 × k, answer.
void prompt_answer(int32_t* tokens, int32_t* targets, const std::vector<int32_t>& prompt,
                   const std::vector<int32_t>& answer) {
  const int k = static_cast<int>(prompt.size());
  for (int i = 0; i < k; ++i) {
    tokens[i] = prompt[i];
    targets[i] = -1;
  }
  tokens[k] = kToySeparator;
  for (int i = 0; i < k; ++i) {
    targets[k + i] = answer[i];
    if (i + 1 < k) tokens[k + 1 + i] = answer[i];
  }
}

constexpr int kPromptLength = 6;      // copy, reverse, sort
constexpr int kRetrievalLength = 8;   // previous-token: distinct symbols before '?'
constexpr int kKeys = 3;              // balanced-key

void balanced_key_sequence(int32_t* tokens, int32_t* targets, float* features, uint64_t& rng) {
  // 0: strong on criterion 1 only, 1: strong on criterion 2 only, 2: fair on both (the answer: its
  // weaker criterion beats theirs). Key 2 sits exactly halfway between the other two, so any score
  // linear in (c1, c2) gives it the mean of their scores: never strictly the highest or lowest.
  float criteria[kKeys][2];
  criteria[0][0] = uniform(rng, 0.8f, 1.0f); criteria[0][1] = uniform(rng, 0.0f, 0.2f);
  criteria[1][0] = uniform(rng, 0.0f, 0.2f); criteria[1][1] = uniform(rng, 0.8f, 1.0f);
  criteria[2][0] = 0.5f * (criteria[0][0] + criteria[1][0]);
  criteria[2][1] = 0.5f * (criteria[0][1] + criteria[1][1]);
  std::vector<int32_t> labels(kToySymbols);
  for (int i = 0; i < kToySymbols; ++i) labels[i] = i;
  shuffle_prefix(labels, kKeys, rng);
  std::vector<int> order = {0, 1, 2};
  shuffle_prefix(order, kKeys, rng);
  for (int slot = 0; slot < kKeys; ++slot) {
    const int kind = order[slot];
    tokens[slot] = labels[kind];
    targets[slot] = -1;
    features[2 * slot] = criteria[kind][0];
    features[2 * slot + 1] = criteria[kind][1];
  }
  tokens[kKeys] = kToyQuery;
  targets[kKeys] = labels[2];
  features[2 * kKeys] = features[2 * kKeys + 1] = 0.0f;
}

}  // namespace

ToyTaskShape toy_task_shape(ToyTask task) {
  switch (task) {
    case ToyTask::copy: return {"copy", 2 * kPromptLength, 0};
    case ToyTask::reverse: return {"reverse", 2 * kPromptLength, 0};
    case ToyTask::sort: return {"sort", 2 * kPromptLength, 0};
    case ToyTask::previous_token: return {"previous-token", kRetrievalLength + 2, 0};
    case ToyTask::balanced_key: return {"balanced-key", kKeys + 1, 2};
  }
  return {"", 0, 0};
}

void make_toy_batch(ToyBatch& out, ToyTask task, int batch, uint64_t& rng) {
  const ToyTaskShape shape = toy_task_shape(task);
  out.batch = batch;
  out.seq = shape.seq;
  out.features = shape.features;
  out.tokens.assign(static_cast<size_t>(batch) * shape.seq, 0);
  out.targets.assign(out.tokens.size(), -1);
  out.feature_values.assign(out.tokens.size() * shape.features, 0.0f);
  std::vector<int32_t> prompt(kPromptLength), answer, symbols(kToySymbols);
  for (int b = 0; b < batch; ++b) {
    int32_t* tokens = out.tokens.data() + static_cast<size_t>(b) * shape.seq;
    int32_t* targets = out.targets.data() + static_cast<size_t>(b) * shape.seq;
    switch (task) {
      case ToyTask::copy:
      case ToyTask::reverse:
      case ToyTask::sort:
        for (int32_t& s : prompt) s = uniform_int(rng, kToySymbols);
        answer = prompt;
        if (task == ToyTask::reverse) std::reverse(answer.begin(), answer.end());
        if (task == ToyTask::sort) std::sort(answer.begin(), answer.end());
        prompt_answer(tokens, targets, prompt, answer);
        break;
      case ToyTask::previous_token: {
        for (int i = 0; i < kToySymbols; ++i) symbols[i] = i;
        shuffle_prefix(symbols, kRetrievalLength, rng);
        const int asked = 1 + uniform_int(rng, kRetrievalLength - 1);  // has a predecessor
        for (int i = 0; i < kRetrievalLength; ++i) tokens[i] = symbols[i];
        tokens[kRetrievalLength] = kToyQuery;
        tokens[kRetrievalLength + 1] = symbols[asked];
        targets[kRetrievalLength + 1] = symbols[asked - 1];
        break;
      }
      case ToyTask::balanced_key:
        balanced_key_sequence(tokens, targets,
                              out.feature_values.data() + static_cast<size_t>(b) * shape.seq * 2, rng);
        break;
    }
  }
}

std::string toy_token_name(int id) {
  if (id >= 0 && id < kToySymbols) return std::string(1, static_cast<char>('A' + id));
  if (id == kToySeparator) return "|";
  if (id == kToyQuery) return "?";
  return "";
}

double toy_accuracy(const float* probs, const int32_t* targets, int rows, int vocab) {
  int scored = 0, correct = 0;
  for (int r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    const float* row = probs + static_cast<int64_t>(r) * vocab;
    ++scored;
    correct += std::max_element(row, row + vocab) - row == targets[r];
  }
  return scored > 0 ? static_cast<double>(correct) / scored : 0.0;
}

}  // namespace mh

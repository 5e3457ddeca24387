// Toy tasks for training a tiny decoder live (the playground): each is a batch generator of
// (tokens, targets, features) where only the answer positions are scored (target < 0 elsewhere).
// Symbols are shown as the letters A … J; '|' separates a prompt from its answer; '?' asks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mh {

enum class ToyTask : int { copy = 0, reverse = 1, sort = 2, previous_token = 3, balanced_key = 4 };
constexpr int kToyTaskCount = 5;

constexpr int kToySymbols = 10;                 // ids 0 … 9: the letters A … J
constexpr int kToySeparator = kToySymbols;      // '|'
constexpr int kToyQuery = kToySymbols + 1;      // '?'
constexpr int kToyVocab = kToySymbols + 2;

// The fixed shape of a task's sequences.
struct ToyTaskShape {
  const char* name;  // "copy", "reverse", "sort", "previous-token", "balanced-key"
  int seq;           // tokens per sequence
  int features;      // numeric inputs per token (balanced-key: its two criteria)
};
ToyTaskShape toy_task_shape(ToyTask task);

// B sequences of one task: tokens and targets (B × seq; −1 = not scored), features
// (B × seq × shape.features; empty when the task has none).
struct ToyBatch {
  int batch = 0, seq = 0, features = 0;
  std::vector<int32_t> tokens, targets;
  std::vector<float> feature_values;
};

// Fills out with `batch` fresh sequences, drawing from rng (SplitMix64 state), so a seed
// reproduces the same data on every platform.
//   copy            A C B H E J | A C B H E J     answer: the prompt again
//   reverse         A C B H E J | J E H B C A     answer: the prompt backwards
//   sort            A C B H E J | A B C E H J     answer: the prompt in order (repeats allowed)
//   previous-token  D A G J B E C F ? G → A       the symbol just before the asked one (8 distinct)
//   balanced-key    four labels, each with criteria (c1, c2) ∈ [0, 1]², then '?' → the label of
//                   the one key that is fair on both while the others excel on one or are poor on
//                   both; its criteria always lie strictly inside the triangle of the other
//                   three, so no score linear in (c1, c2) ranks it first.
void make_toy_batch(ToyBatch& out, ToyTask task, int batch, uint64_t& rng);

// "A" … "J", "|", "?"
std::string toy_token_name(int id);

// Fraction of scored targets whose most probable token (probs: rows × kToyVocab) is the target.
double toy_accuracy(const float* probs, const int32_t* targets, int rows, int vocab);

}  // namespace mh

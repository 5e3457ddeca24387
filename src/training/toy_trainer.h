// A tiny decoder trained on a toy task one Adam step at a time: what the playground drives from a
// Web Worker (through bindings/embind_trainer.cpp) and what the native reference runs for the
// same seed. Everything is seeded: weights, training batches and the held-out batch.
#pragma once

#include <cstdint>
#include <string>

#include "nn/decoder.h"
#include "training/toy_tasks.h"

namespace mh {

struct ToyTrainerSettings {
  ToyTask task = ToyTask::copy;
  int layers = 2;       // 1 … 2
  int heads = 4;        // 1 … 8
  int d_model = 32;     // 8 … 128, divisible by heads
  int batch = 32;       // sequences per step
  float learning_rate = 3e-3f;
  uint64_t seed = 1;
};

// "" if usable, else what to change.
std::string validate_toy_trainer_settings(const ToyTrainerSettings& settings);

class ToyTrainer {
 public:
  static constexpr int kHeldOut = 256;  // sequences in the held-out batch accuracy is measured on

  // Precondition: validate_toy_trainer_settings(settings) is "".
  explicit ToyTrainer(const ToyTrainerSettings& settings);

  const ToyTrainerSettings& settings() const { return settings_; }
  const Decoder& model() const { return model_; }
  int64_t steps() const { return steps_; }
  // Takes effect from the next step (Adam's moments are kept).
  void set_learning_rate(float lr) { settings_.learning_rate = lr; }

  // One AdamW step on a fresh batch; returns that batch's loss (nats per scored token), measured
  // before the update.
  double step();

  // Loss and accuracy (fraction of scored tokens predicted right) on the held-out batch, which is
  // drawn once per seed from its own stream and never trained on.
  struct Evaluation { double loss, accuracy; };
  Evaluation evaluate();

  // The held-out batch (its first sequences are the playground's sample inputs).
  const ToyBatch& held_out() const { return held_out_; }

  // Runs held-out sequence `index` through the model: attention (layers × heads × seq × seq) and
  // probs (seq × kToyVocab, next-token probabilities after each position), either may be null.
  std::string sample(int index, float* attention, float* probs);

 private:
  ToyTrainerSettings settings_;
  Decoder model_;
  std::vector<float> grads_, adam_m_, adam_v_;
  DecoderCache cache_;
  ToyBatch batch_, held_out_;
  uint64_t batch_rng_;
  int64_t steps_ = 0;
};

}  // namespace mh

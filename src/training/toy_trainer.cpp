#include "training/toy_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/init.h"

namespace mh {

namespace {

DecoderConfig config_for(const ToyTrainerSettings& s) {
  const ToyTaskShape shape = toy_task_shape(s.task);
  DecoderConfig c;
  c.vocab = kToyVocab;
  c.d_model = s.d_model;
  c.num_heads = s.heads;
  c.layers = s.layers;
  c.context = shape.seq;
  c.d_ff = 0;  // attention only: every computation the page shows is a head's
  c.features = shape.features;
  // balanced-key: no norm before attention, so a head's score is linear in the criteria (the
  // premise of "one head cannot"); with it, 1/σ lets one head reach ~80% there.
  c.attention_norm = s.task != ToyTask::balanced_key;
  return c;
}

// Independent streams from one seed: weights use the seed itself (NormalStream), training
// batches and the held-out batch get their own SplitMix64 states.
constexpr uint64_t kBatchStream = 0x6261746368ULL, kHeldOutStream = 0x68656c646f7574ULL;

}  // namespace

std::string validate_toy_trainer_settings(const ToyTrainerSettings& s) {
  char buf[200];
  auto fail = [&](const char* what, int lo, int hi, int got) {
    std::snprintf(buf, sizeof buf, "%s must be from %d to %d, got %d", what, lo, hi, got);
    return std::string(buf);
  };
  if (static_cast<int>(s.task) < 0 || static_cast<int>(s.task) >= kToyTaskCount)
    return fail("task", 0, kToyTaskCount - 1, static_cast<int>(s.task));
  if (s.layers < 1 || s.layers > 2) return fail("layers", 1, 2, s.layers);
  if (s.heads < 1 || s.heads > 8) return fail("heads", 1, 8, s.heads);
  if (s.d_model < 8 || s.d_model > 128) return fail("d_model", 8, 128, s.d_model);
  if (s.d_model % s.heads != 0) {
    std::snprintf(buf, sizeof buf, "d_model (%d) must be divisible by heads (%d)", s.d_model, s.heads);
    return buf;
  }
  if (s.batch < 1 || s.batch > 512) return fail("batch", 1, 512, s.batch);
  if (!(s.learning_rate > 0.0f && s.learning_rate <= 1.0f)) {
    std::snprintf(buf, sizeof buf, "learning rate must be in (0, 1], got %g", s.learning_rate);
    return buf;
  }
  return validate_decoder_config(config_for(s));
}

ToyTrainer::ToyTrainer(const ToyTrainerSettings& settings)
    : settings_(settings), model_(config_for(settings), false),
      batch_rng_(settings.seed ^ kBatchStream) {
  model_.init(settings.seed);
  const size_t n = model_.params().size();
  grads_.assign(n, 0.0f);
  adam_m_.assign(n, 0.0f);
  adam_v_.assign(n, 0.0f);
  uint64_t held_out_rng = settings.seed ^ kHeldOutStream;
  make_toy_batch(held_out_, settings.task, kHeldOut, held_out_rng);
}

double ToyTrainer::step() {
  make_toy_batch(batch_, settings_.task, settings_.batch, batch_rng_);
  const float* features = batch_.features > 0 ? batch_.feature_values.data() : nullptr;
  const double loss = model_.forward(cache_, batch_.tokens.data(), batch_.targets.data(),
                                     batch_.batch, batch_.seq, features);
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  model_.backward(grads_.data(), cache_, batch_.tokens.data(), batch_.targets.data(), features);
  AdamSettings adam;
  adam.lr = settings_.learning_rate;
  adam_update(model_.params().data(), adam_m_.data(), adam_v_.data(), grads_.data(),
              static_cast<int64_t>(grads_.size()), ++steps_, adam);
  return loss;
}

ToyTrainer::Evaluation ToyTrainer::evaluate() {
  const float* features = held_out_.features > 0 ? held_out_.feature_values.data() : nullptr;
  const double loss = model_.forward(cache_, held_out_.tokens.data(), held_out_.targets.data(),
                                     held_out_.batch, held_out_.seq, features);
  const double accuracy = toy_accuracy(cache_.probs.data(), held_out_.targets.data(),
                                       held_out_.batch * held_out_.seq, kToyVocab);
  return {loss, accuracy};
}

std::string ToyTrainer::sample(int index, float* attention, float* probs) {
  if (index < 0 || index >= held_out_.batch)
    return "sample index must be from 0 to " + std::to_string(held_out_.batch - 1);
  const size_t at = static_cast<size_t>(index) * held_out_.seq;
  const float* features =
      held_out_.features > 0 ? held_out_.feature_values.data() + at * held_out_.features : nullptr;
  return model_.run(attention, probs, held_out_.tokens.data() + at, held_out_.seq, nullptr, features);
}

}  // namespace mh

// The C layer for the playground's trainer (src/training/toy_trainer.h): one Embind class that owns the
// wasm-heap buffers JavaScript reads. Same protocol as embind.cpp: every fallible call returns ""
// or a message; results are read through view(name) and copied out by bindings/trainer.mjs.
// The task data, the model, the backward pass and Adam are all in the core.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "training/toy_trainer.h"
#include "embind_views.h"

using emscripten::val;

namespace {

using bindings::view_of;

class Trainer {
 public:
  // seed is a JS number (an integer below 2^53).
  std::string configure(int task, int layers, int heads, int d_model, double learning_rate,
                        double seed, int batch) {
    mh::ToyTrainerSettings s;
    s.task = static_cast<mh::ToyTask>(task);
    s.layers = layers;
    s.heads = heads;
    s.d_model = d_model;
    s.learning_rate = static_cast<float>(learning_rate);
    s.seed = static_cast<uint64_t>(seed);
    s.batch = batch;
    const std::string error = mh::validate_toy_trainer_settings(s);
    if (!error.empty()) return error;
    trainer_ = std::make_unique<mh::ToyTrainer>(s);
    const mh::DecoderConfig& c = trainer_->model().config();
    attention_.assign(size_t(c.layers) * c.num_heads * c.context * c.context, 0.0f);
    probs_.assign(size_t(c.context) * c.vocab, 0.0f);
    return "";
  }

  // Runs `count` steps; their losses go to view("losses"). Returns "" or why not.
  std::string train(int count) {
    if (!trainer_) return "configure the trainer first";
    losses_.resize(count > 0 ? count : 0);
    for (int i = 0; i < count; ++i) {
      losses_[i] = static_cast<float>(trainer_->step());
      if (!std::isfinite(losses_[i]))
        return "training diverged (the loss is not finite): lower the learning rate and reset";
    }
    return "";
  }

  void setLearningRate(double lr) { if (trainer_) trainer_->set_learning_rate(static_cast<float>(lr)); }
  double steps() const { return trainer_ ? static_cast<double>(trainer_->steps()) : 0; }
  int parameterCount() const { return trainer_ ? static_cast<int>(trainer_->model().params().size()) : 0; }

  // Measures loss and accuracy on the held-out batch; read them with evaluation(0) and (1).
  std::string evaluate() {
    if (!trainer_) return "configure the trainer first";
    last_ = trainer_->evaluate();
    return "";
  }
  double evaluation(int which) const { return which == 0 ? last_.loss : last_.accuracy; }

  // Held-out sequence `index`: its tokens, targets and features into views, the model's attention
  // (layers × heads × seq × seq) and probabilities (seq × vocab) too.
  std::string sample(int index) {
    if (!trainer_) return "configure the trainer first";
    const std::string error = trainer_->sample(index, attention_.data(), probs_.data());
    if (!error.empty()) return error;
    const mh::ToyBatch& b = trainer_->held_out();
    const size_t at = size_t(index) * b.seq;
    tokens_.assign(b.tokens.begin() + at, b.tokens.begin() + at + b.seq);
    targets_.assign(b.targets.begin() + at, b.targets.begin() + at + b.seq);
    features_.assign(b.feature_values.begin() + at * b.features,
                     b.feature_values.begin() + (at + b.seq) * b.features);
    return "";
  }

  // The task's shape, by name: seq (tokens a sequence), vocabSize, features (numeric inputs a
  // token), heldOut (sequences accuracy is measured on).
  val shape() const {
    if (!trainer_) return val::null();
    const mh::ToyTaskShape shape = mh::toy_task_shape(trainer_->settings().task);
    val out = val::object();
    out.set("seq", shape.seq);
    out.set("vocabSize", mh::kToyVocab);
    out.set("features", shape.features);
    out.set("heldOut", mh::ToyTrainer::kHeldOut);
    return out;
  }

  // The buffer JS reads, by name (null for an unknown name).
  val view(const std::string& name) const {
    if (name == "losses") return view_of(losses_);
    if (name == "attentions") return view_of(attention_);
    if (name == "probabilities") return view_of(probs_);
    if (name == "tokens") return view_of(tokens_);
    if (name == "targets") return view_of(targets_);
    if (name == "features") return view_of(features_);
    return val::null();
  }

 private:
  std::unique_ptr<mh::ToyTrainer> trainer_;
  mh::ToyTrainer::Evaluation last_{NAN, NAN};
  std::vector<float> losses_, attention_, probs_, features_;
  std::vector<int32_t> tokens_, targets_;
};

std::string toy_token_name(int id) { return mh::toy_token_name(id); }
std::string toy_task_name(int task) {
  return task >= 0 && task < mh::kToyTaskCount ? mh::toy_task_shape(static_cast<mh::ToyTask>(task)).name : "";
}

}  // namespace

EMSCRIPTEN_BINDINGS(multihead_trainer) {
  emscripten::class_<Trainer>("Trainer")
      .constructor<>()
      .function("configure", &Trainer::configure)
      .function("train", &Trainer::train)
      .function("setLearningRate", &Trainer::setLearningRate)
      .function("steps", &Trainer::steps)
      .function("parameterCount", &Trainer::parameterCount)
      .function("evaluate", &Trainer::evaluate)
      .function("evaluation", &Trainer::evaluation)
      .function("sample", &Trainer::sample)
      .function("shape", &Trainer::shape)
      .function("view", &Trainer::view);
  emscripten::function("toyTokenName", &toy_token_name);
  emscripten::function("toyTaskName", &toy_task_name);
}

// The C layer for pretrained checkpoints (src/io/checkpoint.h, src/nn/transformer.h): one Embind
// class that owns a loader, then the model, and the wasm-heap buffers JavaScript fills and reads.
// Same protocol as embind.cpp: JS copies into view(name), calls, copies out; every fallible call
// returns "" or a message. Config reading, checks, the forward pass and sampling are all core code.
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>
#include <malloc.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/init.h"
#include "interpret/logit_attribution.h"
#include "interpret/patching.h"
#include "interpret/rollout.h"
#include "embind_views.h"
#include "io/checkpoint.h"
#include "nn/transformer.h"

using emscripten::val;

namespace {

using bindings::view_of;

// Bytes the heap can still give: what it may grow to, less what is in use now.
double heap_available() {
  const struct mallinfo info = mallinfo();
  const double top = static_cast<double>(reinterpret_cast<uintptr_t>(sbrk(0)));
  return static_cast<double>(emscripten_get_heap_max()) - top + info.fordblks;
}

class PretrainedCore {
 public:
  std::string setConfig(const std::string& json) { return loader_ ? loader_->set_config(json) : "already loaded"; }
  // Room for n bytes (a header, or a chunk of a file) that JS copies into view("stage").
  void stage(double bytes) { stage_.resize(static_cast<size_t>(bytes)); }
  // Registers a shard from the n header bytes in the stage; returns its index, or -1 and error().
  int addShard(const std::string& name, double n, double file_size) {
    int index = -1;
    error_ = loader_->add_shard(name, stage_.data(), static_cast<uint64_t>(n), static_cast<uint64_t>(file_size), index);
    return error_.empty() ? index : -1;
  }
  double shardBytes(int shard) const { return static_cast<double>(loader_->shard_bytes(shard)); }
  // storage: 0 matrices as stored, 1 fp16, 2 bf16 (mh::MatrixStorage).
  std::string plan(int storage) {
    if (storage < 0 || storage > 2) return "internal: no such matrix storage";
    // Leave a tenth of what is free for the activations of the first runs.
    return loader_->plan(heap_available() * 0.9, static_cast<mh::MatrixStorage>(storage));
  }
  double bytesNeeded() const { return loader_ ? loader_->bytes_needed() : 0; }
  double bytesAvailable() const { return heap_available(); }
  // The next `bytes` bytes of a shard, from the stage.
  std::string feed(int shard, double bytes) { return loader_->feed(shard, stage_.data(), static_cast<size_t>(bytes)); }
  std::string finish() {
    std::string error = loader_->finish(model_);
    loader_.reset();
    std::vector<uint8_t>().swap(stage_);
    return error;
  }
  const std::string& error() const { return error_; }

  // The model's shape, by name (the JS config's names).
  val config() const {
    const mh::TransformerConfig& c = model_->config();
    val out = val::object();
    out.set("layers", c.layers);
    out.set("heads", c.heads);
    out.set("kvHeads", c.kv_heads);
    out.set("dModel", c.d_model);
    out.set("headDim", c.head_dim);
    out.set("vocabSize", c.vocab);
    out.set("maxPositions", c.max_positions);
    out.set("causal", c.causal);
    out.set("hasLmHead", model_->has_lm_head());
    out.set("typeVocabSize", c.type_vocab);
    out.set("dFf", c.d_ff);
    // Local layers (Mistral, GPT-Neo, Gemma 3): the window, and which layers have it.
    val sliding = val::array();
    for (int l = 0; c.sliding_window > 0 && l < c.layers; ++l)
      if (c.sliding_layers.empty() || c.sliding_layers[l]) sliding.call<void>("push", l);
    out.set("slidingWindow", c.sliding_window > 0 ? c.sliding_window : 0);
    out.set("slidingLayers", sliding);
    return out;
  }
  std::string modelType() const { return model_->config().model_type; }
  double parameterCount() const { return static_cast<double>(model_->parameter_count()); }
  double weightBytes() const { return static_cast<double>(model_->weight_bytes()); }
  std::string matrixType() const {
    const mh::WeightType t = model_->matrix_type();
    return t == mh::WeightType::kF16 ? "f16" : t == mh::WeightType::kBF16 ? "bf16" : "f32";
  }

  // Sizes the input buffers for n tokens (JS fills ids, types, layer flags, head switches).
  void prepare(int n) {
    const mh::TransformerConfig& c = model_->config();
    ids_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    corrupt_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    types_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    layers_.assign(static_cast<size_t>(c.layers), 0);
    enabled_.assign(static_cast<size_t>(c.layers) * c.heads, 1);
    logit_rows_.clear();
  }
  // Room for the row indices logits are asked for (JS fills view("logitRows")).
  void logitRows(int count) { logit_rows_.assign(static_cast<size_t>(std::max(count, 0)), 0); }
  // One run over the n ids in view("ids"); `ask` names what to compute (RunRequest):
  // { logits, logitRows (only the rows in view("logitRows")), tokenTypes, hiddenStates, lastHidden
  // (every row's final state; without it the last MLP runs over the logits' rows only), valueNorms,
  // headSwitches (view("headEnabled")), cache (the key/value cache), reusePrefix
  // (Transformer::run_reusing_prefix), firstHead, heads }.
  std::string run(int n, const val& ask) {
    auto flag = [&](const char* name) { return ask[name].as<bool>(); };
    mh::RunRequest r;
    r.logits = flag("logits");
    if (flag("logitRows")) {
      r.logit_rows = logit_rows_.data();
      r.logit_row_count = static_cast<int>(logit_rows_.size());
    }
    r.token_types = flag("tokenTypes") ? types_.data() : nullptr;
    r.hidden_states = flag("hiddenStates");
    r.last_hidden = flag("lastHidden");
    r.value_norms = flag("valueNorms");
    r.head_enabled = flag("headSwitches") ? enabled_.data() : nullptr;
    r.use_cache = flag("cache");
    r.contributions = flag("contributions");
    r.attention_layers = layers_.data();
    r.first_head = ask["firstHead"].as<int>();
    r.heads = ask["heads"].as<int>();
    model_->memory_limit = heap_available();
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    if (flag("reusePrefix")) return model_->run_reusing_prefix(result_, ids_.data(), n, r);
    return model_->run(result_, ids_.data(), n, r);
  }
  // ---- interpretability (src/interpret/): inputs in view("ids"), view("types"), view("logitRows")
  // (the lens's positions), view("targets"), view("corruptIds"), view("headEnabled") ----
  void targets(int count) { targets_.assign(static_cast<size_t>(std::max(count, 0)), 0); }
  // The lens, and with position ≥ 0 the attribution there from the same run (attribution()).
  std::string logitLens(int n, int top_k, bool token_types, int position, int target, int contrast) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    model_->memory_limit = heap_available();
    const mh::AttributionAsk ask{position, target, contrast};
    return mh::logit_lens(*model_, lens_, ids_.data(), n, token_types ? types_.data() : nullptr, logit_rows_.data(),
                          static_cast<int>(logit_rows_.size()), top_k, targets_.data(), static_cast<int>(targets_.size()),
                          position >= 0 ? &ask : nullptr, &attribution_);
  }
  std::string attribute(int n, int position, int target, int contrast, bool head_switches) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    model_->memory_limit = heap_available();
    return mh::direct_logit_attribution(*model_, attribution_, ids_.data(), n, {position, target, contrast},
                                        head_switches ? enabled_.data() : nullptr);
  }
  val attribution() const {
    val out = val::object();
    out.set("embeddings", attribution_.embeddings);
    out.set("biases", attribution_.biases);
    out.set("total", attribution_.total);
    out.set("normBias", attribution_.norm_bias);
    out.set("logitDifference", attribution_.logit_difference);
    return out;
  }
  std::string patchPrepare(int n, int target, int contrast) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    model_->memory_limit = heap_available();
    return patching_.prepare(*model_, ids_.data(), corrupt_.data(), n, target, contrast);
  }
  val patchDifferences() const {
    val out = val::object();
    out.set("clean", patching_.clean_difference());
    out.set("corrupt", patching_.corrupt_difference());
    return out;
  }
  // One patched run (what: 0 heads, 1 residual, 2 MLPs): its logit difference, or NaN and error().
  double patch(int what, int layer, int index) {
    double difference = 0;
    error_ = patching_.patched(*model_, static_cast<mh::ActivationPatching::What>(what), layer, index, difference);
    return error_.empty() ? difference : std::nan("");
  }
  int resultKeys() const { return result_.n_k; }
  int reusedTokens() const { return result_.reused; }
  // Attention rollout over the last run, which must have returned every head of every layer.
  std::string rollout() {
    const mh::TransformerConfig& c = model_->config();
    const size_t n = static_cast<size_t>(result_.n);
    if (result_.n != result_.n_k || result_.attentions.size() != size_t(c.layers) * c.heads * n * n)
      return "rollout needs every head of every layer (attentions: true) and no key/value cache";
    rollout_.resize(n * n);
    mh::attention_rollout(rollout_.data(), result_.attentions.data(), c.layers, c.heads, result_.n);
    return "";
  }
  void resetCache(int tokens) { model_->reset_cache(tokens); }
  int cachedTokens() const { return model_->cached_tokens(); }
  void seed(double seed) { rng_ = static_cast<uint64_t>(seed); }
  // A token from the last row of the last run's logits.
  int sample(float temperature, int top_k) {
    const int vocab = model_->config().vocab;
    if (result_.logits.size() < static_cast<size_t>(vocab)) return -1;
    return mh::sample_token(result_.logits.data() + result_.logits.size() - vocab, vocab, temperature, top_k, rng_);
  }

  // The buffer JS fills or reads, by name (null for an unknown name).
  val view(const std::string& name) const {
    if (name == "stage") return view_of(stage_);
    if (name == "ids") return view_of(ids_);
    if (name == "types") return view_of(types_);
    if (name == "attentionLayers") return view_of(layers_);
    if (name == "headEnabled") return view_of(enabled_);
    if (name == "logitRows") return view_of(logit_rows_);
    if (name == "logits") return view_of(result_.logits);
    if (name == "attentions") return view_of(result_.attentions);
    if (name == "hiddenStates") return view_of(result_.hidden_states);
    if (name == "lastHidden") return view_of(result_.last_hidden);
    if (name == "valueNorms") return view_of(result_.value_norms);
    if (name == "rollout") return view_of(rollout_);
    if (name == "contributions") return view_of(result_.contributions);
    if (name == "targets") return view_of(targets_);
    if (name == "corruptIds") return view_of(corrupt_);
    if (name == "lensIds") return view_of(lens_.top_ids);
    if (name == "lensProbabilities") return view_of(lens_.top_probabilities);
    if (name == "lensTargetRanks") return view_of(lens_.target_ranks);
    if (name == "lensTargetProbabilities") return view_of(lens_.target_probabilities);
    if (name == "attributionHeads") return view_of(attribution_.heads);
    if (name == "attributionMlps") return view_of(attribution_.mlps);
    if (name == "attributionLayerBiases") return view_of(attribution_.layer_biases);
    return val::null();
  }

 private:
  std::unique_ptr<mh::CheckpointLoader> loader_ = std::make_unique<mh::CheckpointLoader>();
  std::unique_ptr<mh::Transformer> model_;
  std::vector<uint8_t> stage_, layers_, enabled_;
  std::vector<int32_t> ids_, types_, logit_rows_, targets_, corrupt_;
  mh::LogitLens lens_;
  mh::LogitAttribution attribution_;
  mh::ActivationPatching patching_;
  mh::RunResult result_;
  std::vector<float> rollout_;
  std::string error_;
  uint64_t rng_ = 0;
};

}  // namespace

EMSCRIPTEN_BINDINGS(multihead_pretrained) {
  emscripten::class_<PretrainedCore>("PretrainedCore")
      .constructor<>()
      .function("setConfig", &PretrainedCore::setConfig)
      .function("stage", &PretrainedCore::stage)
      .function("addShard", &PretrainedCore::addShard)
      .function("shardBytes", &PretrainedCore::shardBytes)
      .function("plan", &PretrainedCore::plan)
      .function("bytesNeeded", &PretrainedCore::bytesNeeded)
      .function("bytesAvailable", &PretrainedCore::bytesAvailable)
      .function("feed", &PretrainedCore::feed)
      .function("finish", &PretrainedCore::finish)
      .function("error", &PretrainedCore::error)
      .function("config", &PretrainedCore::config)
      .function("modelType", &PretrainedCore::modelType)
      .function("parameterCount", &PretrainedCore::parameterCount)
      .function("weightBytes", &PretrainedCore::weightBytes)
      .function("matrixType", &PretrainedCore::matrixType)
      .function("prepare", &PretrainedCore::prepare)
      .function("logitRows", &PretrainedCore::logitRows)
      .function("run", &PretrainedCore::run)
      .function("targets", &PretrainedCore::targets)
      .function("logitLens", &PretrainedCore::logitLens)
      .function("attribute", &PretrainedCore::attribute)
      .function("attribution", &PretrainedCore::attribution)
      .function("patchPrepare", &PretrainedCore::patchPrepare)
      .function("patchDifferences", &PretrainedCore::patchDifferences)
      .function("patch", &PretrainedCore::patch)
      .function("resultKeys", &PretrainedCore::resultKeys)
      .function("reusedTokens", &PretrainedCore::reusedTokens)
      .function("rollout", &PretrainedCore::rollout)
      .function("resetCache", &PretrainedCore::resetCache)
      .function("cachedTokens", &PretrainedCore::cachedTokens)
      .function("seed", &PretrainedCore::seed)
      .function("sample", &PretrainedCore::sample)
      .function("view", &PretrainedCore::view);
}

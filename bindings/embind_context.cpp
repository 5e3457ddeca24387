// The C layer for a run context of a pretrained model (src/nn/transformer.h: RunContext): the
// key/value caches, prefix reuse and scratch of one line of runs, and the wasm-heap buffers JS
// fills and reads for them. A model (PretrainedCore, embind_pretrained.h) can have several. Same
// protocol as embind.cpp: JS copies into view(name), calls, copies out; every fallible call
// returns "" or a message.
#include <cmath>
#include <map>

#include "core/parallel.h"
#include "embind_pretrained.h"
#include "interpret/contributions.h"
#include "interpret/logit_attribution.h"
#include "interpret/patching.h"
#include "interpret/rollout.h"
#include "nn/hooks.h"

namespace bindings {
namespace {

// The hooks JS asks for: by hook id (nn/hooks.h), read (kept for capturedView) and/or written
// (handed to the JS callback, which changes the values in place).
class JsHooks : public mh::HookVisitor {
 public:
  std::vector<uint8_t> modes;
  val callback = val::undefined();
  std::map<int, std::vector<float>> captured;
  std::map<int, std::vector<int>> shapes;
  bool any() const {
    for (uint8_t m : modes)
      if (m) return true;
    return false;
  }
  int wants(mh::Hook hook, int layer) const override {
    const size_t id = static_cast<size_t>(mh::hook_id(hook, layer));
    return id < modes.size() ? modes[id] : kNone;
  }
  void visit(mh::Hook hook, int layer, float* data, const std::vector<int>& shape) override {
    const int id = mh::hook_id(hook, layer);
    size_t size = 1;
    for (int s : shape) size *= static_cast<size_t>(s);
    val dims = val::array();
    for (int s : shape) dims.call<void>("push", s);
    if (modes[id] & kWrite) callback(id, val(emscripten::typed_memory_view(size, data)), dims);
    if (modes[id] & kRead) {
      captured[id].assign(data, data + size);
      shapes[id] = shape;
    }
  }
};

class ContextCore {
 public:
  explicit ContextCore(const PretrainedCore& model) : model_(model.model()), context_(*model_) {}

  // Sizes the input buffers for n tokens (JS fills ids, types, layer flags, disabled heads).
  void prepare(int n) {
    const mh::TransformerConfig& c = model_->config();
    ids_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    corrupt_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    types_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    layers_.assign(static_cast<size_t>(c.layers), 0);
    disabled_.assign(static_cast<size_t>(c.layers) * c.heads, 0);
    logit_rows_.clear();
    hooks_.modes.assign(static_cast<size_t>(mh::kHookKinds) * (c.layers + 1), 0);
  }
  // Room for the row indices logits are asked for (JS fills view("logitRows")).
  void logitRows(int count) { logit_rows_.assign(static_cast<size_t>(std::max(count, 0)), 0); }
  // Room for an image model's pixel values (JS fills view("pixels"): channels × height × width).
  void pixels(int count) { pixels_.assign(static_cast<size_t>(std::max(count, 0)), 0.0f); }
  // The function a written hook calls: (hook id, values as a view over the heap, shape).
  void setHookCallback(val callback) { hooks_.callback = callback; }
  // One run over the n ids in view("ids"); `ask` names what to compute (RunRequest):
  // { logits, logitRows (only the rows in view("logitRows")), tokenTypes, hiddenStates,
  // lastHiddenState (every row's final state; without it the last MLP runs over the logits' rows
  // only), valueNorms, disabledHeads (view("disabledHeads")), cache (the key/value cache),
  // reusePrefix (RunContext::run_reusing_prefix), firstHead, heads }; the hooks
  // in view("hookModes") (by hook id: 1 read, 2 write).
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
    r.last_hidden_state = flag("lastHiddenState");
    r.value_norms = flag("valueNorms");
    r.disabled_heads = flag("disabledHeads") ? disabled_.data() : nullptr;
    r.use_cache = flag("cache");
    r.attention_layers = layers_.data();
    r.first_head = ask["firstHead"].as<int>();
    r.heads = ask["heads"].as<int>();
    if (!ask["imageHeight"].isUndefined()) {  // an image model: n = 1 + its patches
      r.image_height = ask["imageHeight"].as<int>();
      r.image_width = ask["imageWidth"].as<int>();
      if (pixels_.size() != size_t(model_->config().channels) * r.image_height * r.image_width)
        return "pixels() the image's values first";
      r.pixels = pixels_.data();
    }
    hooks_.captured.clear();
    hooks_.shapes.clear();
    if (hooks_.any()) r.hooks = &hooks_;
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    mh::ProfilePhase phase("run: request and free memory");
    // The room above the heap's top first: the exact free memory only if that is not enough.
    if (flag("reusePrefix")) {
      const double room = heap_room_above_top();
      return context_.run_reusing_prefix(result_, ids_.data(), n, r,
                                         room >= context_.reusing_bytes(n, r) ? room : heap_available());
    }
    return run_within_memory(n, r);
  }
  // One token of generate() after the prompt: `id` after the cached tokens, every head's attention
  // row (view("attentions"): layers × heads × n_k) and its row's logits, then the next token sampled
  // from them (sample()). Returns that token, or −1 with the message in error(). What run() and
  // sample() do for such a step, in one call: a step's JS is serial time at every thread count.
  int generateStep(int id, float temperature, int top_k) {
    const mh::TransformerConfig& c = model_->config();
    ids_.assign(1, id);
    layers_.assign(static_cast<size_t>(c.layers), 1);
    logit_rows_.assign(1, 0);
    mh::RunRequest r;
    r.logits = true;
    r.logit_rows = logit_rows_.data();
    r.logit_row_count = 1;
    r.use_cache = true;
    r.attention_layers = layers_.data();
    r.first_head = 0;
    r.heads = c.heads;
    mh::ProfilePhase phase("run: request and free memory");
    error_ = run_within_memory(1, r);
    if (!error_.empty()) return -1;
    return sample(temperature, top_k);
  }
  // view("attentions") without its name: a generate() step reads it after every token, where the
  // name's trip into the heap (a malloc, a UTF-8 copy, the compares) ran cold after the weights
  // had streamed through the caches.
  val attentionRows() const { return view_of(result_.attentions); }
  // A hook's values from the last run, and their shape.
  val captured(int id) const {
    auto it = hooks_.captured.find(id);
    return it == hooks_.captured.end() ? val::null() : view_of(it->second);
  }
  val capturedShape(int id) const {
    val out = val::array();
    auto it = hooks_.shapes.find(id);
    if (it != hooks_.shapes.end())
      for (int s : it->second) out.call<void>("push", s);
    return out;
  }
  // ---- interpretability (src/interpret/): inputs in view("ids"), view("types"), view("logitRows")
  // (the lens's positions), view("targets"), view("corruptIds"), view("disabledHeads") ----
  void targets(int count) { targets_.assign(static_cast<size_t>(std::max(count, 0)), 0); }
  // The lens, and with position ≥ 0 the attribution there from the same run (attribution()).
  std::string logitLens(int n, int top_k, bool token_types, int position, int target, int contrast) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    const mh::AttributionAsk ask{position, target, contrast};
    return mh::logit_lens(context_, lens_, ids_.data(), n, token_types ? types_.data() : nullptr, logit_rows_.data(),
                          static_cast<int>(logit_rows_.size()), top_k, targets_.data(), static_cast<int>(targets_.size()),
                          position >= 0 ? &ask : nullptr, &attribution_, heap_available());
  }
  std::string attribute(int n, int position, int target, int contrast, bool disabled_heads) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    return mh::direct_logit_attribution(context_, attribution_, ids_.data(), n, {position, target, contrast},
                                        disabled_heads ? disabled_.data() : nullptr, heap_available());
  }
  val attribution() const { return attribution_totals(attribution_); }
  std::string patchPrepare(int n, int target, int contrast) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    return patching_.prepare(context_, ids_.data(), corrupt_.data(), n, target, contrast, heap_available());
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
    error_ = patching_.patched(context_, static_cast<mh::ActivationPatching::What>(what), layer, index, difference,
                               heap_available());
    return error_.empty() ? difference : std::nan("");
  }
  // Token contributions of every layer over the n ids (interpret/contributions.h).
  std::string contributions(int n, bool token_types) {
    if (n < 0 || n > static_cast<int>(ids_.size())) return "prepare() the inputs first";
    return mh::token_contributions(context_, contributions_, ids_.data(), n, token_types ? types_.data() : nullptr,
                                   heap_available());
  }
  const std::string& error() const { return error_; }
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
  void resetCache(int tokens) { context_.reset_cache(tokens); }
  int cachedTokens() const { return context_.cached_tokens(); }
  void seed(double seed) { rng_ = static_cast<uint64_t>(seed); }
  // A token from the last row of the last run's logits.
  int sample(float temperature, int top_k) {
    const int vocab = model_->config().vocab;
    if (result_.logits.size() < static_cast<size_t>(vocab)) return -1;
    mh::ProfilePhase phase("sampling");
    return mh::sample_token(result_.logits.data() + result_.logits.size() - vocab, vocab, temperature, top_k, rng_);
  }

  // The buffer JS fills or reads, by name (null for an unknown name).
  val view(const std::string& name) const {
    if (name == "ids") return view_of(ids_);
    if (name == "types") return view_of(types_);
    if (name == "attentionLayers") return view_of(layers_);
    if (name == "disabledHeads") return view_of(disabled_);
    if (name == "hookModes") return view_of(hooks_.modes);
    if (name == "logitRows") return view_of(logit_rows_);
    if (name == "pixels") return view_of(pixels_);
    if (name == "logits") return view_of(result_.logits);
    if (name == "attentions") return view_of(result_.attentions);
    if (name == "hiddenStates") return view_of(result_.hidden_states);
    if (name == "lastHiddenState") return view_of(result_.last_hidden_state);
    if (name == "valueNorms") return view_of(result_.value_norms);
    if (name == "rollout") return view_of(rollout_);
    if (name == "contributions") return view_of(contributions_);
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
  std::shared_ptr<const mh::Transformer> model_;  // kept alive while this context lives
  mh::RunContext context_;
  std::vector<uint8_t> layers_, disabled_;
  std::vector<int32_t> ids_, types_, logit_rows_, targets_, corrupt_;
  JsHooks hooks_;
  mh::LogitLens lens_;
  mh::LogitAttribution attribution_;
  mh::ActivationPatching patching_;
  mh::RunResult result_;
  std::vector<float> rollout_, contributions_, pixels_;
  std::string error_;
  uint64_t rng_ = 0;

  // The room above the heap's top first: the exact free memory only if that is not enough.
  std::string run_within_memory(int n, const mh::RunRequest& r) {
    std::string error = context_.run(result_, ids_.data(), n, r, heap_room_above_top());
    if (error.rfind(mh::kMemoryRefusal, 0) == 0) error = context_.run(result_, ids_.data(), n, r, heap_available());
    return error;
  }
};

}  // namespace
}  // namespace bindings

EMSCRIPTEN_BINDINGS(multihead_context) {
  using bindings::ContextCore;
  emscripten::class_<ContextCore>("ContextCore")
      .constructor<const bindings::PretrainedCore&>()
      .function("prepare", &ContextCore::prepare)
      .function("logitRows", &ContextCore::logitRows)
      .function("pixels", &ContextCore::pixels)
      .function("setHookCallback", &ContextCore::setHookCallback)
      .function("run", &ContextCore::run)
      .function("captured", &ContextCore::captured)
      .function("capturedShape", &ContextCore::capturedShape)
      .function("targets", &ContextCore::targets)
      .function("logitLens", &ContextCore::logitLens)
      .function("attribute", &ContextCore::attribute)
      .function("attribution", &ContextCore::attribution)
      .function("patchPrepare", &ContextCore::patchPrepare)
      .function("patchDifferences", &ContextCore::patchDifferences)
      .function("patch", &ContextCore::patch)
      .function("contributions", &ContextCore::contributions)
      .function("error", &ContextCore::error)
      .function("resultKeys", &ContextCore::resultKeys)
      .function("reusedTokens", &ContextCore::reusedTokens)
      .function("rollout", &ContextCore::rollout)
      .function("resetCache", &ContextCore::resetCache)
      .function("cachedTokens", &ContextCore::cachedTokens)
      .function("seed", &ContextCore::seed)
      .function("sample", &ContextCore::sample)
      .function("generateStep", &ContextCore::generateStep)
      .function("attentionRows", &ContextCore::attentionRows)
      .function("view", &ContextCore::view);
}

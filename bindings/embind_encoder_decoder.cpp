// The C layer for an encoder-decoder's runs (src/nn/encoder_decoder.h: EncoderDecoderContext)
// over a model PretrainedCore loaded: JS fills view("source") / view("target"), calls encode,
// decode or step, and copies the results out of their views. Every fallible call returns "" or a
// message (step: -1, then error()).
#include "embind_pretrained.h"
#include "interpret/encoder_decoder_lens.h"
#include "nn/encoder_decoder.h"

namespace bindings {
namespace {

class Seq2SeqCore {
 public:
  explicit Seq2SeqCore(const PretrainedCore& model) : model_(model.model()), context_(*model_) {}

  // Room for n source ids and m decoder ids (JS fills view("source"), view("target")).
  // Room for n source ids and m decoder ids (JS fills view("source"), view("target")); no captures
  // (JS sets view("encoderCapture") / view("decoderCapture") by hook id: 1 = capture).
  void prepare(int n, int m) {
    const mh::TransformerConfig& c = model_->config();
    source_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    target_.assign(static_cast<size_t>(std::max(m, 0)), 0);
    const size_t ids = static_cast<size_t>(mh::kSeq2SeqHookKinds) * (std::max(c.layers, c.decoder_layers) + 1);
    capture_[0].assign(ids, 0);
    capture_[1].assign(ids, 0);
  }
  // Every activation name a run can capture, in visiting order: [name, decoder?, id] each.
  val hookNames() const {
    val out = val::array();
    for (const mh::Seq2SeqHookName& h : mh::seq2seq_hook_names(model_->config())) {
      val entry = val::array();
      entry.call<void>("push", h.name);
      entry.call<void>("push", h.decoder);
      entry.call<void>("push", h.id);
      out.call<void>("push", entry);
    }
    return out;
  }
  // A captured activation of the last encode (decoder false) or decode, and its shape; null if none.
  val captured(bool decoder, int id) const {
    const auto& all = (decoder ? decoded_ : encoded_).captured;
    auto it = all.find(id);
    return it == all.end() ? val::null() : view_of(it->second);
  }
  val capturedShape(bool decoder, int id) const {
    val out = val::array();
    const auto& all = (decoder ? decoded_ : encoded_).captured_shapes;
    if (auto it = all.find(id); it != all.end())
      for (int d : it->second) out.call<void>("push", d);
    return out;
  }
  // The encoder over view("source"); its attentions and hidden states in the encoder* views.
  std::string encode(bool attentions, bool hidden_states) {
    return context_.encode(encoded_, source_.data(), static_cast<int>(source_.size()),
                           capturing(request(attentions, hidden_states, false), capture_[0]), heap_available());
  }
  // The decoder over view("target") from the start, against the encoded source.
  std::string decode(bool attentions, bool hidden_states) {
    return context_.decode(decoded_, target_.data(), static_cast<int>(target_.size()),
                           capturing(request(attentions, hidden_states, false), capture_[1]), false, heap_available());
  }
  // Generation's rules (GenerationRules): eos ids, banned ids, no_repeat_ngram_size, forced BOS /
  // EOS (−1: none), the new tokens' bounds.
  void setRules(const val& eos, const val& banned, int no_repeat_ngram, int forced_bos, int forced_eos, int min_new,
                int max_new) {
    rules_.eos = emscripten::vecFromJSArray<int>(eos);
    rules_.banned = emscripten::vecFromJSArray<int>(banned);
    rules_.no_repeat_ngram = no_repeat_ngram;
    rules_.forced_bos = forced_bos;
    rules_.forced_eos = forced_eos;
    rules_.min_new_tokens = min_new;
    rules_.max_new_tokens = max_new;
  }
  // One generation step: the decoder over `id` (the decoder start begins the cache again), then
  // the next token by the rules; its cross-attention row in view("crossAttentions") (layers ×
  // heads × source). −1 and error() when it fails.
  int step(int id, bool start) {
    if (start) ids_.clear();
    ids_.push_back(id);
    const int32_t one = id;
    error_ = context_.decode(decoded_, &one, 1, request(true, false, true), !start, heap_room_above_top());
    if (error_.rfind(mh::kMemoryRefusal, 0) == 0)  // the exact figure only where the cheap one is not enough
      error_ = context_.decode(decoded_, &one, 1, request(true, false, true), !start, heap_available());
    if (!error_.empty()) return -1;
    return mh::next_token(decoded_.logits.data(), model_->config().vocab, ids_, rules_);
  }
  // The logit lens over the decoder at view("positions") with view("targets") (the source encoded
  // first); its arrays in the lens* views.
  std::string logitLens(int top_k) {
    if (std::string error = encode(false, false); !error.empty()) return error;
    return mh::seq2seq_logit_lens(context_, lens_, target_.data(), static_cast<int>(target_.size()), positions_.data(),
                                  static_cast<int>(positions_.size()), top_k, targets_.data(),
                                  static_cast<int>(targets_.size()), heap_available());
  }
  // Direct logit attribution at a decoder position (contrast −1: none); arrays in attribution* views.
  std::string attribute(int position, int target, int contrast) {
    if (std::string error = encode(false, false); !error.empty()) return error;
    return mh::seq2seq_attribution(context_, attribution_, target_.data(), static_cast<int>(target_.size()),
                                   {position, target, contrast}, heap_available());
  }
  val attribution() const { return attribution_totals(attribution_); }
  // Room for the lens's positions and targets (JS fills view("positions"), view("targets")).
  void lensInputs(int positions, int targets) {
    positions_.assign(static_cast<size_t>(std::max(positions, 0)), 0);
    targets_.assign(static_cast<size_t>(std::max(targets, 0)), 0);
  }
  const std::string& error() const { return error_; }
  int cachedTokens() const { return context_.cached_tokens(); }
  int maxTokens() const { return context_.max_tokens(); }

  val view(const std::string& name) const {
    if (name == "source") return view_of(source_);
    if (name == "target") return view_of(target_);
    if (name == "encoderCapture") return view_of(capture_[0]);
    if (name == "decoderCapture") return view_of(capture_[1]);
    if (name == "encoderAttentions") return view_of(encoded_.self_attentions);
    if (name == "encoderHiddenStates") return view_of(encoded_.hidden_states);
    if (name == "decoderAttentions") return view_of(decoded_.self_attentions);
    if (name == "crossAttentions") return view_of(decoded_.cross_attentions);
    if (name == "decoderHiddenStates") return view_of(decoded_.hidden_states);
    if (name == "logits") return view_of(decoded_.logits);
    if (name == "positions") return view_of(positions_);
    if (name == "targets") return view_of(targets_);
    if (name == "lensIds") return view_of(lens_.top_ids);
    if (name == "lensProbabilities") return view_of(lens_.top_probabilities);
    if (name == "lensTargetRanks") return view_of(lens_.target_ranks);
    if (name == "lensTargetProbabilities") return view_of(lens_.target_probabilities);
    if (name == "attributionHeads") return view_of(attribution_.heads);
    if (name == "attributionCrossHeads") return view_of(attribution_.cross_heads);
    if (name == "attributionMlps") return view_of(attribution_.mlps);
    if (name == "attributionLayerBiases") return view_of(attribution_.layer_biases);
    return val::null();
  }

 private:
  static mh::Seq2SeqRequest request(bool attentions, bool hidden_states, bool last_row_only) {
    mh::Seq2SeqRequest r;
    r.attentions = attentions;
    r.hidden_states = hidden_states;
    r.last_row_only = last_row_only;
    return r;
  }
  static mh::Seq2SeqRequest capturing(mh::Seq2SeqRequest r, const std::vector<uint8_t>& flags) {
    r.capture = flags.data();
    r.capture_count = static_cast<int>(flags.size());
    return r;
  }
  std::shared_ptr<const mh::Transformer> model_;
  mh::EncoderDecoderContext context_;
  std::vector<uint8_t> capture_[2];  // the encoder's and the decoder's flags, by seq2seq_hook_id
  std::vector<int32_t> source_, target_, ids_;  // ids_: a generation's tokens, the decoder start first
  std::vector<int32_t> positions_, targets_;    // the lens's
  mh::LogitLens lens_;
  mh::LogitAttribution attribution_;
  mh::Seq2SeqResult encoded_, decoded_;
  mh::GenerationRules rules_;
  std::string error_;
};

}  // namespace
}  // namespace bindings

EMSCRIPTEN_BINDINGS(multihead_encoder_decoder) {
  using bindings::PretrainedCore;
  using bindings::Seq2SeqCore;
  emscripten::class_<Seq2SeqCore>("Seq2SeqCore")
      .constructor<const PretrainedCore&>()
      .function("prepare", &Seq2SeqCore::prepare)
      .function("encode", &Seq2SeqCore::encode)
      .function("decode", &Seq2SeqCore::decode)
      .function("setRules", &Seq2SeqCore::setRules)
      .function("step", &Seq2SeqCore::step)
      .function("error", &Seq2SeqCore::error)
      .function("cachedTokens", &Seq2SeqCore::cachedTokens)
      .function("maxTokens", &Seq2SeqCore::maxTokens)
      .function("hookNames", &Seq2SeqCore::hookNames)
      .function("captured", &Seq2SeqCore::captured)
      .function("capturedShape", &Seq2SeqCore::capturedShape)
      .function("logitLens", &Seq2SeqCore::logitLens)
      .function("attribute", &Seq2SeqCore::attribute)
      .function("attribution", &Seq2SeqCore::attribution)
      .function("lensInputs", &Seq2SeqCore::lensInputs)
      .function("view", &Seq2SeqCore::view);
}

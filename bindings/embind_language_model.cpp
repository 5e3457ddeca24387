// The C layer for the trained language model (src/nn/decoder.h, src/io/model_file.h): one Embind class
// that owns the wasm-heap buffers JavaScript fills and reads. Same protocol as embind.cpp: size the
// buffers, JS copies into view(name), call, JS copies out; every fallible call returns "" or a
// message. The language-model logic (tokenizing, the forward pass, rollout) is all in the core.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>
#include <vector>

#include "interpret/rollout.h"
#include "nn/decoder.h"
#include "io/model_file.h"
#include "embind_views.h"

using emscripten::val;

namespace {

using bindings::view_of;

class LanguageModel {
 public:
  // Step 1 of loading: room for the .mhlm bytes, which JS copies into view("file").
  void stageFile(double bytes) { file_.resize(static_cast<size_t>(bytes)); }
  // Step 2: parse them (the bytes are released either way).
  std::string load() {
    std::string error = mh::load_model(model_, file_.data(), file_.size());
    std::vector<uint8_t>().swap(file_);
    return error;
  }

  // The model's shape, by name (the JS config's names).
  val config() const {
    const mh::DecoderConfig& c = model_.decoder->config();
    val out = val::object();
    out.set("vocabSize", c.vocab);
    out.set("dModel", c.d_model);
    out.set("heads", c.num_heads);
    out.set("layers", c.layers);
    out.set("maxPositions", c.context);
    out.set("dFf", c.d_ff);
    return out;
  }
  std::string piece(int id) const {
    return id >= 0 && id < model_.tokenizer->size() ? model_.tokenizer->piece(id) : "";
  }

  // Splits UTF-8 text into tokens: ids into view("tokens"), byte ranges into "pieceBegin"/"pieceEnd".
  // Returns the number of tokens.
  int tokenize(const std::string& text) {
    const std::vector<mh::TextPiece> pieces = mh::split_text(text);
    tokens_.resize(pieces.size());
    begin_.resize(pieces.size());
    end_.resize(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      tokens_[i] = model_.tokenizer->id(pieces[i].text);
      begin_[i] = pieces[i].begin;
      end_[i] = pieces[i].end;
    }
    return static_cast<int>(pieces.size());
  }

  // Sizes the buffers for a run over n tokens (ids then go into view("tokens")).
  std::string prepare(int n) {
    const mh::DecoderConfig& c = model_.decoder->config();
    if (n < 1 || n > c.context)
      return "the model reads 1 to " + std::to_string(c.context) + " tokens at a time, got " +
             std::to_string(n);
    const size_t nn = size_t(n) * n;
    tokens_.resize(n);
    attention_.resize(size_t(c.layers) * c.num_heads * nn);
    probs_.resize(size_t(n) * c.vocab);
    rollout_.resize(nn);
    head_enabled_.assign(size_t(c.layers) * c.num_heads, 1);
    return "";
  }
  // Runs the model over the n tokens in view("tokens"), with the heads in view("headEnabled")
  // (JS sets 0 to switch one off); fills attention, next-token probabilities and the rollout.
  std::string run(int n) {
    const mh::DecoderConfig& c = model_.decoder->config();
    std::string error = model_.decoder->run(attention_.data(), probs_.data(), tokens_.data(), n,
                                            head_enabled_.data());
    if (error.empty()) mh::attention_rollout(rollout_.data(), attention_.data(), c.layers, c.num_heads, n);
    return error;
  }

  // The buffer JS fills or reads, by name (null for an unknown name).
  val view(const std::string& name) const {
    if (name == "file") return view_of(file_);
    if (name == "tokens") return view_of(tokens_);
    if (name == "pieceBegin") return view_of(begin_);
    if (name == "pieceEnd") return view_of(end_);
    if (name == "attentions") return view_of(attention_);
    if (name == "probabilities") return view_of(probs_);
    if (name == "rollout") return view_of(rollout_);
    if (name == "headEnabled") return view_of(head_enabled_);
    return val::null();
  }

 private:
  mh::LoadedModel model_;
  std::vector<uint8_t> file_, head_enabled_;
  std::vector<int32_t> tokens_, begin_, end_;
  std::vector<float> attention_, probs_, rollout_;
};

}  // namespace

EMSCRIPTEN_BINDINGS(multihead_language_model) {
  emscripten::class_<LanguageModel>("LanguageModel")
      .constructor<>()
      .function("stageFile", &LanguageModel::stageFile)
      .function("load", &LanguageModel::load)
      .function("config", &LanguageModel::config)
      .function("piece", &LanguageModel::piece)
      .function("tokenize", &LanguageModel::tokenize)
      .function("prepare", &LanguageModel::prepare)
      .function("run", &LanguageModel::run)
      .function("view", &LanguageModel::view);
}

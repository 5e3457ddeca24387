// The C layer for the trained language model (src/nn/decoder.h, src/io/model_file.h): one Embind class
// that owns the wasm-heap buffers JavaScript fills and reads. Same protocol as embind.cpp: size the
// buffers, JS copies into view(slot), call, JS copies out; every fallible call returns "" or a
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

enum Slot {
  kFileBytes = 0, kTokens = 1, kPieceBegin = 2, kPieceEnd = 3, kAttention = 4, kProbs = 5,
  kRollout = 6, kHeadEnabled = 7,
};

using bindings::view_of;

class LanguageModel {
 public:
  // Step 1 of loading: room for the .mhlm bytes, which JS copies into view(kFileBytes).
  void stageFile(double bytes) { file_.resize(static_cast<size_t>(bytes)); }
  // Step 2: parse them (the bytes are released either way).
  std::string load() {
    std::string error = mh::load_model(model_, file_.data(), file_.size());
    std::vector<uint8_t>().swap(file_);
    return error;
  }

  // 0 vocab, 1 d_model, 2 num_heads, 3 layers, 4 context, 5 d_ff
  int configValue(int which) const {
    const mh::DecoderConfig& c = model_.decoder->config();
    const int values[] = {c.vocab, c.d_model, c.num_heads, c.layers, c.context, c.d_ff};
    return which >= 0 && which < 6 ? values[which] : -1;
  }
  std::string piece(int id) const {
    return id >= 0 && id < model_.tokenizer->size() ? model_.tokenizer->piece(id) : "";
  }

  // Splits UTF-8 text into tokens: ids into view(kTokens), byte ranges into kPieceBegin/kPieceEnd.
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

  // Sizes the buffers for a run over n tokens (ids then go into view(kTokens)).
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
  // Runs the model over the n tokens in view(kTokens), with the heads in view(kHeadEnabled)
  // (JS sets 0 to switch one off); fills attention, next-token probabilities and the rollout.
  std::string run(int n) {
    const mh::DecoderConfig& c = model_.decoder->config();
    std::string error = model_.decoder->run(attention_.data(), probs_.data(), tokens_.data(), n,
                                            head_enabled_.data());
    if (error.empty()) mh::attention_rollout(rollout_.data(), attention_.data(), c.layers, c.num_heads, n);
    return error;
  }

  val view(int slot) const {
    switch (slot) {
      case kFileBytes: return view_of(file_);
      case kTokens: return view_of(tokens_);
      case kPieceBegin: return view_of(begin_);
      case kPieceEnd: return view_of(end_);
      case kAttention: return view_of(attention_);
      case kProbs: return view_of(probs_);
      case kRollout: return view_of(rollout_);
      case kHeadEnabled: return view_of(head_enabled_);
    }
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
      .function("configValue", &LanguageModel::configValue)
      .function("piece", &LanguageModel::piece)
      .function("tokenize", &LanguageModel::tokenize)
      .function("prepare", &LanguageModel::prepare)
      .function("run", &LanguageModel::run)
      .function("view", &LanguageModel::view);
}

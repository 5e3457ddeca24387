// The C layer for pretrained checkpoints, the model half (src/io/checkpoint.h, src/nn/transformer.h):
// an Embind class that owns a loader, then the model, read-only once loaded; its runs go through
// ContextCore (embind_context.h), any number of them over one model. Same protocol as embind.cpp:
// JS copies into view(name), calls, copies out; every fallible call returns "" or a message.
#pragma once

#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>
#include <malloc.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "embind_views.h"
#include "interpret/logit_attribution.h"
#include "io/checkpoint.h"
#include "nn/families/family.h"
#include "nn/transformer.h"

namespace bindings {

using emscripten::val;

// Bytes the heap can grow by: a lower bound of heap_available(), without mallinfo()'s walk of the
// heap (0.15 ms a call with a model loaded, which a decoding step on 16 threads would feel).
inline double heap_room_above_top() {
  return static_cast<double>(emscripten_get_heap_max()) - static_cast<double>(reinterpret_cast<uintptr_t>(sbrk(0)));
}

// An attribution's totals for JS (its arrays are views: attributionHeads, …).
inline val attribution_totals(const mh::LogitAttribution& a) {
  val out = val::object();
  out.set("embeddings", a.embeddings);
  out.set("biases", a.biases);
  out.set("total", a.total);
  out.set("normBias", a.norm_bias);
  out.set("logitDifference", a.logit_difference);
  return out;
}

// Bytes the heap can still give: what it may grow to, less what is in use now. mallinfo's fields
// are int: past 2 GiB free (a disposed 2.5 GB model) fordblks read negative and refused the next
// load; they count bytes of a 32-bit heap, so as unsigned they are right.
inline double heap_available() {
  const struct mallinfo info = mallinfo();
  const double top = static_cast<double>(reinterpret_cast<uintptr_t>(sbrk(0)));
  return static_cast<double>(emscripten_get_heap_max()) - top + static_cast<double>(static_cast<uint32_t>(info.fordblks));
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
  // A GGUF file from the first n bytes in the stage (of file_size): its metadata is the config. -1
  // and error() when not; needsMore() then says whether more of the file would do.
  int addGguf(const std::string& name, double n, double file_size) {
    int index = -1;
    error_ = loader_->add_gguf(name, stage_.data(), static_cast<uint64_t>(n), static_cast<uint64_t>(file_size), index);
    return error_.empty() ? index : -1;
  }
  bool needsMore() const { return mh::gguf::needs_more(error_); }
  // After addGguf: its metadata as JSON (the tokenizer's vocabulary is there), and the config it implies.
  std::string ggufMetadata() const { return loader_ ? loader_->gguf_metadata_json() : ""; }
  std::string ggufConfig() const { return loader_ ? loader_->gguf_config_json() : ""; }
  // Any GGUF file's metadata from the first n bytes in the stage, as JSON; "" and error() when not.
  std::string readGgufMetadata(double n, double file_size) {
    mh::gguf::File file;
    error_ = mh::gguf::parse(stage_.data(), static_cast<uint64_t>(n), static_cast<uint64_t>(file_size), file);
    return error_.empty() ? mh::gguf::metadata_json(file.metadata) : "";
  }
  double shardBytes(int shard) const { return static_cast<double>(loader_->shard_bytes(shard)); }
  // storage: 0 matrices as stored, 1 fp16, 2 bf16, 3 float32, 4 Q8_0, 5 Q4_0 (mh::MatrixStorage).
  std::string plan(int storage) {
    if (storage < 0 || storage > 5) return "internal: no such matrix storage";
    // Leave a tenth of what is free for the activations of the first runs.
    return loader_->plan(heap_available() * 0.9, static_cast<mh::MatrixStorage>(storage));
  }
  double bytesNeeded() const { return loader_ ? loader_->bytes_needed() : 0; }
  double bytesAvailable() const { return heap_available(); }
  // The next `bytes` bytes of a shard, from the stage.
  std::string feed(int shard, double bytes) { return loader_->feed(shard, stage_.data(), static_cast<size_t>(bytes)); }
  std::string finish() {
    std::unique_ptr<mh::Transformer> model;
    std::string error = loader_->finish(model);
    model_ = std::move(model);
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
    out.set("imageSize", c.image_size);  // 0: a text model
    out.set("patchSize", c.patch_size);
    out.set("channels", c.channels);
    out.set("decoderLayers", c.decoder_layers);  // > 0: an encoder-decoder (layers is the encoder's)
    // Image models: the rows before the patches (1: CLS; 2: CLS and DeiT's distillation token), and
    // whether the logits average a second head on the distillation row (DeiT with its teacher's).
    out.set("prefixTokens", c.image_size > 0 ? c.prefix_tokens : 0);
    out.set("distillationHead", model_->weights().dist_output != nullptr);
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
    switch (model_->matrix_type()) {
      case mh::WeightType::kF16: return "f16";
      case mh::WeightType::kBF16: return "bf16";
      case mh::WeightType::kQ8: return "q8";
      case mh::WeightType::kQ4: case mh::WeightType::kQ4K: case mh::WeightType::kQ40: return "q4";
      case mh::WeightType::kQ6K: return "q6";
      case mh::WeightType::kQ5: case mh::WeightType::kQ5K: return "q5";
      default: return "f32";
    }
  }

  // The model, which every context of it shares (read-only).
  std::shared_ptr<const mh::Transformer> model() const { return model_; }
  // Every model_type the family table knows (nn/families/families.cpp).
  static val supportedModelTypes() {
    val out = val::array();
    for (const std::string& name : mh::supported_model_type_list()) out.call<void>("push", name);
    return out;
  }
  // The names of every activation the model's runs hand their hooks, as [hook id, name] pairs
  // (mh::hook_names; the JS layer asks once a model).
  val hookNames() const {
    val out = val::array();
    for (const auto& [id, name] : mh::hook_names(*model_)) {
      val pair = val::array();
      pair.call<void>("push", id);
      pair.call<void>("push", name);
      out.call<void>("push", pair);
    }
    return out;
  }
  // The buffer JS fills while loading (null for an unknown name).
  val view(const std::string& name) const { return name == "stage" ? view_of(stage_) : val::null(); }

 private:
  std::unique_ptr<mh::CheckpointLoader> loader_ = std::make_unique<mh::CheckpointLoader>();
  std::shared_ptr<const mh::Transformer> model_;
  std::vector<uint8_t> stage_;
  std::string error_;
};

}  // namespace bindings

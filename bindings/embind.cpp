// The C layer between the core and JavaScript: one Embind class that owns the wasm-heap buffers
// JavaScript reads and writes, and passes them to the core. No attention logic lives here.
//
// Protocol (bindings/multihead.mjs is its only caller):
//   1. prepare(...) checks the call's shape and memory budget, then sizes the buffers;
//   2. JS copies its typed arrays into view(name) (views are taken after prepare, since sizing
//      may grow the heap and detach older views);
//   3. forward(...) / trace(...) runs the core; JS copies results out of view(name).
// Every fallible call returns "" or an error message; JS turns a message into an Error. Nothing
// throws across the boundary, so a failed call leaves no C++ object half-built or leaked.
#include <emscripten/bind.h>
#include <emscripten/emscripten.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>
#include <malloc.h>
#include <wasm_simd128.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/eigen_include.h"
#include "core/init.h"
#include "embind_views.h"
#include "core/model.h"
#include "core/gemm.h"
#include "core/gemm_tuning.h"
#include "core/parallel.h"
#include "core/read_streams.h"

using emscripten::val;

namespace {

// The buffers of a Layer, by name in JS (Module.LayerBuffer.queries, …).
enum class LayerBuffer {
  kQueries, kKeysValues, kAdditiveMask, kOutput, kAttentions, kKeyPadding, kBlocked, kPositional, kConcat,
  kTraceQ, kTraceK, kTraceV, kTraceScores, kTraceScaled, kTraceMasked, kTraceAttention, kTraceHeadOutput,
};
enum MaskKind { kNoMask = 0, kBlockedMask = 1, kAdditive = 2 };

mh::Config make_config(int d_model, int num_heads, int num_kv_heads, bool bias, float scale,
                       float temperature = 1.0f) {
  mh::Config c;
  c.d_model = d_model;
  c.num_heads = num_heads;
  c.num_kv_heads = num_kv_heads;
  c.bias = bias;
  c.scale = scale;
  c.temperature = temperature;
  return c;
}

using bindings::view_of;

class Layer {
 public:
  // JS calls validateConfig first: the core's constructor assumes a valid config.
  Layer(int d_model, int num_heads, int num_kv_heads, bool bias, float scale, float temperature)
      : model_(make_config(d_model, num_heads, num_kv_heads, bias, scale, temperature)) {}

  void initSeeded(double seed) { model_.init_seeded(static_cast<uint64_t>(seed)); }
  double weightSize(int which) const { return static_cast<double>(model_.weight_size(which)); }

  // The attention weights to return are heads [first_head, first_head + heads) × query rows
  // [first_row, first_row + rows); heads = 0 returns none.
  std::string prepare(int n_q, int n_k, bool cross, int first_head, int heads, int first_row,
                      int rows, int mask_kind, bool key_padding) {
    const mh::AttentionSelection sel{first_head, heads, first_row, rows};
    const size_t d = model_.config().d_model;
    const size_t nn = size_t(n_q) * n_k;
    const double mask_bytes = double(nn) * (mask_kind == kAdditive ? sizeof(float) : mask_kind == kBlockedMask ? 1 : 0);
    std::string error = mh::validate_selection(model_.config(), n_q, sel);
    if (error.empty()) error = mh::validate_shape(model_.config(), n_q, n_k, sel.floats(n_k), mask_bytes);
    if (!error.empty()) return error;
    selection_ = sel;
    queries_.resize(n_q * d);
    keys_values_.resize(cross ? n_k * d : 0);
    output_.resize(n_q * d);
    attention_.resize(sel.floats(n_k));
    additive_.resize(mask_kind == kAdditive ? nn : 0);
    blocked_.resize(mask_kind == kBlockedMask ? nn : 0);
    key_padding_.resize(key_padding ? n_k : 0);
    return "";
  }

  std::string forward(int n_q, int n_k, bool cross, bool causal, bool key_padding, int mask_kind) {
    return model_.forward(output_.data(), attention_.data(), selection_, queries_.data(),
                          cross ? keys_values_.data() : queries_.data(), n_q, n_k,
                          mask(causal, key_padding, mask_kind));
  }

  // The forward pass plus every intermediate of one head (for the teaching view).
  std::string trace(int head, int n_q, int n_k, bool cross, bool causal, bool key_padding,
                    int mask_kind) {
    std::string error = model_.trace(trace_, head, queries_.data(),
                                     cross ? keys_values_.data() : queries_.data(), n_q, n_k,
                                     mask(causal, key_padding, mask_kind));
    if (!error.empty()) return error;
    return forward(n_q, n_k, cross, causal, key_padding, mask_kind);
  }

  // Sizes the staging buffer of one weight for setWeights.
  void stageWeight(int which) { staged_[which].resize(model_.weight_size(which)); }
  std::string commitWeights(unsigned which_mask) {
    return model_.replace_weights(staged_, which_mask);
  }

  void prepareTorch(bool with_bias) {
    const size_t d = model_.config().d_model;
    torch_[0].resize(3 * d * d);
    torch_[1].resize(with_bias ? 3 * d : 0);
    torch_[2].resize(d * d);
    torch_[3].resize(with_bias ? d : 0);
  }
  std::string loadTorch(bool with_bias) {
    return model_.load_pytorch(torch_[0].data(), with_bias ? torch_[1].data() : nullptr,
                               torch_[2].data(), with_bias ? torch_[3].data() : nullptr);
  }

  std::string positionalEncoding(int n) {
    if (n < 1 || n > mh::kMaxTokens)
      return "positional encoding length must be from 1 to " + std::to_string(mh::kMaxTokens) +
             ", got " + std::to_string(n);
    positional_.resize(size_t(n) * model_.config().d_model);
    mh::sinusoidal_positional_encoding(positional_.data(), n, model_.config().d_model);
    return "";
  }

  // The buffer JS fills or reads, by name: an Embind enum (LayerBuffer in JS), not a string,
  // since a small layer's whole forward call takes microseconds.
  val view(LayerBuffer buffer) const {
    switch (buffer) {
      case LayerBuffer::kQueries: return view_of(queries_);
      case LayerBuffer::kKeysValues: return view_of(keys_values_);
      case LayerBuffer::kAdditiveMask: return view_of(additive_);
      case LayerBuffer::kOutput: return view_of(output_);
      case LayerBuffer::kAttentions: return view_of(attention_);
      case LayerBuffer::kKeyPadding: return view_of(key_padding_);
      case LayerBuffer::kBlocked: return view_of(blocked_);
      case LayerBuffer::kPositional: return view_of(positional_);
      case LayerBuffer::kConcat: return view_of(model_.last_concat());
      case LayerBuffer::kTraceQ: return view_of(trace_.q);
      case LayerBuffer::kTraceK: return view_of(trace_.k);
      case LayerBuffer::kTraceV: return view_of(trace_.v);
      case LayerBuffer::kTraceScores: return view_of(trace_.scores);
      case LayerBuffer::kTraceScaled: return view_of(trace_.scaled);
      case LayerBuffer::kTraceMasked: return view_of(trace_.masked);
      case LayerBuffer::kTraceAttention: return view_of(trace_.attention);
      case LayerBuffer::kTraceHeadOutput: return view_of(trace_.head_output);
    }
    return val::null();
  }
  // Weight `which` (mh::WeightIndex: wq wk wv wo bq bk bv bo): live, or staged for commitWeights.
  val weightView(int which) const {
    if (which < 0 || which >= mh::kNumWeights) return val::null();
    return val(emscripten::typed_memory_view(model_.weight_size(which), model_.weight(which)));
  }
  val stagedView(int which) const { return which >= 0 && which < mh::kNumWeights ? view_of(staged_[which]) : val::null(); }
  // loadTorch's inputs: in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias.
  val torchView(int which) const { return which >= 0 && which < 4 ? view_of(torch_[which]) : val::null(); }

 private:
  mh::MaskSpec mask(bool causal, bool key_padding, int mask_kind) const {
    mh::MaskSpec m;
    m.causal = causal;
    m.key_padding = key_padding ? key_padding_.data() : nullptr;
    m.blocked = mask_kind == kBlockedMask ? blocked_.data() : nullptr;
    m.additive = mask_kind == kAdditive ? additive_.data() : nullptr;
    return m;
  }

  mh::AttentionModel model_;
  mh::AttentionSelection selection_;
  std::vector<float> queries_, keys_values_, additive_, output_, attention_, positional_;
  std::vector<uint8_t> key_padding_, blocked_;
  std::vector<float> staged_[mh::kNumWeights];
  std::vector<float> torch_[4];
  mh::HeadTrace trace_;
};

std::string validateConfig(int d_model, int num_heads, int num_kv_heads, bool bias, float scale,
                           float temperature) {
  return mh::validate_config(make_config(d_model, num_heads, num_kv_heads, bias, scale, temperature));
}
double parameterCount(int d_model, int num_heads, int num_kv_heads, bool bias) {
  return static_cast<double>(mh::parameter_count(make_config(d_model, num_heads, num_kv_heads, bias, 0)));
}
// For tests and diagnostics: proof that Eigen runs vectorized, and that failed calls leak nothing.
int simdFloatsPerPacket() { return mh::simd_floats_per_packet(); }
double heapBytes() { return static_cast<double>(emscripten_get_heap_size()); }
double allocatedBytes() { return static_cast<double>(static_cast<uint32_t>(mallinfo().uordblks)); }  // an int of a 32-bit heap
// Threads (parallel.h): 1 in the single-thread build whatever is asked.
int setThreadCount(int threads) { return mh::set_thread_count(threads); }
std::string gemmKernel() { return mh::gemm_kernel_name(); }
// Prefill over 8- / 4-bit blocks by integer tiles (true) or widened into float32 panels (core/gemm.h),
// for the benchmark and tests.
void setIntegerBlockTiles(bool on) { mh::set_integer_block_tiles(on); }
// The products over blocks by the integer dot-add or not (core/gemm_tuning.h), for the benchmark
// and tests: false (nothing changed) where on was asked and it did not measure exact here.
bool setIntegerDotAdd(bool on) { return mh::set_integer_dot_add(on); }
int threadCount() { return mh::thread_count(); }
// The thread-scaling benchmark's profile (core/parallel.h): { totalMs, phases, phaseMs, regions:
// [{ phase, wallMs, taskMs, slotMs }] }.
void threadProfileBegin(int split_as) { mh::profile_begin(split_as); }
emscripten::val threadProfileEnd() {
  const mh::ThreadProfile p = mh::profile_end();
  auto array_of = [](const auto& values) {
    emscripten::val out = emscripten::val::array();
    for (const auto& v : values) out.call<void>("push", static_cast<double>(v));
    return out;
  };
  emscripten::val out = emscripten::val::object();
  out.set("totalMs", p.total_ms);
  emscripten::val phases = emscripten::val::array();
  for (const std::string& name : p.phases) phases.call<void>("push", name);
  out.set("phases", phases);
  out.set("phaseMs", array_of(p.phase_ms));
  emscripten::val regions = emscripten::val::array();
  for (const mh::ParallelRegion& r : p.regions) {
    emscripten::val region = emscripten::val::object();
    region.set("phase", r.phase);
    region.set("wallMs", r.wall_ms);
    region.set("taskMs", array_of(r.task_ms));
    region.set("slotMs", array_of(r.slot_ms));
    regions.call<void>("push", region);
  }
  out.set("regions", regions);
  return out;
}
// For the benchmarks: GB/s of reading `megabytes` once, split over the threads as a decoding step's
// products split their weights (the best of `repeats`, each chunk read as one stream and as its
// four quarters side by side, which memory reads faster where a page's first misses cost:
// docs/performance.md, "Decoding over blocks: streams side by side"): a step reads every weight
// once, so this is its bound at the thread count.
double readBandwidth(double megabytes, int repeats) {
  static std::vector<float> buffer;
  const size_t count = static_cast<size_t>(megabytes * (1 << 20) / sizeof(float)) / 64 * 64;
  if (buffer.size() != count) buffer.assign(count, 1.0f);
  constexpr int kChunks = 512;
  const size_t per_chunk = (count / kChunks + 63) / 64 * 64;
  std::vector<float> sums(kChunks);
  double best = 0;
  for (int r = 0; r < repeats; ++r)
    for (const bool quarters : {false, true}) {
      const double start = emscripten_get_now();
      mh::parallel_for(kChunks, [&](int chunk, int) {
        const float* x = buffer.data() + std::min(count, chunk * per_chunk);
        const float* end = buffer.data() + std::min(count, (chunk + 1) * per_chunk);
        const size_t floats = static_cast<size_t>(end - x) / 64 * 64;
        sums[chunk] = quarters ? mh::sum_in_streams<4>(x, floats) : mh::sum_in_streams<1>(x, floats);
      });
      const double seconds = (emscripten_get_now() - start) / 1000;
      best = std::max(best, count * sizeof(float) / seconds / 1e9);
    }
  return sums[0] < 0 ? 0 : best;  // read the sums: the loop must not be optimised away
}
// What the first checkpoint big enough measured of touching ahead (core/gemm_tuning.h).
emscripten::val touchTuning() {
  const mh::TouchTuning t = mh::touch_tuning();
  emscripten::val out = emscripten::val::object();
  out.set("tuned", t.tuned);
  out.set("fromRows", t.from_rows);
  out.set("msWith", t.ms_with);
  out.set("msWithout", t.ms_without);
  return out;
}
// What the first product over blocks measured of the integer dot-add (core/gemm_tuning.h).
emscripten::val dotAddTuning() {
  const mh::DotAddTuning t = mh::dot_add_tuning();
  emscripten::val out = emscripten::val::object();
  out.set("measured", t.measured);
  out.set("exact", t.exact);
  out.set("msOn", t.ms_on);
  out.set("msOff", t.ms_off);
  out.set("ratio", t.ratio);
  out.set("on", t.on);
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(multihead) {
  emscripten::enum_<LayerBuffer>("LayerBuffer")
      .value("queries", LayerBuffer::kQueries)
      .value("keysValues", LayerBuffer::kKeysValues)
      .value("additiveMask", LayerBuffer::kAdditiveMask)
      .value("output", LayerBuffer::kOutput)
      .value("attentions", LayerBuffer::kAttentions)
      .value("keyPadding", LayerBuffer::kKeyPadding)
      .value("blocked", LayerBuffer::kBlocked)
      .value("positional", LayerBuffer::kPositional)
      .value("concat", LayerBuffer::kConcat)
      .value("q", LayerBuffer::kTraceQ)
      .value("k", LayerBuffer::kTraceK)
      .value("v", LayerBuffer::kTraceV)
      .value("scores", LayerBuffer::kTraceScores)
      .value("scaled", LayerBuffer::kTraceScaled)
      .value("masked", LayerBuffer::kTraceMasked)
      .value("attention", LayerBuffer::kTraceAttention)
      .value("headOutput", LayerBuffer::kTraceHeadOutput);
  emscripten::class_<Layer>("Layer")
      .constructor<int, int, int, bool, float, float>()
      .function("initSeeded", &Layer::initSeeded)
      .function("weightSize", &Layer::weightSize)
      .function("prepare", &Layer::prepare)
      .function("forward", &Layer::forward)
      .function("trace", &Layer::trace)
      .function("stageWeight", &Layer::stageWeight)
      .function("commitWeights", &Layer::commitWeights)
      .function("prepareTorch", &Layer::prepareTorch)
      .function("loadTorch", &Layer::loadTorch)
      .function("positionalEncoding", &Layer::positionalEncoding)
      .function("view", &Layer::view)
      .function("weightView", &Layer::weightView)
      .function("stagedView", &Layer::stagedView)
      .function("torchView", &Layer::torchView);
  emscripten::function("validateConfig", &validateConfig);
  emscripten::function("parameterCount", &parameterCount);
  emscripten::function("simdFloatsPerPacket", &simdFloatsPerPacket);
  emscripten::function("heapBytes", &heapBytes);
  emscripten::function("allocatedBytes", &allocatedBytes);
  emscripten::function("setThreadCount", &setThreadCount);
  emscripten::function("gemmKernel", &gemmKernel);
  emscripten::function("setIntegerBlockTiles", &setIntegerBlockTiles);
  emscripten::function("setIntegerDotAdd", &setIntegerDotAdd);
  emscripten::function("dotAddTuning", &dotAddTuning);
  emscripten::function("threadCount", &threadCount);
  emscripten::function("threadProfileBegin", &threadProfileBegin);
  emscripten::function("threadProfileEnd", &threadProfileEnd);
  emscripten::function("readBandwidth", &readBandwidth);
  emscripten::function("touchTuning", &touchTuning);
  emscripten::constant("maxTokens", mh::kMaxTokens);
}

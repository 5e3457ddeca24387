#include "io/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/gemm_tuning.h"
#include "core/parallel.h"
#include "io/ggml_types.h"
#include "io/hf_config.h"
#include "io/model_file.h"

namespace mh {

namespace {
using safetensors::DType;

bool weight_type_of(DType t, WeightType& out) {
  switch (t) {
    case DType::kF32: out = WeightType::kF32; return true;
    case DType::kF16: out = WeightType::kF16; return true;
    case DType::kBF16: out = WeightType::kBF16; return true;
    default: return false;
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The shape a source tensor must have for a destination cut as spec says.
std::vector<int64_t> source_shape(const ParamSpec& p) {
  switch (p.layout) {
    case Layout::kCopy: return p.matrix ? std::vector<int64_t>{p.rows, p.cols} : std::vector<int64_t>{p.cols};
    case Layout::kTranspose: return {p.cols, p.rows};
    case Layout::kColumns: return {p.rows, p.cols * p.parts};
    case Layout::kRange: return {p.cols * p.parts};
    case Layout::kPerHead: return p.matrix ? std::vector<int64_t>{p.cols * p.parts, p.rows} : std::vector<int64_t>{p.cols * p.parts};
  }
  return {};
}

// Where source element (row r, column c) of a source with `cols` columns and `rows` rows goes in
// the destination, or -1 when it belongs to another part.
int64_t destination_index(const ParamSpec& p, int64_t rows, int64_t cols, int64_t r, int64_t c) {
  switch (p.layout) {
    case Layout::kCopy: return r * cols + c;
    case Layout::kTranspose: return c * rows + r;
    case Layout::kColumns:
    case Layout::kRange: {
      const int64_t from = p.part * p.cols;
      return c >= from && c < from + p.cols ? r * p.cols + (c - from) : -1;
    }
    case Layout::kPerHead: {
      // The output feature: a matrix's source row, a vector's element.
      const int64_t feature = p.matrix ? r : c, g = p.group;
      const int64_t head = feature / (g * p.parts), within = feature % (g * p.parts);
      if (within / g != p.part) return -1;
      const int64_t column = head * g + within % g;
      return p.matrix ? c * p.cols + column : column;
    }
  }
  return -1;
}

// A destination's row-major element index → where the tensor stores it (its panel layout), or -1.
int64_t stored_index(const Tensor& t, int64_t flat) {
  return flat < 0 ? -1 : t.index(flat / t.cols, flat % t.cols);
}

// The same destination read from the transpose of the source the spec expects: GGUF's GPT-2 keeps
// nn.Linear's [out][in] where the hub's Conv1D is [in][out]. A fused Q/K/V's columns become rows.
ParamSpec transposed_source(ParamSpec p) {
  switch (p.layout) {
    case Layout::kCopy: p.layout = Layout::kTranspose; break;
    case Layout::kTranspose: p.layout = Layout::kCopy; break;
    case Layout::kColumns: p.layout = Layout::kPerHead; p.group = static_cast<int>(p.cols); break;  // one "head"
    default: break;  // vectors are the same either way
  }
  return p;
}

// llama.cpp's rotary-pairs order → the hub's, within one head of head_dim: GGUF feature 2i + j is
// the hub's j·head_dim/2 + i.
int64_t unpermuted_feature(int64_t feature, int head_dim) {
  const int64_t head = feature / head_dim, within = feature % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

// Zeroes every tensor's bytes, 1 MB pieces spread over the threads. This is the first touch of all the
// memory the weights take, and a fresh page's first touch is a page fault: the threads take theirs side
// by side (Node on this Firecracker VM: ~3.5 ns a byte first time, ~0.1 after; docs/performance.md).
void zero_in_parallel(std::map<std::string, Tensor>& tensors) {
  constexpr int64_t kPiece = int64_t{1} << 20;
  std::vector<std::pair<uint8_t*, int64_t>> pieces;
  for (auto& [name, t] : tensors)
    for (int64_t at = 0; at < static_cast<int64_t>(t.bytes.size()); at += kPiece)
      pieces.emplace_back(t.bytes.data() + at, std::min<int64_t>(kPiece, static_cast<int64_t>(t.bytes.size()) - at));
  parallel_for(static_cast<int>(pieces.size()), [&](int i, int) {
    std::memset(pieces[static_cast<size_t>(i)].first, 0, static_cast<size_t>(pieces[static_cast<size_t>(i)].second));
  });
}

void source_rows_cols(const safetensors::TensorInfo& t, int64_t& rows, int64_t& cols) {
  cols = t.shape.empty() ? 1 : t.shape.back();
  rows = cols > 0 ? t.elements() / cols : 0;
}
}  // namespace

std::string CheckpointLoader::set_config(const std::string& config_json) {
  std::string error = read_hf_config(config_json, config_);
  has_config_ = error.empty();
  return error;
}

std::string CheckpointLoader::add_shard(const std::string& file_name, const uint8_t* header_json, uint64_t n,
                                        uint64_t file_size, int& index) {
  if (planned_) return "add every shard before plan()";
  Shard shard;
  shard.name = file_name;
  std::string error = safetensors::parse_header(header_json, n, file_size, shard.header);
  if (!error.empty()) return file_name + ": " + error;
  shard.bytes = shard.header.file_bytes;
  index = static_cast<int>(shards_.size());
  shards_.push_back(std::move(shard));
  return "";
}

std::string CheckpointLoader::add_gguf(const std::string& file_name, const uint8_t* bytes, uint64_t size,
                                       uint64_t file_size, int& index) {
  if (planned_ || !shards_.empty() || has_config_) return "a GGUF file is the whole model: load it alone";
  Shard shard;
  shard.name = file_name;
  shard.bytes = file_size;
  shard.gguf = std::make_unique<GgufModel>();
  if (std::string error = read_gguf_model(bytes, size, file_size, *shard.gguf); !error.empty())
    return gguf::needs_more(error) ? error : file_name + ": " + error;
  if (std::string error = set_config(shard.gguf->config_json); !error.empty()) return file_name + ": " + error;
  // The hub's tensors, laid end to end as float32 (F16 and BF16 as they are).
  uint64_t at = 0;
  for (const GgufTensor& t : shard.gguf->tensors) {
    if (t.hub_name == kGgufRopeFactors) continue;
    safetensors::TensorInfo info;
    info.name = t.hub_name;
    info.dtype = t.info->type == ggml::kF16 ? DType::kF16 : t.info->type == ggml::kBF16 ? DType::kBF16 : DType::kF32;
    info.shape = t.shape();
    info.begin = at;
    info.end = at += static_cast<uint64_t>(info.elements()) * safetensors::dtype_bytes(info.dtype);
    shard.header.tensors.push_back(std::move(info));
    shard.gguf_sources.push_back(&t);
  }
  shard.header.file_bytes = at;
  index = 0;
  shards_.push_back(std::move(shard));
  return "";
}

std::string CheckpointLoader::gguf_metadata_json() const {
  return shards_.size() == 1 && shards_[0].gguf ? gguf::metadata_json(shards_[0].gguf->file.metadata) : "";
}

std::string CheckpointLoader::gguf_config_json() const {
  return shards_.size() == 1 && shards_[0].gguf ? shards_[0].gguf->config_json : "";
}

std::string CheckpointLoader::plan(double available_bytes, MatrixStorage storage) {
  if (!has_config_) return "load config.json first";
  if (shards_.empty()) return "no weights: the checkpoint needs model.safetensors (or its shards)";
  by_name_.clear();
  for (int s = 0; s < static_cast<int>(shards_.size()); ++s)
    for (const auto& t : shards_[s].header.tensors) {
      if (by_name_.count(t.name))
        return "tensor \"" + t.name + "\" is in two shards (" + shards_[by_name_[t.name].shard].name + " and " +
               shards_[s].name + ")";
      by_name_[t.name] = {s, &t};
    }
  // The family's names carry one of a few prefixes, depending on the class that saved them.
  const std::string probe = config_.family->probe_tensor;
  std::string prefix;
  bool found = false;
  for (const std::string& p : config_.family->prefixes)
    if (!found && by_name_.count(p + probe)) { prefix = p; found = true; }
  if (!found)
    return "the weights have no \"" + probe + "\" tensor (with or without a prefix): they are not " +
           config_.model_type + " weights, or config.json belongs to another model";

  struct Planned { ParamSpec spec; Source source; };
  std::vector<Planned> planned;
  double bytes = 0;
  for (const ParamSpec& spec : config_.family->params(config_)) {
    const Source* source = nullptr;
    std::string tried;
    for (const std::string& name : spec.sources) {
      const std::string full = (spec.unprefixed ? "" : prefix) + name;
      auto it = by_name_.find(full);
      if (it != by_name_.end()) { source = &it->second; break; }
      if (tried.empty()) tried = full;
    }
    if (!source) {
      if (spec.optional) continue;
      return "the weights have no tensor \"" + tried + "\", which a " + config_.model_type +
             " model with this config.json needs (is a shard missing?)";
    }
    ParamSpec spec_read = spec;
    if (const Shard& sh = shards_[source->shard]; sh.gguf) {
      const GgufTensor& t = *sh.gguf_sources[source->info - sh.header.tensors.data()];
      if (t.transposed) spec_read = transposed_source(spec);
      if (sh.gguf->architecture->norms_stored_plus_one) spec_read.offset = 0;
    }
    WeightType type;
    if (!weight_type_of(source->info->dtype, type))
      return "tensor \"" + source->info->name + "\" is stored as " + safetensors::dtype_name(source->info->dtype) +
             ": only F32, F16 and BF16 weights are supported";
    const std::vector<int64_t> want = spec_read.source_dims.empty() ? source_shape(spec_read) : spec_read.source_dims;
    if (source->info->shape != want)
      return "tensor \"" + source->info->name + "\" has shape " + shape_text(source->info->shape) + " but config.json implies " +
             shape_text(want) + ": the weights do not match the config";
    planned.push_back({spec_read, *source});
  }
  // A GGUF file's Q8_0, Q5_0, Q4_0, Q4_1, Q4_K and Q6_K matrices stay in blocks (core/blocks.h) where
  // products read them whole: nn.Linear weights (a row of the file is a column of ours), K whole
  // blocks, and the output projection's heads too (switching a head off zeroes its rows' blocks).
  // A safetensors checkpoint asked for as kQ8_0 / kQ4_0 quantizes the same matrices.
  const bool quantizing = storage == MatrixStorage::kQ8_0 || storage == MatrixStorage::kQ4_0;
  for (const Shard& sh : shards_)
    if (quantizing && sh.gguf)
      return "a GGUF file keeps the types it was quantized to: weightType 'q8_0' and 'q4_0' quantize safetensors "
             "checkpoints (leave weightType out, or use 'f32' or 'bf16')";
  auto block_type = [&](const Planned& p) -> WeightType {
    const Shard& sh = shards_[p.source.shard];
    if (!(sh.gguf ? storage == MatrixStorage::kAsStored : quantizing) || !p.spec.matrix || !p.spec.panels ||
        p.spec.layout != Layout::kTranspose || p.spec.rows % kBlockRows != 0 || !p.spec.source_dims.empty())
      return WeightType::kF32;
    const std::string& name = p.spec.name;
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".wo") == 0 && config_.head_dim % kBlockRows != 0)
      return WeightType::kF32;
    if (!sh.gguf) return storage == MatrixStorage::kQ8_0 ? WeightType::kQ8 : WeightType::kQ40;
    const uint32_t stored = sh.gguf_sources[p.source.info - sh.header.tensors.data()]->info->type;
    switch (ggml::regrouping(stored)) {
      case ggml::Regrouping::kEight: return WeightType::kQ8;
      case ggml::Regrouping::kFour:  // Q4_K keeps its integer scales (core/blocks.h, kQ4K), Q4_0 no mins (kQ40)
        if (stored == ggml::kQ4_0) return WeightType::kQ40;
        return stored == ggml::kQ4_K && p.spec.rows % kSuperRows == 0 ? WeightType::kQ4K : WeightType::kQ4;
      case ggml::Regrouping::kSix:  // Q6_K keeps its integer scales (core/blocks.h, kQ6K); GGUF's rows are whole super-blocks
        return p.spec.rows % kSuperRows == 0 ? WeightType::kQ6K : WeightType::kF32;
      case ggml::Regrouping::kFive:  // Q5_K keeps its integer scales (core/blocks.h, kQ5K)
        return stored == ggml::kQ5_K && p.spec.rows % kSuperRows == 0 ? WeightType::kQ5K : WeightType::kQ5;
      default: return WeightType::kF32;
    }
  };
  // Other matrices keep their stored type (or the one asked for), unless the checkpoint mixes
  // types: a mixed checkpoint is widened whole. Vectors (biases, norms) are float32.
  bool mixed = false;
  const Planned* first_matrix = nullptr;
  for (const Planned& p : planned) {
    if (!p.spec.matrix || is_block_type(block_type(p))) continue;
    if (!first_matrix) first_matrix = &p;
    mixed |= p.source.info->dtype != first_matrix->source.info->dtype;
  }
  // A GGUF file whose other matrices do not fit as float32 keeps its blocks and narrows those to
  // bf16 (an F16 head, or a tied embedding, can be most of a file's bytes once widened).
  bool narrow_rest = false;
  auto kept_type = [&](const Planned& p) {
    if (!p.spec.matrix) return WeightType::kF32;
    if (storage == MatrixStorage::kF16) return WeightType::kF16;
    if (storage == MatrixStorage::kBF16) return WeightType::kBF16;
    if (storage == MatrixStorage::kF32) return WeightType::kF32;
    if (const WeightType blocks = block_type(p); is_block_type(blocks)) return blocks;
    if (narrow_rest) return WeightType::kBF16;
    WeightType stored = WeightType::kF32;
    weight_type_of(p.source.info->dtype, stored);
    return mixed ? WeightType::kF32 : stored;
  };
  double at_two_bytes = 0;  // what the weights would need with every matrix at 2 bytes
  auto count_bytes = [&] {
    bytes = at_two_bytes = 0;
    for (const Planned& p : planned) {
      const WeightType type = kept_type(p);
      bytes += is_block_type(type) ? double(block_matrix_bytes(type, p.spec.rows, p.spec.cols))
                                   : double(p.spec.rows) * p.spec.cols * weight_type_bytes(type);
      at_two_bytes += double(p.spec.rows) * p.spec.cols * (p.spec.matrix ? 2 : 4);
    }
  };
  count_bytes();
  bool any_gguf = false;
  for (const Shard& sh : shards_) any_gguf |= static_cast<bool>(sh.gguf);
  if (bytes > available_bytes && storage == MatrixStorage::kAsStored && any_gguf) {
    narrow_rest = true;
    count_bytes();
  }
  bytes_needed_ = bytes;
  auto mb = [](double b) { return std::to_string(static_cast<long long>(b / 1e6)); };
  if (bytes > available_bytes) {
    const bool narrowing_helps = at_two_bytes <= available_bytes && at_two_bytes < bytes;
    return "this model needs " + mb(bytes) + " MB for its weights" +
           (narrow_rest ? " (its 8-, 6-, 5- and 4-bit blocks kept, its other matrices widened to bf16)" : "") + " but only " + mb(available_bytes) +
           " MB of memory are available here: choose a smaller model" +
           (narrowing_helps ? ", or load this one with its weights at 2 bytes (weightType 'f16' or 'bf16': " +
                                  mb(at_two_bytes) + " MB)"
                            : "");
  }

  for (const Planned& p : planned) {
    WeightType source_type = WeightType::kF32;
    weight_type_of(p.source.info->dtype, source_type);
    Tensor& t = tensors_[p.spec.name];
    t.type = kept_type(p);
    t.rows = p.spec.rows;
    t.cols = p.spec.cols;
    t.panels = p.spec.matrix && p.spec.panels;
    t.bytes.resize(static_cast<size_t>(t.stored_bytes()));  // zeroed below
    shards_[p.source.shard].scatters.push_back({p.source.info, source_type, p.spec, &t, {}, {}, {}});
    if (p.spec.offset != 0.0f) offsets_.emplace_back(p.spec.name, p.spec.offset);
  }
  zero_in_parallel(tensors_);
  planned_ = true;
  return "";
}

namespace {

// One stored float32, float16 or bfloat16 value.
float element_as_float(WeightType type, const uint8_t* in) {
  float x;
  if (type == WeightType::kF32) {
    std::memcpy(&x, in, 4);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, in, 2);
  return type == WeightType::kBF16 ? bf16_to_float(h) : half_to_float(h);
}

}  // namespace

void CheckpointLoader::put(const Scatter& s, int64_t dest, const uint8_t* in) {
  if (dest < 0) return;
  const WeightType to = s.dest->type;
  uint8_t* out = s.dest->bytes.data() + dest * weight_type_bytes(to);
  if (to == s.source_type) {
    std::memcpy(out, in, static_cast<size_t>(weight_type_bytes(to)));
    return;
  }
  const float x = element_as_float(s.source_type, in);
  if (to == WeightType::kF32) {
    std::memcpy(out, &x, 4);
    return;
  }
  const uint16_t h = to == WeightType::kBF16 ? float_to_bf16(x) : float_to_half(x);
  if (to == WeightType::kF16 && (h & 0x7fffu) == 0x7c00u && std::isfinite(x) && overflow_.empty()) {
    overflow_ = "weight " + s.source->name + " holds " + std::to_string(x) +
                ", beyond float16's range (±65504): load the model as bf16 (float32's range) or as stored";
  }
  std::memcpy(out, &h, 2);
}

// A source row (nn.Linear's [out][in]: one column of the destination) quantized as llama.cpp would
// (ggml::quantize_row), then kept as that type's blocks are kept from a GGUF file.
void CheckpointLoader::quantize_column(Scatter& s, int64_t column) {
  const int64_t n = static_cast<int64_t>(s.row.size());
  const uint32_t type = s.dest->type == WeightType::kQ8 ? ggml::kQ8_0 : ggml::kQ4_0;
  for (float& x : s.row)
    if (!std::isfinite(x)) {  // a block's scale would be inf or NaN: refused at finish(), by name
      if (overflow_.empty())
        overflow_ = "weight " + s.source->name + " holds " + std::to_string(x) +
                    ": a matrix with infinite or NaN weights cannot be quantized (load it without weightType 'q8_0' / 'q4_0')";
      x = 0.0f;
    }
  thread_local std::vector<uint8_t> quantized;
  quantized.resize(static_cast<size_t>(n / kBlockRows * ggml::type_info(type)->bytes));
  ggml::quantize_row(type, s.row.data(), quantized.data(), n);
  stage_column(s, type, quantized.data(), column);
}

void CheckpointLoader::stage_column(Scatter& s, uint32_t type, const uint8_t* row, int64_t column) {
  const Tensor& dest = *s.dest;
  const int64_t K = dest.rows, blocks = K / kBlockRows, panel = column / 8;
  const int64_t columns = std::min<int64_t>(8, dest.cols - 8 * panel);  // the last panel may have fewer
  const int per_block = block_float_bytes(dest.type) / 4;
  // The panel's stage, or a free one (rotary-permuted Q/K rows keep a head's panels open at once).
  PanelStage* stage = nullptr;
  for (PanelStage& p : s.panels)
    if (p.panel == panel || (!stage && p.panel < 0)) stage = &p;
  if (!stage || stage->panel != panel) {
    if (!stage) stage = &s.panels.emplace_back();
    stage->panel = panel;
    stage->filled = 0;
    stage->q.resize(static_cast<size_t>(8 * K));
    stage->floats.resize(static_cast<size_t>(blocks * per_block));
    if (columns < 8) {  // the columns past the matrix are zeros, as a zeroed block holds
      std::fill(stage->q.begin(), stage->q.end(), int8_t{0});
      std::fill(stage->floats.begin(), stage->floats.end(), 0.0f);
    }
  }
  thread_local std::vector<float> scales;  // [K/32] and mins [K/32] (Q6_K's d · sc: [K/16], both halves)
  scales.resize(static_cast<size_t>(2 * blocks));
  float* mins = scales.data() + blocks;
  const int c = static_cast<int>(column % 8);
  int8_t* q = stage->q.data() + c * K;
  if (has_q4k_meta(dest.type)) {  // the super-block's shares, 8 blocks' 32 bytes, are contiguous in the stage
    thread_local std::vector<uint8_t> integers;  // sc [K/32], then m [K/32]
    integers.resize(static_cast<size_t>(2 * blocks));
    uint8_t *sc = integers.data(), *m = sc + blocks;
    if (dest.type == WeightType::kQ5K) ggml::regroup_q5_k_row(row, K, scales.data(), mins, sc, m, q);
    else ggml::regroup_q4_k_row(row, K, scales.data(), mins, sc, m, q);
    for (int64_t s = 0; s < K / kSuperRows; ++s) {
      uint8_t* shares = reinterpret_cast<uint8_t*>(stage->floats.data() + s * kSuperBlocks * per_block);
      std::memcpy(shares + 4 * c, &scales[s], 4);
      std::memcpy(shares + 32 + 4 * c, &mins[s], 4);
      for (int j = 0; j < kSuperBlocks; ++j) {
        shares[q4k_m_byte(j, c)] = m[s * kSuperBlocks + j];
        shares[q4k_sc_byte(j, c)] = shares[q4k_sc_byte(j, c) + 1] = sc[s * kSuperBlocks + j];
      }
    }
  } else if (dest.type == WeightType::kQ6K) {  // each block's sc of its two halves, then its share of d
    thread_local std::vector<int8_t> sc;  // [K/16]
    sc.resize(static_cast<size_t>(K / 16));
    ggml::regroup_q6_k_row(row, K, scales.data(), sc.data(), q);
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* share = reinterpret_cast<uint8_t*>(stage->floats.data() + b * per_block);
      for (int half = 0; half < 2; ++half) share[q6k_sc_byte(half, c)] = static_cast<uint8_t>(sc[2 * b + half]);
      // Blocks 0 and 1 hold d of columns 0–3 and 4–7 (q6k_d), the others zeros.
      const int j = static_cast<int>(b % kSuperBlocks);
      if (j == c / 4 || j >= 2) {
        const float d = j < 2 ? scales[b / kSuperBlocks] : 0.0f;
        std::memcpy(share + 16 + 4 * (c % 4), &d, 4);
      }
    }
  } else {
    ggml::regroup_row(type, row, K, scales.data(), mins, q);
  }
  store_block_values(dest.type, q, K);
  float* floats = stage->floats.data();
  for (int64_t b = 0; b < blocks && !has_super_blocks(dest.type); ++b) {
    floats[b * per_block + c] = scales[b];
    if (per_block == 16) floats[b * per_block + 8 + c] = mins[b];
  }
  if (++stage->filled < columns) return;
  uint8_t* out = s.dest->bytes.data() + block_offset(dest.type, 0, 8 * panel, K);  // a panel's blocks are consecutive
  for (int64_t b = 0; b < blocks; ++b)
    write_block_panel(dest.type, out + b * block_bytes(dest.type), stage->q.data() + b * kBlockRows, K, floats + b * per_block);
  stage->panel = -1;
}

void CheckpointLoader::scatter_bytes(Scatter& s, uint64_t lo, uint64_t hi, const uint8_t* bytes, uint64_t offset) {
  // lo, hi: byte offsets relative to the source tensor's first byte; bytes[0] is file byte `offset`.
  const uint8_t* in = bytes + (s.source->begin + lo - offset);
  if (is_block_type(s.dest->type)) {  // quantized while loading: a source row at a time
    const uint64_t es = static_cast<uint64_t>(weight_type_bytes(s.source_type));
    const int64_t cols = s.dest->rows;  // the source row's length
    s.row.resize(static_cast<size_t>(cols));
    const auto take = [&](uint64_t element, const uint8_t* value) {
      const int64_t r = static_cast<int64_t>(element) / cols, c = static_cast<int64_t>(element) % cols;
      s.row[static_cast<size_t>(c)] = element_as_float(s.source_type, value);
      if (c == cols - 1) quantize_column(s, r);
    };
    for (uint64_t at = lo; at < hi;) {
      if (at % es != 0 || at + es > hi) {  // an element split across chunks: gathered byte by byte
        s.split[at % es] = *in++;
        if (++at % es == 0) take(at / es - 1, s.split);
        continue;
      }
      take(at / es, in);
      at += es;
      in += es;
    }
    return;
  }
  if (s.spec.layout == Layout::kCopy && !s.dest->panels && s.dest->type == s.source_type) {
    std::memcpy(s.dest->bytes.data() + lo, in, hi - lo);
    return;
  }
  const uint64_t es = static_cast<uint64_t>(weight_type_bytes(s.source_type));
  int64_t rows, cols;
  source_rows_cols(*s.source, rows, cols);
  if (!s.spec.source_dims.empty()) {  // read as the layout's 2-D shape (ParamSpec::source_dims)
    cols = source_shape(s.spec).back();
    rows = s.source->elements() / cols;
  }
  uint64_t at = lo;
  while (at < hi) {
    const int64_t e = static_cast<int64_t>(at / es);
    const int64_t r = e / cols, c0 = e % cols;
    if (at % es != 0 || at + es > hi) {  // an element split across chunks: gathered byte by byte
      s.split[at % es] = *in;
      ++at;
      ++in;
      if (at % es == 0) put(s, stored_index(*s.dest, destination_index(s.spec, rows, cols, r, c0)), s.split);
      continue;
    }
    // Whole elements along the rest of this source row.
    const int64_t run = std::min<int64_t>((hi - at) / es, cols - c0);
    for (int64_t i = 0; i < run; ++i)
      put(s, stored_index(*s.dest, destination_index(s.spec, rows, cols, r, c0 + i)), in + i * es);
    at += run * es;
    in += run * es;
  }
}

std::string CheckpointLoader::feed(int shard, const uint8_t* bytes, size_t size) {
  if (!planned_) return "plan() the checkpoint before feeding its bytes";
  if (shard < 0 || shard >= static_cast<int>(shards_.size())) return "no such shard";
  Shard& sh = shards_[shard];
  if (sh.gguf) return feed_gguf(sh, bytes, size);
  const uint64_t offset = sh.fed, end = offset + size;
  if (end > sh.bytes)
    return sh.name + " is longer than its header says (" + std::to_string(sh.bytes) + " bytes): it is corrupt";
  for (Scatter& s : sh.scatters) {
    const uint64_t lo = std::max(offset, s.source->begin), hi = std::min(end, s.source->end);
    if (lo < hi) scatter_bytes(s, lo - s.source->begin, hi - s.source->begin, bytes, offset);
  }
  sh.fed = end;
  return "";
}

std::string CheckpointLoader::feed_gguf(Shard& sh, const uint8_t* bytes, size_t size) {
  const uint64_t offset = sh.fed, end = offset + size;
  if (end > sh.bytes) return sh.name + " is longer than the size it was registered with: it changed while loading";
  if (sh.scatters_of.empty()) {
    sh.scatters_of.resize(sh.header.tensors.size());
    for (int i = 0; i < static_cast<int>(sh.scatters.size()); ++i)
      sh.scatters_of[sh.scatters[i].source - sh.header.tensors.data()].push_back(i);
  }
  int header_index = 0;
  for (const GgufTensor& t : sh.gguf->tensors) {
    const int index = t.hub_name == kGgufRopeFactors ? -1 : header_index++;
    const uint64_t begin = t.info->begin, lo = std::max(offset, begin), hi = std::min(end, begin + t.info->bytes);
    if (lo >= hi || (index >= 0 && sh.scatters_of[index].empty())) continue;
    const uint64_t row_bytes = t.info->bytes / static_cast<uint64_t>(t.info->elements() / t.info->ne[0]);
    for (uint64_t at = lo; at < hi;) {
      const uint64_t within = (at - begin) % row_bytes;
      const int64_t r = static_cast<int64_t>((at - begin) / row_bytes);
      const uint8_t* in = bytes + (at - offset);
      if (within == 0 && hi - at >= row_bytes) {  // a whole row in this chunk
        if (std::string e = gguf_row(sh, t, index, r, in); !e.empty()) return e;
        at += row_bytes;
        continue;
      }
      const uint64_t take = std::min(row_bytes - within, hi - at);
      sh.row.resize(row_bytes);
      std::memcpy(sh.row.data() + within, in, take);
      at += take;
      if (within + take == row_bytes)
        if (std::string e = gguf_row(sh, t, index, r, sh.row.data()); !e.empty()) return e;
    }
  }
  sh.fed = end;
  return "";
}

std::string CheckpointLoader::gguf_row(Shard& sh, const GgufTensor& t, int header_index, int64_t r, const uint8_t* raw) {
  const int64_t n = t.info->ne[0];
  // Destinations kept in blocks take the row's blocks as they are: it is one of their columns.
  bool widened_too = header_index < 0;
  static const std::vector<int> kNoReaders;
  for (int i : header_index < 0 ? kNoReaders : sh.scatters_of[header_index]) {
    Tensor& dest = *sh.scatters[i].dest;
    if (!is_block_type(dest.type)) {
      widened_too = true;
      continue;
    }
    stage_column(sh.scatters[i], t.info->type, raw, t.rotary_heads > 0 ? unpermuted_feature(r, t.head_dim) : r);
  }
  if (!widened_too) return "";
  const bool as_stored = t.info->type == ggml::kF16 || t.info->type == ggml::kBF16 || t.info->type == ggml::kF32;
  const uint8_t* values = raw;
  if (!as_stored || t.rotary_heads > 0 || header_index < 0) {
    sh.values.resize(static_cast<size_t>(n) * 2);
    float* row = sh.values.data();
    if (std::string e = ggml::dequantize_row(t.info->type, raw, row, n); !e.empty()) return "tensor " + t.info->name + ": " + e;
    if (t.rotary_heads > 0 && t.info->n_dims == 1) {  // a bias: its elements are the features
      float* permuted = row + n;
      for (int64_t f = 0; f < n; ++f) permuted[unpermuted_feature(f, t.head_dim)] = row[f];
      row = permuted;
    }
    values = reinterpret_cast<const uint8_t*>(row);
  }
  if (header_index < 0) {  // the rotary divisors
    rope_factors_.resize(static_cast<size_t>(t.info->elements()));
    std::memcpy(rope_factors_.data() + r * n, values, static_cast<size_t>(n) * 4);
    return "";
  }
  const int64_t dest_row = t.rotary_heads > 0 && t.info->n_dims > 1 ? unpermuted_feature(r, t.head_dim) : r;
  const safetensors::TensorInfo& info = sh.header.tensors[header_index];
  // A rotary-permuted F16 tensor was widened above: its bytes are float32 now.
  const WeightType type = as_stored && t.rotary_heads == 0 ? (info.dtype == DType::kF16 ? WeightType::kF16
                                                              : info.dtype == DType::kBF16 ? WeightType::kBF16 : WeightType::kF32)
                                                           : WeightType::kF32;
  const uint64_t es = static_cast<uint64_t>(weight_type_bytes(type));
  const uint64_t lo = static_cast<uint64_t>(dest_row * n) * es, hi = lo + static_cast<uint64_t>(n) * es;
  for (int i : sh.scatters_of[header_index]) {
    Scatter& s = sh.scatters[i];
    if (is_block_type(s.dest->type)) continue;  // above
    const WeightType declared = s.source_type;
    s.source_type = type;
    scatter_bytes(s, lo, hi, values, s.source->begin + lo);
    s.source_type = declared;
  }
  return "";
}

namespace {

// The first checkpoint in this process whose layers come from memory tunes the GEMM's touching
// ahead for this CPU (core/gemm_tuning.h): at least 64 MB of its product matrices, each at most
// 32 MB (a layer's, not the output head), more than the L3 of the CPUs these pages meet. GPT-2
// small: 14 passes over 64 MB of its matrices at 16 rows, ~0.2 s of a ~2 s load (bf16: ~0.35 s).
// Blocks (GGUF, weightType q8_0/q4_0) run integer tiles, which never touch: a model of them alone
// leaves the tuning to the next float checkpoint rather than spend ~0.5 s timing noise.
void tune_touching_once(const std::map<std::string, Tensor>& tensors) {
  constexpr double kFromMemory = 64e6, kLargestMatrix = 32e6;
  if (touch_tuning().tuned) return;
  std::vector<GemmProduct> products;
  double bytes = 0;
  for (const auto& [name, t] : tensors) {
    const double size = double(t.stored_bytes());
    if (!t.panels || size > kLargestMatrix || bytes >= kFromMemory || !touching_matters(t.matrix())) continue;
    products.push_back({t.matrix(), static_cast<int>(t.rows), static_cast<int>(t.cols)});
    bytes += size;
  }
  if (bytes >= kFromMemory) tune_touching(products);
}

}  // namespace

std::string CheckpointLoader::finish(std::unique_ptr<Transformer>& out) {
  if (!planned_) return "plan() the checkpoint first";
  for (const Shard& sh : shards_)
    if (sh.fed != sh.bytes)
      return sh.name + " ended after " + std::to_string(sh.fed) + " of its " + std::to_string(sh.bytes) +
             " bytes: the file is truncated (download it again)";
  if (!overflow_.empty()) return overflow_;
  for (const auto& [name, offset] : offsets_) {  // vectors are float32
    Tensor& t = tensors_[name];
    float* v = reinterpret_cast<float*>(t.bytes.data());
    for (int64_t i = 0; i < t.elements(); ++i) v[i] += offset;
  }
  if (!rope_factors_.empty()) {  // llama.cpp divides each rotary frequency by its factor
    if (rope_factors_.size() != config_.rope_inv_freq.size())
      return std::string(kGgufRopeFactors) + " has " + std::to_string(rope_factors_.size()) + " factors, not one for each of the " +
             std::to_string(config_.rope_inv_freq.size()) + " rotary frequencies: the file is corrupt";
    for (size_t i = 0; i < rope_factors_.size(); ++i) {
      if (!(rope_factors_[i] > 0) || !std::isfinite(rope_factors_[i]))
        return std::string(kGgufRopeFactors) + " holds a factor that is not positive: the file is corrupt";
      config_.rope_inv_freq[i] /= rope_factors_[i];
    }
  }
  // Only fp16 products read it (MatrixRef::known_finite): the other types are not scanned.
  for (auto& [name, tensor] : tensors_)
    if (tensor.type == WeightType::kF16) tensor.find_finite();
  tune_touching_once(tensors_);
  // A model of blocks: the integer dot-add is measured now, with the load, not at its first
  // product, which would be a page's first keystroke (core/gemm_tuning.h).
  for (const auto& [name, tensor] : tensors_)
    if (is_block_type(tensor.type)) {
      integer_dot_add();
      break;
    }
  out = std::make_unique<Transformer>(config_, std::move(tensors_));
  return "";
}

}  // namespace mh

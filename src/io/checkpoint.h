// Loads a Hugging Face checkpoint (config.json + one or more .safetensors shards) into a
// Transformer without ever holding a file twice: the shards' headers come first, so everything is
// checked (architecture, tensor names, shapes, dtypes, file sizes) and the memory is counted
// before anything is allocated; then each shard's bytes stream through feed(), in order and in
// chunks of any size, straight into the tensors the model keeps (transposed or split on the way).
//
//   CheckpointLoader loader;
//   loader.set_config(config_json);
//   loader.add_shard("model.safetensors", header_json, n, file_size);   // per shard
//   loader.plan(available_bytes);                                        // refuses what cannot fit
//                                                   (or plan(bytes, MatrixStorage::kF16): 2 bytes a weight)
//   loader.feed(shard, chunk, size); …                                   // the whole file, in order
//   loader.finish(model);
// A GGUF file (io/gguf_model.h) goes in through add_gguf() instead of set_config() + add_shard():
// its metadata is the config, and its blocks are dequantized a row at a time as they stream in.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/gguf_model.h"
#include "io/safetensors.h"
#include "nn/families/family.h"
#include "nn/transformer.h"

namespace mh {

// What type the weight matrices are kept in: as stored, or narrowed to 2 bytes (halving the memory
// a float32 checkpoint needs; rounded to nearest even while the bytes stream in).
// A GGUF file's blocks as stored are kQ8 / kQ40 / kQ4 / kQ4K / kQ5 / kQ5K / kQ6K blocks (core/blocks.h), or float32 where its
// matrices cannot stay in blocks; kF32 widens every matrix to float32. kQ8_0 and kQ4_0 quantize a
// safetensors checkpoint's matrices as llama.cpp's Q8_0 / Q4_0 while loading, into kQ8 / kQ4 blocks
// (those products read whole: nn.Linear weights of K a multiple of 32; the rest keep their type).
enum class MatrixStorage { kAsStored, kF16, kBF16, kF32, kQ8_0, kQ4_0 };

class CheckpointLoader {
 public:
  std::string set_config(const std::string& config_json);
  const TransformerConfig& config() const { return config_; }

  // Registers one shard from its header bytes (after the 8-byte length); file_size is the file's
  // real size (0 if unknown). Returns the shard's index through `index`.
  std::string add_shard(const std::string& file_name, const uint8_t* header_json, uint64_t n,
                        uint64_t file_size, int& index);
  // A GGUF file from its first `size` bytes (of file_size): sets the config and registers the file
  // as a shard. gguf::needs_more(error): call again with more of the file.
  std::string add_gguf(const std::string& file_name, const uint8_t* bytes, uint64_t size, uint64_t file_size,
                       int& index);
  // The GGUF file's metadata as JSON (gguf::metadata_json), and the config.json it implies; "" if none.
  std::string gguf_metadata_json() const;
  std::string gguf_config_json() const;

  // The bytes the shard's file has (what feed() must deliver).
  uint64_t shard_bytes(int shard) const { return shards_[shard].bytes; }

  // Finds every tensor the architecture needs; "" or what is missing or wrong. Then refuses (before
  // allocating) if the weights need more than available_bytes.
  std::string plan(double available_bytes, MatrixStorage storage = MatrixStorage::kAsStored);
  double bytes_needed() const { return bytes_needed_; }

  // The next `size` bytes of shard `shard`'s file (starting at byte 0, header included).
  std::string feed(int shard, const uint8_t* bytes, size_t size);
  // Checks that every shard arrived whole (and that no weight overflowed float16), then hands over
  // the model.
  std::string finish(std::unique_ptr<Transformer>& out);

 private:
  struct Source {
    int shard;
    const safetensors::TensorInfo* info;
  };
  // A panel of a block destination being gathered: its columns (rows of the source) arrive one at a
  // time, in order or, for llama's rotary-permuted Q/K, spread over a head, and the panel's blocks
  // are written once all are in (core/blocks.h, write_block_panel).
  struct PanelStage {
    int64_t panel = -1;          // which panel; -1: free
    int filled = 0;              // columns in so far
    std::vector<int8_t> q;       // [8][K]: each column's values
    std::vector<float> floats;   // [K/32][8 or 16]: each block's scales (and mins), or the super-block types' shares
  };
  struct Scatter {  // one destination cut from one source tensor
    const safetensors::TensorInfo* source;
    WeightType source_type;
    ParamSpec spec;
    Tensor* dest;
    uint8_t split[4];  // the first bytes of an element that a chunk boundary cut
    std::vector<float> row;  // a block destination's source row so far (it is quantized whole)
    std::vector<PanelStage> panels;  // a block destination's panels not yet written
  };
  struct Shard {
    std::string name;
    safetensors::Header header;  // a GGUF file's: its tensors as the hub names them, in float32
                                 // where quantized, laid end to end (offsets that feed_gguf makes up)
    uint64_t bytes = 0;          // the file's
    uint64_t fed = 0;
    std::vector<Scatter> scatters;
    // GGUF only: the file, each header tensor's source in it, the scatters reading each, and one
    // row of the file that a chunk boundary cut.
    std::unique_ptr<GgufModel> gguf;
    std::vector<const GgufTensor*> gguf_sources;
    std::vector<std::vector<int>> scatters_of;
    std::vector<uint8_t> row;
    std::vector<float> values;
  };
  std::string feed_gguf(Shard& sh, const uint8_t* bytes, size_t size);
  // One whole row `r` of GGUF tensor t (its file bytes), into every destination that reads it.
  std::string gguf_row(Shard& sh, const GgufTensor& t, int header_index, int64_t r, const uint8_t* raw);
  void scatter_bytes(Scatter& s, uint64_t lo, uint64_t hi, const uint8_t* bytes, uint64_t offset);
  // Stores the source element at `in` as element `dest` of s.dest (-1: not in this part), in its type.
  void put(const Scatter& s, int64_t dest, const uint8_t* in);
  // s.row, source row `column` of a matrix quantized while loading, into s.dest's blocks.
  void quantize_column(Scatter& s, int64_t column);
  // Column `column` of block destination s.dest from one row of ggml blocks of `type` (a regrouping
  // type): staged until its panel is whole, then the panel written.
  void stage_column(Scatter& s, uint32_t type, const uint8_t* row, int64_t column);

  bool has_config_ = false, planned_ = false;
  TransformerConfig config_;
  std::vector<Shard> shards_;
  std::map<std::string, Source> by_name_;
  std::map<std::string, Tensor> tensors_;
  double bytes_needed_ = 0;
  std::string overflow_;  // the first weight that float16 could not hold, or that could not be quantized
  std::vector<std::pair<std::string, float>> offsets_;
  std::vector<float> rope_factors_;  // kGgufRopeFactors, when the file has them  // vectors to shift once loaded (ParamSpec::offset)
};

}  // namespace mh

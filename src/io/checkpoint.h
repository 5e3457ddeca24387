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
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "nn/families/family.h"
#include "nn/transformer.h"

namespace mh {

// What type the weight matrices are kept in: as stored, or narrowed to 2 bytes (halving the memory
// a float32 checkpoint needs; rounded to nearest even while the bytes stream in).
enum class MatrixStorage { kAsStored, kF16, kBF16 };

class CheckpointLoader {
 public:
  std::string set_config(const std::string& config_json);
  const TransformerConfig& config() const { return config_; }

  // Registers one shard from its header bytes (after the 8-byte length); file_size is the file's
  // real size (0 if unknown). Returns the shard's index through `index`.
  std::string add_shard(const std::string& file_name, const uint8_t* header_json, uint64_t n,
                        uint64_t file_size, int& index);
  // The bytes the header says the shard has (what feed() must deliver).
  uint64_t shard_bytes(int shard) const { return shards_[shard].header.file_bytes; }

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
  struct Scatter {  // one destination cut from one source tensor
    const safetensors::TensorInfo* source;
    WeightType source_type;
    ParamSpec spec;
    Tensor* dest;
    uint8_t split[4];  // the first bytes of an element that a chunk boundary cut
  };
  struct Shard {
    std::string name;
    safetensors::Header header;
    uint64_t fed = 0;
    std::vector<Scatter> scatters;
  };
  void scatter_bytes(Scatter& s, uint64_t lo, uint64_t hi, const uint8_t* bytes, uint64_t offset);
  // Stores the source element at `in` as element `dest` of s.dest (-1: not in this part), in its type.
  void put(const Scatter& s, int64_t dest, const uint8_t* in);

  bool has_config_ = false, planned_ = false;
  TransformerConfig config_;
  std::vector<Shard> shards_;
  std::map<std::string, Source> by_name_;
  std::map<std::string, Tensor> tensors_;
  double bytes_needed_ = 0;
  std::string overflow_;  // the first weight that float16 could not hold
  std::vector<std::pair<std::string, float>> offsets_;  // vectors to shift once loaded (ParamSpec::offset)
};

}  // namespace mh

// The GGUF format (llama.cpp's model files), versions 2 and 3, little endian:
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: { string key, u32 value type, value } …   (string = u64 length + bytes)
//   tensor infos: { string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset } …
//   padding to `general.alignment` (default 32), then the data section; each tensor starts at
//   data start + offset (a multiple of the alignment) and is ne[0]·ne[1]·… elements in whole blocks
//   of its type, rows of ne[0] (ggml order: a PyTorch [out, in] weight has ne = [in, out]).
// Nothing is trusted: every count and length is checked against the bytes left before anything is
// allocated (a 40-byte file cannot ask for a 2^40-byte string), and every tensor must lie inside the
// file, aligned, without overlapping another. Sizes stay 64-bit until checked (wasm is 32-bit).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mh::gguf {

enum class ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8,
  kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* value_type_name(ValueType t);

// One metadata value. Scalars: integers (and bool) in `integer`, except uint64 above INT64_MAX,
// kept as its bits (`integer` < 0; the getters refuse it); floats in `number`; a string in `string`.
// Arrays: `element` is the elements' type and they are in `strings`, `integers` (as scalars),
// `numbers` or, for arrays of arrays, `arrays`.
struct Value {
  ValueType type = ValueType::kU8;
  ValueType element = ValueType::kU8;
  int64_t integer = 0;
  double number = 0;
  std::string string;
  std::vector<std::string> strings;
  std::vector<int64_t> integers;
  std::vector<double> numbers;
  std::vector<Value> arrays;
  uint64_t size() const;  // an array's length
};

// The typed getters: "" with the value in `out`, or why not. A key that is missing leaves `out` as
// it was and returns "" when !required (so `out`'s value is the default); a key of another type is
// always an error. Integers are any integer type; floats are float32/64 or an integer type.
class Metadata {
 public:
  const Value* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  std::string get_string(const std::string& key, std::string& out, bool required = true) const;
  std::string get_int(const std::string& key, int64_t& out, bool required = true) const;
  std::string get_float(const std::string& key, double& out, bool required = true) const;
  std::string get_bool(const std::string& key, bool& out, bool required = true) const;
  std::string get_strings(const std::string& key, std::vector<std::string>& out, bool required = true) const;
  std::string get_ints(const std::string& key, std::vector<int64_t>& out, bool required = true) const;
  std::string get_floats(const std::string& key, std::vector<double>& out, bool required = true) const;
  const std::map<std::string, Value>& values() const { return values_; }

 private:
  friend struct Parser;
  std::map<std::string, Value> values_;
};

struct TensorInfo {
  std::string name;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ggml order: ne[0] is the row
  uint32_t type = 0;              // ggml type (io/ggml_types.h)
  uint64_t offset = 0;            // from the start of the data section, as in the file
  uint64_t begin = 0, bytes = 0;  // where the tensor lies in the file
  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct File {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_start = 0;  // the first byte of the data section (aligned)
  Metadata metadata;
  std::vector<TensorInfo> tensors;  // in file order
  const TensorInfo* find(const std::string& name) const;
};

// Parses a GGUF file's header from its first `size` bytes; file_size is the whole file's size, which
// every tensor must fit in (the data itself is not read). When the header runs past `size` but
// file_size is larger, the error says how much was given: pass more of the file.
std::string parse(const uint8_t* bytes, uint64_t size, uint64_t file_size, File& out);
inline std::string parse_file(const uint8_t* bytes, uint64_t size, File& out) {
  return parse(bytes, size, size, out);
}

// The metadata as one JSON object, key → value (arrays as JSON arrays; a float that is not finite as
// null), for the JS side (the tokenizer reads tokenizer.ggml.*). Strings are written as their bytes,
// with quotes, backslashes and control characters escaped.
std::string metadata_json(const Metadata& metadata);

// Whether parse() stopped only because it was given too few bytes of the header.
bool needs_more(const std::string& error);

// A whole tensor to float32: `data` holds its t.bytes bytes (the file from t.begin). "" or why not
// ("GGUF tensor blk.0.attn_q.weight has type Q2_K, which is not supported (supported: …)").
std::string dequantize(const TensorInfo& t, const uint8_t* data, float* out);

}  // namespace mh::gguf

// The safetensors format (Hugging Face): u64 little-endian header length N, N bytes of JSON
//   { "name": { "dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end] }, …,
//     "__metadata__": { "key": "string", … } }
// then the data section, where [begin, end) are byte offsets. Nothing in a header is trusted until
// it is checked against the file: a known dtype, a shape whose element count × element size is the
// byte range, ranges inside the data section that tile it without overlap (the reference loader's
// rule), and a data section that ends where the file ends (so a truncated download is caught from
// its header alone, before anything is read or allocated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mh::safetensors {

enum class DType { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool, kU16, kU32, kU64, kF8E4M3, kF8E5M2 };
const char* dtype_name(DType t);
int dtype_bytes(DType t);

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the file (the header's offsets + 8 + N)
  int64_t elements() const;
};

struct Header {
  uint64_t header_bytes = 0;  // 8 + N: where the data section starts
  uint64_t file_bytes = 0;    // what the header says the whole file must be
  std::vector<TensorInfo> tensors;  // in file order
};

// Headers longer than this are refused as absurd (real ones are a few hundred KB at most).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// From the first 8 bytes: "" and N, or why the length cannot be right for a file of file_size bytes
// (file_size 0 = unknown).
std::string read_header_length(const uint8_t* first8, uint64_t file_size, uint64_t& n);

// Parses and checks the N header bytes (after the 8-byte length). file_size is the real size of
// the file when known (0 = unknown: then the size the header implies is only reported).
std::string parse_header(const uint8_t* json, uint64_t n, uint64_t file_size, Header& out);

// Parses a whole file held in memory (tests, small files).
std::string parse_file(const uint8_t* bytes, uint64_t size, Header& out);

}  // namespace mh::safetensors

#include "io/safetensors.h"

#include <algorithm>
#include <cmath>

#include "io/json.h"

namespace mh::safetensors {

namespace {
struct DTypeName {
  const char* name;
  DType type;
  int bytes;
};
constexpr DTypeName kDTypes[] = {
    {"F32", DType::kF32, 4},   {"F16", DType::kF16, 2},   {"BF16", DType::kBF16, 2},
    {"F64", DType::kF64, 8},   {"I64", DType::kI64, 8},   {"I32", DType::kI32, 4},
    {"I16", DType::kI16, 2},   {"I8", DType::kI8, 1},     {"U8", DType::kU8, 1},
    {"BOOL", DType::kBool, 1}, {"U16", DType::kU16, 2},   {"U32", DType::kU32, 4},
    {"U64", DType::kU64, 8},   {"F8_E4M3", DType::kF8E4M3, 1}, {"F8_E5M2", DType::kF8E5M2, 1},
};

// A non-negative integer that a double holds exactly, or -1.
int64_t as_index(const json::Value& v) {
  if (!v.is_number() || !(v.number >= 0) || v.number > 9007199254740992.0 || std::floor(v.number) != v.number)
    return -1;
  return static_cast<int64_t>(v.number);
}
}  // namespace

const char* dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}
int dtype_bytes(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.bytes;
  return 0;
}

int64_t TensorInfo::elements() const {
  int64_t count = 1;
  for (int64_t s : shape) count *= s;
  return count;
}

std::string read_header_length(const uint8_t* first8, uint64_t file_size, uint64_t& n) {
  n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
  if (file_size != 0 && file_size < 8) return "the file is shorter than a safetensors header (8 bytes)";
  if (n < 2 || n > kMaxHeaderBytes)
    return "its header length (" + std::to_string(n) +
           " bytes) is absurd: this is not a safetensors file, or it is corrupt";
  if (file_size != 0 && n > file_size - 8)
    return "its header says " + std::to_string(n) + " bytes of JSON but the file has only " +
           std::to_string(file_size - 8) + " after the length: the file is truncated";
  return "";
}

std::string parse_header(const uint8_t* text, uint64_t n, uint64_t file_size, Header& out) {
  out = Header();
  json::Value root;
  std::string error = json::parse(reinterpret_cast<const char*>(text), n, root);
  if (!error.empty()) return "its header is not valid JSON (" + error + ")";
  if (!root.is_object()) return "its header is not a JSON object";
  out.header_bytes = 8 + n;
  for (const auto& [name, entry] : root.object) {
    if (name == "__metadata__") {
      if (!entry.is_object() && !entry.is_null()) return "its __metadata__ is not an object";
      continue;
    }
    if (!entry.is_object()) return "tensor \"" + name + "\" is not described by an object";
    const json::Value* dtype = entry.find("dtype");
    const json::Value* shape = entry.find("shape");
    const json::Value* offsets = entry.find("data_offsets");
    if (!dtype || !dtype->is_string() || !shape || !shape->is_array() || !offsets ||
        !offsets->is_array() || offsets->array.size() != 2)
      return "tensor \"" + name + "\" needs a dtype, a shape and two data_offsets";
    TensorInfo t;
    t.name = name;
    const DTypeName* known = nullptr;
    for (const auto& d : kDTypes)
      if (dtype->string == d.name) known = &d;
    if (!known) return "tensor \"" + name + "\" has an unknown dtype \"" + dtype->string + "\"";
    t.dtype = known->type;
    if (shape->array.size() > 8) return "tensor \"" + name + "\" has more than 8 dimensions";
    int64_t elements = 1;
    for (const json::Value& s : shape->array) {
      const int64_t dim = as_index(s);
      if (dim < 0) return "tensor \"" + name + "\" has a shape that is not a list of sizes";
      if (dim > 0 && elements > (int64_t{1} << 50) / dim) return "tensor \"" + name + "\" has an absurd shape";
      elements *= dim;
      t.shape.push_back(dim);
    }
    const int64_t begin = as_index(offsets->array[0]), end = as_index(offsets->array[1]);
    if (begin < 0 || end < begin) return "tensor \"" + name + "\" has data_offsets that are not a byte range";
    if (static_cast<uint64_t>(end - begin) != static_cast<uint64_t>(elements) * known->bytes)
      return "tensor \"" + name + "\" has " + std::to_string(end - begin) + " bytes but its shape and " +
             dtype->string + " need " + std::to_string(elements * known->bytes);
    t.begin = out.header_bytes + begin;
    t.end = out.header_bytes + end;
    out.tensors.push_back(std::move(t));
  }
  // The byte ranges must tile the data section: start at 0, no gaps, no overlaps.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : out.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = out.header_bytes;
  for (const TensorInfo* t : by_offset) {
    if (t->begin < at) return "tensor \"" + t->name + "\" overlaps another tensor's bytes";
    if (t->begin > at) return "tensor \"" + t->name + "\" leaves a gap before it in the data section";
    at = t->end;
  }
  out.file_bytes = at;
  if (file_size != 0 && file_size < at)
    return "the file has " + std::to_string(file_size) + " bytes but its header describes " +
           std::to_string(at) + ": the file is truncated (download it again)";
  if (file_size != 0 && file_size > at)
    return "the file has " + std::to_string(file_size - at) +
           " bytes after the last tensor its header describes: it is corrupt";
  return "";
}

std::string parse_file(const uint8_t* bytes, uint64_t size, Header& out) {
  if (size < 8) return "the file is shorter than a safetensors header (8 bytes)";
  uint64_t n;
  std::string error = read_header_length(bytes, size, n);
  if (!error.empty()) return error;
  return parse_header(bytes + 8, n, size, out);
}

}  // namespace mh::safetensors

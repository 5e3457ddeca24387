#include "io/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "io/ggml_types.h"

namespace mh::gguf {

namespace {
constexpr const char* kPassMore = ": pass more of the file";
// Arrays may hold arrays this deep (llama.cpp writes none; the format allows them).
constexpr int kMaxDepth = 4;
// What the metadata and tensor infos may take in memory: real vocabularies (262k tokens with scores
// and types, or 151k tokens and merges) take 10–20 MB.
constexpr uint64_t kMaxMetadataBytes = 256ull << 20;
// The fewest bytes a tensor info takes: name length, n_dims, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kU16: case ValueType::kI16:
    case ValueType::kU32: case ValueType::kI32: case ValueType::kU64: case ValueType::kI64: return true;
    default: return false;
  }
}
bool is_float(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

// Bytes of a scalar in the file; 0 for strings and arrays.
uint64_t scalar_bytes(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kBool: return 1;
    case ValueType::kU16: case ValueType::kI16: return 2;
    case ValueType::kU32: case ValueType::kI32: case ValueType::kF32: return 4;
    case ValueType::kU64: case ValueType::kI64: case ValueType::kF64: return 8;
    default: return 0;
  }
}

// A name from the file for a message: quoted, and cut if it is long (it may be garbage).
std::string quoted(const std::string& s) {
  return "\"" + (s.size() <= 100 ? s : s.substr(0, 100) + "…") + "\"";
}

// "a string", "an array of int32".
std::string describe(const Value& v) {
  if (v.type == ValueType::kArray) return std::string("an array of ") + value_type_name(v.element);
  const char* name = value_type_name(v.type);
  return std::string(name[0] == 'i' ? "an " : "a ") + name;
}
}  // namespace

const char* value_type_name(ValueType t) {
  static const char* const kNames[] = {"uint8", "int8",   "uint16", "int16", "uint32", "int32", "float32",
                                       "bool",  "string", "array",  "uint64", "int64", "float64"};
  const uint32_t i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "unknown type";
}

uint64_t Value::size() const {
  switch (element) {
    case ValueType::kString: return strings.size();
    case ValueType::kArray: return arrays.size();
    default: return is_float(element) ? numbers.size() : integers.size();
  }
}

// Reads the header front to back; the first error stops it.
struct Parser {
  Parser(const uint8_t* bytes, uint64_t given, uint64_t total) : p(bytes), size(given), file_size(total) {}
  const uint8_t* p;
  uint64_t size, file_size, pos = 0;
  uint64_t budget = kMaxMetadataBytes;
  std::string where;  // what is being read, for messages: "metadata key \"general.name\""
  std::string error;

  uint64_t left() const { return size - pos; }

  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }
  // n items of `unit` bytes each do not fit in the bytes left: a field the file ends inside, or a
  // length or count the file claims (`claimed`: "bytes", "entries") that no rest of it could hold.
  bool short_of(const char* what, uint64_t n, uint64_t unit, const char* claimed) {
    const std::string at = std::string(what) + " of " + where;
    if (size < file_size && n <= (file_size - pos) / unit)
      return fail("the header runs past the " + std::to_string(size) + " bytes given, in " + at +
                  kPassMore);
    if (!claimed)
      return fail("the file ends at byte " + std::to_string(file_size) + ", in " + at +
                  ": it is truncated (download it again)");
    return fail(where + " claims " + std::to_string(n) + " " + claimed + " for " + what +
                ", but only " + std::to_string(file_size - pos) + " bytes are left: the file is truncated or corrupt");
  }
  bool need(uint64_t n, const char* what) { return n <= left() || short_of(what, n, 1, nullptr); }
  bool charge(uint64_t bytes) {
    if (bytes > budget)
      return fail("its header would take more than " + std::to_string(kMaxMetadataBytes >> 20) +
                  " MiB of memory (at " + where + "): the file is corrupt");
    budget -= bytes;
    return true;
  }

  uint64_t le(int n) {  // n ≤ 8 bytes at pos, already checked
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[pos + i];
    pos += n;
    return v;
  }
  bool u32(uint32_t& v, const char* what) {
    if (!need(4, what)) return false;
    v = static_cast<uint32_t>(le(4));
    return true;
  }
  bool u64(uint64_t& v, const char* what) {
    if (!need(8, what)) return false;
    v = le(8);
    return true;
  }
  bool string(std::string& s, const char* what) {
    uint64_t n;
    if (!u64(n, what)) return false;
    if (n > left()) return short_of(what, n, 1, "bytes");
    if (!charge(n)) return false;
    s.assign(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(n));
    pos += n;
    return true;
  }
  // A scalar of type t (not a string or array) into `integer` or `number`.
  bool scalar(ValueType t, int64_t& integer, double& number) {
    const uint64_t n = scalar_bytes(t);
    if (!need(n, "a value")) return false;
    const uint64_t bits = le(static_cast<int>(n));
    switch (t) {
      case ValueType::kI8: integer = static_cast<int8_t>(bits); break;
      case ValueType::kI16: integer = static_cast<int16_t>(bits); break;
      case ValueType::kI32: integer = static_cast<int32_t>(bits); break;
      case ValueType::kBool: integer = bits != 0; break;
      case ValueType::kF32: {
        const uint32_t word = static_cast<uint32_t>(bits);
        float f;
        std::memcpy(&f, &word, 4);
        number = f;
        break;
      }
      case ValueType::kF64: std::memcpy(&number, &bits, 8); break;
      default: integer = static_cast<int64_t>(bits);  // unsigned; uint64 above INT64_MAX as its bits
    }
    return true;
  }

  bool value(ValueType t, Value& v, int depth) {
    v.type = t;
    if (t == ValueType::kString) return string(v.string, "a string");
    if (t != ValueType::kArray) return scalar(t, v.integer, v.number);
    uint32_t element;
    uint64_t n;
    if (!u32(element, "an array's element type")) return false;
    if (element > 12)
      return fail(where + " is an array of unknown value type " + std::to_string(element) + ": the file is corrupt");
    if (!u64(n, "an array's length")) return false;
    v.element = static_cast<ValueType>(element);
    if (v.element == ValueType::kArray && depth + 1 >= kMaxDepth)
      return fail(where + " nests arrays more than " + std::to_string(kMaxDepth) + " deep");
    // Each element takes at least this many bytes in the file, so a length is checked before anything
    // is allocated for it.
    const uint64_t unit = v.element == ValueType::kString ? 8 : v.element == ValueType::kArray ? 12 : scalar_bytes(v.element);
    if (n > left() / unit) return short_of("an array", n, unit, "entries");
    if (v.element == ValueType::kString) {
      if (!charge(n * sizeof(std::string))) return false;
      v.strings.resize(static_cast<size_t>(n));
      for (std::string& s : v.strings)
        if (!string(s, "an array's string")) return false;
    } else if (v.element == ValueType::kArray) {
      if (!charge(n * sizeof(Value))) return false;
      v.arrays.resize(static_cast<size_t>(n));
      for (Value& a : v.arrays)
        if (!value(ValueType::kArray, a, depth + 1)) return false;
    } else {
      if (!charge(n * 8)) return false;
      std::vector<int64_t>* integers = is_float(v.element) ? nullptr : &v.integers;
      if (integers) integers->resize(static_cast<size_t>(n));
      else v.numbers.resize(static_cast<size_t>(n));
      for (uint64_t i = 0; i < n; ++i) {
        int64_t integer = 0;
        double number = 0;
        scalar(v.element, integer, number);  // the length check above covers every element
        if (integers) (*integers)[i] = integer;
        else v.numbers[i] = number;
      }
    }
    return true;
  }

  bool metadata(uint64_t count, Metadata& out) {
    for (uint64_t i = 0; i < count; ++i) {
      where = "metadata entry " + std::to_string(i);
      std::string key;
      uint32_t type;
      if (!string(key, "the key")) return false;
      if (key.empty()) return fail(where + " has an empty key: the file is corrupt");
      where = "metadata key " + quoted(key);
      if (!u32(type, "the value type")) return false;
      if (type > 12) return fail(where + " has unknown value type " + std::to_string(type) + ": the file is corrupt");
      Value v;
      if (!charge(sizeof(Value) + 64)) return false;  // the map's node
      if (!value(static_cast<ValueType>(type), v, 0)) return false;
      if (!out.values_.emplace(key, std::move(v)).second) return fail(where + " appears twice: the file is corrupt");
    }
    return true;
  }

  bool tensor_info(TensorInfo& t) {
    uint32_t n_dims, type;
    if (!string(t.name, "the name")) return false;
    where = "tensor " + quoted(t.name);
    if (!u32(n_dims, "the number of dimensions")) return false;
    if (n_dims > 4) return fail(where + " has " + std::to_string(n_dims) + " dimensions; GGUF allows at most 4");
    t.n_dims = static_cast<int>(n_dims);
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne;
      if (!u64(ne, "the shape")) return false;
      if (ne == 0) return fail(where + " has a dimension of size 0");
      if (ne > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(elements))
        return fail(where + " has more elements than a 64-bit count holds: the file is corrupt");
      t.ne[d] = static_cast<int64_t>(ne);
      elements *= t.ne[d];
    }
    if (!u32(type, "the type")) return false;
    const ggml::TypeInfo* info = ggml::type_info(type);
    if (!info)
      return fail(where + " has ggml type " + std::to_string(type) +
                  ", which this reader does not know (removed from ggml, or newer than this reader)");
    t.type = type;
    if (t.ne[0] % info->block != 0)
      return fail(where + " has rows of " + std::to_string(t.ne[0]) + " elements, not a whole number of " +
                  info->name + "'s " + std::to_string(info->block) + "-element blocks");
    const uint64_t blocks = static_cast<uint64_t>(elements / info->block);
    if (blocks > UINT64_MAX / info->bytes) return fail(where + " has an absurd size: the file is corrupt");
    t.bytes = blocks * info->bytes;
    return u64(t.offset, "the offset");
  }
};

std::string parse(const uint8_t* bytes, uint64_t size, uint64_t file_size, File& out) {
  out = File();
  size = std::min(size, file_size);
  Parser r(bytes, size, file_size);
  r.where = "the file header";
  if (size >= 4 && std::memcmp(bytes, "GGUF", 4) != 0) {
    static const char kHex[] = "0123456789abcdef";
    std::string start;
    for (int i = 0; i < 4; ++i) start += std::string(i ? " " : "") + kHex[bytes[i] >> 4] + kHex[bytes[i] & 15];
    return "this is not a GGUF file: it starts with bytes " + start + ", not \"GGUF\"";
  }
  if (file_size < 24) return "the file has " + std::to_string(file_size) + " bytes, fewer than a GGUF header (24)";
  if (size < 24) return "only " + std::to_string(size) + " bytes were given, fewer than a GGUF header (24)";
  r.pos = 4;
  out.version = static_cast<uint32_t>(r.le(4));
  if (out.version != 2 && out.version != 3) {
    if (out.version != 0 && (out.version & 0xFFFF) == 0)
      return "this GGUF file is big-endian (its version reads as " + std::to_string(out.version) +
             "), which is not supported";
    return "GGUF version " + std::to_string(out.version) + " is not supported (only 2 and 3)" +
           (out.version == 1 ? ": convert the model again with a current llama.cpp" : "");
  }
  const uint64_t tensor_count = r.le(8), kv_count = r.le(8);
  // A metadata entry takes at least 13 bytes (key length, type, a 1-byte value).
  if (kv_count > r.left() / 13) {
    r.where = "the file header";
    r.short_of("metadata entries", kv_count, 13, "entries");
    return r.error;
  }
  if (!r.metadata(kv_count, out.metadata)) return r.error;

  if (const Value* a = out.metadata.find("general.alignment")) {
    if (!is_integer(a->type) || a->integer <= 0 || (a->integer & (a->integer - 1)) != 0)
      return "its general.alignment is not a positive power of two";
    out.alignment = static_cast<uint64_t>(a->integer);
  }

  r.where = "the file header";
  if (tensor_count > r.left() / kMinTensorInfoBytes) {
    r.short_of("tensor infos", tensor_count, kMinTensorInfoBytes, "entries");
    return r.error;
  }
  for (uint64_t i = 0; i < tensor_count; ++i) {  // grown as read: a count proves nothing
    r.where = "tensor info " + std::to_string(i);
    TensorInfo t;
    if (!r.charge(sizeof(TensorInfo)) || !r.tensor_info(t)) return r.error;
    out.tensors.push_back(std::move(t));
  }
  out.data_start = r.pos + (out.alignment - r.pos % out.alignment) % out.alignment;
  if (tensor_count > 0 && out.data_start > file_size)
    return "its data section would start at byte " + std::to_string(out.data_start) + ", past the end of the file (" +
           std::to_string(file_size) + " bytes): it is truncated";

  for (TensorInfo& t : out.tensors) {
    const std::string name = "tensor " + quoted(t.name);
    if (t.offset % out.alignment != 0)
      return name + " is at offset " + std::to_string(t.offset) + ", not a multiple of the alignment (" +
             std::to_string(out.alignment) + "): the file is corrupt";
    if (t.offset > file_size - out.data_start || t.bytes > file_size - out.data_start - t.offset)
      return name + " (" + std::to_string(t.bytes) + " bytes at offset " + std::to_string(t.offset) +
             " of the data section, which starts at byte " + std::to_string(out.data_start) +
             ") runs past the end of the file (" + std::to_string(file_size) + " bytes): it is truncated (download it again)";
    t.begin = out.data_start + t.offset;
  }
  // No two tensors may share a name or a byte.
  std::vector<const TensorInfo*> sorted(out.tensors.size());
  std::iota(sorted.begin(), sorted.end(), out.tensors.data());
  std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->name < b->name; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->name == sorted[i - 1]->name) return "two tensors are named " + quoted(sorted[i]->name) + ": the file is corrupt";
  std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->begin < sorted[i - 1]->begin + sorted[i - 1]->bytes)
      return "tensors " + quoted(sorted[i - 1]->name) + " and " + quoted(sorted[i]->name) +
             " overlap in the file: it is corrupt";
  return "";
}

bool needs_more(const std::string& error) {
  const std::string tail = kPassMore;
  return error.size() >= tail.size() && error.compare(error.size() - tail.size(), tail.size(), tail) == 0;
}

namespace {
void json_string(const std::string& s, std::string& out) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20) out += "\\u00", out += kHex[c >> 4], out += kHex[c & 15];
    else out += static_cast<char>(c);
  }
  out += '"';
}

void json_number(double x, std::string& out) {
  if (!std::isfinite(x)) { out += "null"; return; }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", x);
  out += buffer;
}

void json_value(const Value& v, std::string& out) {
  if (v.type == ValueType::kString) return json_string(v.string, out);
  if (v.type == ValueType::kBool) { out += v.integer ? "true" : "false"; return; }
  if (is_float(v.type)) return json_number(v.number, out);
  if (v.type != ValueType::kArray) {
    // uint64 above INT64_MAX is kept as its bits (negative here)
    out += v.integer < 0 && v.type == ValueType::kU64 ? std::to_string(static_cast<uint64_t>(v.integer)) : std::to_string(v.integer);
    return;
  }
  out += '[';
  const uint64_t n = v.size();
  for (uint64_t i = 0; i < n; ++i) {
    if (i) out += ',';
    switch (v.element) {
      case ValueType::kString: json_string(v.strings[i], out); break;
      case ValueType::kArray: json_value(v.arrays[i], out); break;
      case ValueType::kBool: out += v.integers[i] ? "true" : "false"; break;
      default:
        if (is_float(v.element)) json_number(v.numbers[i], out);
        else out += v.element == ValueType::kU64 && v.integers[i] < 0 ? std::to_string(static_cast<uint64_t>(v.integers[i]))
                                                                          : std::to_string(v.integers[i]);
    }
  }
  out += ']';
}
}  // namespace

std::string metadata_json(const Metadata& metadata) {
  std::string out = "{";
  for (const auto& [key, value] : metadata.values()) {
    if (out.size() > 1) out += ',';
    json_string(key, out);
    out += ':';
    json_value(value, out);
  }
  return out + "}";
}

const TensorInfo* File::find(const std::string& name) const {
  for (const TensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string dequantize(const TensorInfo& t, const uint8_t* data, float* out) {
  const ggml::TypeInfo* info = ggml::type_info(t.type);
  if (!info || !info->dequantizable)
    return "GGUF tensor " + t.name + " has type " + ggml::type_name(t.type) +
           ", which is not supported (supported: " + ggml::supported_types() + ")";
  return ggml::dequantize_row(t.type, data, out, t.elements());
}

// The getters.

const Value* Metadata::find(const std::string& key) const {
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

namespace {
// "" with v set, or why not: missing (an error only when required), or not of the kind `ok` accepts.
template <typename Accept>
std::string lookup(const Metadata& m, const std::string& key, bool required, const char* kind, Accept ok,
                   const Value*& v) {
  v = m.find(key);
  if (!v) return required ? "GGUF metadata key " + quoted(key) + " is missing" : "";
  if (!ok(*v)) return "GGUF metadata key " + quoted(key) + " is " + describe(*v) + ", not " + kind;
  return "";
}
std::string too_large(const std::string& key) {
  return "GGUF metadata key " + quoted(key) + " holds a uint64 above 2^63";
}
bool is_u64(ValueType t) { return t == ValueType::kU64; }
}  // namespace

std::string Metadata::get_string(const std::string& key, std::string& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "a string", [](const Value& x) { return x.type == ValueType::kString; }, v);
  if (e.empty() && v) out = v->string;
  return e;
}

std::string Metadata::get_int(const std::string& key, int64_t& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "an integer", [](const Value& x) { return is_integer(x.type); }, v);
  if (!e.empty() || !v) return e;
  if (is_u64(v->type) && v->integer < 0) return too_large(key);
  out = v->integer;
  return "";
}

std::string Metadata::get_float(const std::string& key, double& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "a number",
                         [](const Value& x) { return is_float(x.type) || is_integer(x.type); }, v);
  if (!e.empty() || !v) return e;
  if (is_u64(v->type) && v->integer < 0) return too_large(key);
  out = is_float(v->type) ? v->number : static_cast<double>(v->integer);
  return "";
}

std::string Metadata::get_bool(const std::string& key, bool& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "a bool", [](const Value& x) { return x.type == ValueType::kBool; }, v);
  if (e.empty() && v) out = v->integer != 0;
  return e;
}

std::string Metadata::get_strings(const std::string& key, std::vector<std::string>& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "an array of strings", [](const Value& x) {
    return x.type == ValueType::kArray && x.element == ValueType::kString;
  }, v);
  if (e.empty() && v) out = v->strings;
  return e;
}

std::string Metadata::get_ints(const std::string& key, std::vector<int64_t>& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "an array of integers", [](const Value& x) {
    return x.type == ValueType::kArray && is_integer(x.element);
  }, v);
  if (!e.empty() || !v) return e;
  if (is_u64(v->element))
    for (int64_t i : v->integers)
      if (i < 0) return too_large(key);
  out = v->integers;
  return "";
}

std::string Metadata::get_floats(const std::string& key, std::vector<double>& out, bool required) const {
  const Value* v;
  std::string e = lookup(*this, key, required, "an array of numbers", [](const Value& x) {
    return x.type == ValueType::kArray && (is_float(x.element) || is_integer(x.element));
  }, v);
  if (!e.empty() || !v) return e;
  if (is_float(v->element)) {
    out = v->numbers;
    return "";
  }
  if (is_u64(v->element))
    for (int64_t i : v->integers)
      if (i < 0) return too_large(key);
  out.assign(v->integers.begin(), v->integers.end());
  return "";
}

}  // namespace mh::gguf

// libFuzzer target for the GGUF reader (io/gguf.h) and ggml's block dequantization: any input gives
// a parsed file or an error message, never a crash, leak or undefined behaviour. A file that parses
// must describe tensors that lie, aligned and apart, inside it; each of them of a supported type is
// dequantized, and every metadata value is read through every getter. The seeds in gguf-corpus/
// are small valid files (tests/fuzz/make-gguf-corpus.mjs), one of them a whole tiny model: a file
// that maps to a family (io/gguf_model.h) is also loaded as one, fed in three uneven chunks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/ggml_types.h"
#include "io/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mh::gguf::File file;
  // The header from a prefix, as a loader reading the front of a large file would.
  mh::gguf::parse(data, size / 2, size, file);
  {
    mh::CheckpointLoader loader;
    int index = -1;
    if (loader.add_gguf("fuzz.gguf", data, size, size, index).empty() && loader.plan(64e6).empty()) {
      const size_t a = size / 3, b = size - size / 5;
      std::unique_ptr<mh::Transformer> model;
      if (loader.feed(index, data, a).empty() && loader.feed(index, data + a, b - a).empty() &&
          loader.feed(index, data + b, size - b).empty() && loader.finish(model).empty() && !model)
        __builtin_trap();
    }
  }
  if (!mh::gguf::parse_file(data, size, file).empty()) return 0;
  if (file.alignment == 0 || (file.alignment & (file.alignment - 1)) || file.data_start % file.alignment)
    __builtin_trap();
  for (const mh::gguf::TensorInfo& t : file.tensors) {
    if (t.begin < file.data_start || t.begin % file.alignment || t.bytes > size || t.begin > size - t.bytes)
      __builtin_trap();
    if (t.elements() <= 0) __builtin_trap();
    const mh::ggml::TypeInfo* info = mh::ggml::type_info(t.type);
    if (!info || t.ne[0] % info->block || static_cast<uint64_t>(t.elements() / info->block) * info->bytes != t.bytes)
      __builtin_trap();
    std::vector<float> out(static_cast<size_t>(t.elements()));
    const std::string error = mh::gguf::dequantize(t, data + t.begin, out.data());
    if (error.empty() != info->dequantizable) __builtin_trap();
    for (const mh::gguf::TensorInfo& u : file.tensors)  // apart, and named apart
      if (&u != &t && (u.name == t.name || (u.begin < t.begin + t.bytes && t.begin < u.begin + u.bytes)))
        __builtin_trap();
  }
  for (const auto& [key, value] : file.metadata.values()) {
    std::string s;
    int64_t i;
    double x;
    bool b;
    std::vector<std::string> strings;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    const mh::gguf::Metadata& m = file.metadata;
    const int read = m.get_string(key, s).empty() + m.get_int(key, i).empty() + m.get_float(key, x).empty() +
                     m.get_bool(key, b).empty();
    if (read > 2) __builtin_trap();  // an integer reads as an int and as a float; nothing else twice
    if (m.get_strings(key, strings).empty() && strings.size() != value.size()) __builtin_trap();
    if (m.get_ints(key, ints).empty() && ints.size() != value.size()) __builtin_trap();
    if (m.get_floats(key, floats).empty() && floats.size() != value.size()) __builtin_trap();
  }
  return 0;
}

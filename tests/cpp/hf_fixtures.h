// The fixtures in tests/fixtures/hf (saved by transformers 5.17) as the C++ tests read them: files,
// the expected tensors, a checkpoint through the streaming loader.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/safetensors.h"

namespace hf_fixtures {

inline std::string fixture(const std::string& model, const std::string& file) {
  return std::string(MH_FIXTURES_DIR) + "/" + model + "/" + file;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The expected tensors (or a checkpoint's), read with the project's own parser (F32 and I32 only).
struct Expected {
  std::vector<uint8_t> bytes;
  mh::safetensors::Header header;
  explicit Expected(const std::string& model, const std::string& file = "expected.safetensors")
      : bytes(read_bytes(fixture(model, file))) {
    EXPECT_EQ(mh::safetensors::parse_file(bytes.data(), bytes.size(), header), "");
  }
  const mh::safetensors::TensorInfo* find(const std::string& name) const {
    for (const auto& t : header.tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  template <typename T>
  std::vector<T> get(const std::string& name) const {
    const auto* t = find(name);
    if (!t) return {};
    std::vector<T> out(static_cast<size_t>(t->elements()));
    std::memcpy(out.data(), bytes.data() + t->begin, out.size() * sizeof(T));
    return out;
  }
};

inline std::string load(const std::string& model, std::unique_ptr<mh::Transformer>& out, size_t chunk = 4099,
                 mh::MatrixStorage storage = mh::MatrixStorage::kAsStored, std::vector<uint8_t> file = {}) {
  mh::CheckpointLoader loader;
  const std::vector<uint8_t> config = read_bytes(fixture(model, "config.json"));
  std::string error = loader.set_config(std::string(config.begin(), config.end()));
  if (!error.empty()) return error;
  if (file.empty()) file = read_bytes(fixture(model, "model.safetensors"));
  uint64_t n;
  error = mh::safetensors::read_header_length(file.data(), file.size(), n);
  if (!error.empty()) return error;
  int shard;
  error = loader.add_shard("model.safetensors", file.data() + 8, n, file.size(), shard);
  if (!error.empty()) return error;
  error = loader.plan(1e9, storage);
  if (!error.empty()) return error;
  for (size_t at = 0; at < file.size(); at += chunk) {
    error = loader.feed(shard, file.data() + at, std::min(chunk, file.size() - at));
    if (!error.empty()) return error;
  }
  return loader.finish(out);
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

inline double max_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace hf_fixtures

using namespace hf_fixtures;  // NOLINT: the tests read these by their short names

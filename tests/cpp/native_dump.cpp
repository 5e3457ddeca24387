// Test helper for the JS suite: prints what the native build computes, so the wasm build can be
// compared with it. Usage:
//   mh_native_dump D_MODEL HEADS KV_HEADS SEED N CAUSAL INPUT.f32 OUTPUT.f32
// Reads x (N × D_MODEL float32) and writes, as raw float32: wq wk wv wo bq bk bv bo (seeded) then y.
#include <cstdio>
#include <string>
#include <cstdlib>
#include <vector>

#include "core/model.h"

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s D_MODEL HEADS KV_HEADS SEED N CAUSAL IN.f32 OUT.f32\n", argv[0]);
    return 2;
  }
  mh::Config c;
  c.d_model = std::atoi(argv[1]);
  c.num_heads = std::atoi(argv[2]);
  c.num_kv_heads = std::atoi(argv[3]);
  const std::string config_error = mh::validate_config(c);
  if (!config_error.empty()) {
    std::fprintf(stderr, "%s\n", config_error.c_str());
    return 2;
  }
  mh::AttentionModel model(c);
  model.init_seeded(std::strtoull(argv[4], nullptr, 10));
  const int n = std::atoi(argv[5]);
  mh::MaskSpec mask;
  mask.causal = std::atoi(argv[6]) != 0;
  std::vector<float> x(size_t(n) * c.d_model), y(x.size());
  FILE* in = std::fopen(argv[7], "rb");
  if (!in || std::fread(x.data(), sizeof(float), x.size(), in) != x.size()) return 3;
  std::fclose(in);
  const std::string error = model.forward(y.data(), nullptr, x.data(), x.data(), n, n, mask);
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 4;
  }
  FILE* out = std::fopen(argv[8], "wb");
  for (int w = 0; w < mh::kNumWeights; ++w)
    std::fwrite(model.weight(w), sizeof(float), model.weight_size(w), out);
  std::fwrite(y.data(), sizeof(float), y.size(), out);
  std::fclose(out);
  return 0;
}

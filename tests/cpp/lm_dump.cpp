// Test helper for the JS suite: what the native build computes for a .mhlm model and a text, so the
// wasm build can be compared with it. Usage: mh_lm_dump MODEL.mhlm TEXT OUT.f32
// Writes raw float32: n, the token ids, then attention (layers × h × n × n), then probs (n × vocab).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/model_file.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.mhlm TEXT OUT.f32\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  mh::LoadedModel m;
  const std::string error = mh::load_model(m, bytes.data(), bytes.size());
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 3;
  }
  const std::vector<int32_t> ids = m.tokenizer->encode(argv[2]);
  const mh::DecoderConfig& c = m.decoder->config();
  const int n = static_cast<int>(ids.size());
  std::vector<float> attention(size_t(c.layers) * c.num_heads * n * n), probs(size_t(n) * c.vocab);
  const std::string run_error = m.decoder->run(attention.data(), probs.data(), ids.data(), n);
  if (!run_error.empty()) {
    std::fprintf(stderr, "%s\n", run_error.c_str());
    return 4;
  }
  std::vector<float> out{static_cast<float>(n)};
  for (int32_t id : ids) out.push_back(static_cast<float>(id));
  out.insert(out.end(), attention.begin(), attention.end());
  out.insert(out.end(), probs.begin(), probs.end());
  FILE* f = std::fopen(argv[3], "wb");
  std::fwrite(out.data(), sizeof(float), out.size(), f);
  std::fclose(f);
  return 0;
}

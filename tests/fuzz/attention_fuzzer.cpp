// libFuzzer target for the attention core, run under ASan and UBSan.
// Random configs, shapes, masks and values (raw float bits: NaN, ±Inf, denormals, 1e30 …).
// Invariants checked: no crash or sanitizer report; a call either returns an error message or
// produces finite outputs whose attention rows sum to 1 (or are all 0 when fully masked).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/attention.h"
#include "core/model.h"

namespace {

struct Bytes {
  const uint8_t* data;
  size_t size;
  uint8_t byte() {
    if (!size) return 0;
    --size;
    return *data++;
  }
  float value() {
    // Mostly ordinary numbers; sometimes raw bits, which reach NaN, infinities and denormals.
    const uint8_t kind = byte();
    if (kind < 200) return (static_cast<int>(byte()) - 128) / 32.0f;
    if (kind < 240) {
      static const float special[] = {0.0f, -0.0f, 1e30f, -1e30f, 1e-40f, 3.4e38f, 1e4f, -1e4f};
      return special[byte() % 8];
    }
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits = bits << 8 | byte();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  void fill(std::vector<float>& v) {
    for (float& x : v) x = value();
  }
};

bool finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  mh::Config c;
  c.d_model = 1 + in.byte() % 48;
  c.num_heads = 1 + in.byte() % 8;
  c.num_kv_heads = in.byte() % 9;
  c.bias = in.byte() & 1;
  c.temperature = 0.05f + in.byte() / 16.0f;
  if (!mh::validate_config(c).empty()) return 0;
  const int n_q = 1 + in.byte() % 20;
  const uint8_t flags = in.byte();
  const bool cross = flags & 32;
  const int n_k = cross ? 1 + in.byte() % 20 : n_q;

  mh::AttentionModel model(c);
  model.init_seeded(in.byte());
  if (flags & 1) {  // weights from the input (may be rejected for NaN/Inf)
    std::vector<float> staged[mh::kNumWeights];
    unsigned mask = 0;
    for (int w = 0; w < mh::kNumWeights; ++w) {
      if (model.weight_size(w) == 0 || !(in.byte() & 1)) continue;
      staged[w].resize(model.weight_size(w));
      in.fill(staged[w]);
      mask |= 1u << w;
    }
    (void)model.replace_weights(staged, mask);
  }
  std::vector<float> xq(size_t(n_q) * c.d_model), xkv(size_t(n_k) * c.d_model);
  in.fill(xq);
  if (cross) in.fill(xkv);
  const float* kv = cross ? xkv.data() : xq.data();
  std::vector<uint8_t> padding(n_k), blocked(size_t(n_q) * n_k);
  std::vector<float> additive(size_t(n_q) * n_k);
  mh::MaskSpec mask;
  mask.causal = flags & 2;
  if (flags & 4) {
    for (auto& p : padding) p = in.byte() < 64;
    mask.key_padding = padding.data();
  }
  if (flags & 8) {
    for (auto& b : blocked) b = in.byte() < 64;
    mask.blocked = blocked.data();
  }
  if (flags & 16) {
    for (float& a : additive) a = in.byte() < 32 ? -INFINITY : in.value();
    mask.additive = additive.data();
  }
  const int nk = n_k;
  std::vector<float> y(size_t(n_q) * c.d_model), attention(size_t(mh::dims_of(c).h) * n_q * nk);
  const std::string error = model.forward(y.data(), attention.data(), xq.data(), kv, n_q, nk, mask);
  if (error.empty()) {
    if (!finite(y) || !finite(attention)) __builtin_trap();
    for (size_t row = 0; row < attention.size() / nk; ++row) {
      double sum = 0;
      for (int j = 0; j < nk; ++j) {
        const float a = attention[row * nk + j];
        if (a < 0 || a > 1) __builtin_trap();
        sum += a;
      }
      if (sum != 0 && std::abs(sum - 1) > 1e-4) __builtin_trap();
    }
    // The blocked path (no attention requested) must agree with the full one. Near the float32
    // limit the two summation orders may differ on whether a value overflows, so only the
    // "finite result or a clear error" rule is checked there.
    std::vector<float> y2(y.size());
    const std::string error2 = model.forward(y2.data(), nullptr, xq.data(), kv, n_q, nk, mask);
    if (error2.empty()) {
      if (!finite(y2)) __builtin_trap();
      float largest = 0;
      for (float v : y) largest = std::max(largest, std::abs(v));
      if (largest < 1e30f)
        for (size_t i = 0; i < y.size(); ++i)
          if (std::abs(y[i] - y2[i]) > 1e-3f * (1 + largest)) __builtin_trap();
    } else if (error2.find("float32 overflow") == std::string::npos) {
      __builtin_trap();
    }
  }
  if (flags & 64) {
    mh::HeadTrace trace;
    (void)model.trace(trace, in.byte() % 10, xq.data(), xq.data(), n_q, n_q, mh::MaskSpec{});
  }
  if (flags & 128) {  // budget and length checks must refuse before allocating anything
    const int n = 1 + in.byte() * 200;
    (void)mh::validate_shape(c, n, n, (in.byte() & 1) ? mh::AttentionSelection::all(c.num_heads, n).floats(n) : 0);
  }
  return 0;
}

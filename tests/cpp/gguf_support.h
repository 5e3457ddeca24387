// For the GGUF tests: a float64 decoder of ggml's block types written from the format's definition
// (element by element, independently of io/ggml_types.cpp's loops), and a writer of GGUF bytes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "io/ggml_types.h"

namespace test {

// IEEE binary16 from its fields: (−1)^s · 2^(e−15) · (1 + m/1024), or m · 2^−24 when e = 0.
inline double half_value(const uint8_t* p) {
  const int bits = p[0] | p[1] << 8;
  const int sign = bits >> 15, e = (bits >> 10) & 31, m = bits & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

// bfloat16 from its fields: (−1)^s · 2^(e−127) · (1 + m/128), or m · 2^−133 when e = 0.
inline double bf16_value(const uint8_t* p) {
  const int bits = p[0] | p[1] << 8;
  const int sign = bits >> 15, e = (bits >> 7) & 255, m = bits & 127;
  double v = e == 0 ? std::ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : std::ldexp(128 + m, e - 134);
  return sign ? -v : v;
}

// The K-quants' 6-bit scale and min of sub-block s (0–7) from their 12 bytes: sub-blocks 0–3 keep
// both in the low 6 bits of bytes s and s+4; sub-blocks 4–7 keep their low 4 bits in byte s+4 (scale
// low nibble, min high nibble) and their top 2 bits in the top 2 bits of bytes s−4 (scale) and s (min).
inline void k_scale_min(const uint8_t* b, int s, int& scale, int& min) {
  if (s < 4) {
    scale = b[s] % 64;
    min = b[s + 4] % 64;
  } else {
    scale = b[s + 4] % 16 + 16 * (b[s - 4] / 64);
    min = b[s + 4] / 16 + 16 * (b[s] / 64);
  }
}

inline int nibble(int byte, bool high) { return high ? byte / 16 : byte % 16; }
inline int bit(const uint8_t* bytes, int i) { return (bytes[i / 8] >> (i % 8)) & 1; }

// Element e of one block of `type`, in float64 (its float32 rounding is what ggml computes).
inline double reference_element(uint32_t type, const uint8_t* b, int e) {
  using namespace mh::ggml;
  switch (type) {
    case kF32: { float f; std::memcpy(&f, b + 4 * e, 4); return f; }
    case kF16: return half_value(b + 2 * e);
    case kBF16: return bf16_value(b + 2 * e);
    case kQ4_0: return (nibble(b[2 + e % 16], e >= 16) - 8) * half_value(b);
    case kQ4_1: return nibble(b[4 + e % 16], e >= 16) * half_value(b) + half_value(b + 2);
    case kQ5_0: return (nibble(b[6 + e % 16], e >= 16) + 16 * bit(b + 2, e) - 16) * half_value(b);
    case kQ5_1: return (nibble(b[8 + e % 16], e >= 16) + 16 * bit(b + 4, e)) * half_value(b) + half_value(b + 2);
    case kQ8_0: return static_cast<int8_t>(b[2 + e]) * half_value(b);
    case kQ4_K: case kQ5_K: {
      // Sub-block s = e/32: the low (s even) or high nibbles of 32 bytes starting at 32·(s/2); Q5_K
      // adds bit s of byte e%32 of its 32 high-bit bytes as 16.
      const int s = e / 32, l = e % 32;
      int scale, min;
      k_scale_min(b + 4, s, scale, min);
      const uint8_t* q = b + (type == kQ4_K ? 16 : 48);
      int v = nibble(q[32 * (s / 2) + l], s % 2 == 1);
      if (type == kQ5_K) v += 16 * ((b[16 + l] >> s) & 1);
      return half_value(b) * scale * v - half_value(b + 2) * min;
    }
    case kQ6_K: {
      // Half h = e/128; its 32·k + l takes the low (k < 2) or high nibble of low byte 64h + l + 32·(k%2),
      // bits 2k, 2k+1 of high byte 128 + 32h + l, and the int8 scale 192 + 8h + 2k + l/16.
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int low = nibble(b[64 * h + l + 32 * (k % 2)], k >= 2);
      const int high = (b[128 + 32 * h + l] >> (2 * k)) % 4;
      const int scale = static_cast<int8_t>(b[192 + 8 * h + 2 * k + l / 16]);
      return half_value(b + 208) * scale * (low + 16 * high - 32);
    }
    default: return NAN;
  }
}

// GGUF bytes, little endian, field by field.
struct GgufWriter {
  std::vector<uint8_t> bytes;

  void raw(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u8(uint8_t v) { raw(v, 1); }
  void u32(uint32_t v) { raw(v, 4); }
  void u64(uint64_t v) { raw(v, 8); }
  void f32(float f) { uint32_t w; std::memcpy(&w, &f, 4); raw(w, 4); }
  void f64(double f) { uint64_t w; std::memcpy(&w, &f, 8); raw(w, 8); }
  void str(const std::string& s) { u64(s.size()); bytes.insert(bytes.end(), s.begin(), s.end()); }
  void header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    u32(version);
    u64(tensors);
    u64(kvs);
  }
  void key(const std::string& k, uint32_t value_type) { str(k); u32(value_type); }
  void tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    str(name);
    u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) u64(n);
    u32(type);
    u64(offset);
  }
  void pad(uint64_t alignment) {
    while (bytes.size() % alignment) bytes.push_back(0);
  }
};

}  // namespace test

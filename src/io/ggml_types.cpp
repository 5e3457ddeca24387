#include "io/ggml_types.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half.h"

namespace mh::ggml {

namespace {
// By type number; a null name is a number ggml does not (or no longer) use. Sizes: ggml-common.h.
constexpr TypeInfo kTypes[] = {
    {"F32", 1, 4, true},        {"F16", 1, 2, true},       {"Q4_0", 32, 18, true},
    {"Q4_1", 32, 20, true},     {nullptr, 0, 0, false},    {nullptr, 0, 0, false},
    {"Q5_0", 32, 22, true},     {"Q5_1", 32, 24, true},    {"Q8_0", 32, 34, true},
    {"Q8_1", 32, 36, false},    {"Q2_K", 256, 84, false},  {"Q3_K", 256, 110, false},
    {"Q4_K", 256, 144, true},   {"Q5_K", 256, 176, true},  {"Q6_K", 256, 210, true},
    {"Q8_K", 256, 292, false},  {"IQ2_XXS", 256, 66, false}, {"IQ2_XS", 256, 74, false},
    {"IQ3_XXS", 256, 98, false}, {"IQ1_S", 256, 50, false}, {"IQ4_NL", 32, 18, false},
    {"IQ3_S", 256, 110, false}, {"IQ2_S", 256, 82, false}, {"IQ4_XS", 256, 136, false},
    {"I8", 1, 1, false},        {"I16", 1, 2, false},      {"I32", 1, 4, false},
    {"I64", 1, 8, false},       {"F64", 1, 8, false},      {"IQ1_M", 256, 56, false},
    {"BF16", 1, 2, true},       {nullptr, 0, 0, false},    {nullptr, 0, 0, false},
    {nullptr, 0, 0, false},     {"TQ1_0", 256, 54, false}, {"TQ2_0", 256, 66, false},
    {nullptr, 0, 0, false},     {nullptr, 0, 0, false},    {nullptr, 0, 0, false},
    {"MXFP4", 32, 17, false},   {"NVFP4", 64, 36, false},  {"Q1_0", 128, 18, false},
    {"Q2_0", 64, 18, false},
};
constexpr uint32_t kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);

float f16_at(const uint8_t* p) { return half_to_float(static_cast<uint16_t>(p[0] | p[1] << 8)); }

// Q4_0, 18 bytes: f16 d, 16 bytes of 4-bit q. Element j < 16 is byte j's low nibble, j + 16 its
// high nibble; value (q − 8)·d.
void q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b[2 + j] & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
  }
}

// Q4_1, 20 bytes: f16 d, f16 m, nibbles as Q4_0; value q·d + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b[4 + j] & 0xF) * d + m;
    y[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
  }
}

// The 32 fifth bits of Q5_0 / Q5_1 (bit j belongs to element j), little endian.
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// Q5_0, 22 bytes: f16 d, 4 bytes of fifth bits, nibbles as Q4_0; value (q − 16)·d.
void q5_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint32_t high = le32(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[6 + j] & 0xF) | ((high >> j) & 1) << 4;
    const int hi = (b[6 + j] >> 4) | ((high >> (j + 16)) & 1) << 4;
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + 16] = static_cast<float>(hi - 16) * d;
  }
}

// Q5_1, 24 bytes: f16 d, f16 m, fifth bits, nibbles; value q·d + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint32_t high = le32(b + 4);
  for (int j = 0; j < 16; ++j) {
    const int lo = (b[8 + j] & 0xF) | ((high >> j) & 1) << 4;
    const int hi = (b[8 + j] >> 4) | ((high >> (j + 16)) & 1) << 4;
    y[j] = static_cast<float>(lo) * d + m;
    y[j + 16] = static_cast<float>(hi) * d + m;
  }
}

// Q8_0, 34 bytes: f16 d, 32 int8 q; value q·d.
void q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// The K-quants' eight 6-bit (scale, min) pairs in 12 bytes: pairs 0–3 are the low 6 bits of bytes
// 0–3 (scales) and 4–7 (mins); pairs 4–7 take their low 4 bits from byte j + 4 (scale: low nibble,
// min: high nibble) and their top 2 bits from the top of byte j − 4 (scale) or byte j (min).
void scale_min(const uint8_t* s, int j, int& scale, int& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
    min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

// Q4_K, 144 bytes for 256 elements: f16 d, f16 dmin, 12 bytes of scales and mins, 128 bytes of
// nibbles. Sub-block s (32 elements) is the low (s even) or high (s odd) nibbles of bytes
// 32·(s/2) … +31; value (d·scale)·q − dmin·min. Q5_K, 176 bytes, is the same with 32 bytes of
// fifth bits after the scales (`high`): element l of sub-block s takes bit s of byte l.
void k_quant_4_or_5(const uint8_t* b, float* y, const uint8_t* high, const uint8_t* q) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  for (int s = 0; s < 8; ++s) {
    int scale, min;
    scale_min(scales, s, scale, min);
    const float ds = d * static_cast<float>(scale), ms = dmin * static_cast<float>(min);
    const uint8_t* row = q + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; ++l) {
      const int v = ((row[l] >> shift) & 0xF) | (high ? ((high[l] >> s) & 1) << 4 : 0);
      y[32 * s + l] = ds * static_cast<float>(v) - ms;
    }
  }
}
void q4_k(const uint8_t* b, float* y) { k_quant_4_or_5(b, y, nullptr, b + 16); }
void q5_k(const uint8_t* b, float* y) { k_quant_4_or_5(b, y, b + 16, b + 48); }

// Q6_K, 210 bytes for 256 elements: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8
// scales, f16 d. Each half h (128 elements) uses 64 low bytes, 32 high bytes and 8 scales; its
// element 32·k + l (k = 0..3) is the low (k < 2) or high nibble of low byte l + 32·(k % 2), with
// bits 2k, 2k+1 of high byte l on top, and scale 2k + l/16; value (d·scale)·(q − 32).
int q6_k_quant(const uint8_t* b, int h, int k, int l) {
  return ((b[64 * h + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF) | ((b[128 + 32 * h + l] >> (2 * k)) & 3) << 4;
}
void q6_k(const uint8_t* b, float* y) {
  const float d = f16_at(b + 208);
  for (int h = 0; h < 2; ++h) {
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l)
        y[128 * h + 32 * k + l] = d * static_cast<float>(scales[2 * k + l / 16]) * static_cast<float>(q6_k_quant(b, h, k, l) - 32);
  }
}

template <void (*Block)(const uint8_t*, float*)>
void blocks(const uint8_t* src, float* dst, int64_t n, const TypeInfo& t) {
  for (int64_t i = 0; i < n; ++i) Block(src + i * t.bytes, dst + i * t.block);
}
}  // namespace

const TypeInfo* type_info(uint32_t type) {
  return type < kTypeCount && kTypes[type].name ? &kTypes[type] : nullptr;
}

std::string type_name(uint32_t type) {
  const TypeInfo* t = type_info(type);
  return t ? t->name : "type " + std::to_string(type);
}

std::string supported_types() {
  std::string list;
  for (const TypeInfo& t : kTypes)
    if (t.dequantizable) list += (list.empty() ? "" : ", ") + std::string(t.name);
  return list;
}

std::string dequantize_row(uint32_t type, const void* source, float* dst, int64_t count) {
  const TypeInfo* t = type_info(type);
  if (!t || !t->dequantizable)
    return "ggml type " + type_name(type) + " cannot be dequantized here (supported: " + supported_types() + ")";
  if (count < 0 || count % t->block != 0)
    return std::to_string(count) + " elements of " + t->name + " are not a whole number of its " +
           std::to_string(t->block) + "-element blocks";
  if (static_cast<uint64_t>(count) > SIZE_MAX / sizeof(float))  // wasm32: no such buffer exists
    return std::to_string(count) + " elements do not fit in this machine's memory";
  const uint8_t* src = static_cast<const uint8_t*>(source);
  const int64_t n = count / t->block;
  switch (type) {
    case kF32: std::memcpy(dst, src, static_cast<size_t>(count) * 4); break;  // little-endian hosts
    case kF16:
      for (int64_t i = 0; i < count; ++i) dst[i] = f16_at(src + 2 * i);
      break;
    case kBF16:
      for (int64_t i = 0; i < count; ++i) dst[i] = bf16_to_float(static_cast<uint16_t>(src[2 * i] | src[2 * i + 1] << 8));
      break;
    case kQ4_0: blocks<q4_0>(src, dst, n, *t); break;
    case kQ4_1: blocks<q4_1>(src, dst, n, *t); break;
    case kQ5_0: blocks<q5_0>(src, dst, n, *t); break;
    case kQ5_1: blocks<q5_1>(src, dst, n, *t); break;
    case kQ8_0: blocks<q8_0>(src, dst, n, *t); break;
    case kQ4_K: blocks<q4_k>(src, dst, n, *t); break;
    case kQ5_K: blocks<q5_k>(src, dst, n, *t); break;
    case kQ6_K: blocks<q6_k>(src, dst, n, *t); break;
    default: return "ggml type " + type_name(type) + " is marked dequantizable but has no decoder";
  }
  return "";
}

Regrouping regrouping(uint32_t type) {
  switch (type) {
    case kQ8_0: case kQ5_0: return Regrouping::kEight;
    case kQ4_0: case kQ4_1: case kQ4_K: return Regrouping::kFour;
    case kQ6_K: return Regrouping::kSix;
    case kQ5_1: case kQ5_K: return Regrouping::kFive;
    default: return Regrouping::kNone;
  }
}

// Q4_K and Q5_K (type): the same header, Q5_K's fifth bits before its nibbles (bit `sub` of byte 16 + l: k_quant_4_or_5).
static void regroup_k_row(uint32_t type, const void* source, int64_t count, float* d, float* dmin, uint8_t* sc, uint8_t* m,
                          int8_t* q) {
  const bool five = type == kQ5_K;
  const uint8_t* b = static_cast<const uint8_t*>(source);
  for (int64_t i = 0; i < count / 256; ++i, b += type_info(type)->bytes, q += 256, sc += 8, m += 8) {
    d[i] = f16_at(b), dmin[i] = f16_at(b + 2);
    for (int sub = 0; sub < 8; ++sub) {
      int scale, min;
      scale_min(b + 4, sub, scale, min);
      sc[sub] = static_cast<uint8_t>(scale), m[sub] = static_cast<uint8_t>(min);
      const uint8_t* row = b + (five ? 48 : 16) + 32 * (sub / 2);  // sub-blocks 2·p and 2·p + 1: one run of 32 bytes
      for (int l = 0; l < 32; ++l)
        q[32 * sub + l] = static_cast<int8_t>(((row[l] >> (4 * (sub % 2))) & 0xF) | (five ? ((b[16 + l] >> sub) & 1) << 4 : 0));
    }
  }
}
// Each layout as its dequantization above reads it; Q4_0's (q − 8)·d is d·q − 8d exactly (both
// products are exact, and so is their difference), Q4_1's and Q5_1's q·d + m is q·d − (−m), Q6_K's
// d·sc·(q − 32) is (d·sc)·(q − 32), the same float32 operations in the same order. One loop per
// type, each block's values written as bytes: the loader calls this for every row of a file.
void regroup_row(uint32_t type, const void* source, int64_t count, float* scales, float* mins, int8_t* q) {
  const uint8_t* b = static_cast<const uint8_t*>(source);
  const TypeInfo& t = *type_info(type);
  const int64_t n = count / t.block;
  switch (type) {
    case kQ8_0:
      for (int64_t i = 0; i < n; ++i, b += t.bytes, q += 32) {
        scales[i] = f16_at(b), mins[i] = 0;
        std::memcpy(q, b + 2, 32);
      }
      break;
    case kQ5_0: case kQ5_1: {  // Q5_0's q − 16 with a scale; Q5_1's q with a scale and a min
      const bool one = type == kQ5_1;
      const int at = one ? 4 : 2, offset = one ? 0 : 16;  // the fifth bits, then the nibbles
      for (int64_t i = 0; i < n; ++i, b += t.bytes, q += 32) {
        scales[i] = f16_at(b), mins[i] = one ? -f16_at(b + 2) : 0;
        const uint32_t high = le32(b + at);
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>(((b[at + 4 + j] & 0xF) | ((high >> j) & 1) << 4) - offset);
          q[j + 16] = static_cast<int8_t>(((b[at + 4 + j] >> 4) | ((high >> (j + 16)) & 1) << 4) - offset);
        }
      }
      break;
    }
    case kQ4_0: case kQ4_1: {
      const int at = type == kQ4_0 ? 2 : 4;
      for (int64_t i = 0; i < n; ++i, b += t.bytes, q += 32) {
        scales[i] = f16_at(b);
        mins[i] = type == kQ4_0 ? 8.0f * scales[i] : -f16_at(b + 2);
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>(b[at + j] & 0xF);
          q[j + 16] = static_cast<int8_t>(b[at + j] >> 4);
        }
      }
      break;
    }
    case kQ4_K: case kQ5_K: {  // regroup_k_row's integers, each sub-block's d · sc and dmin · m made floats
      thread_local std::vector<float> d, dmin;
      thread_local std::vector<uint8_t> sc, m;
      d.resize(static_cast<size_t>(n)), dmin.resize(static_cast<size_t>(n));
      sc.resize(static_cast<size_t>(8 * n)), m.resize(static_cast<size_t>(8 * n));
      regroup_k_row(type, source, count, d.data(), dmin.data(), sc.data(), m.data(), q);
      for (int64_t e = 0; e < 8 * n; ++e) {
        scales[e] = d[e / 8] * static_cast<float>(sc[e]);
        mins[e] = dmin[e / 8] * static_cast<float>(m[e]);
      }
      break;
    }
    case kQ6_K:  // element e's scale is byte 192 + e / 16 (q6_k above)
      for (int64_t i = 0; i < n; ++i, b += t.bytes, q += 256, scales += 16) {
        const float d = f16_at(b + 208);
        for (int s = 0; s < 16; ++s) scales[s] = d * static_cast<float>(static_cast<int8_t>(b[192 + s]));
        for (int h = 0; h < 2; ++h) {
          const uint8_t *low = b + 64 * h, *high = b + 128 + 32 * h;
          int8_t* out = q + 128 * h;
          for (int l = 0; l < 32; ++l) {  // q6_k_quant for k = 0…3
            out[l] = static_cast<int8_t>(((low[l] & 0xF) | (high[l] & 3) << 4) - 32);
            out[32 + l] = static_cast<int8_t>(((low[32 + l] & 0xF) | ((high[l] >> 2) & 3) << 4) - 32);
            out[64 + l] = static_cast<int8_t>(((low[l] >> 4) | ((high[l] >> 4) & 3) << 4) - 32);
            out[96 + l] = static_cast<int8_t>(((low[32 + l] >> 4) | ((high[l] >> 6) & 3) << 4) - 32);
          }
        }
      }
      break;
    default: break;
  }
}

void regroup_q6_k_row(const void* source, int64_t count, float* d, int8_t* sc, int8_t* q) {
  thread_local std::vector<float> scales;  // regroup_row's d · sc, not kept
  scales.resize(static_cast<size_t>(count / 16));
  regroup_row(kQ6_K, source, count, scales.data(), nullptr, q);
  const uint8_t* b = static_cast<const uint8_t*>(source);
  for (int64_t i = 0; i < count / 256; ++i, b += type_info(kQ6_K)->bytes) {
    d[i] = f16_at(b + 208);
    std::memcpy(sc + 16 * i, b + 192, 16);
  }
}

void regroup_q4_k_row(const void* source, int64_t count, float* d, float* dmin, uint8_t* sc, uint8_t* m, int8_t* q) {
  regroup_k_row(kQ4_K, source, count, d, dmin, sc, m, q);
}
void regroup_q5_k_row(const void* source, int64_t count, float* d, float* dmin, uint8_t* sc, uint8_t* m, int8_t* q) {
  regroup_k_row(kQ5_K, source, count, d, dmin, sc, m, q);
}

// v within [lo, hi], NaN (0 times an infinite inverse) as `zero`: what a subnormal scale would
// otherwise make undefined (ggml's own quantizers leave it so); other values are within range already.
static float within(float v, float lo, float hi, float zero) { return v >= lo ? (v <= hi ? v : hi) : (v < lo ? lo : zero); }

// Q8_0: d = max |x| / 127 and q = round(x / d), ties away from zero (roundf); Q4_0: d = m / −8 for
// the m of largest magnitude (its sign kept) and q = min(15, trunc(x / d + 8.5)). The scale is
// stored as f16 and q is computed with the unrounded d's inverse, as ggml does.
void quantize_row(uint32_t type, const float* src, void* dst, int64_t count) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < count / 32; ++i) {
    const float* x = src + 32 * i;
    if (type == kQ8_0) {
      float largest = 0;
      for (int j = 0; j < 32; ++j) largest = std::max(largest, std::fabs(x[j]));
      const float d = largest / 127.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
      const uint16_t h = float_to_half(d);
      out[0] = static_cast<uint8_t>(h), out[1] = static_cast<uint8_t>(h >> 8);
      for (int j = 0; j < 32; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(within(x[j] * inverse, -127.0f, 127.0f, 0.0f))));
      out += 34;
    } else {
      float largest = 0, extreme = 0;
      for (int j = 0; j < 32; ++j)
        if (largest < std::fabs(x[j])) largest = std::fabs(x[j]), extreme = x[j];
      const float d = extreme / -8.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
      const uint16_t h = float_to_half(d);
      out[0] = static_cast<uint8_t>(h), out[1] = static_cast<uint8_t>(h >> 8);
      const auto level = [&](float v) { return std::min(15, static_cast<int>(static_cast<int8_t>(within(v * inverse + 8.5f, 0.0f, 16.5f, 8.5f)))); };
      for (int j = 0; j < 16; ++j) out[2 + j] = static_cast<uint8_t>(level(x[j]) | level(x[j + 16]) << 4);
      out += 18;
    }
  }
}

}  // namespace mh::ggml

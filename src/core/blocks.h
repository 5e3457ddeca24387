// Weight matrices kept quantized in memory: gemm's panel layout (core/gemm.h: panels of 8 columns)
// with each run of 32 rows of a panel stored as one block:
//   kQ8: float scale[8]; int8 q[32][8]                 value = scale[c] · q            288 bytes
//   kQ4: float scale[8]; float min[8]; uint8 q[32][4]  value = scale[c] · q − min[c]   192 bytes
//        (row r's 4 bytes hold columns 2i in the low nibble and 2i + 1 in the high one)
// — 1.125 and 0.75 bytes a weight. GGUF's Q8_0 and Q5_0 become kQ8, Q4_0, Q4_1 and Q4_K become kQ4,
// without a change of value: the product and then the difference in float32 are what ggml's
// dequantization computes. K (the rows) is a whole number of blocks.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace mh {

constexpr int kBlockRows = 32;

constexpr bool is_block_type(WeightType t) { return t == WeightType::kQ8 || t == WeightType::kQ4; }
constexpr int64_t block_bytes(WeightType t) { return t == WeightType::kQ8 ? 288 : 192; }

// Bytes of a K × N matrix of a block type: ⌈N/8⌉ panels of K/32 blocks.
inline int64_t block_matrix_bytes(WeightType t, int64_t K, int64_t N) {
  return (N + 7) / 8 * (K / kBlockRows) * block_bytes(t);
}

// Where the block holding row k of column j starts, in bytes, in a matrix of ld rows.
inline int64_t block_offset(WeightType t, int64_t k, int64_t j, int64_t ld) {
  return ((j / 8) * (ld / kBlockRows) + k / kBlockRows) * block_bytes(t);
}

// Element (r, c) of one block (r < 32, c < 8) as float32.
inline float block_element(WeightType t, const uint8_t* block, int r, int c) {
  float scale;
  std::memcpy(&scale, block + 4 * c, 4);
  if (t == WeightType::kQ8) return scale * static_cast<float>(static_cast<int8_t>(block[32 + 8 * r + c]));
  float min;
  std::memcpy(&min, block + 32 + 4 * c, 4);
  const uint8_t byte = block[64 + 4 * r + c / 2];
  const float q = static_cast<float>(c % 2 ? byte >> 4 : byte & 15);
  return scale * q - min;
}

// out (rows × 8, row-major) = rows [first, first + rows) of one block as float32: in wasm, 8
// values in a few vector operations; the same products and differences as below.
inline void dequantize_block_rows(WeightType t, const uint8_t* block, int first, int rows, float* out) {
#if defined(__wasm_simd128__)
  const v128_t scale_lo = wasm_v128_load(block), scale_hi = wasm_v128_load(block + 16);
  if (t == WeightType::kQ8) {
    for (int r = first; r < first + rows; ++r) {
      const v128_t q = wasm_i16x8_load8x8(block + 32 + 8 * r);
      wasm_v128_store(out, wasm_f32x4_mul(scale_lo, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(q))));
      wasm_v128_store(out + 4, wasm_f32x4_mul(scale_hi, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(q))));
      out += 8;
    }
    return;
  }
  const v128_t min_lo = wasm_v128_load(block + 32), min_hi = wasm_v128_load(block + 48);
  for (int r = first; r < first + rows; ++r) {
    const v128_t bytes = wasm_v128_load32_zero(block + 64 + 4 * r);
    // Byte i's low nibble is column 2i, its high nibble column 2i + 1.
    const v128_t low = wasm_v128_and(bytes, wasm_i8x16_splat(15)), high = wasm_u8x16_shr(bytes, 4);
    const v128_t q = wasm_u16x8_extend_low_u8x16(wasm_i8x16_shuffle(low, high, 0, 16, 1, 17, 2, 18, 3, 19, 0, 0, 0, 0, 0, 0, 0, 0));
    const v128_t lo = wasm_f32x4_convert_i32x4(wasm_u32x4_extend_low_u16x8(q));
    const v128_t hi = wasm_f32x4_convert_i32x4(wasm_u32x4_extend_high_u16x8(q));
    wasm_v128_store(out, wasm_f32x4_sub(wasm_f32x4_mul(scale_lo, lo), min_lo));
    wasm_v128_store(out + 4, wasm_f32x4_sub(wasm_f32x4_mul(scale_hi, hi), min_hi));
    out += 8;
  }
#else
  float scale[8], min[8] = {};
  std::memcpy(scale, block, 32);
  if (t == WeightType::kQ8) {
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 32);
    for (int r = first; r < first + rows; ++r)
      for (int c = 0; c < 8; ++c) out[(r - first) * 8 + c] = scale[c] * static_cast<float>(q[8 * r + c]);
    return;
  }
  std::memcpy(min, block + 32, 32);
  const uint8_t* q = block + 64;
  for (int r = first; r < first + rows; ++r)
    for (int c = 0; c < 8; ++c) {
      const uint8_t byte = q[4 * r + c / 2];
      out[(r - first) * 8 + c] = scale[c] * static_cast<float>(c % 2 ? byte >> 4 : byte & 15) - min[c];
    }
#endif
}

// Writes column c (< 8) of a block: 32 quantized values with their scale (and min, for kQ4).
inline void write_block_column(WeightType t, uint8_t* block, int c, float scale, float min, const int* q) {
  std::memcpy(block + 4 * c, &scale, 4);
  if (t == WeightType::kQ8) {
    for (int r = 0; r < kBlockRows; ++r) block[32 + 8 * r + c] = static_cast<uint8_t>(static_cast<int8_t>(q[r]));
    return;
  }
  std::memcpy(block + 32 + 4 * c, &min, 4);
  for (int r = 0; r < kBlockRows; ++r) {
    uint8_t& byte = block[64 + 4 * r + c / 2];
    byte = static_cast<uint8_t>(c % 2 ? (byte & 15) | (q[r] << 4) : (byte & 0xf0) | (q[r] & 15));
  }
}

}  // namespace mh

// Weight matrices kept quantized in memory: gemm's panel layout (core/gemm.h: panels of 8 columns)
// with each run of 32 rows of a panel stored as one block:
//   kQ8: float scale[8]; int8 q[8 groups][8 columns][4 rows]         value = scale[c] · q        288 bytes
//   kQ4: float scale[8]; float min[8]; uint8 q[8 groups][4][4 rows]   value = scale[c] · q − min[c] 192 bytes
//        (the byte of column c < 4 holds c in its low nibble and c + 4 in its high one)
//   kQ5: float scale[8]; float min[8]; uint8 q[8 groups][8 columns][4 rows]   value = scale[c] · q − min[c]   320 bytes
//        (q within 0…31)
//   kQ4K: 8 consecutive blocks (rows 256s … 256s + 255) make a super-block, as Q4_K's: block j of it holds
//        a 32-byte share of the super-block's floats and integer scales, then kQ4's 128 bytes of values
//        (uint8 q[8 groups][4][4 rows]): 160 bytes. value = (d[c] · sc[j][c]) · q − dmin[c] · m[j][c],
//        Q4_K's own (q4k_meta: d, dmin, the 6-bit sc and m).
//   kQ5K: kQ4K's with a fifth bit: block j of a super-block holds its 32-byte share and its 128 bytes of
//        low nibbles (kQ4K's both), then the fifth bits, 16 bytes for each 4 groups (groups 4h … 4h + 3):
//        byte k of them holds those of the nibbles' byte k in each group, bit 3 − i for group 4h + i's
//        low nibble (columns 0–3), bit 4 + i for its high one (block_q5k_high_byte): 192 bytes.
//        value = (d[c] · sc[j][c]) · q − dmin[c] · m[j][c], q 0…31, Q5_K's own.
//   kQ40: float scale[8]; uint8 q[8 groups][4][4 rows] (kQ4's)   value = scale[c] · q − 8 · scale[c]   160 bytes
//        (Q4_0's d · (q − 8): its min is 8 · d, exact in float32, so it is not stored)
//   kQ6K: 8 consecutive blocks make a super-block, as Q6_K's: block j of it holds int8 sc[2 halves][8], a
//        16-byte share of the super-block's floats (q6k_d: float d[8] in blocks 0 and 1), then 256
//        bytes of u[8 groups][8 columns][4 rows]: 288 bytes. u within 0…63 is Q6_K's own 6-bit value,
//        stored as it is; value = (d[c] · sc[r / 16][c]) · (u − 32), Q6_K's own.
// — 1.125, 0.75, 1.25, 0.625, 0.625, 1.125 and 0.75 bytes a weight. A group is 4 rows: a column's 4 values side by side are what
// i32x4.dot_i16x8_s sums in two lanes and relaxed SIMD's int8 dot in one after a widening add (gemm.cpp, block_row).
// GGUF's Q8_0 and Q5_0 become kQ8, Q4_0 becomes kQ40, Q4_1 becomes kQ4, Q4_K becomes kQ4K, Q6_K becomes kQ6K, Q5_K
// becomes kQ5K, Q5_1 becomes kQ5, without a change of value: the product and then the difference in float32 are what ggml's dequantization
// computes (Q6_K's (d · sc) · (q − 32): the scale is d · sc). K (the rows) is a whole number of blocks.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace mh {

constexpr int kBlockRows = 32;

constexpr int kSuperRows = 256, kSuperBlocks = kSuperRows / kBlockRows;  // kQ4K's, kQ5K's and kQ6K's super-block

constexpr bool is_block_type(WeightType t) {
  return t == WeightType::kQ8 || t == WeightType::kQ4 || t == WeightType::kQ5 || t == WeightType::kQ4K ||
         t == WeightType::kQ40 || t == WeightType::kQ6K || t == WeightType::kQ5K;
}
// The types with Q4_K's (and Q5_K's) super-block floats and integer scales and mins (q4k_meta).
constexpr bool has_q4k_meta(WeightType t) { return t == WeightType::kQ4K || t == WeightType::kQ5K; }
// The types whose blocks make super-blocks of 256 rows, with integer scales and floats once a super-block.
constexpr bool has_super_blocks(WeightType t) { return has_q4k_meta(t) || t == WeightType::kQ6K; }
constexpr int64_t block_bytes(WeightType t) {
  return t == WeightType::kQ8 || t == WeightType::kQ6K ? 288
         : t == WeightType::kQ4 || t == WeightType::kQ5K ? 192
         : t == WeightType::kQ4K || t == WeightType::kQ40 ? 160
                                                          : 320;
}
// The types whose value is scale · q − min (q unsigned) with 8 mins: stored after the 8 scales
// (stores_mins), or kQ40's 8 · scale.
constexpr bool stores_mins(WeightType t) { return t == WeightType::kQ4 || t == WeightType::kQ5; }
constexpr bool has_mins(WeightType t) { return stores_mins(t) || t == WeightType::kQ40; }
// The types of 4-bit values, two columns a byte.
constexpr bool has_nibbles(WeightType t) { return t == WeightType::kQ4 || t == WeightType::kQ4K || t == WeightType::kQ40; }
// The types whose values are stored as nibbles two to a byte: those, and kQ5K's low four bits (its fifth apart).
constexpr bool has_low_nibbles(WeightType t) { return has_nibbles(t) || t == WeightType::kQ5K; }
// The types whose stored values are unsigned (0…15, 0…31, kQ6K's 0…63): what relaxed SIMD's int8 dot
// takes as its 7-bit operand as they are, where signed 8-bit values need a sign moved first.
constexpr bool has_unsigned_values(WeightType t) {
  return has_low_nibbles(t) || t == WeightType::kQ5 || t == WeightType::kQ6K;
}
// kQ6K's offset: Q6_K's value is (d · sc) · (u − 32), and the block stores u.
constexpr int kQ6Offset = 32;
// The bytes before a block's values: its floats (scales, and kQ4's and kQ5's mins), or the super-block types' share.
constexpr int block_float_bytes(WeightType t) { return stores_mins(t) ? 64 : 32; }
// The rows a matrix of type t has a whole number of (and a product's K): the super-block types' 256.
constexpr int type_rows(WeightType t) { return has_super_blocks(t) ? kSuperRows : kBlockRows; }
// Which block of its super-block holds row k (kQ4K, kQ5K, kQ6K; 0 for the other types, whose blocks stand alone).
inline int block_in_super(WeightType t, int64_t k) { return has_super_blocks(t) ? static_cast<int>(k / kBlockRows % kSuperBlocks) : 0; }

// kQ4K, kQ5K (t): byte x (< 256) of a super-block's shares, the 8 blocks' first 32 bytes, from its first block:
//   0–31 float d[8]; 32–63 float dmin[8];
//   64 + 16p + 8h + 2i + e: uint8 m[2p + e][4h + i] (p < 4: sub-blocks 2p, 2p + 1 side by side for the
//     columns 4h … 4h + 3: what a 16-bit dot with two sub-blocks' row sums takes, widened);
//   128 + 16j + 2c + e: uint8 sc[j][c] (twice: a 16-bit dot with sub-block j's int16 pairs takes it, widened).
inline uint8_t* q4k_meta(uint8_t* super, int x, WeightType t = WeightType::kQ4K) { return super + block_bytes(t) * (x / 32) + x % 32; }
inline const uint8_t* q4k_meta(const uint8_t* super, int x, WeightType t = WeightType::kQ4K) {
  return super + block_bytes(t) * (x / 32) + x % 32;
}
inline int q4k_m_byte(int j, int c) { return 64 + 16 * (j / 2) + 8 * (c / 4) + 2 * (c % 4) + j % 2; }
inline int q4k_sc_byte(int j, int c) { return 128 + 16 * j + 2 * c; }
inline float q4k_float(const uint8_t* super, int x, WeightType t = WeightType::kQ4K) {
  float value;
  std::memcpy(&value, q4k_meta(super, x, t), 4);
  return value;
}
// Sub-block j's scale and min of column c as Q4_K's (Q5_K's) dequantization makes them (float32 products).
inline float q4k_scale(const uint8_t* super, int j, int c, WeightType t = WeightType::kQ4K) {
  return q4k_float(super, 4 * c, t) * static_cast<float>(*q4k_meta(super, q4k_sc_byte(j, c), t));
}
inline float q4k_min(const uint8_t* super, int j, int c, WeightType t = WeightType::kQ4K) {
  return q4k_float(super, 32 + 4 * c, t) * static_cast<float>(*q4k_meta(super, q4k_m_byte(j, c), t));
}

// kQ6K: where the super-block's d of columns 4h … 4h + 3 are (h = 0, 1: 16 bytes in blocks 0 and 1), and
// the int8 sc of half `half` (rows 16 · half …) of column c in a block.
inline const uint8_t* q6k_d(const uint8_t* super, int h) { return super + block_bytes(WeightType::kQ6K) * h + 16; }
inline uint8_t* q6k_d(uint8_t* super, int h) { return super + block_bytes(WeightType::kQ6K) * h + 16; }
inline int q6k_sc_byte(int half, int c) { return 8 * half + c; }
inline float q6k_float_d(const uint8_t* super, int c) {
  float d;
  std::memcpy(&d, q6k_d(super, c / 4) + 4 * (c % 4), 4);
  return d;
}
// The scale of half `half` of block j, column c, as Q6_K's dequantization makes it: d · sc (float32).
inline float q6k_scale(const uint8_t* super, int j, int half, int c) {
  return q6k_float_d(super, c) * static_cast<float>(static_cast<int8_t>(super[block_bytes(WeightType::kQ6K) * j + q6k_sc_byte(half, c)]));
}

// Bytes of a K × N matrix of a block type: ⌈N/8⌉ panels of K/32 blocks.
inline int64_t block_matrix_bytes(WeightType t, int64_t K, int64_t N) {
  return (N + 7) / 8 * (K / kBlockRows) * block_bytes(t);
}

// Where the block holding row k of column j starts, in bytes, in a matrix of ld rows.
inline int64_t block_offset(WeightType t, int64_t k, int64_t j, int64_t ld) {
  return ((j / 8) * (ld / kBlockRows) + k / kBlockRows) * block_bytes(t);
}

// The bytes of a group of 4 rows of a block.
constexpr int block_group_bytes(WeightType t) { return has_low_nibbles(t) ? 16 : 32; }

// Where the value of row r (< 32), column c (< 8) is in a block: kQ8's byte, kQ6K's, kQ5's, or kQ4's byte
// (low nibble for c < 4, high for c ≥ 4).
inline int block_q8_byte(int r, int c) { return 32 + 32 * (r / 4) + 4 * c + r % 4; }
inline int block_q6_byte(int r, int c) { return block_q8_byte(r, c); }  // after kQ6K's share of the super-block
inline int block_q5_byte(int r, int c) { return 64 + 32 * (r / 4) + 4 * c + r % 4; }  // after the scales and mins
inline int block_q4_byte(int r, int c, WeightType t = WeightType::kQ4) { return block_float_bytes(t) + 16 * (r / 4) + 4 * (c % 4) + r % 4; }
// Where a kQ5K block's fifth bits start (after its share and its nibbles: 16 bytes for each half block);
// the byte holding the fifth bit of row r, column c (its low four bits: block_q4_byte's), and which bit.
constexpr int kQ5KFifthBits = 32 + 128;
inline int block_q5k_high_byte(int r, int c) { return kQ5KFifthBits + 16 * (r / 16) + 4 * (c % 4) + r % 4; }
inline int block_q5k_high_bit(int r, int c) { return c < 4 ? 3 - r / 4 % 4 : 4 + r / 4 % 4; }

// The integer q of row r, column c of one block (kQ6K's u − 32).
inline int block_integer(WeightType t, const uint8_t* block, int r, int c) {
  if (t == WeightType::kQ8) return static_cast<int8_t>(block[block_q8_byte(r, c)]);
  if (t == WeightType::kQ6K) return block[block_q6_byte(r, c)] - kQ6Offset;
  if (t == WeightType::kQ5) return block[block_q5_byte(r, c)];
  if (t == WeightType::kQ5K) {
    const uint8_t byte = block[block_q4_byte(r, c, t)];
    return (c < 4 ? byte & 15 : byte >> 4) | ((block[block_q5k_high_byte(r, c)] >> block_q5k_high_bit(r, c)) & 1) << 4;
  }
  const uint8_t byte = block[block_q4_byte(r, c, t)];
  return c < 4 ? byte & 15 : byte >> 4;
}

// Q4_0's offset: its value d · (q − 8) is kQ40's scale · q − min with min = 8 · scale (exact).
constexpr float kQ40Offset = 8.0f;
// The min of column c of a block of a has_mins type (kQ40's: kQ40Offset · scale).
inline float block_min(WeightType t, const uint8_t* block, int c) {
  float min;
  std::memcpy(&min, block + (stores_mins(t) ? 32 : 0) + 4 * c, 4);
  return t == WeightType::kQ40 ? kQ40Offset * min : min;
}

// The scale of row r, column c of one block (sub: block_in_super).
inline float block_scale(WeightType t, const uint8_t* block, int r, int c, int sub) {
  if (has_q4k_meta(t)) return q4k_scale(block - block_bytes(t) * sub, sub, c, t);
  if (t == WeightType::kQ6K) return q6k_scale(block - block_bytes(t) * sub, sub, r / 16, c);
  float scale;
  std::memcpy(&scale, block + 4 * c, 4);
  return scale;
}

// Element (r, c) of one block (r < 32, c < 8) as float32; sub: which block of its super-block it is
// (block_in_super of its first row).
inline float block_element(WeightType t, const uint8_t* block, int r, int c, int sub) {
  const float scale = block_scale(t, block, r, c, sub);
  const float q = static_cast<float>(block_integer(t, block, r, c));
  if (has_q4k_meta(t)) return scale * q - q4k_min(block - block_bytes(t) * sub, sub, c, t);
  if (!has_mins(t)) return scale * q;
  return scale * q - block_min(t, block, c);
}

#if defined(__wasm_simd128__)

// The group of 4 rows at `group` (within a block's values, from block_float_bytes on): the values
// as stored of columns 0–3 in `left` and of 4–7 in `right`, each column's 4 rows side by side (int8
// for kQ8, 0…63 for kQ6K, 0…31 for kQ5, 0…15 for kQ4, kQ4K and kQ5K's low four bits). The high
// nibbles: each byte less its low nibble, shifted in 16-bit lanes (no bit crosses a byte), where an
// 8-bit shift is a shift and a mask built anew in V8; the saturating subtraction, because LLVM folds a
// plain one back into that shift and mask.
inline void stored_group_at(WeightType t, const uint8_t* group, v128_t& left, v128_t& right) {
  if (!has_low_nibbles(t)) {
    left = wasm_v128_load(group);
    right = wasm_v128_load(group + 16);
    return;
  }
  const v128_t bytes = wasm_v128_load(group);
  left = wasm_v128_and(bytes, wasm_i8x16_splat(15));
  right = wasm_u16x8_shr(wasm_u8x16_sub_sat(bytes, left), 4);
}
// The fifth bits of a kQ5K half block's 4 groups, added to each group's values in turn as 16s
// (`high`: the half's 16 bytes of them). Group i's are bit 3 − i (columns 0–3) and 4 + i (4–7): a
// 16-bit shift a group moves each to bit 4 (by at most 4 left, 3 right, so the bits that cross into
// the next byte land elsewhere), and a mask keeps it; the same operations for every group, so a
// loop over them needs no group index.
struct Q5KFifthBits {
  v128_t left, right;
  explicit Q5KFifthBits(v128_t high) : left(high), right(high) {}
  void add_next(v128_t& low_nibbles, v128_t& high_nibbles) {
    const v128_t sixteen = wasm_i8x16_splat(16);
    left = wasm_i16x8_shl(left, 1);
    low_nibbles = wasm_v128_or(low_nibbles, wasm_v128_and(left, sixteen));
    high_nibbles = wasm_v128_or(high_nibbles, wasm_v128_and(right, sixteen));
    right = wasm_u16x8_shr(right, 1);
  }
};
// The same group as integers q (block_integer): kQ6K's u − 32 (int8), the others' as stored.
inline void block_group_at(WeightType t, const uint8_t* group, v128_t& left, v128_t& right) {
  stored_group_at(t, group, left, right);
  if (t == WeightType::kQ6K) {
    left = wasm_i8x16_sub(left, wasm_i8x16_splat(kQ6Offset));
    right = wasm_i8x16_sub(right, wasm_i8x16_splat(kQ6Offset));
  }
}
// min_lo, min_hi = a has_mins block's 8 mins, as block_min gives them: kQ4's and kQ5's stored,
// kQ40's kQ40Offset · its scales (exact).
inline void load_block_mins(WeightType t, const uint8_t* block, v128_t& min_lo, v128_t& min_hi) {
  if (t == WeightType::kQ40) {
    min_lo = wasm_f32x4_mul(wasm_v128_load(block), wasm_f32x4_splat(kQ40Offset));
    min_hi = wasm_f32x4_mul(wasm_v128_load(block + 16), wasm_f32x4_splat(kQ40Offset));
  } else {
    min_lo = wasm_v128_load(block + 32);
    min_hi = wasm_v128_load(block + 48);
  }
}
// Group g (rows 4g … 4g + 3) of a block, as block_group_at.
// (kQ5K's with its fifth bits: block_group_at gives only its low four.)
inline void block_group(WeightType t, const uint8_t* block, int g, v128_t& left, v128_t& right) {
  block_group_at(t, block + block_float_bytes(t) + block_group_bytes(t) * g, left, right);
  if (t == WeightType::kQ5K) {
    const v128_t high = wasm_v128_load(block + kQ5KFifthBits + 16 * (g / 4)), sixteen = wasm_i8x16_splat(16);
    left = wasm_v128_or(left, wasm_v128_and(wasm_i16x8_shl(high, 1 + g % 4), sixteen));
    right = wasm_v128_or(right, wasm_v128_and(wasm_u16x8_shr(high, g % 4), sixteen));
  }
}
#endif

// out (rows × 8, row-major) = rows [first, first + rows) of one block as float32: in wasm, whole
// groups of 4 rows in a few vector operations; the same products and differences as block_element
// (sub: as there).
inline void dequantize_block_rows(WeightType t, const uint8_t* block, int first, int rows, float* out, int sub) {
#if defined(__wasm_simd128__)
  if (first % 4 == 0 && rows % 4 == 0) {
    const bool mins = has_mins(t) || has_q4k_meta(t);
    // kQ4K: this block's scales, then mins, as Q4_K's dequantization makes them; kQ6K: its scales of
    // rows 0–15, then of 16–31
    alignas(16) float super[16];
    if (has_q4k_meta(t))
      for (int c = 0; c < 8; ++c) super[c] = block_scale(t, block, 0, c, sub), super[8 + c] = q4k_min(block - block_bytes(t) * sub, sub, c, t);
    if (t == WeightType::kQ6K)
      for (int c = 0; c < 8; ++c) super[c] = block_scale(t, block, 0, c, sub), super[8 + c] = block_scale(t, block, 16, c, sub);
    const uint8_t* floats = has_super_blocks(t) ? reinterpret_cast<const uint8_t*>(super) : block;
    v128_t scale_lo = wasm_v128_load(floats), scale_hi = wasm_v128_load(floats + 16);
    v128_t min_lo = wasm_f32x4_splat(0.0f), min_hi = min_lo;
    if (mins) load_block_mins(t, floats, min_lo, min_hi);  // kQ4K's and kQ5K's: `floats` holds them as kQ4's would
    // Two rows of 8 columns, as int16: the group's values are column after column.
    const auto store_rows = [&](v128_t pair, bool is_signed) {
      for (int half = 0; half < 2; ++half) {
        const v128_t q = half ? (is_signed ? wasm_i16x8_extend_high_i8x16(pair) : wasm_u16x8_extend_high_u8x16(pair))
                              : (is_signed ? wasm_i16x8_extend_low_i8x16(pair) : wasm_u16x8_extend_low_u8x16(pair));
        const v128_t lo = wasm_f32x4_mul(scale_lo, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(q)));
        const v128_t hi = wasm_f32x4_mul(scale_hi, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(q)));
        // kQ8 and kQ6K subtract nothing: x − 0 is x, the same bits as the product alone.
        wasm_v128_store(out, mins ? wasm_f32x4_sub(lo, min_lo) : lo);
        wasm_v128_store(out + 4, mins ? wasm_f32x4_sub(hi, min_hi) : hi);
        out += 8;
      }
    };
    for (int g = first / 4; g < (first + rows) / 4; ++g) {
      if (t == WeightType::kQ6K) {  // groups 4–7 (rows 16–31) have the second half's scales
        scale_lo = wasm_v128_load(floats + 32 * (g / 4));
        scale_hi = wasm_v128_load(floats + 16 + 32 * (g / 4));
      }
      v128_t left, right;
      block_group(t, block, g, left, right);
      const bool is_signed = !has_low_nibbles(t);  // kQ5's 0…31 are the same signed
      store_rows(wasm_i8x16_shuffle(left, right, 0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29), is_signed);
      store_rows(wasm_i8x16_shuffle(left, right, 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31), is_signed);
    }
    return;
  }
#endif
  for (int r = first; r < first + rows; ++r)
    for (int c = 0; c < 8; ++c) *out++ = block_element(t, block, r, c, sub);
}

// The value q as a block of type t (kQ8, kQ6K, kQ5, kQ5K) stores it: kQ8's −128 becomes −127, kQ6K's q
// is clamped to −32…31 and stored as u = q + 32, kQ5's and kQ5K's are clamped to 0…31
// (write_block_column and write_q6k_column say why).
constexpr int stored_block_value(WeightType t, int q) {
  const int lo = t == WeightType::kQ8 ? -127 : t == WeightType::kQ6K ? -32 : 0, hi = t == WeightType::kQ8 ? 127 : 31;
  return (q < lo ? lo : q > hi ? hi : q) + (t == WeightType::kQ6K ? kQ6Offset : 0);
}

// Writes column c (< 8) of a block: 32 quantized values with their scale (and min, for kQ4 and kQ5;
// kQ40's is 8 · scale whatever `min` says).
// kQ8 stores −128 as −127: relaxed SIMD's int8 dot moves a sign onto these values (gemm.cpp,
// block_row), which −128 would overflow; ggml's quantizers never write it (round(x / (max |x| / 127))),
// so only a hand-made file meets the difference.
inline void write_block_column(WeightType t, uint8_t* block, int c, float scale, float min, const int* q) {
  std::memcpy(block + 4 * c, &scale, 4);
  if (t == WeightType::kQ8) {
    for (int r = 0; r < kBlockRows; ++r)
      block[block_q8_byte(r, c)] = static_cast<uint8_t>(static_cast<int8_t>(stored_block_value(t, q[r])));
    return;
  }
  if (stores_mins(t)) std::memcpy(block + 32 + 4 * c, &min, 4);
  if (t == WeightType::kQ5) {  // 0…31, as store_block_values keeps them
    for (int r = 0; r < kBlockRows; ++r) block[block_q5_byte(r, c)] = static_cast<uint8_t>(stored_block_value(t, q[r]));
    return;
  }
  for (int r = 0; r < kBlockRows; ++r) {
    uint8_t& byte = block[block_q4_byte(r, c, t)];
    byte = static_cast<uint8_t>(c >= 4 ? (byte & 15) | (q[r] << 4) : (byte & 0xf0) | (q[r] & 15));
  }
}

// A file's values as a block type stores them (stored_block_value), n of them in place, before
// write_block_panel; the 4-bit types' are within 0…15 already.
inline void store_block_values(WeightType t, int8_t* q, int64_t n) {
  if (has_nibbles(t)) return;
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(stored_block_value(t, q[i]));
}

// Writes one whole block, all 8 columns at once: column c's 32 values (rows 0–31, as
// store_block_values makes them) are q[c · stride …], and `floats` are the block's leading floats as it
// keeps them (block_float_bytes: kQ8 and kQ40 scale[8]; kQ4 and kQ5 scale[8], min[8]; kQ4K, kQ5K
// and kQ6K its 32 bytes of the super-block's shares).
// The same bytes as write_block_column / write_q4k_column / write_q6k_column for
// each column, written in order a 4-byte group at a time instead of a byte at a time, scattered.
inline void write_block_panel(WeightType t, uint8_t* block, const int8_t* q, int64_t stride, const float* floats) {
  std::memcpy(block, floats, static_cast<size_t>(block_float_bytes(t)));
  uint8_t* out = block + block_float_bytes(t);
  for (int g = 0; g < kBlockRows / 4; ++g) {
    if (has_low_nibbles(t)) {  // column c in the low nibbles, c + 4 in the high ones; kQ5K's fifth bits apart
      for (int c = 0; c < 4; ++c) {  // 4 rows a word
        uint32_t low, high;
        std::memcpy(&low, q + c * stride + 4 * g, 4);
        std::memcpy(&high, q + (c + 4) * stride + 4 * g, 4);
        const uint32_t both = (low & 0x0F0F0F0Fu) | (high & 0x0F0F0F0Fu) << 4;
        std::memcpy(out + 16 * g + 4 * c, &both, 4);
        if (t != WeightType::kQ5K) continue;
        uint8_t* fifth = block + block_q5k_high_byte(4 * g, c);  // each byte's bit 4 to bit 0, then to its place
        uint32_t bits = 0;
        if (g % 4) std::memcpy(&bits, fifth, 4);
        bits |= (low >> 4 & 0x01010101u) << block_q5k_high_bit(4 * g, c) | (high >> 4 & 0x01010101u) << block_q5k_high_bit(4 * g, c + 4);
        std::memcpy(fifth, &bits, 4);
      }
    } else {
      for (int c = 0; c < 8; ++c) std::memcpy(out + 32 * g + 4 * c, q + c * stride + 4 * g, 4);
    }
  }
}

// Writes column c (< 8) of a kQ4K or kQ5K (t) super-block (its 8 blocks from `super`): 256 values q (kQ4K:
// 0…15; kQ5K: 0…31, clamped, its fifth bits where block_q5k_high_byte says) with Q4_K's (Q5_K's) d, dmin
// and the 8 sub-blocks' sc and m (0…63), as the loader's write_block_panel writes them.
inline void write_q4k_column(uint8_t* super, int c, float d, float dmin, const int* sc, const int* m, const int* q,
                             WeightType t = WeightType::kQ4K) {
  std::memcpy(q4k_meta(super, 4 * c, t), &d, 4);
  std::memcpy(q4k_meta(super, 32 + 4 * c, t), &dmin, 4);
  for (int j = 0; j < kSuperBlocks; ++j) {
    *q4k_meta(super, q4k_m_byte(j, c), t) = static_cast<uint8_t>(m[j]);
    q4k_meta(super, q4k_sc_byte(j, c), t)[0] = q4k_meta(super, q4k_sc_byte(j, c), t)[1] = static_cast<uint8_t>(sc[j]);
    uint8_t* block = super + block_bytes(t) * j;
    for (int r = 0; r < kBlockRows; ++r) {
      const int v = t == WeightType::kQ5K ? stored_block_value(t, q[32 * j + r]) : q[32 * j + r];
      uint8_t& byte = block[block_q4_byte(r, c, t)];
      byte = static_cast<uint8_t>(c >= 4 ? (byte & 15) | (v & 15) << 4 : (byte & 0xf0) | (v & 15));
      if (t != WeightType::kQ5K) continue;
      uint8_t& high = block[block_q5k_high_byte(r, c)];
      const int bit = block_q5k_high_bit(r, c);
      high = static_cast<uint8_t>((high & ~(1 << bit)) | (v >> 4) << bit);
    }
  }
}

// Writes column c (< 8) of a kQ6K super-block (its 8 blocks from `super`): 256 values q (Q6_K's u − 32)
// with Q6_K's d and its 16 halves' int8 sc, as the loader's write_block_panel writes them, stored as
// u = q + 32. Q6_K's q is within −32…31; anything outside is clamped to it, since the relaxed build's
// sums count on u within 0…63 (gemm_blocks.h, q6k_half_pairs) and only a hand-made block could hold more.
inline void write_q6k_column(uint8_t* super, int c, float d, const int* sc, const int* q) {
  std::memcpy(q6k_d(super, c / 4) + 4 * (c % 4), &d, 4);
  for (int j = 0; j < kSuperBlocks; ++j) {
    uint8_t* block = super + block_bytes(WeightType::kQ6K) * j;
    for (int half = 0; half < 2; ++half) block[q6k_sc_byte(half, c)] = static_cast<uint8_t>(static_cast<int8_t>(sc[2 * j + half]));
    for (int r = 0; r < kBlockRows; ++r)
      block[block_q6_byte(r, c)] = static_cast<uint8_t>(stored_block_value(WeightType::kQ6K, q[32 * j + r]));
  }
}

}  // namespace mh

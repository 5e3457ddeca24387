// The GEMM's products over blocks of 8-, 6-, 5- and 4-bit integers (gemm.cpp's fourth part; core/blocks.h
// has the storage): rows of `a` quantized to 8 bits per block of 32 (for kQ4K, kQ5K and kQ6K once per 256, as
// llama.cpp's Q8_K), as llama.cpp does, and each block's products summed as integers — one row (decoding: block_row) or tiles of rows (prefill:
// block_tile). A row gives the same bits in either, at any thread count, in every build: the
// integer sums are exact, and the float operations around them are the same, in the same order.
// Where this measured faster than widening the blocks into float32 panels is in docs/performance.md
// ("GGUF weights in blocks"); integer_block_tiles() chooses. kQ5's sums are taken per half block
// (groups 0–3 and 4–7), each added in float as kQ8's whole block is, with the block's one scale
// (the relaxed build's int16 pairs of 5-bit values would overflow over a whole block), then its mins.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "core/blocks.h"
#include "core/gemm_tiles.h"
#include "core/gemm_tuning.h"
#include "core/relaxed_dots.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace mh {

// Private to gemm.cpp, the one file that includes it: internal linkage, as if written there.
namespace {
// Whether this build has the integer dot-add (integer_dot_add() then chooses, core/gemm_tuning.h).
#if defined(__wasm_relaxed_simd__)
constexpr bool kDotAddBuild = true;
#else
constexpr bool kDotAddBuild = false;
#endif

// The columns of each chunk when a product's N columns go out as about `per_thread` chunks a thread
// (gemm_shared): whole panels of 8, at least one.
inline int chunk_columns(int N, int per_thread, int threads) {
  return std::max(8, ((N + per_thread * threads - 1) / (per_thread * threads) + 7) / 8 * 8);
}

// The rows quantized (quantize_row), gemm's packed form of `a` for these products: per block of
// 32, d = max |a| / 127, then q_a = round(a / d) (to nearest, ties to even) as int16 (16 floats'
// bytes), as int8, |q_a| as int8 and q_a < 0 as a byte mask (8 floats' bytes each), the forms the
// integer products below read, and d · Σ q_a: the sum of the quantized row, as llama.cpp's Q8_1 keeps it. kQ4's values
// are scale · q − min with q unsigned, so a block's product is (scale · d) Σ q_a q − min · Σ a: with
// Σ a of the float row the two terms' large common part (q averages 7.5) no longer cancels, and
// the attentions of 4-bit fixtures sat 2–4× further from the reference than llama.cpp's own
// rounding takes them. In wasm 8 vectors a block and 2 scalars, padded to 44 floats so that every
// block's vectors keep the row's 16-byte alignment.
constexpr int kQuantizedBlockFloats = 44;
inline size_t quantized_row_floats(int K) { return static_cast<size_t>(K / kBlockRows) * kQuantizedBlockFloats; }
#if defined(__wasm_simd128__)
// One block of 32 floats quantized: d, d · Σ q_a, and q_a as int16 (q16) and int8 (q8).
struct QuantizedBlock {
  float d, sum;
  v128_t q16[4], q8[2];
};
// max |x| and the rounding are written so as to cost V8 one or two instructions each, where wasm's
// f32x4.max (NaN and −0 rules), f32x4.abs and i32x4.trunc_sat are 8, 3 and 6 on x64: |x|'s order is
// that of x's bits shifted left by one (the sign dropped), as unsigned integers; and y + 1.5 · 2^23,
// for |y| < 2^22, holds y rounded to nearest, ties to even, in the low bits of its mantissa.
// d = max |x| / 127 over the n (a multiple of 4) floats at x.
inline float quantization_step(const float* x, int n) {
  v128_t largest = wasm_i32x4_shl(wasm_v128_load(x), 1);  // |x|'s bits, shifted
  for (int i = 4; i < n; i += 4) largest = wasm_u32x4_max(largest, wasm_i32x4_shl(wasm_v128_load(x + i), 1));
  largest = wasm_u32x4_max(largest, wasm_i32x4_shuffle(largest, largest, 2, 3, 0, 1));
  largest = wasm_u32x4_max(largest, wasm_i32x4_shuffle(largest, largest, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(wasm_u32x4_shr(largest, 1), 0) / 127.0f;
}
// q[i] = the 32 floats at x times `inverse` (in every lane), rounded to nearest, ties to even (within
// ±127), as int32; returns Σ q.
inline int quantize_32(const float* x, v128_t inverse, v128_t (&q)[8]) {
  const v128_t rounding = wasm_f32x4_splat(12582912.0f);  // 1.5 · 2^23
  for (int i = 0; i < 8; ++i) q[i] = wasm_i32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(x + 4 * i), inverse), rounding), rounding);
  v128_t sum = q[0];
  for (int i = 1; i < 8; ++i) sum = wasm_i32x4_add(sum, q[i]);
  return wasm_i32x4_extract_lane(sum, 0) + wasm_i32x4_extract_lane(sum, 1) + wasm_i32x4_extract_lane(sum, 2) +
         wasm_i32x4_extract_lane(sum, 3);
}
inline QuantizedBlock quantize_block(const float* x) {
  QuantizedBlock out;
  const float d = quantization_step(x, kBlockRows), inverse = d > 0 ? 1.0f / d : 0.0f;
  out.d = d;
  v128_t q[8];
  out.sum = d * static_cast<float>(quantize_32(x, wasm_f32x4_splat(inverse), q));
  for (int i = 0; i < 4; ++i) out.q16[i] = wasm_i16x8_narrow_i32x4(q[2 * i], q[2 * i + 1]);
  out.q8[0] = wasm_i8x16_narrow_i16x8(out.q16[0], out.q16[1]);
  out.q8[1] = wasm_i8x16_narrow_i16x8(out.q16[2], out.q16[3]);
  return out;
}
void quantize_row(float* packed, const float* a, int K) {
  for (int blk = 0; blk < K / kBlockRows; ++blk, packed += kQuantizedBlockFloats) {
    const QuantizedBlock q = quantize_block(a + blk * kBlockRows);
    packed[0] = q.d;
    packed[1] = q.sum;
    for (int i = 0; i < 4; ++i) wasm_v128_store(reinterpret_cast<int16_t*>(packed + 2) + 8 * i, q.q16[i]);
    wasm_v128_store(packed + 18, q.q8[0]);
    wasm_v128_store(packed + 22, q.q8[1]);
    wasm_v128_store(packed + 26, wasm_i8x16_abs(q.q8[0]));
    wasm_v128_store(packed + 30, wasm_i8x16_abs(q.q8[1]));
    wasm_v128_store(packed + 34, wasm_i8x16_lt(q.q8[0], wasm_i8x16_splat(0)));
    wasm_v128_store(packed + 38, wasm_i8x16_lt(q.q8[1], wasm_i8x16_splat(0)));
  }
}
#else
void quantize_row(float* packed, const float* a, int K) {
  for (int blk = 0; blk < K / kBlockRows; ++blk, packed += kQuantizedBlockFloats) {
    const float* x = a + blk * kBlockRows;
    float largest = 0;
    for (int k = 0; k < kBlockRows; ++k) largest = std::max(largest, std::fabs(x[k]));
    const float d = largest / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
    packed[0] = d;
    int sum = 0;
    for (int k = 0; k < kBlockRows; ++k) {
      const int q = static_cast<int>(std::nearbyint(x[k] * inverse));  // within ±127
      sum += q;
      reinterpret_cast<int16_t*>(packed + 2)[k] = static_cast<int16_t>(q);
      reinterpret_cast<int8_t*>(packed + 18)[k] = static_cast<int8_t>(q);
      reinterpret_cast<int8_t*>(packed + 26)[k] = static_cast<int8_t>(q < 0 ? -q : q);
      reinterpret_cast<int8_t*>(packed + 34)[k] = static_cast<int8_t>(q < 0 ? -1 : 0);
    }
    packed[1] = d * static_cast<float>(sum);
  }
}
#endif

// Rows a tile over blocks holds (block_tile): in the relaxed build 4 where it takes the int8 dot (4-
// and 5-bit blocks: 8 int16 sums and 4 vectors of the block and the row, 12 of V8's 15 registers;
// kQ6K's too, whose int32 sums spill: 4 rows measured ~1.1× 2 rows' rate, 3 and 6 between or about
// as 4), except kQ5K's 6 (its fifth bits cost a few operations a group, which more rows share: 6
// measured ~1.5× 4 rows' rate), and 2 where it takes 16-bit dots (8-bit blocks: 8 int32 sums and 5
// vectors). The plain build's 16-bit dots: 3 rows (measured 1.03–1.09× 2 rows' rate, and about as 4,
// on every type). Rows are cut into tiles as even as those allow (5 rows at most 4: 3 + 2).
// (MH_BLOCK_TILE_ROWS overrides both, for measuring.)
template <WeightType T>
constexpr int block_tile_rows() {
#if defined(MH_BLOCK_TILE_ROWS)
  return MH_BLOCK_TILE_ROWS;
#elif defined(__wasm_relaxed_simd__)
  return T == WeightType::kQ5K ? 6 : has_unsigned_values(T) ? 4 : 2;
#else
  return 3;
#endif
}
constexpr int kTallestBlockTile = 6;
static_assert(block_tile_rows<WeightType::kQ8>() <= kTallestBlockTile && block_tile_rows<WeightType::kQ4>() <= kTallestBlockTile &&
                  block_tile_rows<WeightType::kQ5>() <= kTallestBlockTile && block_tile_rows<WeightType::kQ6K>() <= kTallestBlockTile &&
                  block_tile_rows<WeightType::kQ5K>() <= kTallestBlockTile,
              "block_tile_of_height() has tiles of 1 to 6 rows");
inline int block_tile_height(int i, int rows, int tallest) {
  const int left = rows - i, tiles = (left + tallest - 1) / tallest;
  return (left + tiles - 1) / tiles;
}

// Whether a tile over blocks of T takes the relaxed build's int8 dot (tile_sums), reading q_a as
// int8; the others read them as int16.
template <WeightType T>
constexpr bool tile_reads_int8() {
#if defined(__wasm_relaxed_simd__)
  return has_unsigned_values(T);
#else
  return false;
#endif
}
// The tiles' form of a quantized block (block_tile): quantize_row's d and d · Σ q_a, then only the
// q_a the tile reads, from kTileQFloats on (with the integer dot-add, the 8-bit tiles read |q_a|
// and q_a's sign: the same 16 floats as int16 q_a): fewer bytes for a tile's rows in L1 beside the
// panel, and for a group of tiles in L2, than quantize_row's whole block.
constexpr int kTileQFloats = 2;
// kQ4K's rows are quantized once for 256 values (llama.cpp's Q8_K, with which its Q4_K products
// run), so that a super-block's 8 sub-blocks sum as integers, each times its integer scale, and
// its floats are applied once (super_tile): d = max |a| / 127 over the 256, q_a as quantize_block
// rounds them, and each sub-block's Σ q_a as int16 (its mins'). Floats: [0] d, [4, 8) the 8 sums,
// then q_a as int8 (the relaxed build's int8 dot) or int16 (16-bit dots). kQ6K's too (Q6_K's products
// with Q8_K rows), and after int8 q_a, for each half block (16 rows), 32 · Σ q_a of its rows 4g, 4g + 1
// and of 4g + 2, 4g + 3 over its groups g, as int16 (at most 32 · 8 · 127 = 32512): what makes the int8
// dot's pairs over u (0…63) pairs over u − 32 (q6k_half_pairs).
constexpr int kSuperQFloats = 8;
constexpr int kQ6KOffsets = kSuperQFloats + 64;
template <WeightType T>
constexpr int tile_block_floats() {
  if constexpr (has_q4k_meta(T)) return kSuperQFloats + (tile_reads_int8<T>() ? 64 : 128);
  if constexpr (T == WeightType::kQ6K) return tile_reads_int8<T>() ? kQ6KOffsets + 16 : kSuperQFloats + 128;
  return kTileQFloats + (tile_reads_int8<T>() ? 8 : 16);
}
// The floats of a quantized row's unit (a block; kQ4K's and kQ6K's: a super-block) in decoding's form.
template <WeightType T>
constexpr int row_unit_floats() { return has_super_blocks(T) ? tile_block_floats<T>() : kQuantizedBlockFloats; }

// The bytes of a unit of a panel, a block (kQ4K's and kQ6K's: a super-block, type_rows(T) rows).
template <WeightType T>
constexpr int64_t unit_bytes() { return block_bytes(T) * (type_rows(T) / kBlockRows); }

// out = 256 values x quantized as a kQ4K or kQ6K row's unit (tile_block_floats).
template <WeightType T>
inline void quantize_super(float* out, const float* x) {
  [[maybe_unused]] constexpr bool int8 = tile_reads_int8<T>();
  int16_t sums[kSuperBlocks];
#if defined(__wasm_simd128__)
  const float d = quantization_step(x, kSuperRows), inverse = d > 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < kSuperBlocks; ++j) {
    v128_t q[8];
    sums[j] = static_cast<int16_t>(quantize_32(x + 32 * j, wasm_f32x4_splat(inverse), q));
    if constexpr (T == WeightType::kQ6K && int8) {  // each half's 32 · Σ q_a of rows 4g, 4g + 1 and 4g + 2, 4g + 3
      const v128_t h0 = wasm_i32x4_add(wasm_i32x4_add(q[0], q[1]), wasm_i32x4_add(q[2], q[3]));
      const v128_t h1 = wasm_i32x4_add(wasm_i32x4_add(q[4], q[5]), wasm_i32x4_add(q[6], q[7]));
      const v128_t pairs = wasm_i32x4_add(wasm_i32x4_shuffle(h0, h1, 0, 2, 4, 6), wasm_i32x4_shuffle(h0, h1, 1, 3, 5, 7));
      const v128_t offsets = wasm_i16x8_narrow_i32x4(wasm_i32x4_shl(pairs, 5), pairs);  // · kQ6Offset
      const int64_t both = wasm_i64x2_extract_lane(offsets, 0);
      std::memcpy(out + kQ6KOffsets + 2 * j, &both, sizeof both);
    }
    v128_t q16[4];
    for (int i = 0; i < 4; ++i) q16[i] = wasm_i16x8_narrow_i32x4(q[2 * i], q[2 * i + 1]);
    if (int8) {
      for (int v = 0; v < 2; ++v) wasm_v128_store(out + kSuperQFloats + 8 * j + 4 * v, wasm_i8x16_narrow_i16x8(q16[2 * v], q16[2 * v + 1]));
    } else {
      for (int v = 0; v < 4; ++v) wasm_v128_store(out + kSuperQFloats + 16 * j + 4 * v, q16[v]);
    }
  }
#else
  float most = 0;
  for (int k = 0; k < kSuperRows; ++k) most = std::max(most, std::fabs(x[k]));
  const float d = most / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
  int16_t* q_a = reinterpret_cast<int16_t*>(out + kSuperQFloats);
  for (int j = 0; j < kSuperBlocks; ++j) {
    int sum = 0;
    for (int k = 32 * j; k < 32 * j + 32; ++k) sum += q_a[k] = static_cast<int16_t>(std::nearbyint(x[k] * inverse));
    sums[j] = static_cast<int16_t>(sum);
  }
#endif
  out[0] = d;
  out[1] = out[2] = out[3] = 0.0f;
  std::memcpy(out + 4, sums, sizeof sums);
}

// packed = rows × K of a (rows lda apart) quantized for products over blocks of T: one row
// (decoding) as quantize_row quantizes it; more in tiles of block_tile_height() rows, each block in
// the tiles' form: the tile from row i at i · blocks · tile_block_floats<T>(), block-major, so that
// one pointer walks it: block b of its row r (of h) at (b · h + r) · tile_block_floats<T>().
template <WeightType T>
void quantize_rows(float* packed, const float* a, int64_t lda, int rows, int K) {
  if constexpr (has_super_blocks(T)) {  // one row as a tile of one
    constexpr int floats = tile_block_floats<T>();
    const int supers = K / kSuperRows;
    for (int i = 0, h; i < rows; i += h) {
      h = block_tile_height(i, rows, block_tile_rows<T>());
      float* tile_start = packed + static_cast<int64_t>(i) * supers * floats;
      for (int r = 0; r < h; ++r)
        for (int s = 0; s < supers; ++s) quantize_super<T>(tile_start + (s * h + r) * floats, a + (i + r) * lda + s * kSuperRows);
    }
    return;
  }
  if (rows == 1) return quantize_row(packed, a, K);
  constexpr int floats = tile_block_floats<T>();
  const int blocks = K / kBlockRows;
  [[maybe_unused]] const bool signs = kDotAddBuild && !tile_reads_int8<T>() && integer_dot_add();
  for (int i = 0, h; i < rows; i += h) {
    h = block_tile_height(i, rows, block_tile_rows<T>());
    float* tile_start = packed + static_cast<int64_t>(i) * blocks * floats;
    for (int r = 0; r < h; ++r)
      for (int blk = 0; blk < blocks; ++blk) {
        const float* x = a + (i + r) * lda + blk * kBlockRows;
        float* block = tile_start + (blk * h + r) * floats;
#if defined(__wasm_simd128__)
        const QuantizedBlock q = quantize_block(x);
        block[0] = q.d;
        block[1] = q.sum;
        if constexpr (tile_reads_int8<T>()) {
          for (int v = 0; v < 2; ++v) wasm_v128_store(block + kTileQFloats + 4 * v, q.q8[v]);
        } else if (signs) {  // the dot-add's 8-bit tiles: |q_a|, then q_a < 0 as a byte mask
          for (int v = 0; v < 2; ++v) {
            wasm_v128_store(block + kTileQFloats + 4 * v, wasm_i8x16_abs(q.q8[v]));
            wasm_v128_store(block + kTileQFloats + 8 + 4 * v, wasm_i8x16_lt(q.q8[v], wasm_i8x16_splat(0)));
          }
        } else {
          for (int v = 0; v < 4; ++v) wasm_v128_store(block + kTileQFloats + 4 * v, q.q16[v]);
        }
#else
        float whole[kQuantizedBlockFloats];  // the int16 q_a at 2 in quantize_row's form too
        quantize_row(whole, x, kBlockRows);
        std::memcpy(block, whole, sizeof(float) * floats);
#endif
      }
  }
}

#if defined(__wasm_simd128__)
// Keeps a block's groups in order in V8's machine code: V8 schedules pure SIMD operations freely
// (a graph, not the wasm's order) and so had ordered all of one column half's groups before the
// other's, keeping the block's 16 splats of the row and its loaded weights on the stack. A store is
// an effect, which V8 keeps in order: storing each group's sums makes it finish them before the next
// group's loads, and the 8-bit decoding loop ran without a spill (docs/performance.md, "The groups
// kept in order"). The stores go to the calling thread's own stack (a static line would be written
// by every thread), which no one reads.
template <typename... Sums>
inline void keep_in_order(Sums... sums) {
  volatile v128_t sink[sizeof...(Sums)];
  int i = 0;
  ((sink[i++] = sums), ...);
}
#endif

#if defined(__wasm_relaxed_simd__)
// The int16 pair sums of q · q_a for signed 8-bit q (kQ8), by the relaxed int8 dot: q_a's sign
// `m` (all ones where q_a < 0, quantize_row) moved onto q by (q ^ m) − m, and |q_a| as the 7-bit
// operand, so that every CPU gives the same sums (kQ8 holds no −128: core/blocks.h).
inline v128_t signed_dot(v128_t q, v128_t m, v128_t magnitude) {
  return dot_i8x16_i7x16(wasm_i8x16_sub(wasm_v128_xor(q, m), m), magnitude);
}
// acc + the int32 sums of q · q_a, 4 rows a lane, by the integer dot-add, the sign moved as signed_dot's.
inline v128_t signed_dot_add(v128_t q, v128_t m, v128_t magnitude, v128_t acc) {
  return dot_add_i8x16_i7x16(wasm_i8x16_sub(wasm_v128_xor(q, m), m), magnitude, acc);
}
#endif

// out (columns [c0, c1)) = bias + the row's products over blocks, each block's integers summed,
// then acc_c += (scale_c · d) · Σ q_a q_c, and acc_c −= min_c · Σ a for kQ4 and kQ5 — the same float
// operations in each build, so the same bits. A group of 4 rows holds each column's 4 values side
// by side: int16 dots of 8 give two lanes a column, added after a block. The relaxed build takes
// the int8 dot instead (16 products an instruction, widened and added by column pairs), whose
// second operand must fit 7 bits for every CPU to give the same sums: 4- and 5-bit values as
// stored (0…15, 0…31) as they are; for 8-bit ones |q_a|, with q_a's sign moved onto q (kQ8 holds
// no −128: core/blocks.h).
// `quantized` is the row's quantize_row, its blocks `step` floats apart (a row of a tile:
// quantize_rows).
#if defined(__wasm_simd128__)
// Lane i (4 bytes) of v in every lane: one shuffle (pshufd) where v128.load32_splat at an offset
// made V8 keep the memory's base plus each offset in a register of its own, and spill them.
inline v128_t splat_lane(v128_t v, int i) {
  switch (i) {
    case 0: return wasm_i32x4_shuffle(v, v, 0, 0, 0, 0);
    case 1: return wasm_i32x4_shuffle(v, v, 1, 1, 1, 1);
    case 2: return wasm_i32x4_shuffle(v, v, 2, 2, 2, 2);
    default: return wasm_i32x4_shuffle(v, v, 3, 3, 3, 3);
  }
}
// The offset sum of half `half` (0, 1) from the two at `sums`, in every lane: a 16-byte load ending
// at them and a shuffle (splat_lane).
inline v128_t offset_sum(const float* sums, int half) { return splat_lane(wasm_v128_load(sums - 2), 2 + half); }
// sum_lo, sum_hi = Σ_r q_a[r] · q[r][c] over groups [kFirst, kFirst + kGroups) of one block (rows
// 4 · kFirst on), for columns 0–3 and 4–7, as int32, by 16-bit dots.
// (q_a: the row's int16 values of the block, rows 0 on.)
template <WeightType T, int kFirst, int kGroups>
inline void group_sums(const uint8_t* block, const int16_t* q_a, v128_t& sum_lo, v128_t& sum_hi) {
  v128_t p0 = wasm_i32x4_splat(0), p1 = p0, p2 = p0, p3 = p0;
  for (int g = kFirst; g < kFirst + kGroups; ++g) {
    // (q_a of rows 0–3) twice, by a shuffle: load64_splat at an offset costs V8 a register (splat_lane)
    const v128_t pair = wasm_v128_load(q_a + 8 * (g / 2));
    const v128_t a = g % 2 ? wasm_i32x4_shuffle(pair, pair, 2, 3, 2, 3) : wasm_i32x4_shuffle(pair, pair, 0, 1, 0, 1);
    v128_t left, right;  // columns 0–3 and 4–7, each 4 × 4 values
    block_group(T, block, g, left, right);
    // Lanes (c, rows 0–1), (c, rows 2–3), (c + 1, 0–1), (c + 1, 2–3) for c = 0, 2, 4, 6;
    // kQ4's 0…15 are the same values signed.
    p0 = wasm_i32x4_add(p0, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(left), a));
    p1 = wasm_i32x4_add(p1, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(left), a));
    p2 = wasm_i32x4_add(p2, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(right), a));
    p3 = wasm_i32x4_add(p3, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(right), a));
  }
  sum_lo = wasm_i32x4_add(wasm_i32x4_shuffle(p0, p1, 0, 2, 4, 6), wasm_i32x4_shuffle(p0, p1, 1, 3, 5, 7));
  sum_hi = wasm_i32x4_add(wasm_i32x4_shuffle(p2, p3, 0, 2, 4, 6), wasm_i32x4_shuffle(p2, p3, 1, 3, 5, 7));
}

#if defined(__wasm_relaxed_simd__)
// pairs_lo, pairs_hi = the int16 pair sums of a row's 32 values (int8, at q_a) times a block's
// 32 × 8 values of 4 bits (from `values`) by the int8 dot: 0…15 fit its 7-bit operand as they
// are, and the pairs add up over the block without overflow (8 · 2 · 127 · 15 = 30480); the high
// nibbles by a 16-bit shift (one instruction, where an 8-bit one is several in V8).
inline void nibble_pairs(const uint8_t* values, const float* q_a, v128_t& pairs_lo, v128_t& pairs_hi) {
  const v128_t nibble = wasm_i8x16_splat(15);
  pairs_lo = pairs_hi = wasm_i16x8_splat(0);
  for (int half = 0; half < 2; ++half) {
    const v128_t row = wasm_v128_load(q_a + 4 * half);
    for (int i = 0; i < 4; ++i) {
      const v128_t bytes = wasm_v128_load(values + 16 * (4 * half + i)), a = splat_lane(row, i);
      pairs_lo = wasm_i16x8_add(pairs_lo, dot_i8x16_i7x16(a, wasm_v128_and(bytes, nibble)));
      pairs_hi = wasm_i16x8_add(pairs_hi, dot_i8x16_i7x16(a, wasm_v128_and(wasm_u16x8_shr(bytes, 4), nibble)));
      keep_in_order(pairs_lo, pairs_hi);
    }
  }
}
// pairs_lo, pairs_hi = the int16 pair sums of half kHalf of a block (groups 4 · kHalf …, their values
// as stored: stored_group_at, kQ5K's with its fifth bits) times a row's int8 values of them (the 4
// lanes of `row`), by the int8 dot (kQ5's and kQ5K's 0…31 and kQ6K's 0…63 fit its 7-bit operand as
// they are).
template <WeightType T, int kHalf>
inline void half_pairs(const uint8_t* block, v128_t row, v128_t& pairs_lo, v128_t& pairs_hi) {
  const uint8_t* groups = block + block_float_bytes(T) + block_group_bytes(T) * 4 * kHalf;
  [[maybe_unused]] Q5KFifthBits fifth(T == WeightType::kQ5K ? wasm_v128_load(block + kQ5KFifthBits + 16 * kHalf) : row);
  pairs_lo = pairs_hi = wasm_i16x8_splat(0);
  for (int i = 0; i < 4; ++i) {
    const v128_t a = splat_lane(row, i);
    v128_t left, right;
    stored_group_at(T, groups + block_group_bytes(T) * i, left, right);
    if constexpr (T == WeightType::kQ5K) fifth.add_next(left, right);
    pairs_lo = wasm_i16x8_add(pairs_lo, dot_i8x16_i7x16(a, left));
    pairs_hi = wasm_i16x8_add(pairs_hi, dot_i8x16_i7x16(a, right));
    keep_in_order(pairs_lo, pairs_hi);
  }
}
#endif
// sum_lo, sum_hi = Σ_r q_a[r] · q[r][c] over one block, for columns 0–3 and 4–7, as int32; with
// kDotAdd by the integer dot-add (core/gemm_tuning.h), the same sums.
template <WeightType T, bool kDotAdd>
inline void block_sums(const uint8_t* block, const float* row_block, v128_t& sum_lo, v128_t& sum_hi) {
#if defined(__wasm_relaxed_simd__)
  if constexpr (kDotAdd) {
    sum_lo = sum_hi = wasm_i32x4_splat(0);
    const v128_t nibble = wasm_i8x16_splat(15);
    for (int half = 0; half < 2; ++half) {
      const v128_t signs = wasm_v128_load(row_block + 34 + 4 * half), magnitudes = wasm_v128_load(row_block + 26 + 4 * half);
      const v128_t q_a = wasm_v128_load(row_block + 18 + 4 * half);
      for (int i = 0; i < 4; ++i) {
        const int g = 4 * half + i;
        if constexpr (T == WeightType::kQ8) {
          const v128_t m = splat_lane(signs, i), y = splat_lane(magnitudes, i);
          sum_lo = signed_dot_add(wasm_v128_load(block + 32 + 32 * g), m, y, sum_lo);
          sum_hi = signed_dot_add(wasm_v128_load(block + 48 + 32 * g), m, y, sum_hi);
        } else {
          const v128_t bytes = wasm_v128_load(block + block_float_bytes(T) + 16 * g), a = splat_lane(q_a, i);
          sum_lo = dot_add_i8x16_i7x16(a, wasm_v128_and(bytes, nibble), sum_lo);
          sum_hi = dot_add_i8x16_i7x16(a, wasm_v128_and(wasm_u16x8_shr(bytes, 4), nibble), sum_hi);
        }
        keep_in_order(sum_lo, sum_hi);
      }
    }
  } else if constexpr (T == WeightType::kQ8) {
    // signed_dot's pair sums reach 2 · 127 · 127, so each is widened at once, by a 16-bit dot with ones (extadd_pairwise is the same instruction in V8, with its constant's
    // address loaded anew each time).
    const v128_t ones = wasm_i16x8_splat(1);
    sum_lo = sum_hi = wasm_i32x4_splat(0);
    for (int half = 0; half < 2; ++half) {
      const v128_t signs = wasm_v128_load(row_block + 34 + 4 * half), magnitudes = wasm_v128_load(row_block + 26 + 4 * half);
      for (int i = 0; i < 4; ++i) {
        const int g = 4 * half + i;
        const v128_t m = splat_lane(signs, i), y = splat_lane(magnitudes, i);
        const v128_t left = wasm_v128_load(block + 32 + 32 * g), right = wasm_v128_load(block + 48 + 32 * g);
        sum_lo = wasm_i32x4_add(sum_lo, wasm_i32x4_dot_i16x8(signed_dot(left, m, y), ones));
        sum_hi = wasm_i32x4_add(sum_hi, wasm_i32x4_dot_i16x8(signed_dot(right, m, y), ones));
        keep_in_order(sum_lo, sum_hi);
      }
    }
  } else {
    v128_t pairs_lo, pairs_hi;
    nibble_pairs(block + block_float_bytes(T), row_block + 18, pairs_lo, pairs_hi);
    sum_lo = wasm_i32x4_extadd_pairwise_i16x8(pairs_lo);
    sum_hi = wasm_i32x4_extadd_pairwise_i16x8(pairs_hi);
  }
#else
  group_sums<T, 0, kBlockRows / 4>(block, reinterpret_cast<const int16_t*>(row_block + 2), sum_lo, sum_hi);
#endif
}

// The sums of half kHalf of a kQ5 block (groups 4 · kHalf … + 3: rows 0–15 or 16–31), as
// block_sums'. The relaxed build takes the int8 dot over the values as stored (0…31), as kQ4's:
// its int16 pairs add up without overflow over a half (4 · 2 · 127 · 31 = 31496), widened once.
template <WeightType T, int kHalf, bool kDotAdd>
inline void half_sums(const uint8_t* block, const float* row_block, v128_t& sum_lo, v128_t& sum_hi) {
#if defined(__wasm_relaxed_simd__)
  const v128_t q_a = wasm_v128_load(row_block + 18 + 4 * kHalf);
  sum_lo = sum_hi = wasm_i32x4_splat(0);
  if constexpr (kDotAdd) {
    for (int i = 0; i < 4; ++i) {
      const int g = 4 * kHalf + i;
      const v128_t a = splat_lane(q_a, i);
      sum_lo = dot_add_i8x16_i7x16(a, wasm_v128_load(block + 64 + 32 * g), sum_lo);
      sum_hi = dot_add_i8x16_i7x16(a, wasm_v128_load(block + 80 + 32 * g), sum_hi);
      keep_in_order(sum_lo, sum_hi);
    }
  } else {
    const v128_t ones = wasm_i16x8_splat(1);  // the widening as kQ8's (a 16-bit dot with ones)
    v128_t pairs_lo, pairs_hi;
    half_pairs<T, kHalf>(block, q_a, pairs_lo, pairs_hi);
    sum_lo = wasm_i32x4_dot_i16x8(pairs_lo, ones);
    sum_hi = wasm_i32x4_dot_i16x8(pairs_hi, ones);
  }
#else
  group_sums<T, 4 * kHalf, 4>(block, reinterpret_cast<const int16_t*>(row_block + 2), sum_lo, sum_hi);
#endif
}

// acc_lo, acc_hi (columns 0–3, 4–7) += (scale · d) · Σ q_a q, the 8 scales at `scales`: a block's
// (kQ8, kQ4, kQ40) or a half block's (kQ5: the block's, once a half). The one
// place these float operations are written, for decoding and tiles.
// (scale_lo, scale_hi: the 8 scales loaded; d: the row block's first float, d, in every lane.)
inline void add_scaled(v128_t& acc_lo, v128_t& acc_hi, v128_t scale_lo, v128_t scale_hi, v128_t d, v128_t sum_lo,
                       v128_t sum_hi) {
  acc_lo = wasm_f32x4_add(acc_lo, wasm_f32x4_mul(wasm_f32x4_mul(scale_lo, d), wasm_f32x4_convert_i32x4(sum_lo)));
  acc_hi = wasm_f32x4_add(acc_hi, wasm_f32x4_mul(wasm_f32x4_mul(scale_hi, d), wasm_f32x4_convert_i32x4(sum_hi)));
}
inline void add_scaled(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* scales, const float* row_block, v128_t sum_lo,
                       v128_t sum_hi) {
  add_scaled(acc_lo, acc_hi, wasm_v128_load(scales), wasm_v128_load(scales + 16), splat_lane(wasm_v128_load(row_block), 0),
             sum_lo, sum_hi);
}

// acc_lo, acc_hi −= min · d Σ q_a, the block's mins (kQ4, kQ5, kQ40) times the quantized row's sum
// (quantize_row).
// (min_lo, min_hi: the 8 mins loaded; sum_a: the row block's second float, d Σ q_a, in every lane.)
inline void subtract_mins(v128_t& acc_lo, v128_t& acc_hi, v128_t min_lo, v128_t min_hi, v128_t sum_a) {
  acc_lo = wasm_f32x4_sub(acc_lo, wasm_f32x4_mul(min_lo, sum_a));
  acc_hi = wasm_f32x4_sub(acc_hi, wasm_f32x4_mul(min_hi, sum_a));
}
template <WeightType T>
inline void subtract_mins(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* block, const float* row_block) {
  v128_t min_lo, min_hi;
  load_block_mins(T, block, min_lo, min_hi);
  subtract_mins(acc_lo, acc_hi, min_lo, min_hi, splat_lane(wasm_v128_load(row_block), 1));
}

// acc_lo, acc_hi += one block's sums as floats (kQ8, kQ4, kQ40): add_scaled, then subtract_mins for kQ4 and kQ40.
template <WeightType T>
inline void add_block(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* block, const float* row_block, v128_t sum_lo,
                      v128_t sum_hi) {
  add_scaled(acc_lo, acc_hi, block, row_block, sum_lo, sum_hi);
  if constexpr (has_mins(T)) subtract_mins<T>(acc_lo, acc_hi, block, row_block);
}

// acc_lo, acc_hi += one block of a panel times the row's block: its integer sums, then their float
// operations (add_block; 5-bit blocks a half block at a time, each with the block's scales).
template <WeightType T, bool kDotAdd>
inline void add_panel_block(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* block, const float* row_block) {
  v128_t sum_lo, sum_hi;  // Σ q_a q of columns 0–3 and 4–7
  if constexpr (T == WeightType::kQ5) {
    half_sums<T, 0, kDotAdd>(block, row_block, sum_lo, sum_hi);
    add_scaled(acc_lo, acc_hi, block, row_block, sum_lo, sum_hi);
    half_sums<T, 1, kDotAdd>(block, row_block, sum_lo, sum_hi);
    add_scaled(acc_lo, acc_hi, block, row_block, sum_lo, sum_hi);
    subtract_mins<T>(acc_lo, acc_hi, block, row_block);
  } else {
    block_sums<T, kDotAdd>(block, row_block, sum_lo, sum_hi);
    add_block<T>(acc_lo, acc_hi, block, row_block, sum_lo, sum_hi);
  }
}

// kQ4K and kQ5K (T: the super-block's floats and integer scales: q4k_meta). sum_lo, sum_hi += sub-block
// j's sums Σ q_a q (sum_lo, sum_hi: pair_lo, pair_hi's int16 pairs in the relaxed build, int32 column
// sums in the plain one) times its scales sc[j]: one 16-bit dot of the pairs with sc twice, or an
// int32 product.
template <WeightType T>
inline void add_sub_block(v128_t& int_lo, v128_t& int_hi, const uint8_t* super, int j, v128_t sum_lo, v128_t sum_hi) {
  const v128_t sc = wasm_v128_load(q4k_meta(super, q4k_sc_byte(j, 0), T));  // sc[j][c] twice, c = 0…7
#if defined(__wasm_relaxed_simd__)
  int_lo = wasm_i32x4_add(int_lo, wasm_i32x4_dot_i16x8(sum_lo, wasm_u16x8_extend_low_u8x16(sc)));
  int_hi = wasm_i32x4_add(int_hi, wasm_i32x4_dot_i16x8(sum_hi, wasm_u16x8_extend_high_u8x16(sc)));
#else
  const v128_t low16 = wasm_i32x4_splat(0xffff);  // sc twice in 16-bit lanes, read as int32: sc
  int_lo = wasm_i32x4_add(int_lo, wasm_i32x4_mul(sum_lo, wasm_v128_and(wasm_u16x8_extend_low_u8x16(sc), low16)));
  int_hi = wasm_i32x4_add(int_hi, wasm_i32x4_mul(sum_hi, wasm_v128_and(wasm_u16x8_extend_high_u8x16(sc), low16)));
#endif
}
// min_lo, min_hi = Σ_j m[j][c] · Σ q_a of sub-block j, as int32 (sums: the row's 8 int16 sums):
// two sub-blocks a 16-bit dot.
template <WeightType T>
inline void q4k_min_sums(const uint8_t* super, v128_t sums, v128_t& min_lo, v128_t& min_hi) {
  min_lo = min_hi = wasm_i32x4_splat(0);
  for (int p = 0; p < kSuperBlocks / 2; ++p) {
    const v128_t m = wasm_v128_load(q4k_meta(super, q4k_m_byte(2 * p, 0), T)), pair = splat_lane(sums, p);
    min_lo = wasm_i32x4_add(min_lo, wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(m), pair));
    min_hi = wasm_i32x4_add(min_hi, wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(m), pair));
  }
}
// acc += (d · d_a) · Σ_j sc Σ q_a q, then acc −= (dmin · d_a) · Σ_j m Σ q_a: a super-block's float
// operations, once for its 256 rows (d_lo, d_hi, dmin_lo, dmin_hi loaded; d_a in every lane).
inline void q4k_add(v128_t& acc_lo, v128_t& acc_hi, v128_t d_lo, v128_t d_hi, v128_t dmin_lo, v128_t dmin_hi, v128_t d_a,
                    v128_t int_lo, v128_t int_hi, v128_t min_lo, v128_t min_hi) {
  acc_lo = wasm_f32x4_add(acc_lo, wasm_f32x4_mul(wasm_f32x4_mul(d_lo, d_a), wasm_f32x4_convert_i32x4(int_lo)));
  acc_hi = wasm_f32x4_add(acc_hi, wasm_f32x4_mul(wasm_f32x4_mul(d_hi, d_a), wasm_f32x4_convert_i32x4(int_hi)));
  acc_lo = wasm_f32x4_sub(acc_lo, wasm_f32x4_mul(wasm_f32x4_mul(dmin_lo, d_a), wasm_f32x4_convert_i32x4(min_lo)));
  acc_hi = wasm_f32x4_sub(acc_hi, wasm_f32x4_mul(wasm_f32x4_mul(dmin_hi, d_a), wasm_f32x4_convert_i32x4(min_hi)));
}
// int_lo, int_hi += sub-block j of a kQ4K or kQ5K super-block times the row's (quantize_super): its
// integer sums (block_sums' for 4-bit values; kQ5K's int16 pairs a half at a time, which 5-bit
// values would overflow over the whole: 8 · 2 · 127 · 31), times its scales (add_sub_block).
template <WeightType T>
inline void add_super_sub_block(v128_t& int_lo, v128_t& int_hi, const uint8_t* super, const float* row, int j) {
  const uint8_t* block = super + block_bytes(T) * j;
#if defined(__wasm_relaxed_simd__)
  v128_t pairs_lo, pairs_hi;
  if constexpr (T == WeightType::kQ5K) {
    const v128_t q_a = wasm_v128_load(row + kSuperQFloats + 8 * j), q_b = wasm_v128_load(row + kSuperQFloats + 8 * j + 4);
    half_pairs<T, 0>(block, q_a, pairs_lo, pairs_hi);
    add_sub_block<T>(int_lo, int_hi, super, j, pairs_lo, pairs_hi);
    half_pairs<T, 1>(block, q_b, pairs_lo, pairs_hi);
  } else {
    nibble_pairs(block + block_float_bytes(T), row + kSuperQFloats + 8 * j, pairs_lo, pairs_hi);
  }
  add_sub_block<T>(int_lo, int_hi, super, j, pairs_lo, pairs_hi);
#else
  v128_t sum_lo, sum_hi;
  group_sums<T, 0, kBlockRows / 4>(block, reinterpret_cast<const int16_t*>(row + kSuperQFloats) + 32 * j, sum_lo, sum_hi);
  add_sub_block<T>(int_lo, int_hi, super, j, sum_lo, sum_hi);
#endif
}
// acc_lo, acc_hi += a kQ4K or kQ5K super-block's integer sums (int_lo, int_hi) as floats, with its mins (q4k_add).
template <WeightType T>
inline void finish_super(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* super, const float* row, v128_t int_lo, v128_t int_hi) {
  v128_t min_lo, min_hi;
  q4k_min_sums<T>(super, wasm_v128_load(row + 4), min_lo, min_hi);
  const v128_t dmin = wasm_v128_load(q4k_meta(super, 32, T));
  q4k_add(acc_lo, acc_hi, wasm_v128_load(super), wasm_v128_load(super + 16), dmin, wasm_v128_load(q4k_meta(super, 48, T)),
          splat_lane(wasm_v128_load(row), 0), int_lo, int_hi, min_lo, min_hi);
}

// kQ6K (Q6_K's super-blocks: a block's sc[2][8], the super-block's d: core/blocks.h). Its integers are
// Σ_half sc · Σ q_a (u − 32) over the super-block (at most 16 · 128 · 16 · 32 · 127 < 2^31), its float
// operations once for the 256 rows: acc += (d · d_a) · that sum. No mins: Q6_K's offset is in the
// integers.
// lo, hi = half kHalf's int8 sc of a block's columns 0–3 and 4–7, as int16, each twice: what a 16-bit
// dot with the half's int16 pairs (lanes: column c's rows 0–1, then 2–3) takes.
template <int kHalf>
inline void q6k_pair_scales(const uint8_t* block, v128_t& lo, v128_t& hi) {
  constexpr int b = 8 * kHalf;
  const v128_t sc = wasm_v128_load(block);
  const v128_t twice = wasm_i8x16_shuffle(sc, sc, b, b, b + 1, b + 1, b + 2, b + 2, b + 3, b + 3, b + 4, b + 4, b + 5, b + 5,
                                          b + 6, b + 6, b + 7, b + 7);
  lo = wasm_i16x8_extend_low_i8x16(twice);
  hi = wasm_i16x8_extend_high_i8x16(twice);
}
// lo, hi = half kHalf's int8 sc of a block's columns 0–3 and 4–7, as int32 (the plain build's products).
template <int kHalf>
inline void q6k_int_scales(const uint8_t* block, v128_t& lo, v128_t& hi) {
  const v128_t sc = wasm_v128_load(block);
  const v128_t sc16 = kHalf ? wasm_i16x8_extend_high_i8x16(sc) : wasm_i16x8_extend_low_i8x16(sc);
  lo = wasm_i32x4_extend_low_i16x8(sc16);
  hi = wasm_i32x4_extend_high_i16x8(sc16);
}
// int_lo, int_hi += sc · the sums of half kHalf of a kQ6K block, given as the int8 dot's int16 pairs over
// (u − 32) (relaxed: one 16-bit dot with sc twice) or int32 column sums (plain: a product with sc).
template <int kHalf>
inline void add_q6k_half(v128_t& int_lo, v128_t& int_hi, const uint8_t* block, v128_t sum_lo, v128_t sum_hi) {
  v128_t sc_lo, sc_hi;
#if defined(__wasm_relaxed_simd__)
  q6k_pair_scales<kHalf>(block, sc_lo, sc_hi);
  int_lo = wasm_i32x4_add(int_lo, wasm_i32x4_dot_i16x8(sum_lo, sc_lo));
  int_hi = wasm_i32x4_add(int_hi, wasm_i32x4_dot_i16x8(sum_hi, sc_hi));
#else
  q6k_int_scales<kHalf>(block, sc_lo, sc_hi);
  int_lo = wasm_i32x4_add(int_lo, wasm_i32x4_mul(sum_lo, sc_lo));
  int_hi = wasm_i32x4_add(int_hi, wasm_i32x4_mul(sum_hi, sc_hi));
#endif
}
#if defined(__wasm_relaxed_simd__)
// pairs_lo, pairs_hi = the int16 pair sums of half kHalf of a kQ6K block (groups 4 · kHalf …) times a
// row's int8 q_a (of the block, at q_a), over u − 32: the int8 dot over u as stored (0…63 fit its 7-bit
// operand), less the row's offsets (quantize_super; `offsets`: the block's two). The int16 lanes may
// wrap on the way (4 groups' pairs reach 4 · 2 · 127 · 63); the result, 8 products of (u − 32) · q_a
// (at most 8 · 32 · 127 = 32512), does not, and wrapping arithmetic gives it exactly.
template <int kHalf>
inline void q6k_half_pairs(const uint8_t* block, const float* q_a, const float* offsets, v128_t& pairs_lo, v128_t& pairs_hi) {
  half_pairs<WeightType::kQ6K, kHalf>(block, wasm_v128_load(q_a + 4 * kHalf), pairs_lo, pairs_hi);
  const v128_t offset = offset_sum(offsets, kHalf);  // (rows 0–1, rows 2–3) in every column
  pairs_lo = wasm_i16x8_sub(pairs_lo, offset);
  pairs_hi = wasm_i16x8_sub(pairs_hi, offset);
}
#endif
// int_lo, int_hi += sub-block j of a kQ6K super-block times the row's (quantize_super): each half's
// sums times its sc.
inline void add_q6k_sub_block(v128_t& int_lo, v128_t& int_hi, const uint8_t* super, const float* row, int j) {
  const uint8_t* block = super + block_bytes(WeightType::kQ6K) * j;
  v128_t sum_lo, sum_hi;
#if defined(__wasm_relaxed_simd__)
  const float *q_a = row + kSuperQFloats + 8 * j, *offsets = row + kQ6KOffsets + 2 * j;
  q6k_half_pairs<0>(block, q_a, offsets, sum_lo, sum_hi);
  add_q6k_half<0>(int_lo, int_hi, block, sum_lo, sum_hi);
  q6k_half_pairs<1>(block, q_a, offsets, sum_lo, sum_hi);
  add_q6k_half<1>(int_lo, int_hi, block, sum_lo, sum_hi);
#else
  const int16_t* q_a = reinterpret_cast<const int16_t*>(row + kSuperQFloats) + 32 * j;
  group_sums<WeightType::kQ6K, 0, 4>(block, q_a, sum_lo, sum_hi);
  add_q6k_half<0>(int_lo, int_hi, block, sum_lo, sum_hi);
  group_sums<WeightType::kQ6K, 4, 4>(block, q_a, sum_lo, sum_hi);
  add_q6k_half<1>(int_lo, int_hi, block, sum_lo, sum_hi);
#endif
}
// acc += (d · d_a) · a kQ6K super-block's integer sums (d_lo, d_hi: its d loaded; d_a in every lane).
inline void q6k_add(v128_t& acc_lo, v128_t& acc_hi, v128_t d_lo, v128_t d_hi, v128_t d_a, v128_t int_lo, v128_t int_hi) {
  acc_lo = wasm_f32x4_add(acc_lo, wasm_f32x4_mul(wasm_f32x4_mul(d_lo, d_a), wasm_f32x4_convert_i32x4(int_lo)));
  acc_hi = wasm_f32x4_add(acc_hi, wasm_f32x4_mul(wasm_f32x4_mul(d_hi, d_a), wasm_f32x4_convert_i32x4(int_hi)));
}

// The super-block types' decoding, one sub-block at a time (kQ4K's, kQ5K's or kQ6K's), then once a super-block.
template <WeightType T>
inline void add_sub_block_of(v128_t& int_lo, v128_t& int_hi, const uint8_t* super, const float* row, int j) {
  if constexpr (has_q4k_meta(T)) add_super_sub_block<T>(int_lo, int_hi, super, row, j);
  else add_q6k_sub_block(int_lo, int_hi, super, row, j);
}
template <WeightType T>
inline void finish_super_of(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* super, const float* row, v128_t int_lo, v128_t int_hi) {
  if constexpr (has_q4k_meta(T)) finish_super<T>(acc_lo, acc_hi, super, row, int_lo, int_hi);
  else q6k_add(acc_lo, acc_hi, wasm_v128_load(q6k_d(super, 0)), wasm_v128_load(q6k_d(super, 1)), splat_lane(wasm_v128_load(row), 0), int_lo, int_hi);
}
// acc_lo, acc_hi += one kQ4K, kQ5K or kQ6K super-block of a panel times the row's.
template <WeightType T>
inline void add_panel_super(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* super, const float* row) {
  v128_t int_lo = wasm_i32x4_splat(0), int_hi = int_lo;
  for (int j = 0; j < kSuperBlocks; ++j) add_sub_block_of<T>(int_lo, int_hi, super, row, j);
  finish_super_of<T>(acc_lo, acc_hi, super, row, int_lo, int_hi);
}
// A unit of a panel (a block; kQ4K's and kQ6K's: a super-block) times the row's.
template <WeightType T, bool kDotAdd>
inline void add_panel_unit(v128_t& acc_lo, v128_t& acc_hi, const uint8_t* unit, const float* row_unit) {
  if constexpr (has_super_blocks(T)) add_panel_super<T>(acc_lo, acc_hi, unit, row_unit);
  else add_panel_block<T, kDotAdd>(acc_lo, acc_hi, unit, row_unit);
}

// Decoding's row over N · D whole panels from column j, read as N streams side by side: stream n
// is the D panels from j + 8 · n · D, contiguous in memory, and the N streams advance a block at a
// time together. Each column is summed exactly as one panel alone sums it (the same bits).
template <WeightType T, int N, bool kDotAdd>
void panels_side_by_side(float* out, const float* quantized, const MatrixRef& b, const float* bias, int blocks, int j, int D) {
  const uint8_t* base = static_cast<const uint8_t*>(b.data);
  for (int i = 0; i < D; ++i) {
    v128_t acc[N][2];
    const uint8_t* block[N];
    const int zero = g_zero;  // 32-bit pointer arithmetic, as in block_row
    for (int n = 0; n < N; ++n) {
      const int jn = j + 8 * (n * D + i);
      acc[n][0] = bias ? wasm_v128_load(bias + jn) : wasm_f32x4_splat(0);
      acc[n][1] = bias ? wasm_v128_load(bias + jn + 4) : wasm_f32x4_splat(0);
      block[n] = base + block_offset(T, 0, jn, b.ld) + zero;
    }
    const float* row_block = quantized + zero;
    for (int k = 0; k < blocks; k += type_rows(T) / kBlockRows, row_block += row_unit_floats<T>()) {
      if constexpr (has_super_blocks(T)) {  // a sub-block of each stream in turn, as the other types' blocks
        v128_t ints[N][2];
        for (int n = 0; n < N; ++n) ints[n][0] = ints[n][1] = wasm_i32x4_splat(0);
        for (int sub = 0; sub < kSuperBlocks; ++sub)
          for (int n = 0; n < N; ++n) add_sub_block_of<T>(ints[n][0], ints[n][1], block[n], row_block, sub);
        for (int n = 0; n < N; ++n) finish_super_of<T>(acc[n][0], acc[n][1], block[n], row_block, ints[n][0], ints[n][1]);
      } else {
        for (int n = 0; n < N; ++n) add_panel_block<T, kDotAdd>(acc[n][0], acc[n][1], block[n], row_block);
      }
      for (int n = 0; n < N; ++n) block[n] += unit_bytes<T>();
    }
    for (int n = 0; n < N; ++n) {
      const int jn = j + 8 * (n * D + i);
      wasm_v128_store(out + jn, acc[n][0]);
      wasm_v128_store(out + jn + 4, acc[n][1]);
    }
  }
}

#if defined(__wasm_relaxed_simd__)
constexpr bool kDecodingInStreams = true;
#else
constexpr bool kDecodingInStreams = false;
#endif
constexpr int64_t kShortestStream = 64 << 10;
// How many chunks a thread gets of decoding's products over blocks (gemm_shared): about eight, which
// balances a thread that starts late, unless a chunk of that size is too short for 4 streams
// (row_over_blocks) and one of 4 or 2 a thread is not. On 2 threads GPT-2's Q/K/V, MLP and down
// projection then read as streams: a decoding step 1.05–1.22× faster (docs/performance.md,
// "Decoding on two threads"). (panel_bytes: a panel of 8 columns, K deep; N: the columns handed out.)
inline int decoding_chunks_per_thread(int64_t panel_bytes, int N, int threads) {
  if (!kDecodingInStreams) return 8;
  for (const int per_thread : {8, 4, 2}) {
    if (chunk_columns(N, per_thread, threads) / 8 * panel_bytes >= 4 * kShortestStream) return per_thread;
  }
  return 8;  // no chunk size gives streams: balance
}
// The panels' spacing (a count of panels) at which N streams cross into their next 4 KB pages
// within 512 bytes of each other. Memory pages are 4 KB (a wasm heap gets no huge pages), and the
// hardware prefetchers stop at each page's end, so each stream's first lines in a new page are
// misses the core waits for. Streams that cross together wait for their misses at once; one
// stream, or streams that cross apart, wait for each in turn (docs/performance.md, "Decoding
// over blocks: streams side by side").
inline int crossing_spacing(int64_t panel_bytes) {
  for (int s = 1; s < 64; ++s) {
    const int64_t off = s * panel_bytes % 4096;
    if (off <= 512 || off >= 4096 - 512) return s;
  }
  return 64;
}

template <WeightType T, bool kDotAdd>
void row_over_blocks(float* out, const float* quantized, const MatrixRef& b, const float* bias, int K, int c0, int c1) {
  const int blocks = K / kBlockRows;
  int j = c0 / 8 * 8;
  // Whole panels as 4 or 2 streams side by side (panels_side_by_side), each at least 64 KB; the
  // rest a panel at a time. Shorter streams (a chunk of a product split over threads) and the plain
  // build (its 16-bit dots run at half the rate memory streams) measured no faster, or slower
  // (docs/performance.md, "Decoding over blocks: streams side by side").
  if constexpr (kDecodingInStreams) {
    const int64_t panel_bytes = int64_t{blocks} * block_bytes(T);
    const int spacing = crossing_spacing(panel_bytes);
    int panels = j == c0 ? (c1 - j) / 8 : 0;
    for (const int streams : {4, 2}) {
      const int D = panels / (streams * spacing) * spacing;  // panels a stream
      if (D * panel_bytes < kShortestStream) continue;
      if (streams == 4) panels_side_by_side<T, 4, kDotAdd>(out, quantized, b, bias, blocks, j, D);
      else panels_side_by_side<T, 2, kDotAdd>(out, quantized, b, bias, blocks, j, D);
      j += 8 * streams * D;
      panels -= streams * D;
    }
  }
  const uint8_t* base = static_cast<const uint8_t*>(b.data);
  for (; j < c1; j += 8) {
    float first[8];
    for (int c = 0; c < 8; ++c) first[c] = bias && j + c < c1 ? bias[j + c] : 0.0f;
    v128_t acc_lo = wasm_v128_load(first), acc_hi = wasm_v128_load(first + 4);
    // Two pointers that advance, from 32-bit arithmetic (g_zero, gemm_tiles.h), every load at a
    // constant offset from one of them.
    const int zero = g_zero;
    const uint8_t* block = base + block_offset(T, 0, j, b.ld) + zero;  // a panel's blocks are consecutive
    const float* row_block = quantized + zero;
    for (const uint8_t* end = block + int64_t{blocks} * block_bytes(T); block < end;
         block += unit_bytes<T>(), row_block += row_unit_floats<T>())
      add_panel_unit<T, kDotAdd>(acc_lo, acc_hi, block, row_block);
    if (c0 <= j && j + 8 <= c1) {  // a whole panel: no call to memcpy (a loop of 8 becomes one)
      wasm_v128_store(out + j, acc_lo);
      wasm_v128_store(out + j + 4, acc_hi);
      continue;
    }
    float result[8];
    wasm_v128_store(result, acc_lo);
    wasm_v128_store(result + 4, acc_hi);
    for (int c = std::max(c0, j); c < std::min(c1, j + 8); ++c) out[c] = result[c - j];
  }
}
// The row's products (row_over_blocks), by the integer dot-add where it measured exact and faster.
template <WeightType T>
void block_row(float* out, const float* quantized, int /*step: kQuantizedBlockFloats in wasm*/, const MatrixRef& b,
               const float* bias, int K, int c0, int c1) {
  if (kDotAddBuild && integer_dot_add()) row_over_blocks<T, kDotAddBuild>(out, quantized, b, bias, K, c0, c1);
  else row_over_blocks<T, false>(out, quantized, b, bias, K, c0, c1);
}
#else
// sum[c] += Σ_i a4[i] · q[i][c] over a group of 4 rows of 4-bit values (q: its 16 bytes, block_q4_byte's order).
inline void add_nibble_group(int32_t* sum, const uint8_t* q, const int16_t* a4) {
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i) sum[c] += a4[i] * (q[4 * c + i] & 15), sum[c + 4] += a4[i] * (q[4 * c + i] >> 4);
}
// ints[c] = a super-block's integer sums of column c times the row's (q_a: its int16 values), as
// add_panel_super takes them: kQ4K's and kQ5K's Σ_sub sc Σ q_a q and, in mins, Σ_sub m Σ q_a (sums:
// the row's sub-block sums); kQ6K's Σ_half sc Σ q_a (u − 32).
template <WeightType T>
void super_integers(const uint8_t* super, const int16_t* q_a, const int16_t* sums, int32_t* ints, int32_t* mins) {
  for (int sub = 0; sub < kSuperBlocks; ++sub) {
    const uint8_t* block = super + block_bytes(T) * sub;
    if constexpr (has_q4k_meta(T)) {
      int32_t sum[8] = {};
      for (int g = 0; g < kBlockRows / 4; ++g) {
        const uint8_t* group = block + block_float_bytes(T) + block_group_bytes(T) * g;
        const int16_t* a4 = q_a + 32 * sub + 4 * g;
        add_nibble_group(sum, group, a4);
        if constexpr (T == WeightType::kQ5K)  // the fifth bits: 16 · q_a where column c's bit is set
          for (int c = 0; c < 8; ++c)
            for (int i = 0; i < 4; ++i) {
              const int r = 4 * g + i;
              sum[c] += 16 * a4[i] * (block[block_q5k_high_byte(r, c)] >> block_q5k_high_bit(r, c) & 1);
            }
      }
      for (int c = 0; c < 8; ++c) {
        ints[c] += *q4k_meta(super, q4k_sc_byte(sub, c), T) * sum[c];
        mins[c] += *q4k_meta(super, q4k_m_byte(sub, c), T) * sums[sub];
      }
    } else {
      for (int half = 0; half < 2; ++half) {
        int32_t sum[8] = {};
        for (int g = 4 * half; g < 4 * half + 4; ++g) {
          const int16_t* a4 = q_a + 32 * sub + 4 * g;
          for (int c = 0; c < 8; ++c)
            for (int i = 0; i < 4; ++i) sum[c] += a4[i] * (block[block_float_bytes(T) + 32 * g + 4 * c + i] - kQ6Offset);
        }
        for (int c = 0; c < 8; ++c) ints[c] += static_cast<int8_t>(block[q6k_sc_byte(half, c)]) * sum[c];
      }
    }
  }
}
template <WeightType T>
void block_row(float* out, const float* quantized, int step, const MatrixRef& b, const float* bias, int K, int c0, int c1) {
  const int blocks = K / kBlockRows;
  const uint8_t* base = static_cast<const uint8_t*>(b.data);
  if constexpr (has_super_blocks(T)) {  // as add_panel_super: the same integers, the same float operations
    for (int j = c0 / 8 * 8; j < c1; j += 8) {
      float acc[8];
      for (int c = 0; c < 8; ++c) acc[c] = bias && j + c < c1 ? bias[j + c] : 0.0f;
      const uint8_t* super = base + block_offset(T, 0, j, b.ld);
      for (int s = 0; s < K / kSuperRows; ++s, super += kSuperBlocks * block_bytes(T)) {
        const float* row = quantized + s * step;
        int16_t sums[kSuperBlocks];
        std::memcpy(sums, row + 4, sizeof sums);
        int32_t ints[8] = {}, mins[8] = {};
        super_integers<T>(super, reinterpret_cast<const int16_t*>(row + kSuperQFloats), sums, ints, mins);
        for (int c = 0; c < 8; ++c) {
          const float d = has_q4k_meta(T) ? q4k_float(super, 4 * c, T) : q6k_float_d(super, c);
          acc[c] += (d * row[0]) * static_cast<float>(ints[c]);
          if (has_q4k_meta(T)) acc[c] -= (q4k_float(super, 32 + 4 * c, T) * row[0]) * static_cast<float>(mins[c]);
        }
      }
      for (int c = std::max(c0, j); c < std::min(c1, j + 8); ++c) out[c] = acc[c - j];
    }
    return;
  }
  for (int j = c0 / 8 * 8; j < c1; j += 8) {
    float acc[8];
    for (int c = 0; c < 8; ++c) acc[c] = bias && j + c < c1 ? bias[j + c] : 0.0f;
    const uint8_t* block = base + block_offset(T, 0, j, b.ld);  // a panel's blocks are consecutive
    for (int blk = 0; blk < blocks; ++blk, block += block_bytes(T)) {
      const float* row_block = quantized + blk * step;
      const int16_t* q_a = reinterpret_cast<const int16_t*>(row_block + 2);
      float scale[8], min[8];
      std::memcpy(scale, block, sizeof scale);
      if (has_mins(T))
        for (int c = 0; c < 8; ++c) min[c] = block_min(T, block, c);
      // The block's groups in their stored order (block_q8_byte, block_q5_byte, block_q4_byte), in
      // plain loops a compiler vectorizes: the element-by-element block_integer() had made the native
      // suite's GGUF fixtures 15× slower. kQ5 sums each half block (groups 0–3, 4–7) on its own.
      int32_t sum[16] = {};
      for (int g = 0; g < kBlockRows / 4; ++g) {
        const int16_t* a4 = q_a + 4 * g;
        if constexpr (!has_nibbles(T)) {
          const int8_t* q = reinterpret_cast<const int8_t*>(block + block_float_bytes(T) + 32 * g);
          int32_t* half_sum = sum + (T == WeightType::kQ5 ? 8 * (g / 4) : 0);
          for (int c = 0; c < 8; ++c)
            for (int i = 0; i < 4; ++i) half_sum[c] += a4[i] * q[4 * c + i];
        } else {
          add_nibble_group(sum, block + block_float_bytes(T) + 16 * g, a4);
        }
      }
      for (int c = 0; c < 8; ++c) {
        acc[c] += (scale[c] * row_block[0]) * static_cast<float>(sum[c]);
        if (T == WeightType::kQ5) acc[c] += (scale[c] * row_block[0]) * static_cast<float>(sum[8 + c]);
        if (has_mins(T)) acc[c] -= min[c] * row_block[1];
      }
    }
    for (int c = std::max(c0, j); c < std::min(c1, j + 8); ++c) out[c] = acc[c - j];
  }
}
inline int decoding_chunks_per_thread(int64_t, int, int) { return 8; }  // natively no streams
#endif

// A tile of prefill: c (R × 8, rows ldc apart) = bias (8 floats, or 0) + R quantized rows (`a`, a
// tile of quantize_rows) · one panel of `blocks` blocks from `panel`, every element computed as
// block_row computes it. Per block, the integer sums of all R rows first (each group of the block
// read once for the R rows), then add_block's float operations, with c as the accumulator in
// memory (the sums take the registers). The sums:
// - where integer_dot_add() (core/gemm_tuning.h), the integer dot-add (tile_sums);
// - relaxed build, 4- and 5-bit blocks: the int8 dot (tile_sums);
// - otherwise 16-bit dots into int32, as block_sums (the relaxed dot takes |q_a| and moves the
//   sign per row onto 8-bit values: 6 more operations a group and row than the 16-bit dot).
// kQ5's per half block, each half added to c with the block's scales before the next, then its
// mins, as block_row adds them.
// Called only through block_tile_of_height()'s pointers, as tile() (gemm_tiles.h) is, and for the
// same reason: inlined, its loops would be nested in its callers', and V8 would unroll them.
#if defined(__wasm_simd128__)
// each(group, rows) for groups [kFirst, kFirst + kGroups) of one block: the group's bytes
// (block_group_at) and the tile's row 0's values in it (Q: the tiles' int8 or int16 q_a; row r's
// are r · tile_block_floats<T>() floats on). It walks pointers, not a group index: from an index V8
// computed each broadcast's address anew (a `lea` each, its broadcasts taking no offset); from a
// pointer it keeps each row's base in a register.
// (for_each_group_at: from the first group's bytes and row 0's values in it.)
template <WeightType T, typename Q, int kGroups, typename Each>
inline void for_each_group_at(const uint8_t* group, const Q* rows, Each each) {
  for (const uint8_t* end = group + block_group_bytes(T) * kGroups; group < end; group += block_group_bytes(T), rows += 4)
    each(group, rows);
}
template <WeightType T, typename Q, int kFirst, int kGroups, typename Each>
inline void for_each_group(const uint8_t* block, const float* a_block, Each each) {
  for_each_group_at<T, Q, kGroups>(block + block_float_bytes(T) + block_group_bytes(T) * kFirst,
                                   reinterpret_cast<const Q*>(a_block + kTileQFloats) + 4 * kFirst, each);
}
// Row r's values of a group, from row 0's (for_each_group).
template <WeightType T, typename Q>
inline const Q* tile_row(const Q* rows, int r) { return rows + r * tile_block_floats<T>() * (sizeof(float) / sizeof(Q)); }
// sum[r] = columns 0–3 and 4–7 of p[r] (add_tile_group_dots), each column's two lanes added.
template <int R>
inline void column_sums(const v128_t (&p)[R][4], v128_t (&sum)[R][2]) {
  for (int r = 0; r < R; ++r) {
    sum[r][0] = wasm_i32x4_add(wasm_i32x4_shuffle(p[r][0], p[r][1], 0, 2, 4, 6), wasm_i32x4_shuffle(p[r][0], p[r][1], 1, 3, 5, 7));
    sum[r][1] = wasm_i32x4_add(wasm_i32x4_shuffle(p[r][2], p[r][3], 0, 2, 4, 6), wasm_i32x4_shuffle(p[r][2], p[r][3], 1, 3, 5, 7));
  }
}
// p[r] += the 16-bit dots of row r's int16 values with kGroups groups from `groups` (rows0: row 0's
// values in the first; kQ5K: the 4 groups of a half block, its fifth bits at `fifth`), lanes as
// group_sums': (c, rows 0–1), (c, rows 2–3), (c + 1, …); each group read once for the R rows.
template <WeightType T, int R, int kGroups>
inline void add_tile_group_dots(const uint8_t* groups, const int16_t* rows0, v128_t (&p)[R][4], const uint8_t* fifth = nullptr) {
  [[maybe_unused]] Q5KFifthBits bits(T == WeightType::kQ5K ? wasm_v128_load(fifth) : p[0][0]);
  for_each_group_at<T, int16_t, kGroups>(groups, rows0, [&](const uint8_t* group, const int16_t* rows) {
    v128_t left, right;
    block_group_at(T, group, left, right);
    if constexpr (T == WeightType::kQ5K) bits.add_next(left, right);
    const v128_t w0 = wasm_i16x8_extend_low_i8x16(left), w1 = wasm_i16x8_extend_high_i8x16(left);
    const v128_t w2 = wasm_i16x8_extend_low_i8x16(right), w3 = wasm_i16x8_extend_high_i8x16(right);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_v128_load64_splat(tile_row<T>(rows, r));
      p[r][0] = wasm_i32x4_add(p[r][0], wasm_i32x4_dot_i16x8(w0, x));
      p[r][1] = wasm_i32x4_add(p[r][1], wasm_i32x4_dot_i16x8(w1, x));
      p[r][2] = wasm_i32x4_add(p[r][2], wasm_i32x4_dot_i16x8(w2, x));
      p[r][3] = wasm_i32x4_add(p[r][3], wasm_i32x4_dot_i16x8(w3, x));
    }
  });
}
// sum[r] = the 16-bit dots' int32 sums of row r of a tile over kGroups groups of one block, as
// group_sums' (from the first group's bytes and row 0's values in it).
template <WeightType T, int R, int kGroups>
inline void tile_group_sums_at(const uint8_t* groups, const int16_t* rows0, v128_t (&sum)[R][2]) {
  v128_t p[R][4];
  for (int r = 0; r < R; ++r) p[r][0] = p[r][1] = p[r][2] = p[r][3] = wasm_i32x4_splat(0);
  add_tile_group_dots<T, R, kGroups>(groups, rows0, p);
  column_sums<R>(p, sum);
}
// The same over groups [kFirst, kFirst + kGroups) of a block, from a tile's quantized rows (a_block: row 0's).
template <WeightType T, int R, int kFirst, int kGroups>
inline void tile_group_sums(const uint8_t* block, const float* a_block, v128_t (&sum)[R][2]) {
  tile_group_sums_at<T, R, kGroups>(block + block_float_bytes(T) + block_group_bytes(T) * kFirst,
                                    reinterpret_cast<const int16_t*>(a_block + kTileQFloats) + 4 * kFirst, sum);
}
#if defined(__wasm_relaxed_simd__)
// pairs[r] = the int16 pair sums of row r of a tile by the int8 dot, over kGroups groups of 4-, 5-
// or 6-bit values as stored from `groups` (rows0: row 0's int8 values in the first; for_each_group_at;
// kQ5K: the 4 groups of a half block, its fifth bits at `fifth`).
template <WeightType T, int R, int kGroups>
inline void tile_pairs_at(const uint8_t* groups, const int8_t* rows0, v128_t (&pairs)[R][2], const uint8_t* fifth = nullptr) {
  for (int r = 0; r < R; ++r) pairs[r][0] = pairs[r][1] = wasm_i16x8_splat(0);
  [[maybe_unused]] Q5KFifthBits bits(T == WeightType::kQ5K ? wasm_v128_load(fifth) : pairs[0][0]);
  for_each_group_at<T, int8_t, kGroups>(groups, rows0, [&](const uint8_t* group, const int8_t* rows) {
    v128_t left, right;
    stored_group_at(T, group, left, right);
    if constexpr (T == WeightType::kQ5K) bits.add_next(left, right);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_v128_load32_splat(tile_row<T>(rows, r));
      pairs[r][0] = wasm_i16x8_add(pairs[r][0], dot_i8x16_i7x16(x, left));
      pairs[r][1] = wasm_i16x8_add(pairs[r][1], dot_i8x16_i7x16(x, right));
    }
  });
}
#endif
// sum[r] = the int32 sums of row r of a tile over groups [kFirst, kFirst + kGroups) of one block:
// with kDotAdd by the integer dot-add (8-bit values with the sign moved, as decoding's; the others
// as stored); otherwise in the relaxed build over 4- and 5-bit blocks by the int8 dot, its int16
// pairs added as int16 (kQ4 over a whole block: 8 · 2 · 127 · 15 = 30480; kQ5 over half of one:
// 4 · 2 · 127 · 31 = 31496) and widened once; otherwise tile_group_sums' 16-bit dots. The same
// sums each way.
template <WeightType T, int R, int kFirst, int kGroups, bool kDotAdd>
inline void tile_sums(const uint8_t* block, const float* a_block, v128_t (&sum)[R][2]) {
#if defined(__wasm_relaxed_simd__)
  if constexpr (kDotAdd) {
    for (int r = 0; r < R; ++r) sum[r][0] = sum[r][1] = wasm_i32x4_splat(0);
    for_each_group<T, int8_t, kFirst, kGroups>(block, a_block, [&](const uint8_t* group, const int8_t* rows) {
      v128_t left, right;
      stored_group_at(T, group, left, right);
      for (int r = 0; r < R; ++r) {
        const int8_t* row = tile_row<T>(rows, r);
        if constexpr (tile_reads_int8<T>()) {
          const v128_t x = wasm_v128_load32_splat(row);
          sum[r][0] = dot_add_i8x16_i7x16(x, left, sum[r][0]);
          sum[r][1] = dot_add_i8x16_i7x16(x, right, sum[r][1]);
        } else {  // quantize_rows' |q_a|, then the signs
          const v128_t y = wasm_v128_load32_splat(row), m = wasm_v128_load32_splat(row + 32);
          sum[r][0] = signed_dot_add(left, m, y, sum[r][0]);
          sum[r][1] = signed_dot_add(right, m, y, sum[r][1]);
        }
      }
    });
    return;
  }
  if constexpr (tile_reads_int8<T>()) {
    v128_t pairs[R][2];  // int16 sums of the int8 dot's pairs
    tile_pairs_at<T, R, kGroups>(block + block_float_bytes(T) + block_group_bytes(T) * kFirst,
                                 reinterpret_cast<const int8_t*>(a_block + kTileQFloats) + 4 * kFirst, pairs);
    for (int r = 0; r < R; ++r) {
      sum[r][0] = wasm_i32x4_extadd_pairwise_i16x8(pairs[r][0]);
      sum[r][1] = wasm_i32x4_extadd_pairwise_i16x8(pairs[r][1]);
    }
    return;
  }
#endif
  tile_group_sums<T, R, kFirst, kGroups>(block, a_block, sum);
}
// c's R rows += a kQ5 half block's sums, with the block's scales (at `scales`): add_scaled
// (F: tile_block_floats).
template <int R, int F>
inline void tile_add(float* c, int64_t ldc, const uint8_t* scales, const float* a_block, const v128_t (&sum)[R][2]) {
  const v128_t scale_lo = wasm_v128_load(scales), scale_hi = wasm_v128_load(scales + 16);  // once for the R rows
  for (int r = R - 1; r >= 0; --r) {
    v128_t lo = wasm_v128_load(c + r * ldc), hi = wasm_v128_load(c + r * ldc + 4);
    add_scaled(lo, hi, scale_lo, scale_hi, splat_lane(wasm_v128_load(a_block + r * F), 0), sum[r][0], sum[r][1]);
    wasm_v128_store(c + r * ldc, lo);
    wasm_v128_store(c + r * ldc + 4, hi);
  }
}

// c's R rows (8 floats each) = bias (or 0); returns g_zero (gemm_tiles.h), from which the tile's
// loop makes its pointers with 32-bit arithmetic.
template <int R>
inline int start_tile(float* c, int64_t ldc, const float* bias) {
  for (int r = 0; r < R; ++r) {
    wasm_v128_store(c + r * ldc, bias ? wasm_v128_load(bias) : wasm_f32x4_splat(0.0f));
    wasm_v128_store(c + r * ldc + 4, bias ? wasm_v128_load(bias + 4) : wasm_f32x4_splat(0.0f));
  }
  return g_zero;
}
// ints[r] += sub-block j of a kQ4K or kQ5K super-block times row r of a tile (a_super: row 0's unit):
// the int8 dot's int16 pairs (kQ4K's over the sub-block: 8 · 2 · 127 · 15 = 30480 at most; kQ5K's a
// half at a time: 4 · 2 · 127 · 31 = 31496), or 16-bit dots' int32 sums, as tile_sums' for kQ4,
// times the sub-block's scales into int32 (add_sub_block).
template <WeightType T, int R>
inline void q4k_tile_sub_block(const uint8_t* super, const float* a_super, int j, v128_t (&ints)[R][2]) {
  const uint8_t* block = super + block_bytes(T) * j;
#if defined(__wasm_relaxed_simd__)
  const int8_t* rows0 = reinterpret_cast<const int8_t*>(a_super + kSuperQFloats) + 32 * j;
  v128_t pairs[R][2];
  if constexpr (T == WeightType::kQ5K) {  // a half at a time (groups 0–3, then 4–7)
    tile_pairs_at<T, R, 4>(block + block_float_bytes(T), rows0, pairs, block + kQ5KFifthBits);
    for (int r = 0; r < R; ++r) add_sub_block<T>(ints[r][0], ints[r][1], super, j, pairs[r][0], pairs[r][1]);
    tile_pairs_at<T, R, 4>(block + block_float_bytes(T) + 64, rows0 + 16, pairs, block + kQ5KFifthBits + 16);
  } else {
    tile_pairs_at<T, R, kBlockRows / 4>(block + block_float_bytes(T), rows0, pairs);
  }
  for (int r = 0; r < R; ++r) add_sub_block<T>(ints[r][0], ints[r][1], super, j, pairs[r][0], pairs[r][1]);
#else
  const int16_t* rows0 = reinterpret_cast<const int16_t*>(a_super + kSuperQFloats) + 32 * j;
  v128_t sum[R][2];
  if constexpr (T == WeightType::kQ5K) {  // a half's fifth bits at a time (groups 0–3, then 4–7)
    v128_t p[R][4];
    for (int r = 0; r < R; ++r) p[r][0] = p[r][1] = p[r][2] = p[r][3] = wasm_i32x4_splat(0);
    add_tile_group_dots<T, R, 4>(block + block_float_bytes(T), rows0, p, block + kQ5KFifthBits);
    add_tile_group_dots<T, R, 4>(block + block_float_bytes(T) + 64, rows0 + 16, p, block + kQ5KFifthBits + 16);
    column_sums<R>(p, sum);
  } else {
    tile_group_sums_at<T, R, kBlockRows / 4>(block + block_float_bytes(T), rows0, sum);
  }
  for (int r = 0; r < R; ++r) add_sub_block<T>(ints[r][0], ints[r][1], super, j, sum[r][0], sum[r][1]);
#endif
}
// c's R rows += a kQ4K or kQ5K super-block's integer sums as floats, with its mins (q4k_add; the
// super-block's floats loaded once for the R rows).
template <WeightType T, int R>
inline void q4k_tile_add(float* c, int64_t ldc, const uint8_t* super, const float* a_super, const v128_t (&ints)[R][2]) {
  constexpr int F = tile_block_floats<T>();
  const v128_t d_lo = wasm_v128_load(super), d_hi = wasm_v128_load(super + 16);
  const v128_t dmin_lo = wasm_v128_load(q4k_meta(super, 32, T)), dmin_hi = wasm_v128_load(q4k_meta(super, 48, T));
  for (int r = R - 1; r >= 0; --r) {
    const float* row = a_super + r * F;
    v128_t min_lo, min_hi;
    q4k_min_sums<T>(super, wasm_v128_load(row + 4), min_lo, min_hi);
    v128_t lo = wasm_v128_load(c + r * ldc), hi = wasm_v128_load(c + r * ldc + 4);
    q4k_add(lo, hi, d_lo, d_hi, dmin_lo, dmin_hi, splat_lane(wasm_v128_load(row), 0), ints[r][0], ints[r][1], min_lo, min_hi);
    wasm_v128_store(c + r * ldc, lo);
    wasm_v128_store(c + r * ldc + 4, hi);
  }
}
// ints[r] += half kHalf of block j of a kQ6K super-block times row r of a tile (a_super: row 0's unit):
// the relaxed build's int8 dot pairs less the offsets (q6k_half_pairs), or 16-bit dots' int32 sums,
// each times the half's sc (add_q6k_half).
template <int R, int kHalf>
inline void q6k_tile_half(const uint8_t* block, const float* a_super, int j, v128_t (&ints)[R][2]) {
  constexpr WeightType T = WeightType::kQ6K;
  [[maybe_unused]] constexpr int F = tile_block_floats<T>();  // (the relaxed build's offsets)
  const uint8_t* groups = block + block_float_bytes(T) + block_group_bytes(T) * 4 * kHalf;
#if defined(__wasm_relaxed_simd__)
  v128_t pairs[R][2];  // wrapping int16 sums, exact once less the offsets (q6k_half_pairs)
  tile_pairs_at<T, R, 4>(groups, reinterpret_cast<const int8_t*>(a_super + kSuperQFloats) + 32 * j + 16 * kHalf, pairs);
  v128_t sc_lo, sc_hi;  // once for the R rows
  q6k_pair_scales<kHalf>(block, sc_lo, sc_hi);
  for (int r = 0; r < R; ++r) {
    const v128_t offset = offset_sum(a_super + r * F + kQ6KOffsets + 2 * j, kHalf);
    ints[r][0] = wasm_i32x4_add(ints[r][0], wasm_i32x4_dot_i16x8(wasm_i16x8_sub(pairs[r][0], offset), sc_lo));
    ints[r][1] = wasm_i32x4_add(ints[r][1], wasm_i32x4_dot_i16x8(wasm_i16x8_sub(pairs[r][1], offset), sc_hi));
  }
#else
  v128_t sum[R][2];
  tile_group_sums_at<T, R, 4>(groups, reinterpret_cast<const int16_t*>(a_super + kSuperQFloats) + 32 * j + 16 * kHalf, sum);
  for (int r = 0; r < R; ++r) add_q6k_half<kHalf>(ints[r][0], ints[r][1], block, sum[r][0], sum[r][1]);
#endif
}
// c's R rows += a kQ6K super-block's integer sums as floats (q6k_add; its d loaded once for the R rows).
template <int R>
inline void q6k_tile_add(float* c, int64_t ldc, const uint8_t* super, const float* a_super, const v128_t (&ints)[R][2]) {
  constexpr int F = tile_block_floats<WeightType::kQ6K>();
  const v128_t d_lo = wasm_v128_load(q6k_d(super, 0)), d_hi = wasm_v128_load(q6k_d(super, 1));
  for (int r = R - 1; r >= 0; --r) {
    v128_t lo = wasm_v128_load(c + r * ldc), hi = wasm_v128_load(c + r * ldc + 4);
    q6k_add(lo, hi, d_lo, d_hi, splat_lane(wasm_v128_load(a_super + r * F), 0), ints[r][0], ints[r][1]);
    wasm_v128_store(c + r * ldc, lo);
    wasm_v128_store(c + r * ldc + 4, hi);
  }
}
// A tile of prefill over kQ4K's, kQ5K's or kQ6K's super-blocks, every element as add_panel_super computes it:
// per sub-block (kQ6K's: per half block) the R rows' integer sums times its integer scales into int32,
// then once a super-block the float operations (and kQ4K's and kQ5K's mins), with c as the accumulator in memory.
template <WeightType T, int R>
void super_tile(float* c, int64_t ldc, const float* a, const uint8_t* panel, int blocks, const float* bias) {
  constexpr int F = tile_block_floats<T>();
  const int zero = start_tile<R>(c, ldc, bias);
  const float* a_super = a + zero;
  const uint8_t* super = panel + zero;
  for (const uint8_t* end = super + int64_t{blocks} * block_bytes(T); super < end;
       super += kSuperBlocks * block_bytes(T), a_super += R * F) {
    v128_t ints[R][2];
    for (int r = 0; r < R; ++r) ints[r][0] = ints[r][1] = wasm_i32x4_splat(0);
    for (int j = 0; j < kSuperBlocks; ++j) {
      if constexpr (has_q4k_meta(T)) {
        q4k_tile_sub_block<T, R>(super, a_super, j, ints);
      } else {
        q6k_tile_half<R, 0>(super + block_bytes(T) * j, a_super, j, ints);
        q6k_tile_half<R, 1>(super + block_bytes(T) * j, a_super, j, ints);
      }
    }
    if constexpr (has_q4k_meta(T)) q4k_tile_add<T, R>(c, ldc, super, a_super, ints);
    else q6k_tile_add<R>(c, ldc, super, a_super, ints);
  }
}

template <WeightType T, int R, bool kDotAdd>
void block_tile(float* c, int64_t ldc, const float* a, const uint8_t* panel, int blocks, const float* bias) {
  if constexpr (has_super_blocks(T)) return super_tile<T, R>(c, ldc, a, panel, blocks, bias);
  const int zero = start_tile<R>(c, ldc, bias);
  const float* a_block = a + zero;
  const uint8_t* block = panel + zero;
  for (const uint8_t* end = block + int64_t{blocks} * block_bytes(T); block < end;
       block += block_bytes(T), a_block += R * tile_block_floats<T>()) {
    v128_t sum[R][2];
    if constexpr (T == WeightType::kQ5) {  // a half block at a time, each added with the block's scales
      tile_sums<T, R, 0, 4, kDotAdd>(block, a_block, sum);
      tile_add<R, tile_block_floats<T>()>(c, ldc, block, a_block, sum);
      tile_sums<T, R, 4, 4, kDotAdd>(block, a_block, sum);
      tile_add<R, tile_block_floats<T>()>(c, ldc, block, a_block, sum);
      v128_t min_lo, min_hi;  // once for the R rows
      load_block_mins(T, block, min_lo, min_hi);
      for (int r = R - 1; r >= 0; --r) {
        v128_t lo = wasm_v128_load(c + r * ldc), hi = wasm_v128_load(c + r * ldc + 4);
        subtract_mins(lo, hi, min_lo, min_hi, splat_lane(wasm_v128_load(a_block + r * tile_block_floats<T>()), 1));
        wasm_v128_store(c + r * ldc, lo);
        wasm_v128_store(c + r * ldc + 4, hi);
      }
      continue;
    }
    tile_sums<T, R, 0, kBlockRows / 4, kDotAdd>(block, a_block, sum);
    // add_block's operations, with the block's scales and mins loaded once for the R rows
    const v128_t scale_lo = wasm_v128_load(block), scale_hi = wasm_v128_load(block + 16);
    v128_t min_lo = scale_lo, min_hi = scale_hi;
    if constexpr (has_mins(T)) load_block_mins(T, block, min_lo, min_hi);
    for (int r = R - 1; r >= 0; --r) {
      v128_t lo = wasm_v128_load(c + r * ldc), hi = wasm_v128_load(c + r * ldc + 4);
      const v128_t row_block = wasm_v128_load(a_block + r * tile_block_floats<T>());
      add_scaled(lo, hi, scale_lo, scale_hi, splat_lane(row_block, 0), sum[r][0], sum[r][1]);
      if constexpr (has_mins(T)) subtract_mins(lo, hi, min_lo, min_hi, splat_lane(row_block, 1));
      wasm_v128_store(c + r * ldc, lo);
      wasm_v128_store(c + r * ldc + 4, hi);
    }
  }
}
#else
// Natively, each row as block_row computes it.
template <WeightType T, int R, bool kDotAdd>
void block_tile(float* c, int64_t ldc, const float* a, const uint8_t* panel, int blocks, const float* bias) {
  // block_row reads its panel through a MatrixRef: this one, blocks deep.
  const MatrixRef b{panel, T, int64_t{blocks} * kBlockRows, true};
  for (int r = 0; r < R; ++r)
    block_row<T>(c + r * ldc, a + r * tile_block_floats<T>(), R * tile_block_floats<T>(), b, bias ? bias : nullptr,
                 blocks * kBlockRows, 0, 8);
}
#endif

using BlockTileFn = void (*)(float*, int64_t, const float*, const uint8_t*, int, const float*);

template <WeightType T, bool kDotAdd>
BlockTileFn block_tile_of_height(int rows) {
  static BlockTileFn volatile tiles[kTallestBlockTile + 1] = {
      nullptr, block_tile<T, 1, kDotAdd>, block_tile<T, 2, kDotAdd>, block_tile<T, 3, kDotAdd>,
      block_tile<T, 4, kDotAdd>, block_tile<T, 5, kDotAdd>, block_tile<T, 6, kDotAdd>};
  return tiles[rows];
}

// out (rows × [c0, c1)) = bias + rows of `a` · b over blocks, for a quantized by quantize_rows (at
// most block_tile_rows<T>() rows a tile): a group of tiles at a time (their quantized rows, up to
// kBlockTileBytes, stay in L2) while all the panels pass, each panel read by the group's tiles from
// L1. A panel narrower than 8 (the last columns) goes through a scratch tile.
constexpr int64_t kBlockTileBytes = int64_t{384} << 10;
template <WeightType T, bool kDotAdd>
void tiles_over_blocks(float* out, int64_t ldo, const float* quantized, const MatrixRef& b, const float* bias, int rows,
                       int K, int c0, int c1) {
  const int blocks = K / kBlockRows, tallest = block_tile_rows<T>();
  const int64_t row_floats = int64_t{K / type_rows(T)} * tile_block_floats<T>();
  const int group_rows = static_cast<int>(std::max<int64_t>(1, kBlockTileBytes / (4 * std::max<int64_t>(row_floats, 1))));
  const uint8_t* base = static_cast<const uint8_t*>(b.data);
  for (int i0 = 0, i1; i0 < rows; i0 = i1) {
    for (i1 = i0; i1 < rows && i1 - i0 < group_rows;) i1 += block_tile_height(i1, rows, tallest);
    for (int j = c0; j < c1; j += 8) {
      const int width = std::min(8, c1 - j);
      const uint8_t* panel = base + block_offset(T, 0, j, b.ld);
      for (int i = i0, h; i < i1; i += h) {
        h = block_tile_height(i, rows, tallest);
        const float* a = quantized + i * row_floats;
        if (width == 8) {
          block_tile_of_height<T, kDotAdd>(h)(out + i * ldo + j, ldo, a, panel, blocks, bias ? bias + j : nullptr);
          continue;
        }
        alignas(16) float scratch[kTallestBlockTile * 8], bias8[8] = {};
        if (bias) std::copy(bias + j, bias + j + width, bias8);
        block_tile_of_height<T, kDotAdd>(h)(scratch, 8, a, panel, blocks, bias ? bias8 : nullptr);
        for (int r = 0; r < h; ++r) std::copy(scratch + r * 8, scratch + r * 8 + width, out + (i + r) * ldo + j);
      }
    }
  }
}

// The tiles (tiles_over_blocks), by the integer dot-add where it measured exact and faster; the
// rows quantized by quantize_rows with the same choice.
template <WeightType T>
void block_tiles(float* out, int64_t ldo, const float* quantized, const MatrixRef& b, const float* bias, int rows, int K,
                 int c0, int c1) {
  if (kDotAddBuild && integer_dot_add()) tiles_over_blocks<T, kDotAddBuild>(out, ldo, quantized, b, bias, rows, K, c0, c1);
  else tiles_over_blocks<T, false>(out, ldo, quantized, b, bias, rows, K, c0, c1);
}

}  // namespace
}  // namespace mh

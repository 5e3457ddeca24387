// The GEMM's micro-kernel (gemm.cpp's second part): a tile of R rows × 8 columns of `out` kept in
// registers while it runs down one panel of B, touching the weights that come next; how a
// product's rows are cut into tiles, and `a` packed for them.
//
// The micro-kernel keeps a 5 × 8 tile of `out` in 10 vector registers (the relaxed build also a
// 6 × 8 tile in 12, for CPUs whose multiply-adds take 5 cycles: kTileRows) and, per k, loads 8 floats
// of the panel and splats one float of each of 5 rows of `a`, which is packed too (k-major, one
// pointer: V8 spilled its loop counters when each row had a pointer of its own). 10 chains also
// keep 2 pipes of 4-cycle fused multiply-adds busy, where 4 rows (8 chains) left no slack. V8 gives wasm 15 vector
// registers: 10 accumulators, 2 panel vectors, a splat and the plain build's product fit only
// if V8 places each splat next to its use. Where it does is decided by its scheduler (read on
// V8 11.3's machine code, --print-wasm-code): values that feed the loop's phis directly are
// placed use by use, in the order of the stores after the loop (so tile() stores the last row
// first; in row order all 5 splats came first and 3 registers spilled), but values that feed
// other arithmetic are placed level by level: all loads first. V8 unrolls a small loop nested
// in another twice, and its first copy feeds the second, so that copy spilled too. So tile()'s
// k loops are not nested in any other, and the function is called through a pointer (binaryen
// would otherwise inline it into its caller's loops).
//
// Touching ahead costs a load and an add a step of k. A tile touches its share of the lines in
// its first steps, 8 bytes apart (each line 8 times, so the misses come spread out), and runs its
// other steps in a second loop without the touch, which measured faster than touching every step.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/gemm_vectors.h"

namespace mh {

// Private to gemm.cpp, the one file that includes it: internal linkage, as if written there.
namespace {

// 5 rows × 8 columns in both builds (see the header comment), and 6 rows where they fit: the
// relaxed build's 12 accumulators, 2 panel vectors and a splat are exactly V8's 15 registers (the
// plain build's product needs a 16th). Where fused multiply-adds take 5 cycles, a tile needs 10
// chains to keep its 2 pipes busy (tile_height()). (MH_GEMM_TILE_ROWS=4 or 5 tries fewer in the
// benchmark and the native tests.)
#ifndef MH_GEMM_TILE_ROWS
#if defined(__wasm_relaxed_simd__)
#define MH_GEMM_TILE_ROWS 6
#else
#define MH_GEMM_TILE_ROWS 5
#endif
#endif
constexpr int kTileRows = MH_GEMM_TILE_ROWS;
static_assert(kTileRows >= 4 && kTileRows <= 6, "tile_height() splits rows into 4s, 5s and 4s, or 5s and 6s");

// The weights that come after the panel a tile is reading, touched while it computes (gemm.cpp's
// header comment): the tiles of a panel share the lines from `next` up to `end` (nothing to
// touch: next == end), each tile at most `lines_per_tile` of them.
struct Lookahead {
  const char* next = nullptr;
  const char* end = nullptr;
  int64_t lines_per_tile = 0;
  void spread_over(int tiles) {
    const int64_t lines = (end - next + 63) / 64;
    if (lines > 0) lines_per_tile = (lines + tiles - 1) / tiles;
  }
};

// What a tile touches ahead (Lookahead): its share of the lines, one byte each of its first
// `steps` steps of k, from `next` on, `stride` bytes apart (header comment).
struct Touch {
  const char* next = nullptr;
  int stride = 0;
  int steps = 0;
};
constexpr int kTouchStride = 8;  // the fewest bytes between touches (header comment)

// A 0 that no compiler can fold away, read once per tile: tile()'s loop pointers start from
// `pointer + g_zero`. V8 must widen a 32-bit wasm address to 64 bits before it loads through it
// and skips that only for a value it sees come out of 32-bit arithmetic (x86-64 clears the upper
// half), through loop phis too, but never for a function's parameter. Started from the
// parameters, the loop carried a `movl` per pointer at every step of k: 2 of a 5-row step's 35
// instructions, where the core issues ~6 a cycle (docs/development.md, "V8 and 32-bit addresses").
volatile int g_zero = 0;

// How the relaxed build's tiles read bf16 panels in place: 8 values as float32 in column order,
// by two extending loads and a shift each (widen8: 4 operations where load8_even_odd takes 3). No register
// then holds the 16 loaded bytes or the mask, so a 6-row tile fits V8's 15 registers (12
// accumulators, 2 panel vectors, a splat) as float32's does; with load8_even_odd, 5 and 6 rows
// spilled, and 4-row tiles (8 chains) leave 5-cycle multiply-adds a fifth idle. The plain build
// keeps load8_even_odd and 4 rows: there every operation costs, and the extending loads measured
// slower.
constexpr bool kBf16TilesExtend = kFusedMultiplyAdd;
// Whether the tiles reading fp16 in place move its even columns by a multiply-add (even_f16_bits):
// in the plain build, not beside the relaxed build's fused multiply-adds.
constexpr bool kFp16TilesByMultiplyAdd = !kFusedMultiplyAdd;
// The lane order of a tile's accumulators over T: load8_lanes' (even and odd columns for 2-byte
// weights in wasm), or column order where bf16 comes through widen8.
template <WeightType T>
constexpr bool kTileEvenOddLanes = kEvenOddLanes<T> && !(T == WeightType::kBF16 && kBf16TilesExtend);

// One step of k of a tile: acc (R × 8) += a_k (R floats) ⊗ b_k (8 elements of B as float32,
// in the lane order kTileEvenOddLanes says).
template <int R, WeightType T, Fp16Widening W, bool kLastRowFirst = false>
inline void tile_step(v4 (&acc)[R][2], const float* a_k, const Stored<T>* b_k) {
  static_assert(T != WeightType::kF16 || W == Fp16Widening::kPrescaled || W == Fp16Widening::kTrusted,
                "fp16 read in place only from matrices known finite (two_byte_in_place)");
  v4 b0, b1;
  Fp16Specials none;
  if constexpr (T == WeightType::kBF16 && kBf16TilesExtend) widen8<T>(b_k, b0, b1);
  else load8_lanes<T, W, kFp16TilesByMultiplyAdd>(b_k, b0, b1, none);
  for (int i = 0; i < R; ++i) {
    const int r = kLastRowFirst ? R - 1 - i : i;
    const v4 s = splat(a_k + r);
    acc[r][0] = madd(acc[r][0], s, b0);
    acc[r][1] = madd(acc[r][1], s, b1);
  }
}

// The micro-kernel: c (R × 8, rows ldc apart) = (accumulate ? c : bias, or 0) + a · panel (depth × 8),
// where a (R × depth) is packed k-major: a[k · R + r], and the panel holds float32 or, read in
// place, bf16 or fp16 (widened in registers as W says: two_byte_in_place()). One pointer for a's rows, one for the
// panel: every load's address is a register plus a constant, and V8 keeps the loop's counters in
// registers (with a row pointer each it spilled them). Its first touch.steps steps also read a
// byte of the weights to come (Touch) each; the rest run in a loop of their own without.
// Called only through tile_of_height()'s pointers, and its loops are not nested: see the header
// comment for why both matter to V8.
template <int R, WeightType T, Fp16Widening W>
void tile(float* c, int64_t ldc, const float* a, const void* panel, int depth, bool accumulate,
          const float* bias, const Touch& touch) {
  v4 acc[R][2];
  for (int r = 0; r < R; ++r) {
    acc[r][0] = accumulate ? load(c + r * ldc) : bias ? load(bias) : zero();
    acc[r][1] = accumulate ? load(c + r * ldc + 4) : bias ? load(bias + 4) : zero();
    if (kTileEvenOddLanes<T>) to_even_odd(acc[r][0], acc[r][1], acc[r][0], acc[r][1]);
  }
  // Pointers that advance, not panel + 8 · k: Emscripten turns LLVM's loop strength reduction off,
  // so V8 multiplied both indices out again at every step (6 more instructions beside 16
  // multiply-adds, in a loop bound by how many instructions a cycle the core can issue).
  const char* next = touch.next;
  const int stride = touch.stride;
  const int zero = g_zero;
  const float* a_k = a + zero;
  const Stored<T>* const start = static_cast<const Stored<T>*>(panel);
  const Stored<T>* b_k = start + zero;
  for (const Stored<T>* b_touched = start + 8 * touch.steps; b_k < b_touched; b_k += 8, a_k += R) {
    (void)*reinterpret_cast<const volatile char*>(next);
    next += stride;
    // Rows last first: in row order V8 issued all this loop's splats first, and spilled.
    tile_step<R, T, W, true>(acc, a_k, b_k);
  }
  for (const Stored<T>* b_end = start + 8 * depth; b_k < b_end; b_k += 8, a_k += R) tile_step<R, T, W>(acc, a_k, b_k);
  // Stored last row first: in this order V8 schedules each row's splat next to its multiply-adds
  // (in row order it issues all the splats first, and 5 rows then spill; header comment).
  for (int r = R - 1; r >= 0; --r) {
    v4 lo = acc[r][0], hi = acc[r][1];
    if (kTileEvenOddLanes<T>) to_columns(acc[r][0], acc[r][1], lo, hi);
    store(c + r * ldc + 4, hi);
    store(c + r * ldc, lo);
  }
}

using TileFn = void (*)(float*, int64_t, const float*, const void*, int, bool, const float*, const Touch&);

// Called through pointers, so that binaryen cannot inline them (it inlines a function with one
// caller whatever `noinline` says): inlined, their loops would sit inside their caller's loops, and
// V8 would unroll them.
template <WeightType T, Fp16Widening W>
TileFn tile_of_height(int rows) {
  static TileFn volatile tiles[7] = {nullptr,       tile<1, T, W>, tile<2, T, W>, tile<3, T, W>,
                                      tile<4, T, W>, tile<5, T, W>, tile<6, T, W>};
  return tiles[rows];
}

template <WeightType T, Fp16Widening W>
void tile_rows(int rows, float* c, int64_t ldc, const float* a, const void* panel, int depth, bool accumulate,
               const float* bias, Lookahead& ahead) {
  Touch touch;
  if (ahead.next < ahead.end && depth > 0) {
    // This tile's share of the lines, kTouchStride bytes a step, or more where the tile has too
    // few steps for that.
    const int64_t bytes = std::min<int64_t>(ahead.lines_per_tile * 64, ahead.end - ahead.next);
    const int64_t stride = std::max<int64_t>(kTouchStride, (bytes + depth - 1) / depth);
    touch.next = ahead.next;
    touch.steps = static_cast<int>((bytes + stride - 1) / stride);
    touch.stride = static_cast<int>(stride);
    ahead.next += bytes;
  }
  tile_of_height<T, W>(rows)(c, ldc, a, panel, depth, accumulate, bias, touch);
}

// The rows of the tile that starts at row i of `rows`, in tiles of at most `tallest` rows (4 or
// 3: that many, the rest in the last tile; two_byte_in_place() says where, and MH_GEMM_TILE_ROWS=4
// everywhere).
// 5-row tiles: with fused multiply-adds a tile of r rows takes max(r, L) cycles per k (r cycles
// of 2r multiply-adds on 2 pipes, but never less than the latency L of its chains: 4 or 5 cycles),
// so rows are split into 5s and 4s where they can be (16 = 4 + 4 + 4 + 4: 16 cycles for L = 4,
// where 5 + 5 + 3 + 3 takes 18), and otherwise into as few short tiles as
// possible (6 = 3 + 3, 7 = 4 + 3, 11 = 4 + 4 + 3).
// With 6-row tiles (the relaxed build), into 5s and 6s where they can be, every tile then at full
// rate for L = 5 too (16 = 5 + 5 + 6: 16 cycles, where 4 + 4 + 4 + 4 takes 20; 11 = 5 + 6,
// 12 = 6 + 6), and as before otherwise (13, 14, 19 and under 10).
inline bool fives_and_fours(int rows) { return rows == 0 || rows == 4 || rows == 5 || (rows >= 8 && rows != 11); }
inline bool fives_and_sixes(int rows) {
  return rows == 0 || rows == 5 || rows == 6 || (rows >= 10 && rows <= 12) || (rows >= 15 && rows != 19);
}
inline int tile_height(int i, int rows, int tallest) {
  const int left = rows - i;
  if (tallest <= 4) return std::min(tallest, left);
  if (tallest >= 6 && left > 0 && fives_and_sixes(left)) return fives_and_sixes(left - 5) ? 5 : 6;
  if (left >= 5 && fives_and_fours(left - 5)) return 5;
  if (left >= 4 && fives_and_fours(left - 4)) return 4;
  if (left == 6 || left == 7) return left - 3;
  return std::min(4, left);
}
inline int tile_count(int rows, int tallest) {
  int tiles = 0;
  for (int i = 0; i < rows; i += tile_height(i, rows, tallest)) ++tiles;
  return tiles;
}

// packed = rows × depth of a (rows lda apart) in tiles of tile_height() rows (at most `tallest`),
// each k-major: what tile() reads, the tile of rows from i at i · depth.
// Tiles from row `from` (a tile's first row) to row `to` only: threads pack a block's tiles apart.
void pack_rows(float* packed, const float* a, int64_t lda, int rows, int depth, int tallest, int from = 0,
               int to = -1) {
  if (to < 0) to = rows;
  for (int i = from, r; i < to; i += r) {
    r = tile_height(i, rows, tallest);
    float* tile_start = packed + static_cast<int64_t>(i) * depth;
    const float* first_row = a + i * lda;
    int k = 0;
    // Rows 0–3, four steps of k at a time, by a 4 × 4 transpose (a 5th row goes one by one): one
    // float at a time, this copy was 7% of a 16-token, d_model 256 attention call.
    if (r >= 4) {
      for (; k + 4 <= depth; k += 4) {
        v4 x0 = load(first_row + k), x1 = load(first_row + lda + k);
        v4 x2 = load(first_row + 2 * lda + k), x3 = load(first_row + 3 * lda + k);
        transpose4(x0, x1, x2, x3);
        float* to = tile_start + k * r;
        store(to, x0);
        store(to + r, x1);
        store(to + 2 * r, x2);
        store(to + 3 * r, x3);
        for (int rr = 4; rr < r; ++rr)
          for (int kk = 0; kk < 4; ++kk) to[kk * r + rr] = first_row[rr * lda + k + kk];
      }
    }
    for (int rr = 0; rr < r; ++rr) {
      const float* row = first_row + rr * lda;
      for (int kk = k; kk < depth; ++kk) tile_start[kk * r + rr] = row[kk];
    }
  }
}

// out (rows × width, width ≤ 8) (+)= a · panel, for a packed by pack_rows (at most `tallest`
// rows a tile), a tile at a time, the tiles together touching `ahead`. The panel holds T:
// float32, or bf16 or fp16 read in place (fp16 widened as W says). A panel narrower than 8 (the
// last columns) goes through a scratch tile.
template <WeightType T, Fp16Widening W = Fp16Widening::kWatched>
void panel_rows(float* out, int64_t ldo, const float* a, const void* panel, int depth, int rows, int tallest,
                int width, bool accumulate, const float* bias, Lookahead ahead) {
  ahead.spread_over(tile_count(rows, tallest));
  for (int i = 0, r; i < rows; i += r) {
    r = tile_height(i, rows, tallest);
    float* c = out + i * ldo;
    const float* a_tile = a + static_cast<int64_t>(i) * depth;
    if (width == 8) {
      tile_rows<T, W>(r, c, ldo, a_tile, panel, depth, accumulate, bias, ahead);
      continue;
    }
    alignas(16) float scratch[kTileRows * 8], bias8[8] = {};
    for (int rr = 0; rr < r; ++rr)
      for (int cc = 0; cc < 8; ++cc) scratch[rr * 8 + cc] = accumulate && cc < width ? c[rr * ldo + cc] : 0.0f;
    if (bias) std::copy(bias, bias + width, bias8);
    tile_rows<T, W>(r, scratch, 8, a_tile, panel, depth, accumulate, bias ? bias8 : nullptr, ahead);
    for (int rr = 0; rr < r; ++rr) std::copy(scratch + rr * 8, scratch + rr * 8 + width, c + rr * ldo);
  }
}

}  // namespace
}  // namespace mh

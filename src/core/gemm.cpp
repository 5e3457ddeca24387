// out = a · B + bias: a packed-panel GEMM (GotoBLAS's loop order, BLIS's micro-kernel idea) over
// 4-lane SIMD vectors. What each choice below measured, and on which CPU, is in
// docs/performance.md ("Decisions", "Kernel decisions in detail").
//
// Why this shape:
// - The micro-kernel reads B as panels: kDepth rows × 8 columns, contiguous. Rows of a row-major
//   weight matrix are 768, 2304 or 3072 floats apart: walking down a column then touches only 2–4
//   of L1's 64 sets, so the 8 columns a tile needs were evicted before the next row tile came
//   back for them. So a row-major B is copied one 8 KB panel at a time onto the stack, and so is a 2-byte
//   matrix, widened on the way (never widened whole; a streamed one a panel's whole depth at a
//   time, up to 64 KB: depth_block()); float32 stored as panels (a checkpoint's
//   weights, a head's scaled keys and values) is read in place, and so are 2-byte panels that
//   few tiles read, widened in registers (two_byte_in_place()). Every row tile of `a` then streams over
//   the panel in L1.
// - The k blocks are the outer loop: a block of `a` (kRowBlock rows × up to kDeepDepth floats, ≤ 480
//   KB) stays in L2 while all of B's panels pass, on every CPU these pages meet (depth_block()). A product
//   with few rows (a checkpoint's matrices at ≤ 64 tokens) instead packs all of `a` once and
//   streams B's panels in memory order, each once, a float32 panel's whole depth per tile
//   (depth_block()).
// - Weights come from memory (a checkpoint's 500 MB; a layer's are evicted between keystrokes), and
//   wasm has no prefetch instruction. So while a tile computes, it also loads one byte of each
//   64-byte line of the block of B that comes next, spread over its steps of k: those misses
//   overlap the arithmetic and keep the hardware prefetcher running ahead, and the next tile reads
//   its block in place from cache. A B that fits in L2 (at most 512 KB) is taken to be in cache already, and not touched
//   (touch_ahead()), nor is B touched by a product of one or two row tiles (at most 10 rows), whose
//   first tile already reads its panel about as fast as one core reads memory.
// - The micro-kernel (a 5 × 8 or 6 × 8 tile of `out` in registers, and why V8 needs it written
//   the way it is) is in gemm_tiles.h; the widenings of 2-byte weights in gemm_vectors.h; one row
//   (decoding), which reads B in place as strips, in gemm_strips.h; the integer products over
//   8-, 6- and 4-bit blocks (decoding's row and prefill's tiles) in gemm_blocks.h, and the
//   measurement of the integer dot-add they may take in gemm_dot_add.h. Those five are this file's
//   parts, included here only.
#include "core/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "core/gemm_blocks.h"
#include "core/gemm_dot_add.h"
#include "core/gemm_strips.h"
#include "core/gemm_tiles.h"
#include "core/blocks.h"
#include "core/gemm_tuning.h"
#include "core/gemm_vectors.h"
#include "core/parallel.h"

namespace mh {

namespace {

constexpr int kDepth = 256;    // rows of B per panel: 256 × 8 floats = 8 KB, in L1 with a's tile
constexpr int kRowBlock = 24 * std::min(kTileRows, 5);  // rows of `a` per pass over B: 96 or 120 (depth_block())
// A product with at most this many elements of `a` (256 KB: 16 tokens × 4096, 64 × 1024) streams B
// once (columns()), with all of `a` packed and in L2.
constexpr int kStreamedA = 65536;

// panel (depth × 8, contiguous) = rows [k0, k0 + depth) × columns [j, j + width) of b as float32,
// zero-padded to 8 columns.
template <WeightType T>
void pack_panel(float* panel, const MatrixRef& b, int k0, int depth, int j, int width) {
  if (width == 8) {
    for (int k = 0; k < depth; ++k) {
      v4 lo, hi;
      load8<T>(b, (k0 + k) * b.ld + j, lo, hi);
      store(panel + 8 * k, lo);
      store(panel + 8 * k + 4, hi);
    }
    return;
  }
  for (int k = 0; k < depth; ++k)
    for (int c = 0; c < 8; ++c) panel[8 * k + c] = c < width ? element<T>(b, (k0 + k) * b.ld + j + c) : 0.0f;
}

// panel (depth × 8) = the fp16 panel at p widened the fast way (load8_even_odd_f16), in column
// order; whether it met inf or NaN (never, unless kWatch).
template <bool kWatch>
bool widen_f16_panel(float* panel, const uint16_t* p, int depth) {
  Fp16Specials seen;
  for (int e = 0; e < depth * 8; e += 8) {
    v4 even, odd, lo, hi;
    load8_even_odd_f16<kWatch>(p + e, even, odd, seen);
    to_columns(even, odd, lo, hi);
    store(panel + e, lo);
    store(panel + e + 4, hi);
  }
  return seen.any();
}

// The panel of rows [k0, k0 + depth) × columns [j, j + 8) of b as float32: in place (float32
// panels, any depth), or copied into scratch (depth × 8 floats: depth_block()), widening 2-byte
// values on the way.
template <WeightType T>
const float* panel_of(const MatrixRef& b, int k0, int depth, int j, int width, float* scratch) {
  if constexpr (is_block_type(T)) {  // always panels; k0 and depth whole blocks (depth_block())
    const uint8_t* base = static_cast<const uint8_t*>(b.data);
    for (int k = k0; k < k0 + depth; k += kBlockRows)
      dequantize_block_rows(T, base + block_offset(T, k, j, b.ld), 0, kBlockRows, scratch + (k - k0) * 8, block_in_super(T, k));
    return scratch;
  } else {
    if (!b.panels) {
      pack_panel<T>(scratch, b, k0, depth, j, width);
      return scratch;
    }
    const int64_t start = panel_index(k0, j, b.ld);
    if (T == WeightType::kF32) return static_cast<const float*>(b.data) + start;
    if (T == WeightType::kF16 && kEvenOdd) {
      // The fast widening, put back in column order; redone exactly below if it met inf or NaN. A
      // matrix known finite skips the watch (docs/performance.md, "Kernel decisions in detail").
      const uint16_t* p = static_cast<const uint16_t*>(b.data) + start;
      const bool met_special = b.known_finite ? widen_f16_panel<false>(scratch, p, depth) : widen_f16_panel<true>(scratch, p, depth);
      if (!met_special) return scratch;
    }
    for (int e = 0; e < depth * 8; e += 8) {  // contiguous: 8 values (2 vectors) at a time
      v4 lo, hi;
      load8<T>(b, start + e, lo, hi);
      store(scratch + e, lo);
      store(scratch + e + 4, hi);
    }
    return scratch;
  }
}

// Whether a product streams B once with all of `a` packed (columns()), and how many rows of `a` go
// in a block otherwise: as few blocks as kRowBlock allows, of equal size, since a last block of a
// few rows would pass over all of B for them alone.
inline bool streams_b(const MatrixRef& b, int n, int K) { return b.panels && int64_t{n} * K <= kStreamedA; }
inline int row_block_size(int n) {
  const int row_blocks = (n + kRowBlock - 1) / kRowBlock;
  return (n + row_blocks - 1) / row_blocks;
}

// Whether a product reads its 2-byte panels in place, widening each step's 8 values in registers,
// rather than widening each block into the scratch panel for its tiles to read: where B streams
// once (streams_b) and so few tiles read a panel that the copy would not pay for itself (a few
// tokens over a bf16 or fp16 checkpoint). The tiles are then shorter, since the widening takes
// registers: at most 4 rows for bf16 (5 and 6 in the relaxed build, which widens by extending
// loads), 3 for fp16 (from a matrix known finite, a's rows prescaled). The same bits either way.
constexpr int kInPlaceBf16Tiles = kBf16TilesExtend ? 5 : 6, kInPlaceF16Tiles = 2;
constexpr int kTallestBf16Tile = kBf16TilesExtend ? kTileRows : 4;
inline bool two_byte_in_place(const MatrixRef& b, int n, int K) {
  if (!streams_b(b, n, K)) return false;
  if (b.type == WeightType::kBF16) return tile_count(n, kTallestBf16Tile) <= kInPlaceBf16Tiles;
  return b.type == WeightType::kF16 && kEvenOdd && b.known_finite && tile_count(n, 3) <= kInPlaceF16Tiles;
}
// Whether a product that reads fp16 in place (two_byte_in_place) prescales a's n rows by 2^112:
// where no value would overflow (prescale_rows()).
inline bool a_prescales(const MatrixRef& b, int n, int K, const float* a, int64_t lda) {
  return b.type == WeightType::kF16 && two_byte_in_place(b, n, K) && fits_prescale(a, lda, n, K);
}
inline void prescale(float* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] *= 0x1p112f;
}
// The most rows a tile of this product has (tile_height()).
inline int tallest_tile(const MatrixRef& b, int n, int K) {
  return !two_byte_in_place(b, n, K) ? kTileRows : b.type == WeightType::kF16 ? 3 : kTallestBf16Tile;
}

// Whether the n rows of `a` read B in place a strip at a time (few_rows) rather than packed into
// tiles: one row (decoding), and 2 or 3 rows over a row-major B. Over panels 2 and 3 rows go in
// tiles too, which measured faster; the same bits.
// Block types: one row (decoding) is read by block_row (gemm_blocks.h); more rows by integer
// tiles (block_tiles), or widened into the float32 tiles' panels (integer_block_tiles()).
inline bool reads_strips(const MatrixRef& b, int n) { return is_block_type(b.type) ? n == 1 : n < (b.panels ? 2 : 4); }

// One row over long panels (K > 1024): strip()'s four panels side by side, k in order
// (gemm_strips.h), so a split gives it whole groups of four panels. A lone panel is 2 chains of
// multiply-adds waiting on each other: a third of the speed (docs/performance.md).
inline bool one_row_in_four_panels(const MatrixRef& b, int n, int K) {
  return n == 1 && b.panels && !is_block_type(b.type) && K > 1024;
}

// The chunk (columns) of one row over long panels: whole groups of four panels, or 4m + 2 panels
// (strips(): a group of six, then fours) where that takes fewer rounds of the threads: GPT-2's FFN
// down projection, 96 panels, is 16 chunks of six on 16 threads, not 24 of four with 8 threads
// taking two. A round of chunks costs about their width (each group reads its panels side by
// side at about one rate). `outputs`: the products whose chunks are handed out.
inline int one_row_chunk(int chunk, const GemmOutput* outputs, int count, int threads) {
  const auto cost = [&](int columns) {
    int64_t tasks = 0;
    for (int i = 0; i < count; ++i) tasks += (outputs[i].N + columns - 1) / columns;
    return (tasks + threads - 1) / threads * columns;
  };
  const int fours = (chunk + 31) / 32 * 32;
  int best = fours;
  for (int six = 48; six <= fours + 16; six += 32)
    if (cost(six) < cost(best)) best = six;
  return best;
}

// Whether n rows over blocks go through integer tiles (quantized as decoding's row is), or their
// blocks are widened into float32 panels for the float32 tiles (the bits of float32 weights).
// Integer tiles by default: the faster prefill in both builds, for 8- and 4-bit blocks (6-bit ones
// were not measured apart: they sum as 8-bit ones do, a half block at a time), and a row's
// bits are then decoding's (docs/performance.md, "GGUF weights in blocks"); set_integer_block_tiles()
// switches, for the benchmark and tests.
std::atomic<bool> g_integer_block_tiles{true};
inline bool integer_block_tiles(const MatrixRef& b, int n) {
  return is_block_type(b.type) && n > 1 && g_integer_block_tiles.load(std::memory_order_relaxed);
}

// The byte where element `element` of b (an index into its panels, panel_index) is stored: for a
// block type, its block's first byte.
inline int64_t stored_byte(const MatrixRef& b, int64_t element) {
  if (!is_block_type(b.type)) return element * weight_type_bytes(b.type);
  const int64_t panel_span = 8 * b.ld;
  return block_offset(b.type, element % panel_span / 8, element / panel_span * 8, b.ld);
}

// Touching ahead pays where B comes from memory (a checkpoint's weights). A B that fits in L2
// (kCachedB, the smallest L2 these pages meet) is used call after call and read from L2, where
// the touches only take load slots. Nor does a product of one or two row tiles touch (at most 10
// rows): its first tile already reads a panel about as fast as one core reads memory. From three
// tiles on it depends on the CPU, so a checkpoint's load measures it (core/gemm_tuning.h) and sets
// g_touch_from_rows. Tiles are counted as if at most 5 rows tall, as when this was measured.
constexpr int64_t kCachedB = int64_t{512} << 10;
std::atomic<int> g_touch_from_rows{0};
inline bool touch_ahead(const MatrixRef& b, int K, int64_t N, int rows) {
  const int64_t bytes = is_block_type(b.type) ? block_matrix_bytes(b.type, K, N)
                                              : int64_t{K} * ((N + 7) / 8 * 8) * weight_type_bytes(b.type);
  return bytes > kCachedB &&
         tile_count(rows, std::min(tallest_tile(b, rows, K), 5)) >= 3 &&
         rows >= g_touch_from_rows.load(std::memory_order_relaxed);
}

// For the tiles to touch (Lookahead): the block of B from element `start` on (depth × 8
// elements), cut at element `limit` (the end of the panels this call reads). Nothing for a
// row-major B, whose next block is not contiguous.
template <WeightType T>
Lookahead block_at(const MatrixRef& b, int64_t start, int depth, int64_t limit) {
  Lookahead ahead;
  const int64_t count = std::min<int64_t>(int64_t{depth} * 8, limit - start);
  if (!b.panels || count <= 0) return ahead;
  ahead.next = static_cast<const char*>(b.data) + stored_byte(b, start);
  ahead.end = static_cast<const char*>(b.data) + (is_block_type(T) ? std::min(stored_byte(b, limit), stored_byte(b, start) +
                                                  (depth + kBlockRows - 1) / kBlockRows * block_bytes(T))
                                                                    : stored_byte(b, start + count));
  return ahead;
}

// Where the block of B that follows rows [.., k_end) of panel j starts, in streaming order: the
// rest of that panel, or else the top of the next one (the same address, unless the panels are
// deeper than the product's K).
inline int64_t next_block(const MatrixRef& b, int k_end, int j, int K) {
  return k_end < K ? panel_index(k_end, j, b.ld) : panel_index(0, j + 8, b.ld);
}

// How many steps of k a tile runs per call: as many as possible, since each call has a fixed cost
// (loading and storing its accumulators, the lookahead's arithmetic, the loop exits) and reloads
// `out`. A product that streams its panels runs each panel's whole depth in one call (float32 and
// 2-byte panels read in place; 2-byte panels widened into the scratch up to kWidenedDepth). A
// product with more rows goes a block of rows at a time and up to kDeepDepth steps a call: its
// block of `a` (≤ 120 × 1024 floats, 480 KB) stays in L2 while the panel (≤ 32 KB) stays in L1
// across the tiles. Row-major B keeps kDepth: an 8 KB panel is what its copy was measured at.
constexpr int kWidenedDepth = 2048;
constexpr int kDeepDepth = 1024;
static_assert(kDeepDepth <= kWidenedDepth, "the scratch panel holds kWidenedDepth × 8 floats");
inline int depth_block(const MatrixRef& b, int n, int K) {
  if (!b.panels) return kDepth;
  if (!streams_b(b, n, K)) return std::clamp(K, 1, kDeepDepth);
  const bool whole_panels = b.type == WeightType::kF32 || two_byte_in_place(b, n, K) || K <= kWidenedDepth;
  return whole_panels ? std::max(K, 1) : kDepth;
}

// Rows [0, rows) × columns [k0, k0 + block) of a, packed by pack_rows at packed + rows · k0: the
// layout columns() reads a block of rows in, every block of depth side by side.
inline void pack_depth_block(float* packed, const float* a, int64_t lda, int rows, int K, int k0, int block,
                             int tallest) {
  pack_rows(packed + int64_t{rows} * k0, a + k0, lda, rows, std::min(block, K - k0), tallest);
}

// out (n × columns [c0, c1)) = a · b + bias. `prepacked`, where not null, is a's n rows already
// packed by pack_depth_block (gemm() packs them once for all of its threads; n is then at most one
// row block), and prescaled by 2^112 where a_prescales(); otherwise this packs them itself, on the
// stack.
template <WeightType T>
void columns(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
             int K, int c0, int c1, bool touch, const float* prepacked) {
  if constexpr (is_block_type(T)) {
    if (reads_strips(b, n) || integer_block_tiles(b, n)) {  // `prepacked`: quantize_rows' once for every chunk
      thread_local std::vector<float> quantized;
      if (!prepacked) {
        quantized.resize(n * quantized_row_floats(K));
        quantize_rows<T>(quantized.data(), a, lda, n, K);
      }
      const float* rows = prepacked ? prepacked : quantized.data();
      if (n == 1) block_row<T>(out, rows, row_unit_floats<T>(), b, bias, K, c0, c1);
      else block_tiles<T>(out, ldo, rows, b, bias, n, K, c0, c1);
      return;
    }
  } else {
    if (reads_strips(b, n)) {
      for (int i = 0; i < n;) {
        const int r = std::min(n - i, 3);
        float* o = out + i * ldo;
        const float* ai = a + i * lda;
        if (r == 3) few_rows<T, 3>(o, ldo, ai, lda, b, bias, K, c0, c1);
        else if (r == 2) few_rows<T, 2>(o, ldo, ai, lda, b, bias, K, c0, c1);
        else few_rows<T, 1>(o, ldo, ai, lda, b, bias, K, c0, c1);
        i += r;
      }
      return;
    }
  }
  if (K == 0) {
    for (int i = 0; i < n; ++i)
      for (int j = c0; j < c1; ++j) out[i * ldo + j] = bias ? bias[j] : 0.0f;
    return;
  }
  // On the stack (544 KB): Emscripten's main thread gets 5 MB, its threads 2 MB, native ones 8 MB.
  alignas(16) float panel[std::max(kDepth, kWidenedDepth) * 8];
  alignas(16) float packed_a[std::max(kStreamedA, kRowBlock * kDeepDepth)];
  // Where the touches stop: the end of the panels this call reads, or nothing at all to touch.
  const int64_t limit = touch ? int64_t{(c1 + 7) / 8 * 8} * b.ld : 0;  // panel_index(0, c1 rounded up to 8, ld)
  // Steps of k per call of the tile, and rows per tile; gemm() packs `a` for its threads by the
  // same rules.
  const int block = depth_block(b, n, K), tallest = tallest_tile(b, n, K);
  if (streams_b(b, n, K)) {
    // Few rows, so little arithmetic per weight: B is streamed once, panel by panel in memory
    // order, read in place (float32, and bf16 in few tiles: a whole panel per call) or widened a
    // block at a time, while the tiles touch the next block.
    const bool in_place = two_byte_in_place(b, n, K), prescaled = a_prescales(b, n, K, a, lda);
    if (!prepacked) {
      for (int k0 = 0; k0 < K; k0 += block) pack_depth_block(packed_a, a, lda, n, K, k0, block, tallest);
      if (prescaled) prescale(packed_a, int64_t{n} * K);
    }
    const float* a_packed = prepacked ? prepacked : packed_a;
    for (int j = c0; j < c1; j += 8) {
      for (int k0 = 0; k0 < K; k0 += block) {
        const int depth = std::min(block, K - k0), width = std::min(8, c1 - j);
        const float* a_block = a_packed + int64_t{n} * k0;
        const float* bias_j = bias ? bias + j : nullptr;
        const Lookahead ahead = block_at<T>(b, next_block(b, k0 + depth, j, K), block, limit);
        if constexpr (T == WeightType::kF16) {
          const Stored<T>* stored = static_cast<const Stored<T>*>(b.data) + panel_index(k0, j, b.ld);
          if (in_place && prescaled)
            panel_rows<T, Fp16Widening::kPrescaled>(out + j, ldo, a_block, stored, depth, n, tallest, width, k0 > 0, bias_j, ahead);
          else if (in_place)
            panel_rows<T, Fp16Widening::kTrusted>(out + j, ldo, a_block, stored, depth, n, tallest, width, k0 > 0, bias_j, ahead);
        }
        if constexpr (T == WeightType::kBF16)
          if (in_place) {
            const Stored<T>* stored = static_cast<const Stored<T>*>(b.data) + panel_index(k0, j, b.ld);
            panel_rows<T>(out + j, ldo, a_block, stored, depth, n, tallest, width, k0 > 0, bias_j, ahead);
          }
        if (!in_place) {
          panel_rows<WeightType::kF32>(out + j, ldo, a_block, panel_of<T>(b, k0, depth, j, 8, panel), depth, n, tallest,
                                       width, k0 > 0, bias_j, ahead);
        }
      }
    }
    return;
  }
  // A block of rows (in L2) at a time, while all of B's panels pass.
  const int row_block = prepacked ? n : row_block_size(n);
  for (int i0 = 0; i0 < n; i0 += row_block) {
    const int rows = std::min(row_block, n - i0);
    for (int k0 = 0; k0 < K; k0 += block) {  // block ≤ kDeepDepth here: the scratch and packed_a's size
      const int depth = std::min(block, K - k0);
      if (!prepacked) pack_rows(packed_a, a + i0 * lda + k0, lda, rows, depth, tallest);
      const float* a_block = prepacked ? prepacked + int64_t{rows} * k0 : packed_a;
      for (int j = c0; j < c1; j += 8) {
        const int width = std::min(8, c1 - j);
        panel_rows<WeightType::kF32>(out + i0 * ldo + j, ldo, a_block, panel_of<T>(b, k0, depth, j, width, panel),
                                     depth, rows, tallest, width, k0 > 0, bias ? bias + j : nullptr,
                                     block_at<T>(b, panel_index(k0, j + 8, b.ld), depth, limit));
      }
    }
  }
}

// gemm_columns, told whether the whole of B is big enough to touch ahead (a thread's share of a
// matrix is smaller than the matrix).
void columns_of(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
                int K, int col_begin, int col_end, bool touch, const float* prepacked = nullptr) {
  if (n <= 0 || col_end <= col_begin) return;
  switch (b.type) {
    case WeightType::kF32: columns<WeightType::kF32>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kF16: columns<WeightType::kF16>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kBF16: columns<WeightType::kBF16>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ8: columns<WeightType::kQ8>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ4: columns<WeightType::kQ4>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ5: columns<WeightType::kQ5>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ4K: columns<WeightType::kQ4K>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ40: columns<WeightType::kQ40>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ6K: columns<WeightType::kQ6K>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
    case WeightType::kQ5K: columns<WeightType::kQ5K>(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch, prepacked); break;
  }
}

}  // namespace

void gemm_columns(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias,
                  int n, int K, int col_begin, int col_end) {
  if (is_block_type(b.type)) integer_dot_add();  // measured before any buffer here is in use (gemm_shared)
  columns_of(out, ldo, a, lda, b, bias, n, K, col_begin, col_end, touch_ahead(b, K, col_end - col_begin, n));
}

void gemm(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
          int K, int N) {
  const GemmOutput output{out, ldo, b, bias, N};
  gemm_shared(a, lda, n, K, &output, 1);
}

void gemm(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias, int n,
          int K, int N, const GemmEpilogue& epilogue) {
  const GemmOutput output{out, ldo, b, bias, N, epilogue};
  gemm_shared(a, lda, n, K, &output, 1);
}

namespace {
void finish_block(const GemmOutput& o, int i0, int rows, int c0, int c1) {
  if (o.epilogue.apply) o.epilogue.apply(o.epilogue.context, o.out + int64_t{i0} * o.ldo, o.ldo, rows, c0, c1);
}
}  // namespace

void gemm_shared(const float* a, int64_t lda, int n, int K, const GemmOutput* outputs, int count, bool together) {
  // The integer dot-add's first use measures it by running products of its own (core/gemm_tuning.h):
  // here, before this call's buffers (thread_local, shared with those products) are in use.
  if (is_block_type(outputs[0].b.type)) integer_dot_add();
  const int threads = split_count();
  double multiply_adds = 0;
  int N = 0;  // every product's columns
  for (int i = 0; i < count; ++i) multiply_adds += static_cast<double>(n) * K * outputs[i].N, N += outputs[i].N;
  // One packing of `a` serves every product only where each would pack it alike.
  const MatrixRef& b = outputs[0].b;
  bool alike = true;
  for (int i = 1; i < count; ++i) {
    const MatrixRef& bi = outputs[i].b;
    alike = alike && bi.type == b.type && bi.panels == b.panels && reads_strips(bi, n) == reads_strips(b, n) &&
            streams_b(bi, n, K) == streams_b(b, n, K) && depth_block(bi, n, K) == depth_block(b, n, K) &&
            tallest_tile(bi, n, K) == tallest_tile(b, n, K) && a_prescales(bi, n, K, a, lda) == a_prescales(b, n, K, a, lda);
  }
  if (!alike) {  // each on its own, in order (an epilogue may read the outputs before it)
    for (int i = 0; i < count; ++i) gemm_shared(a, lda, n, K, outputs + i, 1);
    return;
  }
  // Below ~260k multiply-adds a split costs more than it saves; one token's product with a
  // 768 × 768 matrix is above it, and is split too: several cores pull more memory bandwidth.
  if (threads == 1 || multiply_adds < 262144.0 || N < 16 || in_parallel_task()) {
    for (int i = 0; i < count; ++i) {
      const GemmOutput& o = outputs[i];
      columns_of(o.out, o.ldo, a, lda, o.b, o.bias, n, K, 0, o.N, touch_ahead(o.b, K, o.N, n));
    }
    for (int i = 0; i < count; ++i) finish_block(outputs[i], 0, n, 0, outputs[i].N);
    return;
  }
  // About eight chunks per thread, taken by whichever thread is free, so a thread that starts late
  // or is descheduled (a browser's own threads share the cores) is balanced by the others (fewer
  // for decoding over blocks where only that makes chunks long enough for streams:
  // decoding_chunks_per_thread). At least
  // one panel a chunk: at 24 columns, a 768-wide product gave 16 threads 2 chunks each, and any
  // one slow chunk held the rest at the barrier (docs/threads.md). The products share the chunks
  // (Q, K and V: one hand-out instead of three).
  // Whole panels of 8 columns, so every element is computed exactly as in one thread. The rows of
  // `a` are packed once for all chunks (a block of rows at a time, its blocks of depth split over
  // the threads too; a streamed float32 product's `a`, at most 256 KB, is one block of depth
  // (depth_block), packed by one thread): packed by every chunk, they had cost as much as a sixth
  // of the arithmetic (a chunk of 48 columns does 96 flops per element of `a` it packs).
  const int per_thread =
      n == 1 && is_block_type(b.type) ? decoding_chunks_per_thread(K / kBlockRows * block_bytes(b.type), N, threads) : 8;
  int chunk = chunk_columns(N, per_thread, threads);
  if (one_row_in_four_panels(b, n, K)) chunk = one_row_chunk(chunk, outputs, together ? 1 : count, threads);
  thread_local std::vector<int> first_chunk;  // of each product, and the total at the end
  first_chunk.assign(1, 0);
  for (int i = 0; i < (together ? 1 : count); ++i) first_chunk.push_back(first_chunk.back() + (outputs[i].N + chunk - 1) / chunk);
  const int* firsts = first_chunk.data();
  // Rows that read strips (decoding) read `a` in place (few_rows): nothing to pack.
  // Rows over blocks (decoding, integer tiles) are quantized once here, not by every chunk.
  const bool quantize = is_block_type(b.type) && (reads_strips(b, n) || integer_block_tiles(b, n)) && K > 0;
  const bool pack = !reads_strips(b, n) && !quantize && K > 0;
  const int row_block = !pack || streams_b(b, n, K) ? n : row_block_size(n);
  // The calling thread's buffer, grown to the largest block of rows × K so far. Named through a
  // plain pointer: inside the tasks `packing` would be the running thread's own.
  thread_local std::vector<float> packing;
  if (pack && packing.size() < static_cast<size_t>(row_block) * K) packing.resize(static_cast<size_t>(row_block) * K);
  if (quantize) {
    packing.resize(std::max(packing.size(), n * quantized_row_floats(K)));
    switch (b.type) {  // the block types (`quantize`)
      case WeightType::kQ8: quantize_rows<WeightType::kQ8>(packing.data(), a, lda, n, K); break;
      case WeightType::kQ5: quantize_rows<WeightType::kQ5>(packing.data(), a, lda, n, K); break;
      case WeightType::kQ4K: quantize_rows<WeightType::kQ4K>(packing.data(), a, lda, n, K); break;
      case WeightType::kQ40: quantize_rows<WeightType::kQ40>(packing.data(), a, lda, n, K); break;
      case WeightType::kQ6K: quantize_rows<WeightType::kQ6K>(packing.data(), a, lda, n, K); break;
      case WeightType::kQ5K: quantize_rows<WeightType::kQ5K>(packing.data(), a, lda, n, K); break;
      default: quantize_rows<WeightType::kQ4>(packing.data(), a, lda, n, K); break;
    }
  }
  float* const packed = pack || quantize ? packing.data() : nullptr;
  for (int i0 = 0; i0 < n; i0 += row_block) {
    const int rows = std::min(row_block, n - i0);
    const float* a_rows = a + i0 * lda;
    if (pack) {
      // Blocks of depth, each cut into groups of row tiles where there are fewer blocks than
      // threads (one block of 768 at 64 rows would leave 15 of 16 threads waiting).
      const int block = depth_block(b, rows, K), tallest = tallest_tile(b, rows, K);
      const int depth_blocks = (K + block - 1) / block;
      thread_local std::vector<int> tile_starts;
      tile_starts.clear();
      for (int i = 0; i < rows; i += tile_height(i, rows, tallest)) tile_starts.push_back(i);
      const int tiles = static_cast<int>(tile_starts.size());
      const int groups = std::min(tiles, std::max(1, (2 * threads + depth_blocks - 1) / depth_blocks));
      const int* starts = tile_starts.data();
      parallel_for(depth_blocks * groups, [&](int t, int) {
        const int k0 = t / groups * block, group = t % groups;
        const int from = starts[group * tiles / groups];
        const int to = group + 1 == groups ? rows : starts[(group + 1) * tiles / groups];
        pack_rows(packed + int64_t{rows} * k0, a_rows + k0, lda, rows, std::min(block, K - k0), tallest, from, to);
      });
      if (a_prescales(b, rows, K, a_rows, lda)) prescale(packed, int64_t{rows} * K);
    }
    const auto block = [&](const GemmOutput& o, int c0) {
      columns_of(o.out + i0 * o.ldo, o.ldo, a_rows, lda, o.b, o.bias, rows, K, c0, std::min(o.N, c0 + chunk),
                 touch_ahead(o.b, K, o.N, n), packed);
    };
    if (together) {  // a task: the same columns of every output, then their epilogues
      parallel_for(firsts[1], [&](int t, int) {
        for (int i = 0; i < count; ++i) block(outputs[i], t * chunk);
        for (int i = 0; i < count; ++i) finish_block(outputs[i], i0, rows, t * chunk, std::min(outputs[i].N, (t + 1) * chunk));
      });
      continue;
    }
    parallel_for(firsts[count], [&](int t, int) {
      int i = 0;
      while (t >= firsts[i + 1]) ++i;
      const int c0 = (t - firsts[i]) * chunk;
      block(outputs[i], c0);
      finish_block(outputs[i], i0, rows, c0, std::min(outputs[i].N, c0 + chunk));
    });
  }
}

// A panel at a time, by pack_panel (whole panels 8 floats, 2 vectors, a row): std::copy of 8
// floats had been a call to memmove per row.
void pack_panels(float* packed, const float* src, int64_t ld, int K, int N) {
  for (int j = 0; j < (N + 7) / 8 * 8; j += 8)
    pack_panel<WeightType::kF32>(packed + panel_index(0, j, K), f32_matrix(src, ld), 0, K, j, std::min(8, N - j));
}

// Eight rows of src (a panel's 8 columns) four steps of k at a time, by two 4 × 4 transposes,
// rather than a float at a time.
void pack_panels_transposed(float* packed, const float* src, int64_t ld, int cols, int K, float scale) {
  const v4 factor = splat(&scale);
  for (int j = 0; j < (cols + 7) / 8 * 8; j += 8) {
    float* dst = packed + panel_index(0, j, K);
    int k = 0;
    if (j + 8 <= cols) {
      for (; k + 4 <= K; k += 4) {
        for (int half = 0; half < 8; half += 4) {
          const float* row = src + (j + half) * ld + k;
          v4 x0 = mul(factor, load(row)), x1 = mul(factor, load(row + ld));
          v4 x2 = mul(factor, load(row + 2 * ld)), x3 = mul(factor, load(row + 3 * ld));
          transpose4(x0, x1, x2, x3);
          store(dst + k * 8 + half, x0);
          store(dst + (k + 1) * 8 + half, x1);
          store(dst + (k + 2) * 8 + half, x2);
          store(dst + (k + 3) * 8 + half, x3);
        }
      }
    }
    for (; k < K; ++k)
      for (int c = 0; c < 8; ++c) dst[k * 8 + c] = j + c < cols ? scale * src[(j + c) * ld + k] : 0.0f;
  }
}

void pack_columns_transposed(float* packed, const float* src, int64_t ld, int c0, int c1, int K, float scale) {
  for (int j = c0; j < c1; ++j) {
    float* dst = packed + panel_index(0, j, K);
    const float* column = src + j * ld;
    for (int k = 0; k < K; ++k) dst[k * 8] = scale * column[k];
  }
}

const char* gemm_kernel_name() { return kKernelName; }

void set_integer_block_tiles(bool on) { g_integer_block_tiles.store(on, std::memory_order_relaxed); }

bool integer_dot_add() {
  const int set = g_dot_add_override.load(std::memory_order_relaxed);
  return set >= 0 ? set == 1 : measured_dot_add().on;
}

bool set_integer_dot_add(bool on) {
  if (on && !measured_dot_add().exact) return false;
  g_dot_add_override.store(on ? 1 : 0, std::memory_order_relaxed);
  return true;
}

DotAddTuning dot_add_tuning() {
  DotAddTuning t = g_dot_add_measured.load() ? measured_dot_add() : DotAddTuning{};
  const int set = g_dot_add_override.load(std::memory_order_relaxed);
  if (set >= 0) t.on = set == 1;
  return t;
}

bool runs_float_tiles(const MatrixRef& b, int n) { return !reads_strips(b, n) && !integer_block_tiles(b, n); }

void set_touch_from_rows(int rows) { g_touch_from_rows.store(rows, std::memory_order_relaxed); }
int touch_from_rows() { return g_touch_from_rows.load(std::memory_order_relaxed); }

}  // namespace mh

// The product every weight matrix goes through: out = a · B (+ bias), with B read in place in the
// type it is stored in (float32, or a checkpoint's fp16/bf16 at 2 bytes, widened while packing or
// in registers).
//
// Why our own kernel: see gemm.cpp. Results are the same bits whatever the thread count and
// whichever rows are computed together: every output element is bias + Σ_k a_ik·b_kj summed in
// k order (fused multiply-adds in the relaxed-SIMD build, so that build differs in the last bits).
#pragma once

#include <cstdint>

#include "core/half.h"

namespace mh {

// A K × N operand over caller memory (like an Eigen::Map), stored as `type`, either
//   row-major: element (k, j) at data[k · ld + j] (ld ≥ N), or
//   panels:    ⌈N/8⌉ panels of 8 columns, each ld × 8 contiguous (the last zero-padded): element
//              (k, j) at data[panel_index(k, j, ld)]. The layout the kernel reads, so a matrix
//              stored this way (a checkpoint's weights, nn/tensor.h) is streamed, not packed. ld is
//              K, or more where a product uses only the top K rows of deeper panels (a causal
//              block of queries, the values of the keys it may see).
struct MatrixRef {
  const void* data = nullptr;
  WeightType type = WeightType::kF32;
  int64_t ld = 0;
  bool panels = false;
  // Known to hold no inf or NaN (checked when a checkpoint loads: nn/tensor.h). fp16's fast
  // widening reads exponent 31 as a finite number, so over any other fp16 matrix it watches for
  // it and redoes the work exactly where it met one (gemm.cpp, Fp16Specials).
  bool known_finite = false;
};

inline int64_t panel_index(int64_t k, int64_t j, int64_t K) { return (j / 8) * 8 * K + k * 8 + j % 8; }

inline MatrixRef f32_matrix(const float* data, int64_t ld) { return {data, WeightType::kF32, ld}; }

// out (n × N, rows ldo apart) = a (n × K, rows lda apart) · b (K × N) + bias (N floats; may be null).
// Split by columns over the thread pool (core/parallel.h) when it has several threads and the
// product is big enough; never from inside a parallel_for task.
void gemm(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias,
          int n, int K, int N);

// What a product does to each block of its output as soon as it is computed, on the thread that
// computed it: an elementwise activation fused into the product, instead of a pass (and on several
// threads a barrier) of its own. apply(context, out, ldo, rows, c0, c1): columns [c0, c1) of
// `rows` rows, the first at `out` (column 0), rows ldo apart; c0 is a multiple of 8.
struct GemmEpilogue {
  void (*apply)(void* context, float* out, int64_t ldo, int rows, int c0, int c1) = nullptr;
  void* context = nullptr;
};

// out (n × N) = a · b + bias as gemm, then the epilogue over every block of it.
void gemm(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b, const float* bias,
          int n, int K, int N, const GemmEpilogue& epilogue);

// Several products of the same `a` (n × K): outputs[i].out (n × N_i) = a · b_i + bias_i, as gemm
// computes each, with `a` packed once and the chunks of all of them handed out together (one
// barrier instead of one each: attention's Q, K and V), each output's epilogue after its block.
// together: the outputs have the same N, and a task computes the same columns of every output
// before their epilogues run in order, so an epilogue may read the other outputs' block (a gated
// MLP's act(gate) ⊙ up).
struct GemmOutput {
  float* out;
  int64_t ldo;
  MatrixRef b;
  const float* bias;
  int N;
  GemmEpilogue epilogue = {};
};
void gemm_shared(const float* a, int64_t lda, int n, int K, const GemmOutput* outputs, int count,
                 bool together = false);

// The same for columns [col_begin, col_end) only, on the calling thread (col_begin a multiple of 8).
// Those columns' size and the row count n decide whether the next blocks are touched ahead (gemm.cpp,
// touch_ahead).
void gemm_columns(float* out, int64_t ldo, const float* a, int64_t lda, const MatrixRef& b,
                  const float* bias, int n, int K, int col_begin, int col_end);

// packed (gemm's panel layout, ⌈N/8⌉ · 8 · K floats) = the row-major K × N matrix src (rows ld
// apart): what a weight used for many products is stored as, so that gemm streams it.
void pack_panels(float* packed, const float* src, int64_t ld, int K, int N);

// packed (gemm's panel layout: ⌈cols/8⌉ panels of K × 8, zero-padded) = scale · the K × cols
// matrix whose element (k, j) is src[j · ld + k], i.e. scale · srcᵀ for src cols × K, such as a
// head's keys; gemm reads it as MatrixRef{packed, kF32, K, true}.
void pack_panels_transposed(float* packed, const float* src, int64_t ld, int cols, int K, float scale);
// The same for columns [c0, c1) only (the same values: each scale · src element), the other
// columns left as they are: a matrix whose columns come a few at a time, such as a key/value
// cache's keys (whose panels past its last key the cache keeps zero).
void pack_columns_transposed(float* packed, const float* src, int64_t ld, int c0, int c1, int K, float scale);

// Products over blocks of 8-, 6- and 4-bit values (core/blocks.h) with 2 rows or more: by integer tiles,
// the rows quantized to 8 bits a block as decoding's row is (true, the default), or with the blocks
// widened into float32 panels (false: the bits of the same values stored as float32).
// Process-wide; for the benchmark and tests.
void set_integer_block_tiles(bool on);
// Whether a product of n rows over b runs the float32 tiles (b float, or blocks widened), the only
// ones that touch ahead: not strips, nor blocks' integer tiles. What the touch tuning can time.
bool runs_float_tiles(const MatrixRef& b, int n);

// Which kernel this build runs, for the benchmark's report: "wasm SIMD (fused multiply-add)",
// "wasm SIMD" or "portable (native)".
const char* gemm_kernel_name();

}  // namespace mh

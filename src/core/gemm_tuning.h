// The GEMM's choices that go opposite ways on the CPUs these pages meet, which wasm cannot ask
// about, so they are measured here: touching ahead, and the integer dot-add (below).
//
// Touching ahead (core/gemm.cpp): on weights
// from memory, products of 11–17 rows (3–4 row tiles) are faster with the touches on some CPUs
// and without them on others (docs/performance.md, "Decisions"). Products of 18 rows and more
// touch everywhere, 10 and fewer nowhere.
// Touching or not gives the same bits: only the time changes.
#pragma once

#include <vector>

#include "core/gemm.h"

namespace mh {

// One of a model's products: a K × N weight matrix.
struct GemmProduct {
  MatrixRef b;
  int K = 0, N = 0;
};

struct TouchTuning {
  bool tuned = false;   // tune_touching() has run in this process
  int from_rows = 0;    // products touch ahead from this many rows (0: wherever gemm.cpp's rules say)
  double ms_with = 0, ms_without = 0;  // its medians: one pass over the products at 16 rows, each way
};

// Rows below which products do not touch ahead (0: no such floor), process-wide; for the tuning,
// tests and benchmarks.
void set_touch_from_rows(int rows);
int touch_from_rows();

// Times `products` at 16 rows, in order, with touches and without: 5 pairs of passes, one each way
// back to back (which goes first alternating), after 2 pairs to warm up, on the calling thread.
// From then on products of fewer than 18 rows leave the touches out if the median pair took 0.99×
// the time or less without them, and keep them otherwise. The ratio within a pair, not of whole
// medians: a slow stretch of the machine moves both passes of a pair (docs/performance.md: timed call by
// call, or in runs while a model ran, the same choice had read noise). Needs products that come from memory: a caller
// passes more than any L3 holds (io/checkpoint.cpp: tune_touching_once).
// Products the touches cannot change (blocks through integer tiles: touching_matters()) are left
// out; with none left, nothing is timed and the result says not tuned.
TouchTuning tune_touching(const std::vector<GemmProduct>& products);
// Whether touching ahead can change a product over b at the rows the tuning times: a GGUF model's
// blocks go through integer tiles, which never touch, and timing them would only read noise.
bool touching_matters(const MatrixRef& b);
// The last tuning's result (tuned false if none).
TouchTuning touch_tuning();

// The integer dot-add (i32x4.relaxed_dot_i8x16_i7x16_add_s, core/relaxed_dots.h) sums 16 int8
// products into 4 int32 lanes: one instruction where the CPU has a dot-add (AVX-VNNI, arm64's dot
// product extension), several where it has not (five on x64), slower than the int8 dot and the
// additions it replaces; and Node 20's baseline compiler computes it wrongly in some functions. So
// the products over blocks (relaxed build) take it only where it measured exact and faster
// (core/gemm_dot_add.h), once, at the load of the first model of blocks (io/checkpoint.cpp) or
// else at the first product over blocks:
// each kernel it changes, run on random blocks each way, gave the same bits in every round, and
// the products took at most 0.8 the time (the median of the rounds' ratios, each round's passes
// back to back: a margin wider than a browser's coarse timer, the engine's compilers and a shared
// machine moved it on a CPU where the dot-add is slower). Either way the same bits.
struct DotAddTuning {
  bool measured = false;  // measured yet (never in a build without relaxed SIMD)
  bool exact = false;     // every product the same bits each way, in every round
  double ms_on = 0, ms_off = 0;  // the products' time each way, the fastest round of each
  double ratio = 0;       // the median round's time with ÷ without
  bool on = false;        // what the products take now
};
// Whether the products over blocks take the dot-add now (measuring it first if not yet).
bool integer_dot_add();
// On or off for the tests and benchmarks; false (and nothing changed) where on was asked and the
// dot-add did not measure exact. A build without relaxed SIMD never takes it.
bool set_integer_dot_add(bool on);
// What was measured (nothing before the measurement), and the choice now.
DotAddTuning dot_add_tuning();

}  // namespace mh

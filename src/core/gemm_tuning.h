// Touching ahead (core/gemm.cpp) is the one choice in the GEMM that goes opposite ways on the CPUs
// these pages meet, and wasm cannot ask which CPU it runs on, so it is measured here: on weights
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

}  // namespace mh

#include "core/gemm_tuning.h"

#include <algorithm>
#include <chrono>

namespace mh {

namespace {

constexpr int kTuningRows = 16;  // 4 row tiles: where the CPUs measured disagree most (header)
constexpr int kTunedFloor = 18;  // from 18 rows (20 as 4 tiles of 5) touching paid on every CPU measured
constexpr int kWarmUps = 2, kPasses = 5;
TouchTuning g_last;

// One pass over the products, out = a · b, on the calling thread; its time in ms.
double pass_ms(const std::vector<GemmProduct>& products, const float* a, float* out) {
  const auto start = std::chrono::steady_clock::now();
  for (const GemmProduct& p : products) gemm_columns(out, p.N, a, p.K, p.b, nullptr, kTuningRows, p.K, 0, p.N);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

bool touching_matters(const MatrixRef& b) { return runs_float_tiles(b, kTuningRows); }

TouchTuning tune_touching(const std::vector<GemmProduct>& all) {
  std::vector<GemmProduct> products;
  for (const GemmProduct& p : all)
    if (touching_matters(p.b)) products.push_back(p);
  if (products.empty()) return TouchTuning{};  // touch_tuning() keeps what it had
  int max_k = 1, max_n = 1;
  for (const GemmProduct& p : products) max_k = std::max(max_k, p.K), max_n = std::max(max_n, p.N);
  // Any finite rows do: the time does not depend on the values.
  std::vector<float> a(static_cast<size_t>(kTuningRows) * max_k), out(static_cast<size_t>(kTuningRows) * max_n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i % 7) - 0.75f;
  std::vector<double> with, without, ratios;
  for (int pass = 0; pass < kWarmUps + kPasses; ++pass) {
    // A pass each way, back to back, which goes first alternating: the ratio within a pair is
    // what a slow stretch of the machine (a background compile, another process) moves least.
    double ms[2] = {0, 0};
    for (const bool touching : {pass % 2 == 0, pass % 2 != 0}) {
      set_touch_from_rows(touching ? 0 : kTunedFloor);
      ms[touching] = pass_ms(products, a.data(), out.data());
    }
    if (pass < kWarmUps) continue;
    with.push_back(ms[1]);
    without.push_back(ms[0]);
    ratios.push_back(ms[0] / ms[1]);
  }
  TouchTuning t;
  t.tuned = true;
  t.ms_with = median(with);
  t.ms_without = median(without);
  t.from_rows = median(ratios) <= 0.99 ? kTunedFloor : 0;
  set_touch_from_rows(t.from_rows);
  g_last = t;
  return t;
}

TouchTuning touch_tuning() { return g_last; }

}  // namespace mh

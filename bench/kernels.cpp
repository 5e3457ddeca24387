// The kernel benchmark, in wasm (run by Node; bench/run.sh builds it twice: plain SIMD and
// relaxed SIMD with fused multiply-add). In one process, so that every ratio is of numbers taken
// on the same CPU minutes apart:
//   peak       one core's 4-lane multiply-add rate on registers only (12 independent accumulators,
//              so neither latency nor loads limit it): the ceiling for any kernel in this build
//   gemm       core/gemm.h at GPT-2 small's shapes (and a square one), float32 and bf16 weights,
//              GFLOP/s and fraction of the peak: each timed call is paired with a run of the
//              peak loop of about the same length right after it, and the row reports the median
//              of those ratios, so that a shared machine whose speed drifts by 20–40% within a
//              minute (seen here) does not move the fraction with it. The rows take turns, each
//              round timing every row (after an untimed call that brings the row's B back into
//              the cache; several calls for the smallest products), so that every row's calls
//              are spread over the whole table: on a 2-core Zen 3 the GEMM loses 25–35% for
//              0.1–0.3 s at a time while the register-only peak loop does not (a neighbour
//              taking the cache, by the look of it), and a row timed in one stretch of 0.2 s
//              could fall in such a window whole (W_O at 16 tokens read 55% of the peak in one
//              run, 85% a minute later)
//   bandwidth  reading 256 MiB once (SIMD sums), the better of one stream and four side by side
//              (peak.h): what a decoding step, which reads every weight
//              once, can at best stream (alone with --bandwidth-only: bench/gpt2.mjs measures it
//              again right before and after its decoding rows, whose bound it is)
// Prints one JSON object per line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include <wasm_simd128.h>

#include "core/gemm.h"
#include "core/gemm_tuning.h"

#include "peak.h"

using Clock = std::chrono::steady_clock;
using v4 = v128_t;

// Median seconds of `calls` runs of fn, after one warm-up run.
template <class Fn>
double median_seconds(int calls, Fn fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Timed calls of one product (flops each), each paired with the peak loop run for about as many
// flops right after it: median time, and the median over calls of the call's rate divided by the
// peak loop's.
struct Rate { double seconds, gflops, of_peak; };
class RateBesidePeak {
 public:
  explicit RateBesidePeak(double flops)
      : flops_(flops), spin_steps_(std::max<long>(1000, static_cast<long>(flops / (kAccumulators * 4 * 2)))) {}
  template <class Fn>
  void time_call(Fn fn) {
    auto t0 = Clock::now();
    fn();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    sink_ += spin(spin_steps_, 1.0f + seconds_.size());
    const double spin_s = std::chrono::duration<double>(Clock::now() - t0).count();
    seconds_.push_back(s);
    ratio_.push_back((flops_ / s) / (spin_steps_ * double(kAccumulators) * 4 * 2 / spin_s));
  }
  void warm_up_peak() { sink_ += spin(spin_steps_, 0.5f); }
  Rate rate() {
    if (sink_ == 12345.0f) std::printf("#");
    std::sort(seconds_.begin(), seconds_.end());
    std::sort(ratio_.begin(), ratio_.end());
    const double median = seconds_[seconds_.size() / 2];
    return {median, flops_ / median / 1e9, ratio_[ratio_.size() / 2]};
  }

 private:
  double flops_;
  long spin_steps_;
  float sink_ = 0;
  std::vector<double> seconds_, ratio_;
};

// `calls` timed runs of fn in a row, after one warm-up run of it and of the peak loop.
template <class Fn>
Rate rate_beside_peak(int calls, double flops, Fn fn) {
  RateBesidePeak timer(flops);
  fn();
  timer.warm_up_peak();
  for (int i = 0; i < calls; ++i) timer.time_call(fn);
  return timer.rate();
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 1 && std::strcmp(argv[1], "--bandwidth-only") == 0) {
    std::printf("{\"readGBs\": %.2f}\n", read_bandwidth_gbs());
    return 0;
  }
  const double peak = peak_gflops(20'000'000);
  std::printf("{\"kernel\": \"%s\", \"peakGflops\": %.2f}\n", mh::gemm_kernel_name(), peak);
  std::fflush(stdout);
  if (argc > 1 && std::strcmp(argv[1], "--peak-only") == 0) return 0;  // bench/run.mjs: this build's peak
  struct Shape { const char* what; int n, K, N; };
  const Shape shapes[] = {
      {"GPT-2 small QKV, 64 tokens", 64, 768, 2304},  {"GPT-2 small MLP up, 64 tokens", 64, 768, 3072},
      {"GPT-2 small MLP down, 64 tokens", 64, 3072, 768}, {"GPT-2 small W_O, 16 tokens", 16, 768, 768},
      {"GPT-2 small MLP up, 256 tokens", 256, 768, 3072}, {"square 512", 512, 512, 512},
      {"GPT-2 small MLP up, 1 token (decoding)", 1, 768, 3072}};
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Every row's operands, alive together: the rows take turns (header comment).
  struct Operands {
    Shape shape;
    std::vector<float> a, b, panels, out;
    std::vector<uint16_t> b16, panels16;
  };
  struct Row {
    Operands* x;
    bool bf16, in_panels;
    RateBesidePeak timer;
  };
  auto bf16_copy = [](const std::vector<float>& f) {
    std::vector<uint16_t> h(f.size());
    std::transform(f.begin(), f.end(), h.begin(), mh::float_to_bf16);
    return h;
  };
  std::vector<Operands> operands;
  operands.reserve(std::size(shapes));
  std::vector<Row> rows;
  for (const Shape& s : shapes) {
    Operands x{s};
    x.a.resize(static_cast<size_t>(s.n) * s.K);
    x.b.resize(static_cast<size_t>(s.K) * s.N);
    x.out.resize(static_cast<size_t>(s.n) * s.N);
    for (float& v : x.a) v = normal(rng);
    for (float& v : x.b) v = normal(rng);
    x.b16 = bf16_copy(x.b);
    // Models read their weights in the kernel's panel layout (a checkpoint's stored so at load, an
    // attention layer's packed once per weight change); row-major B is packed a panel at a time on
    // every call, kept here for comparison. Panels: 8 columns × K, the last zero-padded.
    x.panels.resize(static_cast<size_t>(s.K) * ((s.N + 7) / 8 * 8));
    mh::pack_panels(x.panels.data(), x.b.data(), s.N, s.K, s.N);
    x.panels16 = bf16_copy(x.panels);
    operands.push_back(std::move(x));
    for (int variant = 0; variant < 4; ++variant)
      rows.push_back({&operands.back(), variant % 2 == 1, variant >= 2, RateBesidePeak(2.0 * s.n * s.K * s.N)});
  }
  auto product = [](const Row& row) {
    Operands& x = *row.x;
    const Shape& s = x.shape;
    const mh::MatrixRef ref = row.in_panels ? (row.bf16 ? mh::MatrixRef{x.panels16.data(), mh::WeightType::kBF16, s.K, true}
                                                        : mh::MatrixRef{x.panels.data(), mh::WeightType::kF32, s.K, true})
                                            : (row.bf16 ? mh::MatrixRef{x.b16.data(), mh::WeightType::kBF16, s.N}
                                                        : mh::f32_matrix(x.b.data(), s.N));
    mh::gemm(x.out.data(), s.N, x.a.data(), s.K, ref, nullptr, s.n, s.K, s.N);
  };
  for (Row& row : rows) row.timer.warm_up_peak();
  // Each round: every row in turn, an untimed call first so that its B is back in the cache (these
  // rows are the products on hot weights; the 48 products below are the cold ones), then timed
  // calls, several for a small product (one token's read 9.4 MB at half the speed in its first call
  // after the others' than in the calls after that).
  const int rounds = quick ? 9 : 25;
  for (int round = 0; round < rounds; ++round) {
    for (Row& row : rows) {
      const Shape& s = row.x->shape;
      const int calls = std::clamp(static_cast<int>(1e8 / (2.0 * s.n * s.K * s.N)), 1, 16);
      product(row);
      for (int call = 0; call < calls; ++call) row.timer.time_call([&] { product(row); });
    }
  }
  for (Row& row : rows) {
    const Shape& s = row.x->shape;
    const Rate r = row.timer.rate();
    std::printf("{\"gemm\": \"%s\", \"weights\": \"%s\", \"layout\": \"%s\", \"n\": %d, \"K\": %d, \"N\": %d, \"ms\": %.4f, \"gflops\": %.2f, "
                "\"ofPeak\": %.3f, \"ofRunPeak\": %.3f, \"weightGBs\": %.2f}\n",
                s.what, row.bf16 ? "bf16" : "f32", row.in_panels ? "panels" : "row-major", s.n, s.K, s.N, r.seconds * 1e3, r.gflops,
                r.of_peak, r.gflops / peak, double(s.K) * s.N * (row.bf16 ? 2 : 4) / r.seconds / 1e9);
  }
  std::fflush(stdout);
  // The products as a model runs them: GPT-2 small's 48 weight matrices (12 layers of QKV, W_O,
  // MLP up and down), each in its own memory and in panels, so every weight comes from memory
  // (340 MB), not from the cache the table above runs in.
  for (int tokens : {16, 32, 64}) {
    struct Matrix { int K, N; };
    const Matrix layer[] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
    std::vector<std::vector<float>> weights;
    double flops = 0;
    for (int l = 0; l < 12; ++l)
      for (const Matrix& m : layer) {
        weights.emplace_back(static_cast<size_t>(m.K) * ((m.N + 7) / 8 * 8));
        for (size_t i = 0; i < weights.back().size(); i += 16) weights.back()[i] = normal(rng);  // every line written
        flops += 2.0 * tokens * m.K * m.N;
      }
    std::vector<float> a(static_cast<size_t>(tokens) * 3072), out(a.size());
    for (float& x : a) x = normal(rng);
    if (tokens == 16) {
      // As a checkpoint's load does (io/checkpoint.cpp): touching ahead or not, timed on the first
      // 64 MB of the matrices, before any of the rows below.
      std::vector<mh::GemmProduct> products;
      double bytes = 0;
      for (size_t w = 0; w < weights.size() && bytes < 64e6; ++w) {
        const Matrix& m = layer[w % 4];
        products.push_back({mh::MatrixRef{weights[w].data(), mh::WeightType::kF32, m.K, true}, m.K, m.N});
        bytes += 4.0 * weights[w].size();
      }
      const mh::TouchTuning t = mh::tune_touching(products);
      std::printf("{\"touchTuning\": {\"fromRows\": %d, \"msWith\": %.3f, \"msWithout\": %.3f}}\n", t.from_rows, t.ms_with,
                  t.ms_without);
    }
    const Rate r = rate_beside_peak(quick ? 5 : 11, flops, [&] {
      for (size_t w = 0; w < weights.size(); ++w) {
        const Matrix& m = layer[w % 4];
        mh::gemm(out.data(), m.N, a.data(), m.K, mh::MatrixRef{weights[w].data(), mh::WeightType::kF32, m.K, true},
                 nullptr, tokens, m.K, m.N);
      }
    });
    std::printf("{\"fromMemory\": \"GPT-2 small's 48 weight products, %d tokens, F32 panels from memory\", \"n\": %d, "
                "\"ms\": %.3f, \"gflops\": %.2f, \"ofPeak\": %.3f, \"ofRunPeak\": %.3f}\n",
                tokens, tokens, r.seconds * 1e3, r.gflops, r.of_peak, r.gflops / peak);
    std::fflush(stdout);
  }
  std::printf("{\"readGBs\": %.2f}\n", read_bandwidth_gbs());
}

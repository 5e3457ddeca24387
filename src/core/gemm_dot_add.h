// The integer dot-add's measurement (core/gemm_tuning.h; gemm.cpp's last part): here because
// gemm.cpp is the one source the relaxed-SIMD build compiles apart from the plain one.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "core/blocks.h"
#include "core/gemm.h"
#include "core/gemm_tuning.h"

namespace mh {

// Private to gemm.cpp, the one file that includes it: internal linkage, as if written there.
namespace {

std::atomic<int> g_dot_add_override{-1};  // -1: as measured

#if defined(__wasm_relaxed_simd__)
constexpr int kDotAddRounds = 7, kDotAddRepeats = 8;
constexpr size_t kOutFloats = 5 * 203;  // the largest n · N of measure_dot_add's products
constexpr WeightType kDotAddTypes[] = {WeightType::kQ8, WeightType::kQ4, WeightType::kQ5, WeightType::kQ40};

uint32_t next_bits(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint32_t>(state >> 32);
}

// A K × N matrix of random blocks of type t, the extremes of each type's values among them.
std::vector<uint8_t> random_blocks(WeightType t, int K, int N, uint64_t& state) {
  std::vector<uint8_t> bytes(static_cast<size_t>(block_matrix_bytes(t, K, N)));
  const int lowest = t == WeightType::kQ8 ? -127 : 0;
  const int count = t == WeightType::kQ8 ? 255 : t == WeightType::kQ5 ? 32 : 16;
  for (int j = 0; j < N; ++j)
    for (int k = 0; k < K; k += kBlockRows) {
      int q[kBlockRows];
      for (int r = 0; r < kBlockRows; ++r) q[r] = lowest + static_cast<int>(next_bits(state) % count);
      q[0] = lowest, q[1] = lowest + count - 1;
      const float scale = 0.01f + 0.001f * (next_bits(state) % 16);
      write_block_column(t, bytes.data() + block_offset(t, k, j, K), j % 8, scale, 0.02f, q);
    }
  return bytes;
}

// The products over blocks with the dot-add on or off, `repeats` times, on the calling thread; the
// time in ms. With `out`, each product's elements one after another there.
struct BlockProduct {
  std::vector<uint8_t> blocks;
  MatrixRef b;
  int n, K, N;
};
double products_ms(bool dot_add, const std::vector<BlockProduct>& products, const float* a, float* out, int repeats) {
  g_dot_add_override.store(dot_add ? 1 : 0, std::memory_order_relaxed);
  static float scratch[kOutFloats];  // results not kept (one thread measures, once)
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r)
    for (size_t i = 0; i < products.size(); ++i) {
      const BlockProduct& p = products[i];
      gemm_columns(out ? out + i * kOutFloats : scratch, p.N, a, p.K, p.b, nullptr, p.n, p.K, 0, p.N);
    }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The products the dot-add changes, each way: every block type, decoding's row (K 3072: 203 columns
// as 4 streams side by side and 64 as 2; K 288: a panel at a time) and tiles of every height (2–5 rows), with
// random rows and blocks. Exact where every element has the same bits each way, in every round;
// the engine compiles each kernel a function at a time, at first by its baseline compiler, and
// Node 20's computes the dot-add wrongly in some of them only. Faster by the median over the
// rounds of each round's ratio (its passes each way back to back, which goes first alternating): a
// slow stretch of a shared machine moves both sides of a round, and a few rounds at most.
DotAddTuning measure_dot_add() {
  DotAddTuning t;
  t.measured = true;
  t.exact = true;
  uint64_t state = 0x6d756c7469686561ull;
  std::vector<BlockProduct> products;
  for (const WeightType type : kDotAddTypes)
    for (const auto& [n, K, N] : {std::tuple{1, 3072, 203}, std::tuple{1, 3072, 64}, std::tuple{1, 288, 21}, std::tuple{2, 288, 21},
                                  std::tuple{3, 288, 21}, std::tuple{4, 288, 21}, std::tuple{5, 768, 64}}) {
      BlockProduct p{random_blocks(type, K, N, state), {}, n, K, N};
      p.b = MatrixRef{p.blocks.data(), type, K, true};
      products.push_back(std::move(p));
    }
  std::vector<float> a(5 * 3072), on(products.size() * kOutFloats), off(on.size());
  for (float& x : a) x = static_cast<float>(static_cast<int32_t>(next_bits(state))) * 0x1p-31f;
  const int was = g_dot_add_override.load(std::memory_order_relaxed);
  std::vector<double> ratios;  // each round's time with ÷ without, taken back to back
  for (int round = 0; round < kDotAddRounds; ++round) {
    products_ms(false, products, a.data(), off.data(), 1);
    products_ms(true, products, a.data(), on.data(), 1);
    t.exact = t.exact && std::memcmp(on.data(), off.data(), sizeof(float) * on.size()) == 0;
    double ms[2];
    for (const bool dot_add : {round % 2 == 0, round % 2 != 0}) ms[dot_add] = products_ms(dot_add, products, a.data(), nullptr, kDotAddRepeats);
    t.ms_on = round == 0 ? ms[1] : std::min(t.ms_on, ms[1]);
    t.ms_off = round == 0 ? ms[0] : std::min(t.ms_off, ms[0]);
    ratios.push_back(ms[1] / ms[0]);
  }
  g_dot_add_override.store(was, std::memory_order_relaxed);
  std::sort(ratios.begin(), ratios.end());
  t.ratio = ratios[ratios.size() / 2];
  t.on = t.exact && t.ratio <= 0.8;
  return t;
}
#else
DotAddTuning measure_dot_add() { return DotAddTuning{}; }
#endif

// The measurement, once (thread-safe), and the choice as the tests and benchmarks set it.
std::atomic<bool> g_dot_add_measured{false};
const DotAddTuning& measured_dot_add() {
  static const DotAddTuning t = [] {
    const DotAddTuning measured = measure_dot_add();
    g_dot_add_measured.store(true);
    return measured;
  }();
  return t;
}

}  // namespace
}  // namespace mh

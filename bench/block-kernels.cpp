// Products over 8-, 6-, 5- and 4-bit blocks (core/blocks.h; q4k, q5k, q6k: the K-quants' super-blocks) against float32 panels, in wasm: GPT-2 small's
// four products (Q/K/V together, the attention output, the FFN's up and down) at 64 and 256 rows,
// one thread, each by
//   f32       float32 panels (the float32 tile, at the multiply-add peak)
//   q8, q5, q4, q4k, q40, q6k, q5k   integer tiles (the rows quantized to 8 bits a block, each block's
//                          sums as integers; q4k's and q6k's a super-block of 256)
//   q8 w, q5 w, … q6k w    the blocks widened into float32 panels for the float32 tile
// Rates in GFLOP-equivalents (2 · n · K · N a product, whatever the arithmetic), each call paired
// with the peak loop (bench/peak.h) of about as many flops right after it, and reported as the
// median over calls of the call's rate ÷ the loop's (a shared machine's speed drifts within a
// minute); the rows take turns, a round at a time. Then the integer peaks (bench/peak.h: the
// integer products the tiles are made of, on registers only) and, for each row, "ofOwnPeak": its
// fraction of the peak of the product its tiles take. Prints one JSON object per line.
// Built as bench/run.sh builds kernels.cpp (the relaxed one rewritten by scripts/relax-wasm.mjs):
//   em++ -O3 -std=c++17 -Isrc -ffp-contract=off -sENVIRONMENT=node -sALLOW_MEMORY_GROWTH=1 \
//     -sMAXIMUM_MEMORY=2GB -msimd128 [-mrelaxed-simd] bench/block-kernels.cpp src/core/gemm.cpp \
//     src/core/gemm_tuning.cpp src/core/parallel.cpp -o build/bench/block-kernels_relaxed.cjs
//   node --no-experimental-fetch --experimental-wasm-relaxed-simd build/bench/block-kernels_relaxed.cjs [rounds] [--cold]
//   ... block-kernels_relaxed.cjs --decode [rounds] [--llama-1b]   (decoding's products alone:
//   decode_main below; Llama-3.2-1B's shape needs -sMAXIMUM_MEMORY=4GB)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/blocks.h"
#include "core/gemm.h"
#include "core/gemm_tuning.h"

#include "peak.h"

using Clock = std::chrono::steady_clock;

namespace {

struct Row {
  std::string name;
  int n, K, N;
  mh::MatrixRef b;
  bool integer_tiles;
  std::vector<double> seconds, of_peak;
};

std::vector<uint8_t> random_blocks(mh::WeightType t, int K, int N, std::mt19937& rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(mh::block_matrix_bytes(t, K, N)));
  std::normal_distribution<float> normal(0.0f, 0.02f);
  if (mh::has_q4k_meta(t)) {
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; k += mh::kSuperRows) {
        int q[mh::kSuperRows], sc[mh::kSuperBlocks], m[mh::kSuperBlocks];
        for (int& v : q) v = static_cast<int>(rng() % (t == mh::WeightType::kQ5K ? 32 : 16));
        for (int b = 0; b < mh::kSuperBlocks; ++b) sc[b] = static_cast<int>(rng() % 64), m[b] = static_cast<int>(rng() % 64);
        uint8_t* super = bytes.data() + mh::block_offset(t, k, j, K);
        const float d = 0.001f * normal(rng), dmin = 0.001f * std::fabs(normal(rng));
        mh::write_q4k_column(super, j % 8, d, dmin, sc, m, q, t);
      }
    return bytes;
  }
  if (t == mh::WeightType::kQ6K) {
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; k += mh::kSuperRows) {
        int q[mh::kSuperRows], sc[2 * mh::kSuperBlocks];
        for (int& v : q) v = static_cast<int>(rng() % 64) - 32;
        for (int& v : sc) v = static_cast<int>(rng() % 256) - 128;
        mh::write_q6k_column(bytes.data() + mh::block_offset(t, k, j, K), j % 8, 0.001f * normal(rng), sc, q);
      }
    return bytes;
  }
  for (int j = 0; j < N; ++j)
    for (int k = 0; k < K; k += mh::kBlockRows) {
      int q[mh::kBlockRows];
      for (int& v : q)
        v = t == mh::WeightType::kQ8   ? static_cast<int>(rng() % 255) - 127
            : t == mh::WeightType::kQ5 ? static_cast<int>(rng() % 32)
                                       : static_cast<int>(rng() % 16);
      const float scale = normal(rng), min = normal(rng);
      mh::write_block_column(t, bytes.data() + mh::block_offset(t, k, j, K), j % 8, scale, min, q);
    }
  return bytes;
}

}  // namespace

// Decoding's products alone: one row through every matrix of GPT-2 small's shape with a SwiGLU FFN
// (12 layers of Q/K/V, output, gate + up, down) and its 50257-token head, as a step reads them
// (each matrix once, none in cache), for each weight type; ms a step and the weights' bytes ÷ time,
// beside the read bandwidth of bench/kernels.cpp's loop over 256 MiB.
int decode_main(int rounds, bool llama) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Shape { int K, N; };
  std::vector<Shape> shapes;
  if (llama) {  // Llama-3.2-1B's: 16 layers of d 2048, 32 + 8 + 8 heads of 64, FFN 8192, 128256 tokens
    for (int l = 0; l < 16; ++l) shapes.insert(shapes.end(), {{2048, 3072}, {2048, 2048}, {2048, 16384}, {8192, 2048}});
    shapes.push_back({2048, 128256});
  } else {
    for (int l = 0; l < 12; ++l) shapes.insert(shapes.end(), {{768, 2304}, {768, 768}, {768, 6144}, {3072, 768}});
    shapes.push_back({768, 50264});
  }
  constexpr int kTypes = 8;
  const mh::WeightType types[kTypes] = {mh::WeightType::kF32, mh::WeightType::kQ8, mh::WeightType::kQ5, mh::WeightType::kQ4,
                                        mh::WeightType::kQ4K, mh::WeightType::kQ40, mh::WeightType::kQ6K, mh::WeightType::kQ5K};
  const char* names[kTypes] = {"f32", "q8", "q5", "q4", "q4k", "q40", "q6k", "q5k"};
  // Llama's float32 copy (4.9 GB) does not fit a wasm heap, nor its q6k and q5 beside q8 and q4.
  const auto skipped = [&](int t) {
    return llama && (types[t] == mh::WeightType::kF32 || types[t] == mh::WeightType::kQ5 || types[t] == mh::WeightType::kQ6K ||
                     types[t] == mh::WeightType::kQ5K);
  };
  std::vector<std::vector<mh::MatrixRef>> mats(kTypes);
  std::vector<std::vector<float>> f32s;
  std::vector<std::vector<uint8_t>> blocks;
  double bytes[kTypes] = {};
  for (const Shape& s : shapes) {
    if (!skipped(0)) {
      f32s.emplace_back(static_cast<size_t>(s.K) * s.N, 0.01f);
      mats[0].push_back({f32s.back().data(), mh::WeightType::kF32, s.K, true});
      bytes[0] += 4.0 * s.K * s.N;
    }
    for (int t = 1; t < kTypes; ++t) {
      if (skipped(t)) continue;
      blocks.push_back(random_blocks(types[t], s.K, s.N, rng));
      mats[t].push_back({blocks.back().data(), types[t], s.K, true});
      bytes[t] += blocks.back().size();
    }
  }
  std::vector<float> a(8192), out(128256);
  for (float& x : a) x = normal(rng);
  std::vector<double> times[kTypes];
  for (int round = 0; round < rounds + 1; ++round)
    for (int t = 0; t < kTypes; ++t) {
      if (skipped(t)) continue;
      const auto t0 = Clock::now();
      for (size_t m = 0; m < shapes.size(); ++m)
        mh::gemm(out.data(), shapes[m].N, a.data(), shapes[m].K, mats[t][m], nullptr, 1, shapes[m].K, shapes[m].N);
      if (round > 0) times[t].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  const double gbs = read_bandwidth_gbs();
  std::printf("{\"readGBs\":%.2f}\n", gbs);
  for (int t = 0; t < kTypes; ++t) {
    if (skipped(t)) continue;
    std::sort(times[t].begin(), times[t].end());
    const double s = times[t][times[t].size() / 2];
    std::printf("{\"decode\":\"%s\",\"ms\":%.3f,\"MB\":%.1f,\"GBs\":%.2f,\"ofBound\":%.3f}\n", names[t], s * 1e3,
                bytes[t] / 1e6, bytes[t] / s / 1e9, s / (bytes[t] / gbs / 1e9));
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--decode")
    return decode_main(argc > 2 ? std::atoi(argv[2]) : 7, argc > 3 && std::string(argv[3]) == "--llama-1b");
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  // --cold: B evicted from the caches before each timed call (64 MB read in between), as a
  // model's run meets its weights, instead of warmed by a call just before.
  const bool cold = argc > 2 && std::string(argv[2]) == "--cold";
  std::vector<float> evict(cold ? size_t{16} << 20 : 0, 1.0f);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int shapes[4][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
  constexpr int kBlockTypes = 7;
  const mh::WeightType block_types[kBlockTypes] = {mh::WeightType::kQ8, mh::WeightType::kQ5, mh::WeightType::kQ4,
                                                   mh::WeightType::kQ4K, mh::WeightType::kQ40, mh::WeightType::kQ6K,
                                                   mh::WeightType::kQ5K};
  const char* block_names[kBlockTypes] = {"q8", "q5", "q4", "q4k", "q40", "q6k", "q5k"};
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<uint8_t>> blocks[kBlockTypes];  // [type][shape]
  for (const auto& s : shapes) {
    f32.emplace_back(static_cast<size_t>(s[0]) * s[1]);
    for (float& x : f32.back()) x = 0.02f * normal(rng);
    for (int t = 0; t < kBlockTypes; ++t) blocks[t].push_back(random_blocks(block_types[t], s[0], s[1], rng));
  }
  std::vector<Row> rows;
  for (const int n : {64, 256})
    for (int s = 0; s < 4; ++s) {
      const int K = shapes[s][0], N = shapes[s][1];
      const std::string shape = std::to_string(n) + " × " + std::to_string(K) + " × " + std::to_string(N);
      rows.push_back({"f32 " + shape, n, K, N, {f32[s].data(), mh::WeightType::kF32, K, true}, true, {}, {}});
      for (int t = 0; t < kBlockTypes; ++t)
        for (const bool integer_tiles : {true, false})
          rows.push_back({std::string(block_names[t]) + (integer_tiles ? " " : " w ") + shape, n, K, N,
                          {blocks[t][s].data(), block_types[t], K, true}, integer_tiles, {}, {}});
    }
  std::vector<float> a(256 * 3072), out(256 * 3072);
  for (float& x : a) x = normal(rng);
  float sink = 0;
  const auto call = [&](const Row& r) {
    mh::set_integer_block_tiles(r.integer_tiles);
    mh::gemm(out.data(), r.N, a.data(), r.K, r.b, nullptr, r.n, r.K, r.N);
  };
  for (const Row& r : rows) call(r), call(r);  // V8 tiers up
  spin(20'000'000, 0.5f);
  for (int round = 0; round < rounds; ++round)
    for (Row& r : rows) {
      if (cold) {
        float total = 0;
        for (size_t i = 0; i < evict.size(); i += 16) total += evict[i];
        evict[round] = total;
      } else {
        call(r);  // its B back in the cache
      }
      auto t0 = Clock::now();
      call(r);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      const double flops = 2.0 * r.n * r.K * r.N;
      const long steps = std::max<long>(1000, static_cast<long>(flops / (kAccumulators * 4 * 2)));
      t0 = Clock::now();
      sink += spin(steps, 1.0f + round);
      const double spin_s = std::chrono::duration<double>(Clock::now() - t0).count();
      r.seconds.push_back(s);
      r.of_peak.push_back((flops / s) / (steps * double(kAccumulators) * 4 * 2 / spin_s));
    }
  mh::set_integer_block_tiles(true);
  // The peaks: the multiply-add loop, and the integer products each integer tile is made of. A
  // tile's "ofOwnPeak" is its median fraction of the multiply-add loop scaled to its own product's
  // peak (the two peaks measured here, back to back).
  const double fma_peak = peak_gflops();
  const bool dot_add = mh::integer_dot_add();
  const double dot16 = integer_peak_gflops<IntegerProduct::kDot16>(),
               dot8 = integer_peak_gflops<IntegerProduct::kDot8>(),
               dot8_wide = integer_peak_gflops<IntegerProduct::kDot8Wide>(),
               dot_add_peak = integer_peak_gflops<IntegerProduct::kDotAdd>();
  std::printf("{\"kernel\":\"%s\",\"peakGflops\":%.2f,\"integerDotAdd\":%s}\n", mh::gemm_kernel_name(), fma_peak,
              dot_add ? "true" : "false");
  const std::pair<const char*, double> peaks[] = {
      {"16-bit dot + add", dot16}, {"int8 dot + 16-bit add", dot8}, {"int8 dot widened + add", dot8_wide}, {"int8 dot-add", dot_add_peak}};
  for (const auto& [name, gflops] : peaks)
    if (gflops > 0) std::printf("{\"peak\":\"%s\",\"gflops\":%.2f,\"ofFmaPeak\":%.3f}\n", name, gflops, gflops / fma_peak);
  // The product each tile's sums take (core/gemm_blocks.h): 4-, 5- and 6-bit values fit the int8
  // dot's 7-bit operand (6-bit ones widened each 2 groups); 8-bit ones take 16-bit dots, or the
  // dot-add with the row's sign moved.
  const auto own_peak = [&](const Row& r) {
    if (!r.integer_tiles || r.b.type == mh::WeightType::kF32) return fma_peak;
    if (dot_add && !mh::has_super_blocks(r.b.type)) return dot_add_peak;  // kQ4K's and kQ6K's tiles take the int8 dot
    const bool narrow = mh::has_unsigned_values(r.b.type);
    return narrow && dot8 > 0 ? dot8 : dot16;
  };
  for (Row& r : rows) {
    std::sort(r.seconds.begin(), r.seconds.end());
    std::sort(r.of_peak.begin(), r.of_peak.end());
    const double s = r.seconds[r.seconds.size() / 2], of_peak = r.of_peak[r.of_peak.size() / 2];
    std::printf("{\"product\":\"%s\",\"ms\":%.3f,\"gflops\":%.2f,\"ofPeak\":%.3f,\"ofOwnPeak\":%.3f}\n", r.name.c_str(),
                s * 1e3, 2.0 * r.n * r.K * r.N / s / 1e9, of_peak, of_peak * fma_peak / own_peak(r));
  }
  if (sink == 12345.0f) std::printf("#");
  return 0;
}

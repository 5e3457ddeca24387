// gemm (core/gemm.h) against a float64 product of the same (widened) numbers, over shapes that
// cross every edge of the kernel: row tiles and their tails, the few-rows path, panels of 8 and a
// narrower last one, k blocks of 256, a row stride wider than the matrix, fp16/bf16 storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/blocks.h"
#include "core/gemm.h"
#include "core/gemm_tuning.h"
#include "core/parallel.h"

namespace mh {

std::string weight_type_name(WeightType type) {
  switch (type) {
    case WeightType::kF32: return "F32";
    case WeightType::kF16: return "F16";
    case WeightType::kBF16: return "BF16";
    case WeightType::kQ8: return "Q8";
    case WeightType::kQ4: return "Q4";
    case WeightType::kQ5: return "Q5";
    case WeightType::kQ4K: return "Q4K";
    case WeightType::kQ40: return "Q40";
    case WeightType::kQ6K: return "Q6K";
    case WeightType::kQ5K: return "Q5K";
  }
  return "?";
}
// How gtest prints a parameter (found by argument-dependent lookup, so in mh itself).
void PrintTo(WeightType type, std::ostream* os) { *os << weight_type_name(type); }

namespace {

uint16_t to_bf16(float x) {  // truncation is fine: the reference widens the same bits
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<uint16_t>(bits >> 16);
}

// A random K × N matrix stored with row stride ld in `type`, and the same numbers as float64.
struct Operand {
  std::vector<uint8_t> bytes;
  std::vector<double> exact;  // K × N
  MatrixRef ref;
};

Operand make_operand(WeightType type, int K, int N, int ld, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operand op;
  const int size = weight_type_bytes(type);
  op.bytes.assign(static_cast<size_t>(K) * ld * size + 16, 0xAB);  // padding columns hold garbage
  op.exact.resize(static_cast<size_t>(K) * N);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) {
      const float x = normal(rng);
      uint8_t* at = op.bytes.data() + (static_cast<size_t>(k) * ld + j) * size;
      double value;
      if (type == WeightType::kF32) {
        std::memcpy(at, &x, 4);
        value = x;
      } else if (type == WeightType::kBF16) {
        const uint16_t h = to_bf16(x);
        std::memcpy(at, &h, 2);
        value = bf16_to_float(h);
      } else {
        // Every binary16 pattern class: normals, subnormals (tiny x) and signed zeros.
        const uint16_t h = static_cast<uint16_t>(rng() & 0x7bff) | static_cast<uint16_t>(rng() & 0x8000);
        std::memcpy(at, &h, 2);
        value = half_to_float(h);
      }
      op.exact[static_cast<size_t>(k) * N + j] = value;
    }
  op.ref = {op.bytes.data(), type, ld};
  return op;
}

// The same matrix in gemm's panel layout (panels of 8 columns, depth × 8 each, depth ≥ K); the
// padding of the last panel and the rows below K are garbage, which must never reach the result.
void to_panels(Operand& op, int K, int N, int depth) {
  const int size = weight_type_bytes(op.ref.type);
  std::vector<uint8_t> panels(static_cast<size_t>(depth) * ((N + 7) / 8 * 8) * size + 16, 0xCD);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      std::memcpy(panels.data() + panel_index(k, j, depth) * size, op.bytes.data() + (static_cast<size_t>(k) * op.ref.ld + j) * size, size);
  op.bytes = std::move(panels);
  op.ref = {op.bytes.data(), op.ref.type, depth, true};
}
void to_panels(Operand& op, int K, int N) { to_panels(op, K, N, K); }

// a (n × K) · B (K × N, row-major, and the same in panels) + bias, all random. Each Operand's ref
// points into its own bytes: returned by move, never copied.
struct RandomProduct {
  Operand b, in_panels;
  std::vector<float> a, bias;
};
RandomProduct random_product(WeightType type, int n, int K, int N, std::mt19937& rng) {
  RandomProduct p{make_operand(type, K, N, N, rng), {}, std::vector<float>(static_cast<size_t>(n) * K), std::vector<float>(N)};
  p.in_panels = p.b;
  to_panels(p.in_panels, K, N);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : p.a) x = normal(rng);
  for (float& x : p.bias) x = normal(rng);
  return p;
}

void check_product(WeightType type, int n, int K, int N, bool with_bias, bool panels, std::mt19937& rng) {
  const int ld = N + (rng() % 3) * 5, lda = K + 3, ldo = N + 2;
  Operand b = make_operand(type, K, N, ld, rng);
  // Panels as deep as K, or deeper (a causal block reads the top rows of a head's values).
  if (panels) to_panels(b, K, N, K + (rng() % 2) * 3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(n) * lda), bias(N);
  for (float& x : a) x = normal(rng);
  for (float& x : bias) x = normal(rng);
  std::vector<float> out(static_cast<size_t>(n) * ldo, -7.0f);
  gemm(out.data(), ldo, a.data(), lda, b.ref, with_bias ? bias.data() : nullptr, n, K, N);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = with_bias ? bias[j] : 0.0, magnitude = std::fabs(sum);
      for (int k = 0; k < K; ++k) {
        const double term = static_cast<double>(a[static_cast<size_t>(i) * lda + k]) * b.exact[static_cast<size_t>(k) * N + j];
        sum += term;
        magnitude += std::fabs(term);
      }
      // The standard bound for a float32 sum of K + 1 terms: (K + 1) · 2⁻²⁴ · Σ|term|.
      ASSERT_NEAR(out[static_cast<size_t>(i) * ldo + j], sum, (K + 1) * 6e-8 * magnitude + 1e-30)
          << "n " << n << " K " << K << " N " << N << " at (" << i << ", " << j << ")";
    }
    for (int j = N; j < ldo; ++j) ASSERT_EQ(out[static_cast<size_t>(i) * ldo + j], -7.0f) << "wrote past N";
  }
}

// One instance per thread count and storage type, so that ctest -j runs them side by side (under
// the sanitizers this is most of the suite's time) and the ThreadSanitizer run can leave out the
// one-thread instances.
class EdgeShapes : public ::testing::TestWithParam<std::tuple<int, WeightType>> {};

TEST_P(EdgeShapes, MatchFloat64) {
  const auto [threads, type] = GetParam();
  std::mt19937 rng(7 + threads * 3 + static_cast<int>(type));
  // On 3 threads too: the rows of `a` are then packed once for all column chunks, a block of rows
  // at a time (130 and 250 rows: 2 and 3 blocks), its blocks of depth on several threads (K = 513).
  set_thread_count(threads);
  for (int n : {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16, 17, 19, 21, 130, 250})  // 130, 250: 2 and 3 row blocks
    for (int K : {0, 1, 7, 256, 300, 513})
      for (int N : {1, 5, 8, 9, 31, 40, 77}) {
        if (n * K * N > 3'000'000) continue;
        for (bool panels : {false, true}) check_product(type, n, K, N, (n + K + N) % 2 == 0, panels, rng);
      }
  set_thread_count(1);
}

std::string edge_shapes_name(const ::testing::TestParamInfo<EdgeShapes::ParamType>& info) {
  const int threads = std::get<0>(info.param);
  return weight_type_name(std::get<1>(info.param)) + "_" + std::to_string(threads) +
         (threads == 1 ? "Thread" : "Threads");
}

INSTANTIATE_TEST_SUITE_P(Gemm, EdgeShapes,
                         ::testing::Combine(::testing::Values(1, 3),
                                            ::testing::Values(WeightType::kF32, WeightType::kF16, WeightType::kBF16)),
                         edge_shapes_name);

TEST(Gemm, Fp16SpecialValuesWidenExactly) {
  // inf, -inf, NaN, the largest normal, the smallest subnormal: a 1 × 1 product with a = 1 gives
  // the widened value back.
  const uint16_t halves[] = {0x7c00, 0xfc00, 0x7e00, 0x7bff, 0x0001, 0x8000, 0x3c00};
  for (uint16_t h : halves) {
    std::vector<uint16_t> b(8, h);  // one full panel, so the SIMD widening runs
    std::vector<float> a(4, 1.0f), out(4 * 8);
    gemm(out.data(), 8, a.data(), 1, {b.data(), WeightType::kF16, 8}, nullptr, 4, 1, 8);
    gemm(out.data(), 8, a.data(), 1, {b.data(), WeightType::kF16, 8}, nullptr, 1, 1, 8);  // few rows
    const float want = half_to_float(h);
    for (float x : out) {
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(x));
      } else {
        EXPECT_EQ(x, want) << std::hex << h;
      }
    }
  }
}

TEST(Gemm, SameBitsWhateverTheThreadsRowGroupingAndLayout) {
  std::mt19937 rng(11);
  // K = 300 and 1100: one row reads long panels four side by side, in the tiles' order (the same
  // bits), and short ones one at a time with even and odd k in separate sums (close, not equal;
  // EdgeShapes.MatchFloat64 bounds its error). 16 rows read the bf16 panels in place, widened in
  // registers (4 tiles), 37 rows a widened copy (10 tiles), as the row-major matrix always is.
  struct Shape {
    int n, K;
  };
  for (const Shape shape : {Shape{37, 300}, Shape{37, 1100}, Shape{16, 300}, Shape{16, 1100}}) {
    const int n = shape.n, K = shape.K, N = 203;
    const RandomProduct p = random_product(WeightType::kBF16, n, K, N, rng);
    const Operand &b = p.b, &in_panels = p.in_panels;
    const std::vector<float> &a = p.a, &bias = p.bias;
    std::vector<float> one(static_cast<size_t>(n) * N), three(one.size()), by_row(one.size()), panels(one.size()),
        panels_by_row(one.size());
    set_thread_count(1);
    gemm(one.data(), N, a.data(), K, b.ref, bias.data(), n, K, N);
    set_thread_count(3);
    gemm(three.data(), N, a.data(), K, b.ref, bias.data(), n, K, N);
    set_thread_count(1);
    for (int i = 0; i < n; ++i)  // each row alone (the few-rows path, as a decoding step runs it)
      gemm(by_row.data() + static_cast<size_t>(i) * N, N, a.data() + static_cast<size_t>(i) * K, K, b.ref, bias.data(),
           1, K, N);
    gemm(panels.data(), N, a.data(), K, in_panels.ref, bias.data(), n, K, N);
    for (int i = 0; i < n; ++i)
      gemm(panels_by_row.data() + static_cast<size_t>(i) * N, N, a.data() + static_cast<size_t>(i) * K, K,
           in_panels.ref, bias.data(), 1, K, N);
    EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * 4));
    EXPECT_EQ(0, std::memcmp(one.data(), panels.data(), one.size() * 4));
    if (K > 1024) {
      EXPECT_EQ(0, std::memcmp(one.data(), panels_by_row.data(), one.size() * 4));
    } else {
      float largest = 0, worst = 0;
      for (size_t e = 0; e < one.size(); ++e) {
        largest = std::max(largest, std::fabs(one[e]));
        worst = std::max(worst, std::fabs(one[e] - panels_by_row[e]));
      }
      EXPECT_LT(worst, 1e-5f * largest);
      EXPECT_GT(largest, 1.0f);
    }
    EXPECT_EQ(0, std::memcmp(one.data(), by_row.data(), one.size() * 4));
  }
}

// A decoding step's product (one row over panels) split over threads: short panels one at a time
// (row_stream), long ones in chunks of whole groups of four panels (one_row_in_four_panels), each
// column summed in one order, so every thread count gives the bits of one thread, in every weight
// type that streams (and a last panel of 3 columns).
TEST(Gemm, OneRowOverPanelsSameBitsAtEveryThreadCount) {
  std::mt19937 rng(12);
  for (const WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
    // N above the split's threshold of multiply-adds at every K here; 768 × 3072 is GPT-2's FFN
    // down projection, 16 chunks of six panels at 16 threads (24 of four at 13).
    for (const auto [K, N] : {std::pair{300, 611}, {1100, 611}, {2048, 611}, {3072, 768}}) {
      const RandomProduct p = random_product(type, 1, K, N, rng);
      std::vector<float> one(N), many(N);
      set_thread_count(1);
      gemm(one.data(), N, p.a.data(), K, p.in_panels.ref, p.bias.data(), 1, K, N);
      for (const int threads : {2, 3, 7, 13, 16}) {
        set_thread_count(threads);
        std::fill(many.begin(), many.end(), 0.0f);
        gemm(many.data(), N, p.a.data(), K, p.in_panels.ref, p.bias.data(), 1, K, N);
        EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * 4)) << "K " << K << ", " << threads << " threads";
      }
      set_thread_count(1);
      // Columns cut as gemm_columns gives them give the bits of the whole row, in every build (the
      // wasm tests have one thread, so the threaded loop above is native only): where a group of
      // four panels would not end (three panels, a third one cut short, two), and ranges of six
      // and ten (a group of six, then four: 16 threads' chunks over 96 panels), six cut short.
      for (const auto [c0, width] : {std::pair{16, 24}, {40, 20}, {N / 8 * 8 - 16, N % 8 + 16}, {8, 48}, {64, 80},
                                     {N / 8 * 8 - 40, N % 8 + 40}}) {
        std::fill(many.begin(), many.end(), 0.0f);
        gemm_columns(many.data(), N, p.a.data(), K, p.in_panels.ref, p.bias.data(), 1, K, c0, c0 + width);
        EXPECT_EQ(0, std::memcmp(one.data() + c0, many.data() + c0, width * 4)) << "K " << K << ", columns " << c0 << " +" << width;
      }
    }
  }
}

// A random K × N matrix of blocks (K a multiple of 32), each value checked against the format's
// definition (the product, then the difference), and the same values as float32 panels. `q_of`
// makes the integers (random by default: −127…127, 0…15, −32…31, 0…31).
struct RandomBlocks {
  std::vector<uint8_t> blocks;
  std::vector<float> f32;
};
// kQ4K (kQ5K): Q4_K's (Q5_K's) d and dmin, 6-bit sc and m (0…63, and 63 where `q_of` makes the
// values), and (d · sc) · q − dmin · m, q within 0…15 (0…31). kQ6K: Q6_K's d and int8 sc of each 16 rows (−128…127, and −128 or 127 by
// half where `q_of` makes the values), and (d · sc) · q.
RandomBlocks random_blocks(WeightType type, int K, int N, std::mt19937& rng, int (*q_of)(std::mt19937&, int r) = nullptr) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  RandomBlocks m;
  m.blocks.assign(static_cast<size_t>(block_matrix_bytes(type, K, N)), 0);
  m.f32.assign(static_cast<size_t>(K) * ((N + 7) / 8 * 8), 0.0f);
  if (has_q4k_meta(type)) {
    const int levels = type == WeightType::kQ5K ? 32 : 16;
    for (int j = 0; j < N; ++j)
      for (int k0 = 0; k0 < K; k0 += kSuperRows) {
        int q[kSuperRows], sc[kSuperBlocks], mins[kSuperBlocks];
        for (int r = 0; r < kSuperRows; ++r) q[r] = q_of ? q_of(rng, r) % levels : static_cast<int>(rng() % levels);
        for (int b = 0; b < kSuperBlocks; ++b)
          sc[b] = q_of ? 63 : static_cast<int>(rng() % 64), mins[b] = q_of ? 63 : static_cast<int>(rng() % 64);
        const float d = 0.002f * normal(rng), dmin = 0.004f * std::fabs(normal(rng));
        uint8_t* super = m.blocks.data() + block_offset(type, k0, j, K);
        write_q4k_column(super, j % 8, d, dmin, sc, mins, q, type);
        for (int r = 0; r < kSuperRows; ++r) {
          const int b = r / kBlockRows;
          const float value = block_element(type, super + b * block_bytes(type), r % kBlockRows, j % 8, b);
          EXPECT_EQ(value, (d * static_cast<float>(sc[b])) * static_cast<float>(q[r]) - dmin * static_cast<float>(mins[b]));
          m.f32[panel_index(k0 + r, j, K)] = value;
        }
      }
    return m;
  }
  if (type == WeightType::kQ6K) {
    for (int j = 0; j < N; ++j)
      for (int k0 = 0; k0 < K; k0 += kSuperRows) {
        int q[kSuperRows], sc[2 * kSuperBlocks];
        for (int r = 0; r < kSuperRows; ++r) q[r] = q_of ? q_of(rng, r) : static_cast<int>(rng() % 64) - 32;
        for (int h = 0; h < 2 * kSuperBlocks; ++h) sc[h] = q_of ? (h % 2 ? 127 : -128) : static_cast<int>(rng() % 256) - 128;
        const float d = 0.0005f * normal(rng);
        uint8_t* super = m.blocks.data() + block_offset(type, k0, j, K);
        write_q6k_column(super, j % 8, d, sc, q);
        for (int r = 0; r < kSuperRows; ++r) {
          const int b = r / kBlockRows;
          const float value = block_element(type, super + b * block_bytes(type), r % kBlockRows, j % 8, b);
          EXPECT_EQ(value, (d * static_cast<float>(sc[r / 16])) * static_cast<float>(q[r]));
          m.f32[panel_index(k0 + r, j, K)] = value;
        }
      }
    return m;
  }
  for (int j = 0; j < N; ++j)
    for (int k0 = 0; k0 < K; k0 += kBlockRows) {
      int q[kBlockRows];
      for (int r = 0; r < kBlockRows; ++r)
        q[r] = q_of ? q_of(rng, r)
               : type == WeightType::kQ8 ? static_cast<int>(rng() % 255) - 127
               : type == WeightType::kQ5 ? static_cast<int>(rng() % 32)
                                         : static_cast<int>(rng() % 16);
      // kQ40's min is Q4_0's 8 · d (not stored)
      const float scale = 0.05f * normal(rng);
      const float min = type == WeightType::kQ40 ? 8.0f * scale : has_mins(type) ? 0.2f * normal(rng) : 0.0f;
      uint8_t* block = m.blocks.data() + block_offset(type, k0, j, K);
      write_block_column(type, block, j % 8, scale, min, q);
      for (int r = 0; r < kBlockRows; ++r) {
        const float value = block_element(type, block, r, j % 8, 0);
        const float defined = has_mins(type) ? scale * static_cast<float>(q[r]) - min : scale * static_cast<float>(q[r]);
        EXPECT_EQ(value, defined);
        m.f32[panel_index(k0 + r, j, K)] = value;
      }
    }
  return m;
}

// Element (row, j) of a row's product over blocks as llama.cpp defines it, in float64: the row's
// blocks to 8 bits (d = max |a| / 127 and q_a = a · (1/d) rounded to nearest, ties to even, both
// in float32 as the quantizer computes them), then bias + Σ_blocks d · scale · Σ q_a q − min · d Σ q_a
// (the quantized row's sum, as llama.cpp's Q8_1 keeps it: the exact product of the quantized row);
// kQ40's values
// are Q4_0's d · (q − 8), summed as llama.cpp's Q4_0 products do: d · d_a Σ q_a (q − 8).
// `magnitude`: the sum of the terms' sizes, which bounds float32's rounding of them; `exact_bound`:
// how far quantizing a (|a − d · q_a| ≤ d/2) can move it from the product of a and the values.
// kQ4K as llama.cpp's Q4_K products with Q8_K rows: d_a and q_a once for 256 values, then per 256
// (d · d_a) Σ_sub sc Σ q_a q − (dmin · d_a) Σ_sub m Σ q_a; kQ6K as its Q6_K products with Q8_K rows:
// per 256 (d · d_a) Σ_half sc Σ q_a q; kQ5K as kQ4K (llama.cpp's Q5_K products with Q8_K rows).
struct Quantized { double value = 0, magnitude = 0, exact_bound = 0; };
Quantized quantized_reference(WeightType type, const uint8_t* blocks, const float* row, int K, int j, float bias) {
  Quantized out;
  out.value = bias;
  out.magnitude = std::fabs(bias);
  for (int k0 = 0; has_q4k_meta(type) && k0 < K; k0 += kSuperRows) {
    double most = 0;
    for (int k = k0; k < k0 + kSuperRows; ++k) most = std::max(most, std::fabs(double(row[k])));
    const float d_a = static_cast<float>(most) / 127.0f;
    const uint8_t* super = blocks + block_offset(type, k0, j, K);
    const double d = q4k_float(super, 4 * (j % 8), type), dmin = q4k_float(super, 32 + 4 * (j % 8), type);
    for (int b = 0; b < kSuperBlocks; ++b) {
      const double sc = *q4k_meta(super, q4k_sc_byte(b, j % 8), type), m = *q4k_meta(super, q4k_m_byte(b, j % 8), type);
      for (int r = 0; r < kBlockRows; ++r) {
        const double q_a = d_a > 0 ? std::nearbyint(double(row[k0 + 32 * b + r] * (1.0f / d_a))) : 0.0;
        const int q = block_integer(type, super + b * block_bytes(type), r, j % 8);
        out.value += d * d_a * sc * q_a * q - dmin * d_a * m * q_a;
        out.magnitude += std::fabs(d * d_a * sc * q_a * q) + std::fabs(dmin * d_a * m * q_a);
        out.exact_bound += std::fabs(d * sc * q - dmin * m) * d_a / 2;
      }
    }
  }
  for (int k0 = 0; type == WeightType::kQ6K && k0 < K; k0 += kSuperRows) {
    double most = 0;
    for (int k = k0; k < k0 + kSuperRows; ++k) most = std::max(most, std::fabs(double(row[k])));
    const float d_a = static_cast<float>(most) / 127.0f;
    const uint8_t* super = blocks + block_offset(type, k0, j, K);
    const double d = q6k_float_d(super, j % 8);
    for (int r = 0; r < kSuperRows; ++r) {
      const int b = r / kBlockRows;
      const double sc = static_cast<int8_t>(super[b * block_bytes(type) + q6k_sc_byte(r % kBlockRows / 16, j % 8)]);
      const double q_a = d_a > 0 ? std::nearbyint(double(row[k0 + r] * (1.0f / d_a))) : 0.0;
      const int q = block_integer(type, super + b * block_bytes(type), r % kBlockRows, j % 8);
      out.value += d * d_a * sc * q_a * q;
      out.magnitude += std::fabs(d * d_a * sc * q_a * q);
      out.exact_bound += std::fabs(d * sc * q) * d_a / 2;
    }
  }
  for (int k0 = 0; !has_super_blocks(type) && k0 < K; k0 += kBlockRows) {
    double most = 0, a_size = 0;
    for (int k = k0; k < k0 + kBlockRows; ++k)
      most = std::max(most, std::fabs(double(row[k]))), a_size += std::fabs(double(row[k]));
    const float d = static_cast<float>(most) / 127.0f;
    const uint8_t* block = blocks + block_offset(type, k0, j, K);
    float min = 0;
    if (stores_mins(type)) std::memcpy(&min, block + 32 + 4 * (j % 8), 4);
    const int offset = type == WeightType::kQ40 ? 8 : 0;
    double q_sum = 0;
    for (int r = 0; r < kBlockRows; ++r) {
      float scale;
      std::memcpy(&scale, block + 4 * (j % 8), 4);
      const double q_a = d > 0 ? std::nearbyint(double(row[k0 + r] * (1.0f / d))) : 0.0;
      const int q = block_integer(type, block, r, j % 8);
      out.value += double(scale) * d * q_a * (q - offset);
      // kQ40's float32 sums are taken as kQ4's, with min 8 · scale: their terms' sizes bound its rounding
      out.magnitude += std::fabs(double(scale) * d * q_a * q) + offset * std::fabs(double(scale) * d * q_a);
      q_sum += q_a;
      out.exact_bound += std::fabs(double(scale) * (q - offset) - double(min)) * d / 2;
    }
    out.value -= double(min) * d * q_sum;
    out.magnitude += std::fabs(double(min)) * a_size;
  }
  return out;
}

// The depths a test takes for a block type: kQ4K's rounded up to whole super-blocks (256 rows), once each.
std::vector<int> depths_of(WeightType type, std::initializer_list<int> depths) {
  std::vector<int> out;
  for (const int K : depths) {
    const int k = (K + type_rows(type) - 1) / type_rows(type) * type_rows(type);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}
constexpr WeightType kBlockTypes[] = {WeightType::kQ8, WeightType::kQ4, WeightType::kQ5, WeightType::kQ4K, WeightType::kQ40,
                                      WeightType::kQ6K, WeightType::kQ5K};

// Blocks of 8-, 6-, 5- and 4-bit values (core/blocks.h): every row is quantized to 8 bits a block of 32 and
// its products summed as integers, as llama.cpp does — one row (decoding) and tiles of rows
// (prefill) alike: each row of a product gives the bits of that row alone, at 1 and 3 threads,
// within float32's rounding of a float64 transcription of that definition, and close to the exact
// product. With integer tiles off, 2 rows and more are widened into the float32 tiles' panels
// instead and give the bits of the same values stored as float32 (a deep K goes in blocks of 256 or
// 1024 rows).
TEST(Gemm, BlocksGiveTheQuantizedProductInTilesAndRowsAlike) {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const WeightType type : kBlockTypes)
    for (const int K : depths_of(type, {32, 288, 2080}))
      for (const int N : {8, 13, 203}) {
        const RandomBlocks m = random_blocks(type, K, N, rng);
        const MatrixRef in_blocks{m.blocks.data(), type, K, true}, widened{m.f32.data(), WeightType::kF32, K, true};
        for (const int n : {1, 2, 5, 37, 130}) {
          std::vector<float> a(static_cast<size_t>(n) * K), bias(N);
          for (float& x : a) x = normal(rng);
          for (float& x : bias) x = normal(rng);
          std::vector<float> want(static_cast<size_t>(n) * N), got(want.size()), got_threads(want.size()), by_row(want.size());
          set_thread_count(1);
          gemm(want.data(), N, a.data(), K, widened, bias.data(), n, K, N);
          gemm(got.data(), N, a.data(), K, in_blocks, bias.data(), n, K, N);
          for (int i = 0; i < n; ++i) gemm(by_row.data() + i * N, N, a.data() + i * K, K, in_blocks, bias.data(), 1, K, N);
          set_thread_count(3);
          gemm(got_threads.data(), N, a.data(), K, in_blocks, bias.data(), n, K, N);
          set_thread_count(1);
          const std::string where = weight_type_name(type) + " K " + std::to_string(K) + " N " + std::to_string(N) + " n " + std::to_string(n);
          EXPECT_EQ(0, std::memcmp(got.data(), got_threads.data(), got.size() * 4)) << where;
          EXPECT_EQ(0, std::memcmp(got.data(), by_row.data(), got.size() * 4)) << where;
          if (n > 1) {
            std::vector<float> widened_tiles(want.size());
            set_integer_block_tiles(false);
            gemm(widened_tiles.data(), N, a.data(), K, in_blocks, bias.data(), n, K, N);
            set_integer_block_tiles(true);
            EXPECT_EQ(0, std::memcmp(want.data(), widened_tiles.data(), want.size() * 4)) << where;
          }
          double worst_exact = 0;
          for (int i = 0; i < n; ++i)
            for (int j = 0; j < N; ++j) {
              const Quantized q = quantized_reference(type, m.blocks.data(), a.data() + i * K, K, j, bias[j]);
              const double g = got[i * N + j], w = want[i * N + j];
              ASSERT_LE(std::fabs(q.value - g), 1e-6 * q.magnitude + 1e-6) << where << " row " << i << " column " << j;
              EXPECT_LE(std::fabs(w - g), q.exact_bound + 1e-5 * std::max(1.0, std::fabs(w))) << where << " row " << i << " column " << j;
              worst_exact = std::max(worst_exact, std::fabs(w - g));
            }
          EXPECT_GT(worst_exact, 0.0) << where;  // it did quantize
        }
      }
}

// The integer dot-add (core/gemm_tuning.h) gives the products over blocks the same bits as the
// sums it replaces: decoding's row (one panel at a time, and 4 or 2 streams side by side at K 3072)
// and tiles of every height, for every block type. Skipped where the engine computes the dot-add
// wrongly (Node 20's baseline compiler: this runs under --no-liftoff, scripts/gemm-test-wasm.sh)
// or the build has none.
TEST(Gemm, DotAddGivesTheSameBits) {
  if (!set_integer_dot_add(true)) GTEST_SKIP() << "no exact integer dot-add here";
  set_integer_dot_add(false);
  std::mt19937 rng(71);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const WeightType type : kBlockTypes)
    for (const int K : depths_of(type, {32, 288, 3072}))
      for (const int N : {13, 1003}) {
        const RandomBlocks m = random_blocks(type, K, N, rng);
        const MatrixRef in_blocks{m.blocks.data(), type, K, true};
        for (const int n : {1, 2, 3, 5, 37}) {
          std::vector<float> a(static_cast<size_t>(n) * K), bias(N);
          for (float& x : a) x = normal(rng);
          for (float& x : bias) x = normal(rng);
          std::vector<float> without(static_cast<size_t>(n) * N), with(without.size());
          gemm(without.data(), N, a.data(), K, in_blocks, bias.data(), n, K, N);
          ASSERT_TRUE(set_integer_dot_add(true));
          gemm(with.data(), N, a.data(), K, in_blocks, bias.data(), n, K, N);
          set_integer_dot_add(false);
          EXPECT_EQ(0, std::memcmp(with.data(), without.data(), with.size() * 4))
              << weight_type_name(type) << " K " << K << " N " << N << " n " << n;
        }
      }
}

// Decoding's row over many panels reads them as 4 or 2 streams side by side and the rest a panel
// at a time (gemm_blocks.h, panels_side_by_side): every column must be the bits of its panel read
// alone, and the float64 transcription's value, at widths and depths that give each of those parts
// (4 streams then 2, for example, at K 3072 and 203 columns; and a last panel narrower than 8), on
// 1 and 3 threads.
TEST(Gemm, DecodingStreamsGiveEachPanelsBits) {
  std::mt19937 rng(59);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const WeightType type : kBlockTypes)
    for (const int K : depths_of(type, {32, 288, 768, 3072}))
      for (const int N : {203, 300, 637, 1003}) {
        const RandomBlocks m = random_blocks(type, K, N, rng);
        std::vector<float> a(K), bias(N), got(N), alone(N);
        for (float& x : a) x = normal(rng);
        for (float& x : bias) x = normal(rng);
        for (int j = 0; j < N; j += 8) {
          const MatrixRef panel{m.blocks.data() + block_offset(type, 0, j, K), type, K, true};
          gemm(alone.data() + j, N, a.data(), K, panel, bias.data() + j, 1, K, std::min(8, N - j));
        }
        const std::string where = weight_type_name(type) + " K " + std::to_string(K) + " N " + std::to_string(N);
        for (const int threads : {1, 3}) {
          set_thread_count(threads);
          gemm(got.data(), N, a.data(), K, MatrixRef{m.blocks.data(), type, K, true}, bias.data(), 1, K, N);
          set_thread_count(1);
          EXPECT_EQ(0, std::memcmp(got.data(), alone.data(), got.size() * 4)) << where << " threads " << threads;
        }
        // Chunks as threads take them (gemm_shared), each read as streams of its own from its first panel.
        for (const int chunk : {296, 504}) {
          std::vector<float> chunked(N);
          for (int c0 = 0; c0 < N; c0 += chunk)
            gemm_columns(chunked.data(), N, a.data(), K, MatrixRef{m.blocks.data(), type, K, true}, bias.data(), 1, K, c0,
                         std::min(N, c0 + chunk));
          EXPECT_EQ(0, std::memcmp(chunked.data(), alone.data(), chunked.size() * 4)) << where << " chunks of " << chunk;
        }
        for (int j = 0; j < N; ++j) {
          const Quantized q = quantized_reference(type, m.blocks.data(), a.data(), K, j, bias[j]);
          ASSERT_LE(std::fabs(q.value - got[j]), 1e-6 * q.magnitude + 1e-6) << where << " column " << j;
        }
      }
}

// The integer tiles at their edges: 1–7 rows (tiles of every height and a shorter last one), a
// last panel narrower than 8 columns, K from one block to several, every block type, no bias and
// a bias, a row stride wider than K; each element against the float64 transcription above, and
// each row the bits of that row alone (decoding).
TEST(Gemm, IntegerTilesAtTheirEdges) {
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const WeightType type : kBlockTypes)
    for (const int K : has_super_blocks(type) ? std::vector<int>{256, 512} : std::vector<int>{32, 64, 96, 160})
      for (const int N : {3, 8, 21}) {
        const RandomBlocks m = random_blocks(type, K, N, rng);
        const MatrixRef in_blocks{m.blocks.data(), type, K, true};
        for (int n = 1; n <= 7; ++n)
          for (const bool with_bias : {false, true}) {
            const int lda = K + 5;
            std::vector<float> a(static_cast<size_t>(n) * lda), bias(N, 0.0f);
            for (float& x : a) x = normal(rng);
            if (with_bias)
              for (float& x : bias) x = normal(rng);
            // Zero blocks and a block of one value: d = 0, and every q_a at ±127.
            if (K >= 64) std::fill(a.begin() + 32, a.begin() + 64, 0.0f);
            if (n >= 2 && K >= 64) std::fill(a.begin() + lda + 32, a.begin() + lda + 64, -3.5f);
            const int ldo = N + 3;
            std::vector<float> got(static_cast<size_t>(n) * ldo, 7.0f), by_row(N);
            gemm(got.data(), ldo, a.data(), lda, in_blocks, with_bias ? bias.data() : nullptr, n, K, N);
            const std::string where = weight_type_name(type) + " K " + std::to_string(K) + " N " + std::to_string(N) +
                                      " n " + std::to_string(n) + (with_bias ? " bias" : "");
            for (int i = 0; i < n; ++i) {
              gemm(by_row.data(), N, a.data() + i * lda, lda, in_blocks, with_bias ? bias.data() : nullptr, 1, K, N);
              EXPECT_EQ(0, std::memcmp(got.data() + i * ldo, by_row.data(), N * 4)) << where << " row " << i;
              for (int j = 0; j < N; ++j) {
                const Quantized q = quantized_reference(type, m.blocks.data(), a.data() + i * lda, K, j, bias[j]);
                ASSERT_LE(std::fabs(q.value - got[i * ldo + j]), 1e-6 * q.magnitude + 1e-6) << where << " row " << i << " column " << j;
              }
              for (int j = N; j < ldo; ++j) EXPECT_EQ(got[i * ldo + j], 7.0f) << where << ": past the columns";
            }
          }
      }
}

// A row's quantization (d = max |a| / 127, q_a = a / d rounded to nearest, ties to even) read back
// one q_a a column: column j's only value is a 1 at row j, with scale 1, so its product is d · q_a[j].
// Rows whose largest |a| is 127 (d = 1) or 63.5 (d = 0.5), positive or negative, hold ties (k + ½)
// and values either side of them; in decoding's row and in tiles, every block type that has a 1.
TEST(Gemm, RowsQuantizeToNearestTiesToEven) {
  constexpr int K = kBlockRows, N = kBlockRows;
  for (const WeightType type : {WeightType::kQ8, WeightType::kQ4, WeightType::kQ5, WeightType::kQ40}) {
    std::vector<uint8_t> blocks(static_cast<size_t>(block_matrix_bytes(type, K, N)), 0);
    for (int j = 0; j < N; ++j) {
      int q[kBlockRows] = {};
      if (type == WeightType::kQ40) std::fill(q, q + kBlockRows, 8);  // Q4_0's 0: q − 8
      q[j] += 1;
      write_block_column(type, blocks.data() + block_offset(type, 0, j, K), j % 8, 1.0f, 0.0f, q);
    }
    const MatrixRef in_blocks{blocks.data(), type, K, true};
    for (const float largest : {127.0f, -127.0f, 63.5f}) {
      const float d = std::fabs(largest) / 127.0f;
      std::vector<float> row(K);
      row[0] = largest;
      for (int k = 1; k < K; ++k) {
        const float half_steps = static_cast<float>((k % 2 ? 1 : -1) * (k / 2 * 2 + 1)) * 0.5f;  // ±0.5, ±1.5, …
        row[k] = d * (half_steps + (k % 3 == 0 ? 0.0f : k % 3 == 1 ? 1e-3f : -1e-3f));
      }
      row[K - 1] = -largest;
      const int n = 5;
      std::vector<float> a(static_cast<size_t>(n) * K), got(static_cast<size_t>(n) * N);
      for (int i = 0; i < n; ++i) std::copy(row.begin(), row.end(), a.begin() + i * K);
      gemm(got.data(), N, a.data(), K, in_blocks, nullptr, n, K, N);
      std::vector<float> by_row(N);
      gemm(by_row.data(), N, row.data(), K, in_blocks, nullptr, 1, K, N);
      for (int j = 0; j < N; ++j) {
        const double want = d * std::nearbyint(static_cast<double>(row[j] * (1.0f / d)));
        const std::string where = weight_type_name(type) + " largest " + std::to_string(largest) + " column " + std::to_string(j);
        EXPECT_EQ(by_row[j], want) << where << " (a = " << row[j] << ")";
        for (int i = 0; i < n; ++i) EXPECT_EQ(got[i * N + j], want) << where << " row " << i;
      }
    }
  }
}

// kQ40 is kQ4 with its mins computed (8 · scale, exact) instead of stored: Q4_0's blocks give the bits
// they gave as kQ4 blocks with those mins — decoding's row, tiles, widened panels, each element —
// so keeping 0.625 bytes a weight instead of 0.75 changes no result.
TEST(Gemm, Q40BlocksGiveTheBitsOfQ4BlocksWithMinsOfEightScales) {
  std::mt19937 rng(40);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int K : {32, 288, 3072}) {
    const int N = 29;
    std::vector<uint8_t> q40(static_cast<size_t>(block_matrix_bytes(WeightType::kQ40, K, N)), 0);
    std::vector<uint8_t> q4(static_cast<size_t>(block_matrix_bytes(WeightType::kQ4, K, N)), 0);
    for (int j = 0; j < N; ++j)
      for (int k0 = 0; k0 < K; k0 += kBlockRows) {
        int q[kBlockRows];
        for (int& v : q) v = static_cast<int>(rng() % 16);
        const float d = half_to_float(float_to_half(0.01f * normal(rng)));  // Q4_0's d is a float16
        write_block_column(WeightType::kQ40, q40.data() + block_offset(WeightType::kQ40, k0, j, K), j % 8, d, 0.0f, q);
        write_block_column(WeightType::kQ4, q4.data() + block_offset(WeightType::kQ4, k0, j, K), j % 8, d, 8.0f * d, q);
        for (int r = 0; r < kBlockRows; ++r)
          ASSERT_EQ(block_element(WeightType::kQ40, q40.data() + block_offset(WeightType::kQ40, k0, j, K), r, j % 8, 0),
                    d * static_cast<float>(q[r] - 8));  // Q4_0's definition (d · q and 8 · d are exact)
      }
    const MatrixRef as_q40{q40.data(), WeightType::kQ40, K, true}, as_q4{q4.data(), WeightType::kQ4, K, true};
    for (const int n : {1, 4, 7}) {
      std::vector<float> a(static_cast<size_t>(n) * K), bias(N), got(static_cast<size_t>(n) * N), want(got.size());
      for (float& x : a) x = normal(rng);
      for (float& x : bias) x = normal(rng);
      for (const bool tiles : {true, false}) {
        set_integer_block_tiles(tiles);
        gemm(got.data(), N, a.data(), K, as_q40, bias.data(), n, K, N);
        gemm(want.data(), N, a.data(), K, as_q4, bias.data(), n, K, N);
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << "K " << K << " n " << n << " tiles " << tiles;
      }
      set_integer_block_tiles(true);
    }
  }
}

// kQ8 blocks hold −127…127: a −128 (which no ggml quantizer writes) is stored as −127, so that
// relaxed SIMD's dot, which moves a sign onto the stored value, cannot overflow.
TEST(Gemm, EightBitBlocksStoreMinus128AsMinus127) {
  std::vector<uint8_t> block(static_cast<size_t>(block_bytes(WeightType::kQ8)), 0);
  int q[kBlockRows];
  for (int r = 0; r < kBlockRows; ++r) q[r] = r % 2 ? -128 : 127 - r;
  write_block_column(WeightType::kQ8, block.data(), 5, 0.5f, 0.0f, q);
  for (int r = 0; r < kBlockRows; ++r) EXPECT_EQ(block_integer(WeightType::kQ8, block.data(), r, 5), r % 2 ? -127 : 127 - r);
}

// Rows of one value (every q_a ±127; row 1 with its signs alternating) times m, K × N: tiles and rows
// alike, and the float64 transcription.
void expect_rows_of_one_value(WeightType type, const RandomBlocks& m, int K, int N) {
  const MatrixRef in_blocks{m.blocks.data(), type, K, true};
  for (const float value : {-3.5f, 2.0f}) {
    const int n = 5;
    std::vector<float> a(static_cast<size_t>(n) * K, value), got(static_cast<size_t>(n) * N), by_row(N);
    for (int k = 0; k < K; ++k) a[K + k] = k % 2 ? value : -value;
    gemm(got.data(), N, a.data(), K, in_blocks, nullptr, n, K, N);
    for (int i = 0; i < n; ++i) {
      gemm(by_row.data(), N, a.data() + i * K, K, in_blocks, nullptr, 1, K, N);
      const std::string where = weight_type_name(type) + " " + std::to_string(value) + " row " + std::to_string(i);
      EXPECT_EQ(0, std::memcmp(got.data() + i * N, by_row.data(), N * 4)) << where;
      for (int j = 0; j < N; ++j) {
        const Quantized q = quantized_reference(type, m.blocks.data(), a.data() + i * K, K, j, 0.0f);
        ASSERT_LE(std::fabs(q.value - got[i * N + j]), 1e-6 * q.magnitude) << where << " column " << j;
      }
    }
  }
}

// kQ5 blocks at their extremes: every value at an end of 0…31, or alternating, against rows of one
// value (every q_a ±127), where the relaxed build's int16 sums over a half block come closest to
// overflowing (4 · 2 · 127 · 31 = 31496); tiles and rows alike, and the float64 transcription.
// Values outside the range, which no Q5_K (Q5_1) block holds, are clamped when written.
TEST(Gemm, FiveBitBlocksAtTheirExtremes) {
  std::mt19937 rng(67);
  const int K = 96, N = 19;
  int (*const five[])(std::mt19937&, int) = {
      [](std::mt19937&, int) { return 31; }, [](std::mt19937&, int) { return 0; },
      [](std::mt19937&, int r) { return r % 2 ? 0 : 31; }, [](std::mt19937&, int r) { return r < 16 ? 0 : 31; }};
  for (auto* pattern : five) expect_rows_of_one_value(WeightType::kQ5, random_blocks(WeightType::kQ5, K, N, rng, pattern), K, N);
  std::vector<uint8_t> five_bits(static_cast<size_t>(block_bytes(WeightType::kQ5)), 0);
  int outside[kBlockRows];
  for (int r = 0; r < kBlockRows; ++r) outside[r] = r % 3 == 0 ? -5 : r % 3 == 1 ? 40 : r;
  write_block_column(WeightType::kQ5, five_bits.data(), 6, 0.5f, 0.25f, outside);
  for (int r = 0; r < kBlockRows; ++r) {
    const int want = r % 3 == 0 ? 0 : r % 3 == 1 ? 31 : r;
    EXPECT_EQ(block_integer(WeightType::kQ5, five_bits.data(), r, 6), want) << r;
    EXPECT_EQ(block_element(WeightType::kQ5, five_bits.data(), r, 6, 0), 0.5f * static_cast<float>(want) - 0.25f) << r;
  }
}

// kQ4K at its extremes: every q 15 with sc and m 63, or q alternating 0 and 15 by row or half, against
// rows of one value (every q_a ±127) and of alternating signs, where the relaxed build's int16 pairs
// over a sub-block come closest to overflowing (8 · 2 · 127 · 15 = 30480) and the int32 sums over a
// super-block are largest (8 · 63 · 32 · 127 · 15 ≈ 3.1e7, past float32's 2^24); tiles and rows
// alike, and the float64 transcription. And a row quantized once for 256, read back one q_a a
// column (d = 1, sc = 1, nothing else): d_a · q_a, rounded to nearest, ties to even.
TEST(Gemm, Q4KBlocksAtTheirExtremes) {
  std::mt19937 rng(73);
  const int K = 512, N = 19;
  int (*const patterns[])(std::mt19937&, int) = {
      [](std::mt19937&, int) { return 15; }, [](std::mt19937&, int r) { return r % 2 ? 0 : 15; },
      [](std::mt19937&, int r) { return r % 32 < 16 ? 0 : 15; }};
  for (auto* pattern : patterns) expect_rows_of_one_value(WeightType::kQ4K, random_blocks(WeightType::kQ4K, K, N, rng, pattern), K, N);
  constexpr int columns = 32;
  std::vector<uint8_t> blocks(static_cast<size_t>(block_matrix_bytes(WeightType::kQ4K, kSuperRows, columns)), 0);
  const auto row_of = [](int j) { return 8 * j + j % 8; };  // column j reads row 8j + j % 8: every sub-block
  for (int j = 0; j < columns; ++j) {
    int q[kSuperRows] = {}, sc[kSuperBlocks] = {}, mins[kSuperBlocks] = {};
    q[row_of(j)] = 1;
    sc[row_of(j) / kBlockRows] = 1;
    write_q4k_column(blocks.data() + block_offset(WeightType::kQ4K, 0, j, kSuperRows), j % 8, 1.0f, 0.0f, sc, mins, q);
  }
  const MatrixRef in_blocks{blocks.data(), WeightType::kQ4K, kSuperRows, true};
  for (const float largest : {127.0f, -127.0f, 63.5f}) {
    const float d = std::fabs(largest) / 127.0f;
    std::vector<float> row(kSuperRows);
    for (int k = 0; k < kSuperRows; ++k) {
      const float half_steps = static_cast<float>((k % 2 ? 1 : -1) * (k / 2 % 60 * 2 + 1)) * 0.5f;  // ±0.5, ±1.5, …
      row[k] = d * (half_steps + (k % 3 == 0 ? 0.0f : k % 3 == 1 ? 1e-3f : -1e-3f));
    }
    row[1] = largest, row[kSuperRows - 2] = -largest;
    const int n = 5;
    std::vector<float> a(static_cast<size_t>(n) * kSuperRows), got(static_cast<size_t>(n) * columns), by_row(columns);
    for (int i = 0; i < n; ++i) std::copy(row.begin(), row.end(), a.begin() + i * kSuperRows);
    gemm(got.data(), columns, a.data(), kSuperRows, in_blocks, nullptr, n, kSuperRows, columns);
    gemm(by_row.data(), columns, row.data(), kSuperRows, in_blocks, nullptr, 1, kSuperRows, columns);
    for (int j = 0; j < columns; ++j) {
      const double want = d * std::nearbyint(static_cast<double>(row[row_of(j)] * (1.0f / d)));
      const std::string where = "largest " + std::to_string(largest) + " column " + std::to_string(j);
      EXPECT_EQ(by_row[j], want) << where << " (a = " << row[row_of(j)] << ")";
      for (int i = 0; i < n; ++i) EXPECT_EQ(got[i * columns + j], want) << where << " row " << i;
    }
  }
}

// kQ6K at its extremes: every q at an end of −32…31, or alternating by row or half, with sc −128 and
// 127 by half, against rows of one value (every q_a ±127) and of alternating signs, where the relaxed
// build's int16 pairs over a half come closest to overflowing (8 · 32 · 127 = 32512, once less the
// row's offsets; 4 · 2 · 127 · 63 before, which wraps) and the int32 sums over a super-block are
// largest (16 · 128 · 16 · 32 · 127 ≈ 1.3e8, past float32's 2^24); tiles and rows alike, and the
// float64 transcription. Values outside −32…31 are clamped when written.
TEST(Gemm, Q6KBlocksAtTheirExtremes) {
  std::mt19937 rng(79);
  const int K = 512, N = 19;
  int (*const patterns[])(std::mt19937&, int) = {
      [](std::mt19937&, int) { return -32; }, [](std::mt19937&, int) { return 31; },
      [](std::mt19937&, int r) { return r % 2 ? -32 : 31; }, [](std::mt19937&, int r) { return r % 32 < 16 ? -32 : 31; }};
  for (auto* pattern : patterns) expect_rows_of_one_value(WeightType::kQ6K, random_blocks(WeightType::kQ6K, K, N, rng, pattern), K, N);
  std::vector<uint8_t> super(static_cast<size_t>(block_matrix_bytes(WeightType::kQ6K, kSuperRows, 8)), 0);
  int q[kSuperRows], sc[2 * kSuperBlocks];
  for (int r = 0; r < kSuperRows; ++r) q[r] = r % 3 == 0 ? -40 : r % 3 == 1 ? 40 : r % 64 - 32;
  for (int h = 0; h < 2 * kSuperBlocks; ++h) sc[h] = h - 8;
  write_q6k_column(super.data(), 5, 0.25f, sc, q);
  for (int r = 0; r < kSuperRows; ++r) {
    const int want = r % 3 == 0 ? -32 : r % 3 == 1 ? 31 : r % 64 - 32, b = r / kBlockRows;
    const uint8_t* block = super.data() + b * block_bytes(WeightType::kQ6K);
    EXPECT_EQ(block_integer(WeightType::kQ6K, block, r % kBlockRows, 5), want) << r;
    EXPECT_EQ(block_element(WeightType::kQ6K, block, r % kBlockRows, 5, b), (0.25f * static_cast<float>(r / 16 - 8)) * static_cast<float>(want)) << r;
  }
}

// kQ5K at its extremes: every q 31 with sc and m 63, or 16 (only the fifth bit), or alternating 0 and
// 31 by row or by half sub-block, against rows of one value (every q_a ±127) and of alternating signs,
// where the relaxed build's int16 pairs over half a sub-block come closest to overflowing
// (4 · 2 · 127 · 31 = 31496) and the int32 sums over a super-block are largest (8 · 63 · 32 · 127 · 31
// ≈ 6.4e7); tiles and rows alike, and the float64 transcription. And each column's fifth bit on its
// own, with values outside 0…31 clamped when written.
TEST(Gemm, Q5KBlocksAtTheirExtremes) {
  std::mt19937 rng(83);
  const int K = 512, N = 19;
  int (*const patterns[])(std::mt19937&, int) = {
      [](std::mt19937&, int) { return 31; }, [](std::mt19937&, int) { return 16; },
      [](std::mt19937&, int r) { return r % 2 ? 0 : 31; }, [](std::mt19937&, int r) { return r % 32 < 16 ? 0 : 31; }};
  for (auto* pattern : patterns) expect_rows_of_one_value(WeightType::kQ5K, random_blocks(WeightType::kQ5K, K, N, rng, pattern), K, N);
  std::vector<uint8_t> super(static_cast<size_t>(block_matrix_bytes(WeightType::kQ5K, kSuperRows, 8)), 0);
  const auto value_of = [](int r, int c) { return r % 5 == 0 ? (c % 2 ? 40 : -5) : (r * 7 + c * 3) % 32; };
  for (int c = 0; c < 8; ++c) {
    int q[kSuperRows], sc[kSuperBlocks], m[kSuperBlocks];
    for (int r = 0; r < kSuperRows; ++r) q[r] = value_of(r, c);
    for (int j = 0; j < kSuperBlocks; ++j) sc[j] = j + c, m[j] = 63 - j;
    write_q4k_column(super.data(), c, 0.25f, 0.5f, sc, m, q, WeightType::kQ5K);
  }
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < kSuperRows; ++r) {
      const int v = value_of(r, c), want = v < 0 ? 0 : v > 31 ? 31 : v, b = r / kBlockRows;
      const uint8_t* block = super.data() + b * block_bytes(WeightType::kQ5K);
      EXPECT_EQ(block_integer(WeightType::kQ5K, block, r % kBlockRows, c), want) << r << " " << c;
      EXPECT_EQ(block_element(WeightType::kQ5K, block, r % kBlockRows, c, b),
                (0.25f * static_cast<float>(b + c)) * static_cast<float>(want) - 0.5f * static_cast<float>(63 - b))
          << r << " " << c;
    }
}

TEST(Gemm, SharedProductsGiveTheBitsOfEachAlone) {
  // gemm_shared (attention's Q, K and V from one packing of x): each output as gemm gives it, at
  // 1, 3 and 7 threads, for panels alike (one packing) and not alike (bf16 beside float32 panels),
  // at 37 rows (packed) and 1 row (decoding: strips).
  std::mt19937 rng(5);
  for (const int n : {37, 1}) {
    const int K = 300;
    const int widths[3] = {203, 64, 64};
    std::vector<RandomProduct> products;
    products.reserve(3);
    for (int i = 0; i < 3; ++i) products.push_back(random_product(WeightType::kBF16, n, K, widths[i], rng));
    const std::vector<float>& a = products[0].a;
    for (const bool alike : {true, false}) {
      std::vector<std::vector<float>> alone(3), shared(3);
      std::vector<GemmOutput> outputs;
      for (int i = 0; i < 3; ++i) {
        const MatrixRef& b = alike || i != 1 ? products[i].in_panels.ref : products[i].b.ref;
        alone[i].resize(static_cast<size_t>(n) * widths[i]);
        shared[i].resize(alone[i].size());
        set_thread_count(1);
        gemm(alone[i].data(), widths[i], a.data(), K, b, products[i].bias.data(), n, K, widths[i]);
        outputs.push_back({shared[i].data(), widths[i], b, products[i].bias.data(), widths[i]});
      }
      for (const int threads : {1, 3, 7}) {
        set_thread_count(threads);
        for (auto& out : shared) std::fill(out.begin(), out.end(), -1.0f);
        gemm_shared(a.data(), K, n, K, outputs.data(), 3);
        for (int i = 0; i < 3; ++i)
          EXPECT_EQ(0, std::memcmp(alone[i].data(), shared[i].data(), alone[i].size() * 4))
              << "n " << n << ", product " << i << ", alike " << alike << ", threads " << threads;
      }
      set_thread_count(1);
    }
  }
}

// An epilogue that maps each element of its block to 2·x + 1.
void doubling(void*, float* block, int64_t ldo, int rows, int c0, int c1) {
  for (int r = 0; r < rows; ++r)
    for (int j = c0; j < c1; ++j) block[r * ldo + j] = 2.0f * block[r * ldo + j] + 1.0f;
}

TEST(Gemm, EpiloguesMeetEveryElementOnceAfterItsProduct) {
  // gemm with an epilogue = gemm, then the epilogue over the whole output, bit for bit: every
  // element met exactly once (2x + 1 twice or never would differ), at 1, 3 and 7 threads, for a
  // row (decoding: strips), packed rows, and a last panel narrower than 8. Then `together`: the
  // second output's epilogue reads the first's block, as a gated MLP's act(gate) ⊙ up does.
  std::mt19937 rng(11);
  for (const int n : {1, 37}) {
    const int K = 300, N = 203;
    const RandomProduct p = random_product(WeightType::kF32, n, K, N, rng);
    const MatrixRef& b = p.in_panels.ref;
    std::vector<float> expected(static_cast<size_t>(n) * N), got(expected.size());
    set_thread_count(1);
    gemm(expected.data(), N, p.a.data(), K, b, p.bias.data(), n, K, N);
    for (float& x : expected) x = 2.0f * x + 1.0f;
    for (const int threads : {1, 3, 7}) {
      set_thread_count(threads);
      std::fill(got.begin(), got.end(), -1.0f);
      gemm(got.data(), N, p.a.data(), K, b, p.bias.data(), n, K, N, GemmEpilogue{&doubling, nullptr});
      EXPECT_EQ(0, std::memcmp(expected.data(), got.data(), got.size() * 4)) << "n " << n << ", threads " << threads;
    }
    // together: gate and up (the same a, N and type); up's epilogue makes up = gate − up.
    const RandomProduct q = random_product(WeightType::kF32, n, K, N, rng);
    std::vector<float> gate_alone(expected.size()), up_alone(expected.size());
    set_thread_count(1);
    gemm(gate_alone.data(), N, p.a.data(), K, b, p.bias.data(), n, K, N);
    gemm(up_alone.data(), N, p.a.data(), K, q.in_panels.ref, q.bias.data(), n, K, N);
    for (size_t i = 0; i < up_alone.size(); ++i) up_alone[i] = gate_alone[i] - up_alone[i];
    std::vector<float> gate(expected.size()), up(expected.size());
    struct Pair { const float* gate; const float* up; } pair{gate.data(), up.data()};
    const GemmEpilogue difference{[](void* c, float* block, int64_t ldo, int rows, int c0, int c1) {
                                    const Pair& pr = *static_cast<const Pair*>(c);
                                    const float* g = pr.gate + (block - pr.up);
                                    for (int r = 0; r < rows; ++r)
                                      for (int j = c0; j < c1; ++j) block[r * ldo + j] = g[r * ldo + j] - block[r * ldo + j];
                                  },
                                  &pair};
    const GemmOutput outputs[2] = {{gate.data(), N, b, p.bias.data(), N}, {up.data(), N, q.in_panels.ref, q.bias.data(), N, difference}};
    for (const int threads : {1, 3, 7}) {
      set_thread_count(threads);
      std::fill(gate.begin(), gate.end(), -1.0f);
      std::fill(up.begin(), up.end(), -1.0f);
      gemm_shared(p.a.data(), K, n, K, outputs, 2, /*together=*/true);
      EXPECT_EQ(0, std::memcmp(gate_alone.data(), gate.data(), gate.size() * 4)) << "gate, n " << n << ", threads " << threads;
      EXPECT_EQ(0, std::memcmp(up_alone.data(), up.data(), up.size() * 4)) << "up, n " << n << ", threads " << threads;
    }
    set_thread_count(1);
  }
}

TEST(Gemm, Float32PanelsReadInPlaceGiveTheSameBitsInBothLoopOrders) {
  // A checkpoint's float32 weights are stored as panels and read in place, the next block touched
  // ahead (B over 512 KB, as here: 290 × 912 floats, 1 MB); a row-major matrix is copied a panel
  // at a time. 41 rows stream B once (all of `a` packed), 300 rows go by k blocks: the same sums in
  // the same order either way.
  std::mt19937 rng(12);
  const int K = 290, N = 907;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> b(static_cast<size_t>(K) * N), bias(N);
  for (float& x : b) x = normal(rng);
  for (float& x : bias) x = normal(rng);
  // Exactly the panels' size, so that a touch past the end is caught under AddressSanitizer.
  std::vector<float> packed(static_cast<size_t>(K) * ((N + 7) / 8 * 8), std::nanf(""));
  pack_panels(packed.data(), b.data(), N, K, N);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < (N + 7) / 8 * 8; ++j) ASSERT_EQ(packed[panel_index(k, j, K)], j < N ? b[k * N + j] : 0.0f);
  set_thread_count(1);
  for (int n : {41, 300}) {
    std::vector<float> a(static_cast<size_t>(n) * K);
    for (float& x : a) x = normal(rng);
    std::vector<float> row_major(static_cast<size_t>(n) * N), in_place(row_major.size()), split(row_major.size()),
        threaded(row_major.size());
    const MatrixRef panels{packed.data(), WeightType::kF32, K, true};
    gemm(row_major.data(), N, a.data(), K, f32_matrix(b.data(), N), bias.data(), n, K, N);
    gemm(in_place.data(), N, a.data(), K, panels, bias.data(), n, K, N);
    for (int c0 = 0; c0 < N; c0 += 16)  // a few panels at a time
      gemm_columns(split.data(), N, a.data(), K, panels, bias.data(), n, K, c0, std::min(N, c0 + 16));
    set_thread_count(3);  // split as threads split it, the lookahead stopping at each share's end
    gemm(threaded.data(), N, a.data(), K, panels, bias.data(), n, K, N);
    set_thread_count(1);
    EXPECT_EQ(0, std::memcmp(row_major.data(), in_place.data(), row_major.size() * 4)) << n << " rows";
    EXPECT_EQ(0, std::memcmp(row_major.data(), split.data(), row_major.size() * 4)) << n << " rows";
    EXPECT_EQ(0, std::memcmp(row_major.data(), threaded.data(), row_major.size() * 4)) << n << " rows";
  }
}

TEST(Gemm, DeepBlocksOfManyRowsMatchFloat64AndTheRowMajorOrder) {
  // Over panels, a product of many rows goes up to 1024 steps of k a call (depth_block): K = 2100
  // is two such blocks and a short one, 130 rows two blocks of rows. Within the float64 bound, and
  // the same bits as the same matrix row-major (256 steps a call) and as on 3 threads: the same
  // sums in the same order, whatever the blocking.
  std::mt19937 rng(21);
  const int n = 130, K = 2100, N = 44;
  for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
    check_product(type, n, K, N, true, true, rng);
    const RandomProduct p = random_product(type, n, K, N, rng);
    const Operand &b = p.b, &in_panels = p.in_panels;
    const std::vector<float> &a = p.a, &bias = p.bias;
    std::vector<float> row_major(static_cast<size_t>(n) * N), deep(row_major.size()), threaded(row_major.size());
    set_thread_count(1);
    gemm(row_major.data(), N, a.data(), K, b.ref, bias.data(), n, K, N);
    gemm(deep.data(), N, a.data(), K, in_panels.ref, bias.data(), n, K, N);
    set_thread_count(3);
    gemm(threaded.data(), N, a.data(), K, in_panels.ref, bias.data(), n, K, N);
    set_thread_count(1);
    EXPECT_EQ(0, std::memcmp(row_major.data(), deep.data(), row_major.size() * 4)) << static_cast<int>(type);
    EXPECT_EQ(0, std::memcmp(row_major.data(), threaded.data(), row_major.size() * 4)) << static_cast<int>(type);
  }
}

TEST(Gemm, PackPanelsTransposedScalesEveryElementIntoPlace) {
  // A head's keys (cols rows of K values, ld apart) become scale · Kᵀ in panels: element (k, j) of
  // the panels is scale · src[j · ld + k], columns past `cols` are 0. Whole panels go by 4 × 4
  // transposes, 4 steps of k at a time; odd sizes exercise the edges of both.
  std::mt19937 rng(14);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [cols, K] : std::vector<std::pair<int, int>>{{21, 67}, {64, 64}, {8, 3}, {5, 9}, {1, 1}}) {
    const int ld = K + 3;
    std::vector<float> src(static_cast<size_t>(cols) * ld);
    for (float& x : src) x = normal(rng);
    const float scale = 0.125f + normal(rng) * 0.01f;
    std::vector<float> packed(static_cast<size_t>(K) * ((cols + 7) / 8 * 8), std::nanf(""));
    pack_panels_transposed(packed.data(), src.data(), ld, cols, K, scale);
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < (cols + 7) / 8 * 8; ++j)
        ASSERT_EQ(packed[panel_index(k, j, K)], j < cols ? scale * src[j * ld + k] : 0.0f) << cols << " × " << K;
  }
}

TEST(Gemm, PackColumnsTransposedAddsColumnsAsTheWholePackingHasThem) {
  // A key/value cache packs its keys as they come (core/attention.h, KvCache::kt): the first keys
  // whole, then a few at a time. Every step's columns are those of packing every key at once,
  // bit for bit, and the columns past them are left as they were (here a longer run's).
  std::mt19937 rng(15);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int K = 64, ld = 67, capacity = 40;
  std::vector<float> src(static_cast<size_t>(capacity) * ld), other(src.size());
  for (float& x : src) x = normal(rng);
  for (float& x : other) x = normal(rng);
  const float scale = 0.125f;
  std::vector<float> cache(static_cast<size_t>(K) * capacity, 7.0f), whole(cache.size()), earlier(cache.size());
  pack_panels_transposed(cache.data(), other.data(), ld, capacity, K, scale);  // a longer earlier line of keys
  pack_panels_transposed(earlier.data(), other.data(), ld, capacity, K, scale);
  int packed = 5;  // truncated to 5 keys, then steps of 1, 3 and 1 key
  pack_panels_transposed(cache.data(), src.data(), ld, packed, K, scale);
  for (const int step : {1, 3, 1, 1, 8, 2}) {
    pack_columns_transposed(cache.data(), src.data(), ld, packed, packed + step, K, scale);
    packed += step;
    std::fill(whole.begin(), whole.end(), std::nanf(""));
    pack_panels_transposed(whole.data(), src.data(), ld, packed, K, scale);
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < capacity; ++j) {
        const size_t at = static_cast<size_t>(panel_index(k, j, K));
        if (j < packed) ASSERT_EQ(std::memcmp(&cache[at], &whole[at], 4), 0) << k << ", " << j;
        else if (j >= 8) ASSERT_EQ(std::memcmp(&cache[at], &earlier[at], 4), 0) << "column " << j << " was touched";
      }
  }
}

TEST(Gemm, TheTopRowsOfDeeperPanelsGiveTheSameBits) {
  // A causal block of queries multiplies its weights by the top rows of a head's values, stored as
  // panels of all n_k rows (core/attention.cpp). Here B is over 512 KB, so the next block is touched
  // ahead: past the last of a panel's K rows it must go on at the next panel's top, and stop at
  // the end of the panels (sized exactly: a touch beyond is caught under AddressSanitizer). The
  // rows below K are NaN, so reading one would show in the result.
  std::mt19937 rng(13);
  const int depth = 331, N = 907;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> b(static_cast<size_t>(depth) * N);
  for (float& x : b) x = normal(rng);
  std::vector<float> packed(static_cast<size_t>(depth) * ((N + 7) / 8 * 8));
  pack_panels(packed.data(), b.data(), N, depth, N);
  for (int K : {290, 64, 1}) {
    std::vector<float> poisoned = packed;
    for (int j = 0; j < (N + 7) / 8 * 8; ++j)
      for (int k = K; k < depth; ++k) poisoned[panel_index(k, j, depth)] = std::nanf("");
    const MatrixRef panels{poisoned.data(), WeightType::kF32, depth, true};
    for (int n : {1, 3, 41, 300}) {
      std::vector<float> a(static_cast<size_t>(n) * K);
      for (float& x : a) x = normal(rng);
      std::vector<float> row_major(static_cast<size_t>(n) * N), top(row_major.size()), threaded(row_major.size());
      set_thread_count(1);
      gemm(row_major.data(), N, a.data(), K, f32_matrix(b.data(), N), nullptr, n, K, N);
      gemm(top.data(), N, a.data(), K, panels, nullptr, n, K, N);
      set_thread_count(3);
      gemm(threaded.data(), N, a.data(), K, panels, nullptr, n, K, N);
      set_thread_count(1);
      if (n != 1) {  // tiles and strips sum in the same order as the row-major path
        EXPECT_EQ(0, std::memcmp(row_major.data(), top.data(), row_major.size() * 4)) << n << " rows, K " << K;
      } else {  // one row over short panels sums even and odd steps apart (row_stream): within rounding
        for (size_t e = 0; e < top.size(); ++e) ASSERT_NEAR(top[e], row_major[e], 1e-4f * (1 + std::fabs(row_major[e])));
      }
      EXPECT_EQ(0, std::memcmp(top.data(), threaded.data(), top.size() * 4)) << n << " rows, K " << K;
    }
  }
}

TEST(Gemm, TouchingAheadOrNotGivesTheSameBitsAndTheTuningPicksOne) {
  // Products of 11–17 rows over a B past 512 KB touch ahead or not as tune_touching() found faster
  // (core/gemm_tuning.h): only the time may change. 768 × 1000 floats (3 MB), packed.
  std::mt19937 rng(5);
  const int K = 768, N = 1000;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> b(static_cast<size_t>(K) * N), packed(static_cast<size_t>(K) * ((N + 7) / 8 * 8));
  for (float& x : b) x = normal(rng);
  pack_panels(packed.data(), b.data(), N, K, N);
  const MatrixRef panels{packed.data(), WeightType::kF32, K, true};
  set_thread_count(1);
  for (int n : {11, 16, 17, 18}) {
    std::vector<float> a(static_cast<size_t>(n) * K), touching(static_cast<size_t>(n) * N), not_touching(touching.size());
    for (float& x : a) x = normal(rng);
    set_touch_from_rows(0);
    gemm(touching.data(), N, a.data(), K, panels, nullptr, n, K, N);
    set_touch_from_rows(18);
    gemm(not_touching.data(), N, a.data(), K, panels, nullptr, n, K, N);
    EXPECT_EQ(0, std::memcmp(touching.data(), not_touching.data(), touching.size() * 4)) << n << " rows";
  }
  set_touch_from_rows(0);
  EXPECT_FALSE(touch_tuning().tuned);
  // Blocks run integer tiles, which never touch: nothing of them is timed, and nothing is decided.
  // Widened into float32 tiles they would be.
  const RandomBlocks q8 = random_blocks(WeightType::kQ8, 256, 64, rng);
  const MatrixRef blocks{q8.blocks.data(), WeightType::kQ8, 256, true};
  EXPECT_FALSE(touching_matters(blocks));
  EXPECT_TRUE(touching_matters(panels));
  set_integer_block_tiles(false);
  EXPECT_TRUE(touching_matters(blocks));
  set_integer_block_tiles(true);
  set_touch_from_rows(7);
  const TouchTuning none = tune_touching({{blocks, 256, 64}, {blocks, 256, 64}});
  EXPECT_FALSE(none.tuned);
  EXPECT_FALSE(touch_tuning().tuned);
  EXPECT_EQ(touch_from_rows(), 7);
  set_touch_from_rows(0);
  const TouchTuning t = tune_touching({{panels, K, N}, {blocks, 256, 64}, {panels, K, N}});
  EXPECT_TRUE(t.tuned);
  EXPECT_GT(t.ms_with, 0.0);
  EXPECT_GT(t.ms_without, 0.0);
  EXPECT_TRUE(t.from_rows == 0 || t.from_rows == 18) << t.from_rows;
  EXPECT_EQ(touch_from_rows(), t.from_rows);
  EXPECT_EQ(touch_tuning().from_rows, t.from_rows);
  set_touch_from_rows(0);
}

}  // namespace
}  // namespace mh

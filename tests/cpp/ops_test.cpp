// The pretrained forward pass's operations that are not checked whole against transformers'
// outputs: here, the factor value norms go through (nn/ops.h), against norms computed directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/half.h"
#include "interpret/value_norms.h"
#include "core/parallel.h"
#include "nn/families/family.h"
#include "nn/ops.h"
#include "nn/transformer.h"

namespace {

// A rows × cols tensor holding values (row-major), stored as asked: float32, bf16 or fp16, row-major or
// in gemm's panels.
mh::Tensor make_tensor(const std::vector<float>& values, int64_t rows, int64_t cols, mh::WeightType type, bool panels) {
  mh::Tensor t;
  t.type = type;
  t.rows = rows;
  t.cols = cols;
  t.panels = panels;
  t.bytes.assign(static_cast<size_t>(t.stored_elements() * mh::weight_type_bytes(type)), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float value = values[static_cast<size_t>(r * cols + c)];
      if (type == mh::WeightType::kF32) {
        std::memcpy(t.bytes.data() + t.index(r, c) * 4, &value, 4);
      } else {
        const uint16_t bits = type == mh::WeightType::kBF16 ? mh::float_to_bf16(value) : mh::float_to_half(value);
        std::memcpy(t.bytes.data() + t.index(r, c) * 2, &bits, 2);
      }
    }
  return t;
}

// ‖v · rows [first, first + rows) of w‖ in float64, from the elements as stored.
double direct_norm(const std::vector<double>& v, const mh::Tensor& w, int64_t first) {
  double sum = 0;
  for (int64_t c = 0; c < w.cols; ++c) {
    double moved = 0;
    for (size_t k = 0; k < v.size(); ++k) moved += v[k] * w.at(first + static_cast<int64_t>(k), c);
    sum += moved * moved;
  }
  return std::sqrt(sum);
}

// ‖v · factor‖ in float64, factor in gemm's panels.
double factor_norm(const std::vector<double>& v, const std::vector<float>& factor) {
  const size_t rows = v.size();
  double sum = 0;
  for (size_t c = 0; c < rows; ++c) {
    double moved = 0;
    for (size_t k = 0; k < rows; ++k) moved += v[k] * factor[mh::panel_index(int64_t(k), int64_t(c), int64_t(rows))];
    sum += moved * moved;
  }
  return std::sqrt(sum);
}

// By hand: rows (3, 4) and (6, 8) span one direction. v = (1, 0) moves to (3, 4), norm 5;
// (0, 1) to (6, 8), norm 10; (2, −1) to 0. The Gram matrix [[25, 50], [50, 100]] is singular.
TEST(Ops, NormPreservingFactorOfARankOneMatrix) {
  const mh::Tensor w = make_tensor({3, 4, 6, 8}, 2, 2, mh::WeightType::kF32, false);
  std::vector<float> factor(2 * 8);
  mh::norm_preserving_factor(factor.data(), w, 0, 2);
  for (float value : factor) ASSERT_TRUE(std::isfinite(value));
  EXPECT_NEAR(factor_norm({1, 0}, factor), 5.0, 1e-6);
  EXPECT_NEAR(factor_norm({0, 1}, factor), 10.0, 1e-6);
  EXPECT_NEAR(factor_norm({2, -1}, factor), 0.0, 1e-5);
  EXPECT_NEAR(factor_norm({1, 1}, factor), 15.0, 1e-5);
}

// Random heads of W_O (the rows of one head in a larger matrix), with zero and repeated rows, more
// rows than columns (rank below rows), both layouts and bf16: ‖v · factor‖ = ‖v · w_rows‖.
TEST(Ops, NormPreservingFactorKeepsEveryNorm) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Case {
    int64_t total_rows, cols, first;
    int rows;
  };
  for (const Case& shape : {Case{48, 40, 16, 16}, Case{12, 5, 4, 8}, Case{64, 37, 0, 64}, Case{9, 3, 0, 9}}) {
    std::vector<float> values(static_cast<size_t>(shape.total_rows * shape.cols));
    for (float& value : values) value = normal(gen) * 0.05f;
    // A zero row and a row repeated inside the head.
    std::fill_n(values.begin() + (shape.first + 1) * shape.cols, shape.cols, 0.0f);
    std::copy_n(values.begin() + shape.first * shape.cols, shape.cols, values.begin() + (shape.first + 2) * shape.cols);
    for (mh::WeightType type : {mh::WeightType::kF32, mh::WeightType::kBF16})
      for (bool panels : {false, true}) {
        const mh::Tensor w = make_tensor(values, shape.total_rows, shape.cols, type, panels);
        std::vector<float> factor(static_cast<size_t>(shape.rows) * ((shape.rows + 7) / 8 * 8));
        mh::norm_preserving_factor(factor.data(), w, shape.first, shape.rows);
        double worst = 0, scale = 0;
        for (int trial = 0; trial < 20; ++trial) {
          std::vector<double> v(static_cast<size_t>(shape.rows));
          for (double& x : v) x = normal(gen);
          // Some v lie in the null space: (1, 0, −1) on the repeated rows, the zero row alone.
          if (trial == 0) std::fill(v.begin(), v.end(), 0.0), v[0] = 1, v[2] = -1;
          if (trial == 1) std::fill(v.begin(), v.end(), 0.0), v[1] = 3;
          const double want = direct_norm(v, w, shape.first), got = factor_norm(v, factor);
          if (trial < 2) EXPECT_LT(got, 1e-5) << "null-space vector " << trial;
          double v_norm = 0;
          for (double x : v) v_norm += x * x;
          scale = std::max(scale, std::sqrt(v_norm) * 0.05 * std::sqrt(double(shape.cols)));
          worst = std::max(worst, std::fabs(got - want));
        }
        EXPECT_LT(worst, 1e-6 * scale) << shape.rows << " × " << shape.cols << " panels " << panels;
      }
  }
}

// The MLP's fused forms against their steps, bit for bit: matmul_activated = matmul, then
// activate; gated_matmul = both products, act(gate), and the product (silu_times for SiLU), for
// every activation, at 1, 3 and 7 threads, for one row (decoding) and 37, with a width that is a
// multiple of 4 (fused) and one that is not (the steps).
TEST(Ops, FusedActivationsGiveTheBitsOfTheirSteps) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int width : {200, 203})
    for (const int n : {1, 37}) {
      const int d = 96;
      std::vector<float> wg(static_cast<size_t>(d) * width), wu(wg.size()), bias(width), in(static_cast<size_t>(n) * d);
      for (auto* v : {&wg, &wu, &bias, &in})
        for (float& x : *v) x = normal(gen);
      const mh::Tensor w_gate = make_tensor(wg, d, width, mh::WeightType::kBF16, true);
      const mh::Tensor w_up = make_tensor(wu, d, width, mh::WeightType::kBF16, true);
      const size_t count = static_cast<size_t>(n) * width;
      for (const mh::Activation a : {mh::Activation::kGeluTanh, mh::Activation::kGeluErf, mh::Activation::kRelu, mh::Activation::kSilu}) {
        mh::set_thread_count(1);
        std::vector<float> plain(count), gate(count), gated(count);
        mh::matmul(plain.data(), in.data(), w_up, bias.data(), n);
        mh::matmul(gate.data(), in.data(), w_gate, nullptr, n);
        mh::matmul(gated.data(), in.data(), w_up, bias.data(), n);
        mh::activate(a, plain.data(), static_cast<int64_t>(count));
        if (a == mh::Activation::kSilu) {
          mh::silu_times(gated.data(), gate.data(), gated.data(), static_cast<int64_t>(count));
        } else {
          mh::activate(a, gate.data(), static_cast<int64_t>(count));
          mh::multiply_in_place(gated.data(), gate.data(), static_cast<int64_t>(count));
        }
        for (const int threads : {1, 3, 7}) {
          mh::set_thread_count(threads);
          std::vector<float> fused(count, -1.0f), up(count, -1.0f), scratch(count, -1.0f);
          mh::matmul_activated(fused.data(), in.data(), w_up, bias.data(), n, a);
          mh::gated_matmul(up.data(), scratch.data(), in.data(), w_gate, nullptr, w_up, bias.data(), n, a);
          EXPECT_EQ(0, std::memcmp(plain.data(), fused.data(), count * 4)) << "width " << width << ", n " << n << ", threads " << threads;
          EXPECT_EQ(0, std::memcmp(gated.data(), up.data(), count * 4)) << "gated, width " << width << ", n " << n << ", threads " << threads;
        }
        mh::set_thread_count(1);
      }
    }
}

// known_finite (which lets fp16 products skip watching for inf and NaN) must see one anywhere:
// the first or last stored element, in each type's bit pattern, and no false alarm on the largest
// finite values.
TEST(Tensor, FindFiniteSeesEveryInfAndNaN) {
  struct Case { mh::WeightType type; uint32_t largest, inf, nan; };
  const Case cases[] = {{mh::WeightType::kF16, 0x7bffu, 0x7c00u, 0x7e01u},
                        {mh::WeightType::kBF16, 0x7f7fu, 0x7f80u, 0x7fc1u},
                        {mh::WeightType::kF32, 0x7f7fffffu, 0x7f800000u, 0x7fc00001u}};
  for (const Case& c : cases) {
    const int size = mh::weight_type_bytes(c.type);
    mh::Tensor t = make_tensor(std::vector<float>(5 * 7, 0.5f), 5, 7, c.type, true);
    auto put = [&](int64_t at, uint32_t bits) {
      const uint32_t negative = bits | (size == 2 ? 0x8000u : 0x80000000u);
      std::memcpy(t.bytes.data() + at * size, at % 2 ? &negative : &bits, static_cast<size_t>(size));
    };
    put(0, c.largest);
    put(t.stored_elements() - 1, c.largest);
    t.find_finite();
    EXPECT_TRUE(t.known_finite) << int(c.type);
    for (int64_t at : {int64_t{0}, int64_t{3}, t.stored_elements() - 1})
      for (uint32_t special : {c.inf, c.nan}) {
        const mh::TensorBytes kept = t.bytes;
        put(at, special);
        t.find_finite();
        EXPECT_FALSE(t.known_finite) << int(c.type) << " at " << at << " " << std::hex << special;
        t.bytes = kept;
      }
  }
}

}  // namespace

// A matrix kept in blocks (core/blocks.h) reads as the float32 matrix of its values everywhere a
// tensor is read element- or row-wise: an element (a tied embedding's lookup), rows widened (value
// norms, contributions), rows zeroed (a head switched off), and the panels a product reads.
// kQ4K's, kQ5K's and kQ6K's values are Q4_K's and Q5_K's (d · sc) · q − dmin · m and Q6_K's (d · sc) · q.
TEST(Tensor, BlocksReadAsTheirValues) {
  std::mt19937 rng(5);
  for (const mh::WeightType type : {mh::WeightType::kQ8, mh::WeightType::kQ4, mh::WeightType::kQ40, mh::WeightType::kQ4K,
                                    mh::WeightType::kQ6K, mh::WeightType::kQ5K}) {
    const int64_t rows = mh::has_super_blocks(type) ? 512 : 96, cols = 21;
    mh::Tensor t;
    t.type = type;
    t.rows = rows;
    t.cols = cols;
    t.panels = true;
    t.bytes.assign(static_cast<size_t>(t.stored_bytes()), 0);
    std::vector<float> values(static_cast<size_t>(rows * cols));
    const auto value_at = [&](int64_t k, int64_t c) -> float& { return values[static_cast<size_t>(k * cols + c)]; };
    for (int64_t c = 0; c < cols; ++c) {
      const int column = static_cast<int>(c % 8);
      if (mh::has_q4k_meta(type))
        for (int64_t k0 = 0; k0 < rows; k0 += mh::kSuperRows) {
          int q[mh::kSuperRows], sc[mh::kSuperBlocks], m[mh::kSuperBlocks];
          for (int& v : q) v = static_cast<int>(rng() % (type == mh::WeightType::kQ5K ? 32 : 16));
          for (int j = 0; j < mh::kSuperBlocks; ++j) sc[j] = static_cast<int>(rng() % 64), m[j] = static_cast<int>(rng() % 64);
          const float d = 0.001f * static_cast<float>(rng() % 100 + 1), dmin = 0.002f * static_cast<float>(rng() % 100);
          uint8_t* super = t.bytes.data() + mh::block_offset(type, k0, c, rows);
          mh::write_q4k_column(super, column, d, dmin, sc, m, q, type);
          for (int r = 0; r < mh::kSuperRows; ++r)
            value_at(k0 + r, c) = (d * static_cast<float>(sc[r / 32])) * static_cast<float>(q[r]) - dmin * static_cast<float>(m[r / 32]);
        }
      else if (type == mh::WeightType::kQ6K)
        for (int64_t k0 = 0; k0 < rows; k0 += mh::kSuperRows) {
          int q[mh::kSuperRows], sc[2 * mh::kSuperBlocks];
          for (int& v : q) v = static_cast<int>(rng() % 64) - 32;
          for (int& v : sc) v = static_cast<int>(rng() % 256) - 128;
          const float d = 0.0001f * static_cast<float>(rng() % 100 + 1);
          mh::write_q6k_column(t.bytes.data() + mh::block_offset(type, k0, c, rows), column, d, sc, q);
          for (int r = 0; r < mh::kSuperRows; ++r) value_at(k0 + r, c) = (d * static_cast<float>(sc[r / 16])) * static_cast<float>(q[r]);
        }
      else
        for (int64_t k0 = 0; k0 < rows; k0 += mh::kBlockRows) {
          int q[mh::kBlockRows];
          for (int& v : q) v = type == mh::WeightType::kQ8 ? static_cast<int>(rng() % 255) - 127 : static_cast<int>(rng() % 16);
          const float scale = 0.01f * static_cast<float>(rng() % 100 + 1);
          const float min = type == mh::WeightType::kQ4 ? 0.05f : type == mh::WeightType::kQ40 ? 8.0f * scale : 0.0f;  // Q4_0's 8 · d
          mh::write_block_column(type, t.bytes.data() + mh::block_offset(type, k0, c, rows), column, scale, min, q);
          for (int r = 0; r < mh::kBlockRows; ++r) value_at(k0 + r, c) = scale * static_cast<float>(q[r]) - min;
        }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(t.at(r, c), values[static_cast<size_t>(r * cols + c)]) << r << " " << c;
    std::vector<float> widened(static_cast<size_t>(40 * cols));
    t.widen_rows(widened.data(), 37, 40);
    EXPECT_EQ(0, std::memcmp(widened.data(), values.data() + 37 * cols, widened.size() * 4));
    std::vector<uint8_t> copy(t.bytes.begin(), t.bytes.end());
    t.zero_rows(copy, 32, 32);
    mh::Tensor zeroed = t;
    zeroed.bytes.assign(copy.begin(), copy.end());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(zeroed.at(r, c), r >= 32 && r < 64 ? 0.0f : values[static_cast<size_t>(r * cols + c)]);
    t.find_finite();
    EXPECT_TRUE(t.known_finite);
    const float inf = INFINITY;
    // The last of the block's floats: kQ4's last min, kQ8's and kQ40's last scale; kQ4K's, kQ5K's and
    // kQ6K's d of column 3 (the first block of panel 2's second super-block).
    uint8_t* floats = t.bytes.data() + mh::block_offset(type, mh::has_super_blocks(type) ? 256 : 64, 16, rows);
    if (mh::has_q4k_meta(type)) std::memcpy(mh::q4k_meta(floats, 12, type), &inf, 4);
    else if (type == mh::WeightType::kQ6K) std::memcpy(mh::q6k_d(floats, 0) + 12, &inf, 4);
    else std::memcpy(floats + mh::block_float_bytes(type) - 4, &inf, 4);
    t.find_finite();
    EXPECT_FALSE(t.known_finite);
  }
}

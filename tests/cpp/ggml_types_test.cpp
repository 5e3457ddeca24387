// ggml's block types (io/ggml_types.h) against their definition: blocks packed here from chosen
// values (every scale/min field of the K-quants, Q6_K's high bits, negative scales, every quant
// value), and random blocks decoded by gguf_support.h's float64 reader. The results must be ggml's
// float32 bit for bit, i.e. the float64 value rounded once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "gguf_support.h"
#include "core/blocks.h"
#include "core/half.h"
#include "io/ggml_types.h"

namespace {

using namespace mh::ggml;

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Dequantizes `bytes` and checks every element against `expected` (float64, rounded once), and the
// test's own decoder against the same values.
void expect_values(uint32_t type, const std::vector<uint8_t>& bytes, const std::vector<double>& expected) {
  std::vector<float> got(expected.size());
  ASSERT_EQ(dequantize_row(type, bytes.data(), got.data(), static_cast<int64_t>(got.size())), "");
  const TypeInfo& t = *type_info(type);
  for (size_t i = 0; i < got.size(); ++i) {
    const float want = static_cast<float>(expected[i]);
    ASSERT_EQ(bits_of(got[i]), bits_of(want)) << t.name << " element " << i << ": " << got[i] << " vs " << want;
    const uint8_t* block = bytes.data() + (i / t.block) * t.bytes;
    ASSERT_EQ(test::reference_element(type, block, static_cast<int>(i % t.block)), expected[i]) << t.name << " " << i;
  }
}

void put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

// The 12 bytes of eight 6-bit (scale, min) pairs, as the K-quants pack them.
void pack_k_scales(uint8_t* s, const int* scale, const int* min) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((scale[j] & 63) | (scale[j + 4] >> 4) << 6);
    s[j + 4] = static_cast<uint8_t>((min[j] & 63) | (min[j + 4] >> 4) << 6);
    s[j + 8] = static_cast<uint8_t>((scale[j + 4] & 15) | (min[j + 4] & 15) << 4);
  }
}

constexpr uint16_t kQuarter = 0x3400, kMinusEighth = 0xB000, kMinusHalf = 0xB800, kThree = 0x4200;

TEST(GgmlTypes, TableMatchesGgml) {
  const struct { uint32_t id; const char* name; int64_t block; uint32_t bytes; } known[] = {
      {0, "F32", 1, 4},      {1, "F16", 1, 2},      {2, "Q4_0", 32, 18},   {3, "Q4_1", 32, 20},
      {6, "Q5_0", 32, 22},   {7, "Q5_1", 32, 24},   {8, "Q8_0", 32, 34},   {10, "Q2_K", 256, 84},
      {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176}, {14, "Q6_K", 256, 210},
      {15, "Q8_K", 256, 292}, {20, "IQ4_NL", 32, 18}, {23, "IQ4_XS", 256, 136}, {30, "BF16", 1, 2},
      {39, "MXFP4", 32, 17}};
  for (const auto& k : known) {
    const TypeInfo* t = type_info(k.id);
    ASSERT_NE(t, nullptr) << k.id;
    EXPECT_STREQ(t->name, k.name);
    EXPECT_EQ(t->block, k.block) << k.name;
    EXPECT_EQ(t->bytes, k.bytes) << k.name;
  }
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) EXPECT_EQ(type_info(removed), nullptr);
  EXPECT_EQ(type_name(31), "type 31");
  EXPECT_EQ(supported_types(), "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16");
}

TEST(GgmlTypes, RefusesWhatItCannotDequantize) {
  std::vector<uint8_t> block(292);
  std::vector<float> out(256);
  std::string e = dequantize_row(kQ2_K, block.data(), out.data(), 256);
  EXPECT_NE(e.find("Q2_K"), std::string::npos) << e;
  EXPECT_NE(e.find("supported: F32"), std::string::npos) << e;
  EXPECT_NE(dequantize_row(99, block.data(), out.data(), 1).find("type 99"), std::string::npos);
  EXPECT_NE(dequantize_row(kQ8_0, block.data(), out.data(), 33).find("whole number"), std::string::npos);
  EXPECT_NE(dequantize_row(kQ4_K, block.data(), out.data(), -256), "");
  EXPECT_EQ(dequantize_row(kQ4_K, block.data(), out.data(), 0), "");
}

TEST(GgmlTypes, Q8_0EveryValueNegativeScale) {
  std::vector<uint8_t> b(8 * 34);
  std::vector<double> want(256);
  for (int i = 0; i < 256; ++i) {
    const int block = i / 32, q = i - 128;
    put16(b, 34 * block, kMinusHalf);
    b[34 * block + 2 + i % 32] = static_cast<uint8_t>(static_cast<int8_t>(q));
    want[i] = q * -0.5;
  }
  expect_values(kQ8_0, b, want);
}

TEST(GgmlTypes, Q4_0AndQ5_0EveryValueBothHalves) {
  // Block 0: element j and j + 16 hold q = j % 16 and 15 − j % 16 (Q4_0); Q5_0 adds the fifth bit
  // to every other element, so all 32 values appear in each half.
  std::vector<uint8_t> q4(2 * 18), q5(2 * 22);
  std::vector<double> want4(64), want5(64);
  for (int block = 0; block < 2; ++block) {
    const uint16_t d = block ? kMinusEighth : kThree;
    const double dv = block ? -0.125 : 3.0;
    put16(q4, 18 * block, d);
    put16(q5, 22 * block, d);
    for (int j = 0; j < 32; ++j) {
      const int q = j < 16 ? j : 31 - j, high = (j + block) % 2;
      const int e = 32 * block + j;
      q4[18 * block + 2 + j % 16] |= static_cast<uint8_t>(j < 16 ? q : q << 4);
      q5[22 * block + 6 + j % 16] |= static_cast<uint8_t>(j < 16 ? q : q << 4);
      q5[22 * block + 2 + j / 8] |= static_cast<uint8_t>(high << (j % 8));
      want4[e] = (q - 8) * dv;
      want5[e] = (q + 16 * high - 16) * dv;
    }
  }
  expect_values(kQ4_0, q4, want4);
  expect_values(kQ5_0, q5, want5);
}

// One Q4_K or Q5_K block from its values: d, dmin (f16 bits), scale/min per 32-element sub-block,
// quants (0–15, or 0–31 for Q5_K); and the values it stands for.
std::vector<uint8_t> pack_k(uint32_t type, uint16_t d, uint16_t dmin, const int* scale, const int* min,
                            const std::vector<int>& q, std::vector<double>& want) {
  std::vector<uint8_t> b(type == kQ4_K ? 144 : 176);
  put16(b, 0, d);
  put16(b, 2, dmin);
  pack_k_scales(&b[4], scale, min);
  const int qs = type == kQ4_K ? 16 : 48;
  const double dv = test::half_value(&b[0]), mv = test::half_value(&b[2]);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32, l = e % 32;
    b[qs + 32 * (s / 2) + l] |= static_cast<uint8_t>((q[e] & 15) << (4 * (s % 2)));
    if (type == kQ5_K) b[16 + l] |= static_cast<uint8_t>((q[e] >> 4) << s);
    want.push_back(dv * scale[s] * q[e] - mv * min[s]);
  }
  return b;
}

TEST(GgmlTypes, KQuantsEveryScaleAndMinField) {
  // Each of the 16 six-bit fields (8 scales, 8 mins) alone set to 45 (0b101101: bits in both its
  // low and its top part), then all of them at once with distinct values.
  for (uint32_t type : {kQ4_K, kQ5_K}) {
    const int levels = type == kQ4_K ? 16 : 32;
    std::vector<int> q(256);
    for (int e = 0; e < 256; ++e) q[e] = (7 * e + e / 32) % levels;
    for (int field = 0; field <= 16; ++field) {
      int scale[8] = {}, min[8] = {};
      if (field < 8) scale[field] = 45;
      else if (field < 16) min[field - 8] = 45;
      else for (int s = 0; s < 8; ++s) scale[s] = 63 - 5 * s, min[s] = 9 * s % 64;
      for (uint16_t dmin : {kMinusEighth, kQuarter}) {
        std::vector<double> w;
        const std::vector<uint8_t> b = pack_k(type, kThree, dmin, scale, min, q, w);
        SCOPED_TRACE("type " + type_name(type) + " field " + std::to_string(field));
        expect_values(type, b, w);
      }
    }
  }
}

TEST(GgmlTypes, Q6_KHighBitsAndNegativeScales) {
  // q = 0..63 in every position (so each of the four 2-bit high fields of a byte takes every value);
  // 16 int8 scales from −128 to 127.
  std::vector<uint8_t> b(210 * 2);
  std::vector<double> want;
  const int8_t scales[16] = {-128, -77, -1, 0, 1, 2, 5, 13, 31, 63, 64, 100, 126, 127, -64, -3};
  for (int block = 0; block < 2; ++block) {
    uint8_t* p = &b[210 * block];
    put16(b, 210 * block + 208, block ? kMinusEighth : kQuarter);
    const double d = block ? -0.125 : 0.25;
    for (int e = 0; e < 256; ++e) {
      const int q = (e * 5 + block) % 64, h = e / 128, k = (e % 128) / 32, l = e % 32;
      p[64 * h + l + 32 * (k % 2)] |= static_cast<uint8_t>((q & 15) << (4 * (k / 2)));
      p[128 + 32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
      want.push_back(d * scales[e / 16] * (q - 32));
    }
    for (int s = 0; s < 16; ++s) p[192 + s] = static_cast<uint8_t>(scales[s]);
  }
  expect_values(kQ6_K, b, want);
}

// Random bytes, with every f16/bf16/f32 field made a finite number of a moderate size (so the
// float64 value rounds to float32 once, as ggml's does).
TEST(GgmlTypes, RandomBlocksMatchTheDefinition) {
  std::mt19937 rng(20240607);
  for (uint32_t type : {kF32, kF16, kBF16, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ4_K, kQ5_K, kQ6_K}) {
    const TypeInfo& t = *type_info(type);
    const int blocks = 64;
    std::vector<uint8_t> b(blocks * t.bytes);
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
    auto moderate_half = [&](size_t at) {  // exponent 5..24: magnitudes 2^-10 … 2^9
      const int e = 5 + static_cast<int>(rng() % 20);
      b[at + 1] = static_cast<uint8_t>((b[at + 1] & 0x80) | e << 2 | (b[at + 1] & 3));
    };
    std::vector<size_t> halves;  // the f16 fields of a block
    if (type == kQ4_0 || type == kQ5_0 || type == kQ8_0) halves = {0};
    if (type == kQ4_1 || type == kQ5_1 || type == kQ4_K || type == kQ5_K) halves = {0, 2};
    if (type == kQ6_K) halves = {208};
    for (int i = 0; i < blocks; ++i)
      for (size_t h : halves) moderate_half(i * t.bytes + h);
    if (type == kF16)
      for (size_t i = 0; i < b.size(); i += 2) moderate_half(i);
    if (type == kBF16 || type == kF32)  // exponent below 255: finite
      for (size_t i = t.bytes - 1; i < b.size(); i += t.bytes) b[i] &= 0xBF;
    std::vector<double> want(blocks * t.block);
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = test::reference_element(type, &b[(i / t.block) * t.bytes], static_cast<int>(i % t.block));
    SCOPED_TRACE(t.name);
    expect_values(type, b, want);
  }
}

// The types kept as blocks (regroup_row): each element's scale · q − min (Q6_K: its 16-element
// scale · q, q within −32…31) is the definition's value, the float32 of dequantize_row.
TEST(GgmlTypes, RegroupedBlocksHoldTheDefinitionsValues) {
  std::mt19937 rng(611);
  for (uint32_t type : {kQ8_0, kQ5_0, kQ4_0, kQ4_1, kQ4_K, kQ5_1, kQ5_K, kQ6_K}) {
    const TypeInfo& t = *type_info(type);
    const int blocks = 16;
    std::vector<uint8_t> b(blocks * t.bytes);
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
    for (int i = 0; i < blocks; ++i)  // moderate f16 fields (exponent 5..24), as above
      for (size_t at : type == kQ6_K                                                    ? std::vector<size_t>{208}
                       : type == kQ4_1 || type == kQ4_K || type == kQ5_1 || type == kQ5_K ? std::vector<size_t>{0, 2}
                                                                                          : std::vector<size_t>{0}) {
        uint8_t& high = b[i * t.bytes + at + 1];
        high = static_cast<uint8_t>((high & 0x83) | (5 + rng() % 20) << 2);
      }
    const int64_t count = blocks * t.block;
    std::vector<float> scales(count / 16), mins(count / 32), widened(count);
    std::vector<int8_t> q(count);
    ASSERT_EQ(regrouping(type), type == kQ6_K                   ? Regrouping::kSix
                                : type == kQ8_0 || type == kQ5_0 ? Regrouping::kEight
                                : type == kQ5_1 || type == kQ5_K ? Regrouping::kFive
                                                                 : Regrouping::kFour);
    regroup_row(type, b.data(), count, scales.data(), mins.data(), q.data());
    ASSERT_EQ(dequantize_row(type, b.data(), widened.data(), count), "");
    for (int64_t e = 0; e < count; ++e) {
      const float value = type == kQ6_K ? scales[e / 16] * static_cast<float>(q[e]) : scales[e / 32] * static_cast<float>(q[e]) - mins[e / 32];
      const double defined = test::reference_element(type, &b[(e / t.block) * t.bytes], static_cast<int>(e % t.block));
      // Bit for bit but for the sign of a zero: Q4_0's d·8 − 8d is +0 where ggml's (8 − 8)·d is −0 for d < 0.
      ASSERT_EQ(value == 0 ? 0 : bits_of(value), widened[e] == 0 ? 0 : bits_of(widened[e])) << t.name << " element " << e;
      ASSERT_EQ(value, static_cast<float>(defined)) << t.name << " element " << e;
      if (type == kQ6_K) ASSERT_TRUE(q[e] >= -32 && q[e] <= 31) << e;
      if (type == kQ5_1 || type == kQ5_K) ASSERT_TRUE(q[e] >= 0 && q[e] <= 31) << e;
    }
  }
}

// Q4_K and Q5_K regrouped as kQ4K and kQ5K keep their integer scales (regroup_q4_k_row,
// regroup_q5_k_row): (d · sc) · q − dmin · m of every element is dequantize_row's float32 and the
// definition's value; sc and m within 0…63, q within 0…15 (0…31).
TEST(GgmlTypes, Q4KAndQ5KRegroupedWithIntegerScalesHoldTheDefinitionsValues) {
  std::mt19937 rng(613);
  for (const uint32_t type : {kQ4_K, kQ5_K}) {
    const TypeInfo& t = *type_info(type);
    const int blocks = 16;
    std::vector<uint8_t> b(blocks * t.bytes);
    for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
    for (int i = 0; i < blocks; ++i)
      for (size_t at : {0, 2}) {  // moderate f16 fields, as above
        uint8_t& high = b[i * t.bytes + at + 1];
        high = static_cast<uint8_t>((high & 0x83) | (5 + rng() % 20) << 2);
      }
    const int64_t count = blocks * t.block;
    std::vector<float> d(blocks), dmin(blocks), widened(count);
    std::vector<uint8_t> sc(count / 32), m(count / 32);
    std::vector<int8_t> q(count);
    if (type == kQ5_K) regroup_q5_k_row(b.data(), count, d.data(), dmin.data(), sc.data(), m.data(), q.data());
    else regroup_q4_k_row(b.data(), count, d.data(), dmin.data(), sc.data(), m.data(), q.data());
    ASSERT_EQ(dequantize_row(type, b.data(), widened.data(), count), "");
    const int most = type == kQ5_K ? 31 : 15;
    for (int64_t e = 0; e < count; ++e) {
      const int64_t sub = e / 32, block = e / 256;
      ASSERT_TRUE(sc[sub] <= 63 && m[sub] <= 63 && q[e] >= 0 && q[e] <= most) << t.name << " " << e;
      const float value = (d[block] * static_cast<float>(sc[sub])) * static_cast<float>(q[e]) - dmin[block] * static_cast<float>(m[sub]);
      ASSERT_EQ(bits_of(value), bits_of(widened[e])) << t.name << " element " << e;
      ASSERT_EQ(value, static_cast<float>(test::reference_element(type, &b[block * t.bytes], static_cast<int>(e % 256)))) << t.name << " " << e;
    }
  }
}

// Q6_K regrouped as kQ6K keeps its integer scales (regroup_q6_k_row): (d · sc) · q of every element is
// dequantize_row's float32 and the definition's value; q within −32…31.
TEST(GgmlTypes, Q6KRegroupedWithIntegerScalesHoldsTheDefinitionsValues) {
  std::mt19937 rng(617);
  const TypeInfo& t = *type_info(kQ6_K);
  const int blocks = 16;
  std::vector<uint8_t> b(blocks * t.bytes);
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  for (int i = 0; i < blocks; ++i) {  // a moderate f16 d, as above
    uint8_t& high = b[i * t.bytes + 209];
    high = static_cast<uint8_t>((high & 0x83) | (5 + rng() % 20) << 2);
  }
  const int64_t count = blocks * t.block;
  std::vector<float> d(blocks), widened(count);
  std::vector<int8_t> sc(count / 16), q(count);
  regroup_q6_k_row(b.data(), count, d.data(), sc.data(), q.data());
  ASSERT_EQ(dequantize_row(kQ6_K, b.data(), widened.data(), count), "");
  for (int64_t e = 0; e < count; ++e) {
    const int64_t block = e / 256;
    ASSERT_TRUE(q[e] >= -32 && q[e] <= 31) << e;
    const float value = (d[block] * static_cast<float>(sc[e / 16])) * static_cast<float>(q[e]);
    ASSERT_EQ(bits_of(value), bits_of(widened[e])) << "element " << e;
    ASSERT_EQ(value, static_cast<float>(test::reference_element(kQ6_K, &b[block * t.bytes], static_cast<int>(e % 256)))) << e;
  }
}

// The loader writes a panel's blocks whole (write_block_panel, from values made by
// store_block_values): the same bytes as writing each column into a zeroed block, which is how the
// blocks' layout is defined (write_block_column), for values at and past each type's limits (kQ8's
// −128, kQ5's −5…40).
TEST(GgmlTypes, WholePanelsAreTheirColumnsBytes) {
  using mh::WeightType;
  std::mt19937 rng(907);
  for (WeightType type : {WeightType::kQ8, WeightType::kQ4, WeightType::kQ5, WeightType::kQ40}) {
    for (int trial = 0; trial < 50; ++trial) {
      const bool nibbles = mh::has_nibbles(type);
      const int lo = type == WeightType::kQ8 ? -128 : nibbles ? 0 : -5;
      const int hi = type == WeightType::kQ8 ? 127 : nibbles ? 15 : 40;
      int q[8][mh::kBlockRows];
      float floats[16];
      for (auto& column : q)
        for (int& v : column) v = lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1));
      for (float& f : floats) f = std::ldexp(static_cast<float>(static_cast<int>(rng() % 2001) - 1000), -7);
      std::vector<uint8_t> by_column(static_cast<size_t>(mh::block_bytes(type)), 0), whole(by_column.size(), 0xA5);
      for (int c = 0; c < 8; ++c) mh::write_block_column(type, by_column.data(), c, floats[c], floats[8 + c], q[c]);
      const int64_t stride = 40;  // columns apart in memory, as in the loader's [8][K] stage
      std::vector<int8_t> staged(8 * stride);
      for (int c = 0; c < 8; ++c)
        for (int r = 0; r < mh::kBlockRows; ++r) staged[c * stride + r] = static_cast<int8_t>(q[c][r]);
      mh::store_block_values(type, staged.data(), static_cast<int64_t>(staged.size()));
      mh::write_block_panel(type, whole.data(), staged.data(), stride, floats);
      ASSERT_EQ(whole, by_column) << "type " << static_cast<int>(type) << " trial " << trial;
    }
  }
}

TEST(GgmlTypes, HalfSubnormalsAndSignedZero) {
  // Q8_0 with the smallest subnormal scale, and with −0: ±0 and 2^-24·q exactly.
  for (uint16_t d : {uint16_t{0x0001}, uint16_t{0x8000}, uint16_t{0x03FF}}) {
    std::vector<uint8_t> b(34);
    put16(b, 0, d);
    std::vector<double> want(32);
    for (int j = 0; j < 32; ++j) {
      b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 127));
      want[j] = (j * 8 - 127) * test::half_value(&b[0]);
    }
    expect_values(kQ8_0, b, want);
  }
}

}  // namespace

// Quantizing as ggml's reference quantizers do (what weightType 'q8_0' / 'q4_0' loads with), checked
// against the formats' definitions: the scale is the block's largest magnitude over 127 (Q8_0) or its
// extreme value over −8 (Q4_0), stored as f16; each value is the nearest level (ties away from zero
// for Q8_0; Q4_0 truncates x/d + 8.5, so its levels are nearest with ties up, capped at 15).
TEST(GgmlTypes, QuantizingFollowsTheFormats) {
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const uint32_t type : {kQ8_0, kQ4_0}) {
    for (int trial = 0; trial < 200; ++trial) {
      float x[64];
      for (float& v : x) v = normal(rng) * (trial % 3 == 0 ? 1e-3f : 1.0f);
      if (trial == 1) std::fill(x, x + 32, 0.0f);  // an all-zero block: scale 0, values 0
      uint8_t bytes[2 * 34];
      quantize_row(type, x, bytes, 64);
      float back[64];
      ASSERT_EQ(dequantize_row(type, bytes, back, 64), "");
      for (int b = 0; b < 2; ++b) {
        const float* xb = x + 32 * b;
        double largest = 0, extreme = 0;
        for (int j = 0; j < 32; ++j)
          if (std::fabs(xb[j]) > largest) largest = std::fabs(xb[j]), extreme = xb[j];
        const double d = type == kQ8_0 ? largest / 127 : extreme / -8;
        const uint8_t* block = bytes + b * (type == kQ8_0 ? 34 : 18);
        const float stored = mh::half_to_float(static_cast<uint16_t>(block[0] | block[1] << 8));
        EXPECT_NEAR(stored, d, std::fabs(d) * 1e-3 + 1e-7);  // f16's precision
        for (int j = 0; j < 32; ++j) {
          const int q = type == kQ8_0 ? static_cast<int8_t>(block[2 + j])
                                      : (j < 16 ? block[2 + j] & 15 : block[2 + j - 16] >> 4) - 8;
          EXPECT_FLOAT_EQ(back[32 * b + j], static_cast<float>(q) * stored);
          if (d == 0) {
            EXPECT_EQ(q, 0);
            continue;
          }
          const double exact = xb[j] / d;  // in levels
          if (type == kQ4_0 && exact > 7.5) EXPECT_EQ(q, 7) << j;  // the cap: Q4_0 has 8 levels below 0, 7 above
          else EXPECT_LE(std::fabs(exact - q), 0.5 + 1e-5) << j;
          EXPECT_GE(q, type == kQ8_0 ? -127 : -8);
          EXPECT_LE(q, type == kQ8_0 ? 127 : 7);
        }
      }
    }
  }
}

// The image models' own operations (nn/vision_ops.h) against hand-worked cases and a float64
// reference written from the definitions (not from the implementation's tap tables).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "nn/vision_ops.h"

namespace {

// Keys' cubic convolution kernel with a = −0.75, as a function of the distance.
double keys(double x) {
  const double a = -0.75;
  x = std::fabs(x);
  if (x <= 1) return (a + 2) * x * x * x - (a + 3) * x * x + 1;
  if (x < 2) return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
  return 0;
}

// One axis of torch's bicubic resampling by its definition: output i sits at source coordinate
// (i + ½)·in/out − ½ and is Σ_j keys(s − j)·v[clamp(j)] over the four j around it.
std::vector<double> resample_axis(const std::vector<double>& v, int out) {
  const int in = static_cast<int>(v.size());
  std::vector<double> r(static_cast<size_t>(out));
  for (int i = 0; i < out; ++i) {
    const double s = (i + 0.5) * in / out - 0.5;
    const int f = static_cast<int>(std::floor(s));
    for (int j = f - 1; j <= f + 2; ++j) r[i] += keys(s - j) * v[std::clamp(j, 0, in - 1)];
  }
  return r;
}

TEST(VisionOps, PatchesAreTheConvolutionsReceptiveFieldsInWeightOrder) {
  // 2 channels × 4 × 6 pixels, patch 2: value = channel·100 + y·10 + x. Grid 2 × 3.
  const int C = 2, H = 4, W = 6, P = 2;
  std::vector<float> pixels(C * H * W);
  for (int c = 0; c < C; ++c)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) pixels[(c * H + y) * W + x] = float(c * 100 + y * 10 + x);
  std::vector<float> out(6 * C * P * P);
  mh::image_patches(out.data(), pixels.data(), C, H, W, P);
  // Patch (row 1, col 2) is the 6th: channel 0 rows 2–3, columns 4–5, then channel 1's.
  const float want[] = {24, 25, 34, 35, 124, 125, 134, 135};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[5 * 8 + i], want[i]) << i;
  // Pixels past the last whole patch are dropped (a 5 × 7 image makes the same 2 × 3 grid).
  std::vector<float> odd(C * 5 * 7, 0.0f), cut(6 * C * P * P, -1.0f);
  mh::image_patches(cut.data(), odd.data(), C, 5, 7, P);
  for (float v : cut) EXPECT_EQ(v, 0.0f);
}

TEST(VisionOps, BicubicEqualsTheSeparableDefinitionInFloat64) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int cases[][4] = {{6, 6, 4, 4}, {4, 4, 7, 5}, {37, 37, 16, 16}, {3, 5, 11, 2}, {5, 5, 5, 5}, {1, 2, 3, 3}};
  for (const auto& k : cases) {
    const int ih = k[0], iw = k[1], oh = k[2], ow = k[3], d = 3;
    std::vector<float> in(ih * iw * d);
    for (float& v : in) v = normal(rng);
    std::vector<float> out(oh * ow * d);
    mh::interpolate_bicubic(out.data(), in.data(), ih, iw, oh, ow, d);
    for (int c = 0; c < d; ++c) {
      // Rows first, then columns: separable, so the order does not change the float64 result.
      std::vector<std::vector<double>> rows(ih);
      for (int y = 0; y < ih; ++y) {
        std::vector<double> line(iw);
        for (int x = 0; x < iw; ++x) line[x] = in[(y * iw + x) * d + c];
        rows[y] = resample_axis(line, ow);
      }
      for (int x = 0; x < ow; ++x) {
        std::vector<double> column(ih);
        for (int y = 0; y < ih; ++y) column[y] = rows[y][x];
        const std::vector<double> want = resample_axis(column, oh);
        for (int y = 0; y < oh; ++y)
          EXPECT_NEAR(out[(y * ow + x) * d + c], want[y], 1e-5) << ih << "x" << iw << "→" << oh << "x" << ow;
      }
    }
  }
}

TEST(VisionOps, BicubicKeepsTheSameGridAndConstants) {
  std::vector<float> in(4 * 4 * 2);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i) * 0.37f - 3;
  std::vector<float> same(in.size());
  mh::interpolate_bicubic(same.data(), in.data(), 4, 4, 4, 4, 2);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_NEAR(same[i], in[i], 1e-6);
  std::vector<float> flat(5 * 5, 2.5f), out(9 * 3);
  mh::interpolate_bicubic(out.data(), flat.data(), 5, 5, 9, 3, 1);  // the weights sum to 1
  for (float v : out) EXPECT_NEAR(v, 2.5f, 1e-6);
}

TEST(VisionOps, LayerScaleScalesEachColumn) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const float s[] = {10, -1, 0.5f};
  mh::scale_columns(x.data(), s, 2, 3);
  EXPECT_EQ(x, (std::vector<float>{10, -2, 1.5f, 40, -5, 3}));
}

}  // namespace

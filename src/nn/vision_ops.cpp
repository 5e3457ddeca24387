// The image transformers' own operations (nn/vision_ops.h).
#include "nn/vision_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mh {

void image_patches(float* out, const float* pixels, int channels, int height, int width, int patch) {
  const int rows = height / patch, cols = width / patch;
  const int64_t per_patch = int64_t{channels} * patch * patch;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      float* o = out + (int64_t{r} * cols + c) * per_patch;
      for (int ch = 0; ch < channels; ++ch)
        for (int y = 0; y < patch; ++y) {
          const float* row = pixels + (int64_t{ch} * height + r * patch + y) * width + c * patch;
          std::copy(row, row + patch, o);
          o += patch;
        }
    }
}

namespace {
// The four weights of taps floor(s) − 1 … floor(s) + 2 for the fraction t of a source position s
// (Keys 1981 with a = −0.75, as torch's upsample_bicubic2d).
void cubic_weights(double t, double w[4]) {
  constexpr double a = -0.75;
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };        // |x| ≤ 1
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// Output index i of `out` samples → its first source tap and four weights, along one axis.
struct Taps {
  int index[4];
  double weight[4];
};
std::vector<Taps> axis_taps(int in, int out) {
  std::vector<Taps> taps(static_cast<size_t>(out));
  const double scale = double(in) / out;
  for (int i = 0; i < out; ++i) {
    const double s = scale * (i + 0.5) - 0.5;  // half-pixel centres; not clamped below 0 (cubic)
    const int base = std::min(static_cast<int>(std::floor(s)), in - 1);
    const double t = std::clamp(s - base, 0.0, 1.0);
    cubic_weights(t, taps[i].weight);
    for (int k = 0; k < 4; ++k) taps[i].index[k] = std::clamp(base - 1 + k, 0, in - 1);  // edges repeat
  }
  return taps;
}
}  // namespace

void interpolate_bicubic(float* out, const float* in, int in_h, int in_w, int out_h, int out_w, int d) {
  const std::vector<Taps> ys = axis_taps(in_h, out_h), xs = axis_taps(in_w, out_w);
  std::vector<double> sum(static_cast<size_t>(d));
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x) {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int ky = 0; ky < 4; ++ky)
        for (int kx = 0; kx < 4; ++kx) {
          const double w = ys[y].weight[ky] * xs[x].weight[kx];
          const float* src = in + (int64_t{ys[y].index[ky]} * in_w + xs[x].index[kx]) * d;
          for (int i = 0; i < d; ++i) sum[i] += w * src[i];
        }
      float* dst = out + (int64_t{y} * out_w + x) * d;
      for (int i = 0; i < d; ++i) dst[i] = static_cast<float>(sum[i]);
    }
}

void scale_columns(float* x, const float* scale, int n, int d) {
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < d; ++i) x[int64_t{t} * d + i] *= scale[i];
}

}  // namespace mh

// The operations image transformers (ViT, DINOv2) add to nn/ops.h, as plain functions over caller
// memory: cutting an image into patches (a convolution whose stride is its kernel is a product
// over these rows), resampling a grid of position embeddings, and layer scale.
#pragma once

#include <cstdint>

namespace mh {

// out (rows·cols × C·P·P) = the image's P × P patches, row-major over the grid (rows = H / P,
// cols = W / P; pixels past the last whole patch are dropped, as a stride-P convolution does), each
// flattened channel, then y, then x: the order of a Conv2d weight [d][C][P][P], so that
// out · W (C·P·P × d) is that convolution. pixels: C × H × W.
void image_patches(float* out, const float* pixels, int channels, int height, int width, int patch);

// out (out_h × out_w × d) = in (in_h × in_w × d) resampled per channel by bicubic convolution
// (Keys' kernel, a = −0.75), half-pixel centres and edge rows repeated: what torch's
// interpolate(mode="bicubic", align_corners=False) computes for an output size (scale in / out).
// The sums run in float64.
void interpolate_bicubic(float* out, const float* in, int in_h, int in_w, int out_h, int out_w, int d);

// x (n × d) ⊙= scale (d) on every row: DINOv2's layer scale.
void scale_columns(float* x, const float* scale, int n, int d);

}  // namespace mh

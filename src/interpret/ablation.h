// Switching heads off (ablation). A head reaches the residual stream only through its rows of W_O
// (rows h·d_k … (h+1)·d_k of the heads·d_k × d projection), so a switched-off head is W_O with
// those rows zeroed, in a copy; the attention itself runs unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/tensor.h"

namespace mh {

// Whether any of a layer's heads is switched off (enabled: heads flags, 0 = off; null = all on).
bool any_head_off(const uint8_t* enabled, int heads);
// copy = W_O (heads·d_k × d, float32, row-major) with the switched-off heads' rows zeroed.
void ablate_heads(std::vector<float>& copy, const float* wo, int heads, int d_k, int d, const uint8_t* enabled);
// copy = a checkpoint's W_O bytes (any stored type and layout) with the switched-off heads' rows zeroed.
void ablate_heads(std::vector<uint8_t>& copy, const Tensor& wo, int heads, int d_k, const uint8_t* enabled);

}  // namespace mh

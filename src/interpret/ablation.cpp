#include "interpret/ablation.h"

#include <algorithm>

namespace mh {

bool any_head_off(const uint8_t* enabled, int heads) {
  return enabled && std::find(enabled, enabled + heads, 0) != enabled + heads;
}

void ablate_heads(std::vector<float>& copy, const float* wo, int heads, int d_k, int d, const uint8_t* enabled) {
  const int64_t head_size = int64_t{d_k} * d;
  copy.assign(wo, wo + heads * head_size);
  for (int h = 0; h < heads; ++h)
    if (!enabled[h]) std::fill(copy.begin() + h * head_size, copy.begin() + (h + 1) * head_size, 0.0f);
}

void ablate_heads(std::vector<uint8_t>& copy, const Tensor& wo, int heads, int d_k, const uint8_t* enabled) {
  copy.assign(wo.bytes.begin(), wo.bytes.end());
  for (int h = 0; h < heads; ++h)
    if (!enabled[h]) wo.zero_rows(copy, int64_t{h} * d_k, d_k);
}

}  // namespace mh

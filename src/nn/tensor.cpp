#include "nn/tensor.h"

#include <cstring>


namespace mh {

void Tensor::widen(float* out, int64_t first, int64_t count) const {
  if (type == WeightType::kF32) {
    std::memcpy(out, bytes.data() + first * 4, static_cast<size_t>(count) * 4);
    return;
  }
  const uint16_t* in = reinterpret_cast<const uint16_t*>(bytes.data()) + first;
  if (type == WeightType::kBF16) {
    for (int64_t i = 0; i < count; ++i) out[i] = bf16_to_float(in[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) out[i] = half_to_float(in[i]);
  }
}

}  // namespace mh

#include "nn/tensor.h"

#include <cstring>

#include "io/model_file.h"  // half_to_float

namespace mh {

int weight_type_bytes(WeightType t) { return t == WeightType::kF32 ? 4 : 2; }

float bf16_to_float(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;  // bf16 is float32's top half
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

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

const float* Tensor::as_f32(std::vector<float>& scratch) const {
  if (type == WeightType::kF32) return f32();
  scratch.resize(static_cast<size_t>(elements()));
  widen(scratch.data(), 0, elements());
  return scratch.data();
}

}  // namespace mh

#include "nn/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>


namespace mh {

float Tensor::at(int64_t r, int64_t c) const {
  if (is_block_type(type))
    return block_element(type, bytes.data() + block_offset(type, r, c, rows), static_cast<int>(r % kBlockRows),
                         static_cast<int>(c % 8), block_in_super(type, r));
  const int64_t i = index(r, c);
  if (type == WeightType::kF32) {
    float value;
    std::memcpy(&value, bytes.data() + i * 4, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes.data() + i * 2, 2);
  return type == WeightType::kBF16 ? bf16_to_float(bits) : half_to_float(bits);
}

void Tensor::widen_rows(float* out, int64_t first, int64_t count) const {
  if (is_block_type(type)) {  // 8 columns of a block's row at a time
    float eight[8];
    for (int64_t r = 0; r < count; ++r)
      for (int64_t c = 0; c < cols; c += 8) {
        const int64_t k = first + r;
        dequantize_block_rows(type, bytes.data() + block_offset(type, k, c, rows), static_cast<int>(k % kBlockRows), 1, eight,
                              block_in_super(type, k));
        std::copy(eight, eight + std::min<int64_t>(8, cols - c), out + r * cols + c);
      }
    return;
  }
  // A row is stored in runs: whole (row-major), or 8 columns in each panel.
  const int64_t run = panels ? 8 : cols;
  for (int64_t r = 0; r < count; ++r)
    for (int64_t c = 0; c < cols; c += run) {
      const int64_t i = index(first + r, c), length = std::min(run, cols - c);
      float* to = out + r * cols + c;
      if (type == WeightType::kF32) {
        std::memcpy(to, bytes.data() + i * 4, static_cast<size_t>(length) * 4);
        continue;
      }
      const uint16_t* in = reinterpret_cast<const uint16_t*>(bytes.data()) + i;
      for (int64_t e = 0; e < length; ++e) to[e] = type == WeightType::kBF16 ? bf16_to_float(in[e]) : half_to_float(in[e]);
    }
}

void Tensor::find_finite() {
  known_finite = true;
  // The values are small integers: the scales (and mins) are what could not be finite. kQ4K's (kQ5K's) shares
  // hold its floats and bytes of at most 63, which read as a float's top byte are finite; kQ6K's int8
  // sc could read as anything, so only its d (in each super-block's first two blocks) are read.
  if (type == WeightType::kQ6K) {
    for (int64_t b = 0; b < stored_bytes(); b += block_bytes(type) * kSuperBlocks)
      for (int h = 0; h < 2; ++h) {
        float d[4];
        std::memcpy(d, q6k_d(bytes.data() + b, h), sizeof d);
        for (const float f : d) known_finite &= std::isfinite(f);
      }
    return;
  }
  if (is_block_type(type)) {
    for (int64_t b = 0; b < stored_bytes(); b += block_bytes(type)) {
      float f[16];
      std::memcpy(f, bytes.data() + b, block_float_bytes(type));
      for (int i = 0; i < block_float_bytes(type) / 4; ++i) known_finite &= std::isfinite(f[i]);
    }
    return;
  }
  if (type == WeightType::kF32) {
    const float* v = f32();
    for (int64_t i = 0; i < stored_elements(); ++i) known_finite &= std::isfinite(v[i]);
    return;
  }
  // fp16: exponent 31 (0x7c00 all set); bf16: float32's exponent 255 (0x7f80 all set).
  const uint16_t exponent = type == WeightType::kF16 ? 0x7c00u : 0x7f80u;
  const uint16_t* v = reinterpret_cast<const uint16_t*>(bytes.data());
  for (int64_t i = 0; i < stored_elements(); ++i) known_finite &= (v[i] & exponent) != exponent;
}

void Tensor::zero_rows(std::vector<uint8_t>& stored, int64_t first, int64_t count) const {
  if (has_q4k_meta(type)) {  // a sub-block's sc and m at 0 make its values 0
    for (int64_t c = 0; c < cols; c += 8)
      for (int64_t k = first; k < first + count; k += kBlockRows) {
        const int j = block_in_super(type, k);
        uint8_t* super = stored.data() + block_offset(type, k - kBlockRows * j, c, rows);
        for (int column = 0; column < 8; ++column) {
          *q4k_meta(super, q4k_m_byte(j, column), type) = 0;
          q4k_meta(super, q4k_sc_byte(j, column), type)[0] = q4k_meta(super, q4k_sc_byte(j, column), type)[1] = 0;
        }
      }
    return;
  }
  if (type == WeightType::kQ6K) {  // a block's sc at 0 make its values 0 (its d, the super-block's, stay)
    for (int64_t c = 0; c < cols; c += 8)
      for (int64_t k = first; k < first + count; k += kBlockRows)
        std::fill_n(stored.begin() + block_offset(type, k, c, rows), 16, uint8_t{0});
    return;
  }
  if (is_block_type(type)) {  // a block's scales (and mins) at 0 make its values 0
    for (int64_t c = 0; c < cols; c += 8)
      for (int64_t k = first; k < first + count; k += kBlockRows)
        std::fill_n(stored.begin() + block_offset(type, k, c, rows), block_float_bytes(type), uint8_t{0});
    return;
  }
  const int64_t size = weight_type_bytes(type);
  if (!panels) {
    std::fill_n(stored.begin() + first * cols * size, count * cols * size, uint8_t{0});
    return;
  }
  for (int64_t c = 0; c < cols; c += 8)  // in each panel, the rows are 8 elements each, contiguous
    std::fill_n(stored.begin() + index(first, c) * size, count * 8 * size, uint8_t{0});
}

}  // namespace mh

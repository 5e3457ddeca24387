// A checkpoint's tensor in memory, kept in the dtype it was stored in: fp16/bf16 weights stay at
// 2 bytes (a 0.5B-parameter bf16 model needs ~1 GB, not 2) and are widened to float32 only where
// an operation reads them, a matrix or a few rows at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/blocks.h"
#include "core/gemm.h"

namespace mh {

// std::allocator, except that resize() leaves new elements uninitialized, for buffers filled over
// the threads: a run's attentions (nn/transformer.h, FloatBuffer) and a checkpoint's tensors, which
// the loader zeroes with every thread at once (io/checkpoint.cpp: that is the first touch of fresh
// memory, which can cost more than the rest of a load).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using TensorBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

struct Tensor {
  WeightType type = WeightType::kF32;
  int64_t rows = 1, cols = 1;  // a vector is 1 × cols
  // Matrices that products read (every projection and the output head) are stored in gemm's panel
  // layout (core/gemm.h: panels of 8 columns, each rows × 8 contiguous, the last zero-padded), so
  // that a product streams them from memory in order instead of re-packing them on every call.
  // Other matrices (embedding tables read by rows) are row-major.
  bool panels = false;
  // No inf or NaN among the values (find_finite() sets it once the bytes are in; the products
  // over an fp16 matrix that has it skip watching for them).
  bool known_finite = false;
  TensorBytes bytes;  // stored_bytes()

  int64_t elements() const { return rows * cols; }
  int64_t stored_elements() const { return panels ? rows * ((cols + 7) / 8 * 8) : rows * cols; }
  // The bytes the values take: stored_elements() of the type's size, or the blocks of a block type
  // (always in panels, rows a whole number of blocks: core/blocks.h).
  int64_t stored_bytes() const {
    return is_block_type(type) ? block_matrix_bytes(type, rows, cols) : stored_elements() * weight_type_bytes(type);
  }
  // Where element (r, c) is stored, in elements.
  int64_t index(int64_t r, int64_t c) const { return panels ? panel_index(r, c, rows) : r * cols + c; }
  // The float32 data when the tensor is float32 (zero-copy use), else null.
  const float* f32() const {
    return type == WeightType::kF32 ? reinterpret_cast<const float*>(bytes.data()) : nullptr;
  }
  // The matrix as gemm's operand (rows × cols, in its stored type and layout).
  MatrixRef matrix() const { return {bytes.data(), type, panels ? rows : cols, panels, known_finite}; }
  // Rows [first, rows) as gemm's operand, in place: in panel layout too, since a panel's rows are
  // 8 elements apart and its stride (8 · ld) stays that of the whole matrix (a block type's: from a
  // whole block, first a multiple of 32; kQ4K's of 256).
  MatrixRef matrix_rows(int64_t first) const {
    const int64_t offset = is_block_type(type) ? first / kBlockRows * block_bytes(type)
                                               : first * (panels ? 8 : cols) * weight_type_bytes(type);
    return {bytes.data() + offset, type, panels ? rows : cols, panels, known_finite};
  }
  // The first element, for a WeightsView (core/attention.h): float32 data, or (2-byte types) the
  // raw elements, which only gemm reads, through the view's type.
  const float* f32_or_raw() const { return reinterpret_cast<const float*>(bytes.data()); }
  // Element (r, c) as float32.
  float at(int64_t r, int64_t c) const;
  // out (count × cols, row-major) = rows [first, first + count) as float32.
  void widen_rows(float* out, int64_t first, int64_t count) const;
  // Sets known_finite to whether every value is finite (a pass over the bytes).
  void find_finite();
  // Sets rows [first, first + count) to 0 in `stored`, a copy of this tensor's bytes (a block
  // type's: whole blocks, first and count multiples of 32).
  void zero_rows(std::vector<uint8_t>& stored, int64_t first, int64_t count) const;
};

}  // namespace mh

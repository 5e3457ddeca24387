// Every C++ allocation in the wasm build 16-byte aligned, as glibc's malloc already is natively.
//
// Why: Emscripten 3.1.6's malloc aligns to 8 bytes (alignof(max_align_t) is 8 on wasm32), so a
// std::vector's data starts at an address that depends on what was allocated before. Eigen's
// vectorised reductions (row sums, means) peel a scalar head up to the first 16-byte boundary, so
// the summation order, and the last bits of the result, followed the heap's history: the same seed
// trained to slightly different weights depending on how often the page asked for a report.
// Aligned, every buffer starts on a boundary and the same seed gives the same bits.
#include <cstdlib>
#include <new>

namespace {
void* allocate(std::size_t size) {
  const std::size_t rounded = (size + 15) & ~std::size_t{15};
  return std::aligned_alloc(16, rounded == 0 ? 16 : rounded);
}
void* allocate_or_throw(std::size_t size) {
  void* p = allocate(size);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return allocate_or_throw(size); }
void* operator new[](std::size_t size) { return allocate_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

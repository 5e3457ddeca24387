// Shared by the Embind C layers: a buffer handed to JS as a typed array over the wasm heap.
#pragma once

#include <emscripten/val.h>

#include <vector>

namespace bindings {

// A zero-copy view of v; valid until v reallocates or the heap grows (the JS layer copies out).
template <typename T, typename Allocator>
emscripten::val view_of(const std::vector<T, Allocator>& v) {
  return emscripten::val(emscripten::typed_memory_view(v.size(), v.data()));
}

}  // namespace bindings

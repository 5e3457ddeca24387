// Intentionally empty: Eigen includes <mmintrin.h> on its SSE path; Emscripten does not ship it
// and wasm needs nothing from it. On the wasm build include path only (see src/core/eigen_include.h).

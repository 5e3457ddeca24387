// The read loop the benchmarks' bandwidth bound is measured with (bench/peak.h; the bindings'
// readBandwidth for the Node benchmarks): memory read by SIMD sums, as one stream or as several
// side by side.
#pragma once

#include <cstddef>

#include <wasm_simd128.h>

namespace mh {

// The sum of `count` floats from x (a multiple of 16 · kStreams), read as kStreams equal parts side
// by side, 64 bytes of each a turn: one sequential stream, or streams that cross into their next
// 4 KB pages together where the parts are whole pages, which memory reads faster where a page's
// first misses cost (docs/performance.md, "Decoding over blocks: streams side by side"). Pointers
// that advance, not x[i]: Emscripten turns loop strength reduction off, so an index is multiplied
// out on every load, and that loop read 16–18 GB/s where this one reads 23–26.
template <int kStreams>
inline float sum_in_streams(const float* x, size_t count) {
  const size_t part = count / kStreams;
  v128_t acc[kStreams][4];
  const float* p[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    acc[s][0] = acc[s][1] = acc[s][2] = acc[s][3] = wasm_f32x4_splat(0);
    p[s] = x + s * part;
  }
  for (const float* end = p[0] + part; p[0] < end;)
    for (int s = 0; s < kStreams; ++s) {
      for (int v = 0; v < 4; ++v) acc[s][v] = wasm_f32x4_add(acc[s][v], wasm_v128_load(p[s] + 4 * v));
      p[s] += 16;
    }
  v128_t total = wasm_f32x4_splat(0);
  for (auto& a : acc) total = wasm_f32x4_add(total, wasm_f32x4_add(wasm_f32x4_add(a[0], a[1]), wasm_f32x4_add(a[2], a[3])));
  return wasm_f32x4_extract_lane(total, 0) + wasm_f32x4_extract_lane(total, 1) + wasm_f32x4_extract_lane(total, 2) +
         wasm_f32x4_extract_lane(total, 3);
}

}  // namespace mh

// One core's 128-bit SIMD multiply-add peak (bench/peak.h), as JSON, natively (SSE2; built by
// bench/run.sh's CMake step). The wasm builds' peaks come from bench/kernels.cpp --peak-only.
#include <cstdio>

#include "peak.h"

int main() { std::printf("{\"peakGflops\": %.1f}\n", peak_gflops()); }

// One core's 128-bit SIMD multiply-add peak (bench/peak.h), as JSON: built for wasm (run in Node)
// and natively (SSE2) by bench/run.sh.
#include <cstdio>

#include "peak.h"

int main() { std::printf("{\"peakGflops\": %.1f}\n", peak_gflops()); }

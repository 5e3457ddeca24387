#!/usr/bin/env bash
# The GEMM's tests (tests/cpp/gemm_test.cpp) compiled to wasm, plain and relaxed SIMD, and run by
# Node: the native suite runs the portable kernels; these run the wasm SIMD ones (the float32 and
# 2-byte tiles, and the integer products over blocks: decoding's row and prefill's tiles).
# One thread (no -pthread). Usage: bash scripts/gemm-test-wasm.sh [gtest filter]
set -euo pipefail
cd "$(dirname "$0")/.."
gtest=/usr/src/googletest/googletest
out=build/wasm-gemm-test
mkdir -p "$out"
opts="-O2 -std=c++17 -Isrc -I$gtest/include -I$gtest -sENVIRONMENT=node -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB"
sources="tests/cpp/gemm_test.cpp src/core/gemm.cpp src/core/gemm_tuning.cpp src/core/parallel.cpp $gtest/src/gtest-all.cc $gtest/src/gtest_main.cc"
export NODE_PATH=/usr/share/nodejs
em++ $opts -msimd128 $sources -o "$out/gemm_test_simd.cjs"
em++ $opts -msimd128 -mrelaxed-simd $sources -o "$out/gemm_test_relaxed.cjs"
node scripts/relax-wasm.mjs "$out/gemm_test_relaxed.wasm" >/dev/null
filter="${1:-*}"
node --no-experimental-fetch --no-experimental-wasm-relaxed-simd "$out/gemm_test_simd.cjs" --gtest_filter="$filter"
node --no-experimental-fetch --experimental-wasm-relaxed-simd "$out/gemm_test_relaxed.cjs" --gtest_filter="$filter"
# The integer dot-add once more with only V8's optimizing compiler: Node 20's baseline one computes
# it wrongly, so above the dot-add measures inexact and its test is skipped.
node --no-experimental-fetch --experimental-wasm-relaxed-simd --no-liftoff "$out/gemm_test_relaxed.cjs" --gtest_filter="Gemm.DotAdd*"

#!/usr/bin/env bash
# One command for the benchmark: builds what it needs, installs its peer, runs bench/run.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent build:wasm
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DMULTIHEAD_BENCH=ON -DMULTIHEAD_TESTS=OFF >/dev/null
cmake --build build/bench -j2 >/dev/null
# The kernel benchmark (bench/kernels.cpp: peak, GEMM, read bandwidth) in both wasm builds (CommonJS
# scripts, run by Node: the repository's package is ESM); the relaxed one gets clang 14's fused
# multiply-add opcode rewritten like the module's (README). bench/run.mjs takes its peak from them.
kernel_opts="-O3 -std=c++17 -Isrc -ffp-contract=off -sENVIRONMENT=node -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB"
NODE_PATH=/usr/share/nodejs em++ $kernel_opts -msimd128 bench/kernels.cpp src/core/gemm.cpp src/core/gemm_tuning.cpp src/core/parallel.cpp \
  -o build/bench/kernels_simd.cjs
NODE_PATH=/usr/share/nodejs em++ $kernel_opts -msimd128 -mrelaxed-simd bench/kernels.cpp src/core/gemm.cpp src/core/gemm_tuning.cpp \
  src/core/parallel.cpp -o build/bench/kernels_relaxed.cjs
node scripts/relax-wasm.mjs build/bench/kernels_relaxed.wasm >/dev/null
# The GEMM's inner loop alone on data in L1 (bench/tile-loop.cpp: the ceiling this CPU allows the
# micro-kernel; not run by default, see bench/README.md).
NODE_PATH=/usr/share/nodejs em++ $kernel_opts -msimd128 bench/tile-loop.cpp -o build/bench/tile-loop_simd.cjs
NODE_PATH=/usr/share/nodejs em++ $kernel_opts -msimd128 -mrelaxed-simd bench/tile-loop.cpp -o build/bench/tile-loop_relaxed.cjs
node scripts/relax-wasm.mjs build/bench/tile-loop_relaxed.wasm >/dev/null
# onnxruntime-web must be the version bench/package.json pins (an older copy is replaced).
grep -q '"version": "1.30.0"' bench/node_modules/onnxruntime-web/package.json 2>/dev/null ||
  npm --prefix bench ci --no-audit --no-fund --loglevel=error
if [ "${1:-}" = "--gpt2" ]; then  # npm run bench:gpt2: the real-model part, plain and relaxed SIMD
  shift
  node --no-experimental-wasm-relaxed-simd bench/gpt2.mjs "$@"
  exec node --experimental-wasm-relaxed-simd bench/gpt2.mjs --relaxed "$@"
fi
if [ "${1:-}" = "--node-threads" ]; then  # npm run bench:node-threads: the threaded build, in Node
  shift
  exec node bench/node-threads.mjs "$@"
fi
if [ "${1:-}" = "--threads" ]; then  # npm run bench:threads: the threaded build, in Chromium
  shift
  exec node bench/threads.mjs "$@"
fi
# The MHA table in both builds: plain SIMD (Safari's), then relaxed SIMD (what Chromium, Firefox and
# Node load), each with onnxruntime-web interleaved in the same process. Node 20 validates relaxed
# SIMD only with its flag, which the JS API turns on unless told --no-…: the flags pick the build.
node --no-experimental-wasm-relaxed-simd bench/run.mjs "$@"
exec node --experimental-wasm-relaxed-simd bench/run.mjs --relaxed "$@"

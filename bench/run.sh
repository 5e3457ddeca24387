#!/usr/bin/env bash
# One command for the benchmark: builds what it needs, installs its peer, runs bench/run.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent build:wasm
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DMULTIHEAD_BENCH=ON -DMULTIHEAD_TESTS=OFF >/dev/null
cmake --build build/bench -j2 >/dev/null
# The same peak loop in wasm, run by Node (a CommonJS script: the repository's package is ESM).
NODE_PATH=/usr/share/nodejs em++ -O3 -msimd128 -sENVIRONMENT=node -sSINGLE_FILE=1 \
  -o build/bench/peak_wasm.js bench/peak.cpp && mv build/bench/peak_wasm.js build/bench/peak_wasm.cjs
# The kernel benchmark (bench/kernels.cpp: peak, GEMM, read bandwidth) in both wasm builds; the
# relaxed one gets clang 14's fused multiply-add opcode rewritten like the module's (README).
kernel_opts="-O3 -std=c++17 -Isrc -ffp-contract=off -sENVIRONMENT=node -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB"
NODE_PATH=/usr/share/nodejs em++ $kernel_opts -msimd128 bench/kernels.cpp src/core/gemm.cpp src/core/parallel.cpp \
  -o build/bench/kernels_simd.cjs
NODE_PATH=/usr/share/nodejs em++ $kernel_opts -msimd128 -mrelaxed-simd bench/kernels.cpp src/core/gemm.cpp \
  src/core/parallel.cpp -o build/bench/kernels_relaxed.cjs
node scripts/relax-wasm.mjs build/bench/kernels_relaxed.wasm >/dev/null
# onnxruntime-web must be the version bench/package.json pins (an older copy is replaced).
grep -q '"version": "1.30.0"' bench/node_modules/onnxruntime-web/package.json 2>/dev/null ||
  npm --prefix bench ci --no-audit --no-fund --loglevel=error
if [ "${1:-}" = "--gpt2" ]; then  # npm run bench:gpt2: the real-model part, plain and relaxed SIMD
  shift
  node bench/gpt2.mjs "$@"
  exec node --experimental-wasm-relaxed-simd bench/gpt2.mjs --relaxed "$@"
fi
if [ "${1:-}" = "--threads" ]; then  # npm run bench:threads: the threaded build, in Chromium
  shift
  exec node bench/threads.mjs "$@"
fi
node bench/run.mjs "$@"

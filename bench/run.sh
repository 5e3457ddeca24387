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
[ -d bench/node_modules/onnxruntime-web ] || npm --prefix bench ci --no-audit --no-fund --loglevel=error
if [ "${1:-}" = "--threads" ]; then  # npm run bench:threads: the threaded build, in Chromium
  shift
  exec node bench/threads.mjs "$@"
fi
node bench/run.mjs "$@"

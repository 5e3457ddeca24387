#!/usr/bin/env bash
# Builds dist/multihead_core.{mjs,wasm} with Debian's Emscripten 3.1.6.
set -euo pipefail
cd "$(dirname "$0")/.."
# emcc's JS optimizer needs acorn, which Debian ships outside Node's default module path.
export NODE_PATH=/usr/share/nodejs
# Node 20 rejects CMake's default emulator flag (--experimental-wasm-threads).
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node >/dev/null
cmake --build build/wasm -j2
node scripts/precache.mjs

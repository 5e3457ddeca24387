#!/usr/bin/env bash
# Every test: C++ (GoogleTest/CTest, native), JS (Vitest on the wasm module in Node),
# browser (Playwright driving Debian's Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent build:native
npm run --silent build:wasm
echo "== C++ core (ctest)"
ctest --test-dir build/native --output-on-failure
echo "== wasm module in Node (vitest)"
npx vitest run
echo "== TypeScript types (tsc)"
npx tsc -p tests/types/tsconfig.json
echo "== browser (playwright, Debian chromium)"
npx playwright test

#!/usr/bin/env bash
# Every test: C++ (GoogleTest/CTest under the sanitizers), JS (Vitest on the wasm module in Node),
# browser (Playwright driving Debian's Chromium).
#
# The C++ suite runs once, in the AddressSanitizer + UndefinedBehaviorSanitizer build: the
# optimized native build (npm run build:native; npm run test:cpp) computes the same bits (no fused
# multiply-adds, no reassociation) and is for benchmarks and training, so CI does not compile the
# core a third time. The JS suite's parity tests run that build's native tools (MULTIHEAD_NATIVE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent build:wasm
echo "== C++ core under AddressSanitizer + UndefinedBehaviorSanitizer (ctest; clang, -O1 -g1)"
# One build for the sanitized tests, the native tools and the fuzzers (CMakeLists.txt, MULTIHEAD_SANITIZE).
cmake -S . -B build/sanitize -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMULTIHEAD_SANITIZE=ON >/dev/null
cmake --build build/sanitize -j2 >/dev/null
# Not the three that train for hundreds of steps to see something learned: under the sanitizers
# they repeat what the trainer's few-step and gradient tests (ToyTrainer.SameSeed…, Backward.*)
# already run, at a third of this step's time.
ctest --test-dir build/sanitize --output-on-failure -j2 \
  -E '^(ToyTrainer\.(CopyIsLearnedInAFewHundredSteps|BalancedKeyNeedsTwoHeads)|TrainingSmoke\.LossFallsAndInductionHeadsForm)$'
echo "== the thread pool and the split forward pass under ThreadSanitizer"
cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMULTIHEAD_TSAN=ON -DMULTIHEAD_TESTS=OFF >/dev/null
cmake --build build/tsan -j2 --target parallel_tests_tsan >/dev/null
# The GEMM's one-thread edge shapes have no threads to race (and were most of the time here).
# Two shards side by side (gtest's sharding), each printing failures and its count.
tsan_shard() {
  GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$1 build/tsan/parallel_tests_tsan --gtest_brief=1 \
    --gtest_filter='-Gemm/EdgeShapes.*1Thread'
}
tsan_failed=0
tsan_shard 0 & tsan_first=$!
tsan_shard 1 || tsan_failed=1
wait $tsan_first || tsan_failed=1
[ $tsan_failed -eq 0 ] || exit 1
echo "== fuzzing the C++ core and the file readers (libFuzzer + ASan + UBSan, ${FUZZ_SECONDS:-60} s over two cores)"
# Half the time on the attention core; a quarter each on the safetensors/JSON/config readers and on
# the GGUF reader, one after the other beside it (a core each), so the step takes half of FUZZ_SECONDS.
# New inputs go to build/sanitize/<target>-corpus; the kept corpora in tests/fuzz are only read.
fuzz() {  # target, seconds, kept corpus
  mkdir -p "build/sanitize/$1-corpus" build/sanitize/artifacts
  "build/sanitize/$1" -max_total_time="$2" -print_final_stats=1 -artifact_prefix=build/sanitize/artifacts/ \
    "build/sanitize/$1-corpus" "$3" > "build/sanitize/$1.log" 2>&1
}
fuzz_report() {  # target, its exit status
  if [ "$2" -ne 0 ]; then
    grep -vE '^(INFO|#[0-9]+)' "build/sanitize/$1.log" | head -60
    echo "fuzzing $1 found a problem; the input is in build/sanitize/artifacts/"
    return 1
  fi
  echo "$1: $(grep -E '^stat::(number_of_executed_units|new_units_added)' "build/sanitize/$1.log" | tr '\n' ' ')"
}
seconds=${FUZZ_SECONDS:-60}
readers() {  # the two readers' targets in turn; both run even if the first finds something
  local first=0 second=0
  fuzz checkpoint_fuzzer $(( seconds / 4 )) tests/fuzz/checkpoint-corpus || first=$?
  fuzz gguf_fuzzer $(( seconds / 2 - seconds / 4 )) tests/fuzz/gguf-corpus || second=$?
  echo "$first $second" > build/sanitize/readers.status
}
fuzz attention_fuzzer $(( seconds / 2 )) tests/fuzz/corpus & attention_pid=$!
readers & readers_pid=$!
attention_status=0; wait $attention_pid || attention_status=$?
wait $readers_pid
read -r checkpoint_status gguf_status < build/sanitize/readers.status
fuzz_failed=0
fuzz_report attention_fuzzer $attention_status || fuzz_failed=1
fuzz_report checkpoint_fuzzer $checkpoint_status || fuzz_failed=1
fuzz_report gguf_fuzzer $gguf_status || fuzz_failed=1
[ $fuzz_failed -eq 0 ] || exit 1
echo "== wasm module in Node (vitest)"
MULTIHEAD_REQUIRE_NATIVE=1 MULTIHEAD_NATIVE_DIR=build/sanitize npx vitest run
echo "== TypeScript types (tsc)"
npx tsc -p tests/types/tsconfig.json
echo "== browser (playwright, Debian chromium)"
npx playwright test

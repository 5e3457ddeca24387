import { configDefaults, defineConfig } from 'vitest/config';

// The suite runs twice: on the plain SIMD build, and on the relaxed-SIMD build (fused multiply-add).
// Node 20 validates relaxed SIMD only with --experimental-wasm-relaxed-simd, which the JS API turns
// on by itself unless the process was started with --no-experimental-wasm-relaxed-simd: so each
// project names its build by one of the two flags. The two builds differ only in gemm.cpp (the
// products' arithmetic), so files whose checks no product decides run once, in the first project:
// text handling (tokenizers, the page's pure helpers) and the API's contracts and refusals.
const BUILD_INDEPENDENT = ['tokenizers', 'unigram', 'bpe', 'gguf-tokenizer', 'web', 'errors', 'hostile', 'api-contract',
  'api-fuzz', 'hub', 'vocabulary'].map((name) => `tests/js/${name}.test.mjs`);
export default defineConfig({
  test: {
    include: ['tests/js/**/*.test.mjs'],  // Playwright specs live in tests/browser
    testTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: { name: 'simd', execArgv: ['--no-experimental-wasm-relaxed-simd'], env: { MULTIHEAD_EXPECT_BUILD: 'simd' } },
      },
      {
        extends: true,
        test: {
          name: 'relaxed-simd',
          execArgv: ['--experimental-wasm-relaxed-simd'],
          env: { MULTIHEAD_EXPECT_BUILD: 'relaxed' },
          exclude: [...configDefaults.exclude, ...BUILD_INDEPENDENT],
        },
      },
    ],
  },
});

import { configDefaults, defineConfig } from 'vitest/config';

// The suite runs twice: on the plain SIMD build, and on the relaxed-SIMD build (fused multiply-add).
// Node 20 validates relaxed SIMD only with --experimental-wasm-relaxed-simd, which the JS API turns
// on by itself unless the process was started with --no-experimental-wasm-relaxed-simd: so each
// project names its build by one of the two flags. Files that test text handling (tokenizers, the
// page's pure helpers), where the build's arithmetic decides nothing, run once, in the first project.
const BUILD_INDEPENDENT = ['tests/js/tokenizers.test.mjs', 'tests/js/unigram.test.mjs', 'tests/js/bpe.test.mjs',
  'tests/js/gguf-tokenizer.test.mjs', 'tests/js/web.test.mjs'];
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

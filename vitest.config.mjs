import { defineConfig } from 'vitest/config';

// The suite runs twice: on the plain SIMD build, and on the relaxed-SIMD build (fused multiply-add),
// which Node 20 runs only with --experimental-wasm-relaxed-simd (the JS API picks the build by
// feature detection, so the flag is what selects it).
export default defineConfig({
  test: {
    include: ['tests/js/**/*.test.mjs'],  // Playwright specs live in tests/browser
    testTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'simd', env: { MULTIHEAD_EXPECT_BUILD: 'simd' } } },
      {
        extends: true,
        test: {
          name: 'relaxed-simd',
          execArgv: ['--experimental-wasm-relaxed-simd'],
          env: { MULTIHEAD_EXPECT_BUILD: 'relaxed' },
        },
      },
    ],
  },
});

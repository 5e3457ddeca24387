import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/js/**/*.test.mjs'],  // Playwright specs live in tests/browser
    testTimeout: 60_000,
  },
});

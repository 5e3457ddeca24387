import { defineConfig } from '@playwright/test';

const port = 4179;
export default defineConfig({
  testDir: 'tests/browser',
  timeout: 60_000,
  workers: 2,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    // Debian's Chromium: Playwright's own browser download cannot work on these machines.
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-dev-shm-usage'],
    },
    headless: true,
    // The pages' service worker isolates them and reloads them once on the server without headers:
    // the tests of the service worker itself allow it (isolation.spec.mjs, the offline tests).
    serviceWorkers: 'block',
  },
  // The same files twice: without isolation headers (as a static host that cannot send them), and
  // cross-origin isolated by the server (COOP + COEP headers) on the next port. On the first, the
  // pages' service worker would isolate them and reload them once; the tests there block service
  // workers unless they test them (tests/browser/guard.mjs).
  webServer: [{
    command: `node scripts/serve.mjs --port ${port} --no-isolation`,
    url: `http://127.0.0.1:${port}/package.json`,
    reuseExistingServer: !process.env.CI,
  }, {
    command: `node scripts/serve.mjs --port ${port + 1} --isolated`,
    url: `http://127.0.0.1:${port + 1}/package.json`,
    reuseExistingServer: !process.env.CI,
  }, {
    // The Hugging Face hub's URL layout, imitated on 127.0.0.1 (tests/browser/hub-server.mjs).
    command: `node tests/browser/hub-server.mjs --port ${port + 2}`,
    url: `http://127.0.0.1:${port + 2}/gpt2/resolve/main/config.json`,
    reuseExistingServer: !process.env.CI,
  }],
});

// Shared by every browser test: fail on console errors, page errors, and any request that leaves
// 127.0.0.1 (the page must need nothing from outside).
import { test as base, expect } from '@playwright/test';

export const test = base.extend({
  page: async ({ page }, use) => {
    const problems = [];
    // A test that provokes a network failure on purpose names the console errors it expects.
    const expected = [];
    page.expectConsoleErrors = (...patterns) => expected.push(...patterns);
    page.on('console', (m) => {
      if (m.type() === 'error' && !expected.some((p) => p.test(m.text()))) problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.protocol === 'data:' || url.protocol === 'blob:' || url.hostname === '127.0.0.1') return route.continue();
      problems.push(`request outside 127.0.0.1: ${url.href}`);
      return route.abort();
    });
    await use(page);
    expect(problems, problems.join('\n')).toEqual([]);
  },
});
export { expect };

// On the server without isolation headers, a page the service worker takes over reloads once and
// is then cross-origin isolated (web/common/service-worker.mjs): waits for that, so that a test
// does not act on the page the reload replaces. For tests that allow service workers.
export async function isolatedByServiceWorker(page) {
  await expect.poll(() => page.evaluate(() => globalThis.crossOriginIsolated).catch(() => false), { timeout: 30000 }).toBe(true);
}

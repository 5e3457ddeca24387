// The threaded build (dist/multihead_core_mt): chosen by threads: 'auto' only where the page is
// cross-origin isolated, the same bits as one thread, and the same behaviour on bad input.
import { test, expect } from './guard.mjs';
import { THREAD_SHAPES, expectMisuseHandled, expectSameAtEveryThreadCount } from '../js/thread-checks.mjs';

const ISOLATED = 'http://127.0.0.1:4180';
const FIXTURE = '/tests/browser/fixtures/threads.html';

async function open(page, origin = '') {
  await page.goto(origin + FIXTURE);
  await page.waitForFunction(() => window.ready === true);
}

test('on an isolated page, threads: "auto" loads the threaded build with one thread per core', async ({ page }) => {
  await open(page, ISOLATED);
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const info = await page.evaluate(() => window.runtime());
  expect(info.threadedBuild).toBe(true);
  expect(info.threads).toBe(Math.max(1, Math.min(4, cores)));
  expect(info.simdFloatsPerPacket).toBe(4);
});

for (const shape of THREAD_SHAPES) {
  test(`1, 2 and 3 threads give the same bits, and the float64 reference (${JSON.stringify(shape)})`, async ({ page }) => {
    await open(page, ISOLATED);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const r = await page.evaluate((s) => window.run({ ...s, threadCounts: [1, 2, 3] }), shape);
    // Capped at the workers loaded at start-up: one per extra core, at least one.
    const most = 1 + Math.max(1, Math.min(3, cores - 1));
    expectSameAtEveryThreadCount(expect, r, [1, 2, Math.min(3, most)]);
  });
}

test('bad input on the threaded build: readable errors, no leak, still working', async ({ page }) => {
  await open(page, ISOLATED);
  expectMisuseHandled(expect, await page.evaluate(() => window.misuse()));
});

test('without isolation, "auto" falls back to one thread and asking for more says why', async ({ page }) => {
  await open(page);
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(false);
  const info = await page.evaluate(() => window.runtime());
  expect(info).toMatchObject({ threadedBuild: false, threads: 1 });
  const message = await page.evaluate(async () => {
    const { setThreads } = await import('/bindings/multihead.mjs');
    try { await setThreads(2); return ''; } catch (e) { return e.message; }
  });
  expect(message).toMatch(/cross-origin isolated.*Cross-Origin-Opener-Policy: same-origin.*Cross-Origin-Embedder-Policy: require-corp/);
  const r = await page.evaluate(() => window.run({ dModel: 64, heads: 4, n: 30, causal: false, threadCounts: [1] }));
  expect(r.used).toEqual([1]);
  expect(r.outputError).toBeLessThanOrEqual(1e-5);
});

test('the page on an isolated host computes with threads and shows it', async ({ page }) => {
  await page.goto(`${ISOLATED}/web/index.html`);
  await page.waitForSelector('body[data-ready="true"]');
  await expect(page.locator('#timing')).toContainText(/in a worker, [2-4] threads/);
  await expect(page.locator('#heads canvas')).toHaveCount(4);
});

import { test, expect } from './guard.mjs';
import { maxAbsDiff, randomNormal, referenceAttention, seededRandom } from '../js/reference.mjs';

function problem(seed) {
  const rng = seededRandom(seed);
  const dModel = 32, heads = 4, n = 11, sd = 1 / Math.sqrt(dModel);
  const weights = {
    wq: randomNormal(dModel * dModel, rng, sd), wk: randomNormal(dModel * dModel, rng, sd),
    wv: randomNormal(dModel * dModel, rng, sd), wo: randomNormal(dModel * dModel, rng, sd),
    bq: randomNormal(dModel, rng, 0.1), bk: randomNormal(dModel, rng, 0.1),
    bv: randomNormal(dModel, rng, 0.1), bo: randomNormal(dModel, rng, 0.1),
  };
  const x = randomNormal(n * dModel, rng);
  const want = referenceAttention({ dModel, heads, weights }, x, x, n, n, { causal: true });
  const message = { dModel, heads, x: Array.from(x), causal: true,
    weights: Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, Array.from(v)])) };
  return { message, want };
}

test('the module computes the reference numbers in Chromium, with SIMD', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/module.html');
  await page.waitForFunction(() => window.ready === true);
  const { message, want } = problem(5);
  const got = await page.evaluate((m) => window.run(m), message);
  expect(got.simd).toBe(4);
  expect(maxAbsDiff(got.output, want.output)).toBeLessThanOrEqual(1e-5);
  expect(maxAbsDiff(got.attention, want.attention)).toBeLessThanOrEqual(1e-5);
});

test('the module works unchanged in a module Web Worker', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/module.html');
  await page.waitForFunction(() => window.ready === true);
  const { message, want } = problem(6);
  const got = await page.evaluate((m) => window.runInWorker(m), message);
  expect(got.failed).toBeUndefined();
  expect(maxAbsDiff(got.output, want.output)).toBeLessThanOrEqual(1e-5);
  expect(maxAbsDiff(got.attention, want.attention)).toBeLessThanOrEqual(1e-5);
  expect(got.error).toMatch(/x has 3 values/);
});

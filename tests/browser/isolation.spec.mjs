// Cross-origin isolation on a host that sends no COOP/COEP headers (the Playwright server on the
// base URL, as GitHub Pages): the pages' service worker adds them (web/sw.js), the page reloads
// once (web/common/service-worker.mjs) and runs the threaded build, with the same numbers as one
// thread; hub downloads (CORS, byte ranges) still work; a page outside the worker's reach (the
// widget in someone else's page) runs on one thread and says why.
import { join } from 'node:path';
import { test, expect, isolatedByServiceWorker } from './guard.mjs';
import { FIXTURES, expectedOutputs, maxAbsDiff } from '../js/checkpoints.mjs';

const PAGE = '/web/your-model.html';
const HUB = 'http://127.0.0.1:4181';
const filesOf = (model) => ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']
  .map((name) => join(FIXTURES, model, name));
const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });

// Loads the qwen2 fixture, shows its long case, and returns the page's info line and every head's weights.
async function headsOf(page) {
  await page.setInputFiles('#files', filesOf('qwen2'));
  await expect(page.locator('.mv-info')).toContainText('Loaded in');
  await ready(page);
  const c = expectedOutputs('qwen2')[2];
  await page.locator('#mvText').fill(c.text);
  await ready(page);
  const heads = [];
  for (let layer = 1; layer <= 2; layer += 1)
    for (let head = 1; head <= 4; head += 1) {
      await page.getByRole('button', { name: new RegExp(`^Layer ${layer}, head ${head}\\b`) }).click();
      heads.push(await page.evaluate(() => Array.from(document.querySelector('.mv-head canvas')._model.weights)));
    }
  return { info: await page.locator('.mv-info').textContent(), heads, c };
}

test.describe('on a host without isolation headers', () => {
  test.use({ serviceWorkers: 'allow' });

  test('the service worker isolates the page: threads, and the same heatmaps as one thread, bit for bit', async ({ page, browser }) => {
    await page.goto(PAGE);
    await isolatedByServiceWorker(page);
    await ready(page);
    const threaded = await headsOf(page);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    expect(threaded.info).toContain(cores > 1 ? `on ${Math.min(cores, 16)} threads` : 'on one thread');
    // The same page with no service worker: not isolated, one thread, and the page says why.
    const plain = await (await browser.newContext({ baseURL: test.info().project.use.baseURL, serviceWorkers: 'block' })).newPage();
    await plain.goto(PAGE);
    await ready(plain);
    expect(await plain.evaluate(() => crossOriginIsolated)).toBe(false);
    const single = await headsOf(plain);
    expect(single.info).toContain('on one thread (the page is not cross-origin isolated)');
    const { c } = single, n = c.ids.length;
    single.heads.forEach((weights, i) => {
      expect(threaded.heads[i], `head ${i}`).toEqual(weights);
      expect(maxAbsDiff(weights, c.attentions.subarray(i * n * n, (i + 1) * n * n)), `head ${i}`).toBeLessThan(1e-4);
    });
    await plain.context().close();
  });

  test('a hub download (another origin: CORS, byte ranges) still works under the worker\'s isolation', async ({ page }) => {
    await page.goto(PAGE);
    await isolatedByServiceWorker(page);
    await ready(page);
    await page.locator('#hubId').fill(`${HUB}/llama/resolve/main/`);
    await page.locator('#hubLoad').click();
    await expect(page.locator('#confirmText')).toContainText('model.safetensors');
    await page.locator('#download').click();
    await expect(page.locator('.mv-info')).toContainText('Loaded in');
    await ready(page);
    await expect(page.locator('.mv-thumb')).toHaveCount(8);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await page.getByRole('button', { name: /^Delete/ }).click();
  });

  test('the widget in a page the worker does not serve runs on one thread and says why', async ({ page }) => {
    await page.goto('/tests/browser/fixtures/widget-model.html');
    const local = page.locator('#local');
    await expect(local).toHaveAttribute('data-ready', 'true', { timeout: 30000 });
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(false);
    await expect(local.locator('.mv-info')).toContainText('on one thread (the page is not cross-origin isolated)');
  });
});

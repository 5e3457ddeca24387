// The page and the widget under a strict Content-Security-Policy: no inline scripts or styles,
// no eval. WebAssembly compilation needs 'wasm-unsafe-eval'; Embind needs no 'unsafe-eval'
// because the module is built with -sDYNAMIC_EXECUTION=0.
import { test, expect } from './guard.mjs';

const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; " +
  "img-src 'self' data: blob:; connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'";

test.beforeEach(async ({ page }) => {
  await page.route('**/*', async (route) => {
    if (new URL(route.request().url()).hostname !== '127.0.0.1') return route.fallback();
    const response = await route.fetch();
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': CSP } });
  });
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(`${e.violatedDirective}: ${e.blockedURI}`));
  });
});

test('the page works under a strict CSP', async ({ page }) => {
  await page.goto('/web/index.html#text=Strict+policy+still+works&h=2&d=16&kv=2');
  await page.waitForSelector('body[data-ready="true"]');
  expect(await page.locator('#heads canvas').count()).toBe(2);
  await page.locator('#text').fill('typing under the policy');
  await expect(page.locator('#tokens .token')).toHaveCount(4);
  expect(await page.evaluate(() => window.cspViolations)).toEqual([]);
});

test('the widget works under a strict CSP', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/lazy.html');
  await page.locator('#far').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#far').shadowRoot.querySelector('canvas')?._model);
  const border = await page.locator('#far').evaluate((el) => getComputedStyle(el).borderTopStyle);
  expect(border).toBe('solid');  // the widget's own stylesheet applied
  expect(await page.evaluate(() => window.cspViolations)).toEqual([]);
});

test('the trained-model view works under a strict CSP', async ({ page }) => {
  await page.goto('/web/model.html#text=Strict+policy+still+works&off=1.1');
  await page.waitForSelector('body[data-ready="true"]');
  await expect(page.locator('#grid canvas')).toHaveCount(8);
  await expect(page.locator('.prediction')).toHaveCount(2);
  expect(await page.evaluate(() => window.cspViolations)).toEqual([]);
});

test('the training playground works under a strict CSP', async ({ page }) => {
  await page.goto('/web/playground.html#task=copy&layers=1&heads=2&d=16&step=20');
  await page.waitForFunction(() => document.querySelector('.pg')?.dataset.steps === '20');
  await expect(page.locator('.pg-heads canvas')).toHaveCount(2);
  expect(await page.evaluate(() => window.cspViolations)).toEqual([]);
});

test('the page with threads (cross-origin isolated host) works under a strict CSP', async ({ page }) => {
  // The pool's Web Workers are same-origin scripts that import the module: worker-src and
  // script-src 'self' cover them.
  await page.goto('http://127.0.0.1:4180/web/index.html#text=Threads+under+the+policy&h=4&d=256&kv=4');
  await page.waitForSelector('body[data-ready="true"]');
  await expect(page.locator('#timing')).toContainText(/[2-4] threads/);
  await expect(page.locator('#heads canvas')).toHaveCount(4);
  expect(await page.evaluate(() => window.cspViolations)).toEqual([]);
});

test('"Your model" works under a strict CSP (files from the input, the worker, the view)', async ({ page }) => {
  const { join } = await import('node:path');
  await page.goto('/web/your-model.html#text=Strict+policy+still+works&head=2.1');
  await page.waitForSelector('body[data-ready="true"]');
  await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(process.cwd(), 'tests/fixtures/hf/gpt2', f)));
  await expect(page.locator('.mv-thumb')).toHaveCount(8);
  await page.waitForSelector('body[data-ready="true"]');
  await expect(page.locator('.mv-roles tbody tr')).toHaveCount(8);
  expect(await page.evaluate(() => window.cspViolations)).toEqual([]);
});

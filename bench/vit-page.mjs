// The image view of "Your model" in Chromium with ViT-B/16's shape (random F32 weights,
// scripts/make-random-checkpoint.mjs --size vit-base; a measurement, not a test): from a demo
// picture's click to its overlays drawn — preprocessing and the run with every attention in the
// worker, the transfer, the figure, the 144-tile grid and the labels — as medians of 9 pictures,
// on a plain host (one thread) and a cross-origin isolated one (the threaded build, a thread a core).
// Usage (after npm run build:wasm): node bench/vit-page.mjs [--isolated-only]
import { chromium } from '@playwright/test';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const DIR = 'build/vit-base-random';
if (!existsSync(join(DIR, 'model.safetensors'))) execFileSync(process.execPath, ['scripts/make-random-checkpoint.mjs', DIR, '--size', 'vit-base'], { stdio: 'inherit' });
const hosts = [['one thread', 4189, '--no-isolation'], ['cross-origin isolated (threads)', 4190, '--isolated']]
  .filter(([, , flag]) => flag === '--isolated' || !process.argv.includes('--isolated-only'));
const servers = hosts.map(([, port, flag]) => spawn(process.execPath, ['scripts/serve.mjs', '--port', String(port), flag], { stdio: 'ignore' }));
await new Promise((resolve) => setTimeout(resolve, 600));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'] });
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 120000 });
try {
  for (const [host, port] of hosts) {
    const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
    page.on('pageerror', (e) => console.log('page error:', e.message));
    await page.goto(`http://127.0.0.1:${port}/web/your-model.html#image=cat`);
    await ready(page);
    const started = Date.now();
    await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'preprocessor_config.json'].map((f) => join(DIR, f)));
    await page.waitForSelector('.iv-timing[data-total-ms]', { timeout: 120000 });
    await ready(page);
    const firstMs = Date.now() - started;
    const info = await page.locator('.mv-info').textContent();
    const runs = [];
    for (let i = 0; i < 9; i += 1) {
      const name = ['ball', 'boats', 'cat'][i % 3];
      await page.locator(`.iv-source button[data-demo="${name}"]`).click();
      await page.waitForFunction((name) => document.body.dataset.ready === 'true' && document.querySelector('.iv-current').textContent.includes(`“${name}”`), name, { timeout: 60000 });
      runs.push(await page.locator('.iv-timing').evaluate((t) => ({ forward: Number(t.dataset.forwardMs), draw: Number(t.dataset.drawMs), total: Number(t.dataset.totalMs) })));
    }
    console.log(`${host}: ${info.match(/runs in a worker on [^.]*/)?.[0]}; files → first overlays ${(firstMs / 1000).toFixed(1)} s; ` +
      `a picture → its overlays: median ${median(runs.map((r) => r.total)).toFixed(0)} ms (the run in the worker ${median(runs.map((r) => r.forward)).toFixed(0)} ms, ` +
      `drawing ${median(runs.map((r) => r.draw)).toFixed(1)} ms; all: ${runs.map((r) => r.total.toFixed(0)).join(', ')})`);
    await page.context().close();
  }
} finally {
  await browser.close();
  for (const s of servers) s.kill();
}

// The packed tarball (npm pack), installed into a Vite app and bundled, works in Chromium.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { test, expect } from './guard.mjs';

const work = 'build/package-test';

test.beforeAll(() => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(`${work}/app/node_modules/multihead`, { recursive: true });
  execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, npm_config_loglevel: 'error' } });
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  // What `npm install ./multihead-x.y.z.tgz` puts in node_modules, without a registry round trip.
  execFileSync('tar', ['-xzf', `${work}/${tarball}`, '--strip-components=1', '-C', `${work}/app/node_modules/multihead`]);
  cpSync('tests/package-app', `${work}/app`, { recursive: true });
  // An app of its own: inside this repository without a package.json, Node resolved 'multihead'
  // to the repository itself (a package's self-reference comes before node_modules), and a file
  // missing from the tarball went unnoticed.
  writeFileSync(`${work}/app/package.json`, `${JSON.stringify({ name: 'multihead-package-test', private: true, type: 'module' })}\n`);
  execFileSync('node_modules/.bin/vite', ['build', `${work}/app`, '--outDir', '../dist', '--base', './', '--emptyOutDir', '--logLevel', 'error'], { stdio: 'inherit' });
});

test('a Vite app that installs the packed tarball runs the module', async ({ page }) => {
  const shipped = readdirSync(`${work}/app/node_modules/multihead`, { recursive: true }).map(String).sort();
  expect(shipped).toEqual(expect.arrayContaining(['README.md', 'bindings/multihead.d.ts', 'bindings/multihead.mjs', 'dist/multihead_core.mjs', 'dist/multihead_core.wasm', 'package.json', 'web/widget.js', 'web/widget/widget.js', 'web/index.html', 'web/attention/session.mjs', 'bindings/image-processing.mjs', 'web/your-model/images/cat.png']));
  expect(shipped.filter((f) => f.startsWith('src') || f.startsWith('tests'))).toEqual([]);
  // Every module of the API ships (bindings/multihead.mjs imports them all).
  const modules = readdirSync('bindings', { recursive: true }).map(String).filter((f) => f.endsWith('.mjs')).map((f) => `bindings/${f}`);
  expect(shipped).toEqual(expect.arrayContaining(modules));
  const assets = readdirSync(`${work}/dist/assets`);
  expect(assets.some((f) => f.endsWith('.wasm'))).toBe(true);  // Vite emitted the wasm as an asset

  await page.goto(`/${work}/dist/index.html`);
  await page.waitForFunction(() => window.multiheadResult !== undefined);
  const result = await page.evaluate(() => window.multiheadResult);
  expect(result.simd).toBe(4);
  expect(result).toMatchObject({ threads: 1, threadedBuild: false });  // not cross-origin isolated
  expect(result.output).toHaveLength(24);
  expect(result.output.every(Number.isFinite)).toBe(true);
  // Causal rows: query 0 attends only to key 0.
  expect(result.attention.slice(0, 3)).toEqual([1, 0, 0]);
  // Same seed, same weights as the Node build of the same package.
  const { createMultiHeadAttention } = await import('../../bindings/multihead.mjs');
  const mha = await createMultiHeadAttention({ dModel: 8, heads: 2, seed: 3 });
  expect(result.weights).toEqual(Array.from(mha.getWeights().wq));
  // The widget, imported from the bundle as 'multihead/widget', renders too.
  await page.waitForFunction(() => document.querySelector('#widget')?.shadowRoot?.querySelector('canvas')?._model);
  expect(await page.locator('#widget').evaluate((el) => el.shadowRoot.querySelectorAll('canvas').length)).toBe(2);
});

test('the installed package in Node: threads on its own worker_threads build, and the process ends by itself', () => {
  const shipped = readdirSync(`${work}/app/node_modules/multihead/dist/node`).sort();
  expect(shipped).toEqual(['multihead_core_mt.js', 'multihead_core_mt.wasm', 'multihead_core_mt.worker.js',
    'multihead_core_mt_relaxed.js', 'multihead_core_mt_relaxed.wasm', 'multihead_core_mt_relaxed.worker.js', 'package.json']);
  const script = `
    import { createMultiHeadAttention, loadMultihead, runtimeInfo } from 'multihead';
    await loadMultihead({ threads: 'auto' });
    const mha = await createMultiHeadAttention({ dModel: 128, heads: 4, seed: 3 });
    const { output } = mha.forward(new Float32Array(40 * 128).map((_, i) => Math.sin(i)));
    const { threads, threadedBuild, relaxedSimd } = await runtimeInfo();
    const installed = import.meta.resolve('multihead').includes('/node_modules/multihead/');
    console.log(JSON.stringify({ installed, threads, threadedBuild, relaxedSimd, finite: output.every(Number.isFinite) }));`;
  const cores = availableParallelism();
  // No flag: the fused build (Node 20's relaxed-SIMD flag turned on by the API); --no-…: plain.
  for (const [flags, relaxedSimd] of [[[], true], [['--experimental-wasm-relaxed-simd'], true], [['--no-experimental-wasm-relaxed-simd'], false]]) {
    const out = execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script],
      { cwd: `${work}/app`, encoding: 'utf8', timeout: 30_000 });
    expect(JSON.parse(out)).toEqual({ installed: true, threads: cores > 1 ? Math.min(16, cores) : 1, threadedBuild: cores > 1, relaxedSimd, finite: true });
  }
});

test('the same bundle on a cross-origin isolated host runs the threaded build', async ({ page }) => {
  await page.goto(`http://127.0.0.1:4180/${work}/dist/index.html`);
  await page.waitForFunction(() => window.multiheadResult !== undefined);
  const result = await page.evaluate(() => window.multiheadResult);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  expect(result).toMatchObject({ simd: 4, threadedBuild: true, threads: Math.min(4, cores), sameAtEveryThreadCount: true });
  expect(result.attention.slice(0, 3)).toEqual([1, 0, 0]);
  await page.waitForFunction(() => document.querySelector('#widget')?.shadowRoot?.querySelector('canvas')?._model);
});

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

// The integer dot-add (src/core/gemm_tuning.h) in Chromium: the first product over blocks measures
// it (Chromium's V8 computes it exactly in both its compilers, where Node 20's baseline one does
// not: tests/js/gguf.test.mjs), and the products give the same bits with it, in prefill's tiles
// and decoding's row, for 8-bit, 4-bit and Q4_K_M's 4- and 6-bit blocks. It is on only where it
// also measured faster: this runner's CPU has no dot-add instruction, so it is forced on here.
test('the integer dot-add measures exact in Chromium, and gives the products over blocks the same bits', async ({ page }) => {
  await page.goto('/tests/browser/fixtures/module.html');
  await page.waitForFunction(() => window.ready === true);
  const got = await page.evaluate(async () => {
    const { loadMultihead, loadPretrained, runtimeInfo } = await import('../../../bindings/multihead.mjs');
    const core = await loadMultihead();
    const bits = (x) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length)).join(',');
    const out = { differing: {} };
    for (const name of ['llama-q8_0', 'qwen2-q4_0', 'llama-q4_k_m']) {
      const bytes = new Uint8Array(await (await fetch(`/tests/fixtures/gguf/${name}/model.gguf`)).arrayBuffer());
      const model = await loadPretrained(bytes);
      const ids = Int32Array.from({ length: 12 }, (_, i) => (i * 37 + 5) % model.config.vocabSize);
      const once = () => {
        const prefill = model.run(ids), context = model.createContext(), steps = [];
        for (let i = 1; i <= ids.length; i += 1) steps.push(bits(context.run(ids.subarray(0, i), { attentions: false, logits: [i - 1], reusePrefix: true }).logits));
        context.dispose();
        return [bits(prefill.logits), bits(prefill.attentions), ...steps];
      };
      const off = once();
      out.info = (await runtimeInfo()).integerDotAdd;
      out.relaxed = (await runtimeInfo()).relaxedSimd;
      out.accepted = core.setIntegerDotAdd(true);
      const on = once();
      core.setIntegerDotAdd(false);
      out.differing[name] = on.filter((x, i) => x !== off[i]).length;
      model.dispose();
    }
    return out;
  });
  expect(got.relaxed).toBe(true);
  expect(got.info).toMatchObject({ measured: true, exact: true });
  expect(got.accepted).toBe(true);
  expect(got.differing).toEqual({ 'llama-q8_0': 0, 'qwen2-q4_0': 0, 'llama-q4_k_m': 0 });
});

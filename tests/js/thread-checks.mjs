// Checks of the threaded build that run the same in Node (tests/js/threads.test.mjs) and in a
// cross-origin isolated page (tests/browser/fixtures/threads.mjs, driven by
// tests/browser/threads.spec.mjs): the same forward pass at any thread count, bits included, and
// bad input on the threaded build. The runs happen where the build runs; the expectations on their
// results are here too, given the test runner's `expect` (Vitest's or Playwright's).
import { createMultiHeadAttention, loadMultihead, runtimeInfo, setThreads } from '../../bindings/multihead.mjs';
import { maxAbsDiff, referenceAttention } from './reference.mjs';

// Shapes whose forward pass is split over the threads in different ways.
export const THREAD_SHAPES = [
  { dModel: 256, heads: 8, n: 40, causal: true },                 // the projections split
  { dModel: 72, heads: 3, kvHeads: 1, n: 150, causal: false }, // multi-query, 9 panels
  { dModel: 40, heads: 5, n: 200, causal: true },                 // odd d_k, 4 query blocks
];

// One forward pass per entry of `threadCounts` on the same seeded layer and input. Returns the
// thread count each call really ran with, whether each call's output and weights are the same bits
// as the first call's, and the first call's largest difference from the float64 reference
// (computed where it runs, so that only a few numbers cross back from a page).
export async function runAtThreadCounts({ dModel, heads, kvHeads = heads, n, causal, threadCounts, seed = 1 }) {
  const mha = await createMultiHeadAttention({ dModel, heads, kvHeads, seed });
  const x = new Float32Array(n * dModel).map((_, i) => Math.sin(i * 0.37 + seed));
  const runs = [];
  for (const threads of threadCounts) {
    const used = await setThreads(threads);
    runs.push({ used, ...mha.forward(x, { causal, returnAttention: true }) });
  }
  const want = referenceAttention({ dModel, heads, kvHeads, weights: mha.getWeights() }, x, x, n, n, { causal });
  mha.dispose();
  await loadMultihead({ threads: 'auto' });  // back to the default count
  const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
  return {
    used: runs.map((r) => r.used),
    sameBits: runs.map((r) => same(r.output, runs[0].output) && same(r.attentions, runs[0].attentions)),
    outputError: maxAbsDiff(runs[0].output, want.output),
    attentionError: maxAbsDiff(runs[0].attentions, want.attention),
    finite: runs.every((r) => r.output.every(Number.isFinite)),
  };
}

// Bad calls on the threaded build: each must throw a readable Error, leak nothing, and leave the
// module working.
export async function misuse() {
  const mha = await createMultiHeadAttention({ dModel: 256, heads: 8, seed: 2 });
  const x = new Float32Array(64 * 256).fill(0.5);
  mha.forward(x);
  const before = await runtimeInfo();
  const errors = [];
  const attempt = (f) => { try { f(); errors.push(''); } catch (e) { errors.push(`${e.constructor.name}: ${e.message}`); } };
  for (let i = 0; i < 200; ++i) {
    attempt(() => mha.forward(new Float32Array(255)));
    attempt(() => mha.forward(x.map((v, j) => (j === 300 ? NaN : v))));
  }
  let badConfig = '';
  try { await createMultiHeadAttention({ dModel: 250, heads: 8 }); } catch (e) { badConfig = e.message; }
  const after = await runtimeInfo();
  const { output } = mha.forward(x);
  mha.dispose();
  return { errors: errors.slice(0, 2), badConfig, before, after, finite: output.every(Number.isFinite) };
}

// runAtThreadCounts(…, threadCounts: [1, 2, 3]): each call ran with the thread count `used` says,
// gave the first call's bits, and matched the float64 reference.
export function expectSameAtEveryThreadCount(expect, r, used) {
  expect(r.used).toEqual(used);
  expect(r.sameBits).toEqual([true, true, true]);
  expect(r.outputError).toBeLessThanOrEqual(1e-5);
  expect(r.attentionError).toBeLessThanOrEqual(1e-5);
}

// misuse(): readable errors, nothing leaked, still working.
export function expectMisuseHandled(expect, r) {
  expect(r.errors[0]).toMatch(/^Error: multihead: x has 255 values/);
  expect(r.errors[1]).toMatch(/^Error: multihead: .*NaN at index 300/);
  expect(r.badConfig).toMatch(/dModel \(250\) must be divisible by heads \(8\)/);
  expect(r.after.allocatedBytes).toBe(r.before.allocatedBytes);
  expect(r.after.heapBytes).toBe(r.before.heapBytes);
  expect(r.finite).toBe(true);
}

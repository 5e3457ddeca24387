// Property-based tests of the JS API (fast-check): thousands of random calls, each either matching
// the independent float64 reference or throwing an Error that says what is wrong.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createMultiHeadAttention, runtimeInfo } from '../../bindings/multihead.mjs';
import { maxAbsDiff, referenceAttention, seededRandom } from './reference.mjs';

const SPLITS = [[4, 1], [4, 2], [8, 2], [8, 4], [12, 3], [16, 4], [24, 6], [32, 8], [32, 2]];

const layerSpec = fc.record({
  split: fc.constantFrom(...SPLITS),
  kvPick: fc.nat(),
  bias: fc.boolean(),
  temperature: fc.double({ min: 0.25, max: 4, noNaN: true }),
  nQ: fc.integer({ min: 1, max: 12 }),
  nK: fc.integer({ min: 1, max: 12 }),
  cross: fc.boolean(),
  causal: fc.boolean(),
  maskKind: fc.constantFrom('none', 'padding', 'blocked', 'additive'),
  seed: fc.integer({ min: 0, max: 2 ** 30 }),
});

// Deterministic pseudo-random numbers for one case (fast-check's shrinking works on the spec).
function numbers(seed, count, scale = 1) {
  const random = seededRandom(seed);
  return Float32Array.from({ length: count }, () => (random() * 2 - 1) * scale);
}

describe('random valid calls match the float64 reference', () => {
  it('500 random layers, shapes, masks and inputs: max abs error ≤ 1e-5', async () => {
    // Node loads the threaded build by default, whose pool starts its threads (a few bytes of the
    // heap, once) on the first call large enough to split: made here, before the leak count starts.
    const warm = await createMultiHeadAttention({ dModel: 256, heads: 4 });
    warm.forward(numbers(1, 64 * 256));
    warm.dispose();
    const before = (await runtimeInfo()).allocatedBytes;
    await fc.assert(fc.asyncProperty(layerSpec, async (s) => {
      const [dModel, heads] = s.split;
      const kvChoices = [1, 2, 3, 4, 6, 8].filter((k) => heads % k === 0);
      const kvHeads = kvChoices[s.kvPick % kvChoices.length];
      const mha = await createMultiHeadAttention({ dModel, heads, kvHeads, bias: s.bias, temperature: s.temperature, seed: s.seed });
      try {
        const nK = s.cross ? s.nK : s.nQ;
        const dKv = kvHeads * (dModel / heads);
        const sd = 1 / Math.sqrt(dModel);
        const weights = {
          wq: numbers(s.seed + 1, dModel * dModel, sd * 1.7), wk: numbers(s.seed + 2, dModel * dKv, sd * 1.7),
          wv: numbers(s.seed + 3, dModel * dKv, sd * 1.7), wo: numbers(s.seed + 4, dModel * dModel, sd * 1.7),
          ...(s.bias ? { bq: numbers(s.seed + 5, dModel, 0.2), bk: numbers(s.seed + 6, dKv, 0.2), bv: numbers(s.seed + 7, dKv, 0.2), bo: numbers(s.seed + 8, dModel, 0.2) } : {}),
        };
        mha.setWeights(weights);
        const xq = numbers(s.seed + 9, s.nQ * dModel, 2);
        const xkv = s.cross ? numbers(s.seed + 10, nK * dModel, 2) : xq;
        const bits = numbers(s.seed + 11, s.nQ * nK);
        const mask = {};
        const options = { causal: s.causal && !s.cross, returnAttention: true };
        if (s.maskKind === 'padding') options.keyPaddingMask = mask.keyPaddingMask = Uint8Array.from({ length: nK }, (_, j) => (bits[j] > 0.5 ? 1 : 0));
        if (s.maskKind === 'blocked') options.mask = mask.blocked = Uint8Array.from(bits, (b) => (b > 0.4 ? 1 : 0));
        if (s.maskKind === 'additive') options.mask = mask.additive = Float32Array.from(bits, (b) => (b > 0.8 ? -Infinity : b * 3));
        mask.causal = options.causal;
        if (s.cross) options.keysValues = xkv;
        const got = mha.forward(xq, options);
        const want = referenceAttention({ dModel, heads, kvHeads, temperature: s.temperature, weights }, xq, xkv, s.nQ, nK, mask);
        expect(maxAbsDiff(got.output, want.output)).toBeLessThanOrEqual(1e-5);
        expect(maxAbsDiff(got.attentions, want.attention)).toBeLessThanOrEqual(1e-5);
      } finally {
        mha.dispose();
      }
    }), { numRuns: 500, seed: 20261122 });
    expect((await runtimeInfo()).allocatedBytes).toBe(before);
  });
});

// Anything a caller might pass: good and bad configs, lengths, values and masks.
const anyValue = fc.oneof(
  { weight: 30, arbitrary: fc.double({ min: -4, max: 4, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(NaN, Infinity, -Infinity, 1e30, -1e30, 1e-40, 3.4e38, 0) },
);
// Mostly well-formed, so both outcomes are exercised; every field can also be wrong.
const often = (good, bad) => fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: bad });
const anyCall = fc.record({
  dModel: often(fc.constantFrom(4, 8, 12, 16), fc.integer({ min: -3, max: 40 })),
  heads: often(fc.constantFrom(1, 2, 4), fc.integer({ min: -1, max: 9 })),
  kvHeads: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined, freq: 2 }),
  rows: fc.integer({ min: 0, max: 6 }),
  extra: often(fc.constant(0), fc.integer({ min: -2, max: 2 })),
  values: fc.array(anyValue, { minLength: 1, maxLength: 8 }),
  mask: often(fc.constantFrom('none', 'ok-blocked'), fc.constantFrom('short', 'ambiguous', 'nan-additive', 'padding-short')),
  causal: often(fc.boolean(), fc.constant('yes')),
  returnAttention: fc.boolean(),
  head: often(fc.constant(-1), fc.integer({ min: -1, max: 5 })),
});

describe('random calls, valid or not', () => {
  it('3,000 calls: a finite result or an Error that names the problem; nothing leaks', async () => {
    const run = async (seed) => {
      let failures = 0, successes = 0;
      await fc.assert(fc.asyncProperty(anyCall, async (c) => {
        let mha;
        try {
          mha = await createMultiHeadAttention({ dModel: c.dModel, heads: c.heads, kvHeads: c.kvHeads });
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
          expect(e.message).toMatch(/^multihead: \w+/);
          failures++;
          return;
        }
        try {
          const len = Math.max(0, c.rows * c.dModel + c.extra);
          const x = Float32Array.from({ length: len }, (_, i) => c.values[i % c.values.length]);
          const n = Math.floor(len / c.dModel) || 1;
          const options = { causal: c.causal, returnAttention: c.returnAttention };
          if (c.mask === 'short') options.mask = new Uint8Array(n * n - 1);
          if (c.mask === 'ambiguous') options.mask = new Array(n * n).fill(1);
          if (c.mask === 'nan-additive') options.mask = new Float32Array(n * n).fill(NaN);
          if (c.mask === 'ok-blocked') options.mask = new Uint8Array(n * n);
          if (c.mask === 'padding-short') options.keyPaddingMask = new Uint8Array(Math.max(0, n - 1));
          const result = c.head >= 0 ? mha.trace(x, { ...options, head: c.head }) : mha.forward(x, options);
          expect(result.output.every(Number.isFinite)).toBe(true);
          if (result.attentions) expect(result.attentions.every((a) => a >= 0 && a <= 1)).toBe(true);
          successes++;
        } catch (e) {
          expect(e).toBeInstanceOf(Error);
          expect(e.message).toMatch(/^multihead: .{10,}/);
          failures++;
        } finally {
          mha.dispose();
        }
      }), { numRuns: 1500, seed });
      return { failures, successes };
    };
    const warm = await run(1);
    const before = await runtimeInfo();
    const second = await run(2);
    const after = await runtimeInfo();
    expect(after.allocatedBytes).toBe(before.allocatedBytes);
    expect(after.heapBytes).toBe(before.heapBytes);
    console.log(`random calls: ${warm.successes + second.successes} succeeded, ${warm.failures + second.failures} threw a clear Error`);
    // Both outcomes were exercised.
    expect(warm.successes + second.successes).toBeGreaterThan(200);
    expect(warm.failures + second.failures).toBeGreaterThan(300);
  });
});

describe('numerics', () => {
  it('scores of magnitude 1e4 still give the reference softmax (bound: 4·d_k·|s|max·2⁻²⁴)', async () => {
    const dModel = 16, heads = 4, dk = 4, n = 7;
    const mha = await createMultiHeadAttention({ dModel, heads });
    const weights = { wq: numbers(1, 256, 40), wk: numbers(2, 256, 40), wv: numbers(3, 256, 0.3), wo: numbers(4, 256, 0.3) };
    mha.setWeights(weights);
    const x = numbers(5, n * dModel, 3);
    const got = mha.forward(x, { returnAttention: true });
    const want = referenceAttention({ dModel, heads, weights: { ...weights, bq: new Float32Array(16), bk: new Float32Array(16), bv: new Float32Array(16), bo: new Float32Array(16) } }, x, x, n, n);
    const t = mha.trace(x, { head: 0 });
    let sMax = 0;
    for (let h = 0; h < heads; h++) for (const s of mha.trace(x, { head: h }).scaled) sMax = Math.max(sMax, Math.abs(s));
    expect(sMax).toBeGreaterThan(1e3);
    const bound = 4 * dk * sMax * 2 ** -24 + 1e-6;
    expect(got.attentions.every(Number.isFinite)).toBe(true);
    expect(maxAbsDiff(got.attentions, want.attention)).toBeLessThanOrEqual(bound);
    expect(t.attention.every((a) => a >= 0 && a <= 1)).toBe(true);
  });
});

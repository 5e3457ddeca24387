import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMultiHeadAttention, relaxedSimdAvailable, runtimeInfo } from '../../bindings/multihead.mjs';
import { maxAbsDiff, randomNormal, referenceAttention, seededRandom } from './reference.mjs';
import { nativeTool } from './native-tools.mjs';

async function randomLayer({ dModel, heads, kvHeads = heads, bias = true, seed = 1, ...rest }) {
  const mha = await createMultiHeadAttention({ dModel, heads, kvHeads, bias, ...rest });
  const rng = seededRandom(seed);
  const dKv = kvHeads * (dModel / heads);
  const sd = 1 / Math.sqrt(dModel);
  const weights = {
    wq: randomNormal(dModel * dModel, rng, sd), wk: randomNormal(dModel * dKv, rng, sd),
    wv: randomNormal(dModel * dKv, rng, sd), wo: randomNormal(dModel * dModel, rng, sd),
  };
  if (bias) {
    Object.assign(weights, {
      bq: randomNormal(dModel, rng, 0.1), bk: randomNormal(dKv, rng, 0.1),
      bv: randomNormal(dKv, rng, 0.1), bo: randomNormal(dModel, rng, 0.1),
    });
  }
  mha.setWeights(weights);
  return { mha, layer: { dModel, heads, kvHeads, weights, ...rest }, rng };
}

describe('the wasm build', () => {
  it('runs Eigen vectorized (4 floats per SIMD packet, not the scalar fallback)', async () => {
    expect((await runtimeInfo()).simdFloatsPerPacket).toBe(4);
  });

  // vitest.config.mjs runs the suite once per build; this checks that each run has the build it
  // names, picked by feature detection (Node 20 validates relaxed SIMD only with its flag).
  it('is the build this run of the suite is for (plain SIMD, or relaxed SIMD with fused multiply-add)', async () => {
    const info = await runtimeInfo();
    const expected = process.env.MULTIHEAD_EXPECT_BUILD;
    if (expected) expect(info.relaxedSimd).toBe(expected === 'relaxed');
    expect(info.gemmKernel).toBe(info.relaxedSimd ? 'wasm SIMD (fused multiply-add)' : 'wasm SIMD');
    expect(relaxedSimdAvailable()).toBe(info.relaxedSimd);
  });

  // As a user's program runs: a Node process started with no flag. Node 20 validates relaxed SIMD
  // only with --experimental-wasm-relaxed-simd, which 'auto' turns on by itself; relaxedSimd: false
  // and the flag's --no- form each keep the plain build (and leave V8's flag as it was).
  it("picks the build in a plain `node` process: 'auto' fused, relaxedSimd: false or --no-experimental-wasm-relaxed-simd plain", () => {
    const api = join(process.cwd(), 'bindings/multihead.mjs');
    const run = (flags, options) => JSON.parse(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', `
      import { createMultiHeadAttention, loadMultihead, relaxedSimdAvailable, runtimeInfo } from ${JSON.stringify(api)};
      const before = relaxedSimdAvailable();
      await loadMultihead(${JSON.stringify(options)});
      const mha = await createMultiHeadAttention({ dModel: 64, heads: 4, seed: 2 });
      const { output } = mha.forward(Float32Array.from({ length: 40 * 64 }, (_, i) => Math.sin(i * 0.3)));
      const { relaxedSimd, gemmKernel } = await runtimeInfo();
      console.log(JSON.stringify({ before, after: relaxedSimdAvailable(), relaxedSimd, gemmKernel, output: [...output] }));`],
    { encoding: 'utf8', timeout: 30_000 }));
    const auto = run([], {});
    expect(auto).toMatchObject({ after: true, relaxedSimd: true, gemmKernel: 'wasm SIMD (fused multiply-add)' });
    const plain = run([], { relaxedSimd: false });
    expect(plain).toMatchObject({ after: plain.before, relaxedSimd: false, gemmKernel: 'wasm SIMD' });
    const refused = run(['--no-experimental-wasm-relaxed-simd'], {});
    expect(refused).toMatchObject({ before: false, after: false, relaxedSimd: false, gemmKernel: 'wasm SIMD' });
    expect(refused.output).toEqual(plain.output);  // the plain build: the same bits in any process
    // Fused multiply-adds round once where mul + add round twice: close, and not a different layer.
    const scale = Math.max(...plain.output.map(Math.abs));
    expect(maxAbsDiff(Float32Array.from(auto.output), Float32Array.from(plain.output))).toBeLessThan(1e-5 * scale);
  });
});

describe('agreement with the float64 reference (max abs error ≤ 1e-5)', () => {
  const cases = [
    { name: 'n = 1', dModel: 16, heads: 4, n: 1 },
    { name: 'n = 7, no bias', dModel: 32, heads: 4, n: 7, bias: false },
    { name: 'causal, n = 70 (two query blocks)', dModel: 64, heads: 8, n: 70, causal: true },
    { name: 'key padding', dModel: 32, heads: 2, n: 12, padding: true },
    { name: 'grouped-query (8 heads, 2 kv heads), causal', dModel: 64, heads: 8, kvHeads: 2, n: 33, causal: true },
    { name: 'multi-query (1 kv head)', dModel: 48, heads: 6, kvHeads: 1, n: 9 },
    { name: 'temperature 2', dModel: 32, heads: 4, n: 10, temperature: 2 },
    { name: 'n = 300, d_model 512, 8 heads, causal and padded', dModel: 512, heads: 8, n: 300, causal: true, padding: true },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { mha, layer, rng } = await randomLayer({ dModel: c.dModel, heads: c.heads, kvHeads: c.kvHeads ?? c.heads, bias: c.bias ?? true, seed: c.n, ...(c.temperature ? { temperature: c.temperature } : {}) });
      const x = randomNormal(c.n * c.dModel, rng);
      const keyPaddingMask = c.padding ? Uint8Array.from({ length: c.n }, (_, j) => (j % 5 === 3 ? 1 : 0)) : undefined;
      const got = mha.forward(x, { causal: !!c.causal, keyPaddingMask, returnAttention: true });
      const want = referenceAttention(layer, x, x, c.n, c.n, { causal: c.causal, keyPaddingMask });
      expect(got.output).toBeInstanceOf(Float32Array);
      expect(got.output.length).toBe(c.n * c.dModel);
      expect(got.attentions.length).toBe(c.heads * c.n * c.n);
      expect(maxAbsDiff(got.output, want.output)).toBeLessThanOrEqual(1e-5);
      expect(maxAbsDiff(got.attentions, want.attention)).toBeLessThanOrEqual(1e-5);
      // Without weights the core takes its blocked path; Y must not change.
      expect(maxAbsDiff(mha.forward(x, { causal: !!c.causal, keyPaddingMask }).output, want.output)).toBeLessThanOrEqual(1e-5);
      mha.dispose();
    });
  }

  it('cross-attention with nQ ≠ nK and both kinds of full mask', async () => {
    const { mha, layer, rng } = await randomLayer({ dModel: 24, heads: 3, seed: 9 });
    const nQ = 5, nK = 8;
    const q = randomNormal(nQ * 24, rng), kv = randomNormal(nK * 24, rng);
    const blocked = Uint8Array.from({ length: nQ * nK }, (_, i) => (i % 7 === 0 ? 1 : 0));
    let got = mha.forwardCross(q, kv, { mask: blocked, returnAttention: true });
    let want = referenceAttention(layer, q, kv, nQ, nK, { blocked });
    expect(maxAbsDiff(got.output, want.output)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(got.attentions, want.attention)).toBeLessThanOrEqual(1e-5);
    const additive = randomNormal(nQ * nK, rng, 3);
    additive[4] = -Infinity;
    got = mha.forwardCross(q, kv, { mask: additive, returnAttention: true });
    want = referenceAttention(layer, q, kv, nQ, nK, { additive });
    expect(maxAbsDiff(got.output, want.output)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(got.attentions, want.attention)).toBeLessThanOrEqual(1e-5);
    expect(got.attentions[4]).toBe(0);
  });

  it('cross-attention with queries = keysValues equals self-attention', async () => {
    const { mha, rng } = await randomLayer({ dModel: 16, heads: 2, seed: 4 });
    const x = randomNormal(6 * 16, rng);
    const self = mha.forward(x, { returnAttention: true });
    const cross = mha.forwardCross(x, Float32Array.from(x), { returnAttention: true });
    expect(Array.from(cross.output)).toEqual(Array.from(self.output));
    expect(Array.from(cross.attentions)).toEqual(Array.from(self.attentions));
  });

  it('a fully masked query row gives zero attention and no NaN', async () => {
    const { mha, layer, rng } = await randomLayer({ dModel: 16, heads: 2, seed: 5 });
    const x = randomNormal(4 * 16, rng);
    const blocked = new Uint8Array(16);
    blocked.fill(1, 4, 8);  // query 1 sees no key
    const { output, attention } = mha.forward(x, { mask: blocked, returnAttention: true });
    expect(output.every(Number.isFinite)).toBe(true);
    for (let h = 0; h < 2; h++) for (let j = 0; j < 4; j++) expect(attention[(h * 4 + 1) * 4 + j]).toBe(0);
    for (let c = 0; c < 16; c++) expect(output[16 + c]).toBeCloseTo(layer.weights.bo[c], 6);
  });

  it('PyTorch nn.MultiheadAttention weights give PyTorch semantics (y = x·Wᵀ + b)', async () => {
    const d = 8, n = 5;
    const rng = seededRandom(77);
    const inW = randomNormal(3 * d * d, rng, 0.4), inB = randomNormal(3 * d, rng, 0.1);
    const outW = randomNormal(d * d, rng, 0.4), outB = randomNormal(d, rng, 0.1);
    const transpose = (m) => { const t = new Float32Array(d * d); for (let o = 0; o < d; o++) for (let i = 0; i < d; i++) t[i * d + o] = m[o * d + i]; return t; };
    const layer = { dModel: d, heads: 2, weights: {
      wq: transpose(inW.subarray(0, d * d)), wk: transpose(inW.subarray(d * d, 2 * d * d)),
      wv: transpose(inW.subarray(2 * d * d)), wo: transpose(outW),
      bq: inB.subarray(0, d), bk: inB.subarray(d, 2 * d), bv: inB.subarray(2 * d), bo: outB } };
    const mha = await createMultiHeadAttention({ dModel: d, heads: 2 });
    mha.loadPyTorchWeights({ in_proj_weight: inW, in_proj_bias: inB, 'out_proj.weight': outW, 'out_proj.bias': outB });
    const x = randomNormal(n * d, rng);
    expect(maxAbsDiff(mha.forward(x).output, referenceAttention(layer, x, x, n, n).output)).toBeLessThanOrEqual(1e-5);
    expect(Array.from(mha.getWeights().wk)).toEqual(Array.from(layer.weights.wk));
  });
});

describe('seeded initialization', () => {
  it('is reproducible, seed-dependent and scaled N(0, 2/d_model); biases start at 0', async () => {
    const a = await createMultiHeadAttention({ dModel: 64, heads: 4, seed: 42 });
    const b = await createMultiHeadAttention({ dModel: 64, heads: 4, seed: 42 });
    const c = await createMultiHeadAttention({ dModel: 64, heads: 4, seed: 43 });
    const wa = a.getWeights(), wb = b.getWeights(), wc = c.getWeights();
    expect(Array.from(wa.wq)).toEqual(Array.from(wb.wq));
    expect(wa.wq[0]).not.toBe(wc.wq[0]);
    const all = [...wa.wq, ...wa.wk, ...wa.wv, ...wa.wo];
    const variance = all.reduce((s, v) => s + v * v, 0) / all.length;
    expect(variance).toBeGreaterThan((2 / 64) * 0.9);
    expect(variance).toBeLessThan((2 / 64) * 1.1);
    expect(wa.bq.every((v) => v === 0)).toBe(true);
  });

  const nativeDump = nativeTool('mh_native_dump');
  it.skipIf(nativeDump.skip)('gives the same bits in the native and the wasm build; outputs agree', async () => {
    nativeDump.check();
    for (const [d, h, kv, seed, n, causal] of [[64, 4, 4, 42, 9, 0], [96, 6, 2, 7, 33, 1]]) {
      const dir = mkdtempSync(join(tmpdir(), 'mh-'));
      const x = randomNormal(n * d, seededRandom(seed));
      writeFileSync(join(dir, 'x.f32'), x);
      execFileSync(nativeDump.path, [d, h, kv, seed, n, causal, join(dir, 'x.f32'), join(dir, 'out.f32')].map(String));
      const bytes = readFileSync(join(dir, 'out.f32'));
      const native = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
      const mha = await createMultiHeadAttention({ dModel: d, heads: h, kvHeads: kv, seed });
      const w = mha.getWeights();
      const wasmWeights = Float32Array.from([...w.wq, ...w.wk, ...w.wv, ...w.wo, ...w.bq, ...w.bk, ...w.bv, ...w.bo]);
      const nativeWeights = native.subarray(0, wasmWeights.length);
      expect(maxAbsDiff(wasmWeights, nativeWeights)).toBe(0);
      const y = mha.forward(x, { causal: !!causal }).output;
      expect(maxAbsDiff(y, native.subarray(wasmWeights.length))).toBeLessThanOrEqual(1e-5);
    }
  });
});

describe('teaching helpers', () => {
  it('trace returns each step of one head, consistent with forward', async () => {
    const { mha, layer, rng } = await randomLayer({ dModel: 16, heads: 4, kvHeads: 2, seed: 12 });
    const n = 5;
    const x = randomNormal(n * 16, rng);
    const t = mha.trace(x, { head: 3, causal: true });
    const full = mha.forward(x, { causal: true, returnAttention: true });
    expect(t.q.length).toBe(n * 4);
    expect(t.scores.length).toBe(n * n);
    expect(maxAbsDiff(t.attention, full.attentions.subarray(3 * n * n))).toBeLessThanOrEqual(1e-6);
    expect(maxAbsDiff(t.output, full.output)).toBeLessThanOrEqual(1e-6);
    for (let i = 0; i < n * n; i++) {
      expect(t.scaled[i]).toBeCloseTo(t.scores[i] / 2, 5);  // d_k = 4 → ÷ √4
      if (i % n > Math.floor(i / n)) expect(t.masked[i]).toBe(-Infinity);
    }
    // Q_3 = X·W_Q[:, 12:16] + b_Q[12:16], computed here independently.
    for (let r = 0; r < n; r++) for (let c = 0; c < 4; c++) {
      let s = layer.weights.bq[12 + c];
      for (let i = 0; i < 16; i++) s += x[r * 16 + i] * layer.weights.wq[i * 16 + 12 + c];
      expect(t.q[r * 4 + c]).toBeCloseTo(s, 5);
    }
    for (let r = 0; r < n; r++) for (let c = 0; c < 4; c++) expect(t.headOutput[r * 4 + c]).toBeCloseTo(t.concat[r * 16 + 12 + c], 6);
  });

  it('positional encoding follows sin(p / 10000^(2i/d)), cos(…)', async () => {
    const mha = await createMultiHeadAttention({ dModel: 4, heads: 2 });
    const pe = mha.positionalEncoding(3);
    expect(pe.length).toBe(12);
    expect(Array.from(pe.subarray(0, 4))).toEqual([0, 1, 0, 1]);
    expect(pe[4]).toBeCloseTo(Math.sin(1), 6);
    expect(pe[5]).toBeCloseTo(Math.cos(1), 6);
    expect(pe[10]).toBeCloseTo(Math.sin(0.02), 6);
  });

  it('parameter count is 4d² + 4d, less with grouped or shared key/value heads', async () => {
    expect((await createMultiHeadAttention({ dModel: 64, heads: 8 })).parameterCount).toBe(4 * 64 * 64 + 4 * 64);
    expect((await createMultiHeadAttention({ dModel: 64, heads: 8, bias: false })).parameterCount).toBe(4 * 64 * 64);
    expect((await createMultiHeadAttention({ dModel: 64, heads: 8, kvHeads: 1 })).parameterCount)
      .toBe(2 * 64 * 64 + 2 * 64 * 8 + 2 * 64 + 2 * 8);
  });
});

describe('buffers', () => {
  it('results stay valid after the heap grows, and into-buffers are reused', async () => {
    const { mha, layer, rng } = await randomLayer({ dModel: 32, heads: 4, seed: 3 });
    const x = randomNormal(4 * 32, rng);
    const first = mha.forward(x, { returnAttention: true });
    const heapBefore = (await runtimeInfo()).heapBytes;
    mha.forward(randomNormal(2048 * 32, rng), { returnAttention: true });  // 4 × 2048² floats: grows the heap
    expect((await runtimeInfo()).heapBytes).toBeGreaterThan(heapBefore);
    const want = referenceAttention(layer, x, x, 4, 4);
    expect(maxAbsDiff(first.output, want.output)).toBeLessThanOrEqual(1e-5);
    const into = { output: new Float32Array(4 * 32), attentions: new Float32Array(4 * 16) };
    const again = mha.forward(x, { returnAttention: true, into });
    expect(again.output).toBe(into.output);
    expect(maxAbsDiff(into.output, want.output)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(into.attentions, want.attention)).toBeLessThanOrEqual(1e-5);
  });
});

describe('a selected block of attention weights', () => {
  it('equals the same block of the full weights, and only it is returned', async () => {
    const { mha, rng } = await randomLayer({ dModel: 32, heads: 4, kvHeads: 2, seed: 21 });
    const n = 150;
    const x = randomNormal(n * 32, rng);
    for (const causal of [false, true]) {
      const full = mha.forward(x, { causal, returnAttention: true });
      const part = mha.forward(x, { causal, returnAttention: { heads: [1, 3], rows: [60, 140] } });
      expect(part.attentions.length).toBe(2 * 80 * n);
      for (let h = 0; h < 2; h++) {
        const want = full.attentions.subarray(((h + 1) * n + 60) * n, ((h + 1) * n + 140) * n);
        expect(maxAbsDiff(part.attentions.subarray(h * 80 * n, (h + 1) * 80 * n), want)).toBe(0);
      }
      expect(maxAbsDiff(part.output, full.output)).toBe(0);
      const one = mha.forward(x, { causal, returnAttention: { head: 3 } });
      expect(maxAbsDiff(one.attentions, full.attentions.subarray(3 * n * n))).toBe(0);
    }
  });

  it('makes long sequences affordable: one head of 8192 tokens fits the budget, all heads do not', async () => {
    const mha = await createMultiHeadAttention({ dModel: 16, heads: 4 });
    const x = new Float32Array(8192 * 16).fill(0.01);
    expect(() => mha.forward(x, { returnAttention: true })).toThrow(/over the 512 MiB budget/);
    const { attention } = mha.forward(x, { returnAttention: { head: 2, rows: [0, 4096] } });
    expect(attention.length).toBe(4096 * 8192);
    expect(attention.subarray(0, 8192).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 4);
  });

  it('refuses blocks that do not exist', async () => {
    const mha = await createMultiHeadAttention({ dModel: 16, heads: 4 });
    const x = new Float32Array(5 * 16);
    expect(() => mha.forward(x, { returnAttention: { head: 4 } })).toThrow(/attention heads 4 … 4 do not exist: heads are 0 … 3/);
    expect(() => mha.forward(x, { returnAttention: { rows: [3, 9] } })).toThrow(/attention rows 3 … 8 do not exist: query rows are 0 … 4/);
    expect(() => mha.forward(x, { returnAttention: { heads: [2, 2] } })).toThrow(/selects no weights/);
    expect(() => mha.forward(x, { returnAttention: 'yes' })).toThrow(/returnAttention must be true, false or/);
    expect(mha.forward(x, { returnAttention: { head: 1 } }).attentions.length).toBe(25);
  });
});

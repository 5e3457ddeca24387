import { describe, expect, it } from 'vitest';
import { createMultiHeadAttention, runtimeInfo } from '../../bindings/multihead.mjs';
import { maxAbsDiff, randomNormal, seededRandom } from './reference.mjs';

const rng = seededRandom(2024);
const x4 = randomNormal(4 * 16, rng);

async function layer() {
  return createMultiHeadAttention({ dModel: 16, heads: 4, seed: 1 });
}

describe('invalid configurations throw an Error that says what to fix', () => {
  const cases = [
    [{ dModel: 10, heads: 4 }, /dModel \(10\) must be divisible by heads \(4\)/],
    [{ dModel: 16, heads: 4, kvHeads: 3 }, /heads \(4\) must be divisible by kvHeads \(3\)/],
    [{ dModel: 16, heads: 4, kvHeads: 8 }, /kvHeads must be from 1 to heads/],
    [{ dModel: 0, heads: 1 }, /dModel must be an integer from 1/],
    [{ dModel: '64', heads: 4 }, /dModel must be an integer/],
    [{ dModel: 64.5, heads: 4 }, /dModel must be an integer/],
    [{ dModel: 64, heads: 4, temperature: 0 }, /temperature must be a positive/],
    [{ dModel: 64, heads: 4, seed: -1 }, /seed must be an integer/],
    [{ dModel: 64, heads: 4, bias: 'yes' }, /bias must be true or false/],
  ];
  for (const [options, message] of cases) {
    it(JSON.stringify(options), async () => {
      await expect(createMultiHeadAttention(options)).rejects.toThrow(message);
    });
  }
});

describe('invalid calls throw, and the layer keeps working', () => {
  const nan = Float32Array.from(x4); nan[17] = NaN;
  const inf = Float32Array.from(x4); inf[3] = -Infinity;
  const cases = [
    ['x of the wrong length', (m) => m.forward(new Float32Array(10)), /x has 10 values, which is not a whole, non-zero number of rows of dModel = 16/],
    ['seqLen that does not match x', (m) => m.forward(x4, { seqLen: 3 }), /x has 64 values but must have 48 \(seqLen × dModel = 3 × 16\)/],
    ['sequence length 0', (m) => m.forward(new Float32Array(0)), /not a whole, non-zero number of rows/],
    ['seqLen 0', (m) => m.forward(new Float32Array(0), { seqLen: 0 }), /seqLen must be an integer from 1 to 16384, got 0/],
    ['NaN in x', (m) => m.forward(nan), /x contains NaN at index 17 \(row 1, column 1\)/],
    ['-Infinity in x', (m) => m.forward(inf), /x contains an infinity at index 3/],
    ['NaN in keysValues', (m) => m.forwardCross(x4, nan), /keys\/values contains NaN/],
    ['x that is not an array', (m) => m.forward('hello'), /x must be a Float32Array/],
    ['a mask of the wrong size', (m) => m.forward(x4, { mask: new Uint8Array(15) }), /mask has 15 values but must have 16 \(queries × keys = 4 × 4\)/],
    ['an ambiguous mask', (m) => m.forward(x4, { mask: new Array(16).fill(0) }), /mask must be a Uint8Array or boolean\[\]/],
    ['NaN in an additive mask', (m) => m.forward(x4, { mask: new Float32Array(16).fill(NaN) }), /additive mask has NaN at index 0/],
    ['a key padding mask of the wrong size', (m) => m.forward(x4, { keyPaddingMask: new Uint8Array(5) }), /keyPaddingMask has 5 values but must have 4/],
    ['causal that is not a boolean', (m) => m.forward(x4, { causal: 'yes' }), /causal must be true or false/],
    ['a 100k-token input', (m) => m.forward(new Float32Array(100_000 * 16)), /query sequence length must be from 1 to 16384 tokens, got 100000/],
    ['attention weights over the memory budget', (m) => m.forward(new Float32Array(8192 * 16), { returnAttention: true }), /needs \d+ MiB of wasm memory, over the 512 MiB budget: pass fewer tokens or ask for fewer attention weights \(one head, some rows, or none\)/],
    ['finite inputs that overflow float32 in the scores', (m) => m.forward(new Float32Array(9 * 16).fill(1e30)), /float32 overflow/],
    ['finite inputs that overflow float32 in the scores (weights requested)', (m) => m.forward(new Float32Array(9 * 16).fill(3e19), { returnAttention: true }), /float32 overflow/],
    ['an additive mask over the memory budget', (m) => m.forward(new Float32Array(12000 * 16), { mask: new Float32Array(12000 * 12000) }), /needs \d+ MiB of wasm memory, over the 512 MiB budget/],
    ['a head that does not exist', (m) => m.trace(x4, { head: 4 }), /head must be from 0 to 3, got 4/],
    ['NaN in a weight', (m) => m.setWeights({ wq: new Float32Array(256).fill(NaN) }), /weight wq contains NaN at index 0/],
    ['a weight of the wrong size', (m) => m.setWeights({ wk: new Float32Array(255) }), /wk has 255 values but must have 256 \(dModel × kvWidth = 16 × 16\)/],
    ['an unknown weight', (m) => m.setWeights({ wx: new Float32Array(256) }), /unknown weight "wx"/],
    ['an into-buffer of the wrong size', (m) => m.forward(x4, { into: { output: new Float32Array(3) } }), /into.output must be a Float32Array of length 64/],
  ];
  for (const [name, call, message] of cases) {
    it(name, async () => {
      const m = await layer();
      const good = m.forward(x4, { returnAttention: true });
      expect(() => call(m)).toThrow(message);
      expect(() => call(m)).toThrow(Error);
      const after = m.forward(x4, { returnAttention: true });
      expect(maxAbsDiff(after.output, good.output)).toBe(0);
      m.dispose();
    });
  }

  it('a rejected setWeights changes no weight (all or nothing)', async () => {
    const m = await layer();
    const before = m.getWeights();
    const bad = new Float32Array(256); bad[9] = Infinity;
    expect(() => m.setWeights({ wq: new Float32Array(256), wk: bad })).toThrow(/wk contains an infinity at index 9/);
    expect(Array.from(m.getWeights().wq)).toEqual(Array.from(before.wq));
  });

  it('biases of a bias-free layer are refused', async () => {
    const m = await createMultiHeadAttention({ dModel: 16, heads: 4, bias: false });
    expect(m.getWeights().bq).toBeUndefined();
    expect(() => m.setWeights({ bq: new Float32Array(16) })).toThrow(/created with bias: false/);
  });

  it('PyTorch weights need as many kv heads as heads', async () => {
    const m = await createMultiHeadAttention({ dModel: 16, heads: 4, kvHeads: 2 });
    expect(() => m.loadPyTorchWeights({ in_proj_weight: new Float32Array(768), in_proj_bias: new Float32Array(48), 'out_proj.weight': new Float32Array(256), 'out_proj.bias': new Float32Array(16) }))
      .toThrow(/kvHeads equal to heads/);
  });

  it('use after dispose says so', async () => {
    const m = await layer();
    m.dispose();
    expect(m.disposed).toBe(true);
    expect(() => m.forward(x4)).toThrow(/disposed; create a new one/);
    expect(() => m.getWeights()).toThrow(/disposed/);
    m.dispose();  // a second dispose is harmless
  });
});

describe('failing calls do not leak', () => {
  it('1,200 failing calls (200 of each kind) leave the wasm heap and the allocator where they were, to the byte', async () => {
    const m = await layer();
    const nan = Float32Array.from(x4); nan[5] = NaN;
    const failing = [
      () => m.forward(nan),
      () => m.forward(new Float32Array(10)),
      () => m.forward(new Float32Array(100_000 * 16)),
      () => m.forward(new Float32Array(8192 * 16), { returnAttention: true }),
      () => m.setWeights({ wv: new Float32Array(256).fill(NaN) }),
      () => m.trace(x4, { head: 9 }),
    ];
    const runAll = (rounds) => {
      for (let i = 0; i < rounds; i++) {
        try { failing[i % failing.length](); } catch (e) { if (!(e instanceof Error)) throw e; continue; }
        throw new Error('expected a failure');
      }
    };
    runAll(failing.length * 2);  // warm up: buffers for the valid shapes get their sizes once
    const before = await runtimeInfo();
    runAll(1_200);
    await expect(createMultiHeadAttention({ dModel: 10, heads: 3 })).rejects.toThrow(/divisible/);
    const after = await runtimeInfo();
    expect(after.heapBytes).toBe(before.heapBytes);
    expect(after.allocatedBytes).toBe(before.allocatedBytes);
    expect(m.forward(x4).output.every(Number.isFinite)).toBe(true);
  });

  it('creating and disposing 2,000 layers frees their memory', async () => {
    (await layer()).dispose();
    const before = (await runtimeInfo()).allocatedBytes;
    for (let i = 0; i < 2000; i++) {
      const m = await createMultiHeadAttention({ dModel: 32, heads: 4, seed: i });
      m.forward(randomNormal(3 * 32, rng));
      m.dispose();
    }
    expect((await runtimeInfo()).allocatedBytes).toBe(before);
  });
});

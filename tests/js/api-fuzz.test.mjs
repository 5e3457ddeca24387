// The pretrained model's whole API under random calls (fast-check, seeded): every public method of
// PretrainedModel and ModelContext with random valid and invalid arguments. Each call returns, or
// throws an Error of ours that says what to fix (never a TypeError, a RangeError or a BindingError);
// afterwards the model's numbers are the same bits, and disposing it gives the heap back.
// MULTIHEAD_FUZZ_RUNS=5000 npx vitest run tests/js/api-fuzz.test.mjs runs longer (npm run fuzz:api).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { join } from 'node:path';
import { loadPretrained, runtimeInfo } from '../../bindings/multihead.mjs';
import { FIXTURES, expectedOutputs } from './checkpoints.mjs';

const RUNS = Number(process.env.MULTIHEAD_FUZZ_RUNS ?? 250);

// Values a careless or hostile caller passes: valid ones among them.
const anything = fc.oneof(
  fc.constantFrom(undefined, null, NaN, -1, 0, 1, 2, 1.5, 2 ** 32 + 3, Infinity, '', 'abc', 'heads', 'residual', 'mlps',
    'toString', '__proto__', 'constructor', true, false, [], {}, [[0, 0]], [[0, 9]], [0, 1], [[-1, 0]]),
  fc.integer({ min: -3, max: 60 }),
  fc.array(fc.integer({ min: -2, max: 60 }), { maxLength: 6 }),
  fc.constant(() => {}),
  fc.constant(new Float32Array(3)),
  fc.constant(new Int32Array([1, 2, 3])),
);
const idsArb = fc.oneof(
  fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 12 }),
  fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 12 }).map((a) => Int32Array.from(a)),
  anything,
);
const OPTION_NAMES = ['tokenTypeIds', 'attentions', 'lastHiddenState', 'hiddenStates', 'valueNorms', 'disabledHeads', 'logits',
  'rollout', 'reusePrefix', 'capture', 'intervene', 'topK', 'positions', 'targets', 'attribute', 'position', 'target', 'contrast',
  'what', 'onProgress', 'signal', 'maxNewTokens', 'temperature', 'seed', 'stopAtEos', 'bogus'];
const hookish = fc.constantFrom(['blocks.0.hook_resid_post'], ['blocks.*.attn.hook_z'], ['nope'], 'hook_embed',
  { 'blocks.0.hook_resid_mid': () => {} }, { 'blocks.0.attn.hook_pattern': () => {} }, { 'blocks.0.hook_resid_pre': { values: [1] } },
  { 'blocks.1.hook_mlp_out': () => { throw new Error('mine'); } });
const optionsArb = fc.oneof(
  fc.dictionary(fc.constantFrom(...OPTION_NAMES), fc.oneof(anything, hookish), { maxKeys: 4 }),
  anything,
);
const callArb = fc.record({
  method: fc.constantFrom('run', 'logitLens', 'attribute', 'contributions', 'patch', 'generate', 'tokenize', 'decode', 'hookNames', 'context'),
  ids: idsArb,
  other: idsArb,
  options: optionsArb,
});

async function call(target, { method, ids, other, options }) {
  switch (method) {
    case 'patch': return target.patch(ids, other, options);
    case 'generate': {
      let steps = 0;
      for await (const step of target.generate(ids, options)) if ((steps += 1) >= 3 || !step) break;
      return steps;
    }
    case 'tokenize': return target.tokenize(ids);
    case 'decode': return target.decode(ids);
    case 'hookNames': return target.hookNames();
    case 'context': {
      const context = target.createContext();
      try { return context.run(ids, options); } finally { context.dispose(); }
    }
    default: return target[method](ids, options);
  }
}

describe('the pretrained API under random calls', () => {
  it(`${RUNS} random calls to the model and a context: a result or our Error; the same bits after; the heap back`, async () => {
    const { ids: reference } = expectedOutputs('gpt2')[0];
    // Once per process the core allocates for good (the thread pool's start, the GEMM's tuning at
    // a first load): a load, a run of each kind and a dispose before the heap is counted.
    const warm = await loadPretrained(join(FIXTURES, 'gpt2'));
    warm.run(reference, { valueNorms: true, capture: ['blocks.*.attn.hook_pattern'] });
    warm.logitLens(reference, { attribute: { target: 1 } });
    warm.contributions(reference);
    warm.hookNames();
    await warm.patch(reference, reference.map((x) => (x + 1) % 40), { target: 1 });
    for await (const step of warm.generate(reference, { maxNewTokens: 2 })) void step;
    warm.dispose();
    const heapBefore = (await runtimeInfo()).allocatedBytes;
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const before = model.run(reference, { valueNorms: true, lastHiddenState: true });
    const context = model.createContext();
    let returned = 0, refused = 0;
    await fc.assert(fc.asyncProperty(callArb, fc.boolean(), async (c, onContext) => {
      const target = onContext && !['tokenize', 'decode', 'hookNames', 'context'].includes(c.method) ? context : model;
      try {
        await call(target, c);
        returned += 1;
      } catch (error) {
        expect(error).toBeInstanceOf(Error);
        expect(['TypeError', 'RangeError', 'BindingError', 'InternalError'], error.message).not.toContain(error.constructor.name);
        if (error.message !== 'mine') expect(error.message, `${c.method}: ${error.message}`).toMatch(/^multihead: .{12,}/);
        refused += 1;
      }
    }), { numRuns: RUNS, seed: 64 });
    const after = model.run(reference, { valueNorms: true, lastHiddenState: true });
    for (const key of ['logits', 'attentions', 'valueNorms', 'lastHiddenState']) {
      expect(after[key].every((v, i) => Object.is(v, before[key][i])), key).toBe(true);
    }
    context.dispose();
    model.dispose();
    expect((await runtimeInfo()).allocatedBytes).toBe(heapBefore);
    console.log(`API fuzz: ${returned} calls returned, ${refused} refused with a clear Error`);
    expect(returned).toBeGreaterThan(RUNS / 10);
    expect(refused).toBeGreaterThan(RUNS / 10);
  });
});

// The encoder-decoder's API (T5) the same way: run, the lens and attribution on its decoder,
// generation, its tokenizers, and the methods that do not apply (an Error that says so).
const SEQ2SEQ_OPTIONS = ['decoderInputIds', 'attentions', 'hiddenStates', 'capture', 'intervene', 'topK', 'positions', 'targets',
  'position', 'target', 'contrast', 'maxNewTokens', 'minNewTokens', 'signal', 'bogus'];
const seq2seqCallArb = fc.record({
  method: fc.constantFrom('run', 'logitLens', 'attribute', 'generate', 'tokenize', 'tokenizeTarget', 'decode', 'hookNames',
    'contributions', 'patch', 'createContext'),
  ids: idsArb,
  options: fc.oneof(fc.dictionary(fc.constantFrom(...SEQ2SEQ_OPTIONS),
    fc.oneof(anything, idsArb, fc.constantFrom(['decoder.blocks.*.cross_attn.hook_z'], ['encoder.blocks.0.hook_resid_pre'])), { maxKeys: 4 }), anything),
});

describe('the encoder-decoder API under random calls', () => {
  it(`${Math.ceil(RUNS / 2)} random calls to T5: a result or our Error; the same bits after; the heap back`, async () => {
    const source = [5, 9, 3, 1], decoderInputIds = [0, 7, 8];
    const warm = await loadPretrained(join(FIXTURES, 't5'));
    warm.run(source, { decoderInputIds, capture: ['decoder.blocks.*.cross_attn.hook_z'] });
    warm.logitLens(source, { decoderInputIds });
    warm.attribute(source, { decoderInputIds });
    for await (const step of warm.generate(source, { maxNewTokens: 2 })) void step;
    warm.dispose();
    const heapBefore = (await runtimeInfo()).allocatedBytes;
    const model = await loadPretrained(join(FIXTURES, 't5'));
    const before = model.run(source, { decoderInputIds, hiddenStates: true });
    let returned = 0, refused = 0;
    await fc.assert(fc.asyncProperty(seq2seqCallArb, async ({ method, ids, options }) => {
      try {
        if (method === 'generate') {
          let steps = 0;
          for await (const step of model.generate(ids, options)) if ((steps += 1) >= 3 || !step) break;
        } else if (['tokenize', 'tokenizeTarget', 'decode'].includes(method)) {
          model[method](ids);
        } else {
          model[method](ids, options);
        }
        returned += 1;
      } catch (error) {
        expect(error).toBeInstanceOf(Error);
        expect(['TypeError', 'RangeError', 'BindingError', 'InternalError'], error.message).not.toContain(error.constructor.name);
        expect(error.message, `${method}: ${error.message}`).toMatch(/^multihead: .{12,}/);
        refused += 1;
      }
    }), { numRuns: Math.ceil(RUNS / 2), seed: 61 });
    const after = model.run(source, { decoderInputIds, hiddenStates: true });
    for (const key of ['logits', 'encoderAttentions', 'crossAttentions', 'decoderHiddenStates']) {
      expect(after[key].every((v, i) => Object.is(v, before[key][i])), key).toBe(true);
    }
    model.dispose();
    expect((await runtimeInfo()).allocatedBytes).toBe(heapBefore);
    expect(returned).toBeGreaterThan(RUNS / 20);
    expect(refused).toBeGreaterThan(RUNS / 20);
  });
});

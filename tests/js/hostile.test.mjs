// What a hostile caller found (the hostile-caller issue): each call below threw a TypeError or a
// BindingError of ours, or was accepted and acted as something else. Each is now a clear Error of
// ours (or works), and the model's numbers afterwards are the same bits.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { FIXTURES, expectedOutputs } from './checkpoints.mjs';

const ours = /^multihead: /;
const rejectsClearly = async (promise, pattern) => {
  const error = await promise.then(() => null, (e) => e);
  expect(error, 'it should have thrown').toBeInstanceOf(Error);
  expect(error.message).toMatch(ours);
  if (pattern) expect(error.message).toMatch(pattern);
  return error;
};
const drain = async (generator) => { for await (const step of generator) void step; };

describe('a hostile caller gets clear Errors, and the model keeps its numbers', () => {
  it('options: null is none; a non-object, a prototype name as `what`, null disabledHeads', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = expectedOutputs('gpt2')[0].ids;
    const before = model.run(ids).logits;
    expect(model.run(ids, null).logits).toEqual(before);
    expect(model.logitLens(ids, null).shape[0]).toBe(model.config.layers + 1);
    expect(model.contributions(ids, null).shape).toEqual([model.config.layers, ids.length, ids.length]);
    expect(model.attribute(ids, { target: 5, disabledHeads: null }).target).toBe(5);
    expect(() => model.run(ids, 'fast')).toThrow(/run\(\) takes an options object, got "fast"/);
    for (const what of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      await rejectsClearly(model.patch(ids, ids, { target: 5, what }), /what must be 'heads', 'residual' or 'mlps'/);
    }
    await rejectsClearly(model.patch(ids, ids, { target: 5, onProgress: 'yes' }), /onProgress must be a function/);
    expect(() => model.decode(null)).toThrow(/decode needs a list of token ids/);
    expect(() => model.logitLens(ids, { targets: Array.from({ length: 100000 }, (_, i) => i % 50) })).toThrow(/at most 1000 targets/);
    expect(model.run(ids).logits).toEqual(before);
    model.dispose();
  });

  it('generate(): its options are checked; an aborted signal rejects with an AbortError, as patch() does', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const ids = expectedOutputs('gpt2')[0].ids;
    for (const seed of [NaN, -1, Infinity, 'abc', {}, 1.5]) {
      await rejectsClearly(drain(model.generate(ids, { seed })), /seed must be a whole number/);
    }
    await rejectsClearly(drain(model.generate(ids, { topK: 2 ** 32 + 3 })), /topK must be a whole number from 0/);
    const aborted = AbortSignal.abort();
    const generation = await rejectsClearly(drain(model.generate(ids, { signal: aborted })), /cancelled/);
    const patching = await rejectsClearly(model.patch(ids, ids.map((x) => (x + 1) % 50), { target: 3, signal: aborted }), /cancelled/);
    expect([generation.name, patching.name]).toEqual(['AbortError', 'AbortError']);
    // Aborted between two tokens: the tokens so far came, then the AbortError.
    const controller = new AbortController();
    const got = [];
    const error = await (async () => {
      for await (const step of model.generate(ids, { maxNewTokens: 5, signal: controller.signal, stopAtEos: false })) {
        got.push(step.id);
        if (got.length === 2) controller.abort();
      }
    })().then(() => null, (e) => e);
    expect(got).toHaveLength(2);
    expect(error?.name).toBe('AbortError');
    model.dispose();
  });

  it('dispose() during a patch or a generation: an Error that says so, not a BindingError', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    const [clean] = expectedOutputs('gpt2').map((c) => c.ids);
    const corrupt = clean.map((x, i) => (i === 1 ? (x + 9) % 50 : x));
    const patching = model.patch(clean, corrupt, { target: 3, contrast: 8, what: 'residual', onProgress: () => model.dispose() });
    await rejectsClearly(patching, /this model was disposed/);
    const again = await loadPretrained(join(FIXTURES, 'gpt2'));
    const generation = (async () => {
      for await (const step of again.generate(clean, { maxNewTokens: 5, stopAtEos: false })) { void step; again.dispose(); }
    })();
    await rejectsClearly(generation, /this model was disposed/);
  });

  it('loadPretrained: a data: URL, a hub that is no URL, hub with a folder, and a non-function onProgress', async () => {
    await rejectsClearly(loadPretrained('data:text/plain,hello'), /data: URL holds one file/);
    await rejectsClearly(loadPretrained('gpt2', { hub: 'not a url' }), /hub must be the http\(s\) address/);
    await rejectsClearly(loadPretrained(join(FIXTURES, 'gpt2'), { hub: 'https://example.invalid' }), /hub applies to a hub id/);
    await rejectsClearly(loadPretrained(join(FIXTURES, 'gpt2'), { onProgress: 42 }), /onProgress must be a function/);
    const model = await loadPretrained(join(FIXTURES, 'gpt2'), null);
    expect(model.config.modelType).toBe('gpt2');
    model.dispose();
  });
});

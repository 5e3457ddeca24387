// 0.2's one vocabulary (heads, kvHeads, vocabSize, maxPositions, attentions …), and every 0.1 name
// it replaced, held to the new name's behaviour for this release (CHANGELOG.md): the same values,
// the same arrays, the same errors.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMultiHeadAttention, createTrainer, loadLanguageModel } from '../../bindings/multihead.mjs';
import { maxAbsDiff, referenceAttention } from './reference.mjs';

const MODEL = join(process.cwd(), 'web/model/austen.mhlm');
const x = Float32Array.from({ length: 5 * 16 }, (_, i) => Math.sin(i * 0.7));

describe('the attention layer', () => {
  it('takes numHeads / numKvHeads as heads / kvHeads: the same layer, the same outputs', async () => {
    const now = await createMultiHeadAttention({ dModel: 16, heads: 4, kvHeads: 2, seed: 3 });
    const old = await createMultiHeadAttention({ dModel: 16, numHeads: 4, numKvHeads: 2, seed: 3 });
    expect(old.config).toEqual(now.config);
    expect(now.config).toMatchObject({ heads: 4, kvHeads: 2, headDim: 4 });
    expect([old.config.numHeads, old.config.numKvHeads]).toEqual([4, 2]);
    expect(Object.keys(now.config)).not.toContain('numHeads');  // listed once, by the new names
    const a = now.forward(x, { causal: true, returnAttention: true });
    const b = old.forward(x, { causal: true, returnAttention: true });
    expect(Array.from(b.attentions)).toEqual(Array.from(a.attentions));
    // The float64 reference says the new name is the right one, not just the same as the old.
    const want = referenceAttention({ dModel: 16, heads: 4, kvHeads: 2, weights: now.getWeights() }, x, x, 5, 5, { causal: true });
    expect(maxAbsDiff(a.attentions, want.attention)).toBeLessThanOrEqual(1e-5);
    expect(a.attention).toBe(a.attentions);  // the old result name is the same array
    expect({ ...a }.attention).toBe(a.attentions);  // and survives a spread
  });

  it('writes into.attention (old) as into.attentions (new), and refuses the two disagreeing', async () => {
    const mha = await createMultiHeadAttention({ dModel: 16, heads: 4, seed: 1 });
    const fresh = mha.forward(x, { returnAttention: true });
    const into = { output: new Float32Array(5 * 16), attention: new Float32Array(4 * 25) };
    const got = mha.forward(x, { returnAttention: true, into });
    expect(got.attentions).toBe(into.attention);
    expect(Array.from(into.attention)).toEqual(Array.from(fresh.attentions));
    const other = { attentions: new Float32Array(100), attention: new Float32Array(100) };
    expect(() => mha.forward(x, { returnAttention: true, into: other })).toThrow(/attention \(deprecated\) and attentions disagree/);
  });

  it('refuses numHeads and heads that disagree, naming both', async () => {
    await expect(createMultiHeadAttention({ dModel: 16, heads: 4, numHeads: 2 })).rejects.toThrow(/numHeads \(deprecated\) and heads disagree/);
    await expect(createMultiHeadAttention({ dModel: 10, numHeads: 4 })).rejects.toThrow(/dModel \(10\) must be divisible by heads \(4\)/);
  });
});

describe('the trained language model', () => {
  it('has config.vocab / numHeads / context as vocabSize / heads / maxPositions, run().attention as attentions', async () => {
    const model = await loadLanguageModel(readFileSync(MODEL));
    const { config } = model;
    expect([config.vocab, config.numHeads, config.context]).toEqual([config.vocabSize, config.heads, config.maxPositions]);
    expect(config.vocabSize).toBeGreaterThan(1000);
    const { ids, tokens, offsets, pieces } = model.tokenize('It is a truth universally acknowledged');
    expect(pieces.map((p) => p.token)).toEqual(tokens);
    expect(pieces.map((p) => p.text)).toEqual(offsets.map(([a, b]) => 'It is a truth universally acknowledged'.slice(a, b)));
    expect(pieces.map((p) => p.id)).toEqual(Array.from(ids));
    const run = model.run(ids);
    expect(run.attention).toBe(run.attentions);
    expect(run.attentions.length).toBe(config.layers * config.heads * ids.length ** 2);
    model.dispose();
  });

  it('gives offsets in UTF-16 units for text outside ASCII', async () => {
    const model = await loadLanguageModel(readFileSync(MODEL));
    const text = 'Émma — “dear” Mr. Knightley';
    const { tokens, offsets } = model.tokenize(text);
    // After "É" (2 bytes in UTF-8) and "—", "“" (3 each), byte offsets would land 5 units late.
    for (const word of ['dear', 'knightley']) {
      const i = tokens.indexOf(word);
      expect(i, word).toBeGreaterThan(0);
      expect(text.slice(...offsets[i]).toLowerCase()).toBe(word);
    }
    model.dispose();
  });
});

describe('the trainer', () => {
  it('has config.vocab as vocabSize and sample().attention as attentions', async () => {
    const trainer = await createTrainer({ task: 'copy', seed: 2 });
    expect(trainer.config.vocab).toBe(trainer.config.vocabSize);
    expect(trainer.vocabulary.length).toBe(trainer.config.vocabSize);
    const s = trainer.sample(0);
    expect(s.attention).toBe(s.attentions);
    const { layers, heads, seq } = trainer.config;
    expect(s.attentions.length).toBe(layers * heads * seq * seq);
    trainer.dispose();
  });
});

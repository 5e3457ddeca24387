// The playground's trainer through the wasm build: each training step matches the native build
// for the same seed (losses and attention), it learns, and bad settings are Errors that leave the
// module working.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createTrainer, TOY_TASKS } from '../../bindings/multihead.mjs';
import { maxAbsDiff } from './reference.mjs';
import { nativeTool } from './native-tools.mjs';

const toyDump = nativeTool('mh_toy_dump');

describe('trainer', () => {
  it.skipIf(toyDump.skip)('takes the same steps as the native build for the same seed', async () => {
    toyDump.check();
    for (const [index, task] of TOY_TASKS.entries()) {
      const settings = { task, layers: 2, heads: 2, dModel: 16, seed: 11 + index, learningRate: 3e-3 };
      const native = JSON.parse(execFileSync(toyDump.path, [
        String(index), '2', '2', '16', String(settings.seed), '30', '3e-3',
      ], { encoding: 'utf8' }));
      const trainer = await createTrainer(settings);
      const losses = trainer.train(30);
      // The first loss is the untrained model on the first batch: same weights and data bit for
      // bit (seeded generators), so only float rounding differs (SSE2 native vs wasm SIMD).
      expect(Math.abs(losses[0] - native.losses[0])).toBeLessThan(1e-5);
      expect(maxAbsDiff(losses, Float32Array.from(native.losses))).toBeLessThan(1e-5);  // measured ≤ 2e-7
      const { attentions: attention } = trainer.sample(0);
      expect(maxAbsDiff(attention, Float32Array.from(native.attention))).toBeLessThan(1e-5);
      trainer.dispose();
    }
  });

  it('gives the same bits for the same seed however the steps are split', async () => {
    // The page trains in adaptive chunks and evaluates between them; a link replays the steps in
    // other chunks. Both must land on the same weights (bindings/aligned_new.cpp is why they do).
    const options = { task: 'reverse', layers: 1, heads: 2, dModel: 16, seed: 3 };
    const whole = await createTrainer(options);
    whole.train(150);
    const pieces = await createTrainer(options);
    for (let done = 0; done < 150; done += 10) {
      pieces.train(10);
      pieces.evaluate();
      pieces.sample(done % 7);
      new Float32Array(1);  // unrelated JS allocations in between
    }
    expect(Array.from(pieces.sample(5).attentions)).toEqual(Array.from(whole.sample(5).attentions));
    expect(pieces.evaluate()).toEqual(whole.evaluate());
    whole.dispose();
    pieces.dispose();
  });

  it('learns copy in a few hundred steps, and the loss falls', async () => {
    const trainer = await createTrainer();
    const before = trainer.evaluate();
    const losses = trainer.train(400);
    const after = trainer.evaluate();
    expect(before.accuracy).toBeLessThan(0.3);
    expect(after.accuracy).toBeGreaterThan(0.99);
    expect(after.loss).toBeLessThan(before.loss / 10);
    expect(losses[399]).toBeLessThan(losses[0]);
    expect(trainer.steps).toBe(400);
    trainer.dispose();
  });

  it('samples sequences of the task with normalised causal attention', async () => {
    const trainer = await createTrainer({ task: 'reverse', layers: 1, heads: 2, dModel: 16 });
    const { seq, vocabSize: vocab } = trainer.config;
    const s = trainer.sample(3);
    expect(s.tokens.length).toBe(seq);
    expect(s.tokens[seq / 2]).toBe('|');
    // the answer is the prompt reversed: targets from the separator on
    const prompt = Array.from(s.ids.subarray(0, seq / 2));
    expect(Array.from(s.targets.subarray(seq / 2))).toEqual(prompt.reverse());
    for (let h = 0; h < 2; h++) {
      for (let i = 0; i < seq; i++) {
        let sum = 0;
        for (let j = 0; j < seq; j++) {
          const a = s.attentions[(h * seq + i) * seq + j];
          if (j > i) expect(a).toBe(0);
          sum += a;
        }
        expect(sum).toBeCloseTo(1, 5);
      }
    }
    for (let i = 0; i < seq; i++) {
      expect(s.probabilities.subarray(i * vocab, (i + 1) * vocab).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
    }
    trainer.dispose();
  });

  it('gives balanced-key its two criteria per key', async () => {
    const trainer = await createTrainer({ task: 'balanced-key', layers: 1, heads: 1 });
    expect(trainer.config.features).toBe(2);
    const s = trainer.sample(0);
    expect(s.features.length).toBe(trainer.config.seq * 2);
    expect(s.tokens.at(-1)).toBe('?');
    trainer.dispose();
  });

  it('rejects bad settings with a message that says what to fix, and keeps working', async () => {
    await expect(createTrainer({ task: 'translate' })).rejects.toThrow(/task must be one of copy, reverse/);
    await expect(createTrainer({ heads: 3 })).rejects.toThrow(/divisible by heads/);
    await expect(createTrainer({ layers: 3 })).rejects.toThrow(/layers must be from 1 to 2/);
    await expect(createTrainer({ layers: 1.5 })).rejects.toThrow(/layers must be an integer/);
    await expect(createTrainer({ learningRate: Number.NaN })).rejects.toThrow(/learningRate must be a finite number/);
    await expect(createTrainer({ learningRate: 0 })).rejects.toThrow(/learning rate must be in/);
    await expect(createTrainer({ seed: -1 })).rejects.toThrow(/seed must be a non-negative integer/);
    await expect(createTrainer({ sped: 1 })).rejects.toThrow(/unknown option "sped"/);
    const trainer = await createTrainer({ dModel: 16 });
    expect(() => trainer.train(0)).toThrow(/count must be from 1/);
    expect(() => trainer.sample(256)).toThrow(/index must be from 0 to 255/);
    expect(() => { trainer.learningRate = 2; }).toThrow(/learningRate must be in \(0, 1\]/);
    // a learning rate of 1 on this model diverges or not; either way the module answers
    trainer.learningRate = 1;
    try { trainer.train(50); } catch (error) { expect(error.message).toMatch(/lower the learning rate/); }
    trainer.dispose();
    expect(() => trainer.train(1)).toThrow(/disposed/);
    const again = await createTrainer({ dModel: 16 });
    expect(again.train(2).length).toBe(2);
    again.dispose();
  });
});

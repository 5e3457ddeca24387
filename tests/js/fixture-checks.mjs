// Vitest helpers over the fixtures (checkpoints.mjs is shared with the browser tests, which have no
// Vitest): a loaded model against transformers' numbers, and hub variants of a fixture.
import { expect } from 'vitest';
import {
  encodeJson, expectedOutputs, fixtureConfig, fixtureFiles, maxAbs, maxAbsDiff, readSafetensors, writeSafetensors,
} from './checkpoints.mjs';

// Runs every fixture case through a loaded model and compares with transformers.
export function checkAgainstTransformers(model, fixture, { logits = true, tokenize = true } = {}) {
  const cases = expectedOutputs(fixture);
  for (const c of cases) {
    if (tokenize) {
      const enc = model.tokenize(c.text, c.text_pair ?? undefined);
      expect(Array.from(enc.ids), `${fixture} ${c.key} ids`).toEqual(Array.from(c.ids));
      if (c.types) expect(Array.from(enc.tokenTypeIds)).toEqual(Array.from(c.types));
      expect(enc.tokens).toEqual(c.tokens);
    }
    const out = model.run(c.ids, { tokenTypeIds: c.types, hiddenStates: true, lastHiddenState: true });
    expect(out.attentions.length).toBe(c.attentions.length);
    expect(maxAbsDiff(out.attentions, c.attentions), `${fixture} ${c.key} attentions`).toBeLessThan(1e-4);
    expect(maxAbsDiff(out.hiddenStates, c.hidden), `${fixture} ${c.key} hidden states`).toBeLessThan(1e-3 * Math.max(1, maxAbs(c.hidden)));
    const [, n, d] = c.hiddenShape;
    expect(out.lastHiddenState).toEqual(out.hiddenStates.subarray(out.hiddenStates.length - n * d));
    if (logits) {
      expect(out.logits.length).toBe(c.logits.length);
      expect(maxAbsDiff(out.logits, c.logits), `${fixture} ${c.key} logits`).toBeLessThan(1e-3 * maxAbs(c.logits));
    } else {
      expect(out.logits).toBeNull();
    }
  }
  return cases.length;
}

// Hub variants made from a fixture: files with the weights replaced and config.json edited.
export function variant(fixture, { tensors, config, drop = [] }) {
  const files = fixtureFiles(fixture);
  const original = readSafetensors(files.get('model.safetensors'));
  files.set('model.safetensors', writeSafetensors(tensors(original)));
  if (config) files.set('config.json', encodeJson(config(fixtureConfig(fixture))));
  for (const name of drop) files.delete(name);
  return files;
}


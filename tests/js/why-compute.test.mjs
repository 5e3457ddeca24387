// The page's target and contrast (web/your-model/why-compute.mjs, tokenFrom): what the user typed
// becomes one token of the loaded model, or an Error that says what it is — never a token of it
// picked silently ("99999" past the vocabulary, a word of several tokens).
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadPretrained } from '../../bindings/multihead.mjs';
import { tokenFrom } from '../../web/your-model/why-compute.mjs';
import { FIXTURES } from './checkpoints.mjs';

describe('tokenFrom: one token, or a reason', () => {
  it('ids, vocabulary entries and one-token words map; the rest is refused by what it is', async () => {
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    try {
      const { vocabSize } = model.config;
      expect(tokenFrom(model, '')).toBeNull();
      expect(tokenFrom(model, '17')).toBe(17);
      expect(tokenFrom(model, '#17')).toBe(17);
      expect(() => tokenFrom(model, String(vocabSize + 99999))).toThrow(/past the vocabulary \(0 … \d+\)/);
      // A word: one token with its leading space if there is one, and that token decodes to it.
      const word = model.tokenizer.decode([model.tokenize(' the').ids[0]]).trim();
      const id = tokenFrom(model, word);
      expect(model.decode([id]).trim()).toBe(word);
      // Several tokens: refused, naming the pieces (the fixture's vocabulary is tiny: long words split).
      const long = 'zzqqxxyyww';
      expect(model.tokenize(` ${long}`).ids.length).toBeGreaterThan(1);
      expect(() => tokenFrom(model, long)).toThrow(/“zzqqxxyyww” is \d+ tokens for this model \(“.+” \+ .*\), not one/);
    } finally {
      model.dispose();
    }
  });
});

describe('CSV exports quote as CSV does', () => {
  it('RFC 4180: a field with a quote, comma or line break is quoted, its quotes doubled (not JSON\'s \\")', async () => {
    const { csvField } = await import('../../web/common/export.mjs');
    expect(csvField('plain')).toBe('plain');
    expect(csvField('say "hi", ok')).toBe('"say ""hi"", ok"');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
  });
});

describe('the corrupted prompt keeps the token count on the loaded tokenizer', () => {
  it('a name swap of as many tokens, a common name when the text\'s own changes the count, or why none', async () => {
    const { corruptionCandidates, corruptionFor } = await import('../../web/your-model/why-compute.mjs');
    const model = await loadPretrained(join(FIXTURES, 'gpt2'));
    try {
      const count = (t) => model.tokenize(t).ids.length;
      for (const text of ['When Mary and John went to the store, John gave a drink to',
        'When Mr. Darcy and Elizabeth went to the house, Darcy gave a letter to',
        'After Bartholomew met Zed at the fair, Zed handed the map to']) {
        const { corrupt, reason } = corruptionFor(text, count);
        expect(reason, text).toBeUndefined();
        expect(corrupt).not.toBe(text);
        expect(count(corrupt)).toBe(count(text));
        // Only the last occurrence of the repeated name changed.
        const candidates = corruptionCandidates(text);
        expect(candidates).toContain(corrupt);
      }
      expect(corruptionFor('the cat sat on the mat', count)).toEqual({ corrupt: null, reason: expect.stringMatching(/no name to swap/) });
      // A tokenizer under which no swap keeps the count: said, not offered anyway.
      const text = 'When Mary met John, John';
      expect(corruptionFor(text, (t) => (t === text ? 7 : 8)).reason).toMatch(/no name swap keeps the text's 7 tokens/);
    } finally {
      model.dispose();
    }
  });
});

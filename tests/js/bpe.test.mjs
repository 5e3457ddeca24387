// BPE merging by a heap (bindings/tokenizers/models.mjs) against the textbook loop written here:
// repeatedly merge the adjacent pair of lowest rank, the leftmost of equal ranks. Random words
// over each fixture's own alphabet (fast-check, seeded), and a document that is one long word.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BPE } from '../../bindings/tokenizers/models.mjs';
import { loadTokenizer } from '../../bindings/multihead.mjs';
import { FIXTURES } from './checkpoints.mjs';

// The reference: O(m²), fine for short words.
function mergeByLoop(chars, ranks) {
  const symbols = chars.map((c, i) => [c, i, i + 1]);
  for (;;) {
    let best = -1, bestRank = Infinity;
    for (let i = 0; i + 1 < symbols.length; i += 1) {
      const rank = ranks.get(`${symbols[i][0]} ${symbols[i + 1][0]}`);
      if (rank !== undefined && rank < bestRank) { bestRank = rank; best = i; }
    }
    if (best < 0) return symbols;
    symbols.splice(best, 2, [symbols[best][0] + symbols[best + 1][0], symbols[best][1], symbols[best + 1][2]]);
  }
}

const BPE_FIXTURES = ['gpt2', 'llama', 'qwen2', 'gemma3', 'gpt_neox', 'roberta'];
const spec = (fixture) => JSON.parse(readFileSync(join(FIXTURES, fixture, 'tokenizer.json'), 'utf8')).model;

describe('BPE merges by a heap', () => {
  it.each(BPE_FIXTURES)('%s: the same tokens as the textbook loop on random words', (fixture) => {
    const model = new BPE(spec(fixture));
    // Few distinct characters make many merges and many equal ranks competing.
    const alphabet = [...new Set([...model.vocab.keys()].flatMap((t) => [...t]))].slice(0, 12);
    fc.assert(fc.property(fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 60 }), (chars) => {
      const expected = mergeByLoop(chars, model.ranks);
      if (!expected.every(([token]) => model.vocab.has(token))) return;  // byte fallback or unknowns: another path
      const got = model.tokenize(chars.map((c, i) => ({ c, s: i, e: i + 1 }))).map((t) => [t.token, t.s, t.e]);
      expect(got).toEqual(expected);
    }), { seed: 60, numRuns: 300 });
  });

  it('a pasted document with no pre-tokenizer split is one word: 120,000 characters of it tokenize, and decode back', () => {
    const read = (file) => readFileSync(join(FIXTURES, 'gemma3', file), 'utf8');
    const tokenizer = loadTokenizer({ tokenizerJson: read('tokenizer.json'), tokenizerConfig: JSON.parse(read('tokenizer_config.json')) });
    const text = 'a b '.repeat(30000);
    const { ids } = tokenizer.encode(text);
    expect(ids.length).toBeGreaterThan(1000);
    expect(tokenizer.decode(ids)).toBe(text);
  });
});

// BPE merging by a heap (bindings/tokenizers/models.mjs) against the textbook loop written here:
// repeatedly merge the adjacent pair of lowest rank, the leftmost of equal ranks. Random words
// over each fixture's own alphabet (fast-check, seeded), long words that the model cuts where no
// merge can join, the per-word cache, and a document that is one long word.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BPE } from '../../bindings/tokenizers/models.mjs';
import { alignedText } from '../../bindings/tokenizers/normalize.mjs';
import { makePreTokenizer, toPieces } from '../../bindings/tokenizers/pretokenize.mjs';
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

// A word (an array of characters) as the model sees it: one piece, offsets in UTF-16 units.
const tokenize = (model, chars) => {
  const out = model.tokenize(toPieces(alignedText(chars.join(''))));
  return out.tokens.map((token, i) => [token, out.starts[i], out.ends[i]]);
};
// The reference's symbols [token, first char, end char] with UTF-16 offsets instead.
const inUnits = (symbols, chars) => {
  const at = [0];
  for (const c of chars) at.push(at.at(-1) + c.length);
  return symbols.map(([token, a, b]) => [token, at[a], at[b]]);
};

describe('BPE merges by a heap', () => {
  it.each(BPE_FIXTURES)('%s: the same tokens as the textbook loop on random words', (fixture) => {
    const model = new BPE(spec(fixture));
    // Few distinct characters make many merges and many equal ranks competing.
    const alphabet = [...new Set([...model.vocab.keys()].flatMap((t) => [...t]))].slice(0, 12);
    fc.assert(fc.property(fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 60 }), (chars) => {
      const expected = mergeByLoop(chars, model.ranks);
      if (!expected.every(([token]) => model.vocab.has(token))) return;  // byte fallback or unknowns: another path
      expect(tokenize(model, chars)).toEqual(inUnits(expected, chars));
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

describe('long words, cut where no merge joins', () => {
  // Llama 2 and Gemma read a pasted document as one word. The model cuts a long word (over 256
  // UTF-16 units) between neighbours that no merge can join, and tokenizes the parts apart (and
  // from its cache): the tokens must be those of merging the whole word.
  const longWords = (alphabet) => fc.array(fc.constantFrom(...alphabet), { minLength: 257, maxLength: 420 });

  it.each(['llama', 'gemma3'])('%s: the same tokens as the textbook loop over the whole word', (fixture) => {
    const model = new BPE(spec(fixture));
    // The characters merges use most ('▁' and common letters): many merges, some cuts.
    const counts = new Map();
    for (const key of model.ranks.keys()) for (const c of key.replace(' ', '')) counts.set(c, (counts.get(c) ?? 0) + 1);
    const alphabet = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([c]) => c);
    expect(alphabet).toContain('▁');
    fc.assert(fc.property(longWords(alphabet), (chars) => {
      const expected = mergeByLoop(chars, model.ranks);
      if (!expected.every(([token]) => model.vocab.has(token))) return;
      expect(tokenize(model, chars)).toEqual(inUnits(expected, chars));
    }), { seed: 61, numRuns: 15 });
  });

  it('fuse_unk joins unknown characters across the cuts, as in the whole word', () => {
    const withUnknowns = { ...spec('llama'), byte_fallback: false, fuse_unk: true };
    const cut = new BPE(withUnknowns);
    const whole = new BPE(withUnknowns);
    whole.cuts = () => null;  // this instance merges every word whole
    const alphabet = ['▁', 'a', 'b', 'e', 't', 's', 'Ω', '東', '🙂', '▁▁'];
    fc.assert(fc.property(longWords(alphabet), (chars) => {
      expect(cut.cuts(chars.join('')).length).toBeGreaterThan(0);
      expect(tokenize(cut, chars)).toEqual(tokenize(whole, chars));
    }), { seed: 62, numRuns: 40 });
  });
});

describe('the per-word cache', () => {
  it.each(BPE_FIXTURES)('%s: a word seen before gives the tokens a fresh model gives', (fixture) => {
    const model = spec(fixture), warm = new BPE(model);
    const alphabet = [...new Set([...warm.vocab.keys()].flatMap((t) => [...t]))].slice(0, 8);
    const words = fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 12 });
    fc.assert(fc.property(fc.array(words, { minLength: 1, maxLength: 6 }), (list) => {
      for (const chars of [...list, ...list]) expect(tokenize(warm, chars)).toEqual(tokenize(new BPE(model), chars));
    }), { seed: 63, numRuns: 20 });
    expect(warm.cache.size).toBeGreaterThan(0);
  });

  it('stays bounded: it empties when it passes 100,000 words', () => {
    const model = new BPE(spec('gpt2'));
    const text = Array.from({ length: 100010 }, (_, i) => i.toString(36)).join(' ');
    const words = makePreTokenizer({ type: 'WhitespaceSplit' })(toPieces(alignedText(text)));
    expect(model.tokenize(words).length).toBeGreaterThanOrEqual(100010);
    expect(model.cache.size).toBeGreaterThan(0);
    expect(model.cache.size).toBeLessThanOrEqual(100000);
  });
});

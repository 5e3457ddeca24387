// generate()'s text per token (streamingDecoder): the pieces joined after the prompt's text are
// the decoded text of prompt and continuation, for byte-level BPE (GPT-2, Qwen2), SentencePiece
// with byte fallback and a Strip (Llama) and Metaspace (T5), on random Unicode split anywhere; a
// character whose bytes come in several tokens appears whole, once, with the token completing it.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer, streamingDecoder } from '../../bindings/tokenizers/tokenizer.mjs';
import { FIXTURES } from './checkpoints.mjs';

const tokenizer = (model) => new Tokenizer(JSON.parse(readFileSync(join(FIXTURES, model, 'tokenizer.json'), 'utf8')));
const settled = (text) => text.replace(/\uFFFD+$/u, '');

function pieces(tok, ids, split, context) {
  const next = streamingDecoder((list) => tok.decode(list), ids.slice(0, split), context);
  return Array.from(ids.slice(split), (id) => next(id));
}

describe('streamingDecoder', () => {
  for (const model of ['gpt2', 'qwen2', 'llama', 't5']) {
    it(`${model}: the prompt's text and the pieces make the whole text, wherever the prompt ends`, () => {
      const tok = tokenizer(model);
      fc.assert(fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).filter((s) => !s.includes('\uFFFD')),
        fc.nat(), fc.integer({ min: 1, max: 8 }),
        (text, cut, context) => {
          const ids = tok.encode(text, undefined, { addSpecialTokens: false }).ids;
          if (ids.length < 2) return;
          const split = 1 + (cut % (ids.length - 1));
          const whole = tok.decode(ids);
          expect(settled(tok.decode(ids.slice(0, split))) + pieces(tok, ids, split, context).join('')).toBe(settled(whole));
        }), { numRuns: 300 });
    });
  }

  it('holds a character back until the token that completes it (Llama: byte fallback)', () => {
    const tok = tokenizer('llama');
    const ids = tok.encode('a€b', undefined, { addSpecialTokens: false }).ids;
    const parts = pieces(tok, ids, 1, 8);
    expect(parts.join('')).toBe(tok.decode(ids).slice(tok.decode(ids.slice(0, 1)).length));
    expect(parts.some((p) => p.includes('\uFFFD'))).toBe(false);
    expect(parts.filter((p) => p.includes('€'))).toEqual(parts.filter((p) => p.includes('€')).slice(0, 1));
    if (ids.length > 3) expect(parts.filter((p) => p === '').length).toBeGreaterThan(0);  // € in bytes: pieces held back
  });

  it('the window never starts at an empty text (T5: "{ !" is ▁, <unk>, ▁, !; the second ▁ kept its space)', () => {
    const tok = tokenizer('t5');
    const ids = tok.encode('{ !', undefined, { addSpecialTokens: false }).ids;
    expect(tok.decode(ids.slice(0, 1)) + pieces(tok, ids, 1, 1).join('')).toBe(tok.decode(ids));
  });

  it('a byte that never completes a character is given once the text goes on (GPT-2)', () => {
    const tok = tokenizer('gpt2');
    const broken = tok.encode('é', undefined, { addSpecialTokens: false }).ids;  // 2 bytes: c3 a9
    const ids = [...tok.encode('x', undefined, { addSpecialTokens: false }).ids, ...broken.slice(0, 1), ...tok.encode('y', undefined, { addSpecialTokens: false }).ids];
    const whole = tok.decode(ids);
    expect(tok.decode(ids.slice(0, 1)) + pieces(tok, ids, 1, 8).join('')).toBe(whole);
  });
});

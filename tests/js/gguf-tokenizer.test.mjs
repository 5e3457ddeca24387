// The tokenizer of a GGUF file from its tokenizer.ggml.* metadata: llama.cpp's ids for the four
// fixtures (SentencePiece with byte fallback, Qwen2's and GPT-2's byte-level BPE), the way back,
// hostile text, properties on random Unicode (against a plain transcription of llama.cpp's
// SentencePiece merging), the special ids, and malformed metadata refused with our Error; then in
// wasm, the C++ reader's metadata against the tests' own reader (gguf-metadata.mjs), and
// loadPretrained giving a GGUF file its tokenizer, generation stopping at the file's ends.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPretrained, readGgufMetadata } from '../../bindings/multihead.mjs';
import { GGUF_PRE_TOKENIZERS, tokenizerFromGguf } from '../../bindings/tokenizers/gguf.mjs';
import { Tokenizer } from '../../bindings/tokenizers/tokenizer.mjs';
import { readGgufMetadataForTests } from './gguf-metadata.mjs';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'gguf');
const MODELS = ['llama-q8_0', 'qwen2-q4_0', 'llama-q4_k_m', 'gpt2-f16'];
const metadataOf = (model) => readGgufMetadataForTests(readFileSync(join(FIXTURES, model, 'model.gguf')));
const expectedOf = (model) => JSON.parse(readFileSync(join(FIXTURES, model, 'expected.json'), 'utf8'));
const METADATA = Object.fromEntries(MODELS.map((m) => [m, metadataOf(m)]));
const TOKENIZERS = Object.fromEntries(MODELS.map((m) => [m, tokenizerFromGguf(METADATA[m])]));
const spm = TOKENIZERS['llama-q8_0'], qwen2 = TOKENIZERS['qwen2-q4_0'], gpt2 = TOKENIZERS['gpt2-f16'];

// Only our own errors: a message that says what is wrong, never a TypeError from inside.
const refusal = (fn) => {
  try { fn(); } catch (error) { return error; }
  return null;
};
const expectOurError = (fn, pattern) => {
  const error = refusal(fn);
  expect(error, 'it should have thrown').toBeInstanceOf(Error);
  expect(error.constructor).toBe(Error);
  expect(error.message).toMatch(/^multihead: /);
  if (pattern) expect(error.message).toMatch(pattern);
};

describe("the fixtures' tokenizers make llama.cpp's ids", () => {
  for (const model of MODELS) {
    const { cases } = expectedOf(model);
    it(`${model}: every case's ids and pieces, and back to the text`, () => {
      const tok = TOKENIZERS[model];
      for (const { text, ids, tokens } of cases) {
        const encoding = tok.encode(text);
        expect(Array.from(encoding.ids)).toEqual(ids);
        expect(encoding.tokens).toEqual(tokens);
        expect(tok.decode(Array.from(encoding.ids))).toBe(text);
      }
    });
  }

  it('the vocabulary is the file\'s, id for id', () => {
    for (const model of MODELS) {
      const tokens = METADATA[model]['tokenizer.ggml.tokens'];
      const tok = TOKENIZERS[model];
      expect(tok.vocabSize).toBe(tokens.length);
      expect(tokens.map((_, id) => tok.token(id))).toEqual(tokens);
      expect(tokens.map((token) => tok.id(token))).toEqual(tokens.map((_, id) => id));
    }
  });

  it('offsets are ranges of the JS string, in order, that cover what the text says', () => {
    for (const model of MODELS) {
      const text = expectedOf(model).cases[2].text;
      const { offsets, special } = TOKENIZERS[model].encode(text);
      let last = 0;
      offsets.forEach(([s, e], k) => {
        if (special[k]) return;
        expect(s).toBeGreaterThanOrEqual(last);
        expect(e).toBeGreaterThanOrEqual(s);
        expect(e).toBeLessThanOrEqual(text.length);
        last = s;
      });
    }
    // A piece's own text where it is plain: "▁two" is the space before "two" and "two".
    const text = 'über  two';
    const enc = spm.encode(text);
    const k = enc.tokens.indexOf('▁two');
    expect(text.slice(...enc.offsets[k])).toBe(' two');
  });
});

describe('the special tokens', () => {
  it('SentencePiece: BOS 1 before each text, EOS 2 ends generation; Qwen2 and GPT-2: none added, <|endoftext|> ends', () => {
    expect(spm.bosId).toBe(1);
    expect(spm.eosIds).toEqual([2]);
    expect(spm.addBos).toBe(true);
    expect(Array.from(spm.encode('').ids)).toEqual([1]);
    expect(spm.encode('').special).toEqual([true]);
    for (const tok of [qwen2, gpt2]) {
      expect(tok.addBos).toBe(false);
      expect(tok.eosIds).toEqual([0]);
      expect(Array.from(tok.encode('').ids)).toEqual([]);
    }
  });

  it('control tokens typed in the text are split out (special), and decode leaves them out', () => {
    const enc = spm.encode('a<s>b</s>');
    expect(enc.tokens).toEqual(['<s>', '▁a', '<s>', '▁b', '</s>']);
    expect(spm.decode(Array.from(enc.ids))).toBe('a b');
    // Kept, the first token is <s>: the space prefixed to "a" stays (llama.cpp's detokenize too).
    expect(spm.decode(Array.from(enc.ids), { skipSpecialTokens: false })).toBe('<s> a<s> b</s>');
    expect(Array.from(gpt2.encode('x<|endoftext|>y').ids)).toEqual([gpt2.id('x'), 0, gpt2.id('y')]);
  });

  it('user-defined tokens are split out too, but are text: decode keeps them; SentencePiece prefixes a space after them', () => {
    // A token added at the end as user-defined, in raw text as llama.cpp's converter writes them.
    const withUserToken = (model, text) => {
      const base = METADATA[model], scores = base['tokenizer.ggml.scores'];
      return tokenizerFromGguf({ ...base, 'tokenizer.ggml.tokens': [...base['tokenizer.ggml.tokens'], text],
        'tokenizer.ggml.token_type': [...base['tokenizer.ggml.token_type'], 4], 'tokenizer.ggml.scores': scores && [...scores, 0] });
    };
    const sentencePiece = withUserToken('llama-q8_0', '<tool>');
    const enc = sentencePiece.encode('x<tool>y');
    // Each side tokenized as a text of its own, "y" with its space prefixed as at the start.
    const alone = (text) => sentencePiece.encode(text).tokens.slice(1);
    expect(enc.tokens).toEqual(['<s>', ...alone('x'), '<tool>', ...alone('y')]);
    expect(alone('y')[0]).toMatch(/^▁/);
    expect(sentencePiece.decode(Array.from(enc.ids))).toBe('x<tool> y');
    const byteLevel = withUserToken('gpt2-f16', '  two');
    expect(byteLevel.encode('a  two').tokens).toEqual(['a', '  two']);
    expect(byteLevel.decode(Array.from(byteLevel.encode('a  two b').ids))).toBe('a  two b');
  });

  it('add_bos_token / add_eos_token / add_space_prefix from the file; eot and eom found by their text too', () => {
    const base = METADATA['llama-q8_0'];
    const tokens = [...base['tokenizer.ggml.tokens']];
    tokens[1150] = '<|eot_id|>';
    tokens[1151] = '<|eom_id|>';
    const tok = tokenizerFromGguf({ ...base, 'tokenizer.ggml.tokens': tokens, 'tokenizer.ggml.add_bos_token': false,
      'tokenizer.ggml.add_eos_token': true, 'tokenizer.ggml.add_space_prefix': false });
    expect(tok.eotId).toBe(1150);
    expect(tok.eomId).toBe(1151);
    expect(tok.eosIds).toEqual([2, 1150, 1151]);
    const enc = tok.encode('The animal');
    expect(enc.tokens[0]).not.toMatch(/^▁/);
    expect(enc.tokens.at(-1)).toBe('</s>');
    expect(enc.special.at(-1)).toBe(true);
    expect(tok.decode(Array.from(enc.ids))).toBe('The animal');
  });

  it('tokenizer.ggml.pre picks the split: Llama 3 cuts digits in threes, keeps whole words that are tokens, adds BOS', () => {
    // Merges that join across GPT-2's pieces but not Llama 3's: "3 4" first, then 12 and 123.
    const bpe = (pre) => tokenizerFromGguf({ 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': pre,
      'tokenizer.ggml.tokens': ['<|begin_of_text|>', 'Ġ', '1', '2', '3', '4', 'a', 'b', 'c', '34', '12', '123', 'ab', 'abc'],
      'tokenizer.ggml.token_type': [3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
      'tokenizer.ggml.merges': ['3 4', '1 2', '12 3', 'a b'], 'tokenizer.ggml.bos_token_id': 0 });
    const gpt2Split = bpe('gpt-2'), llama3 = bpe('llama-bpe'), qwen2Split = bpe('qwen2');
    expect(gpt2Split.encode('1234').tokens).toEqual(['12', '34']);
    expect(llama3.encode('1234').tokens).toEqual(['<|begin_of_text|>', '123', '4']);
    expect(qwen2Split.encode('1234').tokens).toEqual(['1', '2', '3', '4']);
    expect(gpt2Split.encode('abc').tokens).toEqual(['ab', 'c']);
    expect(llama3.encode('abc').tokens).toEqual(['<|begin_of_text|>', 'abc']);
    expect([gpt2Split.addBos, llama3.addBos, qwen2Split.addBos]).toEqual([false, true, false]);
    // No pre-tokenizer named: llama.cpp's "default" (punctuation runs, then GPT-2's, digits, threes).
    expect(bpe(undefined).encode('1234').tokens).toEqual(['123', '4']);
    // BPE's default BOS is id 11 (Falcon's), except for GLM's pre-tokenizer: none unless the file names one.
    const noKey = (pre) => ({ ...METADATA['gpt2-f16'], 'tokenizer.ggml.pre': pre, 'tokenizer.ggml.bos_token_id': undefined });
    expect(tokenizerFromGguf(noKey('gpt-2')).bosId).toBe(11);
    expect(tokenizerFromGguf(noKey('chatglm-bpe')).bosId).toBe(null);
    expect(tokenizerFromGguf({ ...noKey('chatglm-bpe'), 'tokenizer.ggml.bos_token_id': 5 }).bosId).toBe(5);
  });
});

// llama.cpp's SentencePiece merging transcribed plainly: the adjacent pair whose concatenation is
// a token of the highest score merges, the leftmost of equal scores, until none is a token; each
// symbol is then its token or its UTF-8 bytes as <0xNN>.
function referenceSentencePiece(metadata, text) {
  const tokens = metadata['tokenizer.ggml.tokens'], scores = metadata['tokenizer.ggml.scores'];
  const ids = new Map(tokens.map((t, i) => [t, i]));
  if (text === '') return [1];  // no text, no space prefixed
  const symbols = Array.from(` ${text}`.replaceAll(' ', '▁'));
  for (;;) {
    let best = -1, bestScore = -Infinity;
    for (let i = 0; i + 1 < symbols.length; i += 1) {
      const id = ids.get(symbols[i] + symbols[i + 1]);
      if (id !== undefined && scores[id] > bestScore) { best = i; bestScore = scores[id]; }
    }
    if (best < 0) break;
    symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
  }
  return [1, ...symbols.flatMap((s) => (ids.has(s) ? [ids.get(s)]
    : Array.from(new TextEncoder().encode(s), (b) => ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`))))];
}

describe('properties', () => {
  const SPECIALS = /<unk>|<s>|<\/s>|<\|endoftext\|>/;
  const anyText = fc.string({ unit: 'binary', maxLength: 80 }).filter((t) => !SPECIALS.test(t));
  // Text made of the vocabulary's own pieces, so that long merges happen, with odd characters between.
  const pieces = METADATA['llama-q8_0']['tokenizer.ggml.tokens'].slice(259).map((t) => t.replaceAll('▁', ' '));
  const vocabularyText = fc.array(fc.oneof(fc.constantFrom(...pieces), fc.constantFrom(' ', '  ', 'é', '東', '🙂', '\n')), { maxLength: 30 })
    .map((parts) => parts.join(''));

  it('SentencePiece with byte fallback: decode(encode(text)) is the text, for any Unicode without ▁', () => {
    fc.assert(fc.property(anyText.filter((t) => !t.includes('▁')), (text) => {
      expect(spm.decode(Array.from(spm.encode(text).ids))).toBe(text);
    }), { numRuns: 300 });
  });

  it('byte-level BPE (Qwen2 and GPT-2 splits): decode(encode(text)) is the text, for any Unicode', () => {
    fc.assert(fc.property(anyText, (text) => {
      expect(qwen2.decode(Array.from(qwen2.encode(text).ids))).toBe(text);
      expect(gpt2.decode(Array.from(gpt2.encode(text).ids))).toBe(text);
    }), { numRuns: 300 });
  });

  it('every pre-tokenizer read here splits any text without losing a byte', () => {
    const all = GGUF_PRE_TOKENIZERS.map((pre) => tokenizerFromGguf({ ...METADATA['gpt2-f16'], 'tokenizer.ggml.pre': pre }));
    expect(GGUF_PRE_TOKENIZERS).toEqual(expect.arrayContaining(['default', 'gpt-2', 'llama-bpe', 'qwen2', 'smollm', 'deepseek-coder']));
    fc.assert(fc.property(anyText, (text) => {
      for (const tok of all) expect(tok.decode(Array.from(tok.encode(text).ids))).toBe(text);
    }), { numRuns: 100 });
  });

  it("SentencePiece ids equal the plain transcription of llama.cpp's merging", () => {
    fc.assert(fc.property(fc.oneof(vocabularyText, anyText.filter((t) => !t.includes('▁'))), (text) => {
      expect(Array.from(spm.encode(text).ids)).toEqual(referenceSentencePiece(METADATA['llama-q8_0'], text));
    }), { numRuns: 300 });
  });

  it('texts past 256 characters (tokenized in parts, cut where no merge joins) too', () => {
    const longText = fc.array(fc.oneof(fc.constantFrom(...pieces), fc.constantFrom(' ', 'é', '🙂')), { minLength: 80, maxLength: 160 })
      .map((parts) => parts.join('')).filter((t) => t.length > 300);
    fc.assert(fc.property(longText, (text) => {
      expect(Array.from(spm.encode(text).ids)).toEqual(referenceSentencePiece(METADATA['llama-q8_0'], text));
    }), { numRuns: 20 });
  });

  it('equal scores merge leftmost first (the score, not the order of the tokens, decides)', () => {
    const metadata = (tokens, scores) => ({ 'tokenizer.ggml.model': 'llama', 'tokenizer.ggml.tokens': tokens,
      'tokenizer.ggml.scores': scores, 'tokenizer.ggml.add_bos_token': false, 'tokenizer.ggml.add_space_prefix': false });
    const tokens = ['<unk>', '<s>', '</s>', 'a', 'b', 'c', 'bc', 'ab'];
    const tie = tokenizerFromGguf(metadata(tokens, [0, 0, 0, -1, -1, -1, -5, -5]));
    expect(tie.encode('abc').tokens).toEqual(['ab', 'c']);
    const higher = tokenizerFromGguf(metadata(tokens, [0, 0, 0, -1, -1, -1, -4, -5]));
    expect(higher.encode('abc').tokens).toEqual(['a', 'bc']);
    // A character that is no token still merges into one that is; bytes stand for the rest.
    const accents = tokenizerFromGguf(metadata(['<unk>', '<s>', '</s>', '▁', '▁é', '<0xC3>', '<0xA9>'], [0, 0, 0, -1, -2, 0, 0]));
    expect(accents.encode(' é é').tokens).toEqual(['▁é', '▁é']);
    expect(accents.encode('é').tokens).toEqual(['<0xC3>', '<0xA9>']);
    expect(accents.decode(Array.from(accents.encode('é ').ids))).toBe('é ');
    // Characters past U+FFFF are one symbol each (two UTF-16 units): cut between them, not inside.
    const bytes = ['<0xF0>', '<0x9F>', '<0x99>', '<0x82>'];
    const emoji = tokenizerFromGguf(metadata(['<unk>', '<s>', '</s>', '▁', '🙂🙂', '▁🙂🙂', '▁🙂', ...bytes], [0, 0, 0, -1, -1, -2, -3, 0, 0, 0, 0]));
    expect(emoji.encode(' 🙂🙂🙂').tokens).toEqual(['▁🙂🙂', ...bytes]);
  });
});

describe('text the fixtures do not cover', () => {
  const paste = `${expectedOf('llama-q8_0').cases.map((c) => c.text).join('\n\n')}  `.repeat(45).slice(0, 10_240);
  const texts = ['', ' ', '     ', '\t\n', '🙂🙂 👩‍👩‍👧', '<s>', '</s>text', '<unk>', '<0x41>', '▁', '\uD800 lone', paste];

  for (const model of MODELS) {
    it(`${model}: empty text, spaces, emoji, special tokens typed as text, a 10 kB paste`, () => {
      const tok = TOKENIZERS[model];
      for (const text of texts) {
        const enc = tok.encode(text);
        expect(enc.ids.length).toBe(enc.tokens.length);
        expect(typeof tok.decode(Array.from(enc.ids))).toBe('string');
      }
      expect(tok.decode(Array.from(tok.encode(paste).ids))).toBe(paste);
    });
  }

  it('text typed as a byte token stays text', () => {
    const enc = spm.encode('<0x41>');
    expect(enc.tokens).not.toContain('<0x41>');
    expect(spm.decode(Array.from(enc.ids))).toBe('<0x41>');
  });
});

describe('metadata that is not a tokenizer we read is refused with our Error', () => {
  const llama = METADATA['llama-q8_0'], bpe = METADATA['gpt2-f16'];
  const tokens = llama['tokenizer.ggml.tokens'];
  const cases = [
    ['no metadata', null, /metadata must be an object/],
    ['an array', [], /metadata must be an object/],
    ['no tokenizer', {}, /tokenizer\.ggml\.model is missing/],
    ['a WordPiece (BERT) tokenizer', { ...llama, 'tokenizer.ggml.model': 'bert' }, /"bert" is not supported \(supported: llama/],
    ['a T5 tokenizer', { ...llama, 'tokenizer.ggml.model': 't5' }, /"t5" is not supported/],
    ['an RWKV tokenizer', { ...llama, 'tokenizer.ggml.model': 'rwkv' }, /"rwkv" is not supported/],
    ['a model that is a number', { ...llama, 'tokenizer.ggml.model': 7 }, /7 is not supported/],
    ['no tokens', { ...llama, 'tokenizer.ggml.tokens': undefined }, /tokenizer\.ggml\.tokens is missing/],
    ['tokens that are a string', { ...llama, 'tokenizer.ggml.tokens': 'abc' }, /tokens must be an array/],
    ['a token that is a number', { ...llama, 'tokenizer.ggml.tokens': [...tokens.slice(0, 5), 5, ...tokens.slice(6)] }, /tokens\[5\] must be a string/],
    ['no tokens at all', { ...llama, 'tokenizer.ggml.tokens': [], 'tokenizer.ggml.scores': [], 'tokenizer.ggml.token_type': [] }, /is empty/],
    ['a token twice', { ...llama, 'tokenizer.ggml.tokens': [...tokens.slice(0, 1199), tokens[500]] }, /twice \(ids 500 and 1199\)/],
    ['scores too short', { ...llama, 'tokenizer.ggml.scores': llama['tokenizer.ggml.scores'].slice(1) }, /scores has 1199 entries for 1200 tokens/],
    ['a score that is a string', { ...llama, 'tokenizer.ggml.scores': ['x', ...llama['tokenizer.ggml.scores'].slice(1)] }, /scores\[0\] must be a number/],
    ['token types too long', { ...llama, 'tokenizer.ggml.token_type': [...llama['tokenizer.ggml.token_type'], 1] }, /token_type has 1201 entries/],
    ['a token type of 1.5', { ...llama, 'tokenizer.ggml.token_type': [1.5, ...llama['tokenizer.ggml.token_type'].slice(1)] }, /token_type\[0\] must be a whole number/],
    ['add_bos_token that is a string', { ...llama, 'tokenizer.ggml.add_bos_token': 'yes' }, /add_bos_token must be true or false/],
    ['add_space_prefix that is 1', { ...llama, 'tokenizer.ggml.add_space_prefix': 1 }, /add_space_prefix must be true or false/],
    ['a BOS id that is text', { ...llama, 'tokenizer.ggml.bos_token_id': '1' }, /bos_token_id must be a token id/],
    ['a negative EOS id', { ...llama, 'tokenizer.ggml.eos_token_id': -2 }, /eos_token_id must be a token id/],
    // BPE's default BOS is 11 (Falcon's): past a vocabulary of 3 tokens.
    ['BOS asked for and no BOS', { 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'gpt-2', 'tokenizer.ggml.tokens': ['a', 'b', 'ab'],
      'tokenizer.ggml.merges': ['a b'], 'tokenizer.ggml.add_bos_token': true }, /add_bos_token is true, but there is no tokenizer\.ggml\.bos_token_id/],
    ['BPE without merges', { ...bpe, 'tokenizer.ggml.merges': undefined }, /merges is missing/],
    ['merges that are one string', { ...bpe, 'tokenizer.ggml.merges': 'h e' }, /merges must be an array/],
    ['a merge without a space', { ...bpe, 'tokenizer.ggml.merges': ['he', ...bpe['tokenizer.ggml.merges']] }, /merge 0 \("he"\) is not two tokens/],
    ['a merge of an unknown token', { ...bpe, 'tokenizer.ggml.merges': [...bpe['tokenizer.ggml.merges'], 'Ġ zzzq'] }, /merge 743 \("Ġ zzzq"\) needs token "zzzq"/],
    ['a merge whose result is no token', { ...bpe, 'tokenizer.ggml.merges': ['Ġt Ġt'] }, /needs token "ĠtĠt"/],
    ['an unknown pre-tokenizer', { ...bpe, 'tokenizer.ggml.pre': 'my-own' }, /pre-tokenizer "my-own" .*supported: default, gpt-2, .*qwen2.*llama-bpe|pre-tokenizer "my-own" .*supported: .*llama-bpe.*qwen2/],
    ['BPE scores of the wrong length', { ...bpe, 'tokenizer.ggml.scores': [0, 1] }, /scores has 2 entries for 1000 tokens/],
    ['a pre-tokenizer that is a number', { ...bpe, 'tokenizer.ggml.pre': 3 }, /pre must be a string/],
  ];

  for (const [what, metadata, pattern] of cases) {
    it(what, () => expectOurError(() => tokenizerFromGguf(metadata), pattern));
  }

  it("BPE's merge_ranks (how equal SentencePiece scores reach it) must give each merge a rank", () => {
    const model = { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: ['a b'] };
    for (const merge_ranks of [[], [0, 1], [-1], [0.5], 'x']) {
      expectOurError(() => new Tokenizer({ model: { ...model, merge_ranks } }), /merge_ranks must give each merge/);
    }
    expect(new Tokenizer({ model: { ...model, merge_ranks: [0] } }).encode('ab').tokens).toEqual(['ab']);
  });

  it('a special id past the vocabulary falls back as in llama.cpp (its default, or none)', () => {
    const tok = tokenizerFromGguf({ ...llama, 'tokenizer.ggml.bos_token_id': 5000, 'tokenizer.ggml.padding_token_id': 5000 });
    expect(tok.bosId).toBe(1);
    expect(tok.padId).toBe(null);
  });

  it('any key of a real file replaced by anything: it loads and works, or says what is wrong', () => {
    const keys = Object.keys(llama).filter((k) => k.startsWith('tokenizer.')).concat(Object.keys(bpe).filter((k) => k.startsWith('tokenizer.')));
    const value = fc.oneof(fc.jsonValue({ maxDepth: 1 }), fc.constant(undefined), fc.array(fc.oneof(fc.string(), fc.integer(), fc.double()), { maxLength: 5 }),
      fc.constant(new Float32Array(3)), fc.bigInt());
    fc.assert(fc.property(fc.nat(keys.length - 1), value, fc.boolean(), (k, replacement, shortened) => {
      const base = k < Object.keys(llama).filter((key) => key.startsWith('tokenizer.')).length ? llama : bpe;
      const broken = { ...base, [keys[k]]: shortened && Array.isArray(base[keys[k]]) ? base[keys[k]].slice(0, -1) : replacement };
      const error = refusal(() => {
        const tok = tokenizerFromGguf(broken);
        tok.decode(Array.from(tok.encode('Hello <s> world 123 🙂').ids));
      });
      if (error) {
        expect(error.constructor).toBe(Error);
        expect(error.message).toMatch(/^multihead: /);
      }
    }), { numRuns: 200 });
  });
});

// The C++ reader prints a float32 with 9 significant digits, enough to name it: compare as float32.
const sameValue = (a, b) => (typeof a === 'number' && typeof b === 'number' && !Number.isInteger(b)
  ? Math.fround(a) === Math.fround(b)
  : Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((x, k) => sameValue(x, b[k])) : a === b);

// The file's bytes with the first run of `from` replaced by `to` (as long), in place.
function patched(bytes, from, to) {
  const out = new Uint8Array(bytes);
  const at = out.findIndex((_, k) => from.every((b, j) => out[k + j] === b));
  expect(at).toBeGreaterThan(0);
  out.set(to, at);
  return out;
}
const utf8 = (text) => Array.from(new TextEncoder().encode(text));
const u32 = (n) => [n & 255, (n >> 8) & 255, (n >> 16) & 255, n >>> 24];
const u64 = (n) => [...u32(n), 0, 0, 0, 0];
// tokenizer.ggml.eos_token_id (type 4, u32) set to id.
const withEos = (bytes, id) => patched(bytes, [...utf8('tokenizer.ggml.eos_token_id'), ...u32(4)],
  [...utf8('tokenizer.ggml.eos_token_id'), ...u32(4), ...u32(id)]);
// One token's text (a GGUF string: u64 length, bytes) replaced by another as long.
const withTokenText = (bytes, from, to) => patched(bytes, [...u64(utf8(from).length), ...utf8(from)], [...u64(utf8(to).length), ...utf8(to)]);

describe('with the C++ reader and the loader (wasm)', () => {
  it("readGgufMetadata agrees with the tests' own reader, and its metadata makes the same tokenizer", async () => {
    for (const model of MODELS) {
      const metadata = await readGgufMetadata(new Uint8Array(readFileSync(join(FIXTURES, model, 'model.gguf'))));
      expect(Object.keys(metadata).sort()).toEqual(Object.keys(METADATA[model]).sort());
      for (const [key, value] of Object.entries(METADATA[model])) expect(sameValue(metadata[key], value), key).toBe(true);
      const tok = tokenizerFromGguf(metadata);
      for (const { text, ids } of expectedOf(model).cases) expect(Array.from(tok.encode(text).ids)).toEqual(ids);
    }
  });

  it("loadPretrained gives a GGUF file its tokenizer, and generation stops at the file's EOS", async () => {
    const bytes = readFileSync(join(FIXTURES, 'llama-q8_0', 'model.gguf'));
    const [c] = expectedOf('llama-q8_0').cases;
    const model = await loadPretrained(new File([withEos(bytes, c.greedy.ids[0])], 'model.gguf'));
    try {
      expect(Array.from(model.tokenize(c.text).ids)).toEqual(c.ids);
      expect(model.tokenizer.eosIds).toEqual([c.greedy.ids[0]]);
      const steps = [];
      for await (const step of model.generate(model.tokenize(c.text).ids, { maxNewTokens: 5 })) steps.push(step);
      expect(steps.map((step) => step.id)).toEqual([c.greedy.ids[0]]);
      expect(steps[0].text).toBe(model.decode([c.greedy.ids[0]]));
    } finally {
      model.dispose();
    }
  });

  it('generation also stops at an end of turn the file has only by its text (as llama.cpp finds it)', async () => {
    const c = expectedOf('llama-q8_0').cases[1];
    expect(c.greedy.tokens[0]).toBe('s▁to');  // six bytes, as "_<EOT>"
    const bytes = withTokenText(readFileSync(join(FIXTURES, 'llama-q8_0', 'model.gguf')), 's▁to', '_<EOT>');
    const model = await loadPretrained(new File([bytes], 'model.gguf'));
    try {
      expect(model.tokenizer.eosIds).toEqual([2, c.greedy.ids[0]]);
      const steps = [];
      for await (const step of model.generate(c.ids, { maxNewTokens: 5 })) steps.push(step);
      expect(steps.map((step) => [step.id, step.text])).toEqual([[c.greedy.ids[0], '']]);  // a control token: no text
    } finally {
      model.dispose();
    }
  });
});

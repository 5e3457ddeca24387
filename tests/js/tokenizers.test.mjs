// The tokenizers beyond the fixtures' cases: hand-computed splits of the Llama-3 pattern (with its
// (?i:…) group, which JavaScript lacks), cased WordPiece, added tokens inside text, properties on
// random Unicode (byte-level BPE is lossless; offsets stay inside the text), and fuzzing of the
// tokenizer.json reader: a mutated file either loads and works or is refused with our Error.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '../../bindings/tokenizers/tokenizer.mjs';
import { CHAR_TO_BYTE, makePreTokenizer, pieceTexts, toPieces } from '../../bindings/tokenizers/pretokenize.mjs';
import { alignedText, toJsRegex } from '../../bindings/tokenizers/normalize.mjs';
import { FIXTURES } from './checkpoints.mjs';

const spec = (model) => JSON.parse(readFileSync(join(FIXTURES, model, 'tokenizer.json'), 'utf8'));
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const splitWith = (pre, text) => pieceTexts(makePreTokenizer(pre)(toPieces(alignedText(text)), true));

describe('split patterns in Oniguruma syntax', () => {
  it('(?i:…) groups match either case; the rest of the pattern keeps its case', () => {
    const re = new RegExp(toJsRegex("(?i:'s|'ll)|x"), 'gu');
    expect("'S 'Ll 's X x".match(re)).toEqual(["'S", "'Ll", "'s", 'x']);
  });

  it("Llama 3's pattern splits as worked out by hand", () => {
    const pre = { type: 'Split', pattern: { Regex: LLAMA3 }, behavior: 'Isolated', invert: false };
    expect(splitWith(pre, "Hello WORLD'S 1234567 ok")).toEqual(['Hello', ' WORLD', "'S", ' ', '123', '456', '7', ' ok']);
    expect(splitWith(pre, 'a  b\n\nc')).toEqual(['a', ' ', ' b', '\n\n', 'c']);
    expect(splitWith(pre, "don't?!")).toEqual(['don', "'t", '?!']);
  });

  it('GPT-2 byte level: a leading space stays with its word, digits and punctuation apart', () => {
    expect(splitWith({ type: 'ByteLevel', add_prefix_space: false, use_regex: true }, "Hi, it's 42!"))
      .toEqual(['Hi', ',', 'Ġit', "'s", 'Ġ42', '!']);
  });

  it('Metaspace (newer Llama-2/Mistral files): ▁ for spaces, prepended once', () => {
    const pre = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
    expect(splitWith(pre, 'Hello  world')).toEqual(['▁Hello▁▁world']);
  });
});

describe('tokenizers on text the fixtures do not cover', () => {
  it('a Llama-3-style tokenizer.json (byte-level BPE, its own regex, ignore_merges) keeps words whole when they are tokens', () => {
    const base = spec('gpt2');
    const llama3 = {
      ...base,
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Split', pattern: { Regex: LLAMA3 }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
      model: { ...base.model, ignore_merges: true },
    };
    const tok = new Tokenizer(llama3);
    const enc = tok.encode("The animal didn't cross 1234567.");
    // Every token lies inside one of the pattern's pieces (hand-split above: no token spans two).
    const pieces = [[0, 3], [3, 10], [10, 15], [15, 17], [17, 23], [23, 24], [24, 27], [27, 30], [30, 31], [31, 32]];
    for (const [s, e] of enc.offsets) expect(pieces.some(([a, b]) => s >= a && e <= b)).toBe(true);
    expect(tok.decode(enc.ids)).toBe("The animal didn't cross 1234567.");
    // ignore_merges: a piece that is itself a vocabulary entry is one token.
    const word = Object.keys(base.model.vocab).find((t) => t.startsWith('Ġ') && t.length > 4 && /^Ġ[a-z]+$/.test(t));
    expect(tok.encode(word.replace('Ġ', ' ')).tokens).toEqual([word]);
  });

  it('cased WordPiece keeps capitals and accents (lowercase false, strip_accents unset)', () => {
    const base = spec('bert');
    const cased = new Tokenizer({ ...base, normalizer: { ...base.normalizer, lowercase: false } });
    const uncased = new Tokenizer(base);
    expect(uncased.encode('Café').tokens.slice(1, -1).join('')).toBe('c##a##fe');
    const tokens = cased.encode('Café').tokens.slice(1, -1);
    // The vocabulary was trained lowercased: "C" and "é" are unknown, so the word is [UNK] whole.
    expect(tokens).toEqual(['[UNK]']);
    expect(cased.encode('the cafe').tokens).toEqual(uncased.encode('the cafe').tokens);
  });

  it('added tokens inside text become their ids; BERT [MASK] survives lowercasing', () => {
    const gpt2 = new Tokenizer(spec('gpt2'));
    const enc = gpt2.encode('one<|endoftext|>two');
    expect(enc.ids[1]).toBe(0);
    expect(enc.offsets[1]).toEqual([3, 16]);
    const bert = new Tokenizer(spec('bert'));
    const masked = bert.encode('the cat [MASK] on the mat');
    expect(masked.tokens).toContain('[MASK]');
    expect(masked.ids[masked.tokens.indexOf('[MASK]')]).toBe(bert.id('[MASK]'));
  });

  it('ids past the tokenizer\'s vocabulary (a padded vocab_size) decode to nothing, as in tokenizers', () => {
    const gpt2 = new Tokenizer(spec('gpt2'));
    const ids = Array.from(gpt2.encode('the cat').ids);
    expect(gpt2.decode([...ids, 5000, 1e6])).toBe('the cat');
    expect(() => gpt2.decode([1.5])).toThrow(/not a token id/);
  });

  it('a sentence pair gets the template: [CLS] A [SEP] B [SEP], types 0 then 1', () => {
    const bert = new Tokenizer(spec('bert'));
    const enc = bert.encode('the cat', 'a mat');
    expect(enc.tokens[0]).toBe('[CLS]');
    expect(enc.tokens.at(-1)).toBe('[SEP]');
    const sep = enc.tokens.indexOf('[SEP]');
    expect(Array.from(enc.tokenTypeIds)).toEqual(enc.tokens.map((_, i) => (i <= sep ? 0 : 1)));
  });
});

describe('properties on random text', () => {
  const byteLevel = ['gpt2', 'qwen2'].map((m) => new Tokenizer(spec(m)));
  const others = ['bert', 'llama'].map((m) => new Tokenizer(spec(m)));

  it('byte-level BPE is lossless: decode(encode(text)) is the text, for any Unicode', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (text) => {
      for (const tok of byteLevel) {
        const wellFormed = text.isWellFormed ? text.isWellFormed() : true;
        if (!wellFormed) continue;  // lone surrogates have no UTF-8 form
        expect(tok.decode(tok.encode(text).ids)).toBe(text);
      }
    }), { numRuns: 300 });
  });

  it('every tokenizer: valid ids, offsets inside the text and in order, for any Unicode', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (text) => {
      for (const tok of [...byteLevel, ...others]) {
        const enc = tok.encode(text);
        let last = 0;
        enc.ids.forEach((id, i) => {
          expect(tok.token(id)).toBeDefined();
          const [s, e] = enc.offsets[i];
          expect(s >= 0 && e <= text.length && s <= e).toBe(true);
          if (!enc.special[i]) { expect(s).toBeGreaterThanOrEqual(last); last = s; }
        });
        expect(typeof tok.decode(enc.ids)).toBe('string');
      }
    }), { numRuns: 200 });
  });

  it('a 100k-character paste tokenizes in one go (no quadratic blow-up)', () => {
    const text = 'It is a truth universally acknowledged. '.repeat(2500);
    const enc = new Tokenizer(spec('gpt2')).encode(text);
    expect(enc.ids.length).toBeGreaterThan(10000);
  });
});

describe('offsets and the per-word cache on random text', () => {
  const MODELS = ['gpt2', 'bert', 'llama', 'qwen2', 'gpt_neox', 'gpt_neo', 'qwen3', 'gemma3', 'distilbert', 'roberta'];
  // Words the fixtures know, in varied company (spaces, newlines, punctuation, accents, CJK, emoji).
  const WORDS = ['the', 'The', 'cat', 'sat', 'mat', "don't", 'café', 'Zwölf', 'naïve', '東京', '🙂', '1234', 'aaaa', 'ababab', 'tired', '▁the'];
  const GLUE = [' ', '  ', '\n', '\t', '', ', ', '. ', '!', ' — ', '\u00a0', ' 🙂'];
  const prose = fc.array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...GLUE)), { minLength: 1, maxLength: 10 })
    .map((parts) => parts.flat().join(''));
  const anyText = fc.oneof(prose, fc.string({ unit: 'binary', maxLength: 40 }));
  const utf8 = new TextEncoder();
  const containsBytes = (haystack, needle) => {
    for (let i = 0; i + needle.length <= haystack.length; i += 1) if (needle.every((b, j) => haystack[i + j] === b)) return true;
    return false;
  };
  // Runs check(token, text.slice(start, end), start) on every token that came from the text.
  const eachToken = (tok, text, check) => {
    const enc = tok.encode(text);
    enc.tokens.forEach((token, i) => { if (!enc.special[i]) check(token, text.slice(...enc.offsets[i]), enc.offsets[i][0]); });
  };

  it.each(MODELS)('%s: a word in new company gives the tokens a fresh tokenizer gives', (model) => {
    const file = spec(model);
    const warm = new Tokenizer(file);
    fc.assert(fc.property(prose, (text) => {
      expect(warm.encode(text)).toEqual(new Tokenizer(file).encode(text));
    }), { seed: 70, numRuns: 40 });
  });

  it.each(['gpt2', 'roberta', 'qwen2', 'qwen3', 'gpt_neox', 'gpt_neo'])("%s (byte level): a token's bytes lie in the UTF-8 of its text.slice(start, end)", (model) => {
    const tok = new Tokenizer(spec(model));
    fc.assert(fc.property(anyText, (text) => eachToken(tok, text, (token, slice) => {
      const bytes = Array.from(token, (c) => CHAR_TO_BYTE.get(c));
      expect(containsBytes(utf8.encode(slice), bytes), `${JSON.stringify(token)} in ${JSON.stringify(slice)}`).toBe(true);
    })), { seed: 71, numRuns: 150 });
  });

  it.each(['llama', 'gemma3'])('%s (SentencePiece style): a token is its text.slice(start, end) with ▁ for spaces, or a byte of it', (model) => {
    const tok = new Tokenizer(spec(model));
    fc.assert(fc.property(anyText, (text) => eachToken(tok, text, (token, slice, start) => {
      const byte = /^<0x([0-9A-F]{2})>$/.exec(token);
      if (byte) { expect(utf8.encode(slice)).toContain(parseInt(byte[1], 16)); return; }
      const spaced = slice.replaceAll(' ', '▁');
      // Llama's normalizer prepends ▁ to the text: it belongs to the first token, with no width.
      expect(token === spaced || (start === 0 && token === `▁${spaced}`), `${JSON.stringify(token)} for ${JSON.stringify(slice)}`).toBe(true);
    })), { seed: 72, numRuns: 150 });
  });

  it.each(['bert', 'distilbert'])('%s (WordPiece): a token lies in its text.slice(start, end) lowercased, without accents or control characters', (model) => {
    const tok = new Tokenizer(spec(model));
    const normalize = (text) => Array.from(text, (c) => (/^[\p{Cc}\p{Cf}\uFFFD]$/u.test(c) && !'\t\n\r'.includes(c) ? ''
      : c.normalize('NFD').replace(/\p{Mn}/gu, '').toLowerCase())).join('');
    fc.assert(fc.property(anyText, (text) => eachToken(tok, text, (token, slice) => {
      if (token !== '[UNK]') expect(normalize(slice)).toContain(token.replace(/^##/, ''));
    })), { seed: 73, numRuns: 150 });
  });
});

describe('fuzzing the tokenizer.json reader', () => {
  // Random edits of real files: a value somewhere replaced by random JSON. The reader must either
  // accept the file (and then encode and decode without throwing anything but our Error) or refuse
  // it with an Error that starts with "multihead:". A TypeError from deep inside is a bug.
  const files = ['gpt2', 'bert', 'llama', 'qwen2'].map(spec);
  const paths = (value, prefix = [], out = []) => {
    out.push(prefix);
    if (value && typeof value === 'object' && prefix.length < 4) {
      const keys = Array.isArray(value) ? value.slice(0, 3).map((_, i) => i) : Object.keys(value).filter((k) => k !== 'vocab' || prefix.length < 1);
      for (const k of keys) paths(value[k], [...prefix, k], out);
    }
    return out;
  };
  const all = files.map((f) => paths(f));

  it('mutated tokenizer.json files load and work, or are refused with a readable Error', () => {
    fc.assert(fc.property(fc.nat(3), fc.nat(), fc.jsonValue({ maxDepth: 2 }), fc.string({ maxLength: 20 }), (which, pick, value, text) => {
      const file = structuredClone(files[which]);
      const path = all[which][pick % all[which].length];
      if (!path.length) return;
      let node = file;
      for (const k of path.slice(0, -1)) node = node[k];
      node[path.at(-1)] = value;
      try {
        const tok = new Tokenizer(file);
        tok.decode(tok.encode(text).ids);
      } catch (error) {
        expect(error).toBeInstanceOf(Error);
        expect(error.message, `${path.join('.')} = ${JSON.stringify(value)}`).toMatch(/^multihead: /);
      }
    }), { numRuns: 1500 });
  });
});

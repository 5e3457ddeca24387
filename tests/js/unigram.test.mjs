// SentencePiece Unigram tokenizers: T5 (tokenizer.json: Unigram, Precompiled, WhitespaceSplit +
// Metaspace, `$A </s>`), Marian (no tokenizer.json: source.spm / target.spm + vocab.json) and BART
// (byte-level BPE) against the ids transformers 5.17 produced for the fixtures; Unicode that the
// charsmap rewrites against Google's sentencepiece (tests/fixtures/sentencepiece); the Viterbi
// rules on hand-made vocabularies; XLM-R's and CamemBERT's layouts; fuzzing of the .spm reader.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer, loadTokenizer } from '../../bindings/tokenizers/tokenizer.mjs';
import { readSentencePieceModel } from '../../bindings/tokenizers/sentencepiece.mjs';
import { Charsmap, graphemeEnds } from '../../bindings/tokenizers/precompiled.mjs';
import { FIXTURES } from './checkpoints.mjs';

const read = (model, file) => readFileSync(join(FIXTURES, model, file), 'utf8');
const bytes = (model, file) => new Uint8Array(readFileSync(join(FIXTURES, model, file)));
const expected = (model) => JSON.parse(read(model, 'expected.json')).cases;
const REFERENCE = JSON.parse(readFileSync(join(FIXTURES, '..', 'sentencepiece', 'reference.json'), 'utf8'));

const t5 = () => loadTokenizer({ tokenizerJson: read('t5', 'tokenizer.json'), tokenizerConfig: JSON.parse(read('t5', 'tokenizer_config.json')) });
const marian = () => loadTokenizer({
  spmSource: bytes('marian', 'source.spm'), spmTarget: bytes('marian', 'target.spm'),
  vocabJson: read('marian', 'vocab.json'), tokenizerConfig: JSON.parse(read('marian', 'tokenizer_config.json')),
});
const bart = () => loadTokenizer({ tokenizerJson: read('bart', 'tokenizer.json') });
const TOKENIZERS = { t5: t5(), marian: marian(), bart: bart() };
const ids = (encoding) => Array.from(encoding.ids);

// tokenizer.json's Precompiled normalizer runs grapheme by grapheme (the tokenizers library's
// normalizers/precompiled.rs): a grapheme under 6 UTF-8 bytes that starts with a rule's key is
// replaced whole by that rule's text, so "ﬁ" + U+0301 becomes "fi" and "e" + U+0301 + U+0302
// becomes "é": marks after the rule are dropped, where sentencepiece keeps them.
const GRAPHEME_RULE = { 'ﬁ\u0301 and e\u0301\u0302': 'fi and é', 'x\u0301\u0302\u0303 o\u0308\u0304': 'x\u0301\u0302\u0303 ö' };

describe('encoder-decoder fixtures: the ids transformers 5.17 produced', () => {
  for (const [model, tok] of Object.entries(TOKENIZERS)) {
    it.each(expected(model).map((c) => [c.key, c]))(`${model} %s: source ids, and target ids from the target side's tokenizer`, (_, c) => {
      expect(ids(tok.encode(c.source))).toEqual(c.input_ids);
      expect(ids(tok.target.encode(c.target))).toEqual(c.labels);
      expect(tok.decode(c.input_ids)).toBe(c.decoded_source);
    });
  }

  it('bart from vocab.json + merges.txt (no tokenizer.json): the same ids, <s> A </s> included', () => {
    const tok = loadTokenizer({ vocabJson: read('bart', 'vocab.json'), mergesTxt: read('bart', 'merges.txt'), tokenizerConfig: JSON.parse(read('bart', 'tokenizer_config.json')) });
    for (const c of expected('bart')) {
      expect(ids(tok.encode(c.source))).toEqual(c.input_ids);
      expect(ids(tok.encode(c.target))).toEqual(c.labels);
    }
  });

  it.each(['t5', 'marian'])('%s: each token is the text at its offsets, ▁ for the space before it', (model) => {
    const tok = TOKENIZERS[model];
    for (const c of expected(model)) {
      for (const text of [c.source, c.target]) {
        const enc = tok.encode(text);
        let last = 0;
        enc.tokens.forEach((token, i) => {
          const [s, e] = enc.offsets[i];
          if (enc.special[i]) return;
          expect(s).toBeGreaterThanOrEqual(last);
          last = s;
          expect(text.slice(s, e).normalize('NFKC').trim()).toBe(token.replaceAll('▁', ' ').trim());
        });
      }
    }
  });

  it.each(['t5', 'marian'])('%s: decode(encode(text)) is the text with its runs of spaces made one', (model) => {
    const tok = TOKENIZERS[model];
    for (const c of expected(model)) {
      for (const text of [c.source, c.target]) expect(tok.target.decode(tok.encode(text).ids)).toBe(text.replace(/\s+/g, ' ').trim());
    }
  });

  it("T5's <extra_id_N> sentinels split out of the text, the rest encoded as around them", () => {
    const tok = TOKENIZERS.t5;
    const plain = (text) => ids(tok.encode(text, undefined, { addSpecialTokens: false }));
    const sentinel = tok.id('<extra_id_0>');
    expect(sentinel).toBe(619);  // the top of the vocabulary, <extra_id_19> at 600
    expect(ids(tok.encode('The <extra_id_0> sat.'))).toEqual([...plain('The'), sentinel, ...plain('sat.'), tok.id('</s>')]);
    expect(tok.decode([sentinel], { skipSpecialTokens: false })).toBe('<extra_id_0>');
  });
});

describe("Unicode the charsmap rewrites, against Google's sentencepiece", () => {
  // Marian's vocab.json maps each piece to its id; a piece it lacks is <unk>.
  const vocab = JSON.parse(read('marian', 'vocab.json'));
  const marianIds = (pieces) => pieces.map((p) => vocab[p] ?? vocab['<unk>']);

  it.each(REFERENCE['marian/source.spm'].map((c) => [JSON.stringify(c.text), c]))('Marian (source.spm) %s', (_, c) => {
    const enc = TOKENIZERS.marian.encode(c.text);
    expect(ids(enc)).toEqual([...marianIds(c.pieces), vocab['</s>']]);
  });

  it.each(REFERENCE['t5/spiece.model'].map((c) => [JSON.stringify(c.text), c]))('T5 spiece.model read as a SentencePiece file %s', (_, c) => {
    const tok = loadTokenizer({ spmSource: bytes('t5', 'spiece.model') });
    expect(ids(tok.encode(c.text))).toEqual([...c.ids, 1]);
  });

  it.each(REFERENCE['t5/spiece.model'].map((c) => [JSON.stringify(c.text), c]))('T5 tokenizer.json %s', (_, c) => {
    const tok = TOKENIZERS.t5;
    if (GRAPHEME_RULE[c.text]) {
      expect(ids(tok.encode(c.text))).toEqual(ids(tok.encode(GRAPHEME_RULE[c.text])));
      return;
    }
    expect(ids(tok.encode(c.text))).toEqual([...c.ids, 1]);
  });

  it("graphemes found window by window are Intl.Segmenter's over the whole text", () => {
    // Pieces that join into graphemes (marks, ZWJ emoji, flags, skin tones, jamo, Devanagari, CR LF),
    // alone (one stretch for Intl.Segmenter, longer than its 256-unit window) or among ones that
    // never join (short stretches).
    const joining = ['e\u0301', '\u0301', '\u200d', '👨', '👩\u200d👧', '🇯', '🇵', '👍🏽', '\u1100', '\u1161', '\u11a8', 'क्ष', 'ि',
      '\r', 'ﾞ', '\u0600', '\ufe0f', '\ud83d'];
    const plain = ['a', ' ', 'é', '\n', '東', 'ｶ', '한', '1'];
    const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    const texts = fc.boolean().chain((mixed) => fc.array(fc.constantFrom(...joining, ...(mixed ? plain : [])), { minLength: 100, maxLength: 900 }));
    fc.assert(fc.property(texts, (parts) => {
      const text = parts.join('');
      expect(graphemeEnds(text)).toEqual(Array.from(segmenter.segment(text), ({ index, segment }) => index + segment.length));
    }), { numRuns: 60 });
  });

  it('full-width letters, ligatures and NBSP read as their plain forms; offsets cover the originals', () => {
    const tok = TOKENIZERS.t5;
    const text = 'ﬁne ＡＢＣ\u00a0ok';
    const enc = tok.encode(text, undefined, { addSpecialTokens: false });
    expect(ids(enc)).toEqual(ids(tok.encode('fine ABC ok', undefined, { addSpecialTokens: false })));
    expect(enc.offsets[0][0]).toBe(0);
    expect(enc.offsets.at(-1)[1]).toBe(text.length);
    for (const [s, e] of enc.offsets) expect(0 <= s && s <= e && e <= text.length).toBe(true);
  });
});

describe('Unigram on hand-made vocabularies', () => {
  const unigram = (vocab, extra = {}) => new Tokenizer({ model: { type: 'Unigram', unk_id: 0, vocab, ...extra } });
  const tokens = (tok, text) => tok.encode(text).tokens;

  it("the best-scoring segmentation (the tokenizers library's own example)", () => {
    const tok = unigram([['<unk>', 0], ['a', 0], ['b', 0], ['c', 0], ['d', 0], ['cd', 1], ['ab', 2], ['abc', 5], ['abcd', 10]]);
    expect(tokens(tok, 'abcdacdxx')).toEqual(['abcd', 'a', 'cd', 'xx']);
  });

  it('ties go to the piece found first: the one from the earliest start', () => {
    // "ab" scores -2 as one piece and as a + b: the one-piece path reaches position 2 first.
    const tok = unigram([['<unk>', 0], ['a', -1], ['b', -1], ['ab', -2]]);
    expect(tokens(tok, 'ab')).toEqual(['ab']);
    // Here a + b (-1.5) beats ab (-2).
    expect(tokens(unigram([['<unk>', 0], ['a', -0.75], ['b', -0.75], ['ab', -2]]), 'ab')).toEqual(['a', 'b']);
  });

  it('unknown characters next to each other are one unknown token, with their whole range', () => {
    const tok = unigram([['<unk>', 0], ['a', -1]]);
    const enc = tok.encode('axyza');
    expect(enc.tokens).toEqual(['a', 'xyz', 'a']);
    expect(ids(enc)).toEqual([1, 0, 1]);
    expect(enc.offsets[1]).toEqual([1, 4]);
  });

  it('byte fallback spells an unknown character in its UTF-8 bytes', () => {
    const bytePieces = Array.from({ length: 256 }, (_, b) => [`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0]);
    const tok = unigram([['<unk>', 0], ['a', -1], ...bytePieces], { byte_fallback: true });
    expect(tokens(tok, 'a東')).toEqual(['a', '<0xE6>', '<0x9D>', '<0xB1>']);
  });

  it('an unknown character without an unk_id is our Error', () => {
    const tok = () => new Tokenizer({ model: { type: 'Unigram', unk_id: null, vocab: [['a', -1], ['b', -1]] } });
    expect(tok).toThrow(/^multihead: .*no unk_id/);
  });
});

// A SentencePiece model file written here: pieces [piece, score, type], no charsmap unless given.
function spmModel(pieces, { charsmap = null, byteFallback = false, addDummyPrefix = false } = {}) {
  const out = [];
  const varint = (n) => { for (; n > 127; n = Math.floor(n / 128)) out.push((n & 127) | 128); out.push(n); };
  const field = (number, wire) => varint(number * 8 + wire);
  const message = (number, write) => {
    const start = out.length;
    write();
    const body = out.splice(start);
    field(number, 2);
    varint(body.length);
    for (const b of body) out.push(b);
  };
  const string = (number, value) => { const b = new TextEncoder().encode(value); field(number, 2); varint(b.length); for (const x of b) out.push(x); };
  for (const [piece, score, type = 1] of pieces) {
    message(1, () => {
      string(1, piece);
      field(2, 5);
      out.push(...new Uint8Array(Float32Array.of(score).buffer));
      field(3, 0);
      varint(type);
    });
  }
  message(2, () => { field(3, 0); varint(1); field(35, 0); varint(byteFallback ? 1 : 0); field(40, 0); varint(0); });
  message(3, () => {
    if (charsmap) { field(2, 2); varint(charsmap.length); for (const b of charsmap) out.push(b); }
    field(3, 0);
    varint(addDummyPrefix ? 1 : 0);
  });
  return Uint8Array.from(out);
}

describe('SentencePiece model files: what sentencepiece does that tokenizer.json does not', () => {
  const UNK = ['<unk>', 0, 2];
  const pieces = (tok, text) => tok.encode(text, undefined, { addSpecialTokens: false }).tokens;

  it('scores add up in float32, as in the C++ library (tokenizer.json: float64)', () => {
    // a + b = -(1 + 3·2⁻²⁵) exactly, above ab = -(1 + 2⁻²³) in float64, equal to it in float32,
    // where a tie keeps ab (found first).
    const vocab = [['a', -1], ['b', -3 * 2 ** -25], ['ab', -(1 + 2 ** -23)]];
    const file = loadTokenizer({ spmSource: spmModel([UNK, ...vocab]) });
    expect(pieces(file, 'ab')).toEqual(['ab']);
    const json = new Tokenizer({ model: { type: 'Unigram', unk_id: 0, vocab: [['<unk>', 0], ...vocab] } });
    expect(pieces(json, 'ab')).toEqual(['a', 'b']);
  });

  it('user-defined pieces win and skip the normalizer; unused and control pieces never match', () => {
    const charsmap = readSentencePieceModel(bytes('marian', 'source.spm')).normalizer.charsmap;
    const tok = loadTokenizer({ spmSource: spmModel([UNK, ['</s>', 0, 3], ['A', -1], ['B', -1], ['AB', -0.5, 5], ['ＡＢ', -50, 4], ['<', -1], ['/', -1], ['s', -1], ['>', -1]], { charsmap }) });
    expect(pieces(tok, 'ＡＢ')).toEqual(['ＡＢ']);  // user-defined: not made "AB" first
    expect(pieces(tok, 'AB')).toEqual(['A', 'B']);  // AB is unused
    expect(pieces(tok, 'ＡＡ')).toEqual(['A', 'A']);  // the charsmap still applies elsewhere
  });

  it('byte fallback: an unknown character as its UTF-8 bytes', () => {
    const bytePieces = Array.from({ length: 256 }, (_, b) => [`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0, 6]);
    const tok = loadTokenizer({ spmSource: spmModel([UNK, ...bytePieces, ['a', -1]], { byteFallback: true }) });
    expect(pieces(tok, 'aé')).toEqual(['a', '<0xC3>', '<0xA9>']);
    expect(tok.decode(tok.encode('aé').ids)).toBe('aé');
  });
});

describe('Marian: ids from vocab.json', () => {
  it("a piece vocab.json lacks is <unk>'s id there", () => {
    const vocab = JSON.parse(read('marian', 'vocab.json'));
    const { '▁the': dropped, ...fewer } = vocab;
    const tok = loadTokenizer({ spmSource: bytes('marian', 'source.spm'), vocabJson: JSON.stringify(fewer), tokenizerConfig: JSON.parse(read('marian', 'tokenizer_config.json')) });
    expect(TOKENIZERS.marian.encode('the cat').tokens[0]).toBe('▁the');
    expect(ids(tok.encode('the cat'))[0]).toBe(vocab['<unk>']);
    expect(ids(tok.encode('the cat')).slice(1)).toEqual(ids(TOKENIZERS.marian.encode('the cat')).slice(1));
    expect(dropped).toBe(4);
  });
});

describe('Marian: language codes', () => {
  it('a leading >>fr<< is its own token, the rest encoded as without it (transformers\' remove_language_code)', () => {
    const vocab = { ...JSON.parse(read('marian', 'vocab.json')), '>>fr<<': 600 };
    const tok = loadTokenizer({ spmSource: bytes('marian', 'source.spm'), vocabJson: JSON.stringify(vocab), tokenizerConfig: JSON.parse(read('marian', 'tokenizer_config.json')) });
    expect(ids(tok.encode('>>fr<< The cat'))).toEqual([600, ...ids(TOKENIZERS.marian.encode('The cat'))]);
  });
});

describe('Marian: the target side has its own model', () => {
  it('tokenizer.target reads target.spm (ids still from vocab.json)', () => {
    const vocab = JSON.parse(read('marian', 'vocab.json'));
    // A target model that knows only ▁ and a: everything else is unknown there.
    const target = spmModel([['<unk>', 0, 2], ['▁', -1], ['</s>', 0, 3], ['a', -1]], { addDummyPrefix: true });  // eos_id 2 by default
    const tok = loadTokenizer({ spmSource: bytes('marian', 'source.spm'), spmTarget: target, vocabJson: read('marian', 'vocab.json') });
    expect(ids(tok.target.encode('ab a'))).toEqual([vocab['▁'], vocab.a, vocab['<unk>'], vocab['▁'], vocab.a, vocab['</s>']]);
    expect(ids(tok.encode('ab a'))).toEqual(ids(TOKENIZERS.marian.encode('ab a')));
  });
});

describe("XLM-R's and CamemBERT's tokenizer.json layouts (Unigram, Precompiled, Metaspace, <s> $A </s>)", () => {
  // Built as transformers' converters lay them out, from T5's SentencePiece pieces: XLM-R puts
  // <s> <pad> </s> <unk> first and the model's pieces from its 4th on (ids one up from
  // sentencepiece's); CamemBERT five of its own, then the pieces from the 2nd on (ids four up).
  const t5Json = JSON.parse(read('t5', 'tokenizer.json'));
  const pieces = t5Json.model.vocab.slice(0, 600);
  const layout = (vocab, unkId) => new Tokenizer({
    normalizer: { type: 'Sequence', normalizers: [t5Json.normalizer.normalizers[0], { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', add_prefix_space: true },
    model: { type: 'Unigram', unk_id: unkId, vocab },
    post_processor: { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [], special_tokens: { '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] }, '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } } },
    decoder: { type: 'Metaspace', replacement: '▁', add_prefix_space: true },
  });
  const xlmr = layout([['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0], ...pieces.slice(3), ['<mask>', 0]], 3);
  const camembert = layout([['<s>NOTUSED', 0], ['<pad>', 0], ['</s>NOTUSED', 0], ['<unk>', 0], ['<unk>NOTUSED', -100], ...pieces.slice(1), ['<mask>', 0]], 3);
  // Texts where tokenizer.json's pipeline and sentencepiece agree: no space (or ▁, which nmt_nfkc
  // makes a space) at either end, as Metaspace keeps a trailing ▁ that sentencepiece drops; no
  // grapheme-rule case.
  const cases = REFERENCE['t5/spiece.model'].filter((c) => c.text && !/^[\s▁]|[\s▁]$/.test(c.text) && !GRAPHEME_RULE[c.text]);

  it.each(cases.map((c) => [JSON.stringify(c.text), c]))('%s', (_, c) => {
    const unknown = c.ids.map((id, k) => id === 2 || c.pieces[k] === '<unk>');
    expect(ids(xlmr.encode(c.text))).toEqual([0, ...c.ids.map((id, k) => (unknown[k] ? 3 : id + 1)), 2]);
    expect(ids(camembert.encode(c.text))).toEqual([0, ...c.ids.map((id, k) => (unknown[k] ? 3 : id + 4)), 2]);
  });

  it('a piece listed twice (CamemBERT\'s <unk>) keeps both ids', () => {
    expect(camembert.token(3)).toBe('<unk>');
    expect(camembert.token(6)).toBe('<unk>');
    expect(camembert.id('<unk>')).toBe(6);  // the last, as the tokenizers library's map keeps it
  });
});

describe('invariants on random text', () => {
  it('t5 and marian: valid ids, offsets inside the text and in order, decode gives a string', () => {
    const { t5: a, marian: b } = TOKENIZERS;
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
      for (const tok of [a, b]) {
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
    }), { numRuns: 300 });
  });

  it('ASCII words come back from decode(encode(text)) with single spaces', () => {
    fc.assert(fc.property(fc.array(fc.stringMatching(/^[A-Za-z0-9.,]{1,8}$/), { maxLength: 8 }), fc.constantFrom(' ', '  ', '\t', '\n'), (words, gap) => {
      const text = words.join(gap);
      for (const tok of [TOKENIZERS.t5, TOKENIZERS.marian]) expect(tok.decode(tok.encode(text).ids)).toBe(words.join(' '));
    }), { numRuns: 200 });
  });

  it('a long paste with no spaces (a whole text for Marian) tokenizes in one go', () => {
    const text = '東京タワー한국어 abc'.repeat(20000);
    for (const tok of [TOKENIZERS.t5, TOKENIZERS.marian]) expect(tok.encode(text).ids.length).toBeGreaterThan(20000);
  });
});

describe('reading SentencePiece model files', () => {
  const model = bytes('marian', 'source.spm');

  it('reads the pieces, the trainer spec and the normalizer spec', () => {
    const m = readSentencePieceModel(model);
    expect(m.pieces.length).toBe(600);
    expect(m.pieces.slice(0, 3).map((p) => [p.piece, p.type])).toEqual([['<unk>', 2], ['<s>', 3], ['</s>', 3]]);
    expect(m.trainer).toMatchObject({ modelType: 'unigram', byteFallback: false, unkId: 0, bosId: 1, eosId: 2, padId: -1 });
    expect(m.normalizer).toMatchObject({ name: 'nmt_nfkc', addDummyPrefix: true, removeExtraWhitespaces: true, escapeWhitespaces: true });
    expect(m.normalizer.charsmap.length).toBe(240007);
  });

  it('an absurd length is refused before anything that size is made', () => {
    // Field 1 (pieces), wire type 2, length 2^32 - 1.
    const bomb = Uint8Array.from([0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x00]);
    expect(() => readSentencePieceModel(bomb)).toThrow(/^multihead: .*4294967295 bytes runs past the end/);
  });

  it('a field running past the end of its message is refused', () => {
    // A piece (field 1, 5 bytes) whose text (field 1) claims 100 bytes.
    const truncated = Uint8Array.from([0x0A, 0x05, 0x0A, 0x64, 0x61, 0x62, 0x63]);
    expect(() => readSentencePieceModel(truncated)).toThrow(/^multihead: .*a field of 100 bytes runs past the end/);
  });

  const mustBeOurs = (fn) => {
    try { fn(); } catch (error) {
      expect(error?.constructor).toBe(Error);
      expect(error.message).toMatch(/^multihead: /);
    }
  };

  it('truncated, bit-flipped and random bytes: a model or our Error, never a TypeError or RangeError', () => {
    const mutated = fc.oneof(
      fc.nat(model.length).map((n) => model.subarray(0, n)),
      fc.array(fc.tuple(fc.nat(model.length - 1), fc.integer({ min: 0, max: 7 })), { minLength: 1, maxLength: 8 }).map((flips) => {
        const copy = model.slice();
        for (const [at, bit] of flips) copy[at] ^= 1 << bit;
        return copy;
      }),
      fc.uint8Array({ maxLength: 300 }),
    );
    fc.assert(fc.property(mutated, (data) => mustBeOurs(() => readSentencePieceModel(data))), { numRuns: 400 });
  });

  it('mutated models load and tokenize, or are refused with our Error', () => {
    // Flips in the pieces and specs (the first 8 kB), where they change what is built.
    fc.assert(fc.property(fc.array(fc.tuple(fc.nat(8191), fc.integer({ min: 0, max: 7 })), { minLength: 1, maxLength: 4 }), fc.string({ maxLength: 30 }), (flips, text) => {
      const copy = model.slice();
      for (const [at, bit] of flips) copy[at] ^= 1 << bit;
      mustBeOurs(() => {
        const tok = loadTokenizer({ spmSource: copy });
        tok.decode(tok.encode(text).ids);
      });
    }), { numRuns: 40 });
  });

  it('a corrupted charsmap never hangs or throws anything but our Error', () => {
    const charsmap = readSentencePieceModel(model).normalizer.charsmap;
    fc.assert(fc.property(fc.array(fc.tuple(fc.nat(charsmap.length - 1), fc.integer({ min: 0, max: 7 })), { minLength: 1, maxLength: 16 }), fc.string({ unit: 'binary', maxLength: 30 }), (flips, text) => {
      const copy = charsmap.slice();
      for (const [at, bit] of flips) copy[at] ^= 1 << bit;
      mustBeOurs(() => {
        const rules = new Charsmap(copy);
        for (let p = 0; p < text.length; p += 1) rules.match(text, p, text.length, p % 2 === 0);
      });
    }), { numRuns: 300 });
  });
});

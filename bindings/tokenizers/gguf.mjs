// The tokenizer a GGUF file carries in its tokenizer.ggml.* metadata, built as the equivalent
// tokenizer.json and run by the Tokenizer class, so that it makes the ids llama.cpp makes:
// - "llama" (SentencePiece): merges by the merged token's score, highest first, the leftmost of
//   equal scores; bytes that no token covers as <0xNN>; a space prefixed, spaces as ▁.
// - "gpt2" (byte-level BPE): the file's merges, after the split regexes llama.cpp picks by
//   tokenizer.ggml.pre.
// Control, unknown and user-defined tokens are split out of the text before the model, as
// llama.cpp does; control and unknown ones are special (decode skips them).
import { describe } from '../checks.mjs';
import { Tokenizer } from './tokenizer.mjs';

const fail = (message) => { throw new Error(`multihead: GGUF tokenizer: ${message}`); };

const KEY = (name) => `tokenizer.ggml.${name}`;
const SUPPORTED_MODELS = ['llama (SentencePiece)', 'gpt2 (byte-level BPE)'];

// llama.cpp's token types (tokenizer.ggml.token_type).
const TOKEN_TYPE = { UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4 };

// ---- split regexes, by tokenizer.ggml.pre (llama.cpp's table; a list is applied in turn) ----

const GPT2_SPLIT = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// (?i:'s|…) of the models' own files, spelled out in cases.
const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const LLAMA3_SPLIT = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const QWEN2_SPLIT = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const QWEN35_SPLIT = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const CASED_WORD = (ending) => `[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+${ending}|` +
  `[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*${ending}`;
const CJK = '[一-龥ࠀ-一가-퟿]+';

// Each entry: the names llama.cpp reads as one pre-tokenizer, its regexes, and what it changes
// beside (ignoreMerges: a piece that is a token stays whole; addBos: BOS by default; noBos: no
// default BOS id, the file's key only).
const PRE_TOKENIZERS = [
  { names: ['default'], regexes: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2_SPLIT, '\\p{N}+', '[0-9][0-9][0-9]'] },
  { names: ['gpt-2', 'phi-2', 'jina-es', 'jina-de', 'gigachat', 'jina-v2-es', 'jina-v2-de', 'a.x-4.0', 'mellum',
    'modern-bert', 'exaone4', 'mpt', 'olmo', 'jais', 'trillion', 'granite-docling'], regexes: [GPT2_SPLIT] },
  { names: ['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2', 'jina-v5-nano'],
    regexes: [LLAMA3_SPLIT], ignoreMerges: true, addBos: true },
  { names: ['dbrx', 'smaug-bpe'], regexes: [LLAMA3_SPLIT] },
  { names: ['qwen2', 'deepseek-r1-qwen', 'kormo', 'f2llmv2', 'megrez', 'stablelm2', 'hunyuan', 'solar-open'], regexes: [QWEN2_SPLIT] },
  { names: ['qwen35'], regexes: [QWEN35_SPLIT] },
  { names: ['starcoder', 'refact', 'command-r', 'smollm', 'codeshell', 'exaone', 'minerva-7b', 'mellum2'], regexes: ['\\p{N}', GPT2_SPLIT] },
  { names: ['falcon'], regexes: ['[\\p{P}\\$\\+<=>\\^~\\|`]+', GPT2_SPLIT, '[0-9][0-9][0-9]'] },
  { names: ['deepseek-coder'], regexes: ['[\\r\\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', CJK, '\\p{N}'] },
  { names: ['deepseek-v3', 'hunyuan-dense', 'joyai-llm', 'hy_v4'], regexes: ['\\p{N}{1,3}', '[一-龥぀-ゟ゠-ヿ]+',
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"] },
  { names: ['glm4', 'chatglm-bpe'], regexes: [LLAMA3_SPLIT], noBos: true },
  { names: ['gpt-4o', 'llama4', 'kanana2', 'talkie'],
    regexes: [`${CASED_WORD(`${CONTRACTIONS}?`)}|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`] },
  { names: ['tekken'], regexes: [`${CASED_WORD('')}|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`],
    ignoreMerges: true, addBos: true },
];
const PRE_BY_NAME = new Map(PRE_TOKENIZERS.flatMap((pre) => pre.names.map((name) => [name, pre])));
/** The tokenizer.ggml.pre names read here. */
export const GGUF_PRE_TOKENIZERS = Object.freeze([...PRE_BY_NAME.keys()]);

// Tokens llama.cpp takes for end of turn by their text, the first found winning (it finds no other
// mark in a file), and for end of generation: those and end of message.
const END_OF_TURN = ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>', '<EOT>',
  '_<EOT>', '<｜end▁of▁sentence｜>', '<end_of_utterance>'];
const END_OF_GENERATION = new Set([...END_OF_TURN, '<|eom_id|>']);

// ---- reading metadata values ----

const isArrayLike = (v) => Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));

function readArray(metadata, name, { required = false, length, element }) {
  const value = metadata[KEY(name)];
  if (value === undefined || value === null) return required ? fail(`${KEY(name)} is missing`) : null;
  if (!isArrayLike(value)) fail(`${KEY(name)} must be an array, got ${describe(value)}`);
  if (length !== undefined && value.length !== length) {
    fail(`${KEY(name)} has ${value.length} entries for ${length} tokens`);
  }
  for (let k = 0; k < value.length; k += 1) {
    if (!element.test(value[k])) fail(`${KEY(name)}[${k}] must be ${element.what}, got ${describe(value[k])}`);
  }
  return value;
}

const STRING = { test: (v) => typeof v === 'string', what: 'a string' };
const NUMBER = { test: (v) => typeof v === 'number' && !Number.isNaN(v), what: 'a number' };
const INTEGER = { test: (v) => Number.isInteger(v), what: 'a whole number' };

function readBoolean(metadata, name, fallback) {
  const value = metadata[KEY(name)];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') fail(`${KEY(name)} must be true or false, got ${describe(value)}`);
  return value;
}

function readString(metadata, name) {
  const value = metadata[KEY(name)];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') fail(`${KEY(name)} must be a string, got ${describe(value)}`);
  return value;
}

// A token id key: absent → the default; an id past the vocabulary → the default, as llama.cpp
// does (it warns); anything but a whole number → our error.
function readTokenId(metadata, name, fallback, count) {
  let value = metadata[KEY(name)];
  if (typeof value === 'bigint') value = Number(value);
  const usable = (id) => (id !== null && id >= 0 && id < count ? id : null);
  if (value === undefined || value === null) return usable(fallback);
  if (!Number.isInteger(value) || value < 0) fail(`${KEY(name)} must be a token id, got ${describe(value)}`);
  return usable(value) ?? usable(fallback);
}

// ---- the vocabulary ----

// Tokens as llama.cpp keeps them: an empty one renamed (it cannot be matched), a duplicate refused.
function readTokens(metadata) {
  const tokens = Array.from(readArray(metadata, 'tokens', { required: true, element: STRING }));
  if (!tokens.length) fail(`${KEY('tokens')} is empty`);
  const vocab = new Map();
  tokens.forEach((token, id) => {
    if (token === '') tokens[id] = token = `[EMPTY_${id}]`;
    if (vocab.has(token)) fail(`token ${JSON.stringify(token)} is in ${KEY('tokens')} twice (ids ${vocab.get(token)} and ${id})`);
    vocab.set(token, id);
  });
  return { tokens, vocab };
}

// Control, unknown and user-defined tokens, as tokenizer.json's added tokens; controlIds are
// more that count as control ones.
function addedTokens(tokens, types, controlIds) {
  const added = [];
  tokens.forEach((content, id) => {
    const type = types?.[id];
    const control = type === TOKEN_TYPE.CONTROL || type === TOKEN_TYPE.UNKNOWN || controlIds.has(id);
    if (!control && type !== TOKEN_TYPE.USER_DEFINED) return;
    added.push({ id, content, special: control, single_word: false, lstrip: false, rstrip: false, normalized: false });
  });
  return added;
}

// ---- special tokens ----

function specialTokens(metadata, tokens, vocab, defaults, pre) {
  const count = tokens.length;
  const byText = (candidates) => candidates.map((t) => vocab.get(t)).find((id) => id !== undefined) ?? null;
  const ids = {
    bos: readTokenId(metadata, 'bos_token_id', pre?.noBos ? null : defaults.bos, count),
    eos: readTokenId(metadata, 'eos_token_id', defaults.eos, count),
    unk: readTokenId(metadata, 'unknown_token_id', defaults.unk, count),
    pad: readTokenId(metadata, 'padding_token_id', null, count),
    eot: readTokenId(metadata, 'eot_token_id', null, count) ?? byText(END_OF_TURN),
    eom: readTokenId(metadata, 'eom_token_id', null, count) ?? byText(['<|eom_id|>']),
  };
  // Tokens that look like ends llama.cpp makes control tokens, whatever their type says.
  const endsByText = new Set(tokens.flatMap((t, id) => (END_OF_GENERATION.has(t) ? [id] : [])));
  const ends = new Set(endsByText);
  for (const id of [ids.eos, ids.eot, ids.eom]) if (id !== null) ends.add(id);
  return { ...ids, ends, endsByText };
}

// BOS / EOS around each sequence, as a tokenizer.json template.
function template(tokens, { bos, eos }, addBos, addEos) {
  if (!addBos && !addEos) return null;
  const single = [], pair = [], specials = Object.create(null);  // keyed by token text, "__proto__" too
  const add = (id, typeId, into) => {
    specials[tokens[id]] = { id: tokens[id], ids: [id], tokens: [tokens[id]] };
    into.push({ SpecialToken: { id: tokens[id], type_id: typeId } });
  };
  for (const [sequence, typeId, into] of [['A', 0, single], ['A', 0, pair], ['B', 1, pair]]) {
    if (addBos) add(bos, typeId, into);
    into.push({ Sequence: { id: sequence, type_id: typeId } });
    if (addEos) add(eos, typeId, into);
  }
  return { type: 'TemplateProcessing', single, pair, special_tokens: specials };
}

// ---- the two models ----

// SentencePiece's merges, as BPE merges: every way of cutting a token in two whose halves can be
// symbols (tokens, or single characters), ranked by the token's score, highest first. Equal
// scores share a rank, so the leftmost pair merges first, as in llama.cpp. Tokens with a space
// never match (spaces became ▁) and would make ambiguous merge keys: left out.
function sentencePieceMerges(tokens, scores) {
  // Columns, not an object per candidate: a 256k vocabulary has about a million.
  const lefts = [], rights = [], candidateScores = [];
  const hashes = new TokenHashes(tokens);
  tokens.forEach((token, id) => {
    if (token.includes(' ')) return;
    for (const k of hashes.symbolCuts(token)) {
      lefts.push(token.slice(0, k));
      rights.push(token.slice(k));
      candidateScores.push(scores ? scores[id] : 0);
    }
  });
  // Highest score first; a comparison, not a difference, so that ±Infinity sort too.
  const order = Array.from(lefts.keys()).sort((x, y) => (candidateScores[y] > candidateScores[x]) - (candidateScores[y] < candidateScores[x]));
  const merges = new Array(order.length), ranks = new Array(order.length);
  let rank = -1, previous = NaN;
  order.forEach((c, k) => {
    if (candidateScores[c] !== previous) { rank += 1; previous = candidateScores[c]; }
    merges[k] = [lefts[c], rights[c]];
    ranks[k] = rank;
  });
  return { merges, ranks };
}

// The tokens' polynomial hashes (mod 2³²) in an open-addressing table, so that every prefix and
// suffix of a token is looked up without a string made for it (a 256k vocabulary has millions).
// A hash that collides says "maybe a token": the merge it adds has a half that is no symbol, and
// can never apply, so only exactness costs nothing here.
class TokenHashes {
  static BASE = 0x01000193;

  constructor(tokens) {
    let size = 16;
    while (size < 2 * tokens.length) size *= 2;
    this.mask = size - 1;
    this.table = new Int32Array(size);
    this.used = new Uint8Array(size);
    const longest = tokens.reduce((n, t) => Math.max(n, t.length), 0);
    this.powers = new Int32Array(longest + 1);
    this.powers[0] = 1;
    for (let k = 1; k <= longest; k += 1) this.powers[k] = Math.imul(this.powers[k - 1], TokenHashes.BASE);
    this.prefix = new Int32Array(longest + 1);
    for (const token of tokens) this.#insert(this.#prefixHashes(token)[token.length]);
  }

  // prefix[k]: the hash of token.slice(0, k).
  #prefixHashes(token) {
    const { prefix } = this;
    for (let k = 0; k < token.length; k += 1) prefix[k + 1] = (Math.imul(prefix[k], TokenHashes.BASE) + token.charCodeAt(k)) | 0;
    return prefix;
  }

  #slot(hash) { return Math.imul(hash ^ (hash >>> 16), 0x45D9F3B) & this.mask; }

  #insert(hash) {
    let at = this.#slot(hash);
    while (this.used[at] && this.table[at] !== hash) at = (at + 1) & this.mask;
    this.used[at] = 1;
    this.table[at] = hash;
  }

  #mayHave(hash) {
    for (let at = this.#slot(hash); this.used[at]; at = (at + 1) & this.mask) if (this.table[at] === hash) return true;
    return false;
  }

  /** Where token can be cut into two halves that may each be a symbol (a token, or one character). */
  symbolCuts(token) {
    const n = token.length, prefix = this.#prefixHashes(token), whole = prefix[n], cuts = [];
    const firstWidth = codePointWidth(token, 0), lastWidth = n >= 2 && isLowSurrogate(token.charCodeAt(n - 1)) ? 2 : 1;
    for (let k = firstWidth; k < n; k += codePointWidth(token, k)) {
      const suffix = (whole - Math.imul(prefix[k], this.powers[n - k])) | 0;
      if ((k === firstWidth || this.#mayHave(prefix[k])) && (n - k === lastWidth || this.#mayHave(suffix))) cuts.push(k);
    }
    return cuts;
  }
}

const codePointWidth = (text, k) => (text.codePointAt(k) > 0xFFFF ? 2 : 1);
const isLowSurrogate = (code) => code >= 0xDC00 && code <= 0xDFFF;

function sentencePieceSpec(tokens, vocab, scores, special, metadata) {
  const { merges, ranks } = sentencePieceMerges(tokens, scores);
  const addSpacePrefix = readBoolean(metadata, 'add_space_prefix', true);
  return {
    normalizer: { type: 'Sequence', normalizers: [
      ...(addSpacePrefix ? [{ type: 'Prepend', prepend: '▁' }] : []),
      { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
    ] },
    pre_tokenizer: null,
    model: { type: 'BPE', vocab, merges, merge_ranks: ranks, byte_fallback: true, fuse_unk: true,
      unk_token: special.unk === null ? null : tokens[special.unk] },
    decoder: { type: 'Sequence', decoders: [
      { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
      { type: 'ByteFallback' },
      { type: 'Fuse' },
      ...(addSpacePrefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
    ] },
  };
}

function preTokenizerOf(metadata) {
  const name = readString(metadata, 'pre') ?? 'default';  // llama.cpp's choice too, with a warning
  const pre = PRE_BY_NAME.get(name);
  if (!pre) fail(`pre-tokenizer ${JSON.stringify(name)} (${KEY('pre')}) is not supported (supported: ${GGUF_PRE_TOKENIZERS.join(', ')})`);
  return pre;
}

function byteLevelSpec(metadata, tokens, vocab, pre) {
  const merges = readArray(metadata, 'merges', { required: true, element: STRING }).map((merge, k) => {
    const at = merge.indexOf(' ', 1);
    const pair = at > 0 ? [merge.slice(0, at), merge.slice(at + 1)] : null;
    if (!pair) fail(`merge ${k} (${JSON.stringify(merge)}) is not two tokens with a space between`);
    for (const token of [pair[0], pair[1], pair[0] + pair[1]]) {
      if (!vocab.has(token)) fail(`merge ${k} (${JSON.stringify(merge)}) needs token ${JSON.stringify(token)}, which is not in ${KEY('tokens')}`);
    }
    return pair;
  });
  return {
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      ...pre.regexes.map((regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false })),
      { type: 'ByteLevel', add_prefix_space: false, use_regex: false },
    ] },
    model: { type: 'BPE', vocab, merges, ignore_merges: !!pre.ignoreMerges, byte_fallback: false, unk_token: null },
    decoder: { type: 'ByteLevel' },
  };
}

// ---- the tokenizer ----

/** A Tokenizer with the special ids the file names (for stopping generation, and for a BOS). */
export class GgufTokenizer extends Tokenizer {
  constructor(spec, info) {
    super(spec);
    /** "llama" (SentencePiece) or "gpt2" (byte-level BPE): tokenizer.ggml.model. */
    this.ggufModel = info.model;
    /** The beginning-of-sequence id, or null. */
    this.bosId = info.special.bos;
    /** Every id that ends generation (EOS, end of turn, end of message, …), ascending. */
    this.eosIds = Object.freeze([...info.special.ends].sort((a, b) => a - b));
    this.eotId = info.special.eot;
    this.eomId = info.special.eom;
    this.unkId = info.special.unk;
    this.padId = info.special.pad;
    /** Whether encode() puts BOS before (EOS after) each text. */
    this.addBos = info.addBos;
    this.addEos = info.addEos;
  }
}

/**
 * The tokenizer of a GGUF file, from its metadata (key → value: strings, numbers, booleans, arrays).
 * @param {Record<string, unknown>} metadata
 * @returns {GgufTokenizer}
 */
export function tokenizerFromGguf(metadata) {
  if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) fail(`the metadata must be an object of GGUF keys, got ${describe(metadata)}`);
  const model = metadata[KEY('model')];
  if (model === undefined) fail(`the file has no tokenizer (${KEY('model')} is missing)`);
  if (model !== 'llama' && model !== 'gpt2') {
    fail(`${KEY('model')} ${describe(model)} is not supported (supported: ${SUPPORTED_MODELS.join(', ')})`);
  }
  const { tokens, vocab } = readTokens(metadata);
  const types = readArray(metadata, 'token_type', { length: tokens.length, element: INTEGER });
  // Read (and checked) for BPE files too, as llama.cpp does, though only SentencePiece merges by them.
  const scores = readArray(metadata, 'scores', { length: tokens.length, element: NUMBER });
  const spm = model === 'llama';
  const pre = spm ? null : preTokenizerOf(metadata);
  // llama.cpp's defaults where a key is absent (BPE's 11 is Falcon's).
  const defaults = spm ? { bos: 1, eos: 2, unk: 0 } : { bos: 11, eos: 11, unk: null };
  const special = specialTokens(metadata, tokens, vocab, defaults, pre);
  const addBos = readBoolean(metadata, 'add_bos_token', spm || !!pre?.addBos);
  const addEos = readBoolean(metadata, 'add_eos_token', false);
  if (addBos && special.bos === null) fail(`${KEY('add_bos_token')} is true, but there is no ${KEY('bos_token_id')}`);
  if (addEos && special.eos === null) fail(`${KEY('add_eos_token')} is true, but there is no ${KEY('eos_token_id')}`);
  const spec = spm ? sentencePieceSpec(tokens, vocab, scores, special, metadata) : byteLevelSpec(metadata, tokens, vocab, pre);
  spec.added_tokens = addedTokens(tokens, types, special.endsByText);
  spec.post_processor = template(tokens, special, addBos, addEos);
  try {
    return new GgufTokenizer(spec, { model, special, addBos, addEos });
  } catch (error) {
    // The Tokenizer speaks of tokenizer.json; this one came from GGUF metadata.
    const message = String(error?.message ?? error).replace(/^multihead: tokenizer\.json: /, '');
    return fail(message.startsWith('multihead:') ? message.replace(/^multihead: /, '') : message);
  }
}

// Hugging Face tokenizers in JavaScript, read from tokenizer.json (or from vocab.json + merges.txt,
// or vocab.txt, when a checkpoint has no tokenizer.json). The pipeline is the tokenizers library's:
// added tokens split out first → normalizer → pre-tokenizer → model (BPE / WordPiece) →
// post-processor (templates such as [CLS] $A [SEP] $B:1 [SEP]:1) → ids, token types, offsets;
// and decoders for the way back. Offsets are [start, end) in the original JS string.
import { alignedText, makeNormalizer } from './normalize.mjs';
import { makePreTokenizer, textPieces, toPieces, CHAR_TO_BYTE, GPT2_PATTERN } from './pretokenize.mjs';
import { makeModel, TokenList } from './models.mjs';
import { WordModel } from './word-model.mjs';
import { readSentencePieceModel, sentencePieceParts } from './sentencepiece.mjs';

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };
// out.push(...items) one at a time: a pasted document is a million tokens, past a call's arguments.
const append = (out, items) => { for (const item of items) out.push(item); return out; };

// Qwen2's split pattern, for a Qwen2 checkpoint that brings only vocab.json + merges.txt.
const QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Runs fn; an error that is not already ours (a field of an unexpected type deep in the file)
// becomes a readable one that names the file, so a malformed tokenizer.json never surfaces as a
// TypeError from inside the tokenizer.
function guard(what, fn) {
  try {
    return fn();
  } catch (error) {
    if (String(error?.message).startsWith('multihead:')) throw error;
    return fail(`it is malformed: ${what} failed (${error?.message ?? error})`);
  }
}

export class Tokenizer {
  /**
   * @param {object} spec the parsed tokenizer.json (the loaders here may pass a built model, a
   *   WordModel, and a normalizer function instead of their descriptions)
   */
  constructor(spec) {
    guard('reading it', () => this.#init(spec));
    // The tokenizer of an encoder-decoder's target text (Marian's target.spm); itself where one
    // tokenizer serves both sides.
    this.target = this;
    // Try it once, so a file that cannot work is refused at load, not at the first keystroke.
    guard('a test encoding', () => this.decode(this.encode('Hello, world! 123', 'pair').ids));
  }

  #init(spec) {
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) fail('it is not a JSON object');
    this.model = spec.model instanceof WordModel ? spec.model : makeModel(spec.model);
    this.normalize = typeof spec.normalizer === 'function' ? spec.normalizer : spec.normalizer ? makeNormalizer(spec.normalizer) : null;
    this.preTokenize = makePreTokenizer(spec.pre_tokenizer);
    this.postProcessor = spec.post_processor ?? null;
    this.decoder = spec.decoder ?? null;
    checkPostProcessor(this.postProcessor);
    checkDecoder(this.decoder);
    this.idToToken = [];
    for (const [token, id] of this.model.vocab) this.idToToken[id] = token;
    this.model.tokensById?.forEach((token, id) => { this.idToToken[id] ??= token; });
    this.added = [];
    this.special = new Set();
    for (const t of Array.isArray(spec.added_tokens) ? spec.added_tokens : []) {
      if (typeof t?.content !== 'string' || !Number.isInteger(t.id) || t.id < 0) fail('an added_tokens entry needs a content string and an id');
      this.idToToken[t.id] = t.content;
      this.added.push(t);
      if (t.special) this.special.add(t.id);
    }
    // One regex finds every added token, the longest first where two start at the same place.
    const contents = this.added.filter((t) => t.content.length).map((t) => t.content).sort((a, b) => b.length - a.length);
    this.addedRegex = contents.length ? new RegExp(contents.map(escapeRegex).join('|'), 'gu') : null;
    this.addedByContent = new Map(this.added.map((t) => [t.content, t]));
    this.vocabSize = this.idToToken.length;
  }

  /** The token string of an id, or undefined. */
  token(id) { return this.idToToken[id]; }
  /** The id of a token string, or undefined. */
  id(token) { return this.addedByContent.get(token)?.id ?? this.model.vocab.get(token); }

  // The tokens of one sequence, before the post-processor.
  #encodeSequence(text) {
    const out = new TokenList((text.length >> 1) + 16);  // about the number of tokens of English text
    this.#splitAdded(text).forEach((seg, index) => {
      if (seg.added) { out.push(seg.added.id, seg.added.content, seg.s, seg.e); return; }
      const pieces = this.normalize ? toPieces(this.normalize(alignedText(seg.text, seg.s))) : textPieces(seg.text, seg.s);
      if (pieces.spans.length) this.model.tokenize(this.preTokenize(pieces, index === 0 && seg.s === 0), out);
    });
    return out;
  }

  // Text → [{ text, s, e } | { added, s, e }], with added tokens' lstrip/rstrip/single_word rules.
  #splitAdded(text) {
    if (!this.addedRegex) return [{ text, s: 0, e: text.length }];
    const segments = [];
    let at = 0;
    for (const m of text.matchAll(this.addedRegex)) {
      const token = this.addedByContent.get(m[0]);
      let s = m.index, e = m.index + m[0].length;
      if (s < at) continue;
      if (token.single_word && (/[\p{L}\p{N}_]/u.test(text[s - 1] ?? '') || /[\p{L}\p{N}_]/u.test(text[e] ?? ''))) continue;
      if (token.lstrip) while (s > at && /\s/u.test(text[s - 1])) s -= 1;
      if (token.rstrip) while (e < text.length && /\s/u.test(text[e])) e += 1;
      if (s > at) segments.push({ text: text.slice(at, s), s: at, e: s });
      segments.push({ added: token, s, e });
      at = e;
    }
    if (at < text.length) segments.push({ text: text.slice(at), s: at, e: text.length });
    return segments;
  }

  /**
   * Encodes text (and an optional second text, for models that read pairs) as the model expects it.
   * @returns {{ ids: Int32Array, tokenTypeIds: Int32Array, tokens: string[], offsets: Array<[number, number]>,
   *   special: boolean[] }}
   */
  encode(text, textPair = undefined, { addSpecialTokens = true } = {}) {
    if (typeof text !== 'string') throw new Error(`multihead: tokenize needs a string, got ${typeof text}`);
    if (textPair !== undefined && textPair !== null && typeof textPair !== 'string') {
      throw new Error(`multihead: the second text of a pair must be a string, got ${typeof textPair}`);
    }
    return guard('encoding', () => this.#encode(text, textPair, addSpecialTokens));
  }

  #encode(text, textPair, addSpecialTokens) {
    const a = this.#encodeSequence(text);
    const b = typeof textPair === 'string' ? this.#encodeSequence(textPair) : null;
    const encoding = new Encoding();
    if (addSpecialTokens) this.#applyTemplate(encoding, a, b);
    else encoding.sequence(a, 0).sequence(b, 1);
    return encoding.done();
  }

  #applyTemplate(out, a, b) {
    const run = (pp) => {
      if (!pp) return out.sequence(a, 0).sequence(b, 1);
      switch (pp.type) {
        case 'Sequence': {
          const template = (pp.processors || []).find((p) => p.type !== 'ByteLevel');
          return run(template ?? null);
        }
        case 'ByteLevel': return run(null);
        case 'TemplateProcessing': {
          const items = b ? pp.pair : pp.single;
          for (const item of items || []) {
            if (item.Sequence) out.sequence(item.Sequence.id === 'B' ? b : a, item.Sequence.type_id ?? 0);
            else if (item.SpecialToken) {
              const sp = pp.special_tokens?.[item.SpecialToken.id];
              if (!sp) fail(`the template names special token ${JSON.stringify(item.SpecialToken.id)} but does not define it`);
              sp.ids.forEach((id, k) => out.special(sp.tokens?.[k] ?? item.SpecialToken.id, id, item.SpecialToken.type_id ?? 0));
            }
          }
          return out;
        }
        case 'BertProcessing': case 'RobertaProcessing': {
          const [clsToken, clsId] = pp.cls, [sepToken, sepId] = pp.sep;
          const roberta = pp.type === 'RobertaProcessing';
          out.special(clsToken, clsId, 0).sequence(a, 0).special(sepToken, sepId, 0);
          if (b) {
            if (roberta) out.special(sepToken, sepId, 0);
            out.sequence(b, roberta ? 0 : 1).special(sepToken, sepId, roberta ? 0 : 1);
          }
          return out;
        }
        default: return fail(`post-processor "${pp.type}" is not supported`);
      }
    };
    return run(this.postProcessor);
  }

  /** Token ids back to text, through the file's decoder. */
  decode(ids, { skipSpecialTokens = true } = {}) {
    return guard('decoding', () => this.#decode(ids, skipSpecialTokens));
  }

  #decode(ids, skipSpecialTokens) {
    const tokens = [];
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0) throw new Error(`multihead: token id ${id} is not a token id`);
      // Ids past the tokenizer's vocabulary (models pad vocab_size, e.g. Qwen2.5 to 151,936 for
      // 151,665 tokens) have no text: skipped, as the tokenizers library does.
      if (this.idToToken[id] === undefined) continue;
      if (skipSpecialTokens && this.special.has(id)) continue;
      tokens.push(this.idToToken[id]);
    }
    return runDecoder(this.decoder, tokens).join('');
  }
}

const escapeRegex = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The post-processor's output, built part by part: sequences (TokenLists) and special tokens.
// A sequence the template names twice takes the type id of its last mention everywhere.
class Encoding {
  constructor() {
    this.parts = [];
    this.types = new Map();
  }

  sequence(tokens, type) {
    if (tokens) { this.parts.push(tokens); this.types.set(tokens, type); }
    return this;
  }

  special(token, id, type) {
    this.parts.push({ token, id, type });
    return this;
  }

  done() {
    const { parts } = this;
    const length = parts.reduce((sum, p) => sum + (p instanceof TokenList ? p.length : 1), 0);
    const ids = new Int32Array(length), tokenTypeIds = new Int32Array(length);
    const offsets = new Array(length), special = new Array(length).fill(false);
    let k = 0;
    for (const part of parts) {
      if (part instanceof TokenList) {
        ids.set(part.ids.subarray(0, part.length), k);
        tokenTypeIds.fill(this.types.get(part), k, k + part.length);
        const { starts, ends } = part;
        for (let i = 0; i < part.length; i += 1) offsets[k + i] = [starts[i], ends[i]];
        k += part.length;
      } else {
        ids[k] = part.id;
        tokenTypeIds[k] = part.type;
        offsets[k] = [0, 0];
        special[k] = true;
        k += 1;
      }
    }
    const lists = parts.map((p) => (p instanceof TokenList ? p.tokens : [p.token]));
    const tokens = lists.length === 1 ? lists[0] : [].concat(...lists);
    return { ids, tokenTypeIds, tokens, offsets, special };
  }
}

function checkPostProcessor(pp) {
  const known = ['Sequence', 'ByteLevel', 'TemplateProcessing', 'BertProcessing', 'RobertaProcessing'];
  if (pp && !known.includes(pp.type)) fail(`post-processor "${pp.type}" is not supported (supported: ${known.join(', ')})`);
  const isId = (id) => Number.isInteger(id) && id >= 0;
  if (pp?.type === 'TemplateProcessing') {
    for (const [name, sp] of Object.entries(pp.special_tokens ?? {})) {
      if (!Array.isArray(sp?.ids) || !sp.ids.every(isId)) fail(`the template's special token ${JSON.stringify(name)} has no list of ids`);
    }
    for (const item of [...(Array.isArray(pp.single) ? pp.single : []), ...(Array.isArray(pp.pair) ? pp.pair : [])]) {
      const name = item?.SpecialToken?.id;
      if (name !== undefined && !pp.special_tokens?.[name]) fail(`the template names special token ${JSON.stringify(name)} but does not define it`);
    }
  }
  if (pp?.type === 'BertProcessing' || pp?.type === 'RobertaProcessing') {
    for (const key of ['cls', 'sep']) {
      if (!Array.isArray(pp[key]) || typeof pp[key][0] !== 'string' || !isId(pp[key][1])) fail(`the post-processor's ${key} must be [token, id]`);
    }
  }
  for (const p of pp?.processors || []) checkPostProcessor(p);
}

const DECODERS = ['Sequence', 'ByteLevel', 'WordPiece', 'Metaspace', 'Replace', 'ByteFallback', 'Fuse', 'Strip', 'BPEDecoder'];
function checkDecoder(d) {
  if (d && !DECODERS.includes(d.type)) fail(`decoder "${d.type}" is not supported (supported: ${DECODERS.join(', ')})`);
  for (const inner of d?.decoders || []) checkDecoder(inner);
}

const utf8Decoder = new TextDecoder('utf-8', { fatal: false });

// A decoder chain maps a list of token strings to a list of strings (as tokenizers' decode_chain).
function runDecoder(d, tokens) {
  if (!d) return tokens.map((t, i) => (i ? ` ${t}` : t));
  switch (d.type) {
    case 'Sequence': return (d.decoders || []).reduce((t, inner) => runDecoder(inner, t), tokens);
    case 'ByteLevel': {
      const bytes = [];
      for (const ch of tokens.join('')) {
        const b = CHAR_TO_BYTE.get(ch);
        if (b !== undefined) bytes.push(b);
        else bytes.push(...new TextEncoder().encode(ch));
      }
      return [utf8Decoder.decode(Uint8Array.from(bytes))];
    }
    case 'WordPiece': {
      const prefix = d.prefix ?? '##';
      const out = tokens.map((t, i) => (i && t.startsWith(prefix) ? t.slice(prefix.length) : i ? ` ${t}` : t));
      return d.cleanup === false ? out : out.map(cleanup);
    }
    case 'Metaspace': {
      const replacement = d.replacement ?? '▁';
      const prepend = (d.prepend_scheme ?? (d.add_prefix_space === false ? 'never' : 'always')) !== 'never';
      return tokens.map((t, i) => {
        const s = t.split(replacement).join(' ');
        return i === 0 && prepend && s.startsWith(' ') ? s.slice(1) : s;
      });
    }
    case 'Replace': {
      const from = d.pattern?.String;
      if (from === undefined) fail('a Replace decoder with a regex pattern is not supported');
      return tokens.map((t) => t.split(from).join(d.content));
    }
    case 'ByteFallback': {
      const out = [];
      let bytes = [];
      const flush = () => {
        if (!bytes.length) return;
        const text = new TextDecoder('utf-8', { fatal: true });
        try { out.push(text.decode(Uint8Array.from(bytes))); } catch { append(out, bytes.map(() => '\uFFFD')); }
        bytes = [];
      };
      for (const t of tokens) {
        const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(t);
        if (m) { bytes.push(parseInt(m[1], 16)); continue; }
        flush();
        out.push(t);
      }
      flush();
      return out;
    }
    case 'Fuse': return [tokens.join('')];
    case 'Strip': {
      const { content = ' ', start = 0, stop = 0 } = d;
      return tokens.map((t) => {
        let a = 0, b = t.length;
        for (let k = 0; k < start && t[a] === content; k += 1) a += 1;
        for (let k = 0; k < stop && b > a && t[b - 1] === content; k += 1) b -= 1;
        return t.slice(a, b);
      });
    }
    case 'BPEDecoder': {
      const suffix = d.suffix ?? '</w>';
      return tokens.map((t, i) => t.split(suffix).join(i === tokens.length - 1 ? '' : ' '));
    }
    default: return fail(`decoder "${d.type}" is not supported`);
  }
}

// The WordPiece decoder's clean-up of spaces before punctuation and contractions.
function cleanup(text) {
  return text.replaceAll(' .', '.').replaceAll(' ?', '?').replaceAll(' !', '!').replaceAll(' ,', ',')
    .replaceAll(" ' ", "'").replaceAll(" n't", "n't").replaceAll(" 'm", "'m").replaceAll(' do not', " don't")
    .replaceAll(" 's", "'s").replaceAll(" 've", "'ve").replaceAll(" 're", "'re");
}

/**
 * Builds a tokenizer from a checkpoint's files (as strings, SentencePiece models as bytes):
 * tokenizer.json, or else vocab.json + merges.txt (byte-level BPE), vocab.txt (WordPiece), or
 * SentencePiece models (Marian's source.spm, with target.spm and vocab.json mapping pieces to
 * ids; T5's spiece.model as spmSource alone). Returns null when there are none.
 * For an encoder-decoder with a tokenizer per side, the result tokenizes the source text and its
 * `target` property is the target side's tokenizer (labels, and decoding what the model writes).
 * @param {{ tokenizerJson?: string, vocabJson?: string, mergesTxt?: string, vocabTxt?: string,
 *   spmSource?: Uint8Array | ArrayBuffer, spmTarget?: Uint8Array | ArrayBuffer, targetVocabJson?: string,
 *   tokenizerConfig?: object, modelType?: string }} files
 */
export function loadTokenizer(files) {
  const parse = (text, name) => {
    try { return JSON.parse(text); } catch (error) { throw new Error(`multihead: ${name} is not valid JSON (${error.message})`); }
  };
  const config = files.tokenizerConfig ?? {};
  if (typeof files.tokenizerJson === 'string') return new Tokenizer(parse(files.tokenizerJson, 'tokenizer.json'));
  if (files.spmSource !== undefined && files.spmSource !== null) return sentencePieceTokenizer(files, config, parse);
  if (typeof files.vocabJson === 'string' && typeof files.mergesTxt === 'string') {
    const vocab = parse(files.vocabJson, 'vocab.json');
    const merges = files.mergesTxt.split(/\r?\n/).filter((line, i) => line && !(i === 0 && line.startsWith('#version')));
    // Qwen's split pattern for Qwen's tokenizer class (Qwen2, Qwen2.5 and Qwen3 all use Qwen2Tokenizer);
    // by model type only where tokenizer_config.json names no class.
    const tokenizerClass = typeof config.tokenizer_class === 'string' ? config.tokenizer_class : '';
    const qwen = tokenizerClass ? /^Qwen2Tokenizer/.test(tokenizerClass) : /^qwen/.test(files.modelType ?? '');
    const pattern = qwen ? QWEN2_PATTERN : null;
    // BART's and RoBERTa's tokenizers wrap the text as <s> A </s> (pairs <s> A </s></s> B </s>).
    const roberta = tokenizerClass ? /^(Bart|Roberta)Tokenizer/.test(tokenizerClass) : /^(bart|roberta)$/.test(files.modelType ?? '');
    const name = (key, fallback) => (typeof config[key] === 'string' ? config[key] : config[key]?.content) ?? fallback;
    const cls = name('cls_token', name('bos_token', '<s>')), sep = name('sep_token', name('eos_token', '</s>'));
    return new Tokenizer({
      post_processor: roberta && vocab[cls] !== undefined && vocab[sep] !== undefined
        ? { type: 'RobertaProcessing', cls: [cls, vocab[cls]], sep: [sep, vocab[sep]] } : null,
      model: { type: 'BPE', vocab, merges },
      pre_tokenizer: pattern
        ? { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, use_regex: false }] }
        : { type: 'ByteLevel', add_prefix_space: !!config.add_prefix_space, use_regex: true },
      decoder: { type: 'ByteLevel' },
      added_tokens: addedFromConfig(config, vocab),
    });
  }
  if (typeof files.vocabTxt === 'string') {
    const vocab = {};
    files.vocabTxt.split(/\r?\n/).forEach((line, i) => { if (line && !(line in vocab)) vocab[line] = i; });
    const lowercase = config.do_lower_case ?? true;
    const cls = config.cls_token ?? '[CLS]', sep = config.sep_token ?? '[SEP]';
    if (!(cls in vocab) || !(sep in vocab)) fail(`vocab.txt has no ${cls} or ${sep} token`);
    return new Tokenizer({
      normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: config.tokenize_chinese_chars ?? true,
        strip_accents: config.strip_accents ?? null, lowercase },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      model: { type: 'WordPiece', vocab, unk_token: config.unk_token ?? '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100 },
      post_processor: { type: 'BertProcessing', cls: [cls, vocab[cls]], sep: [sep, vocab[sep]] },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
      added_tokens: addedFromConfig(config, vocab, ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']),
    });
  }
  return null;
}

// Marian's files: source.spm for the source text, target.spm for the target, ids from vocab.json
// (target_vocab.json for the target where separate_vocabs is set), </s> appended.
function sentencePieceTokenizer(files, config, parse) {
  const name = (value) => (typeof value === 'string' ? value : value?.content);
  const vocabOf = (text, file) => {
    if (typeof text !== 'string') return null;
    const vocab = new Map();
    for (const [piece, id] of Object.entries(parse(text, file))) {
      if (!Number.isInteger(id) || id < 0) throw new Error(`multihead: ${file}: ${JSON.stringify(piece)} has id ${JSON.stringify(id)}, not a whole number`);
      vocab.set(piece, id);
    }
    return vocab;
  };
  const sourceVocab = vocabOf(files.vocabJson, 'vocab.json');
  const targetVocab = config.separate_vocabs ? vocabOf(files.targetVocabJson, 'target_vocab.json') ?? sourceVocab : sourceVocab;
  const options = { unkToken: name(config.unk_token), eosToken: name(config.eos_token) };
  const build = (bytes, vocab) => {
    const parts = sentencePieceParts(readSentencePieceModel(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes), { ...options, vocab });
    if (vocab) {
      // The special tokens tokenizer_config.json names (Marian's <pad>, which no .spm piece is), and
      // multilingual models' language codes (>>fr<<), split out of the text as transformers does.
      const added = new Map(parts.added_tokens.map((t) => [t.content, t]));
      for (const t of addedFromConfig(config, Object.fromEntries(vocab))) added.set(t.content, t);
      for (const [piece, id] of vocab) if (/^>>[^<>\s]+<<$/.test(piece) && !added.has(piece)) added.set(piece, { id, content: piece, special: false });
      parts.added_tokens = [...added.values()];
    }
    return new Tokenizer(parts);
  };
  const source = build(files.spmSource, sourceVocab);
  if (files.spmTarget !== undefined && files.spmTarget !== null) source.target = build(files.spmTarget, targetVocab);
  return source;
}

// Special tokens a tokenizer_config.json names (added_tokens_decoder, or bos/eos/unk/… strings).
function addedFromConfig(config, vocab, defaults = []) {
  const out = new Map();
  for (const [id, t] of Object.entries(config.added_tokens_decoder ?? {})) {
    if (typeof t?.content === 'string') out.set(t.content, { ...t, id: Number(id), special: t.special ?? true });
  }
  const named = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token']
    .map((k) => (typeof config[k] === 'string' ? config[k] : config[k]?.content)).concat(defaults);
  for (const content of named) {
    if (typeof content === 'string' && vocab[content] !== undefined && !out.has(content)) {
      out.set(content, { id: vocab[content], content, special: true, lstrip: false, rstrip: false, single_word: false });
    }
  }
  return [...out.values()];
}

export { GPT2_PATTERN };

/**
 * For streaming generation: returns next(id), the text that token `id` adds after the tokens so
 * far (`prompt`, then each id given), so that the pieces joined are the decoded text. Each token
 * decodes a window of the last tokens, not every token so far (which grew with the text); the
 * window moves on once it holds 2 × `context` tokens, to a start whose text is the end of what was
 * given already and not empty: not inside a character (whose cut bytes, or a byte-fallback run around them,
 * would read as U+FFFD), and with decoders that treat the first token apart (SentencePiece's
 * leading space, a Strip) taken into account. A character whose bytes come in several tokens is
 * held back until the token that completes it.
 */
export function streamingDecoder(decode, prompt, context = 8) {
  const ids = Array.from(prompt);
  const settled = (text) => text.replace(/\uFFFD+$/u, '');  // without a trailing incomplete character
  let shown = settled(decode(ids));  // the text given so far
  let from = 0, counted = shown.length;  // the window's start, and how much of its text is given
  return (id) => {
    ids.push(id);
    const text = settled(decode(ids.slice(from)));
    const piece = text.slice(counted);
    counted = Math.max(counted, text.length);
    shown += piece;
    if (ids.length - from >= 2 * context) {
      const start = ids.length - context, window = decode(ids.slice(start));
      // Not to an empty text either: the next token would be the first to decode, and lose its
      // leading space (T5: a window of <unk> alone, then "▁").
      if (window !== '' && !window.includes('\uFFFD') && shown.endsWith(window)) from = start, counted = window.length;
    }
    return piece;
  };
}

// The tokenization models of tokenizer.json: BPE (byte-level, or SentencePiece-style with byte
// fallback), WordPiece and Unigram (unigram.mjs). Each turns pre-tokenized pieces (pretokenize.mjs) into tokens with
// offsets in the original text, written to a TokenList.

import { IntList } from './normalize.mjs';
import { TokenList, WordModel } from './word-model.mjs';
import { Unigram } from './unigram.mjs';

export { TokenList };

const isHigh = (code) => code >= 0xD800 && code <= 0xDBFF;
const isLow = (code) => code >= 0xDC00 && code <= 0xDFFF;
const utf8 = new TextEncoder();

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };

function vocabMap(vocab, what) {
  if (!vocab || typeof vocab !== 'object') fail(`the ${what} model has no vocab`);
  const map = new Map();
  // tokenizer.json's object, or a Map from code that builds the spec (the GGUF reader).
  for (const [token, id] of vocab instanceof Map ? vocab : Object.entries(vocab)) {
    if (!Number.isInteger(id) || id < 0) fail(`the vocab entry ${JSON.stringify(token)} has id ${JSON.stringify(id)}, not a whole number`);
    map.set(token, id);
  }
  return map;
}

export class BPE extends WordModel {
  constructor(spec) {
    super();
    this.vocab = vocabMap(spec.vocab, 'BPE');
    this.ranks = new Map();
    if (!Array.isArray(spec.merges)) fail('the BPE model has no merges list');
    // merge_ranks (multihead's own, not a tokenizer.json field): a rank per merge, where merges may
    // share one; equal ranks apply leftmost first, as SentencePiece's equal scores do.
    const rankOf = mergeRanks(spec);
    spec.merges.forEach((merge, index) => {
      const rank = rankOf(index);
      const pair = Array.isArray(merge) ? merge : typeof merge === 'string' ? splitMerge(merge) : null;
      if (!pair || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') {
        fail(`merge ${index} (${JSON.stringify(merge)}) is not a pair of tokens`);
      }
      const key = `${pair[0]} ${pair[1]}`;
      if (!this.ranks.has(key)) this.ranks.set(key, rank);
    });
    this.unk = spec.unk_token ?? null;
    this.byteFallback = !!spec.byte_fallback;
    this.fuseUnk = !!spec.fuse_unk;
    this.prefix = spec.continuing_subword_prefix ?? '';
    this.suffix = spec.end_of_word_suffix ?? '';
    this.ignoreMerges = !!spec.ignore_merges;
    this.byteTokens = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    this.#compileMerges();
  }

  // Merging works on symbol numbers: every string that takes part in a merge is numbered, and the
  // pairs go into a hash table of (left, right) → (rank, merged symbol). A pair is looked up as
  // "left right" in ranks, so every way of cutting a key at a space is a pair of it.
  #compileMerges() {
    const numbers = new Map(), strings = [];
    const number = (t) => {
      let id = numbers.get(t);
      if (id === undefined) { id = strings.length; numbers.set(t, id); strings.push(t); }
      return id;
    };
    const entries = [];
    for (const [key, rank] of this.ranks) {
      for (let at = key.indexOf(' '); at >= 0; at = key.indexOf(' ', at + 1)) {
        const left = key.slice(0, at), right = key.slice(at + 1);
        if (!left || !right) continue;
        entries.push(number(left), number(right), rank, number(left + this.#joined(right)));
      }
    }
    this.pairs = new PairTable(entries.length / 4);
    for (let k = 0; k < entries.length; k += 4) this.pairs.set(entries[k], entries[k + 1], entries[k + 2], entries[k + 3]);
    // (last code point of a pair's left, first of its right): no merge ever joins two neighbours
    // that are not such a pair, so a word cut there tokenizes as its parts do.
    this.joinable = new PairTable(entries.length / 4);
    for (let k = 0; k < entries.length; k += 4) {
      const left = strings[entries[k]];
      this.joinable.set(lastCodePoint(left), strings[entries[k + 1]].codePointAt(0), 0, 0);
    }
    this.symbolNumbers = numbers;
    this.symbolStrings = strings;
    this.symbolIds = Int32Array.from(strings, (t) => this.vocab.get(t) ?? -1);
    // One-code-unit symbols by their code, for words without prefix or suffix to add.
    this.charSymbols = new Int32Array(65536).fill(-1);
    strings.forEach((t, id) => { if (t.length === 1) this.charSymbols[t.charCodeAt(0)] = id; });
  }

  // The right-hand token as a merge appends it: without its continuing-subword prefix.
  #joined(right) {
    return this.prefix && right.startsWith(this.prefix) ? right.slice(this.prefix.length) : right;
  }

  // The symbol string a word starts with at its code point [p, q) (the prefix on all but the first,
  // the suffix on the last).
  #initial(word, p, q) {
    return (p > 0 ? this.prefix : '') + word.slice(p, q) + (q === word.length ? this.suffix : '');
  }

  // The merged symbols of a word, as a linked list from 0 through next[]: symbol i covers code points
  // [i, end[i]), UTF-16 [at[i], at[end[i]]); symbol[i] is its number (-1: none, no merge knows its
  // string). The pair of lowest rank merges first, the leftmost of equal
  // ranks, as Hugging Face tokenizers does; the pairs wait in a heap keyed by (rank, position) and
  // the symbols form a linked list, so a word of m code points takes O(m log m): a word can be a
  // long stretch of a document that no pre-tokenizer split (Llama 2, Gemma) and no cut applies to.
  // A heap entry whose symbols have changed since it was pushed (their versions) is skipped.
  #merge(word) {
    const length = word.length, { pairs } = this;
    const plain = this.prefix === '' && this.suffix === '';
    const at = new Int32Array(length + 1), symbol = new Int32Array(length);
    let n = 0;
    for (let k = 0; k < length; n += 1) {
      const code = word.charCodeAt(k);
      const width = isHigh(code) && k + 1 < length && isLow(word.charCodeAt(k + 1)) ? 2 : 1;
      at[n] = k;
      k += width;
      symbol[n] = plain && width === 1 ? this.charSymbols[code] : this.symbolNumbers.get(this.#initial(word, at[n], k)) ?? -1;
    }
    at[n] = length;
    const end = new Int32Array(n), next = new Int32Array(n), previous = new Int32Array(n), version = new Int32Array(n);
    for (let i = 0; i < n; i += 1) { end[i] = i + 1; next[i] = i + 1; previous[i] = i - 1; }
    const heap = new PairHeap(n);
    const push = (i) => {
      const j = next[i];
      if (j >= n || symbol[i] < 0 || symbol[j] < 0) return;
      const slot = pairs.find(symbol[i], symbol[j]);
      if (slot >= 0) heap.push(pairs.ranks[slot], i, j, version[i], version[j]);
    };
    for (let i = 0; i + 1 < n; i += 1) push(i);
    while (heap.size > 0) {
      const i = heap.pop(), j = heap.right;
      if (next[i] !== j || version[i] !== heap.leftVersion || version[j] !== heap.rightVersion) continue;
      symbol[i] = pairs.merged[pairs.find(symbol[i], symbol[j])];
      version[i] += 1;
      version[j] += 1;  // j is gone: no entry of it is valid any more
      end[i] = end[j];
      next[i] = next[j];
      if (next[j] < n) previous[next[j]] = i;
      if (previous[i] >= 0) push(previous[i]);
      push(i);
    }
    return { n, at, symbol, end, next };
  }

  // Where a long word can be cut: between neighbours no merge joins. Only without a prefix or suffix
  // (they depend on the place in the word) or ignore_merges (it looks at the whole word).
  cuts(word) {
    if (this.prefix !== '' || this.suffix !== '' || this.ignoreMerges) return null;
    const cuts = new IntList();
    let previous = -1;
    for (let k = 0; k < word.length;) {
      const code = word.charCodeAt(k);
      const cp = isHigh(code) && isLow(word.charCodeAt(k + 1)) ? word.codePointAt(k) : code;
      if (previous >= 0 && this.joinable.find(previous, cp) < 0) cuts.push(k);
      previous = cp;
      k += cp > 0xFFFF ? 2 : 1;
    }
    return cuts;
  }

  // A word's tokens, [fuse, id, token, start, end, …] with UTF-16 offsets in the word.
  word(word) {
    if (this.ignoreMerges && this.vocab.has(word)) return [0, this.vocab.get(word), word, 0, word.length];
    const out = [0];
    const { n, at, symbol, end: ends, next } = this.#merge(word);
    for (let i = 0; i < n; i = next[i]) {
      const start = at[i], end = at[ends[i]];
      // A symbol no merge knows is still its first string.
      const token = symbol[i] >= 0 ? this.symbolStrings[symbol[i]] : this.#initial(word, start, at[i + 1]);
      const id = symbol[i] >= 0 ? this.symbolIds[symbol[i]] : this.vocab.get(token) ?? -1;
      if (id >= 0) { out.push(id, token, start, end); continue; }
      if (this.byteFallback) {
        const pieces = Array.from(utf8.encode(token), (byte) => this.byteTokens[byte]);
        if (pieces.every((p) => this.vocab.has(p))) {
          for (const p of pieces) out.push(this.vocab.get(p), p, start, end);
          continue;
        }
      }
      if (this.unk === null || !this.vocab.has(this.unk)) continue;  // no unknown token: dropped, as tokenizers does
      if (this.fuseUnk && out.length > 1 && out[out.length - 3] === this.unk) { out[out.length - 1] = end; continue; }
      if (this.fuseUnk && out.length === 1) out[0] = 1;  // it may join an unknown token before the word
      out.push(this.vocab.get(this.unk), this.unk, start, end);
    }
    return out;
  }
}

function lastCodePoint(text) {
  const k = text.length - 1;
  return k > 0 && isLow(text.charCodeAt(k)) && isHigh(text.charCodeAt(k - 1)) ? text.codePointAt(k - 1) : text.charCodeAt(k);
}

// An open-addressing hash table from a pair of symbol numbers to the pair's rank and merged symbol.
class PairTable {
  constructor(count) {
    let size = 16;
    while (size < 2 * count) size *= 2;
    this.mask = size - 1;
    this.lefts = new Int32Array(size).fill(-1);
    this.rights = new Int32Array(size);
    this.ranks = new Int32Array(size);
    this.merged = new Int32Array(size);
  }

  #start(left, right) {
    const h = Math.imul(left ^ Math.imul(right, 0x85EBCA6B), 0x9E3779B1);
    return (h ^ (h >>> 15)) & this.mask;
  }

  /** The slot of the pair, or -1. */
  find(left, right) {
    const { lefts, rights, mask } = this;
    for (let at = this.#start(left, right); ; at = (at + 1) & mask) {
      if (lefts[at] === left && rights[at] === right) return at;
      if (lefts[at] === -1) return -1;
    }
  }

  set(left, right, rank, merged) {
    let at = this.#start(left, right);
    while (this.lefts[at] !== -1 && (this.lefts[at] !== left || this.rights[at] !== right)) at = (at + 1) & this.mask;
    this.lefts[at] = left;
    this.rights[at] = right;
    this.ranks[at] = rank;
    this.merged[at] = merged;
  }
}

// A binary min-heap of candidate merges, keyed by rank then left position (rank · 2³¹ + left is
// exact in a double), with the right position and both symbols' versions beside each key.
class PairHeap {
  constructor(capacity) {
    this.size = 0;
    this.right = this.leftVersion = this.rightVersion = 0;
    this.#allocate(Math.max(16, capacity));
  }

  #allocate(capacity) {
    const grow = (old, Type) => { const a = new Type(capacity); if (old) a.set(old.subarray(0, this.size)); return a; };
    this.keys = grow(this.keys, Float64Array);
    this.rights = grow(this.rights, Int32Array);
    this.leftVersions = grow(this.leftVersions, Int32Array);
    this.rightVersions = grow(this.rightVersions, Int32Array);
  }

  // Puts an entry at slot at (a hole being filled).
  #set(at, key, right, leftVersion, rightVersion) {
    this.keys[at] = key;
    this.rights[at] = right;
    this.leftVersions[at] = leftVersion;
    this.rightVersions[at] = rightVersion;
  }

  #move(to, from) {
    this.#set(to, this.keys[from], this.rights[from], this.leftVersions[from], this.rightVersions[from]);
  }

  push(rank, left, right, leftVersion, rightVersion) {
    if (this.size === this.keys.length) this.#allocate(this.keys.length * 2);
    const key = rank * 2147483648 + left;
    // Parents larger than the new entry move down into the hole.
    let at = this.size;
    this.size += 1;
    while (at > 0) {
      const up = (at - 1) >> 1;
      if (this.keys[up] <= key) break;
      this.#move(at, up);
      at = up;
    }
    this.#set(at, key, right, leftVersion, rightVersion);
  }

  // Removes the top entry and returns its left position; its right position and versions are left
  // in right, leftVersion and rightVersion (no object per pop).
  pop() {
    const { keys } = this;
    const left = keys[0] % 2147483648;
    this.right = this.rights[0];
    this.leftVersion = this.leftVersions[0];
    this.rightVersion = this.rightVersions[0];
    this.size -= 1;
    // The last entry sinks from the top: smaller children move up into the hole.
    const last = this.size, key = keys[last];
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= last) break;
      if (child + 1 < last && keys[child + 1] < keys[child]) child += 1;
      if (keys[child] >= key) break;
      this.#move(at, child);
      at = child;
    }
    this.#move(at, last);
    return left;
  }
}

// Each merge's rank: its place in the list, or merge_ranks's. Under 2²¹, so that the heap's key
// rank · 2³¹ + position stays exact in a double.
function mergeRanks({ merges, merge_ranks: ranks }) {
  if (ranks === undefined) return (index) => index;
  if (!Array.isArray(ranks) || ranks.length !== merges.length || !ranks.every((r) => Number.isInteger(r) && r >= 0 && r < 2 ** 21)) {
    fail('merge_ranks must give each merge a whole-number rank under 2²¹');
  }
  return (index) => ranks[index];
}

// "a b" → ["a", "b"]; a merge string splits at its one space (tokens never contain spaces).
function splitMerge(text) {
  const at = text.indexOf(' ');
  return at > 0 ? [text.slice(0, at), text.slice(at + 1)] : null;
}

export class WordPiece extends WordModel {
  constructor(spec) {
    super();
    this.vocab = vocabMap(spec.vocab, 'WordPiece');
    this.unk = spec.unk_token ?? '[UNK]';
    if (!this.vocab.has(this.unk)) fail(`the WordPiece unknown token ${JSON.stringify(this.unk)} is not in its vocab`);
    this.prefix = spec.continuing_subword_prefix ?? '##';
    this.maxChars = spec.max_input_chars_per_word ?? 100;
  }

  // A word's tokens, [id, token, start, end, …] with UTF-16 offsets in the word: the longest
  // vocabulary entry at each point, or the unknown token for the whole word.
  word(word) {
    const whole = [0, this.vocab.get(this.unk), this.unk, 0, word.length];
    if (word.length > this.maxChars && Array.from(word).length > this.maxChars) return whole;
    const out = [0];
    for (let start = 0; start < word.length;) {
      let end = word.length, found = null;
      while (end > start) {
        const piece = (start > 0 ? this.prefix : '') + word.slice(start, end);
        if (this.vocab.has(piece)) { found = piece; break; }
        // One code point back (a surrogate pair is one).
        end -= end - 2 >= start && isLow(word.charCodeAt(end - 1)) && isHigh(word.charCodeAt(end - 2)) ? 2 : 1;
      }
      if (!found) return whole;
      out.push(this.vocab.get(found), found, start, end);
      start = end;
    }
    return out;
  }
}

export function makeModel(spec) {
  if (!spec) fail('it has no model');
  const type = spec.type ?? (spec.merges ? 'BPE' : 'WordPiece');
  if (type === 'BPE') return new BPE(spec);
  if (type === 'WordPiece') return new WordPiece(spec);
  if (type === 'Unigram') return new Unigram(spec);
  return fail(`the ${type} model is not supported (supported: BPE, WordPiece, Unigram)`);
}

// SentencePiece's normalization rules ("precompiled_charsmap": nmt_nfkc and the like), and the two
// ways of applying them:
// - tokenizer.json's Precompiled normalizer, as the tokenizers library applies it: grapheme by
//   grapheme (a grapheme under 6 UTF-8 bytes that starts with a rule's key becomes that rule's
//   text whole; otherwise each character on its own);
// - a SentencePiece model file's normalizer, as sentencepiece's normalizer.cc applies it: the
//   longest rule at each place, then its white-space handling (dummy prefix, extra spaces, ▁).
//
// The blob is [u32 size of the trie in bytes][the trie: a Darts-clone double array of u32 units]
// [the rules' texts, each ending in \0]. The trie's keys are UTF-8: it is walked with the UTF-8
// bytes of the JS string's characters as they come, and every step is checked against the
// array's bounds, so a corrupted blob gives wrong text at worst, never a hang or a RangeError.
import { Writer } from './normalize.mjs';
import { CharTrie } from './trie.mjs';

const fail = (message) => { throw new Error(`multihead: precompiled_charsmap: ${message}`); };

// A double-array unit: whether the node has a value, its label, and the offset to its children.
const hasLeaf = (unit) => ((unit >>> 8) & 1) === 1;
const labelOf = (unit) => (unit & 0x800000FF) >>> 0;
const offsetOf = (unit) => (unit >>> 10) << ((unit & 0x200) >>> 6);

const isHigh = (code) => code >= 0xD800 && code <= 0xDBFF;
const isLow = (code) => code >= 0xDC00 && code <= 0xDFFF;
const widthAt = (text, k) => (isHigh(text.charCodeAt(k)) && isLow(text.charCodeAt(k + 1)) ? 2 : 1);

/** The rules of a charsmap blob, matched against JS strings. */
export class Charsmap {
  /** @param {Uint8Array} blob */
  constructor(blob) {
    if (!(blob instanceof Uint8Array) || blob.length < 4) fail('it is shorter than its 4-byte header');
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    const trieBytes = view.getUint32(0, true);
    if (trieBytes % 4 !== 0 || trieBytes === 0 || trieBytes > blob.length - 4) fail(`its trie of ${trieBytes} bytes does not fit the ${blob.length}-byte blob`);
    this.units = new Uint32Array(trieBytes / 4);
    for (let k = 0; k < this.units.length; k += 1) this.units[k] = view.getUint32(4 + 4 * k, true);
    this.normalized = blob.subarray(4 + trieBytes);
    // The tokenizers library refuses rule texts that are not UTF-8.
    try { new TextDecoder('utf-8', { fatal: true }).decode(this.normalized); } catch { fail('its rules\' texts are not UTF-8'); }
    this.texts = new Map();  // a rule's text by its place in the blob
    this.root = offsetOf(this.units[0]) >>> 0;
    // Whether a rule starts with each ASCII character: most text is ASCII that no rule touches.
    this.asciiStarts = Uint8Array.from({ length: 128 }, (_, c) => this.#step(this.root, c) >= 0);
    this.found = '';
  }

  // The node under `node` by byte b, or -1; the unit reached is left in this.unit.
  #step(node, b) {
    const at = (node ^ b) >>> 0;
    if (at >= this.units.length) return -1;
    const unit = this.units[at];
    if (labelOf(unit) !== b) return -1;
    this.unit = unit;
    return (at ^ offsetOf(unit)) >>> 0;
  }

  #text(at) {
    let text = this.texts.get(at);
    if (text === undefined) {
      let end = at;
      while (end < this.normalized.length && this.normalized[end] !== 0) end += 1;
      text = new TextDecoder().decode(this.normalized.subarray(at, end));
      this.texts.set(at, text);
    }
    return text;
  }

  /**
   * The rule text[p, p + length) starts with (not past `to`): the longest, or the shortest; its
   * length in UTF-16 code units (0: none) and its replacement in this.found. Only keys of whole
   * characters count (a key ending inside a character cannot be a JS string's).
   */
  match(text, p, to, shortest) {
    let node = this.root, length = 0;
    const bytes = [0, 0, 0, 0];
    for (let k = p; k < to;) {
      let cp = text.charCodeAt(k), width = 1;
      if (cp < 128 && k === p && !this.asciiStarts[cp]) return 0;
      if (cp === 0) return length;  // keys end at NUL: both libraries stop there
      if (isHigh(cp) && k + 1 < to && isLow(text.charCodeAt(k + 1))) { cp = text.codePointAt(k); width = 2; }
      const count = utf8Bytes(cp, bytes);
      for (let j = 0; j < count; j += 1) {
        node = this.#step(node, bytes[j]);
        if (node < 0) return length;
      }
      k += width;
      if (hasLeaf(this.unit) && node < this.units.length) {
        length = k - p;
        this.found = this.#text(this.units[node] & 0x7FFFFFFF);
        if (shortest) return length;
      }
    }
    return length;
  }
}

// The UTF-8 bytes of code point cp into out; their count. A lone surrogate is U+FFFD's bytes.
function utf8Bytes(cp, out) {
  if (cp < 0x80) { out[0] = cp; return 1; }
  if (cp < 0x800) { out[0] = 0xC0 | (cp >> 6); out[1] = 0x80 | (cp & 63); return 2; }
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
  if (cp < 0x10000) { out[0] = 0xE0 | (cp >> 12); out[1] = 0x80 | ((cp >> 6) & 63); out[2] = 0x80 | (cp & 63); return 3; }
  out[0] = 0xF0 | (cp >> 18); out[1] = 0x80 | ((cp >> 12) & 63); out[2] = 0x80 | ((cp >> 6) & 63); out[3] = 0x80 | (cp & 63);
  return 4;
}

/** Base64 (standard alphabet, padding optional) to bytes, in browsers and Node alike. */
export function fromBase64(text) {
  let binary;
  try { binary = atob(text); } catch { return fail('it is not base64'); }
  const bytes = new Uint8Array(binary.length);
  for (let k = 0; k < binary.length; k += 1) bytes[k] = binary.charCodeAt(k);
  return bytes;
}

// The unit that holds each UTF-16 index of the text, asked for indices that never go back (a unit
// may hold several code points, or none).
class UnitCursor {
  constructor({ at, n }) {
    this.at = at;
    this.n = n;
    this.i = 0;
  }

  of(k) {
    while (this.i < this.n && this.at[this.i + 1] <= k) this.i += 1;
    return this.i;
  }
}

// Writes text [a, b) of the input: the input's own units where [a, b) is whole units, else each
// code point with the range of the unit it lies in.
function keepText(out, units, cursor, a, b) {
  const i = cursor.of(a);
  if (units.at[i] === a) {
    const j = cursor.of(b);
    if (j === units.n || units.at[j] === b) { out.keepRange(i, j); return; }
  }
  for (let k = a, u = i; k < b;) {
    while (units.at[u + 1] <= k) u += 1;
    const w = widthAt(units.text, k);
    out.unit(units.text.slice(k, k + w), units.s[u], units.e[u]);
    k += w;
  }
  cursor.of(b);
}

function utf8Length(text, a, b) {
  let length = 0;
  for (let k = a; k < b; k += 1) {
    const code = text.charCodeAt(k);
    if (code < 0x80) length += 1;
    else if (code < 0x800) length += 2;
    else if (isHigh(code) && isLow(text.charCodeAt(k + 1))) { length += 4; k += 1; } else length += 3;
  }
  return length;
}

const segmenter = typeof Intl !== 'undefined' && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;

// Code units of characters that are a grapheme of their own whatever surrounds them (Unicode's
// Grapheme_Cluster_Break "Other" or "Control": no mark, joiner, Prepend, jamo or emoji), or at
// least never join one another (Hangul syllables): ASCII, Latin, Greek and Cyrillic letters,
// general punctuation, CJK symbols, kana, CJK ideographs, Hangul syllables, full-width forms.
// Between two of them there is always a boundary (but CR LF), so only stretches with other
// characters need Intl.Segmenter (ICU's rules; the tokenizers library uses unicode-segmentation).
const isSimple = (code) => code < 0x300 || (code >= 0x370 && code <= 0x482) || (code >= 0x48A && code <= 0x52F) ||
  (code >= 0x1E00 && code <= 0x1FFF) || (code >= 0x2010 && code <= 0x2027) || (code >= 0x2030 && code <= 0x205E) ||
  (code >= 0x3000 && code <= 0x3029) || (code >= 0x3030 && code <= 0x303F) || (code >= 0x3041 && code <= 0x3096) ||
  (code >= 0x309B && code <= 0x30FF) || (code >= 0x3400 && code <= 0x4DBF) || (code >= 0x4E00 && code <= 0x9FFF) ||
  (code >= 0xAC00 && code <= 0xD7A3) || (code >= 0xFF01 && code <= 0xFF9D);
const isBreak = (text, k) => isSimple(text.charCodeAt(k - 1)) && isSimple(text.charCodeAt(k)) &&
  !(text.charCodeAt(k - 1) === 13 && text.charCodeAt(k) === 10);

// Intl.Segmenter's iteration slows down with the length of what it segments (quadratic in Node
// 20), so a stretch goes through it a window at a time.
const WINDOW = 256;

// The graphemes of a text, one after another: end(p) is where the one that starts at p ends.
class Graphemes {
  constructor(text) {
    this.text = text;
    this.ends = [];  // the ends of the graphemes of a window, from Intl.Segmenter
    this.next = 0;
    this.stretchEnd = 0;  // the end of the stretch that needs Intl.Segmenter
  }

  get idle() { return this.next === this.ends.length; }

  end(p) {
    if (this.next < this.ends.length) return this.ends[this.next++];
    const { text } = this, n = text.length;
    if (p >= this.stretchEnd) {
      if (p + 1 >= n || isBreak(text, p + 1)) return p + 1;
      let q = p + 2;
      while (q < n && !isBreak(text, q)) q += 1;
      this.stretchEnd = q;
    }
    this.ends = [];
    this.next = 0;
    if (!segmenter) {
      for (let k = p; k < this.stretchEnd; k += widthAt(text, k)) this.ends.push(k + widthAt(text, k));
      return this.ends[this.next++];
    }
    // No rule looks more than one code point past a boundary, so every boundary of a window but its
    // end (where the window cuts the text) is one of the whole text's; the next window starts there.
    for (let size = WINDOW; ; size *= 2) {
      let to = Math.min(this.stretchEnd, p + size);
      if (to < this.stretchEnd && isHigh(text.charCodeAt(to - 1)) && isLow(text.charCodeAt(to))) to -= 1;
      for (const { index, segment } of segmenter.segment(text.slice(p, to))) this.ends.push(p + index + segment.length);
      if (to === this.stretchEnd) break;
      if (this.ends.length > 1) { this.ends.pop(); break; }
      this.ends = [];  // one grapheme longer than the window: a wider one
    }
    return this.ends[this.next++];
  }
}

/** The ends of the graphemes of text, in order, as the normalizer finds them. */
export function graphemeEnds(text) {
  const clusters = new Graphemes(text), ends = [];
  for (let p = 0; p < text.length; p = ends[ends.length - 1]) ends.push(clusters.end(p));
  return ends;
}

/** tokenizer.json's Precompiled normalizer: aligned units → aligned units. */
export function precompiledNormalizer(spec) {
  const charsmap = spec.precompiled_charsmap;
  if (charsmap === null || charsmap === undefined || charsmap === '') return (units) => units;
  if (typeof charsmap !== 'string') fail('it must be a base64 string');
  const rules = new Charsmap(fromBase64(charsmap));
  const { asciiStarts } = rules;
  return (units) => {
    const { text } = units, n = text.length, cursor = new UnitCursor(units), clusters = new Graphemes(text);
    const out = new Writer(units, units.n + 16);
    let kept = 0;  // text before this is written
    const flush = (to) => { if (to > kept) keepText(out, units, cursor, kept, to); };
    const replace = (a, b, replacement) => {
      flush(a);
      const from = units.s[cursor.of(a)];
      out.codePoints(replacement, from, units.e[cursor.of(b - 1)]);
      kept = b;
    };
    for (let a = 0; a < n;) {
      const code = text.charCodeAt(a);
      // Most text: an ASCII character no rule starts with, before another ASCII character.
      if (code < 128 && code !== 13 && !asciiStarts[code] && clusters.idle && (a + 1 === n || text.charCodeAt(a + 1) < 128)) { a += 1; continue; }
      const b = clusters.end(a);
      if (utf8Length(text, a, b) < 6 && rules.match(text, a, b, true) > 0) replace(a, b, rules.found);
      else {
        for (let k = a; k < b;) {
          const w = widthAt(text, k);
          if (rules.match(text, k, k + w, true) > 0) replace(k, k + w, rules.found);
          k += w;
        }
      }
      a = b;
    }
    if (kept === 0) return units;
    flush(text.length);
    return out.done();
  };
}

/**
 * A SentencePiece model file's normalizer, as normalizer.cc runs it: the longest rule at each
 * place (user-defined pieces are left as they are), leading, trailing and repeated spaces
 * dropped (remove_extra_whitespaces), a space before the text (add_dummy_prefix; after it where
 * white space is a suffix), spaces as ▁ (escape_whitespaces).
 * @param {{ charsmap: Uint8Array, addDummyPrefix: boolean, removeExtraWhitespaces: boolean,
 *   escapeWhitespaces: boolean }} spec
 * @param {{ treatWhitespaceAsSuffix?: boolean, userDefined?: string[] }} options
 */
export function sentencePieceNormalizer(spec, { treatWhitespaceAsSuffix = false, userDefined = [] } = {}) {
  const rules = spec.charsmap.length ? new Charsmap(spec.charsmap) : null;
  let verbatim = null;
  if (userDefined.length) {
    verbatim = new CharTrie();
    for (const piece of userDefined) verbatim.set(piece, 0);
  }
  const space = spec.escapeWhitespaces ? '▁' : ' ';
  const collapse = spec.removeExtraWhitespaces;
  return (units) => {
    const { text } = units, n = text.length, cursor = new UnitCursor(units);
    // The rule at p: its length in code units, and its text (null: the input as it is).
    let replacement = null;
    const prefix = (p) => {
      replacement = null;
      if (verbatim) { const length = verbatim.longestAt(text, p); if (length) return length; }
      if (rules) { const length = rules.match(text, p, n, false); if (length) { replacement = rules.found; return length; } }
      return widthAt(text, p);
    };
    let p = 0;
    if (collapse) {
      for (let length; p < n; p += length) {
        length = prefix(p);
        if ((replacement ?? text.slice(p, p + length)) !== ' ') break;
      }
    }
    const out = new Writer(units, units.n + 16);
    if (p >= n) return out.done();
    const start = units.s[cursor.of(p)];
    if (spec.addDummyPrefix && !treatWhitespaceAsSuffix) out.unit(space, start, start);
    let previousSpace = collapse;
    while (p < n) {
      const length = prefix(p);
      let piece = replacement ?? text.slice(p, p + length);
      if (previousSpace) piece = piece.replace(/^ +/, '');
      if (piece) {
        if (replacement === null && !piece.includes(' ')) keepText(out, units, cursor, p, p + length);
        else {
          const from = units.s[cursor.of(p)];
          out.codePoints(spec.escapeWhitespaces ? piece.replaceAll(' ', '▁') : piece, from, units.e[cursor.of(p + length - 1)]);
        }
        previousSpace = piece.endsWith(' ');
      }
      if (!collapse) previousSpace = false;
      p += length;
    }
    if (collapse) while (out.endsWith(space)) out.pop();
    if (spec.addDummyPrefix && treatWhitespaceAsSuffix) {
      const end = units.e[units.n - 1];
      out.unit(space, end, end);
    }
    return out.done();
  };
}

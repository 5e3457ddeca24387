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
import { Aligned } from './normalize.mjs';
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

// Writes normalized units. Input units are kept in runs (one copy per run); a rule's text becomes
// new units, one per code point, each with the range of everything the rule replaced.
class UnitWriter {
  constructor(units) {
    this.units = units;
    const capacity = units.text.length + 16;
    this.n = 0;
    this.length = 0;
    this.at = new Int32Array(capacity + 1);
    this.s = new Int32Array(capacity);
    this.e = new Int32Array(capacity);
    this.codes = new Uint16Array(capacity);
  }

  #reserve(more) {
    if (this.length + more <= this.codes.length && this.n + more <= this.s.length) return;
    const size = 2 * Math.max(this.codes.length, this.s.length) + more;
    const grow = (old, Type, length) => { const a = new Type(length); a.set(old); return a; };
    this.at = grow(this.at, Int32Array, size + 1);
    this.s = grow(this.s, Int32Array, size);
    this.e = grow(this.e, Int32Array, size);
    this.codes = grow(this.codes, Uint16Array, size);
  }

  /** Keeps input units [i, j). */
  keep(i, j) {
    const { units } = this, { text } = units;
    for (let u = i; u < j; u += 1) {
      const from = units.at[u], to = units.at[u + 1];
      this.#reserve(to - from + 1);
      this.at[this.n] = this.length;
      this.s[this.n] = units.s[u];
      this.e[this.n] = units.e[u];
      this.n += 1;
      for (let k = from; k < to; k += 1) this.codes[this.length++] = text.charCodeAt(k);
    }
  }

  /** One code point (as a string) from the original range [s, e). */
  put(c, s, e) {
    this.#reserve(c.length + 1);
    this.at[this.n] = this.length;
    this.s[this.n] = s;
    this.e[this.n] = e;
    this.n += 1;
    for (let k = 0; k < c.length; k += 1) this.codes[this.length++] = c.charCodeAt(k);
  }

  /** Each code point of text, from the original range [s, e). */
  putAll(text, s, e) {
    for (let k = 0; k < text.length;) {
      const w = widthAt(text, k);
      this.put(text.slice(k, k + w), s, e);
      k += w;
    }
  }

  /** Whether the last unit is exactly c. */
  endsWith(c) {
    if (!this.n || this.length - this.at[this.n - 1] !== c.length) return false;
    for (let k = 0; k < c.length; k += 1) if (this.codes[this.at[this.n - 1] + k] !== c.charCodeAt(k)) return false;
    return true;
  }

  pop() {
    this.n -= 1;
    this.length = this.at[this.n];
  }

  done() {
    this.at[this.n] = this.length;
    let text = '';
    for (let k = 0; k < this.length; k += 8192) text += String.fromCharCode.apply(null, this.codes.subarray(k, Math.min(k + 8192, this.length)));
    return new Aligned(text, this.n, this.at, this.s, this.e);
  }
}

// The unit of each UTF-16 index of the text (a unit may hold several code points, or none).
function unitIndex({ text, n, at }) {
  const of = new Int32Array(text.length + 1);
  for (let i = 0; i < n; i += 1) for (let k = at[i]; k < at[i + 1]; k += 1) of[k] = i;
  of[text.length] = n;
  return of;
}

// Writes text [a, b) of the input: the input's own units where [a, b) is whole units, else each
// code point with the range of the unit it lies in.
function keepText(out, units, unitOf, a, b) {
  const i = unitOf[a], j = unitOf[b];
  if (units.at[i] === a && (j === units.n || units.at[j] === b)) { out.keep(i, j); return; }
  for (let k = a; k < b;) {
    const w = widthAt(units.text, k), u = unitOf[k];
    out.put(units.text.slice(k, k + w), units.s[u], units.e[u]);
    k += w;
  }
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

const graphemes = typeof Intl !== 'undefined' && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;
const isAscii = (code) => code < 0x80;

// Calls fn(a, b) for each grapheme [a, b) of text. Two ASCII characters other than CR LF always
// have a grapheme boundary between them, so only stretches with other characters go through
// Intl.Segmenter (ICU's rules; the tokenizers library uses the unicode-segmentation crate).
function forEachGrapheme(text, fn) {
  const n = text.length;
  for (let p = 0; p < n;) {
    const code = text.charCodeAt(p);
    if (code === 13 && text.charCodeAt(p + 1) === 10) { fn(p, p + 2); p += 2; continue; }
    if (isAscii(code) && (p + 1 === n || isAscii(text.charCodeAt(p + 1)))) { fn(p, p + 1); p += 1; continue; }
    let q = p + 1;
    while (q < n && !(isAscii(text.charCodeAt(q - 1)) && isAscii(text.charCodeAt(q)) && !(text.charCodeAt(q - 1) === 13 && text.charCodeAt(q) === 10))) q += 1;
    if (!graphemes) {
      for (let k = p; k < q; k += widthAt(text, k)) fn(k, k + widthAt(text, k));
    } else {
      for (const { index, segment } of graphemes.segment(text.slice(p, q))) fn(p + index, p + index + segment.length);
    }
    p = q;
  }
}

/** tokenizer.json's Precompiled normalizer: aligned units → aligned units. */
export function precompiledNormalizer(spec) {
  const charsmap = spec.precompiled_charsmap;
  if (charsmap === null || charsmap === undefined || charsmap === '') return (units) => units;
  if (typeof charsmap !== 'string') fail('it must be a base64 string');
  const rules = new Charsmap(fromBase64(charsmap));
  return (units) => {
    const { text } = units, unitOf = unitIndex(units);
    const out = new UnitWriter(units);
    let kept = 0;  // text before this is written
    const flush = (to) => { if (to > kept) keepText(out, units, unitOf, kept, to); };
    const replace = (a, b, replacement) => {
      flush(a);
      out.putAll(replacement, units.s[unitOf[a]], units.e[unitOf[b - 1]]);
      kept = b;
    };
    forEachGrapheme(text, (a, b) => {
      if (b - a === 1 && text.charCodeAt(a) < 128 && !rules.asciiStarts[text.charCodeAt(a)]) return;
      if (utf8Length(text, a, b) < 6 && rules.match(text, a, b, true) > 0) { replace(a, b, rules.found); return; }
      for (let k = a; k < b;) {
        const w = widthAt(text, k);
        if (rules.match(text, k, k + w, true) > 0) replace(k, k + w, rules.found);
        k += w;
      }
    });
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
    const { text } = units, n = text.length, unitOf = unitIndex(units);
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
    const out = new UnitWriter(units);
    if (p >= n) return out.done();
    const start = units.s[unitOf[p]];
    if (spec.addDummyPrefix && !treatWhitespaceAsSuffix) out.put(space, start, start);
    let previousSpace = collapse;
    while (p < n) {
      const length = prefix(p);
      let piece = replacement ?? text.slice(p, p + length);
      if (previousSpace) piece = piece.replace(/^ +/, '');
      if (piece) {
        const s = units.s[unitOf[p]], e = units.e[unitOf[p + length - 1]];
        if (replacement === null && !piece.includes(' ')) keepText(out, units, unitOf, p, p + length);
        else out.putAll(spec.escapeWhitespaces ? piece.replaceAll(' ', '▁') : piece, s, e);
        previousSpace = piece.endsWith(' ');
      }
      if (!collapse) previousSpace = false;
      p += length;
    }
    if (collapse) while (out.endsWith(space)) out.pop();
    if (spec.addDummyPrefix && treatWhitespaceAsSuffix) {
      const end = units.e[units.n - 1];
      out.put(space, end, end);
    }
    return out.done();
  };
}

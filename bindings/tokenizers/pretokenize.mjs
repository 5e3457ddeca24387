// Pre-tokenizers of tokenizer.json: they cut normalized text into the pieces the model tokenizes
// one at a time.
//
// Pieces are ranges [spans[2k], spans[2k + 1]) of one string, with the original offsets of each
// UTF-16 index in typed arrays s and e: no object per character or per piece. A pre-tokenizer that
// rewrites characters (ByteLevel, Metaspace) writes a new string for all the pieces at once.
import { IntList, Matcher, fromCodes, toJsRegex } from './normalize.mjs';

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };

// GPT-2's split pattern, which ByteLevel uses when use_regex is true.
export const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// ---- byte-level alphabet: every byte as a printable character (GPT-2's bytes_to_unicode) ----
const BYTE_TO_CHAR = [];
const CHAR_TO_BYTE = new Map();
{
  const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  let extra = 0;
  for (let b = 0; b < 256; b += 1) {
    const c = String.fromCodePoint(printable(b) ? b : 256 + extra++);
    BYTE_TO_CHAR[b] = c;
    CHAR_TO_BYTE.set(c, b);
  }
}
export { BYTE_TO_CHAR, CHAR_TO_BYTE };
const BYTE_CODE = Uint16Array.from(BYTE_TO_CHAR, (c) => c.charCodeAt(0));

const isHigh = (code) => code >= 0xD800 && code <= 0xDBFF;
const isLow = (code) => code >= 0xDC00 && code <= 0xDFFF;
// The length (1 or 2) of the code point at index k of text.
const widthAt = (text, k) => (isHigh(text.charCodeAt(k)) && isLow(text.charCodeAt(k + 1)) ? 2 : 1);

export class Pieces {
  constructor(text, s, e, spans) {
    this.text = text;
    this.s = s;  // the original range [s[k], e[k]) of text[k]
    this.e = e;
    this.spans = spans;  // an IntList: start, end, start, end, …
  }
}

const whole = (text) => {
  const spans = new IntList(2);
  if (text.length) spans.push2(0, text.length);
  return spans;
};

/** The normalized text (aligned units, normalize.mjs) as one piece. */
export function toPieces(units) {
  const { text, n, at } = units;
  let simple = n === text.length;
  for (let i = 0; simple && i < n; i += 1) simple = at[i] === i;
  if (simple) return new Pieces(text, units.s, units.e, whole(text));
  // Units of several code units (or none): each UTF-16 index takes its unit's range.
  const s = new Int32Array(text.length), e = new Int32Array(text.length);
  for (let i = 0; i < n; i += 1) {
    const from = units.s[i], to = units.e[i];
    for (let k = at[i]; k < at[i + 1]; k += 1) { s[k] = from; e[k] = to; }
  }
  return new Pieces(text, s, e, whole(text));
}

/** Text that no normalizer changed (from offset base of the original) as one piece. */
export function textPieces(text, base = 0) {
  const length = text.length;
  const s = new Int32Array(length), e = new Int32Array(length);
  for (let k = 0; k < length; k += 1) {
    // Both halves of a surrogate pair have the pair's range.
    if (isHigh(text.charCodeAt(k)) && isLow(text.charCodeAt(k + 1))) {
      s[k] = s[k + 1] = base + k;
      e[k] = e[k + 1] = base + k + 2;
      k += 1;
    } else {
      s[k] = base + k;
      e[k] = base + k + 1;
    }
  }
  return new Pieces(text, s, e, whole(text));
}

/** The text of each piece. */
export function pieceTexts({ text, spans }) {
  const out = [];
  for (let k = 0; k < spans.length; k += 2) out.push(text.slice(spans.data[k], spans.data[k + 1]));
  return out;
}

// A piece's text, without a copy when it is the whole string.
const textOf = (text, a, b) => (a === 0 && b === text.length ? text : text.slice(a, b));

// ---- splitting ----

const BEHAVIORS = {
  isolated: 'isolated', removed: 'removed', mergedwithprevious: 'previous', merged_with_previous: 'previous',
  mergedwithnext: 'next', merged_with_next: 'next', contiguous: 'contiguous',
};
function behaviorOf(name) {
  const behavior = typeof name === 'string' ? BEHAVIORS[name.toLowerCase()] : undefined;
  return behavior ?? fail(`split behavior "${name}" is not supported`);
}

// Cuts the piece [a, b) at the matches (an IntList: sorted, disjoint, inside it) as a tokenizers
// SplitDelimiterBehavior says, and pushes the ranges of the parts onto out (an IntList).
function cut(out, a, b, matches, behavior, invert) {
  const first = out.length, found = matches.data;
  let previous = null;  // whether the last part was a match; null before the first
  let pendingStart = -1, pendingEnd = -1;  // merged_with_next: matches waiting for what follows
  for (let at = a, m = 0; at < b;) {
    // The next part: the gap before the next match, or the match, or the rest of the piece.
    let y, match;
    if (m < matches.length && found[m] === at) { y = found[m + 1]; match = true; m += 2; }
    else { y = m < matches.length ? found[m] : b; match = false; }
    if (invert) match = !match;
    if (behavior === 'isolated') out.push2(at, y);
    else if (behavior === 'removed') { if (!match) out.push2(at, y); }
    else if (behavior === 'next') {
      if (match) { if (pendingStart < 0) pendingStart = at; pendingEnd = y; }
      else { out.push2(pendingStart < 0 ? at : pendingStart, y); pendingStart = -1; }
    } else if (match && out.length > first && previous === (behavior === 'contiguous')) {
      out.data[out.length - 1] = y;  // merged with the part before: a non-match (previous), a match (contiguous)
    } else out.push2(at, y);
    previous = match;
    at = y;
  }
  if (pendingStart >= 0) out.push2(pendingStart, pendingEnd);
}

// A pre-tokenizer that only cuts: find(text, a, b, matches) pushes the matches inside [a, b).
function splitter(find, behavior, invert = false) {
  const matches = new IntList();
  return ({ text, s, e, spans }) => {
    const out = new IntList(text.length >> 1);  // about 2 per word of English text
    for (let k = 0; k < spans.length; k += 2) {
      const a = spans.data[k], b = spans.data[k + 1];
      matches.length = 0;
      find(text, a, b, matches);
      cut(out, a, b, matches, behavior, invert);
    }
    return new Pieces(text, s, e, out);
  };
}

// Matches of a regex inside a piece (the regex sees the piece alone: no lookaround past its ends).
const regexFinder = (matcher) => (text, a, b, matches) => matcher.spans(textOf(text, a, b), matches, a);

// Matches of single code points of a class (charClass below).
const charFinder = (inClass) => (text, a, b, matches) => {
  for (let k = a; k < b;) {
    const width = widthAt(text, k);
    if (inClass(width === 2 ? text.codePointAt(k) : text.charCodeAt(k))) matches.push2(k, k + width);
    k += width;
  }
};

// Character classes of single code points, ASCII looked up.
const charClass = (regex) => {
  const ascii = Uint8Array.from({ length: 128 }, (_, code) => regex.test(String.fromCharCode(code)));
  return (cp) => (cp < 128 ? ascii[cp] === 1 : regex.test(String.fromCodePoint(cp)));
};
const isSpace = charClass(/^\s$/u);
const isDigit = charClass(/^\p{N}$/u);
const isPunctuation = charClass(/^\p{P}$/u);
const isBertPunctuation = (cp) => (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
  (cp >= 123 && cp <= 126) || isPunctuation(cp);

// ---- rewriting ----

// Writes pieces of a new string, keeping the original range of each UTF-16 index.
class PieceWriter {
  constructor(capacity) {
    this.codes = new Uint16Array(capacity);
    this.s = new Int32Array(capacity);
    this.e = new Int32Array(capacity);
    this.length = 0;
    this.spans = new IntList(capacity >> 1);
  }

  reserve(more) {
    if (this.length + more <= this.codes.length) return;
    const capacity = Math.max(2 * this.codes.length, this.length + more);
    const grow = (old, Type) => { const a = new Type(capacity); a.set(old); return a; };
    this.codes = grow(this.codes, Uint16Array);
    this.s = grow(this.s, Int32Array);
    this.e = grow(this.e, Int32Array);
  }

  // One UTF-16 code unit (call reserve first).
  put(code, s, e) {
    this.codes[this.length] = code;
    this.s[this.length] = s;
    this.e[this.length] = e;
    this.length += 1;
  }

  done() {
    return new Pieces(fromCodes(this.codes, this.length), this.s, this.e, this.spans);
  }
}

// Writes text[x, y) as byte-level characters, one per UTF-8 byte (a lone surrogate is U+FFFD's three
// bytes, as TextEncoder writes it), as one piece; each byte keeps the range of its character.
// x = a - 1 stands for a space added before the piece that starts at a, with an empty range there.
function writeBytes(out, text, x, y, s, e, a) {
  out.reserve(3 * (y - x) + 1);
  const start = out.length;
  if (x < a) { out.put(BYTE_CODE[32], s[a], s[a]); x = a; }
  for (let k = x; k < y;) {
    const code = text.charCodeAt(k), from = s[k], to = e[k];
    if (code < 0x80) {
      out.put(BYTE_CODE[code], from, to);
      k += 1;
    } else if (code < 0x800) {
      out.put(BYTE_CODE[0xC0 | (code >> 6)], from, to);
      out.put(BYTE_CODE[0x80 | (code & 63)], from, to);
      k += 1;
    } else if (isHigh(code) && k + 1 < y && isLow(text.charCodeAt(k + 1))) {
      const cp = ((code - 0xD800) << 10) + (text.charCodeAt(k + 1) - 0xDC00) + 0x10000;
      out.put(BYTE_CODE[0xF0 | (cp >> 18)], from, to);
      out.put(BYTE_CODE[0x80 | ((cp >> 12) & 63)], from, to);
      out.put(BYTE_CODE[0x80 | ((cp >> 6) & 63)], from, to);
      out.put(BYTE_CODE[0x80 | (cp & 63)], from, to);
      k += 2;
    } else {
      const c = isHigh(code) || isLow(code) ? 0xFFFD : code;
      out.put(BYTE_CODE[0xE0 | (c >> 12)], from, to);
      out.put(BYTE_CODE[0x80 | ((c >> 6) & 63)], from, to);
      out.put(BYTE_CODE[0x80 | (c & 63)], from, to);
      k += 1;
    }
  }
  out.spans.push2(start, out.length);
}

function byteLevel(spec) {
  const matcher = spec.use_regex === false ? null : new Matcher(toJsRegex(GPT2_PATTERN));
  const matches = new IntList();
  return ({ text, s, e, spans }) => {
    const out = new PieceWriter(text.length + (text.length >> 2) + 16);
    for (let k = 0; k < spans.length; k += 2) {
      const a = spans.data[k], b = spans.data[k + 1];
      if (a >= b) continue;
      // add_prefix_space: a space before the piece unless it starts with one (index a - 1).
      const shift = spec.add_prefix_space && text[a] !== ' ' ? a - 1 : a;
      if (!matcher) { writeBytes(out, text, shift, b, s, e, a); continue; }
      // The regex's pieces, and the text between them, each a piece of its own (Isolated).
      matches.length = 0;
      matcher.spans(shift < a ? ` ${text.slice(a, b)}` : textOf(text, a, b), matches, shift);
      let at = shift;
      for (let m = 0; m < matches.length; m += 2) {
        const x = matches.data[m], y = matches.data[m + 1];
        if (x > at) writeBytes(out, text, at, x, s, e, a);
        writeBytes(out, text, x, y, s, e, a);
        at = y;
      }
      if (at < b) writeBytes(out, text, at, b, s, e, a);
    }
    return out.done();
  };
}

function metaspace(spec) {
  const replacement = spec.replacement ?? '▁';
  // tokenizers reads the replacement as one char; a piece's units must stay single code points.
  if (typeof replacement !== 'string' || Array.from(replacement).length !== 1) fail('the Metaspace replacement must be one character');
  const scheme = spec.prepend_scheme ?? (spec.add_prefix_space === false ? 'never' : 'always');
  const code = replacement.codePointAt(0), width = replacement.length;
  const matches = new IntList();  // where the replacement stands: each starts a piece, merged with what follows
  return ({ text, s, e, spans }, first) => {
    const out = new PieceWriter(text.length + 16);
    const put = (from, to) => {
      matches.push2(out.length, out.length + width);
      for (let j = 0; j < width; j += 1) out.put(replacement.charCodeAt(j), from, to);
    };
    for (let k = 0; k < spans.length; k += 2) {
      const a = spans.data[k], b = spans.data[k + 1];
      if (a >= b) continue;
      const start = out.length;
      matches.length = 0;
      out.reserve(2 * (b - a) + 2);
      const startsReplaced = text[a] === ' ' || text.startsWith(replacement, a);
      if ((scheme === 'always' || (scheme === 'first' && first && k === 0)) && !startsReplaced) put(s[a], s[a]);
      for (let i = a; i < b;) {
        const w = widthAt(text, i), cp = w === 2 ? text.codePointAt(i) : text.charCodeAt(i);
        if (cp === 32) put(s[i], e[i]);
        else {
          if (cp === code) matches.push2(out.length, out.length + w);
          for (let j = i; j < i + w; j += 1) out.put(text.charCodeAt(j), s[j], e[j]);
        }
        i += w;
      }
      if (spec.split === false) out.spans.push2(start, out.length);
      else cut(out.spans, start, out.length, matches, 'next', false);
    }
    return out.done();
  };
}

// Runs of word characters, and runs of other non-space characters; the spaces between go.
function whitespace() {
  const words = splitter(regexFinder(new Matcher('[\\p{L}\\p{N}\\p{M}\\p{Pc}]+|[^\\p{L}\\p{N}\\p{M}\\p{Pc}\\s]+')), 'isolated', true);
  const allSpace = (text, a, b) => {
    for (let k = a; k < b; k += widthAt(text, k)) if (!isSpace(text.codePointAt(k))) return false;
    return true;
  };
  return (pieces) => {
    const out = words(pieces), { text, spans } = out, kept = new IntList(spans.length);
    for (let k = 0; k < spans.length; k += 2) {
      if (!allSpace(text, spans.data[k], spans.data[k + 1])) kept.push2(spans.data[k], spans.data[k + 1]);
    }
    return new Pieces(text, out.s, out.e, kept);
  };
}

// BERT's: split at white space (dropped), then at punctuation (each mark a piece), in one pass.
const ASCII_BERT = Uint8Array.from({ length: 128 }, (_, cp) => (isSpace(cp) ? 1 : isBertPunctuation(cp) ? 2 : 0));
function bertPreTokenizer({ text, s, e, spans }) {
  const out = new IntList(text.length >> 1);
  for (let k = 0; k < spans.length; k += 2) {
    let word = -1;  // start of the word being read
    const b = spans.data[k + 1];
    for (let i = spans.data[k]; i < b;) {
      const code = text.charCodeAt(i);
      let kind, width = 1;
      if (code < 128) kind = ASCII_BERT[code];
      else {
        width = widthAt(text, i);
        const cp = width === 2 ? text.codePointAt(i) : code;
        kind = isSpace(cp) ? 1 : isBertPunctuation(cp) ? 2 : 0;
      }
      if (kind === 0) { if (word < 0) word = i; } else {
        if (word >= 0) out.push2(word, i);
        if (kind === 2) out.push2(i, i + width);
        word = -1;
      }
      i += width;
    }
    if (word >= 0) out.push2(word, b);
  }
  return new Pieces(text, s, e, out);
}

/**
 * Builds a pre-tokenizer: (pieces, first) → pieces, where first says whether the text starts the
 * input (Metaspace's prepend_scheme "first" applies to the first piece then).
 */
export function makePreTokenizer(spec) {
  if (!spec) return (pieces) => pieces;
  switch (spec.type) {
    case 'Sequence': {
      const steps = (spec.pretokenizers || []).map(makePreTokenizer);
      return (pieces, first) => steps.reduce((p, step) => step(p, first), pieces);
    }
    case 'ByteLevel': return byteLevel(spec);
    case 'Split': {
      const pattern = spec.pattern?.Regex !== undefined ? toJsRegex(spec.pattern.Regex)
        : String(spec.pattern?.String ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return splitter(regexFinder(new Matcher(pattern)), behaviorOf(spec.behavior || 'Isolated'), !!spec.invert);
    }
    case 'Whitespace': return whitespace();
    case 'WhitespaceSplit': return splitter(charFinder(isSpace), 'removed');
    case 'BertPreTokenizer': return bertPreTokenizer;
    case 'Punctuation': return splitter(charFinder(isBertPunctuation), behaviorOf(spec.behavior || 'Isolated'));
    case 'Digits': return splitter(spec.individual_digits ? charFinder(isDigit) : regexFinder(new Matcher('\\p{N}+')), 'isolated');
    case 'Metaspace': return metaspace(spec);
    default: return fail(`pre-tokenizer "${spec.type}" is not supported (supported: Sequence, ByteLevel, Split, ` +
      'Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, Metaspace)');
  }
}

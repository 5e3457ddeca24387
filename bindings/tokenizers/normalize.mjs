// Normalizers of Hugging Face tokenizer.json files, over text that remembers where each character
// came from, so every token can report its offsets in the original string.
//
// An aligned text is a string cut into units, kept in typed arrays rather than an object per
// character: unit i is text.slice(at[i], at[i + 1]) (one code point at first; "" when removed,
// several code points when expanded) and came from [s[i], e[i]) of the original JS string.

import { precompiledNormalizer } from './precompiled.mjs';

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };

export class Aligned {
  constructor(text, n, at, s, e) {
    this.text = text;
    this.n = n;  // units; the arrays may be longer
    this.at = at;
    this.s = s;
    this.e = e;
  }

  unit(i) { return this.text.slice(this.at[i], this.at[i + 1]); }
}

const isHigh = (code) => code >= 0xD800 && code <= 0xDBFF;
const isLow = (code) => code >= 0xDC00 && code <= 0xDFFF;

/** Splits text (from offset `base` of the original) into aligned units, one per code point. */
export function alignedText(text, base = 0) {
  const length = text.length;
  const at = new Int32Array(length + 1), s = new Int32Array(length), e = new Int32Array(length);
  let n = 0;
  for (let k = 0; k < length; n += 1) {
    // A surrogate pair is one code point; a lone surrogate is one of its own (as for…of reads them).
    const width = isHigh(text.charCodeAt(k)) && k + 1 < length && isLow(text.charCodeAt(k + 1)) ? 2 : 1;
    at[n] = k;
    s[n] = base + k;
    e[n] = base + k + width;
    k += width;
  }
  at[n] = length;
  return new Aligned(text, n, at, s, e);
}

/** A string from UTF-16 code units (in chunks: a call takes a bounded number of arguments). */
export function fromCodes(codes, length) {
  if (length <= 8192) return String.fromCharCode.apply(null, codes.subarray(0, length));
  let text = '';
  for (let k = 0; k < length; k += 8192) text += String.fromCharCode.apply(null, codes.subarray(k, Math.min(k + 8192, length)));
  return text;
}

// Builds an aligned text unit by unit, its text as UTF-16 code units in a typed array (a join of
// many small strings is far slower).
export class Writer {
  constructor(source, capacity) {
    this.source = source;
    this.n = 0;
    this.length = 0;
    this.at = new Int32Array(capacity + 1);
    this.s = new Int32Array(capacity);
    this.e = new Int32Array(capacity);
    this.codes = new Uint16Array(source.text.length + 16);
  }

  #reserve(units, codes) {
    if (this.n + units > this.s.length) {
      const capacity = Math.max(2 * this.s.length, this.n + units + 16);
      const grow = (old, size) => { const a = new Int32Array(size); a.set(old); return a; };
      this.at = grow(this.at, capacity + 1);
      this.s = grow(this.s, capacity);
      this.e = grow(this.e, capacity);
    }
    if (this.length + codes > this.codes.length) {
      const codes2 = new Uint16Array(Math.max(2 * this.codes.length, this.length + codes + 16));
      codes2.set(this.codes);
      this.codes = codes2;
    }
  }

  // Keeps source unit i as it is.
  keep(i) { this.keepRange(i, i + 1); }

  // Keeps source units [i, j).
  keepRange(i, j) {
    if (i >= j) return;
    const { source } = this, { text } = source;
    const from = source.at[i], to = source.at[j];
    this.#reserve(j - i, to - from);
    const { at, s, e, codes } = this;
    const shift = this.length - from;
    for (let k = i, n = this.n; k < j; k += 1, n += 1) {
      at[n] = source.at[k] + shift;
      s[n] = source.s[k];
      e[n] = source.e[k];
    }
    for (let k = from, m = this.length; k < to; k += 1, m += 1) codes[m] = text.charCodeAt(k);
    this.n += j - i;
    this.length += to - from;
  }

  // A new unit: text c from the original range [s, e).
  unit(c, s, e) {
    this.#reserve(1, c.length);
    this.at[this.n] = this.length;
    this.s[this.n] = s;
    this.e[this.n] = e;
    this.n += 1;
    for (let k = 0; k < c.length; k += 1) this.codes[this.length + k] = c.charCodeAt(k);
    this.length += c.length;
  }

  // A string that came from the original range [s, e): one unit per code point, all with that range.
  codePoints(c, s, e) {
    for (const cp of c) this.unit(cp, s, e);
  }

  /** Whether the last unit is exactly c. */
  endsWith(c) {
    const from = this.at[this.n - 1];
    if (!this.n || this.length - from !== c.length) return false;
    for (let k = 0; k < c.length; k += 1) if (this.codes[from + k] !== c.charCodeAt(k)) return false;
    return true;
  }

  /** Drops the last unit. */
  pop() {
    this.n -= 1;
    this.length = this.at[this.n];
  }

  done() {
    this.at[this.n] = this.length;
    return new Aligned(fromCodes(this.codes, this.length), this.n, this.at, this.s, this.e);
  }
}

// Each unit's text mapped on its own by fn (lowercasing, decomposition, accent removal, BERT's
// cleaning): a unit keeps its offsets, and null drops it. fn of a one-character ASCII unit is
// looked up in `ascii`, not called. A unit for which padded(c) holds (BERT's Chinese characters)
// gets a space on each side, at its start and its end.
function mapUnits(units, fn, ascii = asciiTable(fn), padded = null) {
  const { text, n, at } = units;
  const out = new Writer(units, n);
  for (let i = 0; i < n; i += 1) {
    const p = at[i];
    let c, mapped;
    if (at[i + 1] - p === 1 && text.charCodeAt(p) < 128) {
      c = text[p];
      mapped = ascii[text.charCodeAt(p)];
    } else {
      c = text.slice(p, at[i + 1]);
      mapped = fn(c);
      if (mapped !== null && padded?.(c)) {
        out.unit(' ', units.s[i], units.s[i]);
        out.unit(mapped, units.s[i], units.e[i]);
        out.unit(' ', units.e[i], units.e[i]);
        continue;
      }
    }
    if (mapped === null) continue;
    if (mapped === c) out.keep(i);
    else out.unit(mapped, units.s[i], units.e[i]);
  }
  return out.done();
}

const asciiTables = new Map();
function asciiTable(fn) {
  let table = asciiTables.get(fn);
  if (!table) asciiTables.set(fn, table = Array.from({ length: 128 }, (_, code) => fn(String.fromCharCode(code))));
  return table;
}

const lowercase = (c) => c.toLowerCase();
const stripAccent = (c) => c.normalize('NFD').replace(/\p{Mn}/gu, '');
const NORMAL_FORMS = Object.fromEntries(['NFC', 'NFD', 'NFKC', 'NFKD'].map((form) => [form, (c) => c.normalize(form)]));

// Whether unit i starts with a combining mark (none is below U+0300).
function startsWithMark(units, i) {
  const p = units.at[i];
  if (p === units.at[i + 1] || units.text.charCodeAt(p) < 0x300) return false;
  return /^\p{M}/u.test(units.unit(i));
}

// Composition (NFC/NFKC) can join a character with the marks after it: normalise each cluster of
// a base character and its combining marks together, and give the result the cluster's range.
function composeClusters(units, form) {
  const compose = NORMAL_FORMS[form];
  const out = new Writer(units, units.n);
  for (let i = 0; i < units.n;) {
    let j = i + 1;
    while (j < units.n && startsWithMark(units, j)) j += 1;
    if (j === i + 1) {
      const c = units.unit(i), composed = c.length === 1 && c.charCodeAt(0) < 128 ? c : compose(c);
      if (composed === c) out.keep(i);
      else out.unit(composed, units.s[i], units.e[i]);
    } else {
      out.codePoints(compose(units.text.slice(units.at[i], units.at[j])), units.s[i], units.e[j - 1]);
    }
    i = j;
  }
  return out.done();
}

const isControl = (c) => /^[\p{Cc}\p{Cf}]$/u.test(c) && c !== '\t' && c !== '\n' && c !== '\r';
const isWhitespace = (c) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || /^\p{Zs}$/u.test(c);
// The CJK ideograph blocks BERT puts spaces around (as the original BERT code lists them).
function isChinese(c) {
  const cp = c.codePointAt(0);
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
    (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
    (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}
const isSpaceUnit = (c) => /^\s$/u.test(c);

/** A growable list of 32-bit integers (pushing to a typed array is far cheaper than to an Array). */
export class IntList {
  constructor(capacity = 16) {
    this.data = new Int32Array(Math.max(4, capacity));
    this.length = 0;
  }

  push(a) {
    if (this.length === this.data.length) this.#grow();
    this.data[this.length] = a;
    this.length += 1;
  }

  push2(a, b) {
    if (this.length + 2 > this.data.length) this.#grow();
    this.data[this.length] = a;
    this.data[this.length + 1] = b;
    this.length += 2;
  }

  #grow() {
    const data = new Int32Array(2 * this.data.length);
    data.set(this.data);
    this.data = data;
  }
}

/**
 * Finds every non-empty match of a pattern, the matches matchAll finds with the 'gu' flags
 * (after an empty match the search steps one code point on). A match is tried where the last one
 * ended with a sticky test(), which builds no match object; exec() finds the next one past a gap.
 * A literal pattern without surrogates is found with indexOf.
 */
export class Matcher {
  constructor(source, literal = null) {
    this.literal = literal !== null && literal !== '' && !/[\uD800-\uDFFF]/.test(literal) ? literal : null;
    this.global = new RegExp(source, 'gu');
    this.sticky = new RegExp(source, 'uy');
  }

  /** Pushes [start + base, end + base] of each match in text onto out (an IntList). */
  spans(text, out, base = 0) {
    const { literal, global, sticky } = this;
    if (literal !== null) {
      for (let k = text.indexOf(literal); k >= 0; k = text.indexOf(literal, k + literal.length)) out.push2(base + k, base + k + literal.length);
      return out;
    }
    for (let p = 0; p <= text.length;) {
      let start = p, end;
      sticky.lastIndex = p;
      if (sticky.test(text)) end = sticky.lastIndex;
      else {
        global.lastIndex = p;
        const m = global.exec(text);
        if (m === null) break;
        start = m.index;
        end = global.lastIndex;
      }
      if (end > start) { out.push2(base + start, base + end); p = end; continue; }
      if (start >= text.length) break;
      p = start + (isHigh(text.charCodeAt(start)) && isLow(text.charCodeAt(start + 1)) ? 2 : 1);
    }
    return out;
  }
}

// Replace with a string pattern or a regex, across unit boundaries: the replacement takes the
// range of what it replaced.
function replaceUnits(units, matcher, content) {
  const { text, n, at } = units;
  const matches = matcher.spans(text, new IntList()), found = matches.data;
  if (!matches.length) return units;
  if (oneForOne(units, found, matches.length, content)) {
    // Each match is one unit, and becomes one code point as long: only the text changes.
    const codes = new Uint16Array(text.length);
    for (let k = 0; k < text.length; k += 1) codes[k] = text.charCodeAt(k);
    for (let k = 0; k < matches.length; k += 2) for (let j = 0; j < content.length; j += 1) codes[found[k] + j] = content.charCodeAt(j);
    return new Aligned(fromCodes(codes, text.length), n, at, units.s, units.e);
  }
  // The unit of each UTF-16 index of text (empty units have none).
  const unitAt = new Int32Array(text.length);
  for (let i = 0; i < n; i += 1) for (let k = at[i]; k < at[i + 1]; k += 1) unitAt[k] = i;
  const out = new Writer(units, n);
  const points = Array.from(content);
  let last = 0;  // next unit not yet copied
  for (let k = 0; k < matches.length; k += 2) {
    const first = unitAt[found[k]], end = unitAt[found[k + 1] - 1] + 1;
    out.keepRange(last, first);
    for (const c of points) out.unit(c, units.s[first], units.e[end - 1]);
    last = end;
  }
  out.keepRange(last, n);
  return out.done();
}

// Whether every match is exactly one unit, as long as content, and content one code point.
function oneForOne({ n, at }, found, count, content) {
  if (Array.from(content).length !== 1) return false;
  for (let k = 0, i = 0; k < count; k += 2) {
    while (i < n && at[i] < found[k]) i += 1;
    if (i === n || at[i] !== found[k] || at[i + 1] !== found[k + 1] || found[k + 1] - found[k] !== content.length) return false;
  }
  return true;
}

// BERT's normalizer on one unit, its steps in its order: clean_text drops controls (null) and
// makes white space a space, Chinese characters get spaces around, then accents, then case.
function bertUnit(c, { clean, chinese, strip, lower }) {
  if (clean) {
    if (c === '\0' || c === '\uFFFD' || isControl(c)) return null;
    if (isWhitespace(c)) c = ' ';
  }
  if (strip) c = stripAccent(c);
  if (lower) c = c.toLowerCase();
  return c;
}

function bertNormalizer(spec) {
  const lower = spec.lowercase ?? true;
  const options = { clean: spec.clean_text ?? true, chinese: spec.handle_chinese_chars ?? true, strip: spec.strip_accents ?? lower, lower };
  const fn = (c) => bertUnit(c, options);
  const ascii = Array.from({ length: 128 }, (_, code) => fn(String.fromCharCode(code)));
  const padded = options.chinese ? isChinese : null;
  return (units) => mapUnits(units, fn, ascii, padded);
}

/** Builds a normalizer from its tokenizer.json description: a function aligned → aligned. */
export function makeNormalizer(spec) {
  if (!spec) return (units) => units;
  switch (spec.type) {
    case 'Sequence': {
      const steps = (spec.normalizers || []).map(makeNormalizer);
      return (units) => steps.reduce((u, step) => step(u), units);
    }
    case 'NFC': case 'NFKC': return (units) => composeClusters(units, spec.type);
    case 'NFD': case 'NFKD': { const fn = NORMAL_FORMS[spec.type]; return (units) => mapUnits(units, fn); }
    case 'Lowercase': return (units) => mapUnits(units, lowercase);
    case 'StripAccents': return (units) => mapUnits(units, stripAccent);
    case 'Strip': return (units) => {
      let a = 0, b = units.n;
      if (spec.strip_left ?? spec.left) while (a < b && isSpaceUnit(units.unit(a))) a += 1;
      if (spec.strip_right ?? spec.right) while (b > a && isSpaceUnit(units.unit(b - 1))) b -= 1;
      const out = new Writer(units, b - a);
      out.keepRange(a, b);
      return out.done();
    };
    case 'Replace': {
      const { pattern, content } = spec;
      if (typeof content !== 'string') fail('a Replace normalizer needs a content string');
      let matcher;  // made at the first use, where a bad pattern has always been reported
      return (units) => replaceUnits(units, matcher ??= pattern.String !== undefined
        ? new Matcher(pattern.String.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), pattern.String) : new Matcher(toJsRegex(pattern.Regex)), content);
    }
    case 'Prepend': {
      if (typeof spec.prepend !== 'string') fail('a Prepend normalizer needs a prepend string');
      return (units) => {
        if (!units.n) return units;
        const out = new Writer(units, units.n + 1);
        out.unit(spec.prepend, units.s[0], units.s[0]);
        out.keepRange(0, units.n);
        return out.done();
      };
    }
    case 'BertNormalizer': return bertNormalizer(spec);
    case 'Precompiled': return precompiledNormalizer(spec);
    default: return fail(`normalizer "${spec.type}" is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, ` +
      'Lowercase, StripAccents, Strip, Replace, Prepend, BertNormalizer, Precompiled)');
  }
}

// ---- regular expressions of tokenizer.json (Oniguruma syntax) in JavaScript ----

// Oniguruma's \s (Unicode White_Space) differs from JavaScript's: it has U+0085, not U+FEFF.
const SPACE_CLASS = '\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/**
 * Rewrites an Oniguruma pattern from tokenizer.json for JavaScript's 'u' flag: \s and \S with
 * Oniguruma's meaning, and case-insensitive groups (?i:…), which JavaScript (Node 20) lacks,
 * spelled out letter by letter ([sS]).
 */
export function toJsRegex(pattern) {
  let out = '';
  let inClass = false;
  const caseless = [];  // for each open group: whether it is a (?i:…) group
  let depthCaseless = 0;
  for (let i = 0; i < pattern.length; i += 1) {
    const ch = pattern[i];
    if (ch === '\\') {
      const next = pattern[i + 1];
      if (next === 's') out += inClass ? SPACE_CLASS : `[${SPACE_CLASS}]`;
      else if (next === 'S' && !inClass) out += `[^${SPACE_CLASS}]`;
      else if (next === 'p' || next === 'P' || next === 'x' || next === 'u') {
        // \p{…}, \x.., \u…: copy the escape whole.
        const m = pattern.slice(i).match(/^\\[pP]\{[^}]*\}|^\\x[0-9a-fA-F]{2}|^\\x\{[0-9a-fA-F]+\}|^\\u[0-9a-fA-F]{4}/);
        if (m) {
          out += m[0].startsWith('\\x{') ? `\\u{${m[0].slice(3, -1)}}` : m[0];
          i += m[0].length - 1;
          continue;
        }
        out += ch + next;
      } else out += ch + next;
      i += 1;
      continue;
    }
    if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
      continue;
    }
    if (ch === '[') { inClass = true; out += ch; continue; }
    if (ch === '(') {
      if (pattern.startsWith('(?i:', i)) {
        caseless.push(true);
        depthCaseless += 1;
        out += '(?:';
        i += 3;
        continue;
      }
      caseless.push(false);
      out += ch;
      continue;
    }
    if (ch === ')') {
      if (caseless.pop()) depthCaseless -= 1;
      out += ch;
      continue;
    }
    if (depthCaseless > 0 && /\p{L}/u.test(ch) && ch.toLowerCase() !== ch.toUpperCase()) {
      out += `[${ch.toLowerCase()}${ch.toUpperCase()}]`;
      continue;
    }
    out += ch;
  }
  try {
    new RegExp(out, 'gu');
  } catch (error) {
    fail(`the split pattern ${JSON.stringify(pattern)} cannot be used here (${error.message})`);
  }
  return out;
}

// Pre-tokenizers of tokenizer.json: they cut normalized text (aligned units, normalize.mjs) into
// the pieces the model tokenizes one at a time.
import { toJsRegex, textOf } from './normalize.mjs';

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
const utf8 = new TextEncoder();

/** Units → one unit per UTF-8 byte, written as byte-level characters. */
export function toByteLevel(units) {
  const out = [];
  for (const u of units) {
    const code = u.c.length === 1 ? u.c.charCodeAt(0) : -1;
    if (code >= 0 && code < 0x80) { out.push({ c: BYTE_TO_CHAR[code], s: u.s, e: u.e }); continue; }  // ASCII: its own byte
    for (const b of utf8.encode(u.c)) out.push({ c: BYTE_TO_CHAR[b], s: u.s, e: u.e });
  }
  return out;
}

/** Units whose text is exactly one code point each (normalizers may have expanded or emptied some). */
export function codePointUnits(units) {
  const out = [];
  for (const u of units) {
    const one = u.c.length === 1 || (u.c.length === 2 && u.c.codePointAt(0) > 0xffff);
    if (one) { out.push(u); continue; }  // already one code point: the unit as it is
    for (const c of u.c) out.push({ c, s: u.s, e: u.e });
  }
  return out;
}

// Cuts a piece (units) at the spans [a, b) (unit indices, sorted, disjoint) as a tokenizers
// SplitDelimiterBehavior says.
function splitAt(units, spans, behavior, invert) {
  let segments = [];
  let at = 0;
  for (const [a, b] of spans) {
    if (a > at) segments.push({ units: units.slice(at, a), match: false });
    segments.push({ units: units.slice(a, b), match: true });
    at = b;
  }
  if (at < units.length) segments.push({ units: units.slice(at), match: false });
  if (invert) segments = segments.map((s) => ({ ...s, match: !s.match }));
  const out = [];
  switch (behavior.toLowerCase()) {
    case 'isolated': return segments.map((s) => s.units);
    case 'removed': return segments.filter((s) => !s.match).map((s) => s.units);
    case 'mergedwithprevious': case 'merged_with_previous':
      for (const s of segments) {
        if (s.match && out.length && !segments[segments.indexOf(s) - 1]?.match) out[out.length - 1] = out[out.length - 1].concat(s.units);
        else out.push(s.units);
      }
      return out;
    case 'mergedwithnext': case 'merged_with_next': {
      let pending = [];
      for (const s of segments) {
        if (s.match) { pending = pending.concat(s.units); continue; }
        out.push(pending.concat(s.units));
        pending = [];
      }
      if (pending.length) out.push(pending);
      return out;
    }
    case 'contiguous':
      for (let i = 0; i < segments.length; i += 1) {
        if (segments[i].match && i > 0 && segments[i - 1].match) out[out.length - 1] = out[out.length - 1].concat(segments[i].units);
        else out.push(segments[i].units);
      }
      return out;
    default: return fail(`split behavior "${behavior}" is not supported`);
  }
}

// Spans (unit indices) of every non-empty match of a JS regex in the piece's text.
function regexSpans(units, regex) {
  const text = textOf(units);
  const unitAt = new Int32Array(text.length + 1);
  let k = 0;
  units.forEach((u, i) => { for (let j = 0; j < u.c.length; j += 1) unitAt[k++] = i; });
  unitAt[k] = units.length;
  const spans = [];
  for (const m of text.matchAll(regex)) {
    if (m[0].length) spans.push([unitAt[m.index], unitAt[m.index + m[0].length - 1] + 1]);
  }
  return spans;
}

const spansWhere = (units, test) => {
  const spans = [];
  units.forEach((u, i) => { if (test(u.c)) spans.push([i, i + 1]); });
  return spans;
};
const isBertPunctuation = (c) => {
  const cp = c.codePointAt(0);
  return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126) || /^\p{P}$/u.test(c);
};
const isSpace = (c) => /^\s$/u.test(c);

/**
 * Builds a pre-tokenizer: (pieces, first) → pieces, where pieces is an array of unit arrays and
 * first says whether the text starts the input (Metaspace's prepend_scheme "first").
 */
export function makePreTokenizer(spec) {
  if (!spec) return (pieces) => pieces;
  const each = (fn) => (pieces, first) => pieces.flatMap((p, i) => fn(p, first && i === 0));
  switch (spec.type) {
    case 'Sequence': {
      const steps = (spec.pretokenizers || []).map(makePreTokenizer);
      return (pieces, first) => steps.reduce((p, step) => step(p, first), pieces);
    }
    case 'ByteLevel': {
      const regex = new RegExp(toJsRegex(GPT2_PATTERN), 'gu');
      return each((units) => {
        let piece = units;
        if (spec.add_prefix_space && piece.length && piece[0].c !== ' ') piece = [{ c: ' ', s: piece[0].s, e: piece[0].s }, ...piece];
        const parts = spec.use_regex === false ? [piece] : splitAt(piece, regexSpans(piece, regex), 'isolated', false);
        return parts.map(toByteLevel);
      });
    }
    case 'Split': {
      const pattern = spec.pattern?.Regex !== undefined ? toJsRegex(spec.pattern.Regex)
        : String(spec.pattern?.String ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const regex = new RegExp(pattern, 'gu');
      return each((units) => splitAt(units, regexSpans(units, regex), spec.behavior || 'Isolated', !!spec.invert));
    }
    case 'Whitespace': {
      const regex = /[\p{L}\p{N}\p{M}\p{Pc}]+|[^\p{L}\p{N}\p{M}\p{Pc}\s]+/gu;
      return each((units) => splitAt(units, regexSpans(units, regex), 'isolated', true).filter((p) => !p.every((u) => isSpace(u.c))));
    }
    case 'WhitespaceSplit': return each((units) => splitAt(units, spansWhere(units, isSpace), 'removed', false));
    case 'BertPreTokenizer': return each((units) => splitAt(units, spansWhere(units, isSpace), 'removed', false)
      .flatMap((p) => splitAt(p, spansWhere(p, isBertPunctuation), 'isolated', false)));
    case 'Punctuation': return each((units) => splitAt(units, spansWhere(units, isBertPunctuation), spec.behavior || 'Isolated', false));
    case 'Digits': return each((units) => splitAt(units, spec.individual_digits
      ? spansWhere(units, (c) => /^\p{N}$/u.test(c)) : regexSpans(units, /\p{N}+/gu), 'isolated', false));
    case 'Metaspace': {
      const replacement = spec.replacement ?? '▁';
      const scheme = spec.prepend_scheme ?? (spec.add_prefix_space === false ? 'never' : 'always');
      return each((units, first) => {
        let piece = units.map((u) => (u.c === ' ' ? { ...u, c: replacement } : u));
        if ((scheme === 'always' || (scheme === 'first' && first)) && piece.length && piece[0].c !== replacement) {
          piece = [{ c: replacement, s: piece[0].s, e: piece[0].s }, ...piece];
        }
        return spec.split === false ? [piece] : splitAt(piece, spansWhere(piece, (c) => c === replacement), 'MergedWithNext', false);
      });
    }
    default: return fail(`pre-tokenizer "${spec.type}" is not supported (supported: Sequence, ByteLevel, Split, ` +
      'Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, Metaspace)');
  }
}

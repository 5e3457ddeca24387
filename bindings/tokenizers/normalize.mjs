// Normalizers of Hugging Face tokenizer.json files, over text that remembers where each character
// came from, so every token can report its offsets in the original string.
//
// An aligned text is an array of units { c, s, e }: c is one code point (or what it became: "" when
// removed, several code points when expanded), [s, e) its range in the original JS string.

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };

/** Splits text (from offset `base` of the original) into aligned units, one per code point. */
export function alignedText(text, base = 0) {
  const units = [];
  let at = base;
  for (const c of text) {
    units.push({ c, s: at, e: at + c.length });
    at += c.length;
  }
  return units;
}

/** The plain string of an aligned text. */
export const textOf = (units) => units.map((u) => u.c).join('');

// Each unit's text mapped on its own (lowercasing, decomposition, accent removal, replacement of
// single characters): offsets stay those of the unit.
const mapUnits = (units, fn) => units.map((u) => ({ ...u, c: fn(u.c) }));

// Composition (NFC/NFKC) can join a character with the marks after it: normalise each cluster of
// a base character and its combining marks together, and give the result the cluster's range.
function composeClusters(units, form) {
  const out = [];
  for (let i = 0; i < units.length;) {
    let j = i + 1;
    while (j < units.length && /^\p{M}/u.test(units[j].c)) j += 1;
    const cluster = units.slice(i, j);
    const composed = cluster.map((u) => u.c).join('').normalize(form);
    if (j === i + 1) out.push({ ...units[i], c: composed });
    else for (const unit of alignedSplit(composed, cluster[0].s, cluster[cluster.length - 1].e)) out.push(unit);
    i = j;
  }
  return out;
}

// A string that came from the original range [s, e): one unit per code point, all with that range.
function alignedSplit(text, s, e) {
  return Array.from(text, (c) => ({ c, s, e }));
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

const stripAccents = (units) => mapUnits(units, (c) => c.normalize('NFD').replace(/\p{Mn}/gu, ''));

// Replace with a string pattern or a regex, across unit boundaries: the replacement takes the
// range of what it replaced.
function replaceUnits(units, pattern, content) {
  const text = textOf(units);
  const regex = pattern.String !== undefined
    ? new RegExp(pattern.String.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gu')
    : new RegExp(toJsRegex(pattern.Regex), 'gu');
  // Map each UTF-16 index of text to its unit.
  const unitAt = [];
  units.forEach((u, i) => { for (let k = 0; k < u.c.length; k += 1) unitAt.push(i); });
  const out = [];
  let last = 0;  // next unit not yet copied
  for (const m of text.matchAll(regex)) {
    if (m[0].length === 0) continue;
    const first = unitAt[m.index], end = unitAt[m.index + m[0].length - 1] + 1;
    for (let i = last; i < first; i += 1) out.push(units[i]);
    for (const unit of alignedSplit(content, units[first].s, units[end - 1].e)) out.push(unit);
    last = end;
  }
  for (let i = last; i < units.length; i += 1) out.push(units[i]);
  return out;
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
    case 'NFD': case 'NFKD': return (units) => mapUnits(units, (c) => c.normalize(spec.type));
    case 'Lowercase': return (units) => mapUnits(units, (c) => c.toLowerCase());
    case 'StripAccents': return stripAccents;
    case 'Strip': return (units) => {
      let a = 0, b = units.length;
      if (spec.strip_left ?? spec.left) while (a < b && /^\s$/u.test(units[a].c)) a += 1;
      if (spec.strip_right ?? spec.right) while (b > a && /^\s$/u.test(units[b - 1].c)) b -= 1;
      return units.slice(a, b);
    };
    case 'Replace': return (units) => replaceUnits(units, spec.pattern, spec.content);
    case 'Prepend': return (units) => (units.length ? [{ c: spec.prepend, s: units[0].s, e: units[0].s }, ...units] : units);
    case 'BertNormalizer': {
      const lowercase = spec.lowercase ?? true;
      const strip = spec.strip_accents ?? lowercase;  // null: follow lowercase, as BERT does
      return (units) => {
        let out = units;
        if (spec.clean_text ?? true) {
          out = out.filter((u) => u.c !== '\0' && u.c !== '\uFFFD' && !isControl(u.c))
            .map((u) => (isWhitespace(u.c) ? { ...u, c: ' ' } : u));
        }
        if (spec.handle_chinese_chars ?? true) {
          out = out.flatMap((u) => (isChinese(u.c) ? [{ c: ' ', s: u.s, e: u.s }, u, { c: ' ', s: u.e, e: u.e }] : [u]));
        }
        if (strip) out = stripAccents(out);
        if (lowercase) out = mapUnits(out, (c) => c.toLowerCase());
        return out;
      };
    }
    default: return fail(`normalizer "${spec.type}" is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, ` +
      'Lowercase, StripAccents, Strip, Replace, Prepend, BertNormalizer)');
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

// The tokenization models of tokenizer.json: BPE (byte-level, or SentencePiece-style with byte
// fallback) and WordPiece. Each turns one pre-tokenized piece (aligned units, one code point or
// byte character each) into tokens { id, token, s, e } with offsets in the original text.

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };

function vocabMap(vocab, what) {
  if (!vocab || typeof vocab !== 'object') fail(`the ${what} model has no vocab`);
  const map = new Map();
  for (const [token, id] of Object.entries(vocab)) {
    if (!Number.isInteger(id) || id < 0) fail(`the vocab entry ${JSON.stringify(token)} has id ${JSON.stringify(id)}, not a whole number`);
    map.set(token, id);
  }
  return map;
}

export class BPE {
  constructor(spec) {
    this.vocab = vocabMap(spec.vocab, 'BPE');
    this.ranks = new Map();
    if (!Array.isArray(spec.merges)) fail('the BPE model has no merges list');
    spec.merges.forEach((merge, rank) => {
      const pair = Array.isArray(merge) ? merge : typeof merge === 'string' ? splitMerge(merge) : null;
      if (!pair || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') {
        fail(`merge ${rank} (${JSON.stringify(merge)}) is not a pair of tokens`);
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
    this.cache = new Map();
  }

  // The merged symbols of a word, as [token, firstUnit, endUnit] (cached per word).
  #merge(chars) {
    const key = chars.join('\u0000');
    const hit = this.cache.get(key);
    if (hit) return hit;
    let symbols = chars.map((c, i) => [(i > 0 ? this.prefix : '') + c + (i === chars.length - 1 ? this.suffix : ''), i, i + 1]);
    while (symbols.length > 1) {
      let best = -1, bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i += 1) {
        const rank = this.ranks.get(`${symbols[i][0]} ${symbols[i + 1][0]}`);
        if (rank !== undefined && rank < bestRank) { bestRank = rank; best = i; }
      }
      if (best < 0) break;
      const [a, b] = [symbols[best], symbols[best + 1]];
      const joined = a[0] + (this.prefix && b[0].startsWith(this.prefix) ? b[0].slice(this.prefix.length) : b[0]);
      symbols.splice(best, 2, [joined, a[1], b[2]]);
    }
    if (this.cache.size > 50000) this.cache.clear();
    this.cache.set(key, symbols);
    return symbols;
  }

  tokenize(units) {
    if (!units.length) return [];
    const word = units.map((u) => u.c).join('');
    if (this.ignoreMerges && this.vocab.has(word)) return [{ id: this.vocab.get(word), token: word, s: units[0].s, e: units[units.length - 1].e }];
    const out = [];
    for (const [token, a, b] of this.#merge(units.map((u) => u.c))) {
      const s = units[a].s, e = units[b - 1].e;
      const id = this.vocab.get(token);
      if (id !== undefined) { out.push({ id, token, s, e }); continue; }
      if (this.byteFallback) {
        const bytes = new TextEncoder().encode(token);
        const pieces = Array.from(bytes, (byte) => `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`);
        if (pieces.every((p) => this.vocab.has(p))) {
          for (const p of pieces) out.push({ id: this.vocab.get(p), token: p, s, e });
          continue;
        }
      }
      if (this.unk === null || !this.vocab.has(this.unk)) continue;  // no unknown token: dropped, as tokenizers does
      const last = out[out.length - 1];
      if (this.fuseUnk && last && last.token === this.unk) last.e = e;
      else out.push({ id: this.vocab.get(this.unk), token: this.unk, s, e });
    }
    return out;
  }
}

// "a b" → ["a", "b"]; a merge string splits at its one space (tokens never contain spaces).
function splitMerge(text) {
  const at = text.indexOf(' ');
  return at > 0 ? [text.slice(0, at), text.slice(at + 1)] : null;
}

export class WordPiece {
  constructor(spec) {
    this.vocab = vocabMap(spec.vocab, 'WordPiece');
    this.unk = spec.unk_token ?? '[UNK]';
    if (!this.vocab.has(this.unk)) fail(`the WordPiece unknown token ${JSON.stringify(this.unk)} is not in its vocab`);
    this.prefix = spec.continuing_subword_prefix ?? '##';
    this.maxChars = spec.max_input_chars_per_word ?? 100;
  }

  tokenize(units) {
    if (!units.length) return [];
    const whole = { id: this.vocab.get(this.unk), token: this.unk, s: units[0].s, e: units[units.length - 1].e };
    if (units.length > this.maxChars) return [whole];
    const out = [];
    for (let start = 0; start < units.length;) {
      let end = units.length, found = null;
      while (end > start) {
        const piece = (start > 0 ? this.prefix : '') + units.slice(start, end).map((u) => u.c).join('');
        if (this.vocab.has(piece)) { found = piece; break; }
        end -= 1;
      }
      if (!found) return [whole];
      out.push({ id: this.vocab.get(found), token: found, s: units[start].s, e: units[end - 1].e });
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
  return fail(`the ${type} model is not supported (supported: BPE, WordPiece)`);
}

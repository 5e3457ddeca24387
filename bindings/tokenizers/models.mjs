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

  // The merged symbols of a word, as [token, firstUnit, endUnit] (cached per word). The pair of
  // lowest rank merges first, the leftmost of equal ranks, as Hugging Face tokenizers does; the
  // pairs wait in a heap keyed by (rank, position) and the symbols form a linked list, so a word
  // of m units takes O(m log m): a SentencePiece-style BPE with no pre-tokenizer (Llama 2,
  // Gemma) sees a whole pasted document as one word. A heap entry whose symbols have changed
  // since it was pushed (their versions) is skipped.
  #merge(chars) {
    // Words are cached (text repeats them), not a whole document read as one word.
    const key = chars.length <= 256 ? chars.join('\u0000') : null;
    const hit = key === null ? undefined : this.cache.get(key);
    if (hit) return hit;
    const n = chars.length, { prefix, suffix, ranks } = this;
    const tokens = chars.map((c, i) => (i > 0 ? prefix : '') + c + (i === n - 1 ? suffix : ''));
    const end = new Int32Array(n), next = new Int32Array(n), previous = new Int32Array(n), version = new Int32Array(n);
    for (let i = 0; i < n; i += 1) { end[i] = i + 1; next[i] = i + 1; previous[i] = i - 1; }
    const heap = new PairHeap(n);
    const push = (i) => {
      const j = next[i];
      if (j >= n) return;
      const rank = ranks.get(`${tokens[i]} ${tokens[j]}`);
      if (rank !== undefined) heap.push(rank, i, j, version[i], version[j]);
    };
    for (let i = 0; i + 1 < n; i += 1) push(i);
    while (heap.size > 0) {
      const { left: i, right: j, leftVersion, rightVersion } = heap.pop();
      if (next[i] !== j || version[i] !== leftVersion || version[j] !== rightVersion) continue;
      const b = tokens[j];
      tokens[i] += prefix && b.startsWith(prefix) ? b.slice(prefix.length) : b;
      version[i] += 1;
      version[j] += 1;  // j is gone: no entry of it is valid any more
      end[i] = end[j];
      next[i] = next[j];
      if (next[j] < n) previous[next[j]] = i;
      if (previous[i] >= 0) push(previous[i]);
      push(i);
    }
    const symbols = [];
    for (let i = 0; i < n; i = next[i]) symbols.push([tokens[i], i, end[i]]);
    if (key === null) return symbols;
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

// A binary min-heap of candidate merges, keyed by rank then left position (rank · 2³¹ + left is
// exact in a double), with the right position and both symbols' versions beside each key.
class PairHeap {
  constructor(capacity) {
    this.size = 0;
    this.#allocate(Math.max(16, capacity));
  }

  #allocate(capacity) {
    const grow = (old, Type) => { const a = new Type(capacity); if (old) a.set(old.subarray(0, this.size)); return a; };
    this.keys = grow(this.keys, Float64Array);
    this.rights = grow(this.rights, Int32Array);
    this.leftVersions = grow(this.leftVersions, Int32Array);
    this.rightVersions = grow(this.rightVersions, Int32Array);
  }

  #swap(a, b) {
    const { keys, rights, leftVersions, rightVersions } = this;
    let t = keys[a]; keys[a] = keys[b]; keys[b] = t;
    t = rights[a]; rights[a] = rights[b]; rights[b] = t;
    t = leftVersions[a]; leftVersions[a] = leftVersions[b]; leftVersions[b] = t;
    t = rightVersions[a]; rightVersions[a] = rightVersions[b]; rightVersions[b] = t;
  }

  push(rank, left, right, leftVersion, rightVersion) {
    if (this.size === this.keys.length) this.#allocate(this.keys.length * 2);
    let at = this.size;
    this.size += 1;
    this.keys[at] = rank * 2147483648 + left;
    this.rights[at] = right;
    this.leftVersions[at] = leftVersion;
    this.rightVersions[at] = rightVersion;
    while (at > 0) {
      const up = (at - 1) >> 1;
      if (this.keys[up] <= this.keys[at]) break;
      this.#swap(up, at);
      at = up;
    }
  }

  pop() {
    const top = { left: this.keys[0] % 2147483648, right: this.rights[0], leftVersion: this.leftVersions[0], rightVersion: this.rightVersions[0] };
    this.size -= 1;
    this.#swap(0, this.size);
    for (let at = 0; ;) {
      const l = 2 * at + 1, r = l + 1;
      let min = at;
      if (l < this.size && this.keys[l] < this.keys[min]) min = l;
      if (r < this.size && this.keys[r] < this.keys[min]) min = r;
      if (min === at) break;
      this.#swap(min, at);
      at = min;
    }
    return top;
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

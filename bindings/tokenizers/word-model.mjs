// What every word-by-word tokenization model shares (BPE, WordPiece, Unigram): the token list
// they write to, and the per-word cache. Its own module, so models in other files can extend it.

/** Tokens in columns: ids, token strings, and [starts[i], ends[i]) in the original text. */
export class TokenList {
  constructor(capacity = 64) {
    this.length = 0;
    this.ids = new Int32Array(capacity);
    this.starts = new Int32Array(capacity);
    this.ends = new Int32Array(capacity);
    this.tokens = [];
  }

  push(id, token, start, end) {
    if (this.length === this.ids.length) {
      const grow = (old) => { const a = new Int32Array(2 * old.length); a.set(old); return a; };
      this.ids = grow(this.ids);
      this.starts = grow(this.starts);
      this.ends = grow(this.ends);
    }
    this.ids[this.length] = id;
    this.starts[this.length] = start;
    this.ends[this.length] = end;
    this.tokens.push(token);
    this.length += 1;
  }
}

// Text repeats its words, so each model keeps a word's tokens as it found them, as Hugging Face
// tokenizers does: [fuse, id, token, start, end, id, …], start and end relative to the word; fuse
// is 1 where the first token is an unknown one that joins an unknown token before it (fuse_unk).
// Long words are not kept, and the cache empties when it is full.
const CACHE_ENTRIES = 100000;
const CACHED_WORD_LENGTH = 256;

export class WordModel {
  constructor() {
    this.cache = new Map();
    this.unk = null;
  }

  /** Appends the tokens of every piece to out. */
  tokenize({ text, s, e, spans }, out = new TokenList()) {
    for (let k = 0; k < spans.length; k += 2) {
      const a = spans.data[k], b = spans.data[k + 1];
      if (a >= b) continue;
      const word = a === 0 && b === text.length ? text : text.slice(a, b);
      const first = out.length;
      const long = b - a > CACHED_WORD_LENGTH;
      // A model that can write a long word's tokens straight to the list skips the cache's array.
      if (long && this.writeLongWord) { this.writeLongWord(word, a, s, e, out); continue; }
      const cuts = long ? this.cuts(word) : null;
      if (!cuts) { this.#append(word, a, s, e, out, first); continue; }
      // A long word (a document with no pre-tokenizer split) in parts that tokenize apart.
      let from = 0;
      for (let c = 0; c < cuts.length; c += 1) {
        this.#append(word.slice(from, cuts.data[c]), a + from, s, e, out, first);
        from = cuts.data[c];
      }
      this.#append(word.slice(from), a + from, s, e, out, first);
    }
    return out;
  }

  // Places where a long word can be cut without changing its tokens, or null.
  cuts() { return null; }

  #append(word, a, s, e, out, first) {
    let tokens = this.cache.get(word);
    if (tokens === undefined) {
      tokens = this.word(word);
      if (word.length <= CACHED_WORD_LENGTH) {
        if (this.cache.size >= CACHE_ENTRIES) this.cache.clear();
        this.cache.set(word, tokens);
      }
    }
    let t = 1;
    if (tokens[0] === 1 && out.length > first && out.tokens[out.length - 1] === this.unk) {
      out.ends[out.length - 1] = e[a + tokens[4] - 1];
      t = 5;
    }
    for (; t < tokens.length; t += 4) out.push(tokens[t], tokens[t + 1], s[a + tokens[t + 2]], e[a + tokens[t + 3] - 1]);
  }
}


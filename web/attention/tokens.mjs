// From text to the matrix X the attention layer reads: tokenization and token embeddings.
//
// The page has no trained vocabulary, so each distinct word gets a fixed pseudo-random vector
// derived from a hash of its lower-cased text: the same word always maps to the same vector,
// different words to nearly orthogonal ones. The page says so; it is not a language model.

/** The page's limit; longer inputs are cut here, and the page says so. */
export const MAX_PAGE_TOKENS = 512;

// Words (letters/digits with inner apostrophes or hyphens), or single other non-space characters.
const TOKEN = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*|[^\s\p{L}\p{N}]/gu;

export function tokenize(text) {
  return String(text).match(TOKEN) ?? [];
}

function fnv1a(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** mulberry32: a small seeded generator of numbers in [0, 1) (the tests' inputs use it too). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cache = new Map();  // "dModel:word" → Float32Array, so typing re-embeds only new words

/** The embedding of one token: dModel values ~ N(0, 1). */
export function tokenEmbedding(token, dModel) {
  const key = `${dModel}:${token.toLowerCase()}`;
  let v = cache.get(key);
  if (!v) {
    const rand = mulberry32(fnv1a(key));
    v = new Float32Array(dModel);
    for (let i = 0; i < dModel; i += 2) {  // Box–Muller
      const r = Math.sqrt(-2 * Math.log(1 - rand()));
      const angle = 2 * Math.PI * rand();
      v[i] = r * Math.cos(angle);
      if (i + 1 < dModel) v[i + 1] = r * Math.sin(angle);
    }
    if (cache.size > 20000) cache.clear();
    cache.set(key, v);
  }
  return v;
}

/** X (n × dModel): token embeddings, plus the positional encoding pe (n × dModel) when given. */
export function embed(tokens, dModel, pe = null) {
  const x = new Float32Array(tokens.length * dModel);
  tokens.forEach((token, row) => x.set(tokenEmbedding(token, dModel), row * dModel));
  if (pe) for (let i = 0; i < x.length; i++) x[i] += pe[i];
  return x;
}

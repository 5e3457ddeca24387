// SentencePiece's Unigram model: each word's segmentation is the one whose pieces' scores (log
// probabilities) sum highest, found by Viterbi over the positions of the word. Two flavours:
// tokenizer.json's (the tokenizers library: every vocabulary entry can match, float64 sums) and a
// SentencePiece model file's (its piece types: control, unknown and byte pieces never match text,
// unused ones are skipped, user-defined ones always win; float32 sums, as the C++ library adds).
import { WordModel } from './word-model.mjs';
import { CharTrie } from './trie.mjs';

/** SentencePiece's piece types (ModelProto.SentencePiece.Type). */
export const PIECE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 };

const fail = (message) => { throw new Error(`multihead: tokenizer.json: ${message}`); };

// An unknown character scores this much below the rarest piece (both libraries' kUnkPenalty).
const UNKNOWN_PENALTY = 10;

const isHigh = (code) => code >= 0xD800 && code <= 0xDBFF;
const isLow = (code) => code >= 0xDC00 && code <= 0xDFFF;
const utf8 = new TextEncoder();

export class Unigram extends WordModel {
  /**
   * @param {{ vocab: Array<[string, number]>, unk_id?: number | null, byte_fallback?: boolean,
   *   piece_types?: ArrayLike<number> }} spec tokenizer.json's model; piece_types (one per entry,
   *   SentencePiece's PIECE numbers) only for a model read from a SentencePiece file.
   */
  constructor(spec) {
    super();
    const { vocab } = spec;
    if (!Array.isArray(vocab) || !vocab.length) fail('the Unigram model needs a non-empty vocab list of [piece, score]');
    this.types = spec.piece_types ?? null;
    this.sentencePiece = this.types !== null;
    this.pieces = new Array(vocab.length);
    this.scores = new Float64Array(vocab.length);
    this.vocab = new Map();
    let edges = 0;
    vocab.forEach((entry, id) => {
      const [piece, score] = Array.isArray(entry) ? entry : [];
      if (typeof piece !== 'string' || typeof score !== 'number' || !Number.isFinite(score)) {
        fail(`Unigram vocab entry ${id} (${JSON.stringify(entry)?.slice(0, 80)}) is not [piece, score]`);
      }
      this.pieces[id] = piece;
      this.scores[id] = score;
      this.vocab.set(piece, id);
      edges += piece.length;
    });
    const unkId = spec.unk_id ?? null;
    if (unkId !== null && !(Number.isInteger(unkId) && unkId >= 0 && unkId < vocab.length)) fail(`the Unigram unk_id ${JSON.stringify(unkId)} is not an entry of its vocab`);
    this.unkId = unkId;
    this.unk = unkId === null ? null : this.pieces[unkId];
    this.byteFallback = !!spec.byte_fallback;
    this.byteIds = Array.from({ length: 256 }, (_, b) => this.vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`) ?? -1);
    this.#buildTrie(edges);
    this.best = new Float64Array(0);
    this.outputIds = null;  // ids to give out instead of the vocabulary's (Marian's vocab.json)
    // Each id's token: the vocabulary is a list, so a piece listed twice keeps both ids.
    this.tokensById = this.pieces;
  }

  #buildTrie(edges) {
    const { pieces, scores, types } = this;
    this.trie = new CharTrie(edges);
    // SentencePiece starts from FLT_MAX and FLT_MIN (the smallest positive float): with only negative
    // scores its "best score" stays FLT_MIN, which the user-defined bonus below is built on.
    let min = types ? 3.4028234663852886e38 : Infinity, max = types ? 1.1754943508222875e-38 : -Infinity;
    for (let id = 0; id < pieces.length; id += 1) {
      const type = types ? types[id] : PIECE.NORMAL;
      // SentencePiece matches only normal, user-defined and unused pieces against text.
      if (type === PIECE.NORMAL || type === PIECE.USER_DEFINED || type === PIECE.UNUSED) this.trie.set(pieces[id], id);
      // The unknown score is below the rarest piece: of all of them in tokenizers, of the normal ones in SentencePiece.
      if (!types || type === PIECE.NORMAL) { min = Math.min(min, scores[id]); max = Math.max(max, scores[id]); }
    }
    this.unkScore = this.sentencePiece ? Math.fround(Math.fround(min) - UNKNOWN_PENALTY) : min - UNKNOWN_PENALTY;
    // A user-defined piece scores (its UTF-8 length × the best normal score) − 0.1: it beats any split of it.
    this.userScores = null;
    if (types) {
      this.userScores = new Float64Array(pieces.length);
      for (let id = 0; id < pieces.length; id += 1) {
        if (types[id] === PIECE.USER_DEFINED) this.userScores[id] = utf8.encode(pieces[id]).length * Math.fround(max) - 0.1;
      }
    }
  }

  #reserve(n) {
    if (this.best.length > n) return;
    const size = Math.max(2 * this.best.length, n + 1, 256);
    this.best = new Float64Array(size);
    this.from = new Int32Array(size);
    this.ids = new Int32Array(size);
  }

  // The best path's last piece ending at each position: best[end] its total score, from[end] where
  // it starts (-1: no path yet), ids[end] its id. Ties keep the first piece found (the shortest),
  // as both libraries do.
  #viterbi(word) {
    const n = word.length, { trie, scores, types, userScores } = this;
    this.#reserve(n);
    const { best, from, ids } = this;
    from.fill(-1, 0, n + 1);
    best[0] = 0;
    const { rootChild, values } = trie;
    for (let start = 0; start < n;) {
      const width = isHigh(word.charCodeAt(start)) && start + 1 < n && isLow(word.charCodeAt(start + 1)) ? 2 : 1;
      const before = best[start];
      let single = false;
      let node = rootChild[word.charCodeAt(start)];
      for (let k = start + 1; node >= 0; k += 1) {
        const id = values[node];
        if (id >= 0 && !(types && types[id] === PIECE.UNUSED)) {
          let score;
          if (!types) score = before + scores[id];
          else if (types[id] === PIECE.USER_DEFINED) score = userScores[id] + before;
          else score = Math.fround(scores[id] + before);
          if (from[k] < 0 || score > best[k]) {
            best[k] = this.sentencePiece ? Math.fround(score) : score;
            from[k] = start;
            ids[k] = id;
          }
          if (k - start === width) single = true;
        }
        if (k >= n) break;
        node = trie.child(node, word.charCodeAt(k));
      }
      if (!single) {
        if (this.unkId === null) fail(`the Unigram model has no unk_id and no piece for ${JSON.stringify(word.slice(start, start + width))}`);
        const end = start + width, score = this.sentencePiece ? Math.fround(this.unkScore + before) : this.unkScore + before;
        if (from[end] < 0 || score > best[end]) {
          best[end] = score;
          from[end] = start;
          ids[end] = this.unkId;
        }
      }
      start += width;
    }
  }

  // The best path as pieces in order: this.pathIds / pathStarts / pathEnds [0, count), its count
  // returned. Neighbouring unknown pieces are one (fuse_unk, which both libraries always do for
  // Unigram).
  #path(word) {
    this.#viterbi(word);
    const { from, ids } = this;
    if (!this.pathIds || this.pathIds.length < this.from.length) {
      this.pathIds = new Int32Array(this.from.length);
      this.pathStarts = new Int32Array(this.from.length);
      this.pathEnds = new Int32Array(this.from.length);
    }
    const { pathIds, pathStarts, pathEnds } = this;
    let count = 0;
    for (let end = word.length; end > 0; end = from[end]) {
      const id = ids[end];
      if (id === this.unkId && count > 0 && pathIds[count - 1] === id) { pathStarts[count - 1] = from[end]; continue; }
      pathIds[count] = id;
      pathStarts[count] = from[end];
      pathEnds[count] = end;
      count += 1;
    }
    pathIds.subarray(0, count).reverse();
    pathStarts.subarray(0, count).reverse();
    pathEnds.subarray(0, count).reverse();
    return count;
  }

  // The tokens of an unknown piece's text: the text looked up again (tokenizers does), then
  // spelled in bytes (byte_fallback), else the unknown token; push(id, token) each.
  #unknown(text, push) {
    const known = this.sentencePiece ? undefined : this.vocab.get(text);
    if (known !== undefined) { push(known, text); return; }
    if (this.byteFallback) {
      const bytes = utf8.encode(text);
      if (bytes.every((b) => this.byteIds[b] >= 0)) {
        for (const b of bytes) push(this.byteIds[b], this.pieces[this.byteIds[b]]);
        return;
      }
    }
    push(this.unkId, text);
  }

  // A word's tokens, [0, id, token, start, end, …] with UTF-16 offsets in the word (WordModel's
  // layout; the leading 0: nothing here joins a token of the word before).
  word(word) {
    if (!word.length) return [0];
    const count = this.#path(word), { pathIds, pathStarts, pathEnds, outputIds } = this;
    const out = [0];
    for (let k = 0; k < count; k += 1) {
      const id = pathIds[k], start = pathStarts[k], end = pathEnds[k];
      if (id !== this.unkId) out.push(outputIds ? outputIds[id] : id, this.pieces[id], start, end);
      else this.#unknown(word.slice(start, end), (i, token) => out.push(outputIds ? outputIds[i] : i, token, start, end));
    }
    return out;
  }

  // A long word (a whole text, for a SentencePiece model file) written to the token list as its
  // path is read: no array of its tokens in between. Offsets: the word starts at a in s and e.
  writeLongWord(word, a, s, e, out) {
    const count = this.#path(word), { pathIds, pathStarts, pathEnds, outputIds, pieces } = this;
    for (let k = 0; k < count; k += 1) {
      const id = pathIds[k], from = s[a + pathStarts[k]], to = e[a + pathEnds[k] - 1];
      if (id !== this.unkId) out.push(outputIds ? outputIds[id] : id, pieces[id], from, to);
      else this.#unknown(word.slice(pathStarts[k], pathEnds[k]), (i, token) => out.push(outputIds ? outputIds[i] : i, token, from, to));
    }
  }
}

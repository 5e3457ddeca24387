// multihead: the JavaScript API over the trained language model (bindings/embind_language_model.cpp).
// This file only marshals; tokenizing, the forward pass and rollout are C++.
import { checkTokenIds, fail, switchOffHeads } from './checks.mjs';
import { withOldNames } from './deprecated.mjs';
import { release, track } from './registry.mjs';
import { loadMultihead } from './runtime.mjs';

/**
 * Loads a trained model from the bytes of a .mhlm file (e.g. web/model/austen.mhlm).
 * @param {ArrayBuffer | Uint8Array} bytes
 * @returns {Promise<LanguageModel>}
 */
export async function loadLanguageModel(bytes) {
  if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
  if (!(bytes instanceof Uint8Array)) fail('loadLanguageModel needs the .mhlm file as an ArrayBuffer or Uint8Array');
  const core = await loadMultihead();
  const model = new core.LanguageModel();
  model.stageFile(bytes.length);
  model.view('file').set(bytes);
  const error = model.load();
  if (error) {
    model.delete();
    fail(error);
  }
  return new LanguageModel(model);
}

export class LanguageModel {
  #model;
  #vocab = new Map();

  /** @private Use loadLanguageModel(). */
  constructor(model) {
    this.#model = model;
    const config = model.config();
    this.config = Object.freeze(withOldNames(config, { vocab: 'vocabSize', numHeads: 'heads', context: 'maxPositions' }));
    track(this, model);
  }

  #live() {
    if (!this.#model) fail('this LanguageModel was disposed; load it again with loadLanguageModel()');
    return this.#model;
  }

  /** The vocabulary entry of a token id ("<unk>" is id 0). */
  piece(id) {
    if (!this.#vocab.has(id)) this.#vocab.set(id, this.#live().piece(id));
    return this.#vocab.get(id);
  }

  /**
   * Splits text exactly as training did: { ids, tokens (the vocabulary entries the model sees),
   * offsets ([start, end) of each token in the text, in UTF-16 code units, as String.slice takes
   * them) }. pieces (deprecated) has the same per token, with known: false for words outside the
   * vocabulary (read as "<unk>").
   */
  tokenize(text) {
    if (typeof text !== 'string') fail(`tokenize needs a string, got ${typeof text}`);
    const model = this.#live();
    const count = model.tokenize(text);
    const ids = model.view('tokens').slice(0, count);
    const begins = model.view('pieceBegin'), ends = model.view('pieceEnd');
    // The core gives UTF-8 byte ranges; offsets are in the string's own units.
    const utf8 = new TextEncoder().encode(text), decoder = new TextDecoder();
    const unitsBefore = (byte) => decoder.decode(utf8.subarray(0, byte)).length;
    const offsets = Array.from(ids, (_, i) => [unitsBefore(begins[i]), unitsBefore(ends[i])]);
    const tokens = Array.from(ids, (id) => this.piece(id));
    const pieces = Array.from(ids, (id, i) => ({
      id, known: id !== 0, token: tokens[i], text: text.slice(offsets[i][0], offsets[i][1]),
    }));
    return { ids, tokens, offsets, pieces };
  }

  /**
   * Runs the model over token ids (1 … config.maxPositions of them).
   * @param {Int32Array | number[]} ids
   * @param {{ disabledHeads?: Array<[number, number]> }} [options] [layer, head] pairs switched off
   * @returns {{ n: number, attentions: Float32Array, probabilities: Float32Array, rollout: Float32Array }}
   *   attentions: layers × heads × n × n; probabilities: n × vocabSize (next token after each
   *   position); rollout: n × n
   */
  run(ids, { disabledHeads = [] } = {}) {
    const model = this.#live();
    const { layers, heads, vocabSize } = this.config;
    if (!(ids instanceof Int32Array || Array.isArray(ids))) fail('run needs token ids as an Int32Array or number[]');
    const error = model.prepare(ids.length);
    if (error) fail(error);
    checkTokenIds(ids, vocabSize);
    model.view('tokens').set(ids);
    switchOffHeads(model.view('headEnabled'), disabledHeads, layers, heads);
    const runError = model.run(ids.length);
    if (runError) fail(runError);
    const attentions = model.view('attentions').slice();
    return {
      n: ids.length, attentions, probabilities: model.view('probabilities').slice(), rollout: model.view('rollout').slice(),
      attention: attentions,  // the 0.1 name (deprecated): the same array
    };
  }

  /** The k most likely next tokens after `position` of a run() result, most likely first. */
  topPredictions(result, position, k = 5) {
    const { vocabSize } = this.config;
    const row = result.probabilities.subarray(position * vocabSize, (position + 1) * vocabSize);
    const best = [];
    for (let id = 0; id < vocabSize; id += 1) {
      if (best.length < k || row[id] > best[best.length - 1].probability) {
        best.push({ id, probability: row[id] });
        best.sort((a, b) => b.probability - a.probability);
        if (best.length > k) best.pop();
      }
    }
    return best.map((b) => ({ ...b, token: this.piece(b.id) }));
  }

  /** Frees the model's wasm memory now. */
  dispose() {
    if (!this.#model) return;
    release(this, this.#model);
    this.#model = null;
  }
}

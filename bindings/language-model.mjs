// multihead: the JavaScript API over the trained language model (bindings/embind_language_model.cpp).
// Like multihead.mjs, this file only marshals; tokenizing, the forward pass and rollout are C++.
import { loadMultihead } from './multihead.mjs';

// Buffer slots of the Embind LanguageModel (keep in sync with bindings/embind_language_model.cpp).
const SLOT = { file: 0, tokens: 1, pieceBegin: 2, pieceEnd: 3, attention: 4, probs: 5, rollout: 6, headEnabled: 7 };
const CONFIG_NAMES = ['vocab', 'dModel', 'numHeads', 'layers', 'context', 'dFf'];

function fail(message) {
  throw new Error(`multihead: ${message}`);
}

const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((model) => { if (!model.isDeleted()) model.delete(); })
  : null;

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
  model.view(SLOT.file).set(bytes);
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
    this.config = Object.freeze(Object.fromEntries(CONFIG_NAMES.map((name, i) => [name, model.configValue(i)])));
    registry?.register(this, model, this);
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
   * Splits text exactly as training did. Each piece keeps its original text; known is false for
   * words outside the vocabulary (the model sees them as "<unk>").
   */
  tokenize(text) {
    if (typeof text !== 'string') fail(`tokenize needs a string, got ${typeof text}`);
    const model = this.#live();
    const count = model.tokenize(text);
    const ids = model.view(SLOT.tokens).slice(0, count);
    const begins = model.view(SLOT.pieceBegin), ends = model.view(SLOT.pieceEnd);
    const utf8 = new TextEncoder().encode(text), decoder = new TextDecoder();
    const pieces = Array.from(ids, (id, i) => ({
      id, known: id !== 0, token: this.piece(id), text: decoder.decode(utf8.subarray(begins[i], ends[i])),
    }));
    return { ids, pieces };
  }

  /**
   * Runs the model over token ids (1 … config.context of them).
   * @param {Int32Array | number[]} ids
   * @param {{ disabledHeads?: Array<[number, number]> }} [options] [layer, head] pairs switched off
   * @returns {{ n: number, attention: Float32Array, probabilities: Float32Array, rollout: Float32Array }}
   *   attention: layers × heads × n × n; probabilities: n × vocab (next token after each position);
   *   rollout: n × n
   */
  run(ids, { disabledHeads = [] } = {}) {
    const model = this.#live();
    const { layers, numHeads, vocab } = this.config;
    if (!(ids instanceof Int32Array || Array.isArray(ids))) fail('run needs token ids as an Int32Array or number[]');
    const error = model.prepare(ids.length);
    if (error) fail(error);
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= vocab) fail(`token id ${id} is not in the vocabulary (0 … ${vocab - 1})`);
    }
    model.view(SLOT.tokens).set(ids);
    const enabled = model.view(SLOT.headEnabled);
    for (const pair of disabledHeads) {
      const [layer, head] = Array.isArray(pair) ? pair : [];
      if (!Number.isInteger(layer) || !Number.isInteger(head) || layer < 0 || layer >= layers || head < 0 || head >= numHeads) {
        fail(`disabledHeads entries must be [layer, head] with layer 0 … ${layers - 1} and head 0 … ${numHeads - 1}, got ${JSON.stringify(pair)}`);
      }
      enabled[layer * numHeads + head] = 0;
    }
    const runError = model.run(ids.length);
    if (runError) fail(runError);
    return {
      n: ids.length,
      attention: model.view(SLOT.attention).slice(),
      probabilities: model.view(SLOT.probs).slice(),
      rollout: model.view(SLOT.rollout).slice(),
    };
  }

  /** The k most likely next tokens after `position` of a run() result, most likely first. */
  topPredictions(result, position, k = 5) {
    const { vocab } = this.config;
    const row = result.probabilities.subarray(position * vocab, (position + 1) * vocab);
    const best = [];
    for (let id = 0; id < vocab; id += 1) {
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
    registry?.unregister(this);
    this.#model.delete();
    this.#model = null;
  }
}

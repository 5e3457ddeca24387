// From settings to attention, shared by the page (app.mjs) and the widget (widget.js):
// one layer per configuration, text → tokens → X → forward pass → per-head heatmap models.
import { createMultiHeadAttention, loadMultihead, runtimeInfo } from '../../bindings/multihead.mjs';
import { MAX_PAGE_TOKENS, embed, tokenize } from './tokens.mjs';
import { archetypeInput, archetypeWeights } from './archetypes.mjs';

export class AttentionSession {
  #layer = null;
  #peLayer = null;   // archetype mode encodes positions at half width
  #key = '';
  #settings = null;
  threads = 1;
  oneThreadReason = '';

  /** settings = { d, h, kv, seed, temp, weights: 'random' | 'archetype' }. Reuses the layer if unchanged. */
  async configure(settings) {
    const key = [settings.d, settings.h, settings.kv, settings.seed, settings.temp, settings.weights].join('|');
    if (key === this.#key && this.#layer) return;
    if (!this.#layer) {
      // Threads where the page is cross-origin isolated (the threaded build), else one.
      await loadMultihead({ threads: 'auto' });
      ({ threads: this.threads, oneThreadReason: this.oneThreadReason } = await runtimeInfo());
    }
    const archetype = settings.weights === 'archetype';
    const layer = await createMultiHeadAttention({
      dModel: settings.d, heads: settings.h, kvHeads: archetype ? settings.h : settings.kv,
      seed: settings.seed, temperature: settings.temp,
    });
    if (archetype) layer.setWeights(archetypeWeights(settings.d, settings.h));
    const peLayer = archetype ? await createMultiHeadAttention({ dModel: settings.d / 2, heads: 1 }) : null;
    this.dispose();
    this.#layer = layer;
    this.#peLayer = peLayer;
    this.#key = key;
    this.#settings = settings;
  }

  get parameterCount() { return this.#layer.parameterCount; }

  #input(tokens, positional) {
    const { d } = this.#settings;
    if (this.#peLayer) {
      return archetypeInput(embed(tokens, d / 2), this.#peLayer.positionalEncoding(tokens.length), tokens.length, d);
    }
    return embed(tokens, d, positional ? this.#layer.positionalEncoding(tokens.length) : null);
  }

  /**
   * input = { text, text2, cross, causal, pe }. Returns null with notes when there is nothing to
   * show, else the view: { tokens, keyTokens, nQ, nK, attention (h × nQ × nK), x, keysValues,
   * causal, models: per head { weights, nQ, nK, rows, cols } for drawHeatmap, notes }.
   */
  run({ text, text2 = '', cross = false, causal = false, pe = true }) {
    const notes = [];
    const limit = (tokens, name) => {
      if (tokens.length <= MAX_PAGE_TOKENS) return tokens;
      notes.push(`The ${name} has ${tokens.length} tokens; the first ${MAX_PAGE_TOKENS} are shown. (The JS API accepts up to 16384.)`);
      return tokens.slice(0, MAX_PAGE_TOKENS);
    };
    const tokens = limit(tokenize(text), 'sentence');
    const keyTokens = cross ? limit(tokenize(text2), 'second sentence') : tokens;
    if (tokens.length === 0 || keyTokens.length === 0) {
      notes.push(tokens.length === 0 ? 'Type a sentence to see its attention.' : 'Type a second sentence for the keys and values.');
      return { view: null, notes, tokens };
    }
    const positional = pe || this.#settings.weights === 'archetype';
    const x = this.#input(tokens, positional);
    const keysValues = cross ? this.#input(keyTokens, positional) : undefined;
    const selfCausal = causal && !cross;
    const { attentions: attention } = this.#layer.forward(x, { keysValues, causal: selfCausal, returnAttention: true });
    const nQ = tokens.length, nK = keyTokens.length;
    if (nQ * nK > 128 * 128) notes.push(`Long input: each heatmap draws ${nQ} × ${nK} cells at under a pixel each, and labels are thinned.`);
    const models = Array.from({ length: this.#settings.h }, (_, head) => ({
      weights: attention.subarray(head * nQ * nK, (head + 1) * nQ * nK), nQ, nK, rows: tokens, cols: keyTokens,
    }));
    return { view: { tokens, keyTokens, nQ, nK, attention, x, keysValues, causal: selfCausal, models }, notes, tokens };
  }

  /** Every step of one head for the walkthrough (mha.trace on the view's inputs). */
  trace(view, head) {
    return this.#layer.trace(view.x, { head, keysValues: view.keysValues, causal: view.causal });
  }

  dispose() {
    this.#layer?.dispose();
    this.#peLayer?.dispose();
    this.#layer = this.#peLayer = null;
    this.#key = '';
  }
}

// The attention layer: one multi-head attention with its own weights (bindings/embind.cpp's Layer).
// This file only marshals: it checks that arguments are arrays of the right length, copies them
// into the wasm heap, calls the core, and copies results out. Every numeric rule (valid configs,
// finite values, memory budget) lives in the C++ core, which returns a message this file throws.
import { checkArray, checkInteger, checkNumber, checkObject, describe, fail, MAX_TOKENS, rowsOf } from './checks.mjs';
import { renameOptions, withOldNames } from './deprecated.mjs';
import { release, track } from './registry.mjs';
import { loadMultihead } from './runtime.mjs';

const MASK_NONE = 0, MASK_BLOCKED = 1, MASK_ADDITIVE = 2;
// The core's weight order (mh::WeightIndex).
const WEIGHT_NAMES = ['wq', 'wk', 'wv', 'wo', 'bq', 'bk', 'bv', 'bo'];
// trace()'s results, each the Layer's buffer of the same name (Module.LayerBuffer).
const TRACE_NAMES = ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'attention', 'headOutput'];

function maskKindOf(mask) {
  if (mask === undefined || mask === null) return MASK_NONE;
  if (mask instanceof Float32Array || mask instanceof Float64Array) return MASK_ADDITIVE;
  if (mask instanceof Uint8Array || mask instanceof Int8Array || mask instanceof Uint8ClampedArray) return MASK_BLOCKED;
  if (Array.isArray(mask) && mask.every((v) => typeof v === 'boolean')) return MASK_BLOCKED;
  fail(`mask must be a Uint8Array or boolean[] (nonzero/true = blocked) or a Float32Array ` +
    `(added to the scaled scores; -Infinity blocks), got ${describe(mask)}`);
}

/**
 * Creates a multi-head attention layer with seeded random weights.
 * @param {import('./multihead').MultiHeadAttentionOptions} [options]
 * @returns {Promise<MultiHeadAttention>}
 */
export async function createMultiHeadAttention(options = {}) {
  checkObject('options', options);
  const {
    dModel = 64, heads = 4, kvHeads = heads, bias = true, seed = 0, temperature = 1, scale = 0,
  } = renameOptions(options, { numHeads: 'heads', numKvHeads: 'kvHeads' }, fail);
  checkInteger('dModel', dModel);
  checkInteger('heads', heads);
  checkInteger('kvHeads', kvHeads);
  checkInteger('seed', seed, { min: 0, max: Number.MAX_SAFE_INTEGER });
  checkNumber('temperature', temperature);
  checkNumber('scale', scale);
  if (typeof bias !== 'boolean') fail(`bias must be true or false, got ${describe(bias)}`);
  const core = await loadMultihead();
  const error = core.validateConfig(dModel, heads, kvHeads, bias, scale, temperature);
  if (error) fail(error);
  const layer = new core.Layer(dModel, heads, kvHeads, bias, scale, temperature);
  layer.initSeeded(seed);
  const config = { dModel, heads, kvHeads, headDim: dModel / heads, bias, seed, temperature, scale };
  Object.freeze(withOldNames(config, { numHeads: 'heads', numKvHeads: 'kvHeads' }));
  return new MultiHeadAttention(core, layer, config);
}

export class MultiHeadAttention {
  #core;
  #layer;

  /** @private Use createMultiHeadAttention(). */
  constructor(core, layer, config) {
    this.#core = core;
    this.#layer = layer;
    this.config = config;
    this.parameterCount = core.parameterCount(config.dModel, config.heads, config.kvHeads, config.bias);
    track(this, layer);
  }

  #live() {
    if (!this.#layer) fail('this MultiHeadAttention was disposed; create a new one with createMultiHeadAttention()');
    return this.#layer;
  }

  #view(name) {
    return this.#live().view(this.#core.LayerBuffer[name]);
  }

  /** Frees the layer's wasm memory now (otherwise it is freed when the object is garbage-collected). */
  dispose() {
    if (!this.#layer) return;
    release(this, this.#layer);
    this.#layer = null;
  }

  get disposed() {
    return this.#layer === null;
  }

  /** Copies of the weights: wq, wk, wv, wo ([in][out], row-major) and, with bias, bq, bk, bv, bo. */
  getWeights() {
    const layer = this.#live();
    const weights = {};
    WEIGHT_NAMES.forEach((name, i) => {
      if (layer.weightSize(i) > 0) weights[name] = layer.weightView(i).slice();
    });
    return weights;
  }

  /** Replaces any subset of the weights. Checked as a whole: on an error nothing changes. */
  setWeights(weights) {
    const layer = this.#live();
    if (weights === null || typeof weights !== 'object') fail(`setWeights needs an object like { wq, wk, wv, wo }, got ${describe(weights)}`);
    let mask = 0;
    for (const name of Object.keys(weights)) {
      const i = WEIGHT_NAMES.indexOf(name);
      if (i < 0) fail(`unknown weight "${name}": expected some of ${WEIGHT_NAMES.join(', ')}`);
      const size = layer.weightSize(i);
      if (size === 0) fail(`this layer was created with bias: false, so it has no ${name}; create it with bias: true to set biases`);
      checkArray(name, weights[name], size, this.#weightShape(i));
    }
    for (const name of Object.keys(weights)) {
      const i = WEIGHT_NAMES.indexOf(name);
      layer.stageWeight(i);
      layer.stagedView(i).set(weights[name]);
      mask |= 1 << i;
    }
    const error = layer.commitWeights(mask);
    if (error) fail(error);
  }

  #weightShape(i) {
    const { dModel, kvHeads, headDim } = this.config;
    const dKv = kvHeads * headDim;
    return [`dModel × dModel = ${dModel} × ${dModel}`, `dModel × kvWidth = ${dModel} × ${dKv}`,
      `dModel × kvWidth = ${dModel} × ${dKv}`, `dModel × dModel = ${dModel} × ${dModel}`,
      `dModel = ${dModel}`, `kvWidth = ${dKv}`, `kvWidth = ${dKv}`, `dModel = ${dModel}`][i];
  }

  /**
   * Loads PyTorch nn.MultiheadAttention weights: in_proj_weight (3d × d), in_proj_bias (3d),
   * out_proj.weight (d × d), out_proj.bias (d), as flat row-major arrays (tensor.flatten()).
   */
  loadPyTorchWeights(stateDict) {
    const layer = this.#live();
    const d = this.config.dModel;
    if (stateDict === null || typeof stateDict !== 'object') fail(`loadPyTorchWeights needs a state dict object, got ${describe(stateDict)}`);
    const pick = (...names) => names.map((n) => stateDict[n]).find((v) => v !== undefined);
    const parts = [
      ['in_proj_weight', pick('in_proj_weight'), 3 * d * d, `3·dModel × dModel = ${3 * d} × ${d}`],
      ['in_proj_bias', pick('in_proj_bias'), 3 * d, `3·dModel = ${3 * d}`],
      ['out_proj.weight', pick('out_proj.weight', 'out_proj_weight'), d * d, `dModel × dModel = ${d} × ${d}`],
      ['out_proj.bias', pick('out_proj.bias', 'out_proj_bias'), d, `dModel = ${d}`],
    ];
    const withBias = parts[1][1] !== undefined || parts[3][1] !== undefined;
    for (const [name, value, size, shape] of parts) {
      if (value === undefined && (name.includes('weight') || withBias)) fail(`the state dict has no ${name}`);
      if (value !== undefined) checkArray(name, value, size, shape);
    }
    layer.prepareTorch(withBias);
    parts.forEach(([, value], i) => { if (value !== undefined) layer.torchView(i).set(value); });
    const error = layer.loadTorch(withBias);
    if (error) fail(error);
  }

  /**
   * Self-attention over x (seqLen × dModel, row-major). Returns { output (seqLen × dModel),
   * attentions (heads × seqLen × seqLen) when returnAttention is true }. returnAttention may
   * also select a block, { head } or { heads: [start, end), rows: [start, end) }, and then only
   * that block is computed into memory and returned (heads × rows × kvLen).
   */
  forward(x, options = {}) {
    const call = this.#prepare(x, options);
    this.#run(call);
    return this.#collect(call, options);
  }

  /** Cross-attention: queries (nQ × dModel) attend to keysValues (nK × dModel). */
  forwardCross(queries, keysValues, options = {}) {
    return this.forward(queries, { ...options, keysValues });
  }

  /**
   * Forward pass plus every intermediate of one head, for teaching: q, k, v (n × headDim),
   * scores = Q_i·K_iᵀ, scaled, masked, attention (nQ × nK), headOutput (nQ × headDim),
   * concat (nQ × dModel, all heads before W_O) and output (nQ × dModel).
   */
  trace(x, options = {}) {
    const head = options.head ?? 0;
    checkInteger('head', head);
    const call = this.#prepare(x, { ...options, returnAttention: false });
    const error = this.#live().trace(head, call.nQ, call.nK, call.cross, call.causal,
      call.padding, call.maskKind);
    if (error) fail(error);
    const result = { head, nQ: call.nQ, nK: call.nK, headDim: this.config.headDim };
    for (const name of TRACE_NAMES) result[name] = this.#view(name).slice();
    result.concat = this.#view('concat').slice();
    result.output = this.#view('output').slice();
    return result;
  }

  /** Sinusoidal positional encoding, seqLen × dModel (Vaswani et al. 2017). */
  positionalEncoding(seqLen) {
    checkInteger('seqLen', seqLen, { min: 1, max: MAX_TOKENS });
    const error = this.#live().positionalEncoding(seqLen);
    if (error) fail(error);
    return this.#view('positional').slice();
  }

  #prepare(x, options) {
    const layer = this.#live();
    checkObject('options', options);
    const { dModel } = this.config;
    const { seqLen, kvLen, keysValues, causal = false, keyPaddingMask, mask, returnAttention = false } = options;
    const cross = keysValues !== undefined && keysValues !== null;
    const nQ = rowsOf(cross ? 'queries' : 'x', x, dModel, seqLen, 'seqLen');
    const nK = cross ? rowsOf('keysValues', keysValues, dModel, kvLen, 'kvLen') : nQ;
    if (typeof causal !== 'boolean') fail(`causal must be true or false, got ${describe(causal)}`);
    const sel = this.#selection(returnAttention, nQ);
    const padding = keyPaddingMask !== undefined && keyPaddingMask !== null;
    if (padding) checkArray('keyPaddingMask', keyPaddingMask, nK, `one flag per key position, ${nK}`);
    const maskKind = maskKindOf(mask);
    if (maskKind !== MASK_NONE) checkArray('mask', mask, nQ * nK, `queries × keys = ${nQ} × ${nK}`);

    const error = layer.prepare(nQ, nK, cross, sel.firstHead, sel.heads, sel.firstRow, sel.rows, maskKind, padding);
    if (error) fail(error);
    // Views are taken only now: prepare may have grown the heap, detaching older views.
    this.#view('queries').set(x);
    if (cross) this.#view('keysValues').set(keysValues);
    if (padding) this.#view('keyPadding').set(keyPaddingMask);
    if (maskKind === MASK_BLOCKED) this.#view('blocked').set(mask);
    if (maskKind === MASK_ADDITIVE) this.#view('additiveMask').set(mask);
    return { nQ, nK, cross, causal, padding, maskKind, returnAttention: sel.heads > 0 };
  }

  // returnAttention: false | true | { head } | { heads: [start, end), rows: [start, end) } →
  // the heads × rows block of weights to copy out (the core checks that they exist).
  #selection(request, nQ) {
    const { heads } = this.config;
    if (request === false) return { firstHead: 0, heads: 0, firstRow: 0, rows: 0 };
    if (request === true) return { firstHead: 0, heads, firstRow: 0, rows: nQ };
    if (request === null || typeof request !== 'object') {
      fail(`returnAttention must be true, false or { head, heads: [start, end), rows: [start, end) }, got ${describe(request)}`);
    }
    const range = (name, value, whole) => {
      if (value === undefined) return [0, whole];
      if (!Array.isArray(value) || value.length !== 2) fail(`returnAttention.${name} must be [start, end), got ${describe(value)}`);
      checkInteger(`returnAttention.${name}[0]`, value[0]);
      checkInteger(`returnAttention.${name}[1]`, value[1]);
      return value;
    };
    const [h0, h1] = request.head !== undefined ? [checkInteger('returnAttention.head', request.head), request.head + 1] : range('heads', request.heads, heads);
    const [r0, r1] = range('rows', request.rows, nQ);
    if (h1 <= h0 || r1 <= r0) fail('returnAttention selects no weights: each range [start, end) needs end > start');
    return { firstHead: h0, heads: h1 - h0, firstRow: r0, rows: r1 - r0 };
  }

  #run(call) {
    const error = this.#live().forward(call.nQ, call.nK, call.cross, call.causal, call.padding, call.maskKind);
    if (error) fail(error);
  }

  // Copies results out of the heap (a view would go stale at the next call or heap growth), into
  // the caller's buffers when given: options.into = { output, attention }.
  #collect(call, options) {
    let into = options.into ?? {};
    if (into.attention !== undefined) into = renameOptions(into, { attention: 'attentions' }, fail);
    const copyOut = (slot, target, name) => {
      const view = this.#view(slot);
      if (target === undefined) return view.slice();
      if (!(target instanceof Float32Array) || target.length !== view.length) {
        fail(`into.${name} must be a Float32Array of length ${view.length}, got ${describe(target)}`);
      }
      target.set(view);
      return target;
    };
    const result = { output: copyOut('output', into.output, 'output') };
    if (call.returnAttention) {
      result.attentions = copyOut('attentions', into.attentions, 'attentions');
      result.attention = result.attentions;  // the 0.1 name (deprecated): the same array
    }
    return result;
  }
}

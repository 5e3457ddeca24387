// A run context of a pretrained model (bindings/embind_context.cpp over src/nn/transformer.h's
// RunContext): its key/value caches, prefix reuse and scratch. model.run() and the rest use the
// model's default context; model.createContext() gives another over the same weights, so that one
// line of runs (a page's typing) goes on while another (a patching sweep) is under way.
import { abortError, checkTokenIds, describe, fail, optionsOf, switchOffHeads } from './checks.mjs';
import { nextTurn, turnClock } from './environment.mjs';
import { prepareHooks } from './hooks.mjs';
import { release, track } from './registry.mjs';
import { streamingDecoder } from './tokenizers/tokenizer.mjs';

// The attention's inner values are computed inside its kernel: read, never written (nn/hooks.h).
// The lens's targets: each costs a float and a rank (a pass over the vocabulary) per stream and position.
const MAX_LENS_TARGETS = 1000;
const hookIsWritable = (name) => !/attn\.hook_(q|k|v|rot_q|rot_k|attn_scores|pattern)$/.test(name);

// A result's array: the caller's (options.into), which must have the length, or a new one. Filling
// the caller's array again saves allocating, and touching fresh memory, on every run (37.7 MB of
// attentions at 256 tokens of GPT-2 small).
function target(given, length, name) {
  if (given === undefined) return new Float32Array(length);
  if (!(given instanceof Float32Array) || given.length !== length) {
    fail(`into.${name} must be a Float32Array of length ${length}, got ${describe(given)}${given instanceof Float32Array ? ` of length ${given.length}` : ''}`);
  }
  return given;
}
const copied = (view, given, name) => (given === undefined ? view.slice() : (target(given, view.length, name).set(view), given));

/**
 * @typedef {{ n: number, logits: Float32Array | null, logitRows: number[] | null, attentions: Float32Array,
 *   attentionShape: number[], attentionLayers: number[], attentionHeads: number[], reusedTokens?: number,
 *   lastHiddenState?: Float32Array, hiddenStates?: Float32Array, valueNorms?: Float32Array,
 *   rollout?: Float32Array,
 *   activations?: Record<string, { data: Float32Array, shape: number[] }>,
 *   patchGrid?: { rows: number, cols: number } }} RunResult
 */

// A lens's arrays out of the core's views (ModelContext's and EncoderDecoderModel's logitLens).
export function lensArrays(core, positions, targets) {
  return {
    positions: [...positions],
    ids: core.view('lensIds').slice(),
    probabilities: core.view('lensProbabilities').slice(),
    targets: targets.length ? {
      ids: Int32Array.from(targets), probabilities: core.view('lensTargetProbabilities').slice(),
      ranks: core.view('lensTargetRanks').slice(),
    } : null,
  };
}

export class ModelContext {
  #model;
  #core;
  #eos;
  #hookIds;
  #onDispose;
  #patching = false;

  /** @private Use model.createContext(). */
  constructor(model, core, { eos, hookIds, onDispose }) {
    this.#model = model;
    this.#core = core;
    this.#eos = eos;
    this.#hookIds = hookIds;
    this.#onDispose = onDispose;
    track(this, core);
  }

  /** The model's config (model.config). */
  get config() { return this.#model.config; }
  /** The model's tokenizer (model.tokenizer). */
  get tokenizer() { return this.#model.tokenizer; }

  #live() {
    if (!this.#core) fail(this.#model.disposed ? 'this model was disposed; load it again with loadPretrained()' : 'this context was disposed; make another with model.createContext()');
    return this.#core;
  }

  #checkIds(ids) {
    checkTokenIds(ids, this.config.vocabSize);
  }

  // Which heads of which layers: { layers: number[], heads: number[] } → flags and a head range.
  #selection(attentions) {
    const { layers, heads } = this.config;
    const all = (count) => Array.from({ length: count }, (_, i) => i);
    if (attentions === false || attentions === null) return { layers: [], heads: [] };
    if (attentions === true || attentions === undefined) return { layers: all(layers), heads: all(heads) };
    if (typeof attentions !== 'object') fail('attentions must be true, false, or { layers, heads }');
    const pick = (list, count, what) => {
      if (list === undefined) return all(count);
      if (!Array.isArray(list) || list.some((x) => !Number.isInteger(x) || x < 0 || x >= count)) {
        fail(`attentions.${what} must be a list of ${what} from 0 to ${count - 1}`);
      }
      return [...new Set(list)].sort((a, b) => a - b);
    };
    return { layers: pick(attentions.layers, layers, 'layers'), heads: pick(attentions.heads, heads, 'heads') };
  }

  // logits: true (every row), false, or a list of rows (only those are computed).
  // copyLogits false: the logits stay in the heap (generate() samples there).
  #run(core, ids, { tokenTypeIds, logits = true, selection, lastHiddenState, hiddenStates, valueNorms, disabledHeads, cache, rollout, reusePrefix, capture, intervene, into = {}, copyLogits = true, image = null }) {
    const { layers, heads } = this.config;
    const tokenTypes = this.#inputs(core, ids, tokenTypeIds);
    if (image) {  // an image model: its pixels beside the (unread) ids
      core.pixels(image.pixelValues.length);
      core.view('pixels').set(image.pixelValues);
    }
    // Without lastHiddenState the core computes the last layer's MLP for the logits' rows only.
    const ask = { logits: Boolean(logits), logitRows: false, tokenTypes, hiddenStates: Boolean(hiddenStates),
      lastHiddenState: Boolean(lastHiddenState), valueNorms: Boolean(valueNorms), disabledHeads: false,
      cache: Boolean(cache), reusePrefix: Boolean(reusePrefix), firstHead: 0, heads: 0 };
    if (image) Object.assign(ask, { imageHeight: image.height, imageWidth: image.width });
    if (Array.isArray(logits)) {
      if (logits.some((row) => !Number.isInteger(row) || row < 0 || row >= ids.length)) {
        fail(`logits rows must be token positions from 0 to ${ids.length - 1}, got ${JSON.stringify(logits)}`);
      }
      core.logitRows(logits.length);
      core.view('logitRows').set(logits);
      ask.logitRows = true;
    }
    if (disabledHeads?.length) {
      switchOffHeads(core.view('disabledHeads'), disabledHeads, layers, heads, 1);
      ask.disabledHeads = true;
    }
    const layerFlags = core.view('attentionLayers');
    for (const l of selection.layers) layerFlags[l] = 1;
    const firstHead = selection.heads.length ? selection.heads[0] : 0;
    const headSpan = selection.heads.length ? selection.heads[selection.heads.length - 1] - firstHead + 1 : 0;
    ask.firstHead = firstHead;
    ask.heads = headSpan;
    // Last before the run: nothing may grow the heap between these views and it.
    const hooks = capture === undefined && intervene === undefined ? null
      : prepareHooks(core.view('hookModes'), this.#hookIds(), hookIsWritable, capture, intervene);
    let error;
    if (!hooks) {
      error = core.run(ids.length, ask);
    } else {
      core.setHookCallback(hooks.callback);
      try {
        error = core.run(ids.length, ask);
      } finally {
        core.setHookCallback(undefined);  // the callback's closure is not kept past the run
      }
    }
    if (hooks?.state.error) throw hooks.state.error;
    if (error) fail(error);
    const n = ids.length, nk = core.resultKeys();
    // The core returns a contiguous range of heads; keep only the ones asked for.
    const computed = core.view('attentions'), rows = n * nk;
    const attentions = target(into.attentions, selection.layers.length * selection.heads.length * rows, 'attentions');
    if (headSpan === selection.heads.length) {
      attentions.set(computed);
    } else {
      selection.layers.forEach((_, li) => selection.heads.forEach((h, hi) => {
        const from = (li * headSpan + (h - firstHead)) * rows;
        attentions.set(computed.subarray(from, from + rows), (li * selection.heads.length + hi) * rows);
      }));
    }
    const hasLogits = logits && this.config.hasLmHead;
    const out = {
      n,
      logits: hasLogits && copyLogits ? copied(core.view('logits'), into.logits, 'logits') : null,
      logitRows: Array.isArray(logits) ? [...logits] : null,
      attentions,
      attentionShape: [selection.layers.length, selection.heads.length, n, nk],
      attentionLayers: selection.layers,
      attentionHeads: selection.heads,
    };
    if (reusePrefix) out.reusedTokens = core.reusedTokens();
    if (hooks?.captured.size) {
      out.activations = {};
      for (const [id, name] of hooks.captured) out.activations[name] = { data: core.captured(id).slice(), shape: core.capturedShape(id) };
    }
    if (lastHiddenState) out.lastHiddenState = core.view('lastHiddenState').slice();
    if (hiddenStates) out.hiddenStates = core.view('hiddenStates').slice();
    if (valueNorms) out.valueNorms = core.view('valueNorms').slice();
    if (rollout) {
      const rolloutError = core.rollout();
      if (rolloutError) fail(rolloutError);
      out.rollout = core.view('rollout').slice();
    }
    return out;
  }

  /**
   * Runs the model over token ids (1 … config.maxPositions of them).
   * @returns {RunResult}
   *   logits n × vocab, or rows × vocab for logits: [rows] (null without an LM head); attentions layers × heads × n × n (the selected ones);
   *   lastHiddenState n × dModel; hiddenStates (layers + 1) × n × dModel, as transformers'
   *   hidden_states; valueNorms layers × heads × n: ‖v_j W_O^h‖ (value-weighted attention);
   *   rollout n × n: attention rollout across layers (Abnar & Zuidema 2020; heads averaged, residual ½).
   *   reusePrefix (causal models): for a text run again after an edit, as a page does while the user
   *   types: the tokens this run shares from the start with the previous reusePrefix run (same
   *   attentions and disabledHeads) are not computed again; their keys and values come from the key/value cache and
   *   their attention rows from that run (a causal row depends only on the tokens up to it), so the
   *   results are those of a full run. reusedTokens says how many were taken. Bidirectional models
   *   run in full; generate() in between starts it over.
   *   capture: hook names or patterns ('blocks.*.hook_resid_post'; model.hookNames() lists them):
   *   the result's activations[name] = { data: Float32Array, shape }. intervene: { [name or pattern]:
   *   (activation) => change activation.data in place, or { positions?, heads?, values } } — the
   *   run goes on from the changed values (docs/hooks.md).
   */
  run(ids, options) {
    if (this.config.imageSize > 0) return this.#runImage(ids, options);
    const { tokenTypeIds, attentions = true, lastHiddenState = false, hiddenStates = false, valueNorms = false, disabledHeads = [],
      logits = true, rollout = false, reusePrefix = false, capture, intervene, into } = optionsOf(options, 'run');
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('run needs at least one token id');
    if (rollout && attentions !== true) fail('rollout needs every head of every layer: leave attentions at true');
    if (reusePrefix && (lastHiddenState || hiddenStates)) {
      fail('reusePrefix does not recompute the shared tokens, so it cannot return their hidden states: leave lastHiddenState and hiddenStates off');
    }
    if (reusePrefix && logits === true && this.config.causal && this.config.hasLmHead) {
      fail('reusePrefix needs the rows logits are asked for (logits: [rows] or false): logits for every row would recompute every token');
    }
    if (into !== undefined && (into === null || typeof into !== 'object')) fail(`into must be { attentions?, logits? } (Float32Arrays to fill), got ${describe(into)}`);
    return this.#run(core, ids, { tokenTypeIds, logits, selection: this.#selection(attentions), lastHiddenState,
      hiddenStates, valueNorms, disabledHeads, rollout, reusePrefix, capture, intervene, into });
  }

  /**
   * An image model's run over pixel values (model.preprocess(image) makes them): attentions over
   * T = prefixTokens + rows · cols rows (the CLS token, DeiT's distillation token, then the patches
   * row by row); logits (a classifier: one score per label, from the CLS row, or DeiT's mean of its
   * two heads); lastHiddenState T × dModel (by default where there is no classifier); hiddenStates
   * (layers + 1) × T × dModel.
   */
  #runImage(pixelValues, options) {
    const { height, width, attentions = true, logits = true, lastHiddenState = !this.config.hasLmHead, hiddenStates = false,
      valueNorms = false, disabledHeads = [], rollout = false, capture, intervene, into, ...rest } = optionsOf(options, 'run');
    const core = this.#live();
    const { patchSize: P, channels, prefixTokens } = this.config;
    const unknown = Object.keys(rest);
    if (unknown.length) fail(`run() of an image model does not take ${unknown.join(', ')} (those are for token ids); it takes height, width, attentions, logits, lastHiddenState, hiddenStates, valueNorms, disabledHeads, rollout, capture, intervene, into`);
    if (!(pixelValues instanceof Float32Array)) {
      fail(`an image model's run() takes pixel values, a Float32Array of ${channels} × height × width (model.preprocess(image) makes them), got ${describe(pixelValues)}`);
    }
    for (const [name, v] of [['height', height], ['width', width]]) {
      if (!Number.isInteger(v) || v < P || v > 16384) fail(`run() needs the image's ${name}, a whole number from the patch size ${P} to 16384, got ${describe(v)}`);
    }
    if (pixelValues.length !== channels * height * width) {
      fail(`pixelValues has ${pixelValues.length} values, but ${channels} × ${height} × ${width} = ${channels * height * width}`);
    }
    const bad = pixelValues.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) fail(`pixel value ${bad} is ${pixelValues[bad]}: pixel values must be finite numbers`);
    const n = prefixTokens + Math.floor(height / P) * Math.floor(width / P);
    if (n > 16384) fail(`an image of ${height} × ${width} makes ${n - prefixTokens} patches; at most ${16384 - prefixTokens} fit a run: pass a smaller image`);
    if (rollout && attentions !== true) fail('rollout needs every head of every layer: leave attentions at true');
    if (into !== undefined && (into === null || typeof into !== 'object')) fail(`into must be { attentions?, logits? } (Float32Arrays to fill), got ${describe(into)}`);
    // The classifier's rows: the CLS row, and with DeiT's teacher head the distillation row (the
    // core averages the two heads into one row of logits).
    const rows = this.config.distillationHead ? [0, 1] : [0];
    const out = this.#run(core, new Int32Array(n), { logits: logits && this.config.hasLmHead ? rows : false, selection: this.#selection(attentions),
      lastHiddenState, hiddenStates, valueNorms, disabledHeads, rollout, capture, intervene, into, image: { pixelValues, height, width } });
    out.logitRows = null;
    out.patchGrid = { rows: Math.floor(height / P), cols: Math.floor(width / P) };
    return out;
  }

  // The interpretability methods read token ids and an output head over a vocabulary.
  #textOnly(method) {
    if (this.config.imageSize > 0) {
      fail(`${method}() is for text models: it takes token ids, and this ${this.config.modelType} image model reads pixels ` +
        '(run(pixelValues, { height, width }) gives its attentions, hidden states and logits)');
    }
  }

  // Fills the core's ids (and token types, if given) for n = ids.length tokens.
  #inputs(core, ids, tokenTypeIds) {
    core.prepare(ids.length);
    core.view('ids').set(ids);
    if (tokenTypeIds === undefined || tokenTypeIds === null) return false;
    if (!(tokenTypeIds instanceof Int32Array || Array.isArray(tokenTypeIds)) || tokenTypeIds.length !== ids.length) {
      fail(`tokenTypeIds must have one entry per token id (${ids.length}), got ${tokenTypeIds?.length ?? typeof tokenTypeIds}`);
    }
    if (Array.from(tokenTypeIds).some((t) => !Number.isInteger(t))) fail('tokenTypeIds must be integers');
    core.view('types').set(tokenTypeIds);
    return true;
  }

  #tokenId(id, what) {
    if (!Number.isInteger(id) || id < 0 || id >= this.config.vocabSize) {
      fail(`${what} must be a token id from 0 to ${this.config.vocabSize - 1}, got ${describe(id)}`);
    }
    return id;
  }

  /**
   * The logit lens: what each residual stream would predict if the model stopped there. For each
   * of layers + 1 streams (0 = the embeddings, then after each layer; the last is the model's own
   * output) and each position, the model's own final norm and output head (softcapping included)
   * over that stream: the topK next tokens with their probabilities, and each of `targets` with its
   * probability and rank (0 = the top token). An encoder's MLM head reads each layer's output.
   * attribute: { position, target, contrast } adds the attribute() of that position, from the
   * same forward pass (decoders).
   * @returns {{ shape: number[], positions: number[], ids: Int32Array, probabilities: Float32Array,
   *   targets: { ids: Int32Array, probabilities: Float32Array, ranks: Int32Array } | null }}
   *   ids and probabilities: streams × positions × topK; targets': streams × positions × targets.
   */
  logitLens(ids, options) {
    this.#textOnly('logitLens');
    const { topK = 5, positions, targets = [], tokenTypeIds, attribute } = optionsOf(options, 'logitLens');
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('logitLens needs at least one token id');
    if (!Number.isInteger(topK) || topK < 1 || topK > 1000) fail(`topK must be a whole number from 1 to 1000, got ${describe(topK)}`);
    const rows = positions === undefined ? Array.from(ids, (_, i) => i) : positions;
    if (!Array.isArray(rows) || rows.length === 0 || rows.some((p) => !Number.isInteger(p) || p < 0 || p >= ids.length)) {
      fail(`positions must be a non-empty list of token positions from 0 to ${ids.length - 1}`);
    }
    if (!Array.isArray(targets)) fail('targets must be a list of token ids');
    // Each target is a float per stream and position, and a rank counted over the vocabulary.
    if (targets.length > MAX_LENS_TARGETS) fail(`logitLens takes at most ${MAX_LENS_TARGETS} targets, got ${targets.length}: ask for the tokens you will show`);
    targets.forEach((t) => this.#tokenId(t, 'each target'));
    const types = this.#inputs(core, ids, tokenTypeIds);
    core.logitRows(rows.length);
    core.view('logitRows').set(rows);
    core.targets(targets.length);
    core.view('targets').set(targets);
    // With attribute: { position, target, contrast }, the attribution there comes from the same run.
    let ask = null;
    if (attribute !== undefined) {
      if (!this.config.causal) fail(`direct logit attribution needs a decoder: a ${this.config.modelType} encoder normalises after every layer, so no residual stream reaches its output whole`);
      const { position = ids.length - 1, target, contrast = null } = attribute ?? {};
      if (!Number.isInteger(position) || position < 0 || position >= ids.length) fail(`attribute.position must be a token position from 0 to ${ids.length - 1}`);
      ask = { position, target: this.#tokenId(target, 'attribute.target'), contrast: contrast === null ? -1 : this.#tokenId(contrast, 'attribute.contrast') };
    }
    const error = core.logitLens(ids.length, topK, types, ask ? ask.position : -1, ask?.target ?? 0, ask?.contrast ?? -1);
    if (error) fail(error);
    const k = Math.min(topK, this.config.vocabSize);
    return {
      ...(ask ? { attribution: this.#attribution(core, ask.position, ask.target, ask.contrast === -1 ? null : ask.contrast) } : {}),
      shape: [this.config.layers + 1, rows.length, k],
      ...lensArrays(core, rows, targets),
    };
  }

  /**
   * Direct logit attribution at `position` (default: the last): how much the embeddings, each
   * layer × head, each MLP and the biases write into the residual stream in the direction of
   * logit(target) − logit(contrast) (no contrast: logit(target)), through the final norm frozen
   * at this residual (centred for LayerNorm, ÷ σ or rms, × its weight). The parts sum to the logit
   * difference before softcapping less normBias (the final norm's bias and the output bias).
   * target defaults to the model's top prediction there. Decoders only.
   * @returns {{ position: number, target: number, contrast: number | null, embeddings: number,
   *   heads: Float64Array, headsShape: number[], mlps: Float64Array, biases: number,
   *   biasesByLayer: Float64Array, total: number, normBias: number, logitDifference: number }}
   *   biases: every layer's attention output and MLP biases (biasesByLayer: each layer's).
   */
  attribute(ids, options) {
    this.#textOnly('attribute');
    const { position = ids?.length - 1, target: asked, contrast = null, disabledHeads: off } = optionsOf(options, 'attribute');
    let target = asked;
    const disabledHeads = off ?? [];
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('attribute needs at least one token id');
    if (!this.config.causal) fail(`direct logit attribution needs a decoder: a ${this.config.modelType} encoder normalises after every layer, so no residual stream reaches its output whole`);
    if (!Number.isInteger(position) || position < 0 || position >= ids.length) {
      fail(`position must be a token position from 0 to ${ids.length - 1}, got ${describe(position)}`);
    }
    if (target === undefined) {
      const logits = this.run(ids, { attentions: false, logits: [position] }).logits;
      target = 0;  // the top prediction (a loop: a 150k-word vocabulary is past a call's arguments)
      for (let v = 1; v < logits.length; v += 1) if (logits[v] > logits[target]) target = v;
    }
    this.#tokenId(target, 'target');
    if (contrast !== null) this.#tokenId(contrast, 'contrast');
    this.#inputs(core, ids);
    if (disabledHeads.length) switchOffHeads(core.view('disabledHeads'), disabledHeads, this.config.layers, this.config.heads, 1);
    const error = core.attribute(ids.length, position, target, contrast ?? -1, disabledHeads.length > 0);
    if (error) fail(error);
    return this.#attribution(core, position, target, contrast);
  }

  #attribution(core, position, target, contrast) {
    return {
      position, target, contrast, ...core.attribution(),
      heads: core.view('attributionHeads').slice(), headsShape: [this.config.layers, this.config.heads],
      mlps: core.view('attributionMlps').slice(), biasesByLayer: core.view('attributionLayerBiases').slice(),
    };
  }

  /**
   * Activation patching: runs `corruptIds` with one activation taken from a run of `cleanIds` (the
   * same length) and reports how much of the logit difference logit(target) − logit(contrast) at
   * the last position comes back: (patched − corrupt) / (clean − corrupt). what: 'heads' (a head's
   * output before W_O at every position: layers × heads), 'residual' (the residual entering a
   * layer at one position: layers × positions) or 'mlps' (an MLP's output at every position:
   * layers). Each patched run recomputes only from the patched layer on. onProgress({ done, total,
   * recovered }) after each step (recovered so far: NaN where not yet patched); signal cancels
   * (the model still works). Decoders only.
   * @returns {Promise<{ what: string, shape: number[], recovered: Float32Array, clean: number, corrupt: number }>}
   */
  async patch(cleanIds, corruptIds, options) {
    this.#textOnly('patch');
    const { target, contrast = null, what = 'heads', onProgress, signal } = optionsOf(options, 'patch');
    const core = this.#live();
    this.#checkIds(cleanIds);
    this.#checkIds(corruptIds);
    const n = cleanIds.length;
    if (n === 0) fail('patch needs at least one token id');
    if (corruptIds.length !== n) {
      fail(`the clean and corrupted prompts must have the same number of tokens to patch position by position: ${n} and ${corruptIds.length}`);
    }
    if (!this.config.causal) fail(`activation patching needs a decoder; a ${this.config.modelType} encoder is not one`);
    const kinds = { heads: 0, residual: 1, mlps: 2 };
    if (typeof what !== 'string' || !Object.hasOwn(kinds, what)) fail(`what must be 'heads', 'residual' or 'mlps', got ${describe(what)}`);
    if (onProgress !== undefined && typeof onProgress !== 'function') fail(`onProgress must be a function, got ${describe(onProgress)}`);
    if (signal?.aborted) throw abortError('patching');
    this.#tokenId(target, 'target');
    if (contrast !== null) this.#tokenId(contrast, 'contrast');
    if (this.#patching) fail('a patch() is already running in this context: wait for it, cancel it, or use another context (model.createContext())');
    this.#patching = true;
    try {
      this.#inputs(core, cleanIds);
      core.view('corruptIds').set(corruptIds);
      let error = core.patchPrepare(n, target, contrast ?? -1);
      if (error) fail(error);
      const { clean, corrupt } = core.patchDifferences();
      if (!(Math.abs(clean - corrupt) > 1e-6 * Math.max(1, Math.abs(clean)))) {
        fail(`the two prompts give the same logit difference (${clean.toFixed(4)}): there is nothing to recover; change the corrupted prompt`);
      }
      const { layers, heads } = this.config;
      const width = what === 'heads' ? heads : what === 'residual' ? n : 1;
      const shape = what === 'mlps' ? [layers] : [layers, width];
      const recovered = new Float32Array(layers * width).fill(NaN);
      let last = performance.now();
      for (let i = 0; i < recovered.length; i += 1) {
        if (signal?.aborted) throw abortError('patching');
        const layer = Math.floor(i / width), index = i % width;
        const live = this.#live();  // dispose() may have come between two steps
        const patched = live.patch(kinds[what], layer, index);
        if (Number.isNaN(patched)) fail(live.error());
        recovered[i] = (patched - corrupt) / (clean - corrupt);
        if (i === 0 || performance.now() - last > 30 || i + 1 === recovered.length) {  // let a page draw what is done
          onProgress?.({ done: i + 1, total: recovered.length, recovered });
          await nextTurn();
          last = performance.now();
        }
      }
      return { what, shape, recovered, clean, corrupt };
    } finally {
      this.#patching = false;
    }
  }

  /**
   * Token contributions (Kobayashi et al. 2021, attention and residual): for each layer, how much
   * each token's row contributes to each position's row after the attention block and its
   * residual connection: ‖Σ_h A_h[i, j] v_j W_O^h + [i = j] x_i‖, normalised over j.
   * @returns {{ contributions: Float32Array, shape: number[] }} layers × n × n
   */
  contributions(ids, options) {
    this.#textOnly('contributions');
    const { tokenTypeIds } = optionsOf(options, 'contributions');
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('contributions needs at least one token id');
    const types = this.#inputs(core, ids, tokenTypeIds);
    const error = core.contributions(ids.length, types);
    if (error) fail(error);
    return { contributions: core.view('contributions').slice(), shape: [this.config.layers, ids.length, ids.length] };
  }

  /**
   * Generates tokens after `ids` with a key/value cache, one at a time: greedy when temperature is
   * 0 (the default), else sampled (top-k when topK > 0) from a seeded generator. Each step yields
   * the token and the attention row of the query that produced it, layers × heads × n (n = the
   * tokens before it). Stops after maxNewTokens, at the model's end-of-text token, or on signal.
   * @returns {AsyncGenerator<{ id: number, text: string | null, position: number, attentions: Float32Array, attentionShape: number[] }>}
   */
  async* generate(ids, options) {
    this.#textOnly('generate');
    const { maxNewTokens = 20, temperature = 0, topK = 0, seed = 0, signal, stopAtEos = true } = optionsOf(options, 'generate');
    const core = this.#live();
    if (!this.config.causal || !this.config.hasLmHead) fail(`generate needs a causal language model; this ${this.config.modelType} checkpoint is not one`);
    this.#checkIds(ids);
    if (ids.length === 0) fail('generate needs at least one token id to start from');
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) fail(`maxNewTokens must be a whole number ≥ 1, got ${maxNewTokens}`);
    if (!(Number.isFinite(temperature) && temperature >= 0)) fail(`temperature must be a number ≥ 0, got ${describe(temperature)}`);
    if (!Number.isInteger(topK) || topK < 0 || topK > this.config.vocabSize) {
      fail(`topK must be a whole number from 0 (every token) to the vocabulary's ${this.config.vocabSize}, got ${describe(topK)}`);
    }
    if (!Number.isSafeInteger(seed) || seed < 0) fail(`seed must be a whole number ≥ 0, got ${describe(seed)}`);
    if (signal?.aborted) throw abortError('generation');
    const room = Math.min(this.config.maxPositions, 16384);
    if (ids.length >= room) fail(`the prompt has ${ids.length} tokens; this model reads at most ${room}`);
    const steps = Math.min(maxNewTokens, room - ids.length);
    core.resetCache(ids.length + steps);
    core.seed(seed);
    const selection = this.#selection(true);
    const all = Array.from(ids);
    const textOf = this.tokenizer ? streamingDecoder((list) => this.tokenizer.decode(list), ids) : null;
    const { layers: L, heads: H } = this.config;
    const clock = turnClock();
    let id = -1;
    for (let step = 0; step < steps; step += 1) {
      if (signal?.aborted) throw abortError('generation');
      const live = this.#live();  // dispose() may have come between two tokens
      let rows;
      if (step === 0) {  // the prompt: every query's row computed, the last one's kept
        const result = this.#run(live, Int32Array.from(ids), { logits: [ids.length - 1], selection, cache: true, copyLogits: false });
        const n = ids.length, nk = result.attentionShape[3];
        rows = new Float32Array(L * H * nk);
        for (let i = 0; i < L * H; i += 1) rows.set(result.attentions.subarray((i * n + n - 1) * nk, (i * n + n) * nk), i * nk);
        id = live.sample(temperature, topK);
      } else {  // one query after the cached ones: its rows are the whole result
        id = live.generateStep(id, temperature, topK);
        if (id < 0) fail(live.error());
        rows = live.attentionRows().slice();
      }
      all.push(id);
      const text = textOf ? textOf(id) : null;
      yield { id, text, position: all.length - 1, attentions: rows, attentionShape: [L, H, rows.length / (L * H)] };
      if (stopAtEos && this.#eos.has(id)) return;
      // Let a page draw (and a worker hear "stop") every few milliseconds, without a timer's wait.
      if (clock.due()) await clock.turn();
    }
  }

  /** Frees this context's wasm memory (caches, scratch) now; the model stays. */
  dispose() {
    if (!this.#core) return;
    release(this, this.#core);
    this.#core = null;
    this.#onDispose?.(this);
  }
}

// multihead: the JavaScript API over pretrained checkpoints (bindings/embind_pretrained.cpp).
// Reading config.json, checking the safetensors headers, the forward pass and sampling are C++;
// this file finds the files, streams their bytes into the wasm heap a chunk at a time, runs the
// tokenizer (bindings/tokenizers/) and copies results out.
import { checkTokenIds, describe, fail, switchOffHeads } from './checks.mjs';
import { nextTurn } from './environment.mjs';
import { openSource, throwIfAborted } from './pretrained-sources.mjs';
import { release, track } from './registry.mjs';
import { loadMultihead } from './runtime.mjs';
import { loadTokenizer } from './tokenizers/tokenizer.mjs';

// The safetensors files of a checkpoint: model.safetensors, or else the shards its index lists.
// Asked in that order, and the tokenizer files below only as needed, so that a URL source asks the
// server for no file a typical checkpoint lacks (each miss is a 404 in the browser's console).
async function weightFiles(source) {
  if ((await source.size('model.safetensors')) > 0) return ['model.safetensors'];
  const index = await source.text('model.safetensors.index.json');
  if (index === null) return [];
  let parsed;
  try { parsed = JSON.parse(index); } catch (error) { fail(`model.safetensors.index.json is not valid JSON (${error.message})`); }
  const map = parsed?.weight_map;
  if (!map || typeof map !== 'object') fail('model.safetensors.index.json has no weight_map');
  const files = [...new Set(Object.values(map))];
  if (!files.length || files.some((f) => typeof f !== 'string' || !f.endsWith('.safetensors') || f.includes('/') || f.includes('..'))) {
    fail('model.safetensors.index.json names shard files that are not plain .safetensors file names');
  }
  return files;
}

/**
 * Loads a Hugging Face checkpoint: config.json, model.safetensors (or its shards and their
 * index), and the tokenizer files when present (tokenizer.json; or vocab.json + merges.txt; or
 * vocab.txt). Supported: model_type gpt2, bert, llama, qwen2, mistral; weights F32, F16, BF16.
 *
 * @param {string | URL | File[] | FileList | Map<string, Blob | ArrayBuffer | Uint8Array> | Record<string, Blob | ArrayBuffer | Uint8Array>} source
 *   a hub id ("gpt2", "Qwen/Qwen2.5-0.5B"), a folder path (Node), a base URL whose files are
 *   fetched (e.g. https://…/resolve/main/, or "./models/x/" on a page's own site), or the files
 * @param {{ onProgress?: (p: { loaded: number, total: number, file: string }) => void, signal?: AbortSignal,
 *   weightType?: 'f16' | 'bf16', revision?: string, hub?: string }} [options]  weightType: keep the
 *   weight matrices at 2 bytes (rounded to nearest) instead of as stored, halving what a float32
 *   checkpoint needs; revision: a hub id's branch, tag or commit (default main); hub: another
 *   server with the hub's layout (default https://huggingface.co)
 * @returns {Promise<PretrainedModel>}
 */
export async function loadPretrained(source, { onProgress, signal, weightType, revision, hub } = {}) {
  throwIfAborted(signal);
  const storage = [undefined, 'f16', 'bf16'].indexOf(weightType);
  if (storage < 0) fail(`weightType must be 'f16' or 'bf16' (or left out to keep the checkpoint's own), got ${JSON.stringify(weightType)}`);
  const files = await openSource(source, signal, { revision, hub });
  const configText = await files.text('config.json');
  if (configText === null && files.hubId) {
    fail(`no config.json for the hub model "${files.hubId}" ${files.describe()}: check the id and revision ` +
      '(private and gated models cannot be read here)');
  }
  if (configText === null) {
    fail(`no config.json ${files.describe()}: a checkpoint folder needs config.json and model.safetensors ` +
      '(Hugging Face layout); pick the folder that holds them');
  }
  const core = await loadMultihead();
  const model = new core.PretrainedCore();
  try {
    const configError = model.setConfig(configText);
    if (configError) fail(configError);
    const shards = await weightFiles(files);
    if (!shards.length && (await files.size('pytorch_model.bin')) > 0) {
      fail('this checkpoint has only pytorch_model.bin: multihead reads safetensors weights (model.safetensors); ' +
        'most hub models have both — pick the safetensors files');
    }
    if (!shards.length) fail(`no model.safetensors ${files.describe()}: only safetensors weights can be read (not .bin or .gguf)`);
    // Headers first, so that the whole checkpoint is checked and counted before a weight is read.
    let total = 0;
    const indices = [];
    for (const name of shards) {
      const size = await files.size(name);
      const first = await files.head(name, 8);
      if (first.length === 0) {
        fail(`no ${name} ${files.describe()}: the weights must be safetensors files (not .bin or .gguf)` +
          (shards.length > 1 ? ', and every shard the index names must be there' : ''));
      }
      if (first.length < 8) fail(`${name} is shorter than a safetensors header (8 bytes): it is corrupt or truncated`);
      const n = Number(new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true));
      if (!(n >= 2 && n <= 100 * 2 ** 20)) fail(`${name}: its header length (${n} bytes) is absurd: this is not a safetensors file, or it is corrupt`);
      if (size && n > size - 8) fail(`${name}: its header says ${n} bytes but the file has ${size}: the file is truncated`);
      const header = (await files.head(name, 8 + n)).subarray(8);
      if (header.length < n) fail(`${name} ends inside its header: the file is truncated`);
      model.stage(n);
      model.view('stage').set(header);
      const index = model.addShard(name, n, size);
      if (index < 0) fail(model.error());
      indices.push(index);
      total += model.shardBytes(index);
    }
    const planError = model.plan(storage);
    if (planError) fail(planError);
    // Then the bytes, streamed through one reused chunk of the heap.
    let loaded = 0;
    for (let i = 0; i < shards.length; i += 1) {
      const expected = model.shardBytes(indices[i]);
      const got = await files.read(shards[i], (chunk) => {
        model.stage(chunk.length);
        model.view('stage').set(chunk);
        const error = model.feed(indices[i], chunk.length);
        if (error) fail(error);
        loaded += chunk.length;
        onProgress?.({ loaded, total, file: shards[i] });
      });
      if (got < expected) fail(`${shards[i]} ended after ${got} of its ${expected} bytes: the file is truncated (download it again)`);
    }
    const finishError = model.finish();
    if (finishError) fail(finishError);
    const tokenizer = await readTokenizer(files, model.modelType());
    const config = JSON.parse(configText);
    return new PretrainedModel(model, tokenizer, config);
  } catch (error) {
    model.delete();  // everything the loader allocated goes with it
    throw error;
  }
}

async function readTokenizer(files, modelType) {
  const configText = await files.text('tokenizer_config.json');
  let tokenizerConfig = {};
  if (configText !== null) {
    try { tokenizerConfig = JSON.parse(configText); } catch (error) { fail(`tokenizer_config.json is not valid JSON (${error.message})`); }
  }
  const tokenizerJson = await files.text('tokenizer.json');
  if (tokenizerJson !== null) return loadTokenizer({ tokenizerJson, tokenizerConfig, modelType });
  const vocabJson = await files.text('vocab.json');
  const mergesTxt = vocabJson === null ? null : await files.text('merges.txt');
  if (vocabJson !== null && mergesTxt !== null) return loadTokenizer({ vocabJson, mergesTxt, tokenizerConfig, modelType });
  const vocabTxt = await files.text('vocab.txt');
  return vocabTxt === null ? null : loadTokenizer({ vocabTxt, tokenizerConfig, modelType });
}

export class PretrainedModel {
  #core;
  #eos;
  #patching = false;

  /** @private Use loadPretrained(). */
  constructor(core, tokenizer, hfConfig) {
    this.#core = core;
    const shape = core.config();
    Object.freeze(shape.slidingLayers);
    this.config = Object.freeze({
      architecture: core.modelType(),
      ...shape,
      parameterCount: core.parameterCount(),
      weightBytes: core.weightBytes(),
      weightType: core.matrixType(),
    });
    /** The tokenizer, or null when the checkpoint brought no tokenizer files (run() then takes ids). */
    this.tokenizer = tokenizer;
    const eos = hfConfig?.eos_token_id;
    this.#eos = new Set((Array.isArray(eos) ? eos : [eos]).filter(Number.isInteger));
    track(this, core);
  }

  #live() {
    if (!this.#core) fail('this model was disposed; load it again with loadPretrained()');
    return this.#core;
  }

  /**
   * Text → token ids as the model's own tokenizer makes them (special tokens such as [CLS] … [SEP]
   * or <s> included). A second text makes a pair (BERT: token types 0 and 1).
   */
  tokenize(text, textPair = undefined) {
    this.#live();
    if (!this.tokenizer) fail('this checkpoint came without tokenizer files (tokenizer.json, vocab.json + merges.txt, or vocab.txt): pass token ids to run()');
    const { ids, tokenTypeIds, tokens, offsets, special } = this.tokenizer.encode(text, textPair);
    return { ids, tokenTypeIds, tokens, offsets, special };
  }

  /** Token ids → text, without special tokens. */
  decode(ids) {
    if (!this.tokenizer) fail('this checkpoint came without tokenizer files: there is no vocabulary to decode with');
    return this.tokenizer.decode(Array.from(ids));
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
  #run(core, ids, { tokenTypeIds, logits = true, selection, lastHiddenState, hiddenStates, valueNorms, disabledHeads, cache, rollout, reusePrefix, contributions }) {
    const { layers, heads } = this.config;
    const tokenTypes = this.#inputs(core, ids, tokenTypeIds);
    // Without lastHiddenState the core computes the last layer's MLP for the logits' rows only.
    const ask = { logits: Boolean(logits), logitRows: false, tokenTypes, hiddenStates: Boolean(hiddenStates),
      lastHidden: Boolean(lastHiddenState), valueNorms: Boolean(valueNorms), headSwitches: false,
      cache: Boolean(cache), reusePrefix: Boolean(reusePrefix), contributions: Boolean(contributions), firstHead: 0, heads: 0 };
    if (Array.isArray(logits)) {
      if (logits.some((row) => !Number.isInteger(row) || row < 0 || row >= ids.length)) {
        fail(`logits rows must be token positions from 0 to ${ids.length - 1}, got ${JSON.stringify(logits)}`);
      }
      core.logitRows(logits.length);
      core.view('logitRows').set(logits);
      ask.logitRows = true;
    }
    if (disabledHeads?.length) {
      switchOffHeads(core.view('headEnabled'), disabledHeads, layers, heads);
      ask.headSwitches = true;
    }
    const layerFlags = core.view('attentionLayers');
    for (const l of selection.layers) layerFlags[l] = 1;
    const firstHead = selection.heads.length ? selection.heads[0] : 0;
    const headSpan = selection.heads.length ? selection.heads[selection.heads.length - 1] - firstHead + 1 : 0;
    ask.firstHead = firstHead;
    ask.heads = headSpan;
    const error = core.run(ids.length, ask);
    if (error) fail(error);
    const n = ids.length, nk = core.resultKeys();
    // The core returns a contiguous range of heads; keep only the ones asked for.
    let attentions = core.view('attentions').slice();
    if (headSpan !== selection.heads.length) {
      const rows = n * nk, picked = new Float32Array(selection.layers.length * selection.heads.length * rows);
      selection.layers.forEach((_, li) => selection.heads.forEach((h, hi) => {
        const from = (li * headSpan + (h - firstHead)) * rows;
        picked.set(attentions.subarray(from, from + rows), (li * selection.heads.length + hi) * rows);
      }));
      attentions = picked;
    }
    const out = {
      n,
      logits: logits && this.config.hasLmHead ? core.view('logits').slice() : null,
      logitRows: Array.isArray(logits) ? [...logits] : null,
      attentions,
      attentionShape: [selection.layers.length, selection.heads.length, n, nk],
      attentionLayers: selection.layers,
      attentionHeads: selection.heads,
    };
    if (reusePrefix) out.reusedTokens = core.reusedTokens();
    if (lastHiddenState) out.lastHiddenState = core.view('lastHidden').slice();
    if (hiddenStates) out.hiddenStates = core.view('hiddenStates').slice();
    if (valueNorms) out.valueNorms = core.view('valueNorms').slice();
    if (contributions) out.contributions = core.view('contributions').slice();
    if (rollout) {
      const rolloutError = core.rollout();
      if (rolloutError) fail(rolloutError);
      out.rollout = core.view('rollout').slice();
    }
    return out;
  }

  /**
   * Runs the model over token ids (1 … config.maxPositions of them).
   * @returns {{ n: number, logits: Float32Array | null, attentions: Float32Array, attentionShape: number[],
   *   lastHiddenState?: Float32Array, hiddenStates?: Float32Array, valueNorms?: Float32Array }}
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
   */
  run(ids, { tokenTypeIds, attentions = true, lastHiddenState = false, hiddenStates = false, valueNorms = false, disabledHeads = [], logits = true, rollout = false, reusePrefix = false } = {}) {
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
    return this.#run(core, ids, { tokenTypeIds, logits, selection: this.#selection(attentions), lastHiddenState,
      hiddenStates, valueNorms, disabledHeads, rollout, reusePrefix });
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
  logitLens(ids, { topK = 5, positions, targets = [], tokenTypeIds, attribute } = {}) {
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('logitLens needs at least one token id');
    if (!Number.isInteger(topK) || topK < 1 || topK > 1000) fail(`topK must be a whole number from 1 to 1000, got ${describe(topK)}`);
    const rows = positions === undefined ? Array.from(ids, (_, i) => i) : positions;
    if (!Array.isArray(rows) || rows.length === 0 || rows.some((p) => !Number.isInteger(p) || p < 0 || p >= ids.length)) {
      fail(`positions must be a non-empty list of token positions from 0 to ${ids.length - 1}`);
    }
    if (!Array.isArray(targets)) fail('targets must be a list of token ids');
    targets.forEach((t) => this.#tokenId(t, 'each target'));
    const types = this.#inputs(core, ids, tokenTypeIds);
    core.logitRows(rows.length);
    core.view('logitRows').set(rows);
    core.targets(targets.length);
    core.view('targets').set(targets);
    // With attribute: { position, target, contrast }, the attribution there comes from the same run.
    let ask = null;
    if (attribute !== undefined) {
      if (!this.config.causal) fail(`direct logit attribution needs a decoder: a ${this.config.architecture} encoder normalises after every layer, so no residual stream reaches its output whole`);
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
      positions: [...rows],
      ids: core.view('lensIds').slice(),
      probabilities: core.view('lensProbabilities').slice(),
      targets: targets.length ? {
        ids: Int32Array.from(targets), probabilities: core.view('lensTargetProbabilities').slice(),
        ranks: core.view('lensTargetRanks').slice(),
      } : null,
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
  attribute(ids, { position = ids?.length - 1, target, contrast = null, disabledHeads = [] } = {}) {
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('attribute needs at least one token id');
    if (!this.config.causal) fail(`direct logit attribution needs a decoder: a ${this.config.architecture} encoder normalises after every layer, so no residual stream reaches its output whole`);
    if (!Number.isInteger(position) || position < 0 || position >= ids.length) {
      fail(`position must be a token position from 0 to ${ids.length - 1}, got ${describe(position)}`);
    }
    if (target === undefined) {
      const logits = this.run(ids, { attentions: false, logits: [position] }).logits;
      target = logits.indexOf(Math.max(...logits));
    }
    this.#tokenId(target, 'target');
    if (contrast !== null) this.#tokenId(contrast, 'contrast');
    this.#inputs(core, ids);
    if (disabledHeads.length) switchOffHeads(core.view('headEnabled'), disabledHeads, this.config.layers, this.config.heads);
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
  async patch(cleanIds, corruptIds, { target, contrast = null, what = 'heads', onProgress, signal } = {}) {
    const core = this.#live();
    this.#checkIds(cleanIds);
    this.#checkIds(corruptIds);
    const n = cleanIds.length;
    if (n === 0) fail('patch needs at least one token id');
    if (corruptIds.length !== n) {
      fail(`the clean and corrupted prompts must have the same number of tokens to patch position by position: ${n} and ${corruptIds.length}`);
    }
    if (!this.config.causal) fail(`activation patching needs a decoder; a ${this.config.architecture} encoder is not one`);
    const kinds = { heads: 0, residual: 1, mlps: 2 };
    if (!(what in kinds)) fail(`what must be 'heads', 'residual' or 'mlps', got ${describe(what)}`);
    this.#tokenId(target, 'target');
    if (contrast !== null) this.#tokenId(contrast, 'contrast');
    if (this.#patching) fail('a patch() is already running on this model: wait for it or cancel it');
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
        if (signal?.aborted) throw Object.assign(new Error('multihead: patching was cancelled'), { name: 'AbortError' });
        const layer = Math.floor(i / width), index = i % width;
        const patched = core.patch(kinds[what], layer, index);
        if (Number.isNaN(patched)) fail(core.error());
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
  contributions(ids, { tokenTypeIds } = {}) {
    const core = this.#live();
    this.#checkIds(ids);
    if (ids.length === 0) fail('contributions needs at least one token id');
    const out = this.#run(core, ids, { tokenTypeIds, logits: false, selection: this.#selection(true), contributions: true });
    return { contributions: out.contributions, shape: [this.config.layers, ids.length, ids.length] };
  }

  /**
   * Generates tokens after `ids` with a key/value cache, one at a time: greedy when temperature is
   * 0 (the default), else sampled (top-k when topK > 0) from a seeded generator. Each step yields
   * the token and the attention row of the query that produced it, layers × heads × n (n = the
   * tokens before it). Stops after maxNewTokens, at the model's end-of-text token, or on signal.
   * @returns {AsyncGenerator<{ id: number, text: string | null, position: number, attentions: Float32Array, attentionShape: number[] }>}
   */
  async* generate(ids, { maxNewTokens = 20, temperature = 0, topK = 0, seed = 0, signal, stopAtEos = true } = {}) {
    const core = this.#live();
    if (!this.config.causal || !this.config.hasLmHead) fail(`generate needs a causal language model; this ${this.config.architecture} checkpoint is not one`);
    this.#checkIds(ids);
    if (ids.length === 0) fail('generate needs at least one token id to start from');
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) fail(`maxNewTokens must be a whole number ≥ 1, got ${maxNewTokens}`);
    if (!(Number.isFinite(temperature) && temperature >= 0)) fail(`temperature must be ≥ 0, got ${temperature}`);
    if (!Number.isInteger(topK) || topK < 0) fail(`topK must be a whole number ≥ 0, got ${topK}`);
    const room = Math.min(this.config.maxPositions, 16384);
    if (ids.length >= room) fail(`the prompt has ${ids.length} tokens; this model reads at most ${room}`);
    const steps = Math.min(maxNewTokens, room - ids.length);
    core.resetCache(ids.length + steps);
    core.seed(seed);
    const selection = this.#selection(true);
    const all = Array.from(ids);
    let input = Array.from(ids), previousText = this.tokenizer ? this.tokenizer.decode(all) : '';
    for (let step = 0; step < steps; step += 1) {
      if (signal?.aborted) return;
      const result = this.#run(core, Int32Array.from(input), { logits: [input.length - 1], selection, cache: true });
      const [L, H, n, nk] = result.attentionShape;
      // The last query's row of every head.
      const rows = new Float32Array(L * H * nk);
      for (let i = 0; i < L * H; i += 1) rows.set(result.attentions.subarray((i * n + n - 1) * nk, (i * n + n) * nk), i * nk);
      const id = core.sample(temperature, topK);
      all.push(id);
      let text = null;
      if (this.tokenizer) {
        const now = this.tokenizer.decode(all);
        text = now.startsWith(previousText) ? now.slice(previousText.length) : now;
        previousText = now;
      }
      yield { id, text, position: all.length - 1, attentions: rows, attentionShape: [L, H, nk] };
      if (stopAtEos && this.#eos.has(id)) return;
      input = [id];
      // Let a page draw (and a worker hear "stop") between tokens, without a timer's wait.
      await nextTurn();
    }
  }

  /** Frees the model's wasm memory now. */
  dispose() {
    if (!this.#core) return;
    release(this, this.#core);
    this.#core = null;
  }
}


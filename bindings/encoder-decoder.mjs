// multihead: an encoder-decoder checkpoint (T5, BART, Marian) as loadPretrained gives it: the
// source and the target tokenized on their own sides, a teacher-forced run with the three kinds
// of attention, and greedy generation that yields each token's cross-attention
// (bindings/embind_encoder_decoder.cpp; the forward pass is src/nn/encoder_decoder.h).
import { abortError, checkTokenIds, describe, fail, optionsOf } from './checks.mjs';
import { turnClock } from './environment.mjs';
import { resolveHookNames } from './hooks.mjs';
import { lensArrays } from './model-context.mjs';
import { release, track } from './registry.mjs';
import { streamingDecoder } from './tokenizers/tokenizer.mjs';

// generation_config.json's value of a key, else config.json's (null where neither has one).
function setting(generationConfig, hfConfig, key) {
  return generationConfig?.[key] ?? hfConfig?.[key] ?? null;
}
const idsOf = (value) => (Array.isArray(value) ? value : [value]).filter(Number.isInteger);

// Generation's token rules, as transformers reads them: generation_config.json first, then
// config.json; the decoder starts from decoder_start_token_id (else bos_token_id).
export function generationSettings(hfConfig, generationConfig) {
  const get = (key) => setting(generationConfig, hfConfig, key);
  const start = get('decoder_start_token_id') ?? get('bos_token_id');
  const integerOr = (value, fallback) => (Number.isInteger(value) ? value : fallback);
  return Object.freeze({
    decoderStartTokenId: Number.isInteger(start) ? start : null,
    eosTokenIds: Object.freeze(idsOf(get('eos_token_id'))),
    forcedBosTokenId: integerOr(get('forced_bos_token_id'), -1),
    forcedEosTokenId: integerOr(idsOf(get('forced_eos_token_id'))[0], -1),
    // bad_words_ids of one token each (Marian's [[pad]]); longer sequences are not applied.
    bannedTokenIds: Object.freeze((Array.isArray(get('bad_words_ids')) ? get('bad_words_ids') : [])
      .filter((words) => Array.isArray(words) && words.length === 1 && Number.isInteger(words[0])).map((words) => words[0])),
    noRepeatNgramSize: integerOr(get('no_repeat_ngram_size'), 0),
  });
}

const NOT_FOR_ENCODER_DECODERS = {
  contributions: 'contributions',
  patch: 'activation patching',
  createContext: 'contexts',
};

export class EncoderDecoderModel {
  #core;
  #seq2seq = null;
  #makeContext;
  #generators = new Set();
  #settings;
  #hooks = null;

  /** @private Use loadPretrained(). */
  constructor(core, tokenizer, hfConfig, generationConfig, Seq2SeqCore) {
    this.#core = core;
    this.#settings = generationSettings(hfConfig, generationConfig);
    const shape = core.config();
    delete shape.slidingWindow;
    delete shape.slidingLayers;
    this.config = Object.freeze({
      modelType: core.modelType(),
      encoderDecoder: true,
      ...shape,
      parameterCount: core.parameterCount(),
      weightBytes: core.weightBytes(),
      weightType: core.matrixType(),
      decoderStartTokenId: this.#settings.decoderStartTokenId,
      eosTokenIds: this.#settings.eosTokenIds,
    });
    /** The source side's tokenizer (its `target` property: the target side's), or null without tokenizer files. */
    this.tokenizer = tokenizer;
    // Each run context holds the weights too: every one is freed with the model when it is collected.
    this.#makeContext = () => {
      const context = new Seq2SeqCore(core);
      track(this, context);
      return context;
    };
    this.#seq2seq = this.#makeContext();
    track(this, core);
  }

  /** Whether dispose() has run. */
  get disposed() { return this.#core === null; }

  #live() {
    if (!this.#core) fail('this model was disposed; load it again with loadPretrained()');
    return this.#seq2seq;
  }

  #tokenizer(side) {
    this.#live();
    if (!this.tokenizer) fail('this checkpoint came without tokenizer files (tokenizer.json, or source.spm + vocab.json): pass token ids');
    return side === 'target' ? this.tokenizer.target ?? this.tokenizer : this.tokenizer;
  }

  /** The source text → { ids, tokens, offsets }, as the source tokenizer makes them (</s> appended). */
  tokenize(source) {
    const { ids, tokens, offsets } = this.#tokenizer('source').encode(source);
    return { ids, tokens, offsets };
  }

  /** A target text → { ids, tokens, offsets }, as the target tokenizer makes them (transformers' text_target). */
  tokenizeTarget(text) {
    const { ids, tokens, offsets } = this.#tokenizer('target').encode(text);
    return { ids, tokens, offsets };
  }

  /**
   * Every activation run() can capture, in the order a run visits them: 'encoder.blocks.0.hook_resid_pre',
   * …, 'decoder.blocks.{l}.cross_attn.hook_pattern', …, ('encoder.' / 'decoder.') 'ln_final.hook_normalized' (T5).
   * @returns {string[]}
   */
  hookNames() {
    return [...this.#hookMap().keys()];
  }

  // name → { decoder, id } (the core's stack and hook id).
  #hookMap() {
    const core = this.#live();
    if (!this.#hooks) this.#hooks = new Map(core.hookNames().map(([name, decoder, id]) => [name, { decoder, id }]));
    return this.#hooks;
  }

  /** Target token ids → text, without special tokens. */
  decode(ids) {
    if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number') fail(`decode needs a list of token ids, got ${describe(ids)}`);
    return this.#tokenizer('target').decode(Array.from(ids));
  }

  #prepare(core, sourceIds, targetIds, method) {
    checkTokenIds(sourceIds, this.config.vocabSize);
    if (sourceIds.length === 0) fail(`${method} needs at least one source token id`);
    const room = core.maxTokens();
    if (sourceIds.length > room) fail(`the source has ${sourceIds.length} tokens; this model reads at most ${room}: pass a shorter source`);
    core.prepare(sourceIds.length, targetIds.length);
    core.view('source').set(sourceIds);
    core.view('target').set(targetIds);
  }

  /**
   * The encoder over the source and the decoder over decoderInputIds (teacher forcing: the target
   * shifted right behind config.decoderStartTokenId), as transformers' forward with
   * output_attentions. Arrays are flat, in transformers' order: encoderAttentions layers × heads × n × n,
   * decoderAttentions decoderLayers × heads × m × m (causal), crossAttentions decoderLayers × heads × m × n,
   * logits m × vocab; with hiddenStates, encoderHiddenStates (layers + 1) × n × d and decoderHiddenStates;
   * with capture (names or patterns of hookNames()), activations: { name: { data, shape } }.
   * @param {Int32Array | number[]} sourceIds
   * @param {{ decoderInputIds: Int32Array | number[], attentions?: boolean, hiddenStates?: boolean, capture?: string[] }} options
   */
  run(sourceIds, options) {
    const { decoderInputIds, attentions = true, hiddenStates = false, capture, ...rest } = optionsOf(options, 'run');
    if (rest.intervene !== undefined) fail('intervene is not available for encoder-decoders yet: capture reads their activations');
    const unknown = Object.keys(rest);
    if (unknown.length) fail(`run() of an encoder-decoder does not take ${unknown.join(', ')}; it takes decoderInputIds, attentions, hiddenStates, capture`);
    if (capture !== undefined && !Array.isArray(capture)) fail(`capture must be a list of activation names (model.hookNames()), got ${describe(capture)}`);
    const hooks = capture === undefined ? [] : [...new Set(capture.flatMap((pattern) => resolveHookNames(pattern, this.#hookMap())))];
    const core = this.#live();
    this.#decoderIds(core, sourceIds, decoderInputIds, 'run');
    const map = this.#hookMap();
    for (const name of hooks) core.view(map.get(name).decoder ? 'decoderCapture' : 'encoderCapture')[map.get(name).id] = 1;
    const wantAttentions = attentions !== false, wantHidden = hiddenStates === true;
    const check = (error) => { if (error) fail(error); };
    const activations = {};
    const captured = (decoder) => {
      for (const name of hooks) {
        const { decoder: inDecoder, id } = map.get(name);
        if (inDecoder === decoder) activations[name] = { data: core.captured(decoder, id).slice(), shape: core.capturedShape(decoder, id) };
      }
    };
    check(core.encode(wantAttentions, wantHidden));
    const encoderAttentions = wantAttentions ? core.view('encoderAttentions').slice() : null;
    const encoderHiddenStates = wantHidden ? core.view('encoderHiddenStates').slice() : undefined;
    captured(false);
    check(core.decode(wantAttentions, wantHidden));
    captured(true);
    const { layers, decoderLayers, heads, dModel, vocabSize } = this.config;
    const n = sourceIds.length, m = decoderInputIds.length;
    const out = {
      sourceLength: n,
      targetLength: m,
      encoderAttentions,
      encoderAttentionShape: [layers, heads, n, n],
      decoderAttentions: wantAttentions ? core.view('decoderAttentions').slice() : null,
      decoderAttentionShape: [decoderLayers, heads, m, m],
      crossAttentions: wantAttentions ? core.view('crossAttentions').slice() : null,
      crossAttentionShape: [decoderLayers, heads, m, n],
      logits: core.view('logits').slice(),
      logitShape: [m, vocabSize],
    };
    if (capture !== undefined) out.activations = activations;
    if (wantHidden) {
      out.encoderHiddenStates = encoderHiddenStates;
      out.encoderHiddenStateShape = [layers + 1, n, dModel];
      out.decoderHiddenStates = core.view('decoderHiddenStates').slice();
      out.decoderHiddenStateShape = [decoderLayers + 1, m, dModel];
    }
    return out;
  }

  #decoderIds(core, sourceIds, decoderInputIds, method) {
    if (decoderInputIds === undefined) fail(`${method}() of an encoder-decoder needs { decoderInputIds } (the target shifted right behind config.decoderStartTokenId)`);
    checkTokenIds(decoderInputIds, this.config.vocabSize);
    if (decoderInputIds.length === 0) fail('decoderInputIds needs at least one token id (the decoder start)');
    this.#prepare(core, sourceIds, decoderInputIds, method);
  }

  #tokenId(id, what) {
    if (!Number.isInteger(id) || id < 0 || id >= this.config.vocabSize) fail(`${what} must be a token id from 0 to ${this.config.vocabSize - 1}, got ${describe(id)}`);
    return id;
  }

  /**
   * The logit lens on the decoder: what each decoder stream would predict if the decoder stopped
   * there. For each of decoderLayers + 1 streams (0 = the embeddings, then after each layer: the
   * decoder's hidden states; the last is the model's own output) and each decoder position, the
   * decoder's final norm (T5's) and output head over that stream: the topK next tokens with their
   * probabilities, and each of `targets` with its probability and rank (0 = the top token).
   * @param {Int32Array | number[]} sourceIds
   * @param {{ decoderInputIds: Int32Array | number[], topK?: number, positions?: number[], targets?: number[] }} options
   * @returns {{ shape: number[], positions: number[], ids: Int32Array, probabilities: Float32Array,
   *   targets: { ids: Int32Array, probabilities: Float32Array, ranks: Int32Array } | null }}
   *   ids and probabilities: streams × positions × topK; targets': streams × positions × targets.
   */
  logitLens(sourceIds, options) {
    const { decoderInputIds, topK = 5, positions, targets = [], ...rest } = optionsOf(options, 'logitLens');
    if (Object.keys(rest).length) fail(`logitLens() of an encoder-decoder does not take ${Object.keys(rest).join(', ')}; it takes decoderInputIds, topK, positions, targets (attribute() is its own call)`);
    const core = this.#live();
    this.#decoderIds(core, sourceIds, decoderInputIds, 'logitLens');
    const m = decoderInputIds.length;
    if (!Number.isInteger(topK) || topK < 1 || topK > 1000) fail(`topK must be a whole number from 1 to 1000, got ${describe(topK)}`);
    const rows = positions === undefined ? Array.from({ length: m }, (_, i) => i) : positions;
    if (!Array.isArray(rows) || rows.length === 0 || rows.some((p) => !Number.isInteger(p) || p < 0 || p >= m)) {
      fail(`positions must be a non-empty list of decoder positions from 0 to ${m - 1}`);
    }
    if (!Array.isArray(targets)) fail('targets must be a list of token ids');
    if (targets.length > 64) fail(`logitLens takes at most 64 targets, got ${targets.length}: ask for the tokens you will show`);
    targets.forEach((t) => this.#tokenId(t, 'each target'));
    core.lensInputs(rows.length, targets.length);
    core.view('positions').set(rows);
    core.view('targets').set(targets);
    const error = core.logitLens(topK);
    if (error) fail(error);
    return {
      shape: [this.config.decoderLayers + 1, rows.length, Math.min(topK, this.config.vocabSize)],
      ...lensArrays(core, rows, targets),
    };
  }

  /**
   * Direct logit attribution on the decoder at `position` (default: the last): how much the
   * decoder's embeddings, each self-attention head (heads), each cross-attention head (crossHeads),
   * each MLP and the biases write into the residual stream in the direction of logit(target) −
   * logit(contrast) (no contrast: logit(target)), through the final norm frozen at this residual.
   * The parts sum to the logit difference less normBias. target defaults to the model's top
   * prediction there. Pre-norm decoders (T5) only: BART's and Marian's blocks normalise after each
   * sublayer, so no residual stream reaches their output whole (an Error says so).
   * @param {Int32Array | number[]} sourceIds
   * @param {{ decoderInputIds: Int32Array | number[], position?: number, target?: number, contrast?: number | null }} options
   * @returns {{ position: number, target: number, contrast: number | null, embeddings: number,
   *   heads: Float64Array, crossHeads: Float64Array, headsShape: number[], mlps: Float64Array, biases: number,
   *   biasesByLayer: Float64Array, total: number, normBias: number, logitDifference: number }}
   */
  attribute(sourceIds, options) {
    const { decoderInputIds, position: asked, target: askedTarget, contrast = null, ...rest } = optionsOf(options, 'attribute');
    if (Object.keys(rest).length) fail(`attribute() of an encoder-decoder does not take ${Object.keys(rest).join(', ')}; it takes decoderInputIds, position, target, contrast`);
    const core = this.#live();
    this.#decoderIds(core, sourceIds, decoderInputIds, 'attribute');
    const m = decoderInputIds.length, position = asked ?? m - 1;
    if (!Number.isInteger(position) || position < 0 || position >= m) fail(`position must be a decoder position from 0 to ${m - 1}, got ${describe(position)}`);
    let target = askedTarget;
    if (target === undefined) {  // the top prediction there
      const logits = this.run(sourceIds, { decoderInputIds, attentions: false }).logits.subarray(position * this.config.vocabSize, (position + 1) * this.config.vocabSize);
      target = 0;
      for (let v = 1; v < logits.length; v += 1) if (logits[v] > logits[target]) target = v;
      this.#prepare(core, sourceIds, decoderInputIds, 'attribute');
    }
    this.#tokenId(target, 'target');
    if (contrast !== null) this.#tokenId(contrast, 'contrast');
    const error = core.attribute(position, target, contrast ?? -1);
    if (error) fail(error);
    return {
      position, target, contrast, ...core.attribution(),
      heads: core.view('attributionHeads').slice(), crossHeads: core.view('attributionCrossHeads').slice(),
      headsShape: [this.config.decoderLayers, this.config.heads],
      mlps: core.view('attributionMlps').slice(), biasesByLayer: core.view('attributionLayerBiases').slice(),
    };
  }

  /**
   * Greedy generation from the source: the encoder runs once, the decoder one token a step over
   * its key/value cache, the cross-attention keys and values computed once. Honours
   * generation_config.json (then config.json): decoder_start_token_id, forced_bos_token_id,
   * forced_eos_token_id (forced at the last of maxNewTokens), eos_token_id (stops), and
   * minNewTokens (no end before it). Yields { id, text, crossAttention (decoderLayers × heads ×
   * source length, this token's row), crossAttentionShape } per new token.
   * @param {Int32Array | number[]} sourceIds
   * @param {{ maxNewTokens?: number, minNewTokens?: number, signal?: AbortSignal }} [options]
   */
  async* generate(sourceIds, options) {
    const { maxNewTokens = 20, minNewTokens = 0, signal } = optionsOf(options, 'generate');
    const core = this.#live();
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) fail(`maxNewTokens must be a whole number ≥ 1, got ${describe(maxNewTokens)}`);
    if (!Number.isInteger(minNewTokens) || minNewTokens < 0 || minNewTokens > maxNewTokens) {
      fail(`minNewTokens must be a whole number from 0 to maxNewTokens (${maxNewTokens}), got ${describe(minNewTokens)}`);
    }
    const start = this.#settings.decoderStartTokenId;
    if (start === null) fail('neither generation_config.json nor config.json names a decoder_start_token_id (or bos_token_id): generation cannot start');
    if (signal?.aborted) throw abortError('generation');
    this.#prepare(core, sourceIds, [], 'generate');  // checks the source
    // A context of its own: runs of the model between two tokens change none of its caches.
    const own = this.#makeContext();
    this.#generators.add(own);
    try {
      yield* this.#greedy(own, sourceIds, start, Math.min(maxNewTokens, core.maxTokens() - 1), minNewTokens, signal);
    } finally {
      if (this.#generators.delete(own)) own.delete();
    }
  }

  async* #greedy(core, sourceIds, start, steps, minNewTokens, signal) {
    const { eosTokenIds, bannedTokenIds, noRepeatNgramSize, forcedBosTokenId, forcedEosTokenId } = this.#settings;
    core.prepare(sourceIds.length, 0);
    core.view('source').set(sourceIds);
    core.setRules([...eosTokenIds], [...bannedTokenIds], noRepeatNgramSize, forcedBosTokenId, forcedEosTokenId, minNewTokens, steps);
    const encodeError = core.encode(false, false);
    if (encodeError) fail(encodeError);
    const { decoderLayers, heads } = this.config;
    const target = this.tokenizer ? this.tokenizer.target ?? this.tokenizer : null;
    const textOf = target ? streamingDecoder((list) => target.decode(list), [start]) : null;
    const clock = turnClock();
    let input = start;
    for (let generated = 0; generated < steps; generated += 1) {
      if (signal?.aborted) throw abortError('generation');
      this.#live();  // dispose() may have come between two tokens
      const id = core.step(input, generated === 0);
      if (id < 0) fail(core.error());
      const crossAttention = core.view('crossAttentions').slice();
      const text = textOf ? textOf(id) : null;
      yield { id, text, crossAttention, crossAttentionShape: [decoderLayers, heads, sourceIds.length] };
      if (eosTokenIds.includes(id)) return;
      input = id;
      if (clock.due()) await clock.turn();  // a page draws (and a worker hears "stop") every few ms
    }
  }

  /** Frees the model's wasm memory now. */
  dispose() {
    if (!this.#core) return;
    for (const own of this.#generators) own.delete();
    this.#generators.clear();
    this.#seq2seq.delete();
    this.#seq2seq = null;
    release(this, this.#core);
    this.#core = null;
  }
}

// What encoder-decoders do not have yet: an Error that says so, rather than a wrong answer.
for (const [method, what] of Object.entries(NOT_FOR_ENCODER_DECODERS)) {
  EncoderDecoderModel.prototype[method] = function notAvailable() {
    fail(`${what} ${what.endsWith('s') ? 'are' : 'is'} not available for encoder-decoder models yet ` +
      `(this ${this.config.modelType} model has an encoder and a decoder): use run() and generate()`);
  };
}

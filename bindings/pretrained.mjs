// multihead: the JavaScript API over pretrained checkpoints (bindings/embind_pretrained.cpp).
// Reading config.json, checking the safetensors headers, the forward pass and sampling are C++;
// this file finds the files, streams their bytes into the wasm heap a chunk at a time, runs the
// tokenizer (bindings/tokenizers/) and copies results out.
import { describe, fail, optionsOf } from './checks.mjs';
import { imageDataOf, outputSize, preprocessImageData, readImageProcessor } from './image-processing.mjs';
import { withOldNames } from './deprecated.mjs';
import { EncoderDecoderModel } from './encoder-decoder.mjs';
import { isGgufName, loadGguf } from './gguf.mjs';
import { ModelContext } from './model-context.mjs';
import { openSource, throwIfAborted } from './pretrained-sources.mjs';
import { release, track } from './registry.mjs';
import { loadMultihead } from './runtime.mjs';
import { tokenizerFromGguf } from './tokenizers/gguf.mjs';
import { loadTokenizer } from './tokenizers/tokenizer.mjs';

// A GGUF file's own tokenizer (tokenizer.ggml.*); a file without one is run by ids.
const ggufTokenizer = (metadata) => (metadata['tokenizer.ggml.model'] === undefined ? null : tokenizerFromGguf(metadata));

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
 * vocab.txt). Supported: the model types supportedModelTypes() lists; weights F32, F16, BF16.
 * Or a GGUF file (llama.cpp's): architectures llama, qwen2, qwen3, gemma3, gpt2; Q8_0, Q5_0, Q4_0,
 * Q4_1 and Q4_K matrices stay in 8- or 4-bit blocks, other types are dequantized while loading, to
 * float32 where that fits in memory, else to bf16 (docs/models.md "GGUF files").
 *
 * @param {string | URL | File | Blob | ArrayBuffer | Uint8Array | File[] | FileList | Map<string, Blob | ArrayBuffer | Uint8Array> | Record<string, Blob | ArrayBuffer | Uint8Array>} source
 *   a hub id ("gpt2", "Qwen/Qwen2.5-0.5B"), a folder path (Node), a base URL whose files are
 *   fetched (e.g. https://…/resolve/main/, or "./models/x/" on a page's own site), or the files;
 *   a path or URL ending in .gguf, or one GGUF file (File, Blob or its bytes)
 * @param {{ onProgress?: (p: { loaded: number, total: number, file: string }) => void, signal?: AbortSignal,
 *   weightType?: 'f16' | 'bf16' | 'f32' | 'q8_0' | 'q4_0', revision?: string, hub?: string, file?: string }} [options]  weightType: keep the
 *   weight matrices at 2 bytes (rounded to nearest) instead of as stored, halving what a float32
 *   checkpoint needs ('f32': every matrix widened to float32, a GGUF file's blocks included;
 *   'q8_0' / 'q4_0': a safetensors checkpoint's nn.Linear matrices quantized as llama.cpp's Q8_0 /
 *   Q4_0 would hold them, in 8- or 4-bit blocks, the rest as stored); revision: a hub id's branch, tag or commit (default main); hub: another
 *   server with the hub's layout (default https://huggingface.co); file: the GGUF file to read
 *   from the source (a hub id's repository of GGUF files, a folder, the files given)
 * @returns {Promise<PretrainedModel>}
 */
export async function loadPretrained(source, options) {
  const { onProgress, signal, weightType, revision, hub, file } = optionsOf(options, 'loadPretrained');
  throwIfAborted(signal);
  if (onProgress !== undefined && typeof onProgress !== 'function') fail(`onProgress must be a function, got ${describe(onProgress)}`);
  const storage = [undefined, 'f16', 'bf16', 'f32', 'q8_0', 'q4_0'].indexOf(weightType);
  if (storage < 0) {
    fail(`weightType must be 'f16', 'bf16', 'f32', 'q8_0' or 'q4_0' (or left out to keep the checkpoint's own), got ${JSON.stringify(weightType)}`);
  }
  if (file !== undefined && !isGgufName(file)) fail(`file must name a .gguf file (a GGUF model in the source), got ${describe(file)}`);
  const files = await openSource(source, signal, { revision, hub });
  const ggufName = await ggufFileOf(files, file);
  if (ggufName) return loadGgufModel(files, ggufName, { onProgress, storage: weightType === undefined ? null : storage });
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
    const config = JSON.parse(configText);
    if (model.config().imageSize > 0) {  // an image model: its image processor, no tokenizer
      const processorText = await files.text('preprocessor_config.json');
      const processor = processorText === null ? null : readImageProcessor(processorText, model.modelType());
      return new PretrainedModel(model, null, config, core.ContextCore, processor);
    }
    const tokenizer = await readTokenizer(files, model.modelType());
    if (model.config().decoderLayers > 0) {  // T5, BART, Marian: generation_config.json's rules too
      const generationText = await files.text('generation_config.json');
      let generationConfig = null;
      try { generationConfig = generationText === null ? null : JSON.parse(generationText); } catch (error) {
        fail(`generation_config.json is not valid JSON (${error.message})`);
      }
      return new EncoderDecoderModel(model, tokenizer, config, generationConfig, core.Seq2SeqCore);
    }
    return new PretrainedModel(model, tokenizer, config, core.ContextCore);
  } catch (error) {
    model.delete();  // everything the loader allocated goes with it
    throw error;
  }
}

// The GGUF file to read, or null for a safetensors checkpoint: the one named (by { file }, or by a
// path or URL ending in .gguf), or the only .gguf among files given without a config.json.
async function ggufFileOf(files, file) {
  const named = file ?? files.file;
  if (named !== undefined) {
    if (!(await files.size(named))) fail(`no ${named} ${files.describe()}${files.hubId ? ': check the file name (the hub page lists them under "Files")' : ''}`);
    return named;
  }
  if (!files.names || (await files.size('config.json'))) return null;
  const ggufs = (await files.names()).filter(isGgufName);
  if (ggufs.length > 1) fail(`there are ${ggufs.length} GGUF files ${files.describe()}: name the one to load with { file: '${ggufs[0]}' }`);
  return ggufs[0] ?? null;
}

async function loadGgufModel(files, name, { onProgress, storage }) {
  const core = await loadMultihead();
  const model = new core.PretrainedCore();
  try {
    const { metadata, config } = await loadGguf(model, files, name, { storage, onProgress });
    const finishError = model.finish();
    if (finishError) fail(finishError);
    const tokenizer = ggufTokenizer(metadata);
    // Generation stops at every end the file's tokenizer knows (EOS, end of turn, end of message).
    const ends = tokenizer ? { ...config, eos_token_id: [...tokenizer.eosIds] } : config;
    return new PretrainedModel(model, tokenizer, ends, core.ContextCore);
  } catch (error) {
    model.delete();
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
  // SentencePiece models where there is no tokenizer.json: Marian's source.spm / target.spm with
  // vocab.json, or T5's spiece.model.
  const spmSource = (await bytesOf(files, 'source.spm')) ?? (await bytesOf(files, 'spiece.model'));
  if (spmSource) {
    const spmTarget = await bytesOf(files, 'target.spm'), targetVocabJson = (await files.text('target_vocab.json')) ?? undefined;
    try {
      return loadTokenizer({ spmSource, spmTarget, vocabJson: vocabJson ?? undefined, targetVocabJson, tokenizerConfig, modelType });
    } catch (error) {  // which files: the reader's message cannot know
      fail(`the SentencePiece tokenizer files (${spmTarget ? 'source.spm, target.spm' : 'source.spm or spiece.model'}) ` +
        `could not be read: ${error.message.replace(/^multihead: /, '')}`);
    }
  }
  const vocabTxt = await files.text('vocab.txt');
  return vocabTxt === null ? null : loadTokenizer({ vocabTxt, tokenizerConfig, modelType });
}

// A file's bytes, or null where the source has none.
async function bytesOf(files, name) {
  if (!(await files.size(name))) return null;
  const chunks = [];
  await files.read(name, (chunk) => chunks.push(chunk.slice()));
  const out = new Uint8Array(chunks.reduce((sum, c) => sum + c.length, 0));
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

export class PretrainedModel {
  #core;
  #makeContext;
  #eos;
  #default = null;
  #contexts = new Set();
  #hookIds = null;
  #processor;
  #patchGrid = null;

  /** @private Use loadPretrained(). */
  constructor(core, tokenizer, hfConfig, ContextCore, processor = null) {
    this.#core = core;
    this.#makeContext = () => new ContextCore(core);
    const shape = core.config();
    Object.freeze(shape.slidingLayers);
    const modelType = core.modelType();
    const config = {
      modelType,
      ...shape,
      parameterCount: core.parameterCount(),
      weightBytes: core.weightBytes(),
      weightType: core.matrixType(),
    };
    if (shape.imageSize > 0) config.labels = shape.hasLmHead ? Object.freeze(labelsOf(hfConfig, shape.vocabSize)) : null;
    // 0.2's name for modelType (in transformers "architecture" is a class such as GPT2LMHeadModel).
    withOldNames(config, { architecture: 'modelType' });
    this.config = Object.freeze(config);
    /** The tokenizer, or null when the checkpoint brought no tokenizer files (run() then takes ids). */
    this.tokenizer = tokenizer;
    const eos = hfConfig?.eos_token_id;
    this.#eos = new Set((Array.isArray(eos) ? eos : [eos]).filter(Number.isInteger));
    if (processor) for (const part of Object.values(processor)) if (part && typeof part === 'object') Object.freeze(part);
    this.#processor = processor && Object.freeze(processor);  // read by every preprocess(): not to be changed
    if (shape.imageSize > 0) {
      const size = processor ? outputSize(processor) : { height: shape.imageSize, width: shape.imageSize };
      this.#patchGrid = size && Object.freeze({ rows: Math.floor(size.height / shape.patchSize), cols: Math.floor(size.width / shape.patchSize) });
    }
    track(this, core);
  }

  /** An image model's patch grid for the images preprocess() makes ({ rows, cols }); null for text models and where the size depends on the image. */
  get patchGrid() { return this.#patchGrid; }
  /** An image model's processor that preprocess() follows (from preprocessor_config.json); null without one, and for text models. */
  get imageProcessor() { return this.#processor; }

  /**
   * An image → the model's input, as the checkpoint's preprocessor_config.json says (resize with
   * PIL's filters, center crop, rescale, normalize): { pixelValues: Float32Array (3 × height ×
   * width), height, width }, what run() takes. image: { data: RGBA bytes, width, height }
   * (ImageData's shape) anywhere; in browsers also an ImageBitmap, <img>, canvas, Blob or File.
   * Asynchronous because a Blob must be decoded first.
   * @returns {Promise<{ pixelValues: Float32Array, height: number, width: number }>}
   */
  async preprocess(image) {
    this.#live();
    if (!(this.config.imageSize > 0)) fail(`preprocess() is for image models; this ${this.config.modelType} model takes text: use tokenize()`);
    if (!this.#processor) fail('this checkpoint came without preprocessor_config.json: make pixel values yourself (3 × height × width floats, as its image processor would) and pass them to run()');
    return preprocessImageData(await imageDataOf(image), this.#processor);
  }

  /** Whether dispose() has run. */
  get disposed() { return this.#core === null; }

  #live() {
    if (!this.#core) fail('this model was disposed; load it again with loadPretrained()');
    return this.#core;
  }

  /**
   * A new run context over this model's weights: its own key/value caches, prefix reuse and
   * scratch, with the same methods as the model (run, generate, logitLens, attribute, patch,
   * contributions). model.run() and the rest use a default context; contexts never share state,
   * so runs in one do not disturb another. dispose() it when done (the model's dispose() does too).
   * @returns {ModelContext}
   */
  createContext() {
    this.#live();
    const context = new ModelContext(this, this.#makeContext(), { eos: this.#eos, hookIds: () => this.#hookIdMap(),
      onDispose: (c) => this.#contexts.delete(c) });
    this.#contexts.add(context);
    return context;
  }

  #context() {
    this.#live();
    if (!this.#default) this.#default = this.createContext();
    return this.#default;
  }

  /**
   * The names of every activation a run hands its hooks (TransformerLens's names:
   * 'hook_embed', 'blocks.0.attn.hook_z', …, 'ln_final.hook_normalized'), in the order a run
   * visits them: what run()'s capture and intervene take. docs/hooks.md has the table.
   * @returns {string[]}
   */
  hookNames() {
    return [...this.#hookIdMap().keys()];
  }

  // name → the core's hook id.
  #hookIdMap() {
    const core = this.#live();
    if (!this.#hookIds) this.#hookIds = new Map(core.hookNames().map(([id, name]) => [name, id]));
    return this.#hookIds;
  }

  /**
   * Text → token ids as the model's own tokenizer makes them (special tokens such as [CLS] … [SEP]
   * or <s> included). A second text makes a pair (BERT: token types 0 and 1).
   */
  tokenize(text, textPair = undefined) {
    this.#live();
    if (this.config.imageSize > 0) fail(`tokenize() is for text models; this ${this.config.modelType} model reads images: use preprocess(image)`);
    if (!this.tokenizer) fail('this checkpoint came without tokenizer files (tokenizer.json, vocab.json + merges.txt, or vocab.txt): pass token ids to run()');
    const { ids, tokenTypeIds, tokens, offsets, special } = this.tokenizer.encode(text, textPair);
    return { ids, tokenTypeIds, tokens, offsets, special };
  }

  /** Token ids → text, without special tokens. */
  decode(ids) {
    if (this.config.imageSize > 0) fail(`decode() is for text models; this ${this.config.modelType} model has no vocabulary (its labels are config.labels)`);
    if (!this.tokenizer) fail('this checkpoint came without tokenizer files: there is no vocabulary to decode with');
    if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number') fail(`decode needs a list of token ids, got ${describe(ids)}`);
    return this.tokenizer.decode(Array.from(ids));
  }

  /** ModelContext.run in the default context. */
  run(ids, options) { return this.#context().run(ids, options); }
  /** ModelContext.logitLens in the default context. */
  logitLens(ids, options) { return this.#context().logitLens(ids, options); }
  /** ModelContext.attribute in the default context. */
  attribute(ids, options) { return this.#context().attribute(ids, options); }
  /** ModelContext.contributions in the default context. */
  contributions(ids, options) { return this.#context().contributions(ids, options); }

  /**
   * ModelContext.patch in a context of its own, so that the default context's runs go on while it
   * does (a page keeps answering the user's typing).
   */
  async patch(cleanIds, corruptIds, options) {
    const context = this.createContext();
    try {
      return await context.patch(cleanIds, corruptIds, options);
    } finally {
      context.dispose();
    }
  }

  /**
   * ModelContext.generate in a context of its own: the generator owns its key/value cache, so runs
   * of the model (or another generator) between its steps change none of its tokens.
   */
  async* generate(ids, options) {
    const context = this.createContext();
    try {
      yield* context.generate(ids, options);
    } finally {
      context.dispose();
    }
  }

  /** Frees the model's wasm memory now, with every context of it. */
  dispose() {
    if (!this.#core) return;
    for (const context of [...this.#contexts]) context.dispose();
    this.#default = null;
    release(this, this.#core);
    this.#core = null;
  }
}

// An image classifier's labels in id order from config.json's id2label ("LABEL_i" where missing).
function labelsOf(hfConfig, count) {
  const names = hfConfig?.id2label && typeof hfConfig.id2label === 'object' ? hfConfig.id2label : {};
  return Array.from({ length: count }, (_, i) => (typeof names[i] === 'string' ? names[i] : `LABEL_${i}`));
}

/**
 * Every config.json model_type loadPretrained reads, from the core's family table.
 * @returns {Promise<string[]>}
 */
export async function supportedModelTypes() {
  const core = await loadMultihead();
  return core.PretrainedCore.supportedModelTypes();
}

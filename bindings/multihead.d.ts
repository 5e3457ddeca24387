// Types for multihead's JavaScript API (bindings/multihead.mjs). One vocabulary throughout: heads,
// kvHeads, dModel, headDim, vocabSize, maxPositions, attentions (CHANGELOG.md lists the 0.1 names,
// which still work in 0.2 and are marked @deprecated here).

/** Any flat, row-major array of numbers; copied into the wasm heap as float32. */
export type NumberArray = Float32Array | Float64Array | ArrayLike<number>;

export interface MultiHeadAttentionOptions {
  /** Model width. Default 64. Must be divisible by heads. */
  dModel?: number;
  /** Query heads. Default 4. Each head gets headDim = dModel / heads dimensions. */
  heads?: number;
  /** Key/value heads: heads (default) is plain MHA, 1 is multi-query, others grouped-query. */
  kvHeads?: number;
  /** @deprecated since 0.2: use heads. */
  numHeads?: number;
  /** @deprecated since 0.2: use kvHeads. */
  numKvHeads?: number;
  /** Bias vectors on the four projections. Default true. */
  bias?: boolean;
  /** Seed of the N(0, 2/dModel) weight initialization (same weights in every build). Default 0. */
  seed?: number;
  /** Softmax temperature: scores are divided by temperature · √headDim. Default 1. */
  temperature?: number;
  /** Explicit score scale; overrides temperature when > 0. Default 0 (unused). */
  scale?: number;
}

export interface AttentionConfig {
  readonly dModel: number;
  readonly heads: number;
  readonly kvHeads: number;
  /** @deprecated since 0.2: use heads. */
  readonly numHeads: number;
  /** @deprecated since 0.2: use kvHeads. */
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly bias: boolean;
  readonly seed: number;
  readonly temperature: number;
  readonly scale: number;
}

/** W in the X·W convention ([in][out], row-major). K/V widths are kvHeads · headDim. */
export interface AttentionWeights {
  wq: Float32Array; wk: Float32Array; wv: Float32Array; wo: Float32Array;
  bq?: Float32Array; bk?: Float32Array; bv?: Float32Array; bo?: Float32Array;
}

export interface ForwardOptions {
  /** Query rows; inferred from x.length / dModel when omitted. */
  seqLen?: number;
  /** Key/value rows for cross-attention; inferred when omitted. */
  kvLen?: number;
  /** Cross-attention: keys and values come from these rows instead of x. */
  keysValues?: NumberArray;
  /** Query i may not attend to keys j > i. */
  causal?: boolean;
  /** One flag per key position; nonzero/true = padding, ignored by every query. */
  keyPaddingMask?: Uint8Array | ArrayLike<boolean | number>;
  /**
   * Queries × keys. Uint8Array / boolean[]: nonzero/true = blocked.
   * Float32Array / Float64Array: added to the scaled scores (-Infinity blocks).
   */
  mask?: Uint8Array | Int8Array | Uint8ClampedArray | boolean[] | Float32Array | Float64Array;
  /**
   * Also return attention weights: true for every head and query row, or a block of them
   * ({ head } or { heads: [start, end), rows: [start, end) }), which is all that is kept in
   * memory. Default false.
   */
  returnAttention?: boolean | { head?: number; heads?: [number, number]; rows?: [number, number] };
  /** Write results into these buffers instead of allocating new ones. */
  into?: {
    output?: Float32Array;
    attentions?: Float32Array;
    /** @deprecated since 0.2: use attentions. */
    attention?: Float32Array;
  };
}

export interface ForwardResult {
  /** seqLen × dModel. */
  output: Float32Array;
  /**
   * heads × seqLen × kvLen, element [(h·seqLen + i)·kvLen + j]; only with returnAttention.
   * For a selected block: heads × rows × kvLen, starting at the block's first head and row.
   */
  attentions?: Float32Array;
  /** @deprecated since 0.2: use attentions (the same array). */
  attention?: Float32Array;
}

export interface TraceOptions extends Omit<ForwardOptions, 'returnAttention' | 'into'> {
  /** Which head to trace. Default 0. */
  head?: number;
}

/** Every step of one head; q/k/v/headOutput are n × headDim, the score matrices nQ × nK. */
export interface HeadTrace {
  head: number;
  nQ: number;
  nK: number;
  headDim: number;
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  /** Q_i·K_iᵀ */
  scores: Float32Array;
  /** scores · scale (÷ √headDim by default) */
  scaled: Float32Array;
  /** scaled with the mask applied (-Infinity where blocked) */
  masked: Float32Array;
  /** softmax of each masked row */
  attention: Float32Array;
  /** attention · V_i */
  headOutput: Float32Array;
  /** all heads' outputs side by side, nQ × dModel, before W_O */
  concat: Float32Array;
  /** nQ × dModel */
  output: Float32Array;
}

/** PyTorch nn.MultiheadAttention state dict entries, flattened row-major. */
export interface PyTorchMultiheadAttentionState {
  in_proj_weight: NumberArray;
  in_proj_bias?: NumberArray;
  'out_proj.weight'?: NumberArray;
  out_proj_weight?: NumberArray;
  'out_proj.bias'?: NumberArray;
  out_proj_bias?: NumberArray;
}

export declare class MultiHeadAttention {
  private constructor();
  readonly config: AttentionConfig;
  /** 4·dModel² + 4·dModel for plain MHA with bias; less with kvHeads < heads. */
  readonly parameterCount: number;
  readonly disposed: boolean;
  forward(x: NumberArray, options?: ForwardOptions): ForwardResult;
  forwardCross(queries: NumberArray, keysValues: NumberArray, options?: Omit<ForwardOptions, 'keysValues'>): ForwardResult;
  trace(x: NumberArray, options?: TraceOptions): HeadTrace;
  getWeights(): AttentionWeights;
  /** Replaces any subset of the weights; all checked before any changes. */
  setWeights(weights: Partial<Record<keyof AttentionWeights, NumberArray>>): void;
  loadPyTorchWeights(state: PyTorchMultiheadAttentionState): void;
  /** seqLen × dModel sinusoidal positional encoding. */
  positionalEncoding(seqLen: number): Float32Array;
  /** Frees the wasm memory now. Any later call throws. */
  dispose(): void;
}

export declare function createMultiHeadAttention(options?: MultiHeadAttentionOptions): Promise<MultiHeadAttention>;
/** Loads and compiles the wasm once; later calls return the same promise. */
export interface LoadOptions {
  /**
   * 'auto' (the default since 0.3): the threaded build in Node (worker_threads) and where the page
   * is cross-origin isolated (one thread per core, up to 64) when there is more than one core, else
   * the single-thread build (oneThreadReason() says why). 1: the single-thread build, which runs
   * everywhere. A number > 1 asks for the threaded build and throws where it cannot run. The first
   * call decides the build: after a single-thread load, a later 'auto' runs on one thread and a
   * number > 1 throws.
   */
  threads?: 'auto' | number;
  /**
   * 'auto' (the default): the build with fused multiply-add (relaxed SIMD) where the engine has
   * it, plain SIMD elsewhere; in Node 20 it first turns on V8's --experimental-wasm-relaxed-simd
   * (unless the process was started with --no-experimental-wasm-relaxed-simd).
   * false: always plain SIMD (the same bits on every engine), V8's flags left alone.
   */
  relaxedSimd?: 'auto' | false;
}
/**
 * The loaded Emscripten module. Its heap is public for diagnostics (a test that nothing leaked
 * reads HEAPU8.length); everything else about the runtime is runtimeInfo()'s, and the module's
 * other members are internal.
 */
export interface WasmModule {
  readonly HEAPU8: Uint8Array;
  readonly HEAPF32: Float32Array;
}
/** Loads the wasm module once (every layer shares it); the first call's options decide the build. */
export declare function loadMultihead(options?: LoadOptions): Promise<WasmModule>;
/** True where the engine validates relaxed SIMD now (Chromium ≥ 114, Firefox ≥ 120, Node ≥ 21; Node 20 once its flag is on, which loadMultihead does). */
export declare function relaxedSimdAvailable(): boolean;
/** True where the threaded build can run: Node, or a cross-origin isolated page or worker. */
export declare function threadsAvailable(): boolean;
/** Sets the threaded build's thread count (capped at its workers); resolves to the count in effect. */
export declare function setThreads(threads: number): Promise<number>;
/**
 * Why this runtime runs on one thread, a line for a page to show ('' where threads run): no
 * SharedArrayBuffer, a page that is not cross-origin isolated, one core, or threads: 1 asked.
 */
export declare function oneThreadReason(): Promise<string>;
export interface RuntimeInfo {
  simdFloatsPerPacket: number;
  heapBytes: number;
  allocatedBytes: number;
  maxTokens: number;
  /** Threads a large forward call is split over (1 in the single-thread build). */
  threads: number;
  /** True when a threaded build (dist/multihead_core_mt, or dist/node/ in Node) is loaded. */
  threadedBuild: boolean;
  /** Why the runtime runs on one thread ('' where it has threads): oneThreadReason(). */
  oneThreadReason: string;
  /** True when a relaxed-SIMD build (fused multiply-add) is loaded. */
  relaxedSimd: boolean;
  /** The GEMM kernel in that build, e.g. "wasm SIMD (fused multiply-add)". */
  gemmKernel: string;
  /**
   * What the first checkpoint loaded with ≥ 64 MB of layer matrices measured: its products at 16
   * rows with the GEMM touching the weights ahead and without (median ms of each), and whether
   * products of fewer than `fromRows` rows now leave the touches out (0: they keep them). Which is
   * faster depends on the CPU; the results are the same bits either way.
   */
  touchTuning: { tuned: boolean; fromRows: number; msWith: number; msWithout: number };
  /**
   * What the first product over 8-, 6-, 5- or 4-bit blocks (a GGUF model) measured of the
   * relaxed-SIMD integer dot-add: whether its products gave the same bits each way (`exact`), their
   * time with it and without (fastest round, ms), the median round's time with ÷ without (`ratio`),
   * and whether the products take it now (`on`: exact and a ratio of at most 0.8). Not measured
   * before the first model of blocks, nor in a build without relaxed SIMD. The results are the same
   * bits either way.
   */
  integerDotAdd: { measured: boolean; exact: boolean; msOn: number; msOff: number; ratio: number; on: boolean };
}
export declare function runtimeInfo(): Promise<RuntimeInfo>;
export declare const MAX_TOKENS: number;

// ---- the trained language model (bindings/language-model.mjs) ----

export interface LanguageModelConfig {
  readonly vocabSize: number;
  readonly dModel: number;
  readonly heads: number;
  readonly layers: number;
  /** Longest input, in tokens. */
  readonly maxPositions: number;
  /** @deprecated since 0.2: use vocabSize. */
  readonly vocab: number;
  /** @deprecated since 0.2: use heads. */
  readonly numHeads: number;
  /** @deprecated since 0.2: use maxPositions. */
  readonly context: number;
  /** MLP width; 0 for attention-only layers. */
  readonly dFf: number;
}

export interface TextPiece {
  /** Token id; 0 is "<unk>". */
  id: number;
  /** False when the word is outside the vocabulary (the model reads "<unk>"). */
  known: boolean;
  /** The vocabulary entry the model sees (lowercase). */
  token: string;
  /** The piece of the original text. */
  text: string;
}

export interface LanguageModelRun {
  n: number;
  /** layers × heads × n × n, row-major; causal (zeros above the diagonal). */
  attentions: Float32Array;
  /** @deprecated since 0.2: use attentions (the same array). */
  attention: Float32Array;
  /** n × vocabSize: the next-token distribution after each position. */
  probabilities: Float32Array;
  /** n × n attention rollout across layers (heads averaged, residual as ½ identity). */
  rollout: Float32Array;
}

export declare class LanguageModel {
  private constructor();
  readonly config: LanguageModelConfig;
  piece(id: number): string;
  /**
   * ids; tokens: the vocabulary entries the model sees; offsets: [start, end) of each token in the
   * text (UTF-16 units, as String.slice takes them). pieces: the same per token (deprecated).
   */
  tokenize(text: string): {
    ids: Int32Array;
    tokens: string[];
    offsets: Array<[number, number]>;
    /** @deprecated since 0.2: use tokens and offsets (known is id !== 0). */
    pieces: TextPiece[];
  };
  /** disabledHeads: [layer, head] pairs (0-based) whose output is removed (ablation). */
  run(ids: Int32Array | number[], options?: { disabledHeads?: Array<[number, number]> }): LanguageModelRun;
  topPredictions(run: LanguageModelRun, position: number, k?: number): Array<{ id: number; token: string; probability: number }>;
  dispose(): void;
}

/** Loads a trained model from the bytes of a .mhlm file (such as web/model/austen.mhlm). */
export declare function loadLanguageModel(bytes: ArrayBuffer | Uint8Array): Promise<LanguageModel>;

// ---- the toy-task trainer behind the playground (bindings/trainer.mjs) ----

export type ToyTask = 'copy' | 'reverse' | 'sort' | 'previous-token' | 'balanced-key';
export declare const TOY_TASKS: readonly ToyTask[];

export interface TrainerOptions {
  /** Default 'copy'. */
  task?: ToyTask;
  /** 1 or 2 (default 2). */
  layers?: number;
  /** 1 … 8 (default 4); must divide dModel. */
  heads?: number;
  /** 8 … 128 (default 32). */
  dModel?: number;
  /** Adam's learning rate, (0, 1] (default 3e-3). */
  learningRate?: number;
  /** Non-negative integer (default 1): weights, batches and held-out data all follow from it. */
  seed?: number;
  /** Sequences per step, 1 … 512 (default 32). */
  batch?: number;
}

export interface TrainerConfig extends Required<TrainerOptions> {
  /** Tokens per sequence of the task. */
  readonly seq: number;
  /** Vocabulary size: the symbols A … J, '|' and '?'. */
  readonly vocabSize: number;
  /** @deprecated since 0.2: use vocabSize. */
  readonly vocab: number;
  /** Numeric inputs per token (2 for balanced-key: its criteria; else 0). */
  readonly features: number;
  /** Held-out sequences accuracy is measured on. */
  readonly heldOut: number;
  readonly parameterCount: number;
}

export interface TrainerSample {
  ids: Int32Array;
  tokens: string[];
  /** The answer token at each position, −1 where nothing is scored. */
  targets: Int32Array;
  /** seq × config.features (empty for tasks without features). */
  features: Float32Array;
  /** layers × heads × seq × seq, row-major, causal. */
  attentions: Float32Array;
  /** @deprecated since 0.2: use attentions (the same array). */
  attention: Float32Array;
  /** seq × vocabSize: the next-token distribution after each position. */
  probabilities: Float32Array;
}

export declare class Trainer {
  private constructor();
  readonly config: TrainerConfig;
  /** Token names by id: "A" … "J", "|", "?". */
  readonly vocabulary: readonly string[];
  /** Adam steps taken so far. */
  readonly steps: number;
  /** Changing it keeps Adam's moments. */
  learningRate: number;
  /** Takes count (1 … 100000) steps on fresh batches; returns each step's training loss. */
  train(count?: number): Float32Array;
  /** Loss and accuracy on the held-out sequences. */
  evaluate(): { loss: number; accuracy: number };
  /** Held-out sequence `index` (0 … heldOut − 1) through the model as it is now. */
  sample(index?: number): TrainerSample;
  dispose(): void;
}

/** A tiny attention-only decoder and its seeded training on one toy task. */
export declare function createTrainer(options?: TrainerOptions): Promise<Trainer>;

// ---- Hugging Face checkpoints (bindings/pretrained.mjs, bindings/tokenizers/) ----

/**
 * A checkpoint's files: a hub id ("gpt2", "Qwen/Qwen2.5-0.5B"; in Node a folder of that name
 * wins), a folder path (Node), a base URL ("./models/x/" for a page's own site), or the files.
 * A GGUF model: a path or URL ending in .gguf, one File or Blob, or the file's bytes.
 */
export type PretrainedSource =
  | string
  | URL
  | File
  | Blob
  | ArrayBuffer
  | Uint8Array
  | File[]
  | FileList
  | Map<string, Blob | ArrayBuffer | Uint8Array>
  | Record<string, Blob | ArrayBuffer | Uint8Array>;

export interface LoadProgress {
  /** Bytes of weights read so far, over all shards. */
  loaded: number;
  /** Bytes of weights in all, from the safetensors headers. */
  total: number;
  /** The shard being read. */
  file: string;
}

export interface PretrainedConfig {
  /** config.json's model_type: one of supportedModelTypes(). */
  readonly modelType: string;
  /** @deprecated 0.2's name for modelType (not listed by Object.keys); use modelType. */
  readonly architecture: string;
  readonly layers: number;
  readonly heads: number;
  /** Key/value heads (fewer than heads: grouped-query attention). */
  readonly kvHeads: number;
  readonly dModel: number;
  readonly headDim: number;
  readonly vocabSize: number;
  readonly maxPositions: number;
  /** Decoders are causal; BERT is not. */
  readonly causal: boolean;
  /** False for a BERT checkpoint without its masked-LM head: run() then returns logits null. */
  readonly hasLmHead: boolean;
  readonly typeVocabSize: number;
  readonly dFf: number;
  /** Tokens a local layer's query sees (itself and the window − 1 before it); 0: no local layers. */
  readonly slidingWindow: number;
  /** The local layers (GPT-Neo's "local", Gemma 3's and Qwen's sliding_attention, every Mistral layer). */
  readonly slidingLayers: readonly number[];
  readonly parameterCount: number;
  /** Bytes the weights take in memory (2-byte weights stay at 2 bytes). */
  readonly weightBytes: number;
  /**
   * What the weight matrices are kept in: the checkpoint's type, or loadPretrained's weightType; a
   * GGUF file's 8-bit (Q8_0, Q5_0), 6-bit (Q6_K), 5-bit (Q5_1, Q5_K) or 4-bit (Q4_0, Q4_1, Q4_K)
   * blocks stay 'q8', 'q6', 'q5' or 'q4' (the first layer's query projection's; a layer's other
   * matrices may differ). Q4_0's and Q4_K's 'q4' take 0.625 bytes a weight (Q4_K keeps its integer
   * scales), Q4_1's 0.75.
   */
  readonly weightType: 'f32' | 'f16' | 'bf16' | 'q8' | 'q6' | 'q5' | 'q4';
  /** Image models (vit, deit, dinov2): the side of the image the position table was made for; 0 for text models. */
  readonly imageSize: number;
  /** Image models: the side of a square patch in pixels (0 for text models). */
  readonly patchSize: number;
  /** Image models: channels of the pixel values (3, RGB; 0 for text models). */
  readonly channels: number;
  /** Image models: the rows before the patches (1: the CLS token; 2: CLS and DeiT's distillation token); 0 for text models. */
  readonly prefixTokens: number;
  /** True where the logits are the mean of two heads, on the CLS row and on the distillation row (DeiT with its teacher's head). */
  readonly distillationHead: boolean;
  /** An image classifier's labels, in id order (config.json's id2label); null without a classifier. Only image models have it. */
  readonly labels?: readonly string[] | null;
  /** Encoder-decoders (t5, bart, marian): the decoder's layers (layers is then the encoder's); 0 for other models. */
  readonly decoderLayers: number;
  /** True for an encoder-decoder (loadPretrained then gives an EncoderDecoderModel). */
  readonly encoderDecoder?: boolean;
}

/** An encoder-decoder's config: PretrainedConfig with the generation settings it reads. */
export interface EncoderDecoderConfig extends Omit<PretrainedConfig, 'architecture' | 'slidingWindow' | 'slidingLayers' | 'labels'> {
  readonly encoderDecoder: true;
  /** generation_config.json's decoder_start_token_id (then config.json's, then bos_token_id); null: none. */
  readonly decoderStartTokenId: number | null;
  readonly eosTokenIds: readonly number[];
}

/** One text side's tokens: ids (with </s> appended), the pieces, and each piece's [start, end) in the text. */
export interface EncoderDecoderTokens {
  ids: Int32Array | number[];
  tokens: string[];
  offsets: [number, number][];
}

/** An encoder-decoder's teacher-forced run: flat arrays in transformers' order, with their shapes. */
export interface EncoderDecoderRun {
  sourceLength: number;
  targetLength: number;
  /** layers × heads × n × n (null with attentions: false). */
  encoderAttentions: Float32Array | null;
  encoderAttentionShape: [number, number, number, number];
  /** decoderLayers × heads × m × m, causal. */
  decoderAttentions: Float32Array | null;
  decoderAttentionShape: [number, number, number, number];
  /** decoderLayers × heads × m × n: each target row over the source. */
  crossAttentions: Float32Array | null;
  crossAttentionShape: [number, number, number, number];
  /** m × vocab. */
  logits: Float32Array;
  logitShape: [number, number];
  /** With hiddenStates: (layers + 1) × n × d, the embeddings first, the last after the encoder's final norm. */
  encoderHiddenStates?: Float32Array;
  encoderHiddenStateShape?: [number, number, number];
  /** With hiddenStates: (decoderLayers + 1) × m × d. */
  decoderHiddenStates?: Float32Array;
  decoderHiddenStateShape?: [number, number, number];
  /** With capture: each captured activation by name. */
  activations?: Record<string, { data: Float32Array; shape: number[] }>;
}

/** One generated token of an encoder-decoder, with its row of cross-attention. */
export interface EncoderDecoderStep {
  id: number;
  /** The text this token adds (null without a tokenizer); a character whose bytes span several tokens comes whole with the last of them ('' before). */
  text: string | null;
  /** decoderLayers × heads × source length: where each head of each layer looked for this token. */
  crossAttention: Float32Array;
  crossAttentionShape: [number, number, number];
}

/**
 * A T5, BART or Marian checkpoint as loadPretrained gives it (config.encoderDecoder is true). The
 * logit lens and attribution read its decoder; patching, contributions, interventions and
 * contexts are not available for encoder-decoders yet: those methods throw an Error that says so.
 */
export declare class EncoderDecoderModel {
  private constructor();
  readonly config: EncoderDecoderConfig;
  /** The source side's tokenizer; its `target` property is the target side's (Marian's target.spm). */
  readonly tokenizer: Tokenizer | null;
  readonly disposed: boolean;
  /** The source text → its tokens, as the source tokenizer makes them. */
  tokenize(source: string): EncoderDecoderTokens;
  /** A target text → its tokens, as the target tokenizer makes them (transformers' text_target). */
  tokenizeTarget(text: string): EncoderDecoderTokens;
  /** Target ids → text, without special tokens. */
  decode(ids: ArrayLike<number>): string;
  /**
   * The encoder over the source, the decoder over decoderInputIds (the target shifted right behind
   * config.decoderStartTokenId); capture: names or patterns of hookNames() ('decoder.blocks.*.cross_attn.hook_pattern').
   */
  run(sourceIds: Int32Array | number[], options: { decoderInputIds: Int32Array | number[]; attentions?: boolean; hiddenStates?: boolean; capture?: string[] }): EncoderDecoderRun;
  /**
   * Every activation run() can capture, in visiting order: 'encoder.blocks.{l}.hook_resid_pre', '….attn.hook_pattern',
   * '….attn.hook_z', '….hook_attn_out', 'decoder.blocks.{l}.cross_attn.hook_pattern', '….cross_attn.hook_z',
   * '….hook_cross_attn_out', '….hook_mlp_out',
   * '….hook_resid_post', and T5's '{encoder,decoder}.ln_final.hook_normalized'.
   */
  hookNames(): string[];
  /**
   * Greedy generation: the encoder once, the decoder a token a step over its caches; honours
   * generation_config.json (then config.json): decoder_start_token_id, forced_bos_token_id,
   * forced_eos_token_id (at the last of maxNewTokens), eos_token_id; no end before minNewTokens.
   */
  generate(sourceIds: Int32Array | number[], options?: { maxNewTokens?: number; minNewTokens?: number; signal?: AbortSignal }): AsyncGenerator<EncoderDecoderStep>;
  /**
   * The logit lens on the decoder: for each of decoderLayers + 1 streams (the embeddings, after each
   * layer, the model's own output) and each decoder position, the final norm and output head over it.
   */
  logitLens(sourceIds: Int32Array | number[], options: { decoderInputIds: Int32Array | number[]; topK?: number; positions?: number[]; targets?: number[] }): LogitLens;
  /**
   * Direct logit attribution on the decoder at a position: embeddings, self-attention heads,
   * cross-attention heads (crossHeads), MLPs. Pre-norm decoders (T5) only; BART and Marian throw.
   */
  attribute(sourceIds: Int32Array | number[], options: { decoderInputIds: Int32Array | number[]; position?: number; target?: number; contrast?: number | null }): LogitAttribution & { crossHeads: Float64Array };
  dispose(): void;
  /** Not available for encoder-decoders yet: each throws an Error that says so. */
  contributions(...args: unknown[]): never;
  patch(...args: unknown[]): never;
  createContext(): never;
}

/** An image as ImageData has it: RGBA bytes, row by row. */
export interface ImageDataLike {
  data: Uint8ClampedArray | Uint8Array;
  width: number;
  height: number;
}

/** What preprocess() makes of an image and an image model's run() takes. */
export interface PixelValues {
  /** 3 × height × width, channel-major, as the checkpoint's image processor makes them. */
  pixelValues: Float32Array;
  height: number;
  width: number;
}

/** What preprocess() follows, read from preprocessor_config.json (ViTImageProcessor, BitImageProcessor). */
export interface ImageProcessorSettings {
  kind: 'vit' | 'bit';
  resize: { height: number; width: number } | { shortestEdge: number } | null;
  /** PIL's filter: 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming. */
  resample: number;
  crop: { height: number; width: number } | null;
  rescale: number | null;
  mean: number[] | null;
  std: number[] | null;
}

/** An image model's run() options (run(pixelValues, { height, width, … })). */
export interface ImageRunOptions {
  /** The image's height and width in pixels (preprocess() gives them). */
  height: number;
  width: number;
  attentions?: boolean | { layers?: number[]; heads?: number[] };
  /** A classifier's scores, one per label, from the CLS row (default true). */
  logits?: boolean;
  /** T × dModel after the final layernorm (default: true without a classifier). */
  lastHiddenState?: boolean;
  /** (layers + 1) × T × dModel, as transformers' hidden_states (the last before the final layernorm). */
  hiddenStates?: boolean;
  valueNorms?: boolean;
  disabledHeads?: Array<[number, number]>;
  rollout?: boolean;
  capture?: string | string[];
  intervene?: PretrainedRunOptions['intervene'];
  into?: { attentions?: Float32Array; logits?: Float32Array };
}

export interface LogitLensOptions {
  /** Tokens kept per stream and position (default 5). */
  topK?: number;
  /** Token positions to read (default: all). */
  positions?: number[];
  /** Token ids whose probability and rank every stream reports. */
  targets?: number[];
  tokenTypeIds?: Int32Array | number[];
  /** The attribution at a position too, from the same forward pass (decoders). */
  attribute?: { position?: number; target: number; contrast?: number | null };
}
export interface LogitLens {
  /** [layers + 1, positions, topK] */
  shape: number[];
  positions: number[];
  /** streams × positions × topK, most likely first. */
  ids: Int32Array;
  probabilities: Float32Array;
  /** streams × positions × targets; rank 0 is the top token. */
  targets: { ids: Int32Array; probabilities: Float32Array; ranks: Int32Array } | null;
  /** With options.attribute. */
  attribution?: LogitAttribution;
}
export interface AttributeOptions {
  /** The position whose next-token logits are explained (default: the last). */
  position?: number;
  /** Default: the model's top prediction at the position. */
  target?: number;
  /** Explain logit(target) − logit(contrast) (default: none, logit(target) alone). */
  contrast?: number | null;
  disabledHeads?: Array<[number, number]>;
}
export interface LogitAttribution {
  position: number;
  target: number;
  contrast: number | null;
  embeddings: number;
  /** layers × heads */
  heads: Float64Array;
  headsShape: number[];
  mlps: Float64Array;
  /** Every layer's attention output and MLP biases. */
  biases: number;
  biasesByLayer: Float64Array;
  /** The sum of the parts: logitDifference (before softcapping) less normBias. */
  total: number;
  /** The final norm's bias and the output bias terms, which no part writes. */
  normBias: number;
  logitDifference: number;
}
export interface PatchOptions {
  target: number;
  contrast?: number | null;
  /** 'heads' (layers × heads), 'residual' (layers × positions) or 'mlps' (layers). Default 'heads'. */
  what?: 'heads' | 'residual' | 'mlps';
  onProgress?: (progress: { done: number; total: number; recovered: Float32Array }) => void;
  signal?: AbortSignal;
}
export interface PatchResult {
  what: 'heads' | 'residual' | 'mlps';
  shape: number[];
  /** (patched − corrupt) / (clean − corrupt) of the logit difference at the last position. */
  recovered: Float32Array;
  clean: number;
  corrupt: number;
}

export interface Encoding {
  ids: Int32Array;
  tokenTypeIds: Int32Array;
  /** The vocabulary entries (byte-level pieces such as "Ġthe" as the vocabulary writes them). */
  tokens: string[];
  /** [start, end) of each token in the text (UTF-16 indices; [0, 0] for added special tokens). */
  offsets: Array<[number, number]>;
  /** True for tokens the template added ([CLS], [SEP], <s>). */
  special: boolean[];
}

export interface PretrainedRunOptions {
  /** BERT: 0 for the first text, 1 for the second (tokenize() gives them). */
  tokenTypeIds?: Int32Array | number[];
  /** Which attention weights to return: true (all, the default), false, or some layers and heads. */
  attentions?: boolean | { layers?: number[]; heads?: number[] };
  /** The final hidden state, n × dModel. Without it (the default) the last layer's MLP runs only over
   * the rows logits are asked for, none with logits: false. */
  lastHiddenState?: boolean;
  /** Every layer's output, (layers + 1) × n × dModel, as transformers' hidden_states. */
  hiddenStates?: boolean;
  /** ‖v_j W_O^h‖ per layer, head and key: multiply into attention for value-weighted attention. */
  valueNorms?: boolean;
  /** [layer, head] pairs switched off: their output is removed from the residual stream. */
  disabledHeads?: Array<[number, number]>;
  /** true (every row, the default), false, or the rows to compute logits for (the output head costs vocab × d per row). */
  logits?: boolean | number[];
  /** Attention rollout across layers (needs attentions: true). */
  rollout?: boolean;
  /** Causal models: a text run again after an edit computes only the tokens after those it shares
   * from the start with the previous reusePrefix run (same attentions and disabledHeads); their keys and values come from
   * the key/value cache and their attention rows from that run, so the results equal a full run's.
   * Needs logits as a list of rows (or false), and no hidden states. Bidirectional models run in full. */
  reusePrefix?: boolean;
  /** Activations to return by TransformerLens's names or patterns ('blocks.*.hook_resid_post'; '*'
   * stands for a run without a dot): model.hookNames() lists them. */
  capture?: string[];
  /** Activations to change before the run goes on from them, by name or pattern: a function that
   * changes activation.data in place, or the data form (no callback: workers, pages). The attention's
   * q, k, v, scores and pattern can be captured, not changed. */
  intervene?: Record<string, ((activation: Activation) => void) | InterventionData>;
  /** Fill these arrays (of exactly the result's length) instead of allocating new ones; the result
   * returns them. For runs in a loop: a new array is fresh memory on every run. */
  into?: { attentions?: Float32Array; logits?: Float32Array };
}

/** A named activation: data row-major in shape ([n, d], [n, heads, dHead] or [heads, n, n]). */
export interface Activation {
  name?: string;
  data: Float32Array;
  shape: number[];
}

/** Writes values at the given positions (default all) and, for [n, heads, dHead] activations,
 * heads (default all): values holds positions × heads × dHead (or positions × the row). */
export interface InterventionData {
  positions?: number[];
  heads?: number[];
  values: Float32Array | number[];
}

export interface PretrainedRun {
  n: number;
  /** n × vocabSize (or rows × vocabSize for logits: [rows]), or null without an LM head. */
  logits: Float32Array | null;
  /** The rows logits were computed for, when a list was asked. */
  logitRows: number[] | null;
  /** attentionShape = [selected layers, selected heads, n, n], row-major. */
  attentions: Float32Array;
  attentionShape: [number, number, number, number];
  attentionLayers: number[];
  attentionHeads: number[];
  lastHiddenState?: Float32Array;
  hiddenStates?: Float32Array;
  /** layers × heads × n. */
  valueNorms?: Float32Array;
  /** n × n. */
  rollout?: Float32Array;
  /** With reusePrefix: how many leading tokens were taken from the previous run, not computed. */
  reusedTokens?: number;
  /** With capture: each captured activation by name. */
  activations?: Record<string, { data: Float32Array; shape: number[] }>;
  /** Image models: the grid of patches (T = 1 + rows · cols: the CLS token, then the patches row by row). */
  patchGrid?: { rows: number; cols: number };
}

export interface GenerateOptions {
  /** Default 20. */
  maxNewTokens?: number;
  /** 0 (the default) is greedy. */
  temperature?: number;
  /** Sample among the k most likely (0 = all). */
  topK?: number;
  /** Seeds the sampler: the same seed replays the same tokens. */
  seed?: number;
  signal?: AbortSignal;
  /** Stop at an end-of-text id (default true): config.json's eos_token_id, or a GGUF file's EOS,
   * end of turn and end of message. */
  stopAtEos?: boolean;
}

export interface GeneratedToken {
  id: number;
  /** What this token adds to the decoded text, or null without a tokenizer. A character whose bytes span several tokens comes whole with the last of them ('' before), so the texts joined are the decoded text. */
  text: string | null;
  position: number;
  /** The attention row of the query that produced it: layers × heads × position. */
  attentions: Float32Array;
  attentionShape: [number, number, number];
}

export declare class Tokenizer {
  constructor(tokenizerJson: object);
  readonly vocabSize: number;
  /** The tokenizer of an encoder-decoder's target text (Marian's target.spm): labels, and decoding
   * what the model writes. The tokenizer itself where one serves both sides. */
  readonly target: Tokenizer;
  token(id: number): string | undefined;
  id(token: string): number | undefined;
  encode(text: string, textPair?: string, options?: { addSpecialTokens?: boolean }): Encoding;
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
}

/**
 * A tokenizer from a checkpoint's files (tokenizer.json, or vocab.json + merges.txt, or vocab.txt,
 * or SentencePiece model files: Marian's source.spm + target.spm + vocab.json, or a spiece.model
 * alone as spmSource); null if none. With spmTarget, the result's `target` tokenizes target text.
 */
export declare function loadTokenizer(files: {
  tokenizerJson?: string; vocabJson?: string; mergesTxt?: string; vocabTxt?: string;
  spmSource?: Uint8Array | ArrayBuffer; spmTarget?: Uint8Array | ArrayBuffer; targetVocabJson?: string;
  tokenizerConfig?: object; modelType?: string;
}): Tokenizer | null;

/** The tokenizer a GGUF file carries (tokenizer.ggml.*): a Tokenizer that makes llama.cpp's ids. */
export interface GgufTokenizer extends Tokenizer {
  /** tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE). */
  readonly ggufModel: 'llama' | 'gpt2';
  readonly bosId: number | null;
  /** Every id that ends generation (EOS, end of turn, end of message), ascending. */
  readonly eosIds: readonly number[];
  readonly eotId: number | null;
  readonly eomId: number | null;
  readonly unkId: number | null;
  readonly padId: number | null;
  /** Whether encode() puts BOS before (EOS after) each text, as the file asks. */
  readonly addBos: boolean;
  readonly addEos: boolean;
}

/**
 * The tokenizer of a GGUF file from its metadata (readGgufMetadata's object). Other tokenizer
 * models (bert, t5, rwkv, …) and malformed metadata are an Error that says what is wrong.
 */
export declare function tokenizerFromGguf(metadata: Record<string, unknown>): GgufTokenizer;

/** What a model and each of its run contexts do: every method runs in the context it is called on
 * (the model's: its default context; generate() and patch() on the model: a context of their own). */
export interface ModelRuns {
  readonly config: PretrainedConfig;
  /** Null when the checkpoint brought no tokenizer files. */
  readonly tokenizer: Tokenizer | null;
  run(ids: Int32Array | number[], options?: PretrainedRunOptions | null): PretrainedRun;
  /** An image model's run over pixel values (preprocess() makes them). Text models take ids. */
  run(pixelValues: Float32Array, options: ImageRunOptions): PretrainedRun;
  generate(ids: Int32Array | number[], options?: GenerateOptions | null): AsyncGenerator<GeneratedToken, void, unknown>;
  /**
   * The logit lens: each residual stream (0 = the embeddings, then after each layer; the last is
   * the model's output) through the model's own final norm and output head, at each position.
   */
  logitLens(ids: Int32Array | number[], options?: LogitLensOptions | null): LogitLens;
  /** Direct logit attribution at a position (decoders): each part's write, through the frozen final norm. */
  attribute(ids: Int32Array | number[], options?: AttributeOptions | null): LogitAttribution;
  /** Activation patching (decoders): how much of the clean logit difference one clean activation brings back. */
  patch(cleanIds: Int32Array | number[], corruptIds: Int32Array | number[], options: PatchOptions): Promise<PatchResult>;
  /** Token contributions after each attention block and its residual (Kobayashi et al. 2021): layers × n × n. */
  contributions(ids: Int32Array | number[], options?: { tokenTypeIds?: Int32Array | number[] } | null): { contributions: Float32Array; shape: number[] };
  /** Frees the memory: a context's caches and scratch; a model's weights and every context of it. */
  dispose(): void;
}

/** The runs of one model that share a key/value cache, prefix reuse and scratch (model.createContext()). */
export declare class ModelContext {
  private constructor();
}
export interface ModelContext extends ModelRuns {}

export declare class PretrainedModel {
  private constructor();
  /** Whether dispose() has run. */
  readonly disposed: boolean;
  tokenize(text: string, textPair?: string): Encoding;
  decode(ids: ArrayLike<number>): string;
  /** Another line of runs over the same weights (run() and the rest use a default one). */
  createContext(): ModelContext;
  /** Every activation name a run hands its hooks, in the order visited (docs/hooks.md). */
  hookNames(): string[];
  /**
   * Image models: an image → pixel values as the checkpoint's preprocessor_config.json says
   * (resize with PIL's filters, center crop, rescale, normalize). ImageData-shaped objects
   * anywhere; ImageBitmap, <img>, canvases, Blob and File in browsers (decoded with
   * createImageBitmap and OffscreenCanvas). Rejects for text models and where it cannot decode.
   */
  preprocess(image: ImageDataLike | ImageBitmap | HTMLImageElement | HTMLCanvasElement | OffscreenCanvas | Blob): Promise<PixelValues>;
  /** Image models: the patch grid of the images preprocess() makes; null for text models and where it depends on the image. */
  readonly patchGrid: { rows: number; cols: number } | null;
  /** Image models: the image processor preprocess() follows; null without preprocessor_config.json, and for text models. */
  readonly imageProcessor: ImageProcessorSettings | null;
}
export interface PretrainedModel extends ModelRuns {}

/** Every config.json model_type loadPretrained reads (the core's family table). */
export declare function supportedModelTypes(): Promise<string[]>;

/**
 * Loads a Hugging Face checkpoint (a model_type of supportedModelTypes(); safetensors
 * weights in F32, F16 or BF16, sharded or not) and its tokenizer, or a GGUF file (architectures
 * llama, qwen2, qwen3, gemma3, gpt2; blocks dequantized while loading). Rejects with an Error that says
 * what is wrong: missing files, an unsupported architecture, a corrupt or truncated file, a model
 * too large for this memory (bytes needed and available). An encoder-decoder (t5, bart, marian) gives
 * an EncoderDecoderModel: name it as the type argument (loadPretrained<EncoderDecoderModel>('t5-small')).
 */
export declare function loadPretrained<Model extends PretrainedModel | EncoderDecoderModel = PretrainedModel>(
  source: PretrainedSource,
  options?: {
    onProgress?: (progress: LoadProgress) => void;
    signal?: AbortSignal;
    /**
     * Keep the weight matrices at 2 bytes, rounded to nearest: half the memory (and bandwidth) of a
     * float32 checkpoint, for a small change in the outputs (README "Weights at 2 bytes"). 'f16'
     * keeps more precision and refuses a weight beyond ±65504; 'bf16' has float32's range.
     * 'f32' widens every matrix to float32 (a GGUF file's 8-, 6-, 5- and 4-bit blocks too: the same
     * results, 3–5× the memory). 'q8_0' and 'q4_0' quantize a safetensors checkpoint while it
     * loads, as llama.cpp's Q8_0 / Q4_0 would: its nn.Linear matrices (inputs a multiple of 32) in
     * 8- or 4-bit blocks, about 1.1 or 0.625 bytes a weight, the rest as stored. Left out: the
     * checkpoint's own type.
     */
    weightType?: 'f16' | 'bf16' | 'f32' | 'q8_0' | 'q4_0';
    /** A hub id's branch, tag or commit. Default 'main'. Only with a hub id. */
    revision?: string;
    /** A server with the hub's layout instead of https://huggingface.co (a mirror). */
    hub?: string;
    /**
     * The GGUF file to read from the source: a hub id's repository of GGUF files
     * ('Qwen/Qwen2.5-0.5B-Instruct-GGUF', { file: 'qwen2.5-0.5b-instruct-q4_k_m.gguf' }), a folder,
     * or the files given. A path or URL ending in .gguf, or a single File, names it already.
     */
    file?: string;
  },
): Promise<Model>;

/**
 * A GGUF file's metadata (key → value; arrays as arrays), from its bytes or its first bytes (then
 * fileSize is the whole file's). Rejects with an Error saying what is wrong with a malformed file.
 */
export declare function readGgufMetadata(bytes: Uint8Array | ArrayBuffer, fileSize?: number): Promise<Record<string, unknown>>;

/** True for a hub id ("gpt2", "Qwen/Qwen2.5-0.5B"), false for a URL or a path. */
export declare function isHubId(text: string): boolean;
/** The base URL (ending in '/') of a hub model's files: https://huggingface.co/ID/resolve/REVISION/. */
export declare function hubUrl(id: string, options?: { revision?: string; hub?: string }): string;
/**
 * A hub id, a URL, or a site path ("./x", "/x") → the base URL of a checkpoint's files. A GGUF file
 * ("owner/repo/file.gguf", or a URL or path ending in .gguf) gives the file's own URL.
 */
export declare function resolveSource(text: string, options?: { revision?: string; hub?: string; base?: string }): string;
export interface CheckpointFile {
  name: string;
  /** Bytes; −1 when the server gave no size. */
  size: number;
}
/**
 * What loading the checkpoint at a base URL would download, every size asked first (a few small
 * requests, no weights): config.json, the weights (or shards), the tokenizer files; for a GGUF
 * file's URL, that one file.
 */
export declare function listCheckpointFiles(base: string, options?: { signal?: AbortSignal }): Promise<{ base: string; files: CheckpointFile[]; total: number }>;

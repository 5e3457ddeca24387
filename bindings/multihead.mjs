// multihead: the JavaScript API over the wasm attention core (bindings/embind.cpp).
//
// This file only marshals: it checks that arguments are arrays of the right length, copies them
// into the wasm heap, calls the core, and copies results out. Every numeric rule (valid configs,
// finite values, memory budget) lives in the C++ core, which returns a message this file throws.

// Buffer slots of the Embind Layer (keep in sync with the Slot enum in bindings/embind.cpp).
const SLOT = {
  queries: 0, keysValues: 1, additiveMask: 2, output: 3, attention: 4,
  keyPadding: 5, blocked: 6, positional: 7, concat: 8, weight: 16, staged: 32, trace: 48, torch: 64,
};
const MASK_NONE = 0, MASK_BLOCKED = 1, MASK_ADDITIVE = 2;
const WEIGHT_NAMES = ['wq', 'wk', 'wv', 'wo', 'bq', 'bk', 'bv', 'bo'];
const TRACE_NAMES = ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'attention', 'headOutput'];
let corePromise = null;
let loadedThreaded = null;  // which build corePromise holds: true = dist/multihead_core_mt…
let loadedRelaxed = null;   // true = a …_relaxed build (fused multiply-add)
let poolThreads = 1;        // the threaded build's most: the caller + the workers it loaded at start-up

// The smallest module that uses f32x4.relaxed_madd (0xfd 0x85 0x02): a function returning
// relaxed_madd of three zero v128.const. Engines without relaxed SIMD (Safari; Node 20 without
// --experimental-wasm-relaxed-simd) fail to validate it.
const RELAXED_PROBE = (() => {
  const constZero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0x00, ...constZero, ...constZero, ...constZero, 0xfd, 0x85, 0x02, 0x0b];
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,  // type: () -> v128
    0x03, 0x02, 0x01, 0x00,                    // one function of that type
    0x0a, body.length + 2, 0x01, body.length, ...body]);
})();

/** True where the engine runs relaxed SIMD, so that the fused multiply-add build is loaded. */
export function relaxedSimdAvailable() {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

function inNode() {
  return typeof process === 'object' && process !== null && typeof process.versions?.node === 'string';
}

// Node 20's V8 (11.3) has relaxed SIMD, complete, behind --experimental-wasm-relaxed-simd; V8 11.4
// turned it on (Chromium 114, Node 21 and later). Where Node's engine does not validate it, 'auto'
// turns V8's flag on (process-wide; it only widens what later modules may use) and keeps the
// fused build if the engine then validates it (GPT-2 small's prefill: 4–19% less time on Zen 3). Not
// where the process was started with --no-experimental-wasm-relaxed-simd (how a Node program
// asks for the plain build everywhere); a V8 that still refuses the probe gets its flag back off.
const RELAXED_FLAG = 'experimental-wasm-relaxed-simd';
function relaxedSimdRefused() {
  return (process.execArgv ?? []).some((arg) => arg.replace(/_/g, '-').replace(/^--no-?/, '--no-') === `--no-${RELAXED_FLAG}`);
}
async function relaxedSimdHere() {
  if (relaxedSimdAvailable()) return true;
  if (!inNode() || relaxedSimdRefused()) return false;
  try {
    const v8Module = 'node:v8';
    const v8 = await import(/* @vite-ignore */ v8Module);
    v8.setFlagsFromString(`--${RELAXED_FLAG}`);
    if (relaxedSimdAvailable()) return true;
    v8.setFlagsFromString(`--no-${RELAXED_FLAG}`);
  } catch {
    // Not Node's v8 module (another runtime that sets process.versions.node): plain SIMD.
  }
  return false;
}

/** True where the threaded build can run: Node (worker_threads), or a cross-origin isolated page or worker. */
export function threadsAvailable() {
  return typeof SharedArrayBuffer === 'function' && (inNode() || globalThis.crossOriginIsolated === true);
}

const THREADS_HELP = 'threads need a cross-origin isolated page: serve it with the headers ' +
  '"Cross-Origin-Opener-Policy: same-origin" and "Cross-Origin-Embedder-Policy: require-corp" ' +
  "(see the README's Threads section), or use threads: 'auto', which falls back to one thread";

// The threads option checked: 1 (not given), 'auto', or an integer from 1 to 16 that can run here.
function threadsWanted(threads) {
  if (threads === undefined) return 1;
  if (threads === 'auto') return threads;
  if (!Number.isInteger(threads) || threads < 1 || threads > 16) {
    fail(`threads must be 'auto' or an integer from 1 to 16, got ${describe(threads)}`);
  }
  if (threads > 1 && !threadsAvailable()) fail(`threads: ${threads} is not possible here: ${THREADS_HELP}`);
  return threads;
}

// The machine's cores: the os module in Node (Node 20 has no navigator), the browser's count
// elsewhere. The threaded builds load one worker per extra core, up to 15 (PTHREAD_POOL_SIZE in
// CMakeLists.txt), before they resolve: a page cannot start a Web Worker and wait for it in one call.
async function coreCount() {
  if (!inNode()) return globalThis.navigator?.hardwareConcurrency || 2;
  const osModule = 'node:os';
  const os = await import(/* @vite-ignore */ osModule);
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

// A checked request as a thread count (capped later at what the pool holds): 'auto' = all of
// them where threads can run and there is more than one core, else 1.
async function threadsFor(wanted) {
  if (wanted !== 'auto') return wanted;
  return threadsAvailable() && (await coreCount()) > 1 ? 16 : 1;
}

// The threaded build's pool: the workers it started before it resolved (Emscripten's PThread).
function poolWorkers(core) {
  return [...core.PThread.unusedWorkers, ...core.PThread.runningWorkers];
}

// Node: the threaded build is CommonJS (CMakeLists.txt says why), loaded through createRequire; the
// specifiers are variables so that bundlers leave this alone. Its worker threads are unref()'d:
// otherwise they would keep the process running after the program is done.
async function loadNodeThreaded(suffix, wasmBinary) {
  const moduleModule = 'node:module';
  const { createRequire } = await import(/* @vite-ignore */ moduleModule);
  const create = createRequire(import.meta.url)(`../dist/node/multihead_core_mt${suffix}.js`);
  const core = await create({ wasmBinary });
  for (const worker of poolWorkers(core)) worker.unref();
  return core;
}

// One of the builds, instantiated: threaded or not, fused multiply-add or not.
async function loadBuild(threaded, relaxed) {
  const suffix = relaxed ? '_relaxed' : '';
  const moduleOptions = {};
  if (inNode()) {
    // Emscripten 3.1.6 would fetch() the .wasm in Node 20 (which has fetch) and fail on a
    // file: URL, so Node reads the bytes itself. The specifiers are variables so that
    // bundlers and Vitest's jsdom environment leave this Node-only branch alone.
    const fsModule = 'node:fs/promises';
    const { readFile } = await import(/* @vite-ignore */ fsModule);
    const build = threaded ? `node/multihead_core_mt${suffix}` : `multihead_core${suffix}`;
    moduleOptions.wasmBinary = await readFile(new URL(`../dist/${build}.wasm`, import.meta.url));
    if (threaded) return loadNodeThreaded(suffix, moduleOptions.wasmBinary);
  }
  // Imported here, not at the top, so that importing the API costs nothing until first use.
  // The threaded module also starts its Web Workers (one per extra core) before it resolves.
  // Literal specifiers, so that bundlers see (and copy) all four builds.
  const load = threaded
    ? relaxed ? () => import('../dist/multihead_core_mt_relaxed.mjs') : () => import('../dist/multihead_core_mt.mjs')
    : relaxed ? () => import('../dist/multihead_core_relaxed.mjs') : () => import('../dist/multihead_core.mjs');
  return (await load()).default(moduleOptions);
}

/**
 * Loads and compiles the wasm module once; every layer shares it. Calling it early (e.g. on page
 * load) hides the compile time; createMultiHeadAttention calls it anyway.
 *
 * options.threads: 1 (the default) loads the single-thread build, which runs everywhere.
 * 'auto' loads the threaded build in Node and on a cross-origin isolated page (one thread per
 * core, up to 16) where there is more than one core, and the single-thread build otherwise. The
 * first call decides the build; later calls may change the thread count within the threaded build
 * (setThreads). After a single-thread load, a later 'auto' runs on its one thread and a count > 1
 * throws.
 *
 * options.relaxedSimd: 'auto' (the default) loads the build with fused multiply-add where the
 * engine validates relaxed SIMD (in Node 20 after turning on V8's flag for it: relaxedSimdHere),
 * the plain SIMD build elsewhere; false always loads plain SIMD and leaves V8's flags alone (its
 * results are the same bits on every engine; fused ones may differ in the last bits).
 */
export function loadMultihead(options = {}) {
  let requested, wanted;
  try {
    if (options === null || typeof options !== 'object') fail(`options must be an object, got ${describe(options)}`);
    requested = options.threads;
    wanted = threadsWanted(requested);
    if (options.relaxedSimd !== undefined && options.relaxedSimd !== 'auto' && options.relaxedSimd !== false) {
      fail(`relaxedSimd must be 'auto' or false, got ${describe(options.relaxedSimd)}`);
    }
  } catch (error) {
    return Promise.reject(error);
  }
  if (corePromise) {
    if (requested === undefined) return corePromise;
    return corePromise.then(async (core) => {
      // The first call decided the build: 'auto' is then all that build has (one thread in the
      // single-thread build, as where threads cannot run); only a count it cannot give is an error.
      const threads = wanted === 'auto' && !loadedThreaded ? 1 : await threadsFor(wanted);
      if (threads > 1 && !loadedThreaded) {
        fail(`already loaded single-threaded; ask for threads in the first ` +
          `loadMultihead() call, before any layer, model or trainer is created`);
      }
      if (loadedThreaded) core.setThreadCount(Math.min(threads, poolThreads));
      return core;
    });
  }
  corePromise = (async () => {
    const relaxed = options.relaxedSimd !== false && (await relaxedSimdHere());
    loadedRelaxed = relaxed;
    const threads = await threadsFor(wanted);
    let threaded = threads > 1, core;
    try {
      core = await loadBuild(threaded, relaxed);
    } catch (error) {
      if (!(threaded && inNode())) throw error;
      // Node's threaded build is files of its own (dist/node/); a bundle may have left them out.
      // 'auto' then runs on one thread, as it does wherever threads cannot run; a count says why.
      if (wanted !== 'auto') fail(`threads: ${wanted}: the threaded build for Node (dist/node/) did not load: ${error.message}`);
      threaded = false;
      core = await loadBuild(false, relaxed);
    }
    loadedThreaded = threaded;
    if (threaded) {
      poolThreads = 1 + poolWorkers(core).length;
      core.setThreadCount(Math.min(threads, poolThreads));
    }
    return core;
  })();
  corePromise.catch(() => { corePromise = null; loadedThreaded = null; loadedRelaxed = null; });  // a failed load may be retried
  return corePromise;
}

/**
 * Changes how many threads the threaded build uses: 1 … 16 asked, capped at the caller plus the
 * workers loaded at start-up (one per extra core, at most 16 threads in all). Resolves to the count
 * in effect, which is always 1 in the single-thread build.
 */
export async function setThreads(threads) {
  if (!Number.isInteger(threads) || threads < 1 || threads > 16) {
    fail(`threads must be an integer from 1 to 16, got ${describe(threads)}`);
  }
  const core = await loadMultihead();
  if (threads > 1 && !loadedThreaded) {
    fail(`setThreads(${threads}): multihead was loaded single-threaded; ` +
      (threadsAvailable() ? "call loadMultihead({ threads: 'auto' }) first, before any layer is created"
        : THREADS_HELP));
  }
  return core.setThreadCount(Math.min(threads, poolThreads));
}

/** Facts about the loaded wasm runtime, for diagnostics and tests. */
export async function runtimeInfo() {
  const core = await loadMultihead();
  return {
    simdFloatsPerPacket: core.simdFloatsPerPacket(),
    heapBytes: core.heapBytes(),
    allocatedBytes: core.allocatedBytes(),
    maxTokens: core.maxTokens,
    threads: core.threadCount(),
    threadedBuild: loadedThreaded === true,
    relaxedSimd: loadedRelaxed === true,
    gemmKernel: core.gemmKernel(),
    touchTuning: core.touchTuning(),
  };
}

/** The longest sequence (queries or keys) one call accepts. */
export const MAX_TOKENS = 16384;

function fail(message) {
  throw new Error(`multihead: ${message}`);
}

function checkInteger(name, value, { min = -(2 ** 31), max = 2 ** 31 - 1 } = {}) {
  if (!Number.isInteger(value) || value < min || value > max) {
    fail(`${name} must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

function checkNumber(name, value) {
  if (typeof value !== 'number' || Number.isNaN(value)) fail(`${name} must be a number, got ${describe(value)}`);
  return value;
}

function describe(value) {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of length ${value.length}`;
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  return String(value);
}

function isArrayOfNumbers(value) {
  return (ArrayBuffer.isView(value) && !(value instanceof DataView) && typeof value.length === 'number'
    && !(value instanceof BigInt64Array) && !(value instanceof BigUint64Array)) || Array.isArray(value);
}

function checkArray(name, value, expectedLength, shape) {
  if (!isArrayOfNumbers(value)) fail(`${name} must be a Float32Array (or an array of numbers), got ${describe(value)}`);
  if (value.length !== expectedLength) {
    fail(`${name} has ${value.length} values but must have ${expectedLength} (${shape})`);
  }
  return value;
}

// Rows of a flat row-major matrix: with `rows` given the length must match; without, infer it.
function rowsOf(name, value, width, rows, rowsName) {
  if (!isArrayOfNumbers(value)) fail(`${name} must be a Float32Array (or an array of numbers), got ${describe(value)}`);
  if (rows === undefined) {
    if (value.length === 0 || value.length % width !== 0) {
      fail(`${name} has ${value.length} values, which is not a whole, non-zero number of rows of ` +
        `dModel = ${width}: pass ${rowsName} × dModel values, row-major`);
    }
    return value.length / width;
  }
  checkInteger(rowsName, rows, { min: 1, max: MAX_TOKENS });
  checkArray(name, value, rows * width, `${rowsName} × dModel = ${rows} × ${width}`);
  return rows;
}

function maskKindOf(mask) {
  if (mask === undefined || mask === null) return MASK_NONE;
  if (mask instanceof Float32Array || mask instanceof Float64Array) return MASK_ADDITIVE;
  if (mask instanceof Uint8Array || mask instanceof Int8Array || mask instanceof Uint8ClampedArray) return MASK_BLOCKED;
  if (Array.isArray(mask) && mask.every((v) => typeof v === 'boolean')) return MASK_BLOCKED;
  fail(`mask must be a Uint8Array or boolean[] (nonzero/true = blocked) or a Float32Array ` +
    `(added to the scaled scores; -Infinity blocks), got ${describe(mask)}`);
}

const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((layer) => { if (!layer.isDeleted()) layer.delete(); })
  : null;

/**
 * Creates a multi-head attention layer with seeded random weights.
 * @param {import('./multihead').MultiHeadAttentionOptions} [options]
 * @returns {Promise<MultiHeadAttention>}
 */
export async function createMultiHeadAttention(options = {}) {
  if (options === null || typeof options !== 'object') fail(`options must be an object, got ${describe(options)}`);
  const {
    dModel = 64, numHeads = 4, numKvHeads = numHeads, bias = true, seed = 0, temperature = 1,
    scale = 0,
  } = options;
  checkInteger('dModel', dModel);
  checkInteger('numHeads', numHeads);
  checkInteger('numKvHeads', numKvHeads);
  checkInteger('seed', seed, { min: 0, max: Number.MAX_SAFE_INTEGER });
  checkNumber('temperature', temperature);
  checkNumber('scale', scale);
  if (typeof bias !== 'boolean') fail(`bias must be true or false, got ${describe(bias)}`);
  const core = await loadMultihead();
  const error = core.validateConfig(dModel, numHeads, numKvHeads, bias, scale, temperature);
  if (error) fail(error);
  const layer = new core.Layer(dModel, numHeads, numKvHeads, bias, scale, temperature);
  layer.initSeeded(seed);
  const config = Object.freeze({ dModel, numHeads, numKvHeads, headDim: dModel / numHeads, bias, seed, temperature, scale });
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
    this.parameterCount = core.parameterCount(config.dModel, config.numHeads, config.numKvHeads, config.bias);
    registry?.register(this, layer, this);
  }

  #live() {
    if (!this.#layer) fail('this MultiHeadAttention was disposed; create a new one with createMultiHeadAttention()');
    return this.#layer;
  }

  #view(slot) {
    return this.#live().view(slot);
  }

  /** Frees the layer's wasm memory now (otherwise it is freed when the object is garbage-collected). */
  dispose() {
    if (!this.#layer) return;
    registry?.unregister(this);
    this.#layer.delete();
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
      if (layer.weightSize(i) > 0) weights[name] = this.#view(SLOT.weight + i).slice();
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
      this.#view(SLOT.staged + i).set(weights[name]);
      mask |= 1 << i;
    }
    const error = layer.commitWeights(mask);
    if (error) fail(error);
  }

  #weightShape(i) {
    const { dModel, numKvHeads, headDim } = this.config;
    const dKv = numKvHeads * headDim;
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
    parts.forEach(([, value], i) => { if (value !== undefined) this.#view(SLOT.torch + i).set(value); });
    const error = layer.loadTorch(withBias);
    if (error) fail(error);
  }

  /**
   * Self-attention over x (seqLen × dModel, row-major). Returns { output (seqLen × dModel),
   * attention (numHeads × seqLen × seqLen) when returnAttention is true }. returnAttention may
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
    TRACE_NAMES.forEach((name, i) => { result[name] = this.#view(SLOT.trace + i).slice(); });
    result.concat = this.#view(SLOT.concat).slice();
    result.output = this.#view(SLOT.output).slice();
    return result;
  }

  /** Sinusoidal positional encoding, seqLen × dModel (Vaswani et al. 2017). */
  positionalEncoding(seqLen) {
    checkInteger('seqLen', seqLen, { min: 1, max: MAX_TOKENS });
    const error = this.#live().positionalEncoding(seqLen);
    if (error) fail(error);
    return this.#view(SLOT.positional).slice();
  }

  #prepare(x, options) {
    const layer = this.#live();
    if (options === null || typeof options !== 'object') fail(`options must be an object, got ${describe(options)}`);
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
    this.#view(SLOT.queries).set(x);
    if (cross) this.#view(SLOT.keysValues).set(keysValues);
    if (padding) this.#view(SLOT.keyPadding).set(keyPaddingMask);
    if (maskKind === MASK_BLOCKED) this.#view(SLOT.blocked).set(mask);
    if (maskKind === MASK_ADDITIVE) this.#view(SLOT.additiveMask).set(mask);
    return { nQ, nK, cross, causal, padding, maskKind, returnAttention: sel.heads > 0 };
  }

  // returnAttention: false | true | { head } | { heads: [start, end), rows: [start, end) } →
  // the heads × rows block of weights to copy out (the core checks that they exist).
  #selection(request, nQ) {
    const { numHeads } = this.config;
    if (request === false) return { firstHead: 0, heads: 0, firstRow: 0, rows: 0 };
    if (request === true) return { firstHead: 0, heads: numHeads, firstRow: 0, rows: nQ };
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
    const [h0, h1] = request.head !== undefined ? [checkInteger('returnAttention.head', request.head), request.head + 1] : range('heads', request.heads, numHeads);
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
    const into = options.into ?? {};
    const copyOut = (slot, target, name) => {
      const view = this.#view(slot);
      if (target === undefined) return view.slice();
      if (!(target instanceof Float32Array) || target.length !== view.length) {
        fail(`into.${name} must be a Float32Array of length ${view.length}, got ${describe(target)}`);
      }
      target.set(view);
      return target;
    };
    const result = { output: copyOut(SLOT.output, into.output, 'output') };
    if (call.returnAttention) result.attention = copyOut(SLOT.attention, into.attention, 'attention');
    return result;
  }
}
export { loadLanguageModel, LanguageModel } from './language-model.mjs';
export { createTrainer, Trainer, TOY_TASKS } from './trainer.mjs';
export { loadPretrained, PretrainedModel } from './pretrained.mjs';
export { Tokenizer, loadTokenizer } from './tokenizers/tokenizer.mjs';

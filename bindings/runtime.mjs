// The wasm runtime: which of the four builds loads (threads × relaxed SIMD), the thread pool, and
// facts about what loaded. Every class of the API gets the module through loadMultihead().
import { describe, fail } from './checks.mjs';
import { inNode } from './environment.mjs';

let corePromise = null;
let loadedThreaded = null;  // which build corePromise holds: true = dist/multihead_core_mt…
let loadedRelaxed = null;   // true = a …_relaxed build (fused multiply-add)
// The most threads (kMaxThreads in src/core/parallel.h): one per core up to this.
export const MAX_THREADS = 64;
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

// Node 20's V8 (11.3) has relaxed SIMD, complete, behind --experimental-wasm-relaxed-simd; V8 11.4
// turned it on (Chromium 114, Node 21 and later). Where Node's engine does not validate it, 'auto'
// turns V8's flag on (process-wide; it only widens what later modules may use) and keeps the
// fused build if the engine then validates it (docs/performance.md, "Decisions"). Not
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
  "(see docs/threads.md), or use threads: 'auto', which falls back to one thread";

// The threads option checked: 'auto' (also when not given), or an integer from 1 to MAX_THREADS that can run here.
function threadsWanted(threads) {
  if (threads === undefined) return 'auto';
  if (threads === 'auto') return threads;
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    fail(`threads must be 'auto' or an integer from 1 to ${MAX_THREADS}, got ${describe(threads)}`);
  }
  if (threads > 1 && !threadsAvailable()) fail(`threads: ${threads} is not possible here: ${THREADS_HELP}`);
  return threads;
}

// The machine's cores: the os module in Node (Node 20 has no navigator), the browser's count
// elsewhere. The threaded builds load one worker per extra core, up to 63 (PTHREAD_POOL_SIZE in
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
  const cores = threadsAvailable() ? await coreCount() : 1;
  return cores > 1 ? Math.min(cores, MAX_THREADS) : 1;
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
 * options.threads: 'auto' (the default) loads the threaded build in Node and on a cross-origin
 * isolated page (one thread per core, up to 64) where there is more than one core, and the
 * single-thread build otherwise (runtimeInfo().oneThreadReason says why). 1 loads the
 * single-thread build, which runs everywhere. The first call decides the build; later calls may
 * change the thread count within the threaded build (setThreads). After a single-thread load, a
 * later 'auto' runs on its one thread and a count > 1 throws.
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
 * Changes how many threads the threaded build uses: 1 … 64 asked, capped at the caller plus the
 * workers loaded at start-up (one per extra core, at most 64 threads in all). Resolves to the count
 * in effect, which is always 1 in the single-thread build.
 */
export async function setThreads(threads) {
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    fail(`threads must be an integer from 1 to ${MAX_THREADS}, got ${describe(threads)}`);
  }
  const core = await loadMultihead();
  if (threads > 1 && !loadedThreaded) {
    fail(`setThreads(${threads}): multihead was loaded single-threaded; ` +
      (threadsAvailable() ? "call loadMultihead({ threads: 'auto' }) first, before any layer is created"
        : THREADS_HELP));
  }
  return core.setThreadCount(Math.min(threads, poolThreads));
}

/**
 * Why the runtime here runs on one thread, in a few words a page can show after "one thread: ",
 * or '' where it can have threads.
 */
export async function oneThreadReason() {
  if (!inNode() && globalThis.crossOriginIsolated === undefined) return 'this browser has no SharedArrayBuffer';
  if (!inNode() && !globalThis.crossOriginIsolated) return 'the page is not cross-origin isolated';
  if (typeof SharedArrayBuffer !== 'function') return 'this JavaScript engine has no SharedArrayBuffer';
  if ((await coreCount()) < 2) return 'this device has one core';
  if (loadedThreaded === false) return 'threads: 1 was asked for';
  return '';
}

/** Facts about the loaded wasm runtime, for diagnostics and tests. */
export async function runtimeInfo() {
  const core = await loadMultihead();
  return {
    simdFloatsPerPacket: core.simdFloatsPerPacket(),
    heapBytes: core.heapBytes(),
    allocatedBytes: core.allocatedBytes(),  // read as unsigned by the core (mallinfo's int wraps past 2 GiB)
    maxTokens: core.maxTokens,
    threads: core.threadCount(),
    threadedBuild: loadedThreaded === true,
    oneThreadReason: await oneThreadReason(),
    relaxedSimd: loadedRelaxed === true,
    gemmKernel: core.gemmKernel(),
    touchTuning: core.touchTuning(),
    integerDotAdd: core.dotAddTuning(),
  };
}

// The in-browser half of bench/gguf-load.mjs: loadPretrained of one GGUF file (by URL: fetch
// streaming; or the File in #file, as a dropped file), its time split into the wasm loader's calls
// (timed by wrapping them) and the rest (reading, copying into the heap, the tokenizer, JS).
import { loadMultihead, loadPretrained, runtimeInfo } from '../../bindings/multihead.mjs';
import { firstTouch } from '../first-touch.mjs';

const core = await loadMultihead({ threads: 'auto' });
const heap = async () => { const r = await runtimeInfo(); return { heapBytes: r.heapBytes, allocatedBytes: r.allocatedBytes }; };

// Each loader call's time, summed: plan (sizes and zeroes the weights: the first touch of their
// memory), feed (the file's bytes into the weights), finish (includes the GEMM's one-off tuning).
const stages = { plan: 0, feed: 0, finish: 0 };
let chunks = 0, largestChunk = 0;
for (const name of Object.keys(stages)) {
  const method = core.PretrainedCore.prototype[name];
  core.PretrainedCore.prototype[name] = function timed(...args) {
    const t = performance.now();
    try { return method.apply(this, args); } finally {
      stages[name] += performance.now() - t;
      if (name === 'feed') { chunks += 1; largestChunk = Math.max(largestChunk, args[1]); }
    }
  };
}

// 32-bit FNV-1a of the logits' bits (as bench/gguf-load.mjs computes it in Node).
function hash(floats) {
  const words = new Uint32Array(floats.buffer, floats.byteOffset, floats.length);
  let h = 0x811c9dc5;
  for (const w of words) h = Math.imul(h ^ w, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

window.firstTouch = () => firstTouch();

// Reading alone, nothing loaded: the file by URL (fetch, a default reader, or a BYOB one into one
// reused buffer) or as the File in #file (4 MB slices, as loadPretrained read them, or its stream).
window.readOnly = async ({ url, how }) => {
  const t0 = performance.now();
  let bytes = 0, parts = 0;
  const file = document.getElementById('file').files[0];
  if (how === 'slices') {
    for (let at = 0; at < file.size; at += 4 << 20) {
      bytes += (await file.slice(at, at + (4 << 20)).arrayBuffer()).byteLength;
      parts += 1;
    }
  } else {
    const body = how.startsWith('file') ? file.stream() : (await fetch(new URL(url, location.href).href)).body;
    if (how.endsWith('byob')) {
      const reader = body.getReader({ mode: 'byob' });
      let buffer = new ArrayBuffer(4 << 20);
      for (;;) {
        const { done, value } = await reader.read(new Uint8Array(buffer));
        if (done) break;
        bytes += value.length;
        parts += 1;
        buffer = value.buffer;
      }
    } else {
      const reader = body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
        parts += 1;
      }
    }
  }
  const ms = performance.now() - t0;
  return { how, bytes, parts, ms, MBps: bytes / 1e3 / ms };
};

window.loadFile = async ({ url, ids, asFile }) => {
  const info = await runtimeInfo();
  const heapBefore = await heap();
  for (const name of Object.keys(stages)) stages[name] = 0;
  chunks = 0; largestChunk = 0;
  const source = asFile ? document.getElementById('file').files[0] : new URL(url, location.href).href;
  const t0 = performance.now();
  let model;
  try {
    model = await loadPretrained(source);
  } catch (e) {
    return { failed: 'load', error: String(e.message ?? e) };
  }
  const loadMs = performance.now() - t0;
  const heapAfter = await heap();
  const { logits } = model.run(Int32Array.from(ids));
  const inWasm = stages.plan + stages.feed + stages.finish;
  const out = { loadMs, planMs: stages.plan, feedMs: stages.feed, finishMs: stages.finish, otherMs: loadMs - inWasm, chunks, largestChunk, heapBefore, heapAfter,
    weightBytes: model.config.weightBytes, threads: info.threads, relaxedSimd: info.relaxedSimd, logitsHash: hash(logits) };
  model.dispose();
  return out;
};

window.ready = true;

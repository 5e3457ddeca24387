// Memory of a long forward pass in a fresh module instance: n = 16384, d_model 256, 8 heads,
// causal, no attention weights. Prints one JSON line (used by bench/run.mjs).
import { loadMultihead, createMultiHeadAttention, runtimeInfo } from '../bindings/multihead.mjs';

// One thread (the peer's setting too): threads are bench:threads' and bench:node-threads' to measure.
await loadMultihead({ threads: 1 });

const n = 16384, d = 256;
const mha = await createMultiHeadAttention({ dModel: d, heads: 8 });
const before = (await runtimeInfo()).heapBytes;
const x = Float32Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.01));
const t0 = performance.now();
mha.forward(x, { causal: true });
const ms = performance.now() - t0;
console.log(JSON.stringify({ n, d, heads: 8, causal: true, ms, heapMiBBefore: before / 2 ** 20, heapMiB: (await runtimeInfo()).heapBytes / 2 ** 20 }));

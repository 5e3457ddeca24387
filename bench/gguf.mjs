// GGUF weights kept in blocks against the same model's float32 weights: GPT-2 small's shape as a
// `llama` GGUF (d 768, 12 layers × 12 heads, FFN 3072, 50257 tokens, tied head; `--llama-1b`:
// Llama-3.2-1B's, d 2048, 16 layers, 32 / 8 heads, FFN 8192, 128256 tokens), random weights written
// as F32, and quantized to Q8_0 and Q4_0 as ggml's reference quantizers do. In Node, the relaxed
// build, one thread (--threads N for more): load time and bytes in memory; prefill of 64 and 256
// tokens with the last row's logits (what llama.cpp computes) and with every attention; decoding's
// ms a token against the bound the measured read bandwidth sets on its bytes. Prefill over blocks
// runs integer tiles (the rows quantized to 8 bits, as decoding's); "q8_0 widened" / "q4_0 widened"
// time the same runs with the blocks widened into float32 panels instead.
// Usage: node --experimental-wasm-relaxed-simd bench/gguf.mjs [--llama-1b] [--rounds 5] [--threads 1]
// The files are written once to build/gguf-bench/. Writes bench/gguf-results.json (or --out FILE).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadPretrained, loadMultihead, setThreads } from '../bindings/multihead.mjs';
import { T, quantizeQ4_0 as q4_0, quantizeQ8_0 as q8_0, writeGguf } from '../tests/js/gguf-writer.mjs';
import { msPerToken, timeInterleaved } from './gpt2-common.mjs';
import { randomNormal as randomTensor } from './gguf-common.mjs';
import { machine } from './machine.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const big = args.includes('--llama-1b');
const rounds = Number(option('--rounds', 5));
const threads = Number(option('--threads', 1));
const outFile = option('--out', `bench/gguf-results${big ? '-llama-1b' : ''}.json`);
const SHAPE = big
  ? { name: 'Llama-3.2-1B', d: 2048, layers: 16, heads: 32, kvHeads: 8, ff: 8192, vocab: 128256 }
  : { name: 'GPT-2 small', d: 768, layers: 12, heads: 12, kvHeads: 12, ff: 3072, vocab: 50257 };
const TYPES = big ? ['q8_0', 'q4_0'] : ['f32', 'q8_0', 'q4_0'];

// ---- the model files ----

function writeModel(path, type) {
  const { d, layers, heads, kvHeads, ff, vocab } = SHAPE, hd = d / heads;
  const tensors = [];
  let seed = 1;
  const matrix = (name, rows, cols) => {
    const data = randomTensor(rows * cols, seed++, 0.02);
    if (type === 'f32') tensors.push({ name, shape: [rows, cols], data });
    else tensors.push({ name, shape: [rows, cols], type: type === 'q8_0' ? 8 : 2, bytes: (type === 'q8_0' ? q8_0 : q4_0)(data) });
  };
  const ones = (name, n) => tensors.push({ name, shape: [n], data: new Float32Array(n).fill(1) });
  matrix('token_embd.weight', vocab, d);
  for (let l = 0; l < layers; l += 1) {
    ones(`blk.${l}.attn_norm.weight`, d);
    matrix(`blk.${l}.attn_q.weight`, d, d);
    matrix(`blk.${l}.attn_k.weight`, kvHeads * hd, d);
    matrix(`blk.${l}.attn_v.weight`, kvHeads * hd, d);
    matrix(`blk.${l}.attn_output.weight`, d, d);
    ones(`blk.${l}.ffn_norm.weight`, d);
    matrix(`blk.${l}.ffn_gate.weight`, ff, d);
    matrix(`blk.${l}.ffn_up.weight`, ff, d);
    matrix(`blk.${l}.ffn_down.weight`, d, ff);
  }
  ones('output_norm.weight', d);
  const k = (key) => `llama.${key}`;
  writeFileSync(path, writeGguf([
    ['general.architecture', T.STRING, 'llama'], [k('block_count'), T.U32, layers], [k('context_length'), T.U32, 2048],
    [k('embedding_length'), T.U32, d], [k('feed_forward_length'), T.U32, ff], [k('attention.head_count'), T.U32, heads],
    [k('attention.head_count_kv'), T.U32, kvHeads], [k('attention.layer_norm_rms_epsilon'), T.F32, 1e-5],
    [k('rope.freq_base'), T.F32, 10000], [k('rope.dimension_count'), T.U32, hd],
  ], tensors));
}

const dir = 'build/gguf-bench';
mkdirSync(dir, { recursive: true });
const path = (type) => `${dir}/${SHAPE.name.replace(/\W+/g, '-').toLowerCase()}-${type}.gguf`;
for (const type of TYPES) if (!existsSync(path(type))) { console.log(`writing ${path(type)}`); writeModel(path(type), type); }

// ---- timing ----
const core = await loadMultihead({ threads: 'auto' });
await setThreads(threads);
const ids = (n) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % SHAPE.vocab);
const models = {};
const loads = {};
for (const type of TYPES) {
  const t0 = performance.now();
  models[type] = await loadPretrained(path(type), big && type === 'f32' ? { weightType: 'bf16' } : {});
  loads[type] = performance.now() - t0;
}
const gbps = core.readBandwidth(256, 5);  // GB/s over a 256 MB buffer, these threads
const rows = [];
for (const n of [64, 256]) {
  for (const attentions of [false, true]) {
    const fns = {};
    for (const type of TYPES) fns[type] = () => models[type].run(ids(n), { attentions, logits: [n - 1] });
    // Prefill over blocks the other way too, their blocks widened into float32 panels (core/gemm.h).
    if (!attentions) {
      for (const type of TYPES.filter((t) => t !== 'f32')) {
        fns[`${type} widened`] = () => {
          core.setIntegerBlockTiles(false);
          try { return models[type].run(ids(n), { attentions, logits: [n - 1] }); } finally { core.setIntegerBlockTiles(true); }
        };
      }
    }
    const ms = await timeInterleaved(fns, rounds);
    rows.push({ case: `prefill ${n}, ${attentions ? 'every attention' : 'last logits'}`, ms });
  }
}
const decode = {};
for (const type of TYPES) decode[type] = await msPerToken(models[type], 24);
rows.push({ case: 'decoding, ms a token', ms: decode });

const weightBytes = Object.fromEntries(TYPES.map((t) => [t, models[t].config.weightBytes]));
console.log(`${SHAPE.name}'s shape, ${threads} thread(s), ${machine().cpu ?? ''}`);
console.log(`weights in memory: ${TYPES.map((t) => `${t} ${(weightBytes[t] / 1e6).toFixed(0)} MB (${models[t].config.weightType})`).join(', ')}`);
console.log(`load: ${TYPES.map((t) => `${t} ${loads[t].toFixed(0)} ms`).join(', ')}`);
for (const r of rows) console.log(`${r.case.padEnd(34)} ${Object.keys(r.ms).map((t) => `${t} ${r.ms[t].toFixed(1)}`).join('  ')}  ${TYPES.length > 1 ? `(f32 ÷ q8_0 ${(r.ms[TYPES[0]] / r.ms.q8_0).toFixed(2)}×, ÷ q4_0 ${(r.ms[TYPES[0]] / r.ms.q4_0).toFixed(2)}×)` : ''}`);
// A decoding step reads every weight once: its bound is the weights' bytes at the read bandwidth.
const boundMs = Object.fromEntries(TYPES.map((t) => [t, weightBytes[t] / gbps / 1e6]));
for (const t of TYPES) console.log(`decoding ${t}: ${decode[t].toFixed(1)} ms, ${(decode[t] / boundMs[t]).toFixed(2)}× its bound (${boundMs[t].toFixed(1)} ms: ${(weightBytes[t] / 1e6).toFixed(0)} MB at ${gbps.toFixed(1)} GB/s)`);
writeFileSync(outFile, `${JSON.stringify({ machine: machine(), shape: SHAPE, threads, rounds, weightBytes, loadMs: loads, readGBps: gbps, boundMs, rows }, null, 2)}\n`);
for (const m of Object.values(models)) m.dispose();
